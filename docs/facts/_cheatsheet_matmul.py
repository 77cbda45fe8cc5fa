"""The cheatsheet's facts about Part 1's recordings (``cheatsheet.md``), one function per entry.

Each entry function reads the current repeat's recordings of ``01_matmul_add``, asserts
every claim its entry makes and puts the numbers its text shows: run once per recorded
repeat, so every assert holds on every repeat and each number is the median. Its picture
is drawn by the function of the same name in ``docs/cheatsheet_pictures.py``.
"""

from __future__ import annotations

from typing import Any

import _cheatsheet_common as common
import numpy as np
from _cheatsheet_common import (
    HF,
    LN,
    NAMES,
    T,
    after_call_us,
    code,
    cpu_ratios,
    gemm_of,
    idle_before_us,
    in_step,
    lead_us,
    one,
    param,
    pct,
    put,
    ratio_range,
    recs,
    step_add,
    step_gemm,
    table_rows,
    table_totals,
    times,
    us,
)
from tracesite import words
from tracesite.facts import Fmt, claim
from tracesite.notebook import verdict

from tracereader import Kind, gaps, gpu_busy_us, kernel_table, link, op_table, step_times


def overhead() -> None:
    """Entry: *Self CPU* total far above *Self CUDA* total."""
    cpu, cuda = table_totals("64_bf16")
    ratio = cpu / cuda
    assert ratio > 10, "the 64x64 run should be CPU-bound"
    assert all(s.verdict == "CPU-bound" for s in step_times(T["64_bf16"]))
    put("ovh_cpu", us(cpu))
    put("ovh_cuda", us(cuda))
    put("ovh_ratio", times(ratio))
    put("ovh_hf_ratio", times(HF["cpu_64_us"] / HF["cuda_64_us"]))
    put("ovh_gpu_pct", pct(100 * max(s.gpu_fraction for s in step_times(T["64_bf16"])), 1))


