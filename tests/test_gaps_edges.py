"""Idle time at a step's start and end: ``gaps(..., edges=True)`` and the report's table."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from _builders import call, gpu, make, op, step

from tracereader import _gaps, load, step_times
from tracereader._gaps import gaps
from tracereader._report import report

ROOT = Path(__file__).resolve().parent.parent
LOADER = ROOT / "docs" / "recordings" / "h200" / "06_train_step" / "loader_inline" / "r0"

# A 1 ms step: 300 us in the DataLoader (no GPU op yet), two kernels with a 20 us hole,
# then 400 us of CPU work that launches nothing; step 2's kernel runs after the window.
EDGES = [
    step(1, 0, 1000),
    op(
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 300, cat="user_annotation"
    ),  # fmt: skip
    op("aten::mm", 300, 10, ext=1),
    call("cudaLaunchKernel", 302, 5, corr=1, ext=1),
    gpu("k1", 310, 200, 1),
    op("aten::add", 520, 5, ext=2),
    call("cudaLaunchKernel", 521, 2, corr=2, ext=2),
    gpu("k2", 530, 70, 2),
    op("aten::zeros", 610, 390, ext=3),
    step(2, 1000, 100),
    op("aten::mm", 1000, 10, ext=4),
    call("cudaLaunchKernel", 1002, 5, corr=3, ext=4),
    gpu("k3", 1010, 50, 3),
]


def test_edges_add_the_idle_time_before_the_first_and_after_the_last_gpu_op():
    t = make(EDGES)
    st = step_times(t)[0]
    assert st.window == (0, 1_000_000)
    inner = gaps(t, st.window)
    assert [(g.gap_us, g.edge) for g in inner] == [(20.0, "")]
    found = gaps(t, st.window, edges=True)
    assert [(g.gap_us, g.edge) for g in found] == [(310.0, "start"), (20.0, ""), (400.0, "end")]
    start, _, end = found
    assert start.cause == "op without kernels"
    assert t.name(start.cause_event).startswith("enumerate(DataLoader)")
    assert t.name(start.next_op) == "k1"
    assert (end.cause, t.name(end.cause_event), t.name(end.next_op)) == (
        "op without kernels", "aten::zeros", "k3")  # fmt: skip
    # the step's idle time is the three gaps
    assert sum(g.gap_us for g in found) == pytest.approx(st.gpu_idle_us)
    assert "edge" not in inner[0].to_dict() and start.to_dict()["edge"] == "start"


def test_no_edges_without_a_window_or_below_the_minimum():
    t = make(EDGES)
    assert [g.edge for g in gaps(t, edges=True)] == ["", ""]  # 20 us, and k2 -> k3
    assert [g.edge for g in gaps(t, (0, 1_000_000), min_gap_us=500, edges=True)] == []


def test_loader_inline_step_lists_the_dataloader_wait_and_the_tail():
    """R-E3: the 172.6 ms DataLoader wait and the 135.3 ms tail were missing from the
    report's gap table, whose largest row was 608.5 us."""
    t = load(LOADER / "trace.json.gz")
    (st,) = step_times(t)
    found = sorted(gaps(t, st.window, edges=True), key=lambda g: -g.gap_us)
    first, second, third = found[:3]
    assert (first.edge, round(first.gap_us, 1)) == ("start", 172606.4)
    assert (
        t.name(first.cause_event) == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    )
    assert (second.edge, round(second.gap_us, 1)) == ("end", 135259.8)
    assert (third.edge, round(third.gap_us, 1)) == ("", 608.5)
    assert sum(g.gap_us for g in found) == pytest.approx(st.gpu_idle_us, rel=0.01)
    html = report(LOADER / "trace.json.gz", draw=False)
    table = html[html.index("Largest GPU idle gaps") :]
    rows = re.findall(r"<tr>(.*?)</tr>", table)[1:]  # the header first
    assert (
        "step start" in rows[0] and "172,606.41" in rows[0] and "enumerate(DataLoader)" in rows[0]
    )
    assert "step end" in rows[1] and "135,259.84" in rows[1]
    assert "between ops" in rows[2] and "608.51" in rows[2]


@pytest.mark.parametrize(
    "path",
    [
        ROOT / "tests" / "data" / "h200" / "train_stack.json.gz",
        LOADER / "trace.json.gz",
        ROOT / "tests" / "data" / "hta_2rank" / "sampled_rank-0.json.gz",
    ],  # fmt: skip
)
def test_a_window_cuts_only_its_stretch_of_each_thread_with_the_same_gaps(path, monkeypatch):
    """The classifier cuts a thread into segments only around the gaps it is asked about:
    the gaps, their causes and shares are those of the whole thread cut into segments."""
    trace = load(path)
    lo, hi = int(trace.ts_ns.min()), int(trace.end_ns.max())
    rnd = random.Random(0)
    windows = [None, *(st.window for st in step_times(trace))]
    windows += [tuple(sorted(rnd.randint(lo, hi) for _ in range(2))) for _ in range(20)]
    found = [gaps(trace, w, 0.0, edges=w is not None) for w in windows]
    assert sum(map(len, found)) > 100
    whole = _gaps._lane_segments
    monkeypatch.setattr(_gaps, "_lane_segments", lambda t, lane, _lo, _hi: whole(t, lane, lo, hi))
    fresh = load(path)
    assert found == [gaps(fresh, w, 0.0, edges=w is not None) for w in windows]
