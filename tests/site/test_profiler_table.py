"""Reading the profiler's own key_averages() table text, as recordings store it."""

from __future__ import annotations

import pytest
from tracesite import load
from tracesite import profiler_table as _profiler_table

REC = load("01_matmul_add", "4096_bf16").rep


def test_rows_parse_every_column_of_every_row():
    rows = REC.table_rows()
    lines = REC.table.splitlines()
    assert len(rows) == len(lines) - 6  # all but 3 rules, the header and 2 totals
    mm = next(r for r in rows if r["name"] == "aten::mm")
    assert mm["calls"] == 3
    assert set(mm) == {
        "name", "self_cpu_pct", "self_cpu_us", "cpu_total_pct", "cpu_total_us", "cpu_avg_us",
        "self_cuda_us", "self_cuda_pct", "cuda_total_us", "cuda_avg_us", "calls",
    }  # fmt: skip
    line = next(x for x in lines if x.split()[:1] == ["aten::mm"])
    assert f"{mm['self_cpu_us']:.3f}us" in line.split()
    kernel = next(r for r in rows if r["name"].startswith("void at::native"))
    assert kernel["name"].endswith("...") and kernel["self_cpu_us"] == 0


def test_totals_match_the_footer():
    totals = REC.table_totals_us()
    assert set(totals) == {"self_cpu_us", "self_cuda_us"}
    footer = REC.table.strip().splitlines()[-2:]
    assert footer[0].endswith(f"{totals['self_cpu_us']:.3f}us")
    assert footer[1].endswith(f"{totals['self_cuda_us']:.3f}us")


@pytest.mark.parametrize(("text", "us"), [("836.608us", 836.608), ("1.007ms", 1007.0), ("2s", 2e6)])
def test_durations(text, us):
    assert _profiler_table.duration_us(text) == pytest.approx(us)


def test_unrecognised_text():
    assert _profiler_table.view("no table here", ("Self CPU",)) == "no table here"
    with pytest.raises(ValueError, match="not a key_averages"):
        _profiler_table.rows("no table here")
    with pytest.raises(ValueError, match="not a profiler duration"):
        _profiler_table.duration_us("12 parsecs")