def compute() -> None:
    """Entry: CPU and CUDA totals of the same order."""
    cpu, cuda = table_totals("4096_bf16")
    assert 0.1 < cpu / cuda < 10, "the 4096x4096 run should be balanced"
    # The last step is GPU-bound on every repeat of both GPUs; the middle one was not on one
    # of the H100's (the CPU fell behind and the queue drained for 41 µs).
    claim(
        step_times(T["4096_bf16"])[-1].verdict == "GPU-bound",
        "GPU-bound: the GPU sets the pace (the 4096×4096 run's last step)",
    )
    put("cmp_cpu", us(cpu))
    put("cmp_cuda", us(cuda))
    t = T["4096_bf16"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    busy = gpu_busy_us(t, window=(int(t.ts_ns[sync]), int(t.ts_ns[sync] + t.dur_ns[sync])))
    claim(busy > 0.9 * t.dur_ns[sync] / 1e3, "recorded GPU ops fill most of the final sync")
    g = LN["4096_bf16"].gpu_ops
    g0, g1 = int(t.ts_ns[g].min()), int((t.ts_ns[g] + t.dur_ns[g]).max())
    assert gpu_busy_us(t, window=(g0, g1)) > 0.7 * (g1 - g0) / 1e3, "the GPU row is mostly solid"
    put("cmp_sync_busy", pct(100 * busy / (t.dur_ns[sync] / 1e3), 0))
    put("cmp_sync", us(t.dur_ns[sync] / 1e3))
    steps_us = sum(st.dur_us for st in t.steps)
    put("cmp_steps", us(steps_us))
    assert cuda > 0.7 * steps_us  # the GPU has as much to do as the CPU's steps, or more


def hotspot() -> None:
    """Entry: One row owns most of the CUDA time."""
    (row,) = table_rows("4096_bf16", "nvjet")
    kt = kernel_table(T["4096_bf16"]).to_records()
    top = kt[0]
    assert top["name"].startswith("nvjet"), "the GEMM should top the kernel table"
    assert row["self_cuda_pct"] > 50 and abs(row["self_cuda_pct"] - top["pct"]) < 1.0
    put("hot_pct", pct(row["self_cuda_pct"], 0))
    put("hot_name", code(top["name"]))
    t = T["4096_bf16"]
    k = step_gemm("4096_bf16", 3)
    assert t.name(k) == top["name"] and t.name(LN["4096_bf16"].issuing_op(k)) == "aten::mm"


def selftotal() -> None:
    """Entry: *Total* much larger than *Self*."""
    (mm_row,) = table_rows("64_bf16", "aten::matmul")
    ops = {r["name"]: r for r in op_table(T["64_bf16"]).to_records()}
    ours = ops["aten::matmul"]
    assert abs(ours["self_cpu_us"] - mm_row["self_cpu_us"]) < 0.01 * mm_row["self_cpu_us"] + 0.01
    assert abs(ours["total_cpu_us"] - mm_row["cpu_total_us"]) < 0.01 * mm_row["cpu_total_us"] + 0.01
    assert mm_row["self_cpu_us"] < 0.2 * mm_row["cpu_total_us"]
    assert ops["aten::mm"]["total_cpu_us"] > 0.8 * mm_row["cpu_total_us"]
    put("st_self", us(mm_row["self_cpu_us"]))
    put("st_calls", mm_row["calls"])
    put("st_total", us(mm_row["cpu_total_us"]))
    put("st_mm_total", us(ops["aten::mm"]["total_cpu_us"]))


def calls() -> None:
    """Entry: A kernel counted more often than the op that launches it."""
    name = "4096_fp32"
    t, ln = T[name], LN[name]
    (op_row,) = table_rows(name, "aten::add")
    (k_row,) = table_rows(name, "void at::native::vectorized_elementwise")
    adds = t.where(kind=Kind.KERNEL, contains="CUDAFunctor_add")
    orphans = [int(i) for i in adds if ln.launch[i] < 0]
    assert k_row["calls"] == len(adds) == op_row["calls"] + 1 and len(orphans) == 1
    orphan = orphans[0]
    first = t.steps[0]
    assert t.ts_ns[orphan] > first.start_ns and not len(
        t.where(kind=Kind.KERNEL, within=(0, int(t.ts_ns[orphan])))
    )
    nxt = LN[name].gpu_ops[LN[name].gpu_ops > orphan][0]
    assert (
        t.name(nxt) == t.name(ln.gpu_ops_of(first.event)[0]) and ln.step_of(nxt).name == first.name
    )
    assert int(first.name.rsplit("#", 1)[1]) == param(name, "wait") + param(name, "warmup_steps")
    put("calls_k", k_row["calls"])
    put("calls_op", op_row["calls"])
    put("calls_at", us((t.ts_ns[orphan] - first.start_ns) / 1e3))
    put("calls_step", code(first.name))


def gpuannot() -> None:
    """Entry: A `matmul_add` row with no CPU time and more than 100 % of CUDA time."""
    name = "64_bf16"
    rows = table_rows(name, "matmul_add")
    assert len(rows) == 2
    gpu_row = next(r for r in rows if r["self_cpu_us"] == 0)
    cpu_row = next(r for r in rows if r["self_cpu_us"] > 0)
    t = T[name]
    spans = t.where(kind=Kind.GPU_ANNOTATION, name="matmul_add")
    assert gpu_row["self_cuda_pct"] > 100
    assert abs(t.dur_ns[spans].sum() / 1e3 - gpu_row["self_cuda_us"]) < 0.1
    assert gpu_row["self_cuda_us"] > 3 * cpu_row["cuda_total_us"]
    for r in t.regions("matmul_add"):
        ops = LN[name].gpu_ops_of(r.event)
        first_ns, last_ns = int(t.ts_ns[ops].min()), int((t.ts_ns[ops] + t.dur_ns[ops]).max())
        sp = [i for i in spans if abs(int(t.ts_ns[i]) - first_ns) < 100]  # ns: rounding only
        assert len(sp) == 1 and abs(int(t.ts_ns[sp[0]] + t.dur_ns[sp[0]]) - last_ns) < 100
    put("ga_cuda", us(gpu_row["self_cuda_us"]))
    put("ga_pct", pct(gpu_row["self_cuda_pct"], 0))
    put("ga_real", us(cpu_row["cuda_total_us"]))


def firststep() -> None:
    """Entry: The first step is far wider than the rest."""
    t = T["64_bf16_nowait"]
    d = [s.dur_us for s in t.steps]
    assert d[0] > 100 * d[-1]
    w = [s.dur_us for s in T["64_bf16"].steps]
    assert w[0] == max(w), "even the warm run's first recorded step is its widest"
    tw = T["64_bf16"]
    cpu = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.DRIVER)
    calls = [sorted(tw.name(i) for i in in_step(tw, s.name, kind=cpu) if int(i) != s.event)
             for s in tw.steps]  # fmt: skip
    assert all(c == calls[0] for c in calls[1:]), "the first kept step makes the same calls"
    assert not any(len(tw.where(contains=c)) for c in ("cudaMalloc", "Occupancy", "Module Loading"))
    assert param("64_bf16", "warmup") is True
    assert param("64_bf16_nowait", "wait") == param("64_bf16_nowait", "warmup_steps") == 0
    put("fs_first", us(d[0]))
    put("fs_first_name", code(t.steps[0].name))
    put("fs_last_name", code(t.steps[-1].name))
    put("fs_last", us(d[-1]))
    put("fs_drawn", str(us(d[0])))  # text: the drawn repeat's, as in the picture
    put("fs_warm_first", us(w[0]))
    put("fs_warm_last", us(w[-1]))


