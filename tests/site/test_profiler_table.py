"""The profiler's key_averages() table: its own fields (``table.json``) and its text narrowed."""

from __future__ import annotations

import pytest
from tracesite import RecordingError, load
from tracesite import profiler_table as _profiler_table

REC = load("01_matmul_add", "4096_bf16").rep


def test_rows_are_the_tables_own_fields_in_its_order():
    rows = REC.table_rows()
    lines = REC.table.splitlines()
    assert len(rows) == len(lines) - 6  # all but 3 rules, the header and 2 totals
    mm = next(r for r in rows if r["name"] == "aten::mm")
    assert mm["calls"] == 3
    # Each row's name starts the line the text prints for it (long names end in "...").
    body = [line for line in lines[3:-3] if line.strip()]
    for row, line in zip(rows, body, strict=True):
        shown = line.split("  ")[0].strip()
        assert row["name"].startswith(shown.removesuffix("...")), (row["name"], line)


def test_totals_are_the_footers():
    totals = REC.table_totals_us()
    assert set(totals) == {"self_cpu_us", "self_cuda_us"}
    footer = REC.table.strip().splitlines()[-2:]
    assert footer[0].startswith("Self CPU time total") and footer[1].startswith("Self CUDA")
    assert totals["self_cpu_us"] > 0 and totals["self_cuda_us"] > 0


def test_a_recording_without_fields_says_to_re_record(tmp_path):
    old = load("02_linear", "small").rep
    assert not (old.trace_path.parent / "table.json").exists()
    with pytest.raises(RecordingError, match="no table.json .* re-record"):
        old.table_rows()


def test_view_keeps_name_and_the_chosen_columns():
    view = _profiler_table.view(REC.table, ("Self CUDA",))
    head = view.splitlines()[1]
    assert head.split() == ["Name", "Self", "CUDA"]
    assert _profiler_table.view("no table here", ("Self CPU",)) == "no table here"


def test_the_text_read_back_agrees_with_the_tables_own_fields():
    """What a story's claims read from a table's text (recordings before table.json hold
    only the text) is the table's own numbers, to the text's precision."""
    fields, text = REC.table_rows(), _profiler_table.rows(REC.table)
    assert [r["calls"] for r in text] == [r["calls"] for r in fields]
    for mine, theirs in zip(text, fields, strict=True):
        assert theirs["name"].startswith(mine["name"].removesuffix("..."))
        for key in ("self_cpu_us", "self_cuda_us", "cuda_total_us"):
            assert mine[key] == pytest.approx(theirs[key], abs=0.01 * theirs[key] + 0.001), key
    totals = REC.table_totals_us()
    assert _profiler_table.total_us(REC.table, "Self CPU") == pytest.approx(
        totals["self_cpu_us"], rel=0.01
    )
    assert _profiler_table.number("3.247ms") == 3247.0
    assert _profiler_table.number("12.50%") == 12.5 and _profiler_table.number("8") == 8.0
    with pytest.raises(ValueError, match="not the text"):
        _profiler_table.cells("no table here")
    with pytest.raises(ValueError, match="no 'Self CUDA time total' line"):
        _profiler_table.total_us("Self CPU time total: 1.0ms", "Self CUDA")
