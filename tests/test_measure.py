"""Measurements: launch latency, GPU busy, idle gaps and their causes, steps, summary.

Synthetic traces check exact values; the real H200 traces are checked against
an independent count made here with plain ``json``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from _builders import GAPS, LAUNCH_PATHS, REAL, ROOT, call, ev, gpu, make, op, step

from tracereader import load
from tracereader._gaps import gaps
from tracereader._measure import gpu_busy_us, launches, step_times, summary

#: Every trace file the tests ship: the recordings plus the loader's quirk fixtures.
ALL_TRACES = REAL + sorted((ROOT / "tests" / "data" / "synthetic").glob("*.json"))


# ------------------------------------------------------------------ launches
def test_launch_latency_definitions():
    t = make(
        [
            op("aten::add", 0, 30, ext=1),
            call("cudaLaunchKernel", 10, 5, corr=1, ext=1),
            gpu("add_kernel", 20, 3, 1),
            op("CUDAGraph::replay", 100, 40, ext=2),
            call("cudaGraphLaunch", 100, 20, corr=2, ext=2),
            gpu("g0", 150, 5, 2),
            gpu("g1", 160, 5, 2),
            gpu("g2", 170, 5, 2),
            gpu("orphan", 300, 5, 99),
        ]
    )
    lt = launches(t)
    assert len(lt) == 5
    recs = {r["name"]: r for r in lt.to_records()}
    assert recs["add_kernel"]["launch_to_start_us"] == 10.0
    assert recs["add_kernel"]["queue_delay_us"] == 5.0
    assert recs["add_kernel"]["call_us"] == 5.0
    assert recs["add_kernel"]["op"] == "aten::add"
    assert recs["g2"]["graph"] and recs["g2"]["launch_to_start_us"] == 70.0
    assert recs["orphan"]["launch_to_start_us"] is None and recs["orphan"]["api"] == ""
    by = {r["api"]: r for r in lt.by_api()}
    assert by["cudaGraphLaunch"]["calls"] == 1 and by["cudaGraphLaunch"]["gpu_ops"] == 3
    assert by["cudaGraphLaunch"]["launch_to_start_us_median"] == 50.0  # first kernel only
    assert by["cudaLaunchKernel"]["queue_delay_us_median"] == 5.0


def test_latency_exact_with_absolute_timestamps():
    """torch 1.x writes absolute integer µs (~1.7e15): ns values exceed float precision."""
    t = make(
        [
            call("cudaLaunchKernel", 1669783687389327, 9, corr=1),
            gpu("sgemm", 1669783687389339, 40, 1),
        ]
    )
    (rec,) = launches(t).to_records()
    assert (rec["launch_to_start_us"], rec["queue_delay_us"], rec["call_us"]) == (12.0, 3.0, 9.0)


def test_launches_window_selects_by_launch_time():
    t = make(LAUNCH_PATHS)
    assert len(launches(t, window=(0, 2_000_000))) == 15  # launched inside step 1
    assert len(launches(t)) == 17


# ------------------------------------------------------------------ busy
BUSY = [
    gpu("a", 0, 10, 1),
    gpu("b", 5, 10, 2),  # overlaps a on the same device: counted once
    gpu("c", 12, 8, 3, stream=20),
    gpu("d", 0, 7, 4, device=1),
    ev("Stream Sync", 0, 100, "cuda_sync", pid=0, tid=7),
    ev("fwd", 0, 100, "gpu_user_annotation", pid=0, tid=7),
]


def test_gpu_busy_is_union_per_device_summed():
    t = make(BUSY)
    assert gpu_busy_us(t) == 27.0
    assert gpu_busy_us(t, device=0) == 20.0
    assert gpu_busy_us(t, device=1) == 7.0
    assert gpu_busy_us(t, window=(3_000, 8_000)) == 9.0


# ------------------------------------------------------------------ gaps
def test_gap_causes():
    t = make(GAPS)
    found = gaps(t)
    assert [(g.start_ns, g.end_ns) for g in found] == [
        (110_000, 130_000),
        (135_000, 195_000),
        (200_000, 300_000),
        (305_000, 340_000),
        (345_000, 500_000),
    ]
    assert [g.cause for g in found] == [
        "sync",
        "op without kernels",
        "python",
        "launch",
        "nothing recorded",
    ]
    names = [t.name(g.cause_event) for g in found]
    assert names == [
        "cudaStreamSynchronize",
        "aten::empty",
        "model.py(12): forward",
        "cuLaunchKernel",
        "ProfilerStep#1",
    ]
    assert [t.name(g.next_op) for g in found] == ["k2", "k3", "k4", "k5", "k6"]
    assert found[1].breakdown_us == {
        "op without kernels": 40.0,
        "launch": 15.0,
        "nothing recorded": 5.0,
    }
    assert found[2].breakdown_us == {"python": 90.0, "launch": 2.0, "nothing recorded": 8.0}
    assert all(g.device == 0 for g in found)
    assert found[0].gap_us == 20.0


def test_gaps_min_and_window():
    t = make(GAPS)
    assert len(gaps(t, min_gap_us=0.1)) == 6
    assert len(gaps(t, min_gap_us=50)) == 3
    inside = gaps(t, window=(100_000, 320_000))
    assert [g.cause for g in inside] == ["sync", "op without kernels", "python"]


def test_gap_with_unlinked_next_op():
    t = make([gpu("a", 0, 5, 1), gpu("b", 20, 5, 2)])
    (g,) = gaps(t)
    assert g.cause == "nothing recorded" and g.cause_event == -1


# ------------------------------------------------------------------ steps
def test_step_times_attribute_by_launch():
    t = make(
        [
            step(1, 0, 100),
            step(2, 100, 100),
            call("cudaLaunchKernel", 10, 5, corr=1),
            gpu("long", 20, 60, 1),
            call("cudaLaunchKernel", 90, 5, corr=2),
            gpu("spill", 110, 10, 2),  # runs in step 2, launched in step 1
            call("cudaLaunchKernel", 150, 5, corr=3),
            gpu("short", 160, 10, 3),
            call("cudaMemcpyAsync", 170, 5, corr=4),
            gpu("Memcpy DtoH (Device -> Pinned)", 180, 2, 4, cat="gpu_memcpy"),
        ]
    )
    s1, s2 = step_times(t)
    assert (s1.name, s1.cpu_us, s1.gpu_busy_us, s1.kernels, s1.launches) == (
        "ProfilerStep#1",
        100.0,
        70.0,
        2,
        2,
    )
    # step 1's span runs to the end of "spill" (120 us); 70 us of it busy
    assert (s1.span_us, s1.gpu_idle_us) == (120.0, 50.0)
    assert s1.verdict == "balanced"
    assert (s2.gpu_busy_us, s2.gpu_ops, s2.kernels, s2.launches) == (12.0, 2, 1, 2)
    # step 2's span starts where step 1's ended (120 us), so "spill" counts once
    assert s2.window == (120_000, 200_000)
    assert (s2.span_us, s2.gpu_idle_us, s2.busy_share) == (80.0, 68.0, 0.15)
    assert s2.verdict == "CPU-bound"


def _step_busy(share: float, n: int = 10, slot: float = 100.0) -> list[dict]:
    """One 1 ms step launching ``n`` kernels, each busy ``share`` of its ``slot`` µs."""
    events = [step(1, 0, n * slot)]
    for k in range(n):
        events += [
            call("cudaLaunchKernel", k * slot, 0.5, corr=k + 1),
            gpu(f"k{k}", k * slot + 0.5, share * slot, k + 1),
        ]
    return events


@pytest.mark.parametrize(
    ("share", "want"),
    [(0.30, "CPU-bound"), (0.60, "balanced"), (0.90, "balanced"), (0.99, "GPU-bound")],
)
def test_step_verdict_reads_the_gpu_idle_time_inside_the_step(share, want):
    (st,) = step_times(make(_step_busy(share)))
    assert st.span_us == 1000.0
    assert st.busy_share == pytest.approx(share)
    assert st.gpu_idle_us == pytest.approx(1000.0 * (1 - share))
    assert st.verdict == want
    d = st.to_dict()
    assert d["verdict"] == want and d["busy_share"] == pytest.approx(share)


def test_verdict_thresholds_are_the_named_constants():
    from tracereader._measure import CPU_BOUND_BUSY, GPU_BOUND_BUSY, VERDICTS, step_verdict

    assert (CPU_BOUND_BUSY, GPU_BOUND_BUSY) == (0.50, 0.95)
    assert step_verdict(GPU_BOUND_BUSY) == "GPU-bound"
    assert step_verdict(GPU_BOUND_BUSY - 1e-9) == "balanced"
    assert step_verdict(CPU_BOUND_BUSY) == "balanced"
    assert step_verdict(CPU_BOUND_BUSY - 1e-9) == "CPU-bound"
    assert set(VERDICTS) == {"GPU-bound", "balanced", "CPU-bound", "no GPU work"}


def test_a_pipelined_step_whose_cpu_runs_ahead_is_gpu_bound():
    """Each 100 us CPU step launches a 300 us kernel, which queues behind the previous
    step's: the step's own kernel starts after its CPU range ended, yet the GPU never
    waited inside the step's span."""
    events = []
    start = 5.0
    for k in range(4):
        events += [step(k + 1, 100 * k, 100), call("cudaLaunchKernel", 100 * k, 5, corr=k + 1)]
        events.append(gpu(f"k{k}", start, 300, k + 1))
        start += 300
    steps = step_times(make(events))
    assert [s.verdict for s in steps] == ["GPU-bound"] * 4
    s2 = steps[1]
    # its span runs from the end of step 1's kernel to the end of its own
    assert (s2.cpu_us, s2.span_us, s2.gpu_idle_us) == (100.0, 300.0, 0.0)
    assert [s.span_busy_us for s in steps] == [300.0] * 4
    assert sum(s.span_us for s in steps) == 1205.0  # first CPU start to last kernel end