def firstgap() -> None:
    """Entry: A long wait before the first `aten` op of a range."""
    t = T["64_bf16_nowait"]
    first, ann, mat = lead_us(t, 0)
    last = lead_us(t, 2)[0]
    assert first > 3 * last
    py = t.lane[ann]
    between = t.where(within=(int(t.ts_ns[ann]) + 1, int(t.ts_ns[mat])))
    assert not any(t.lane[i] == py for i in between), "nothing recorded on the thread in the lead"
    put("fg_first", us(first))
    put("fg_last", us(last))


def silentself() -> None:
    """Entry: An op that is long but almost empty."""
    t, ln = T["64_bf16_nowait"], LN["64_bf16_nowait"]
    mm = one(in_step(t, 0, name="aten::mm"))
    kids = np.flatnonzero(ln.parent == mm)
    self_us = (t.dur_ns[mm] - t.dur_ns[kids].sum()) / 1e3
    assert self_us > 0.9 * t.dur_ns[mm] / 1e3
    assert all(Kind(int(t.kind[i])) in (Kind.RUNTIME, Kind.DRIVER) for i in kids)
    edges = np.sort(np.concatenate([[t.ts_ns[mm]], t.ts_ns[kids] + t.dur_ns[kids]]))
    starts = np.sort(np.concatenate([t.ts_ns[kids], [t.ts_ns[mm] + t.dur_ns[mm]]]))
    hole_us = float(np.max(starts - edges)) / 1e3
    assert hole_us > 0.5 * self_us
    put("em_total", us(t.dur_ns[mm] / 1e3))
    put("em_self_pct", pct(100 * self_us / (t.dur_ns[mm] / 1e3), 0))
    put("em_hole", us(hole_us))
    put("em_kids", len(kids))


def occupancy() -> None:
    """Entry: Occupancy queries before the first GEMM launch."""
    t = T["64_bf16_nowait"]

    def occ(tr: Any, w: Any = None) -> Any:
        return tr.where(kind=Kind.RUNTIME, prefix="cudaOccupancy", within=w)

    counts = [len(occ(t, (s.start_ns, s.end_ns))) for s in t.steps]
    others = {n: len(occ(T[n])) for n in NAMES if n != "64_bf16_nowait"}
    claim(
        counts[0] > 0 and sum(counts[1:]) == 0 and not any(others.values()),
        "on our H200 and H100, first GEMM only (Part 1's recordings)",
    )
    rows = occ(t)
    clusters = t.where(name="cudaOccupancyMaxActiveClusters")
    launch = one(in_step(t, 0, kind=Kind.DRIVER, name="cuLaunchKernelEx"))
    add0 = one(in_step(t, 0, name="aten::add"))
    assert not len(occ(t, (int(t.ts_ns[add0]), int(t.ts_ns[add0] + t.dur_ns[add0])))), (
        "the add asks nothing"
    )
    assert t.ts_ns[rows].max() < t.ts_ns[launch]
    mm0 = one(in_step(t, 0, name="aten::mm"))
    claim(  # microseconds of its milliseconds
        t.dur_ns[rows].sum() < 0.01 * t.dur_ns[mm0], "Nothing: microseconds, not the GEMM's cost"
    )
    put("oc_n", counts[0])
    put("oc_clusters", len(clusters))
    put("oc_others", len(others))


def launchapi() -> None:
    """Entry: `cuLaunchKernelEx` for the GEMM, `cudaLaunchKernel` for the add."""
    ln = LN["64_bf16"]
    gemm, add = step_gemm("64_bf16", 3), step_add("64_bf16", 3)
    assert ln.launch_api(gemm) == "cuLaunchKernelEx" and ln.launch_api(add) == "cudaLaunchKernel"
    # Across every eager bf16 recording: each nvjet GEMM by the driver API.
    for n in ("64_bf16", "4096_bf16", "64_bf16_cold", "4096_bf16_cold", "64_bf16_batch8"):
        for k in T[n].where(kind=Kind.KERNEL, prefix="nvjet"):
            assert LN[n].launch_api(k) == "cuLaunchKernelEx", n
    fp32 = {
        LN["4096_fp32"].launch_api(k)
        for k in T["4096_fp32"].where(kind=Kind.KERNEL, contains="gemm")
    }
    assert fp32 == {"cudaLaunchKernelExC"}
    put("la_fp32", code("cudaLaunchKernelExC"))


def memset() -> None:
    """Entry: A memset right before the big GEMM."""
    t, ln = T["4096_bf16"], LN["4096_bf16"]
    for s in (2, 3, 4):
        ops = ln.gpu_ops_of(one(in_step(t, s, name="aten::mm")))
        assert [Kind(int(t.kind[o])) for o in ops] == [Kind.MEMSET, Kind.KERNEL], s
        assert t.name(ln.launch[ops[0]]) == "cudaMemsetAsync"
    ms = t.where(kind=Kind.MEMSET)
    nbytes = {int(t.extra["bytes"][i]) for i in ms}
    assert len(nbytes) == 1 and 0 < min(nbytes) < 64
    assert not len(T["64_bf16"].where(kind=Kind.MEMSET))
    put("ms_bytes", nbytes.pop())
    put("ms_dur", us(np.median(t.dur_ns[ms]) / 1e3))


