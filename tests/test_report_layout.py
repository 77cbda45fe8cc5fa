"""The report's layout details: one time unit per table, the total row last, page names."""

from __future__ import annotations

import re
from pathlib import Path

from tracereader._report import report
from tracereader._report_html import ms_columns, table, unit
from tracereader._tables import Table

ROOT = Path(__file__).resolve().parent.parent
REC = ROOT / "docs" / "recordings" / "h200"
LOADER = REC / "06_train_step" / "loader_inline" / "r0" / "trace.json.gz"
MATMUL20 = REC / "01_matmul_add" / "4096_bf16_20steps" / "r0" / "trace.json.gz"


def _overview(html: str) -> str:
    return html[html.index('id="overview"') : html.index('id="kernels"')]


def test_unit_is_ms_from_one_millisecond():
    assert unit([999.9, 12.0]) == ("us", 1.0)
    assert unit([1000.0]) == ("ms", 1e3)
    assert unit([]) == ("us", 1.0)


def test_long_steps_read_in_ms():
    """B-R4: the 356 ms loader_inline step read "356,016.42" in a µs column."""
    ov = _overview(report(LOADER, draw=False))
    assert "(ms; the verdict reads idle_ms)" in ov
    assert "<th>span_ms</th>" in ov and "<th>span_us</th>" not in ov
    assert ">356.02<" in ov and ">313.39<" in ov
    assert "idle 313.39 ms" in ov


def test_short_steps_keep_us_and_the_total_row_stays_last():
    """R-E15: the total row sat in the body and sorted in with the steps."""
    ov = _overview(report(MATMUL20, draw=False))
    assert "<th>span_us</th>" in ov
    body = ov[ov.index("<tbody>") : ov.index("</tbody>")]
    foot = ov[ov.index("<tfoot>") : ov.index("</tfoot>")]
    assert len(re.findall("<tr>", body)) == 20 and "total" not in body
    assert foot.startswith("<tfoot><tr><td>total</td>")
    assert ">4,065.42<" in foot  # first step's start to the last GPU op's end


def test_table_footer_rows():
    t = Table(["name", "x_us"], [["a", 1.0], ["b", 2.0], ["total", 3.0]], "t", ())
    html = table(t, footer_rows=1)
    assert html.count("<tr>") == 4 and "<tfoot><tr><td>total</td>" in html
    assert "<tfoot>" not in table(t)


def test_read_names_the_site_page():
    html = report(LOADER, draw=False)
    nxt = html[html.index('id="next"') :]
    assert "the site&#x27;s Part" not in nxt
    assert "Read: Reading PyTorch Profiler Traces (the tracereader docs site), " in nxt
    assert "&quot;Part 5: a training step&quot; (docs/chapters/part5.md)" in nxt


def test_long_time_columns_read_in_ms_short_ones_in_us():
    t = Table(["name", "total_us", "mean_us", "calls"],
              [["a", 5000.0, 2.0, 3], ["b", 1500.0, 3.0, 4], ["c", 200.0, 1.0, 1]], "t", ())  # fmt: skip
    got = ms_columns(t)
    assert got.columns == ["name", "total_ms", "mean_us", "calls"]
    assert [r[1] for r in got.rows] == [5.0, 1.5, 0.2] and [r[3] for r in got.rows] == [3, 4, 1]
    assert t.columns[1] == "total_us"  # the table itself is left alone
    html = report(LOADER, draw=False)
    kernels = html[html.index('id="kernels"') : html.index('id="slowest"')]
    assert "<th>total_ms</th>" in kernels and "<th>total_us</th>" not in kernels