def test_a_step_whose_gpu_work_is_shorter_than_its_cpu_time_is_not_gpu_bound():
    """230 us of CPU time, 199 us of GPU work: the GPU waits 31 us, so the step is
    balanced (the old "busy at least half the CPU time" rule called it GPU-bound)."""
    events = [step(1, 0, 230), call("cudaLaunchKernel", 10, 5, corr=1), gpu("k", 20, 199, 1)]
    (st,) = step_times(make(events))
    assert (st.span_us, st.gpu_idle_us) == (230.0, 31.0)
    assert st.verdict == "balanced"


# ------------------------------------------------------------------ summary
def test_summary_synthetic():
    s = summary(make(LAUNCH_PATHS))
    assert (s["kernels"], s["memcpys"], s["memsets"], s["gpu_ops"]) == (13, 2, 2, 17)
    assert s["linked_gpu_ops"] == 16
    assert s["graph_launches"] == 1
    assert s["launch_apis"] == {
        "cudaLaunchKernel": 4,
        "cudaGraphLaunch": 3,
        "cuLaunchKernel": 2,
        "cuLaunchKernelEx": 1,
        "cudaLaunchCooperativeKernel": 1,
        "cudaLaunchKernelExC": 1,
        "cudaMemcpy": 1,
        "cudaMemcpyAsync": 1,
        "cudaMemset": 1,
        "cudaMemsetAsync": 1,
    }
    assert s["steps"] == ["ProfilerStep#1"]
    assert s["issuer_methods"] == {"external_id": 11, "containment": 2, "none": 1}
    json.dumps(s)  # JSON-ready