def sync64() -> None:
    """Entry: A short `cudaDeviceSynchronize` at the end, over an idle GPU."""
    t = T["64_bf16"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    s0, s1 = int(t.ts_ns[sync]), int(t.ts_ns[sync] + t.dur_ns[sync])
    busy = gpu_busy_us(t, window=(s0, s1))
    last_end = int((t.ts_ns[LN["64_bf16"].gpu_ops] + t.dur_ns[LN["64_bf16"].gpu_ops]).max())
    assert busy == 0 and last_end < s0
    put("sy_dur", us((s1 - s0) / 1e3))
    put("sy_idle", us((s0 - last_end) / 1e3))


def syncbig() -> None:
    """Entry: A long `cudaDeviceSynchronize`, with the GPU busy throughout."""
    t = T["4096_fp32"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    s0, s1 = int(t.ts_ns[sync]), int(t.ts_ns[sync] + t.dur_ns[sync])
    busy = gpu_busy_us(t, window=(s0, s1))
    cpu_steps = (t.steps[-1].end_ns - t.steps[0].start_ns) / 1e3
    assert busy > 0.7 * (s1 - s0) / 1e3 and (s1 - s0) / 1e3 > 10 * cpu_steps
    # The first GPU op inside the sync is the warm-up call's add (launched before recording):
    # before it the GPU ran that call's unrecorded GEMM, and from it on the lane is full.
    ln = LN["4096_fp32"]
    inside = sorted(
        (int(k) for k in ln.gpu_ops if t.ts_ns[k] + t.dur_ns[k] > s0 and t.ts_ns[k] < s1),
        key=lambda k: int(t.ts_ns[k]),
    )
    k0 = inside[0]
    claim(
        ln.launch[k0] < 0
        and "CUDAFunctor_add" in t.name(k0)
        and gpu_busy_us(t, window=(int(t.ts_ns[k0]), s1)) > 0.99 * (s1 - t.ts_ns[k0]) / 1e3,
        "Recorded GPU ops fill the rest of the sync; the GPU is busy for the rest too, at its "
        "start, with the warm-up call's GEMM, launched before recording began",
    )
    put("sb_dur", us((s1 - s0) / 1e3))
    put("sb_busy", pct(100 * busy / ((s1 - s0) / 1e3), 0))
    put("sb_steps", us(cpu_steps))
    put("sb_n", len(t.steps))


def empty() -> None:
    """Entry: The GPU row is mostly empty."""
    t = T["64_bf16"]
    st = step_times(t)[1]
    assert st.name == "ProfilerStep#3" and st.gpu_fraction < 0.1
    put("em_busy", us(st.gpu_busy_us))
    put("em_cpu", us(st.cpu_us))
    put("em_pct", pct(100 * st.gpu_fraction, 1))


def _queue_full(t4: Any) -> bool:
    """Whether every GPU op launched after the first GEMM started waits > 20 µs after its
    call and starts within 5 µs of the op before it (a full queue)."""
    l4 = link(t4)
    first_gemm = int(t4.ts_ns[t4.where(kind=Kind.KERNEL, prefix="nvjet")].min())
    queued = [int(k) for k in l4.gpu_ops if t4.ts_ns[l4.launch[k]] > first_gemm]
    waits = [after_call_us(t4, l4, k) for k in queued]
    idles = [idle_before_us(t4, l4, k) for k in queued]
    return len(queued) >= 6 and min(waits) > 20 and min(idles) >= 0 and max(idles) < 5


def _facts_gpu() -> str:
    return str(getattr(common._facts, "gpu", "h200"))


def latency() -> None:
    """Entry: Kernels start long after their launch call."""
    # The full queue: at 4096x4096, every op launched after the first GEMM started waits
    # long after its call returned, and starts as the GPU finishes the op before it.
    t4, l4 = T["4096_bf16"], LN["4096_bf16"]
    first_gemm = int(t4.ts_ns[t4.where(kind=Kind.KERNEL, prefix="nvjet")].min())
    queued = [int(k) for k in l4.gpu_ops if t4.ts_ns[l4.launch[k]] > first_gemm]
    waits = [after_call_us(t4, l4, k) for k in queued]
    idles = [idle_before_us(t4, l4, k) for k in queued]
    full = len(queued) >= 6 and min(waits) > 20 and min(idles) >= 0 and max(idles) < 5
    # On the H200 the queue stays full on every repeat; on the H100 it drained in one.
    full_reps = sum(_queue_full(r.trace()) for r in recs("4096_bf16"))
    if _facts_gpu() == "h100":  # the page quotes the H100's count only
        put("lt_full_reps", full_reps)
        put("lt_reps", len(recs("4096_bf16")))
    claim(full_reps >= 2, "the queue stays full in most repeats, on both GPUs")
    if _facts_gpu() == "h200":
        claim(full, "on the H200, every op launched after the first GEMM has started waits")
    claim(step_times(t4)[-1].verdict == "GPU-bound", "the full queue: GPU-bound (the last step)")
    # The empty queue: at 64x64 every kernel starts within a few µs of its call's end, on
    # an idle GPU.
    t, ln = T["64_bf16"], LN["64_bf16"]
    waits64 = [after_call_us(t, ln, int(k)) for k in ln.gpu_ops]
    assert max(abs(w) for w in waits64) < 5
    assert min(idle_before_us(t, ln, int(k)) for k in ln.gpu_ops) > 5
    calls64 = [t.dur_ns[ln.launch[k]] / 1e3 for k in ln.gpu_ops]
    assert np.median(calls64) > np.median(waits64)  # from the call's start: mostly the call
    first_k = int(ln.gpu_ops_of(t.steps[0].event)[0])
    offset = (t.ts_ns[first_k] - t.steps[0].start_ns) / 1e3
    call = int(ln.launch[first_k])
    before = (t.ts_ns[call] - t.steps[0].start_ns) / 1e3
    assert before > 0.5 * offset, "most of the lane offset is CPU work before the first launch"
    claim(not len(t.where(kind=Kind.OVERHEAD)), "no profiler event sits in it")
    if full:  # the waits of the repeats whose queue stayed full
        put("lt_q4k", us(np.median(waits)))
        put("lt_idle", us(max(idles)))
    put("lt_q64", us(np.median(waits64)))
    put("lt_call64", us(np.median(calls64)))
    put("lt_offset", us(offset))
    put("lt_before", us(before))


def kernelgap() -> None:
    """Entry: A gap between the two kernels of every step."""
    name = "64_bf16_20steps"
    t = T[name]
    adds = t.where(kind=Kind.KERNEL, contains="CUDAFunctor_add")
    before_add = [g for g in gaps(t) if int(g.next_op) in set(adds.tolist())]
    assert len(before_add) == len(t.steps) == len(adds)
    assert all(g.cause == "launch" for g in before_add)
    claim(not len(t.where(kind=Kind.OVERHEAD)), "Our 20-step 64×64 recording has no buffer request")
    lens = [g.gap_us for g in before_add]
    put("kg_n", len(before_add))
    put("kg_steps", len(t.steps))
    put("kg_med", us(np.median(lens)))
    put("kg_first", us(lens[0]))


def variance() -> None:
    """Entry: The same kernel takes different times in different steps."""
    name = "4096_bf16_20steps"
    t = T[name]
    g = t.where(kind=Kind.KERNEL, prefix="nvjet")
    d = t.dur_ns[g] / 1e3
    assert len(g) == len(t.steps) and d.max() / d.min() < 1.1
    put("va_n", len(g))
    put("va_min", us(d.min()))
    put("va_med", us(np.median(d)))
    put("va_max", us(d.max()))
    put("va_spread", pct(100 * (d.max() - d.min()) / np.median(d), 0))
    put("va_hf_ratio", times(HF["gemm_mean_us"] / HF["gemm_typical_us"]))


def names() -> None:
    """Entry: GEMM kernel names tell the library, the GPU and the tile."""
    small = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    big = {T["4096_bf16"].name(k) for k in T["4096_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    assert len(small) == len(big) == 1 and small != big
    small, big = small.pop(), big.pop()
    assert small.startswith("nvjet_sm90") and big.startswith("nvjet_sm90")
    assert T["64_bf16"].device_properties[0]["computeMajor"] == 9  # sm90: Hopper
    assert all(
        T["4096_fp32"].name(k).startswith("sm80_xmma")
        for k in T["4096_fp32"].where(kind=Kind.KERNEL, contains="gemm")
    )
    assert HF["gemm_name"] not in (small, big)
    assert "_64x8_" in small and "_256x128_" in big and "coopA" in big
    put("nm_small", code(small))
    put("nm_big", code(big))


def footprint() -> None:
    """Entry: Registers and shared memory: heavy GEMM, light add."""
    t = T["4096_bf16"]
    gemm, add = step_gemm("4096_bf16", 4), step_add("4096_bf16", 4)
    ex = t.extra
    sms = t.device_properties[0]["numSms"]
    assert ex["registers"][gemm] > 3 * ex["registers"][add] and ex["shared_mem"][add] == 0
    assert ex["shared_mem"][gemm] > 100 * 1024 and int(ex["grid"][gemm]) == sms
    put("fp_g_regs", int(ex["registers"][gemm]))
    put("fp_g_smem", f"{ex['shared_mem'][gemm] / 1024:.0f} KiB")
    put("fp_g_grid", int(ex["grid"][gemm]))
    put("fp_sms", sms)
    put("fp_a_regs", int(ex["registers"][add]))
    put("fp_a_grid", f"{int(ex['grid'][add]):,}")


def tf32() -> None:
    """Entry: float32 GEMMs: `ffma` against `tf32` in the name."""

    t32, g32, n32 = gemm_of("4096_fp32")
    ttf, gtf, ntf = gemm_of("4096_fp32_tf32")
    assert "ffma" in n32 and "tf32" not in n32 and "tf32" in ntf
    assert param("4096_fp32", "tf32") is False and param("4096_fp32_tf32", "tf32") is True
    d32, dtf = np.median(t32.dur_ns[g32]) / 1e3, np.median(ttf.dur_ns[gtf]) / 1e3
    assert d32 > 3 * dtf
    dbf = (
        np.median(T["4096_bf16"].dur_ns[T["4096_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")])
        / 1e3
    )
    assert dtf > dbf
    put("tf_n32", code(n32[:60] + "…"))
    put("tf_ntf", code(ntf[:60] + "…"))
    put("tf_d32", us(d32))
    put("tf_dtf", us(dtf))
    put("tf_dbf", us(dbf))
    put("tf_ratio", times(d32 / dtf))


def dtod() -> None:
    """Entry: A `Memcpy DtoD` right before a GEMM."""
    name = "64_bf16_addmm"
    t, ln = T[name], LN[name]
    for s in t.steps:
        ops = ln.gpu_ops_of(s.event)
        assert [Kind(int(t.kind[o])) for o in ops] == [Kind.MEMCPY, Kind.KERNEL], s.name
        assert t.name(ops[0]).startswith("Memcpy DtoD") and "_badd_" in t.name(ops[1])
        assert t.name(ln.issuing_op(ops[0])) == "aten::addmm"
        assert int(t.extra["bytes"][ops[0]]) == param(name, "size") ** 2 * 2  # b, in bfloat16
    eager = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    assert all("_bz_" in n for n in eager)
    big = T["4096_bf16_compile"]
    cp = big.where(kind=Kind.MEMCPY)
    assert {int(big.extra["bytes"][i]) for i in cp} == {param("4096_bf16_compile", "size") ** 2 * 2}
    put("dd_bytes", f"{int(t.extra['bytes'][t.where(kind=Kind.MEMCPY)[0]]):,}")
    put("dd_big_mib", f"{int(big.extra['bytes'][cp[0]]) / 2**20:.0f} MiB")
    put("dd_big_us", us(np.median(big.dur_ns[cp]) / 1e3))


def chain() -> None:
    """Entry: From the step down to the kernel."""
    name = "64_bf16_cold"
    t, ln = T[name], LN[name]
    k = int(ln.gpu_ops_of(t.step(4).event)[0])
    chain = [t.name(i) for i in ln.stack(k)] + [t.name(k)]
    assert chain[:5] == [
        "ProfilerStep#4",
        "matmul_add",
        "aten::matmul",
        "aten::mm",
        "cuLaunchKernelEx",
    ]
    assert chain[5].startswith("nvjet")
    add = int(ln.gpu_ops_of(t.step(4).event)[1])
    assert [t.name(i) for i in ln.stack(add)] == [
        "ProfilerStep#4",
        "matmul_add",
        "aten::add",
        "cudaLaunchKernel",
    ]
    put("ch_chain", " → ".join(code(c) for c in chain))
    one(in_step(t, 4, name="aten::matmul"))  # exactly one matmul in the step


def batched() -> None:
    """Entry: `aten::matmul` → `reshape`, `mm`, `_unsafe_view` for a 3-D input."""
    name = "64_bf16_batch8"
    t, ln = T[name], LN[name]
    assert param(name, "batch") > 0
    assert not len(t.where(prefix="aten::bmm"))
    for s in t.steps:
        mat = one(in_step(t, s.name, name="aten::matmul"))
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == mat)]
        assert kids == ["aten::reshape", "aten::mm", "aten::_unsafe_view"], kids
        view = one(in_step(t, s.name, name="aten::view"))
        assert t.name(ln.parent[view]) == "aten::reshape"
    gemm_b = {t.name(k) for k in t.where(kind=Kind.KERNEL, prefix="nvjet")}
    gemm_2d = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    assert gemm_b == gemm_2d
    add_b = {t.name(k) for k in t.where(kind=Kind.KERNEL, contains="CUDAFunctor_add")}
    assert all("vectorized" not in n and "elementwise_kernel" in n for n in add_b)
    assert all(
        "vectorized_elementwise_kernel" in T["64_bf16"].name(k)
        for k in T["64_bf16"].where(kind=Kind.KERNEL, contains="CUDAFunctor_add")
    )
    put("bt_batch", param(name, "batch"))
    put("bt_size", param(name, "size"))
    put("bt_rows", param(name, "batch") * param(name, "size"))


def addmm() -> None:
    """Entry: `aten::addmm` instead of `aten::matmul` plus `aten::add`."""
    name = "64_bf16_addmm"
    t, ln = T[name], LN[name]
    assert param(name, "op") == "addmm"
    assert not len(t.where(name="aten::matmul")) and not len(t.where(name="aten::add"))
    for s in t.steps:
        op = one(in_step(t, s.name, name="aten::addmm"))
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == op)]
        assert kids == ["aten::squeeze", "cudaMemcpyAsync", "cuLaunchKernelEx"], kids
    am = cpu_ratios("addmm", bare=True)
    put(
        "am_verdict",
        verdict(am, "a measurable cost", "a measurable saving", "too close to tell apart"),
    )
    put("am_ratio", Fmt(float(np.median(am)), lambda v: f"{v:.2f}×"))
    put("am_range", ratio_range(am))


