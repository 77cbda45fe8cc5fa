"""Timeline pictures: structure, not pixels (tracereader._draw)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _builders import ADD_KERNEL, H200_TRACES, MM_KERNEL, RECORDINGS, ROOT, make_doc, x_event

from tracereader import Kind, load
from tracereader._draw import Callout, alt_text, compare_timelines, resolve_window, timeline
from tracereader._draw_layout import CLASS_INDEX, bar_label, classify, merge_bars
from tracereader._gaps import gaps as measure_gaps
from tracereader._link import link
from tracereader._names import shorten_kernel_name


@pytest.fixture(scope="module")
def trace():
    return load(json.dumps(make_doc()).encode())


def test_lanes_and_rows_for_a_step(trace):
    fig = timeline(trace, step=1)
    info = fig.tracereader_info
    assert info["lanes"] == ["CPU python3", "CPU pt_autograd_0", "GPU 0 stream 7"]
    # main thread: step > block > matmul > mm > launch (python frames left out)
    assert info["rows"] == 5 + 1 + 1
    assert info["counts"]["Python frames"] == 0
    assert info["counts"]["kernels"] == 2
    assert info["window"]["what"] == "ProfilerStep#1"


def test_python_frames_only_when_asked(trace):
    info = timeline(trace, step=1, python=True).tracereader_info
    assert info["counts"]["Python frames"] == 1
    assert info["rows"] == 6 + 1 + 1


def test_gpu_annotation_strip(trace):
    info = timeline(trace, step=1, gpu_annotations=True).tracereader_info
    assert "GPU 0 stream 7 annotations" in info["lanes"]
    assert info["counts"]["GPU annotations"] == 1


def test_bar_classes(trace):
    info = timeline(trace, step=1).tracereader_info
    c = info["counts"]
    assert (c["launch calls"], c["synchronize calls"], c["other runtime calls"]) == (2, 1, 1)
    assert c["step/user annotations"] == 2 and c["aten/CPU ops"] == 4


def test_arrows_equal_linked_gpu_ops_in_window(trace):
    start, end, _ = resolve_window(trace, step=2)
    launch = link(trace).launch
    gpu = trace.where(kind=(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET), within=(start, end))
    expected = sum(1 for g in gpu if launch[g] >= 0 and start <= trace.ts_ns[launch[g]] < end)
    info = timeline(trace, step=2).tracereader_info
    assert info["arrows"] == expected == 2
    assert timeline(trace, step=2, arrows=False).tracereader_info["arrows"] == 0


def test_arrow_needs_both_ends_in_window(trace):
    kernel = int(trace.where(name=MM_KERNEL)[0])
    window = (int(trace.ts_ns[kernel]), int(trace.ts_ns[kernel] + trace.dur_ns[kernel]))
    assert timeline(trace, window).tracereader_info["arrows"] == 0


def test_gaps_shaded_where_measure_finds_them(trace):
    fig = timeline(trace, step=1, min_gap_us=5)
    start, end = (
        fig.tracereader_info["window"]["start_ns"],
        fig.tracereader_info["window"]["end_ns"],
    )
    found = measure_gaps(trace, window=(start, end), min_gap_us=5)
    drawn = fig.tracereader_info["gaps"]
    assert [(g["start_ns"], g["end_ns"]) for g in drawn] == [(g.start_ns, g.end_ns) for g in found]
    assert len(drawn) == 1 and drawn[0]["gap_us"] == pytest.approx(50)
    ax = fig.axes[0]
    assert sum(p.get_gid() == "tracereader-gap" for p in ax.patches) == len(drawn)
    assert any("50 µs" in t.get_text() for t in ax.texts)
    assert timeline(trace, step=1, gaps=False).tracereader_info["gaps"] == []


def test_callouts_on_named_events(trace):
    add = int(trace.where(name="aten::add")[1])
    callouts = [
        Callout(name="aten::matmul", text="matmul starts"),
        Callout(event=add, text="the add", at="end"),
        Callout(name="cutlass", text="the GEMM"),  # substring of the long kernel name
    ]
    info = timeline(trace, step=2, callouts=callouts).tracereader_info
    got = info["callouts"]
    assert [c["event"] for c in got] == [
        int(trace.where(name="aten::matmul")[1]),
        add,
        int(trace.where(name=MM_KERNEL)[1]),
    ]
    assert got[2]["lane"] == "GPU 0 stream 7"
    assert got[1]["t_us"] > got[0]["t_us"]
    with pytest.raises(ValueError, match="no occurrence"):
        timeline(trace, step=2, callouts=[Callout(name="aten::nothing", text="x")])
    with pytest.raises(ValueError, match="not drawn"):
        timeline(trace, step=1, callouts=[Callout(event=add, text="x")])


def test_callout_step_and_count_pick_the_steps_own_event():
    # step 1's add kernel runs late, into step 2's window: a bare name matches it first
    doc = make_doc(steps=2)
    late = next(e for e in doc["traceEvents"] if e["name"] == ADD_KERNEL)
    late["ts"] = 1005.0
    tr = load(json.dumps(doc).encode())
    first, second = (int(i) for i in tr.where(name=ADD_KERNEL))
    pick = timeline(tr, step=2, callouts=[Callout("add", name=ADD_KERNEL)])
    got = pick.tracereader_info["callouts"][0]
    assert (got["event"], got["step"], got["by"]) == (first, "ProfilerStep#1", "name")  # the trap
    own = Callout("add", name=ADD_KERNEL, step=2, count=1)
    got = timeline(tr, step=2, callouts=[own]).tracereader_info["callouts"][0]
    assert (got["event"], got["step"], got["by"]) == (second, "ProfilerStep#2", "step")
    # over the whole trace, the step still decides; the count counts inside it
    mm = Callout("GEMM", name="cutlass", step="ProfilerStep#2", count=1)
    got = timeline(tr, callouts=[mm]).tracereader_info["callouts"][0]["event"]
    assert got == int(tr.where(name=MM_KERNEL)[1])
    with pytest.raises(ValueError, match="2 drawn events named .*, expected 1"):
        timeline(tr, callouts=[Callout("GEMM", name="cutlass", count=1)])
    with pytest.raises(ValueError, match="in ProfilerStep#1, expected 2"):
        timeline(tr, callouts=[Callout("GEMM", name="cutlass", step=1, count=2)])


def test_callout_event_checked_against_name_and_step(trace):
    add = int(trace.where(name="aten::add")[1])
    ok = Callout("the add", event=add, name="aten::add", step=2)
    assert timeline(trace, step=2, callouts=[ok]).tracereader_info["callouts"][0]["event"] == add
    with pytest.raises(ValueError, match="is 'aten::add', not 'aten::mul'"):
        timeline(trace, step=2, callouts=[Callout("x", event=add, name="aten::mul")])
    with pytest.raises(ValueError, match="is not in ProfilerStep#1"):
        timeline(trace, callouts=[Callout("x", event=add, step=1)])


def test_alt_text_mentions_lanes_and_counts(trace):
    fig = timeline(trace, step=1, callouts=[Callout(name="aten::mm", text="here")])
    text = alt_text(fig)
    assert text == fig.tracereader_alt
    for needle in (
        "CPU python3",
        "GPU 0 stream 7",
        "2 kernels",
        "2 launch calls",
        "1 synchronize call",
        "2 arrows",
        "1 GPU idle gap ",
        "50 µs",
        "here",
    ):
        assert needle in text, needle
    with pytest.raises(ValueError):
        alt_text(object())


def test_window_choices(trace):
    s1 = trace.step(1)
    assert resolve_window(trace, (s1.start_ns, s1.end_ns))[:2] == (s1.start_ns, s1.end_ns)
    start, end, what = resolve_window(trace, region="block")
    assert what == "block" and start < trace.regions("block")[0].start_ns
    assert resolve_window(trace, region=("block", 1))[0] > s1.end_ns
    row = int(trace.where(name="aten::add")[0])
    start, end, _ = resolve_window(trace, around=row, pad_us=5)
    assert (start, end) == (trace.ts_ns[row] - 5000, trace.ts_ns[row] + trace.dur_ns[row] + 5000)
    whole = resolve_window(trace)
    assert whole[0] < trace.t0_ns and whole[2] == "whole trace"
    with pytest.raises(ValueError, match="at most one"):
        resolve_window(trace, step=1, region="block")
    with pytest.raises(KeyError):
        resolve_window(trace, step=9)
    with pytest.raises(KeyError):
        resolve_window(trace, region=("block", 5))


def test_step_window_keeps_spilled_gpu_work():
    doc = make_doc(steps=1)
    for e in doc["traceEvents"]:
        if e.get("name") == ADD_KERNEL:
            e["ts"] = 700.0  # long after ProfilerStep#1 ends at 400
    t = load(json.dumps(doc).encode())
    _, end, _ = resolve_window(t, step=1)
    assert end >= t.t0_ns + 705_000


def test_subpixel_merging_bounds_drawn_bars():
    """20k events in one window: the bars drawn stay bounded by the pixel width."""
    n = 5000
    ev = []
    for i in range(n):
        t = 4.0 * i
        ev += [
            x_event("aten::add", "cpu_op", t, 3.0, **{"External id": i + 1}),
            x_event(
                "cudaLaunchKernel",
                "cuda_runtime",
                t + 1,
                1.0,
                **{"External id": i + 1, "correlation": i + 1},
            ),
            x_event("k", "kernel", t + 2.5, 0.5, pid=0, tid=7, correlation=i + 1),
            x_event("aten::empty", "cpu_op", t + 3.2, 0.5, **{"External id": n + i + 1}),
        ]
    t = load(json.dumps({"traceEvents": ev}).encode())
    fig = timeline(t, width_in=10)
    info = fig.tracereader_info
    assert info["events_drawn"] == 4 * n
    assert (info["arrows"], info["arrows_linked"]) == (0, n)  # too dense to draw
    assert "too dense" in fig.tracereader_alt
    assert timeline(t, width_in=10, arrows="all").tracereader_info["arrows"] == n
    px = (10 - 1.9) * 144
    assert info["bars"] <= 2 * px * 3  # rows x classes, far below one per event
    assert info["labels"] == 0


def test_merge_bars_keeps_wide_bars_apart():
    s = np.array([0, 10, 20, 1000, 1003, 5000])
    e = np.array([5, 15, 25, 1002, 1004, 9000])
    bars = merge_bars(s, e, np.zeros(6, int), np.zeros(6, int), px_ns=8.0)
    assert bars["count"].tolist() == [3, 2, 1]
    assert bars["end_ns"].tolist() == [25, 1004, 9000]
    bars = merge_bars(s, e, np.zeros(6, int), np.zeros(6, int), px_ns=1.0)
    assert len(bars["count"]) == 6


def test_classify_runtime_calls(trace):
    idx = trace.where(kind=(Kind.RUNTIME, Kind.DRIVER))
    launched = np.zeros(len(trace), bool)
    cls = classify(trace, idx, launched)
    by_name = {trace.name(i): int(c) for i, c in zip(idx, cls, strict=True)}
    assert by_name["cudaLaunchKernel"] == CLASS_INDEX["launch"]
    assert by_name["cuLaunchKernel"] == CLASS_INDEX["launch"]
    assert by_name["cudaDeviceSynchronize"] == CLASS_INDEX["sync"]
    assert by_name["cudaGetDevice"] == CLASS_INDEX["runtime"]


@pytest.mark.parametrize("name", [MM_KERNEL, ADD_KERNEL, "triton_poi_fused_add_0"])
@pytest.mark.parametrize("width", [8, 30, 60])
def test_bar_labels_shorten_kernels_as_tables_do(name, width):
    assert bar_label(name, int(Kind.KERNEL), width) == shorten_kernel_name(name, width)
    assert len(bar_label(name, int(Kind.KERNEL), width)) <= width


def test_bar_labels_leave_cpu_ops_and_copies():
    assert bar_label("aten::mm", int(Kind.CPU_OP), 60) == "aten::mm"
    assert bar_label("aten::matmul", int(Kind.CPU_OP), 6) == "aten:…"
    copy = "Memcpy HtoD (Pageable -> Device)"
    assert bar_label(copy, int(Kind.MEMCPY), 60) == copy


def test_labels_use_short_names(trace):
    fig = timeline(trace, step=1, width_in=30)
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert "cutlass_80_simt_sgemm_64x64_8x5_tn_align1" in texts
    assert not any(t.startswith("void ") for t in texts)


def test_compare_shares_one_time_scale(trace):
    other = load(json.dumps(make_doc(steps=1)).encode())
    fig = compare_timelines([trace, other], [2, None], ["eager", "compiled"], title="A vs B")
    assert len(fig.axes) == 2
    assert fig.axes[0].get_xlim() == fig.axes[1].get_xlim()
    panels = fig.tracereader_info["panels"]
    assert [p["title"] for p in panels] == ["eager: ProfilerStep#2", "compiled: whole trace"]
    assert (
        "Timeline of eager" in fig.tracereader_alt and "Timeline of compiled" in fig.tracereader_alt
    )
    with pytest.raises(ValueError):
        compare_timelines([trace], [1, 2], ["a"])


def test_cpu_only_trace_and_empty_window():
    t = load(
        json.dumps(
            {
                "traceEvents": [
                    x_event("ProfilerStep#1", "user_annotation", 0, 100),
                    x_event("aten::add", "cpu_op", 10, 20),
                ]
            }
        ).encode()
    )
    info = timeline(t, step=1).tracereader_info
    assert info["lanes"] == ["CPU thread 1"] and info["arrows"] == 0 and info["gaps"] == []
    fig = timeline(t, (t.t0_ns + 200_000, t.t0_ns + 300_000))
    assert fig.tracereader_info["events_drawn"] == 0
    assert "no events" in fig.tracereader_alt


def test_draws_into_a_given_figure(trace):
    from matplotlib.figure import Figure

    given = Figure()
    assert timeline(trace, step=1, fig=given) is given
    assert given.get_size_inches()[0] == pytest.approx(12)


def test_importing_tracereader_does_not_import_matplotlib():
    code = "import sys, tracereader, tracereader._draw; print('matplotlib' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "src")},
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "path",
    RECORDINGS + H200_TRACES,
    ids=lambda p: p.parents[1].name if p.name == "trace.json.gz" else p.name,
)
def test_real_h200_traces(path):
    t = load(path)
    fig = timeline(t, step=t.steps[-1].name if t.steps else None)
    info = fig.tracereader_info
    start, end = info["window"]["start_ns"], info["window"]["end_ns"]
    launch = link(t).launch
    gpu = np.flatnonzero(np.isin(t.kind, [int(k) for k in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)]))
    gpu = gpu[(t.ts_ns[gpu] < end) & (t.ts_ns[gpu] + t.dur_ns[gpu] > start)]
    lr = launch[gpu]
    ok = lr >= 0
    ok[ok] = (t.ts_ns[lr[ok]] < end) & (t.ts_ns[lr[ok]] + t.dur_ns[lr[ok]] > start)
    assert info["arrows_linked"] == int(ok.sum()) > 0
    # Every linked pair gets its arrow, unless they are too dense to read (a whole trace
    # of many calls): then the alt text says how many were left out.
    assert info["arrows"] in (0, info["arrows_linked"])
    if info["arrows"] < info["arrows_linked"]:
        assert "too dense" in fig.tracereader_alt
    assert any(lane.startswith("GPU") for lane in info["lanes"])
    assert info["lanes"][0].startswith("CPU")
    assert "GPU" in fig.tracereader_alt


def _text_problems(fig) -> list[str]:
    from tracereader._draw_check import text_layout

    lay = text_layout(fig)
    return [f"{a!r} overlaps {b!r}" for a, b in lay.overlaps] + [
        f"{c!r} is cut off" for c in lay.clipped
    ]


def _one_per_example_unmarked(paths: list[Path]) -> list[Any]:
    """Each recording as a parameter; all but the first of each example carry the
    ``every_recording`` mark, which ``nox -s tests-pythons`` deselects: the other Pythons
    draw one recording of each example, the tests session draws them all."""
    seen: set[str] = set()
    params = []
    for p in paths:
        example = p.parents[2].name
        marks = [pytest.mark.every_recording] if example in seen else []
        seen.add(example)
        params.append(pytest.param(p, marks=marks, id=f"{example}/{p.parents[1].name}"))
    return params


@pytest.mark.parametrize("path", _one_per_example_unmarked(RECORDINGS))
def test_recordings_draw_without_overlapping_or_clipped_text(path):
    """Every recording, drawn as the pages draw it (a step at a column's width and wider,
    the whole trace, callouts, two panels): no label overlaps another or is cut off."""
    t = load(path)
    step = t.steps[-1].name if t.steps else None  # the peaks recording has no steps
    span = (t.step(step).start_ns, t.step(step).end_ns) if step else resolve_window(t)[:2]
    callouts = []
    for k in t.where(kind=Kind.KERNEL, within=span)[:1]:
        callouts.append(Callout("the first kernel", event=int(k), at="mid"))
        launch = int(link(t).launch[k])
        if launch >= 0 and span[0] <= t.ts_ns[launch] < span[1]:
            callouts.append(Callout("its launch call", event=launch))
    figs = {
        "step, 7 in": timeline(t, step=step, width_in=7.0),
        "step, 12 in": timeline(t, step=step, width_in=12.0),
        "whole trace, 11 in": timeline(t, width_in=11.0),
        "callouts, 11 in": timeline(t, step=step, width_in=11.0, callouts=callouts),
        "two panels, 11 in": compare_timelines(
            [t, t], [step, None], ["last step", "whole trace"], width_in=11.0
        ),
    }
    problems = [f"{name}: {p}" for name, fig in figs.items() for p in _text_problems(fig)]
    assert not problems, "\n".join(problems)


def test_text_layout_finds_overlaps_clipping_and_the_smallest_text():
    from matplotlib.figure import Figure

    from tracereader._draw_check import text_layout

    fig = Figure(figsize=(4, 2), dpi=100, layout="constrained")
    ax = fig.subplots()
    ax.text(0.5, 0.5, "first label", fontsize=12)
    ax.text(0.52, 0.5, "second label", fontsize=7)  # on top of the first
    ax.text(0.95, 0.1, "cut off by the axes", clip_on=True)
    ax.text(5.0, 5.0, "outside the axes entirely", clip_on=True)  # not seen: not counted
    fig.text(0.9, 0.9, "past the figure's edge")
    lay = text_layout(fig)
    assert lay.overlaps == (("first label", "second label"),)
    assert set(lay.clipped) == {"cut off by the axes", "past the figure's edge"}
    assert "outside the axes entirely" not in lay.texts
    assert lay.min_font_pt == 7
    assert lay.min_text_px(144) == pytest.approx(14)
    # saved with bbox_inches="tight" the figure grows to hold text past its edge
    assert text_layout(fig, canvas=False).clipped == ("cut off by the axes",)


@pytest.mark.parametrize("width_in", [5.0, 7.0, 11.0, 12.0, 20.0])
def test_text_scales_with_width_up_to_the_default(trace, width_in):
    """A timeline wider than 7 in is the 7 in picture magnified (up to 12 in), so when a
    page shrinks it to a column its text stays as large as the 7 in figure's."""
    from tracereader._draw_check import text_layout

    smallest = text_layout(timeline(trace, step=1, width_in=width_in)).min_font_pt
    assert smallest == pytest.approx(8.0 * min(max(width_in, 7.0), 12.0) / 7.0)


def test_alt_text_says_how_long_the_gpu_ran_in_the_window(trace):
    """The shading marks gaps between GPU ops only; the alt text also gives the GPU's busy
    time over the whole window, so a window that starts or ends idle does not read busy."""
    from tracereader import gpu_busy_us

    fig = timeline(trace, step=1)
    start, end, _ = resolve_window(trace, step=1)
    busy = gpu_busy_us(trace, window=(start, end))
    share = 100 * busy / ((end - start) / 1e3)
    assert fig.tracereader_info["busy"] == [(0, busy)]
    assert 0 < share < 100
    assert f"The GPU ran work for {busy:.3g} µs of the window ({share:.0f} %)" in alt_text(fig)
    # A window on one GPU op's middle: busy throughout, and no gap to shade.
    k = int(trace.where(kind=Kind.KERNEL)[0])
    mid = int(trace.ts_ns[k] + trace.dur_ns[k] // 2)
    whole = timeline(trace, (mid - 100, mid + 100))
    assert "ran work for 0.2 µs of the window (100 %)" in alt_text(whole)
    assert "No GPU idle gap between GPU ops shaded." in alt_text(whole)