# ------------------------------------------------------------------ real traces
def _independent(path: Path) -> dict:
    """Count what summary() reports, straight from the JSON, without tracereader."""
    data = path.read_bytes()
    raw = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8", "replace")
    doc = json.loads(raw, strict=False)
    evs = [e for e in (doc if isinstance(doc, list) else doc["traceEvents"]) if e.get("ph") == "X"]
    # Category names as written by torch 2.x, and their torch 1.x spellings.
    gpu_cats = {"kernel": "kernels", "gpu_memcpy": "memcpys", "memcpy": "memcpys",
                "gpu_memset": "memsets", "memset": "memsets"}  # fmt: skip
    call_cats = {"cuda_runtime", "cuda_driver", "runtime"}
    out = dict.fromkeys(("kernels", "memcpys", "memsets"), 0)
    calls = {}
    for e in evs:
        if str(e.get("cat")).lower() in call_cats and "correlation" in e.get("args", {}):
            calls.setdefault(e["args"]["correlation"], e["name"])
    apis: dict[str, int] = {}
    per_device: dict[int, list[tuple[int, int]]] = {}
    for e in evs:
        cat = str(e.get("cat")).lower()
        if cat in gpu_cats:
            out[gpu_cats[cat]] += 1
            name = calls.get(e.get("args", {}).get("correlation"))
            if name is not None:
                apis[name] = apis.get(name, 0) + 1
            start = round(e["ts"] * 1000)
            per_device.setdefault(e["pid"], []).append((start, start + round(e["dur"] * 1000)))
    busy = 0
    for spans in per_device.values():
        end = None
        for a, b in sorted(spans):
            if end is None or a > end:
                busy += b - a
                end = b
            elif b > end:
                busy += b - end
                end = b
    steps = sorted(
        (e["ts"], e["name"])
        for e in evs
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )
    out.update(
        gpu_ops=sum(out.values()),
        linked_gpu_ops=sum(apis.values()),
        launch_apis=apis,
        graph_launches=sum(
            1
            for e in evs
            if e["name"] == "cudaGraphLaunch" and str(e.get("cat")).lower() in call_cats
        ),
        gpu_busy_us=busy / 1e3,
        steps=[n for _, n in steps],
    )
    return out


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: str(p.relative_to(ROOT)))
def test_summary_matches_independent_count(path):
    s = summary(load(path))
    want = _independent(path)
    for key in ("kernels", "memcpys", "memsets", "gpu_ops", "linked_gpu_ops", "graph_launches"):
        assert s[key] == want[key], key
    assert s["launch_apis"] == want["launch_apis"]
    assert s["gpu_busy_us"] == pytest.approx(want["gpu_busy_us"], abs=1e-6)
    assert s["steps"] == want["steps"]