def dynamo() -> None:
    """Entry: `TorchDynamo Cache Lookup` in every step."""
    name = "64_bf16_compile"
    t = T[name]
    cl = t.where(name="TorchDynamo Cache Lookup")
    assert len(cl) == len(t.steps) and all(
        len(in_step(t, s.name, name="TorchDynamo Cache Lookup")) == 1 for s in t.steps
    )
    for n in ("4096_bf16_compile", "64_bf16_reduce_overhead"):
        assert len(T[n].where(name="TorchDynamo Cache Lookup")) == len(T[n].steps)
    for s in t.steps:
        lk = one(in_step(t, s.name, name="TorchDynamo Cache Lookup"))
        rg = one(in_step(t, s.name, prefix="Torch-Compiled Region"))
        assert t.ts_ns[lk] + t.dur_ns[lk] <= t.ts_ns[rg]
    put("dy_med", us(np.median(t.dur_ns[cl]) / 1e3))


def region() -> None:
    """Entry: `Torch-Compiled Region: 0/0`."""
    name = "4096_bf16_compile"
    t, ln = T[name], LN[name]
    regions = t.where(prefix="Torch-Compiled Region")
    assert {t.name(i) for i in regions} == {"Torch-Compiled Region: 0/0"} and len(regions) == len(
        t.steps
    )
    for r in regions:
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == r)]
        assert kids[:2] == ["Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue"], kids
        assert len(kids) == 3 and kids[2].startswith("## Call CompiledFxGraph"), kids
        up = int(ln.parent[r])
        assert t.name(up) == "matmul_add" and list(ln.gpu_ops_of(r)) == list(ln.gpu_ops_of(up))
        fx = int(np.flatnonzero(ln.parent == r)[2])
        assert len(ln.gpu_ops_of(fx)) and list(ln.gpu_ops_of(fx)) == list(ln.gpu_ops_of(r))


