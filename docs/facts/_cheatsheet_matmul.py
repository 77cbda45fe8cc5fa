"""The cheatsheet's facts about Part 1's recordings (``cheatsheet.md``), one function per entry.

Each entry function reads the current repeat's recordings of ``01_matmul_add``, checks
every claim its entry makes and puts the numbers its text shows: run once per recorded
repeat, so every claim holds on every repeat and each number is the median. Its picture
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
    gemm_of,
    idle_before_us,
    in_step,
    lead_us,
    one,
    param,
    pct,
    put,
    recs,
    step_add,
    step_gemm,
    table_rows,
    table_totals,
    times,
    us,
)
from tracesite import words
from tracesite.facts import claim

from tracereader import Kind, gaps, gpu_busy_us, kernel_table, link, op_table, step_times


def overhead() -> None:
    """Entry: *Self CPU* total far above *Self CUDA* total."""
    cpu, cuda = table_totals("64_bf16")
    ratio = cpu / cuda
    claim(
        ratio > 10 and words.far(ratio, 1.0),
        "Self CPU total far above Self CUDA total: the 64×64 run is overhead-bound",
    )
    claim(
        all(s.verdict == "CPU-bound" for s in step_times(T["64_bf16"])),
        "every 64×64 step is CPU-bound: the run is overhead-bound",
    )
    put("ovh_cpu", us(cpu))
    put("ovh_cuda", us(cuda))
    put("ovh_ratio", times(ratio))
    put("ovh_hf_ratio", times(HF["cpu_64_us"] / HF["cuda_64_us"]))
    # "Each recorded step ... at most": the busiest step of every repeat (the picture's,
    # drawn from one repeat, was above the median of the repeats' busiest).
    most = max(s.gpu_fraction for r in recs("64_bf16") for s in step_times(r.trace()))
    put("ovh_gpu_pct", pct(100 * most, 1))


def compute() -> None:
    """Entry: CPU and CUDA totals of the same order."""
    cpu, cuda = table_totals("4096_bf16")
    claim(
        max(cpu, cuda) <= 1.2 * min(cpu, cuda),
        "For 4096×4096 the two totals are within 20 % of each other",
    )
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
    claim(words.most(busy, t.dur_ns[sync] / 1e3), "recorded GPU ops fill most of the final sync")
    g = LN["4096_bf16"].gpu_ops
    g0, g1 = int(t.ts_ns[g].min()), int((t.ts_ns[g] + t.dur_ns[g]).max())
    claim(
        words.most(gpu_busy_us(t, window=(g0, g1)), (g1 - g0) / 1e3), "The GPU row is mostly solid"
    )
    put("cmp_sync_busy", pct(100 * busy / (t.dur_ns[sync] / 1e3), 0))
    put("cmp_sync", us(t.dur_ns[sync] / 1e3))
    steps_us = sum(st.dur_us for st in t.steps)
    (step_row,) = table_rows("4096_bf16", "ProfilerStep*")
    claim(
        abs(step_row["cpu_total_us"] - steps_us) < 0.01 * steps_us,
        "the steps' own CPU time: the ProfilerStep* row's CPU total",
    )
    put("cmp_steps", us(steps_us))
    reps = recs("4096_bf16")  # the medians the page pastes, over every repeat
    med_steps = np.median([sum(st.dur_us for st in r.trace().steps) for r in reps])
    med_cuda = np.median([r.table_totals_us()["self_cuda_us"] for r in reps])
    claim(
        med_steps < med_cuda,
        "the steps' own CPU time, under the GPU total in the median of the recordings",
    )


def hotspot() -> None:
    """Entry: One row owns most of the CUDA time."""
    (row,) = table_rows("4096_bf16", "nvjet")
    kt = kernel_table(T["4096_bf16"]).to_records()
    top = kt[0]
    claim(
        top["name"].startswith("nvjet"), "the hotspot is the matrix multiply: a GEMM tops the table"
    )
    claim(
        words.most(row["self_cuda_pct"], 100) and abs(row["self_cuda_pct"] - top["pct"]) < 1.0,
        "One kernel row, the GEMM, holds most of Self CUDA in the 4096×4096 table",
    )
    put("hot_pct", pct(row["self_cuda_pct"], 0))
    put("hot_name", code(top["name"]))
    t = T["4096_bf16"]
    k = step_gemm("4096_bf16", 3)
    claim(
        t.name(k) == top["name"] and t.name(LN["4096_bf16"].issuing_op(k)) == "aten::mm",
        "Here it is the matrix multiply itself: the step's GEMM, launched by aten::mm",
    )


def selftotal() -> None:
    """Entry: *Total* much larger than *Self*."""
    (mm_row,) = table_rows("64_bf16", "aten::matmul")
    ops = {r["name"]: r for r in op_table(T["64_bf16"]).to_records()}
    ours = ops["aten::matmul"]
    claim(
        abs(ours["self_cpu_us"] - mm_row["self_cpu_us"]) < 0.01 * mm_row["self_cpu_us"] + 0.01,
        "the trace's aten::matmul Self CPU matches the profiler table's",
    )
    claim(
        abs(ours["total_cpu_us"] - mm_row["cpu_total_us"]) < 0.01 * mm_row["cpu_total_us"] + 0.01,
        "the trace's aten::matmul CPU total matches the profiler table's",
    )
    claim(
        words.much(mm_row["cpu_total_us"], mm_row["self_cpu_us"]),
        "aten::matmul shows CPU total much larger than its Self CPU",
    )
    claim(
        ops["aten::mm"]["total_cpu_us"] > 0.8 * mm_row["cpu_total_us"],
        "the time is spent in the children, here aten::mm",
    )
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
    claim(
        k_row["calls"] == len(adds) == op_row["calls"] + 1 and len(orphans) == 1,
        "the add kernel has one call more than aten::add; one add kernel has no launch call",
    )
    orphan = orphans[0]
    first = t.steps[0]
    claim(
        t.ts_ns[orphan] > first.start_ns
        and not len(t.where(kind=Kind.KERNEL, within=(0, int(t.ts_ns[orphan])))),
        "it starts after the first step begins, the first kernel of the recording",
    )
    nxt = LN[name].gpu_ops[LN[name].gpu_ops > orphan][0]
    claim(
        t.name(nxt) == t.name(ln.gpu_ops_of(first.event)[0]) and ln.step_of(nxt).name == first.name,
        "launched in the warm-up step, just before the first GEMM of the window",
    )
    claim(
        int(first.name.rsplit("#", 1)[1]) == param(name, "wait") + param(name, "warmup_steps"),
        "the first recorded step follows the schedule's wait and warm-up steps",
    )
    put("calls_k", k_row["calls"])
    put("calls_op", op_row["calls"])
    put("calls_at", us((t.ts_ns[orphan] - first.start_ns) / 1e3))
    put("calls_step", code(first.name))


def gpuannot() -> None:
    """Entry: A `matmul_add` row with no CPU time and more than 100 % of CUDA time."""
    name = "64_bf16"
    rows = table_rows(name, "matmul_add")
    claim(len(rows) == 2, "The table has two matmul_add rows")
    gpu_row = next(r for r in rows if r["self_cpu_us"] == 0)
    cpu_row = next(r for r in rows if r["self_cpu_us"] > 0)
    t = T[name]
    spans = t.where(kind=Kind.GPU_ANNOTATION, name="matmul_add")
    claim(gpu_row["self_cuda_pct"] > 100, "The top one has more than 100 % of CUDA time")
    claim(
        abs(t.dur_ns[spans].sum() / 1e3 - gpu_row["self_cuda_us"]) < 0.1,
        "the profiler counts the range's GPU-side span as CUDA time",
    )
    claim(
        gpu_row["self_cuda_us"] > 3 * cpu_row["cuda_total_us"],
        "the other row's kernels take only a fraction of the top row's Self CUDA",
    )
    for r in t.regions("matmul_add"):
        ops = LN[name].gpu_ops_of(r.event)
        first_ns, last_ns = int(t.ts_ns[ops].min()), int((t.ts_ns[ops] + t.dur_ns[ops]).max())
        sp = [i for i in spans if abs(int(t.ts_ns[i]) - first_ns) < 100]  # ns: rounding only
        claim(
            len(sp) == 1 and abs(int(t.ts_ns[sp[0]] + t.dur_ns[sp[0]]) - last_ns) < 100,
            "the profiler spans it from the first to the last GPU op launched inside the range",
        )
    put("ga_cuda", us(gpu_row["self_cuda_us"]))
    put("ga_pct", pct(gpu_row["self_cuda_pct"], 0))
    put("ga_real", us(cpu_row["cuda_total_us"]))


def firststep() -> None:
    """Entry: The first step is far wider than the rest."""
    t = T["64_bf16_nowait"]
    d = [s.dur_us for s in t.steps]
    claim(
        words.far(d[0], max(d[1:])),
        "The first step is far wider than the rest (from a fresh process)",
    )
    w = [s.dur_us for s in T["64_bf16"].steps]
    claim(w[0] == max(w), "the first kept step is still the widest")
    tw = T["64_bf16"]
    cpu = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.DRIVER)
    calls = [sorted(tw.name(i) for i in in_step(tw, s.name, kind=cpu) if int(i) != s.event)
             for s in tw.steps]  # fmt: skip
    claim(all(c == calls[0] for c in calls[1:]), "It makes the same calls as the later steps")
    claim(
        not any(len(tw.where(contains=c)) for c in ("cudaMalloc", "Occupancy", "Module Loading")),
        "no setup call appears",
    )
    claim(
        param("64_bf16", "warmup") is True, "64_bf16 ran after the example's untimed warm-up calls"
    )
    claim(
        param("64_bf16_nowait", "wait") == param("64_bf16_nowait", "warmup_steps") == 0,
        "Recording from the very first call of a fresh process (wait=0, warmup=0)",
    )
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
    claim(
        words.far(first, last),
        "A long wait before the first aten op; by step #2 the lead is far shorter",
    )
    warm = lead_us(T["64_bf16"], 2)[0]  # the usual schedule's first recorded step (#2)
    claim(
        words.most(first - warm, first) and words.much(first, warm),
        "With wait=1, warmup=1 the skipped steps absorb most of this, and the first recorded "
        "step's lead is much shorter",
    )
    py = t.lane[ann]
    between = t.where(within=(int(t.ts_ns[ann]) + 1, int(t.ts_ns[mat])))
    claim(
        not any(t.lane[i] == py for i in between),
        "nothing they do is recorded as an event (on the thread, in the lead)",
    )
    put("fg_first", us(first))
    put("fg_last", us(last))
    put("fg_warm", us(warm))


def silentself() -> None:
    """Entry: An op that is long but almost empty."""
    t, ln = T["64_bf16_nowait"], LN["64_bf16_nowait"]
    mm = one(in_step(t, 0, name="aten::mm"))
    kids = np.flatnonzero(ln.parent == mm)
    self_us = (t.dur_ns[mm] - t.dur_ns[kids].sum()) / 1e3
    claim(
        words.nearly_all(self_us, t.dur_ns[mm] / 1e3),
        "An op that is long but almost empty: nearly all self time",
    )
    claim(
        all(Kind(int(t.kind[i])) in (Kind.RUNTIME, Kind.DRIVER) for i in kids),
        "its recorded children are CUDA runtime calls",
    )
    edges = np.sort(np.concatenate([[t.ts_ns[mm]], t.ts_ns[kids] + t.dur_ns[kids]]))
    starts = np.sort(np.concatenate([t.ts_ns[kids], [t.ts_ns[mm] + t.dur_ns[mm]]]))
    hole_us = float(np.max(starts - edges)) / 1e3
    claim(
        hole_us > 0.5 * self_us,
        "the longest stretch with no child at all is over half its self time",
    )
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
    claim(
        not len(occ(t, (int(t.ts_ns[add0]), int(t.ts_ns[add0] + t.dur_ns[add0])))),
        "the add asks nothing",
    )
    claim(
        t.ts_ns[rows].max() < t.ts_ns[launch],
        "before the GEMM is launched, the CPU makes the queries",
    )
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
    claim(
        ln.launch_api(gemm) == "cuLaunchKernelEx" and ln.launch_api(add) == "cudaLaunchKernel",
        "The GEMM is launched by cuLaunchKernelEx, while the add goes through cudaLaunchKernel",
    )
    # Across every eager bf16 recording: each nvjet GEMM by the driver API.
    for n in ("64_bf16", "4096_bf16", "64_bf16_cold", "4096_bf16_cold", "64_bf16_batch8"):
        for k in T[n].where(kind=Kind.KERNEL, prefix="nvjet"):
            claim(
                LN[n].launch_api(k) == "cuLaunchKernelEx",
                f"{n}: the GEMM is launched by cuLaunchKernelEx",
            )
    fp32 = {
        LN["4096_fp32"].launch_api(k)
        for k in T["4096_fp32"].where(kind=Kind.KERNEL, contains="gemm")
    }
    claim(fp32 == {"cudaLaunchKernelExC"}, "The float32 GEMM uses a third one, cudaLaunchKernelExC")
    put("la_fp32", code("cudaLaunchKernelExC"))


def memset() -> None:
    """Entry: A memset right before the big GEMM."""
    t, ln = T["4096_bf16"], LN["4096_bf16"]
    for s in (2, 3, 4):
        ops = ln.gpu_ops_of(one(in_step(t, s, name="aten::mm")))
        claim(
            [Kind(int(t.kind[o])) for o in ops] == [Kind.MEMSET, Kind.KERNEL],
            f"step {s}: a memset runs just ahead of the GEMM",
        )
        claim(
            t.name(ln.launch[ops[0]]) == "cudaMemsetAsync",
            "each aten::mm issues a cudaMemsetAsync before its launch",
        )
    ms = t.where(kind=Kind.MEMSET)
    nbytes = {int(t.extra["bytes"][i]) for i in ms}
    claim(
        len(nbytes) == 1 and words.few_bytes(min(nbytes)),
        "a zeroed buffer of a few bytes, one size",
    )
    claim(not len(T["64_bf16"].where(kind=Kind.MEMSET)), "The 64×64 run has none")
    put("ms_bytes", nbytes.pop())
    put("ms_dur", us(np.median(t.dur_ns[ms]) / 1e3))


def sync64() -> None:
    """Entry: A short `cudaDeviceSynchronize` at the end, over an idle GPU."""
    t = T["64_bf16"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    s0, s1 = int(t.ts_ns[sync]), int(t.ts_ns[sync] + t.dur_ns[sync])
    busy = gpu_busy_us(t, window=(s0, s1))
    last_end = int((t.ts_ns[LN["64_bf16"].gpu_ops] + t.dur_ns[LN["64_bf16"].gpu_ops]).max())
    claim(
        busy == 0 and last_end < s0,
        "no GPU work runs during it: the last kernel finished before it began",
    )
    put("sy_dur", us((s1 - s0) / 1e3))
    put("sy_idle", us((s0 - last_end) / 1e3))


def syncbig() -> None:
    """Entry: A long `cudaDeviceSynchronize`, with the GPU busy throughout."""
    t = T["4096_fp32"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    s0, s1 = int(t.ts_ns[sync]), int(t.ts_ns[sync] + t.dur_ns[sync])
    busy = gpu_busy_us(t, window=(s0, s1))
    cpu_steps = (t.steps[-1].end_ns - t.steps[0].start_ns) / 1e3
    claim(
        busy > 0.7 * (s1 - s0) / 1e3 and (s1 - s0) / 1e3 > 10 * cpu_steps,
        "The CPU queued all the work quickly and then waited, the GPU busy in the sync",
    )
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
    claim(
        st.name == "ProfilerStep#3" and words.most(1 - st.gpu_fraction, 1.0),
        "The GPU row is mostly empty (a 64×64 step, ProfilerStep#3)",
    )
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
    claim(
        words.most(full_reps, len(recs("4096_bf16"))),
        "the queue stays full in most repeats, on both GPUs",
    )
    if _facts_gpu() == "h200":
        claim(full, "on the H200, every op launched after the first GEMM has started waits")
    claim(step_times(t4)[-1].verdict == "GPU-bound", "the full queue: GPU-bound (the last step)")
    # The empty queue: at 64x64 every kernel starts within a few µs of its call's end, on
    # an idle GPU.
    t, ln = T["64_bf16"], LN["64_bf16"]
    waits64 = [after_call_us(t, ln, int(k)) for k in ln.gpu_ops]
    claim(
        words.few_us(max(abs(w) for w in waits64)),
        "at 64×64 every kernel starts within a few µs of its call's end",
    )
    claim(
        min(idle_before_us(t, ln, int(k)) for k in ln.gpu_ops) > 5,
        "In the 64×64 run the GPU is idle before every kernel",
    )
    calls64 = [t.dur_ns[ln.launch[k]] / 1e3 for k in ln.gpu_ops]
    claim(
        np.median(calls64) > np.median(waits64),
        "the call's own CPU time (median for the 64×64 launches), more than their wait",
    )
    first_k = int(ln.gpu_ops_of(t.steps[0].event)[0])
    offset = (t.ts_ns[first_k] - t.steps[0].start_ns) / 1e3
    call = int(ln.launch[first_k])
    before = (t.ts_ns[call] - t.steps[0].start_ns) / 1e3
    claim(
        words.most(before, offset),
        "most of the lane offset is CPU work before the first launch call",
    )
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
    claim(
        len(before_add) == len(t.steps) == len(adds),
        "the GPU sits idle between the GEMM and the add in every step",
    )
    claim(
        all(g.cause == "launch" for g in before_add),
        "the CPU row above each gap is launching the add",
    )
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
    claim(
        len(g) == len(t.steps) and d.max() / d.min() < 1.1,
        "The 4096×4096 GEMM ran once a step, and its time stayed tight",
    )
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
    claim(
        len(small) == len(big) == 1 and small != big,
        "cuBLAS picks one per shape: one GEMM at 64×64, another at 4096×4096",
    )
    small, big = small.pop(), big.pop()
    claim(
        small.startswith("nvjet_sm90") and big.startswith("nvjet_sm90"),
        "nvjet for cuBLAS's Hopper kernels, written for sm90",
    )
    claim(T["64_bf16"].device_properties[0]["computeMajor"] == 9, "sm90 is Hopper, as this GPU is")
    claim(
        all(
            T["4096_fp32"].name(k).startswith("sm80_xmma")
            for k in T["4096_fp32"].where(kind=Kind.KERNEL, contains="gemm")
        ),
        "the float32 GEMM below runs an sm80 kernel on this GPU",
    )
    claim(
        HF["gemm_name"] not in (small, big),
        "the same line of Python runs different kernels on different machines",
    )
    claim(
        "_64x8_" in small
        and "_256x128_" in big
        and "coopA" in big
        and words.tiny(param("64_bf16", "size") ** 3, param("4096_bf16", "size") ** 3),
        "64x8 for a tiny problem, 256x128 for a large one, and variants such as coopA",
    )
    put("nm_small", code(small))
    put("nm_big", code(big))


def footprint() -> None:
    """Entry: Registers and shared memory: heavy GEMM, light add."""
    t = T["4096_bf16"]
    gemm, add = step_gemm("4096_bf16", 4), step_add("4096_bf16", 4)
    ex = t.extra
    sms = t.device_properties[0]["numSms"]
    claim(
        words.far(ex["registers"][gemm], ex["registers"][add]) and ex["shared_mem"][add] == 0,
        "heavy GEMM, light add: the add uses far fewer registers, no shared memory",
    )
    claim(
        ex["shared_mem"][gemm] > 100 * 1024 and int(ex["grid"][gemm]) == sms,
        "the GEMM uses over 100 KiB of shared memory per block, a grid equal to the SM count",
    )
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
    claim(
        "ffma" in n32 and "tf32" not in n32 and "tf32" in ntf,
        "float32 GEMMs: ffma with TF32 off, tf32 in the name with it on",
    )
    claim(
        param("4096_fp32", "tf32") is False and param("4096_fp32_tf32", "tf32") is True,
        "the same float32 matmul, with TF32 off and with allow_tf32 = True",
    )
    d32, dtf = np.median(t32.dur_ns[g32]) / 1e3, np.median(ttf.dur_ns[gtf]) / 1e3
    claim(d32 > 3 * dtf, "with allow_tf32 = True, over 3× faster")
    dbf = (
        np.median(T["4096_bf16"].dur_ns[T["4096_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")])
        / 1e3
    )
    claim(dtf > dbf, "the bfloat16 GEMM is faster still than the TF32 one")
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
        claim(
            [Kind(int(t.kind[o])) for o in ops] == [Kind.MEMCPY, Kind.KERNEL],
            f"{s.name}: every step runs a copy, then a GEMM",
        )
        claim(
            t.name(ops[0]).startswith("Memcpy DtoD") and "_badd_" in t.name(ops[1]),
            "a Memcpy DtoD, then a GEMM whose name has badd",
        )
        claim(t.name(ln.issuing_op(ops[0])) == "aten::addmm", "addmm copies b into the output")
        claim(
            int(t.extra["bytes"][ops[0]]) == param(name, "size") ** 2 * 2,
            "the copy is the size of b (in bfloat16)",
        )
    eager = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    claim(all("_bz_" in n for n in eager), "the plain matmul's GEMM name has bz")
    big = T["4096_bf16_compile"]
    cp = big.where(kind=Kind.MEMCPY)
    claim(
        {int(big.extra["bytes"][i]) for i in cp} == {param("4096_bf16_compile", "size") ** 2 * 2},
        "At 4096×4096 (compiled) the copy is the size of b",
    )
    put("dd_bytes", f"{int(t.extra['bytes'][t.where(kind=Kind.MEMCPY)[0]]):,}")
    put("dd_big_mib", f"{int(big.extra['bytes'][cp[0]]) / 2**20:.0f} MiB")
    put("dd_big_us", us(np.median(big.dur_ns[cp]) / 1e3))