def _real(name: str):
    return load(ROOT / "tests" / "data" / "h200" / f"{name}.json.gz")  # missing: TraceError


def test_real_cudagraphs_one_call_many_kernels():
    from tracereader._link import link

    t = _real("cudagraphs")
    ln = link(t)
    graph_calls = t.where(name="cudaGraphLaunch")
    assert len(graph_calls) >= 1
    assert max(len(ln.gpu_ops_of_call(c)) for c in graph_calls) > 1
    assert any(launches(t).graph)


def test_real_compile_triton_cpu_op_is_issuer():
    from tracereader import Kind
    from tracereader._link import link

    t = _real("compile")
    ln = link(t)
    triton = [i for i in t.where(kind=Kind.KERNEL) if t.name(i).startswith("triton_")]
    assert triton
    for k in triton:
        issuer = ln.issuing_op(k)
        assert t.kind[issuer] == Kind.CPU_OP and t.name(issuer) == t.name(k)
        assert ln.launch_api(k).startswith("cuLaunchKernel")


def test_real_train_eager_has_sync_gaps_and_side_stream():
    t = _real("train_eager")
    assert sum(1 for ln in t.gpu_lanes() if len(t.where(lane=ln.index))) >= 2
    causes = {g.cause for g in gaps(t)}
    assert "sync" in causes
    assert summary(t)["memcpys"] > 0


def test_real_train_stack_kernels_sit_under_module_frames():
    from tracereader import Kind
    from tracereader._link import link

    t = _real("train_stack")
    ln = link(t)
    stacks = [ln.stack(i) for i in ln.gpu_ops if ln.launch[i] >= 0]
    assert any(t.kind[j] == Kind.PYTHON for s in stacks for j in s)
    assert any(t.name(j).startswith("nn.Module:") for s in stacks for j in s)
    assert np.all(ln.launch[ln.gpu_ops] >= 0)