def hash() -> None:
    """Entry: The same `CompiledFxGraph` hash in every step."""
    name = "64_bf16_compile"
    t = T[name]
    calls = t.where(prefix="## Call CompiledFxGraph")
    hashes = {t.name(i).split()[3] for i in calls}
    assert len(calls) == len(t.steps) and len(hashes) == 1
    other = {
        T["4096_bf16_compile"].name(i).split()[3]
        for i in T["4096_bf16_compile"].where(prefix="## Call CompiledFxGraph")
    }
    assert len(other) == 1 and other != hashes
    h = hashes.pop()
    put("fx_hash", code(h))
    put("fx_other", code(other.pop()))
    put("fx_n", len(calls))


def samekernel() -> None:
    """Entry: Compiled, and still a copy plus the same GEMM."""
    a, c = "64_bf16_addmm", "64_bf16_compile"
    ka = {T[a].name(k) for k in T[a].where(kind=Kind.KERNEL)}
    kc = {T[c].name(k) for k in T[c].where(kind=Kind.KERNEL)}
    assert ka == kc and len(kc) == 1, (ka, kc)
    assert not any("triton" in n for n in kc)
    for s in T[c].steps:
        ops = LN[c].gpu_ops_of(s.event)
        assert [Kind(int(T[c].kind[o])) for o in ops] == [Kind.MEMCPY, Kind.KERNEL]
        assert LN[c].launch_api(ops[1]) == "cuLaunchKernelEx"
        assert len(in_step(T[c], s.name, name="aten::addmm")) == 1
    assert (
        {st.launches for st in step_times(T[c])}
        == {st.launches for st in step_times(T["64_bf16"])}
        == {2}
    )
    put("sk_gemm", code(kc.pop()))


def tax() -> None:
    """Entry: More CPU per step under compile."""
    tx = cpu_ratios("compiled")
    claim(  # the table's remedy for overhead: compile pays off only with many small kernels
        min(tx) > 1.5 and words.beyond_spread(tx, [1.0] * len(tx)),
        "on our two-kernel step both [compile and CUDA graphs] cost more CPU per call",
    )
    put("tx_ratio", times(float(np.median(tx))))
    put("tx_range", ratio_range(tx))
    tro = cpu_ratios("reduce-overhead")
    claim(
        min(tro) > 1.5 and words.beyond_spread(tro, [1.0] * len(tro)),
        "on our two-kernel step CUDA graphs cost more CPU per call than eager",
    )
    assert min(cpu_ratios("reduce-overhead", "compiled")) > 0.95  # nor than the default mode
    put("tx_ro_ratio", times(float(np.median(tro))))


def graphs() -> None:
    """Entry: One `cudaGraphLaunch`, several kernels."""
    name = "64_bf16_reduce_overhead"
    t, ln = T[name], LN[name]
    assert param(name, "compile") == "reduce-overhead"
    gl = t.where(name="cudaGraphLaunch")
    per = [len(ln.gpu_ops_of_call(c)) for c in gl]
    assert len(gl) == len(t.steps) and min(per) >= 2
    for s in t.steps:
        fc = one(in_step(t, s.name, name="aten::_foreach_copy_"))
        (k,) = ln.gpu_ops_of(fc)
        g = one(in_step(t, s.name, name="cudaGraphLaunch"))
        assert (
            ln.launch_api(k) == "cudaLaunchKernel"
            and t.ts_ns[k] < t.ts_ns[ln.gpu_ops_of_call(g)].min()
        )
    names = [t.name(o) for o in ln.gpu_ops_of_call(gl[0])]
    put("cg_n", per[0])
    put("cg_names", ", ".join(code(n) for n in names))