def test_a_step_without_gpu_work_has_no_bound_verdict():
    """A CPU-only trace (the quick start's snippet on a machine without a GPU): its steps
    launched nothing and nothing ran on a GPU, so neither CPU- nor GPU-bound applies."""
    from tracereader._measure import StepTime

    cpu_only = StepTime("ProfilerStep#1", 0, 1000, 1.0, 0.0, 0, 0, 0, 1000, 0.0)
    assert cpu_only.verdict == "no GPU work"
    launched_unseen = StepTime("s", 0, 1000, 1.0, 0.0, 0, 0, 3, 1000, 0.0)
    assert launched_unseen.verdict == "no GPU work"  # launch calls, no GPU activity recorded
    assert StepTime("s", 0, 1000, 1.0, 0.2, 2, 2, 2, 1000, 0.2).verdict == "CPU-bound"
    assert StepTime("s", 0, 1000, 1.0, 0.8, 2, 2, 2, 1000, 0.8).verdict == "balanced"
    assert StepTime("s", 0, 1000, 1.0, 0.8, 2, 2, 2, 1000, 0.96).verdict == "GPU-bound"
    t = make([e for e in LAUNCH_PATHS if e["cat"] not in ("kernel", "gpu_memcpy", "gpu_memset")])
    assert [s.verdict for s in step_times(t)] == ["no GPU work"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_real_verdicts_follow_the_idle_rule(path):
    from tracereader._measure import VERDICTS, step_verdict

    for st in step_times(load(path)):
        assert st.verdict in VERDICTS
        assert 0.0 <= st.busy_share <= 1.0 and st.window[0] >= st.start_ns
        assert st.gpu_idle_us == pytest.approx(st.span_us - st.span_busy_us, abs=1e-6)
        if st.verdict != "no GPU work":
            assert st.verdict == step_verdict(st.busy_share)


def test_region_times_count_the_gpu_work_launched_while_open_from_any_thread():
    from tracereader import region_table, region_times

    events = [
        step(2, 0, 1000),
        ev("forward", 10, 100, "user_annotation"),
        ev("inner", 25, 10, "user_annotation"),  # nested: not listed by default
        call("cudaLaunchKernel", 30, 5, corr=1),
        gpu("k_fwd", 200, 50, corr=1),
        ev("backward", 150, 300, "user_annotation"),
        call("cudaLaunchKernel", 160, 5, corr=2, tid=2),  # the autograd engine's thread
        call("cudaLaunchKernel", 170, 5, corr=3, tid=2),
        gpu("k_bwd1", 260, 40, corr=2),
        gpu("k_bwd2", 290, 30, corr=3),  # overlaps k_bwd1: busy is the union
    ]
    rows = {r.name: r for r in region_times(make(events))}
    assert list(rows) == ["forward", "backward"]
    fwd, bwd = rows["forward"], rows["backward"]
    assert (fwd.launches, fwd.kernels, fwd.gpu_busy_us, fwd.cpu_us) == (1, 1, 50.0, 100.0)
    assert (bwd.launches, bwd.kernels, bwd.gpu_busy_us) == (2, 2, 60.0)
    assert bwd.step == "ProfilerStep#2" and bwd.gpu_end_us == pytest.approx(320.0)
    named = region_times(make(events), names=["inner"])
    assert [r.name for r in named] == ["inner"] and named[0].kernels == 1
    assert region_table(make(events)).columns[:2] == ["step", "region"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(ROOT)))
def test_real_steps_gpu_time_adds_up_to_the_busy_time(path):
    """Step spans tile the GPU's timeline: they never overlap, so the steps' busy times
    add up to the GPU busy time between the first step's start and the last span's end."""
    t = load(path)
    steps = step_times(t)
    if not steps:
        return
    for a, b in zip(steps, steps[1:], strict=False):
        assert a.window[1] <= b.window[0]
    whole = (steps[0].window[0], steps[-1].window[1])
    assert sum(s.span_busy_us for s in steps) == pytest.approx(gpu_busy_us(t, window=whole))


@pytest.mark.parametrize(
    ("variant", "busy_us", "first_span_us", "later_busy_us"),
    [
        # 20 steps of a 4096 matmul: the CPU runs ahead; before the fix the spans
        # overlapped and the steps' busy times summed to 27,011 us
        ("01_matmul_add/4096_bf16_20steps", 3866.48, 296.01, (191.7, 194.1)),
        # 8B decode: before the fix 4,105 / 7,886 / 9,811 us, 21,802 us in all
        ("05_llm_decode/loop_untuned_8b", 12312.91, 6778.36, (4099.8, 4105.8)),
        ("05_llm_decode/loop_tuned_8b", 15431.35, 7099.99, (5140.0, 5140.3)),
    ],
)
def test_steps_count_each_gpu_op_once_when_the_cpu_runs_ahead(
    variant, busy_us, first_span_us, later_busy_us
):
    t = load(ROOT / "docs" / "recordings" / "h200" / variant / "r0" / "trace.json.gz")
    steps = step_times(t)
    assert gpu_busy_us(t) == pytest.approx(busy_us, abs=0.01)
    assert sum(s.span_busy_us for s in steps) == pytest.approx(busy_us, abs=0.01)
    assert sum(s.gpu_busy_us for s in steps) == pytest.approx(busy_us, abs=0.01)
    assert steps[0].span_us == pytest.approx(first_span_us, abs=0.01)
    lo, hi = later_busy_us
    assert all(lo <= s.span_busy_us <= hi for s in steps[1:])
    # one stream: each span holds exactly the work its step launched
    assert [s.span_busy_us for s in steps] == pytest.approx([s.gpu_busy_us for s in steps])
    assert {s.verdict for s in steps[1:]} == {"GPU-bound"}