def schedule() -> None:
    """Entry: The steps start at #2."""
    for n in NAMES[:-1]:  # the interleaved recording has its own schedule
        expect = param(n, "wait") + param(n, "warmup_steps")
        assert T[n].steps[0].name == f"ProfilerStep#{expect}", n
        assert len(T[n].steps) == param(n, "active"), n
    assert (
        T["64_bf16"].steps[0].name == "ProfilerStep#2"
        and T["64_bf16_nowait"].steps[0].name == "ProfilerStep#0"
    )
    put("sc_wait", param("64_bf16", "wait"))
    put("sc_warm", param("64_bf16", "warmup_steps"))
    put("sc_active", param("64_bf16", "active"))
    put("sc_first", code(T["64_bf16"].steps[0].name))
    put(
        "sc_missing",
        " and ".join(
            f"#{i}" for i in range(param("64_bf16", "wait") + param("64_bf16", "warmup_steps"))
        ),
    )


def abr() -> None:
    """Entry: An `Activity Buffer Request` row."""
    name = "64_bf16_nowait"
    t = T[name]
    abr = t.where(name="Activity Buffer Request")
    others = [n for n in NAMES if n != name and len(T[n].where(name="Activity Buffer Request"))]
    assert len(abr) == 1 and not others
    i = int(abr[0])
    s0 = t.steps[0]
    assert Kind(int(t.kind[i])) == Kind.OVERHEAD and s0.start_ns < t.ts_ns[i] < s0.end_ns
    assert not t.lanes[int(t.lane[i])].is_gpu and t.lane[i] != t.lane[s0.event]
    put("ab_dur", us(t.dur_ns[i] / 1e3))
    put("ab_at", us((t.ts_ns[i] - s0.start_ns) / 1e3))
    put("ab_lane", code(t.lanes[int(t.lane[i])].label))
    put("ab_others", len(NAMES) - 1)


def lazy() -> None:
    """Entry: Module loading inside the first runtime calls."""
    name = "64_bf16_nowait"
    t = T[name]
    rtml = t.where(name="Runtime Triggered Module Loading")
    lfl = t.where(name="Lazy Function Loading")
    assert len(rtml) and len(lfl)
    s0 = t.steps[0]
    assert all(s0.start_ns <= t.ts_ns[i] < s0.end_ns for i in [*rtml, *lfl])
    for n in NAMES:
        if n != name:
            assert not len(T[n].where(kind=Kind.OVERHEAD)), n
    fsa = t.where(name="cudaFuncSetAttribute")
    host = max(fsa, key=lambda i: t.dur_ns[i])
    inside = [
        i
        for i in rtml
        if t.ts_ns[host] <= t.ts_ns[i]
        and t.ts_ns[i] + t.dur_ns[i] <= t.ts_ns[host] + t.dur_ns[host]
    ]
    assert len(inside) == 1
    calls = t.where(kind=(Kind.RUNTIME, Kind.DRIVER))
    for i in lfl:  # each one inside a runtime call, or right before one
        a, b = int(t.ts_ns[i]), int(t.ts_ns[i] + t.dur_ns[i])
        assert any(
            t.ts_ns[c] <= a < t.ts_ns[c] + t.dur_ns[c] or 0 <= t.ts_ns[c] - b < 100_000
            for c in calls
        )
    put("ml_host", us(t.dur_ns[host] / 1e3))
    put("ml_load", us(t.dur_ns[inside[0]] / 1e3))
    put("ml_lfl", len(lfl))
    put("ml_lfl_max", us(t.dur_ns[lfl].max() / 1e3))
