"""The computations behind Part 1 (``part1.md`` and its lab notes ``part1-notes.md``).

Each ``*_facts`` function takes the traces of one recorded repeat (and, where it needs
them, the profiler's own table totals or timings), claims what the pages say about
them, and returns the numbers (floats) and Markdown snippets (str) the pages glue,
keyed by the names the prose uses. The pages' facts modules (``docs/facts/``) call them once
per repeat (``f.repeats``), so every claim holds on every repeat;
``tests/site/test_facts.py`` runs those modules on the committed recordings. What only one
page's facts use lives in that facts module. The first step and the late GPU lane are in
:mod:`part1_first_step_measures`, the shared readings of a trace in
:mod:`part1_trace_measures`, the interleaved calls in :mod:`part1_calls_measures`; this
module passes their names on, so a page reads all of them as ``m.<name>``.

Only :mod:`tracereader` and numpy here: no drawing, no site glue.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from part1_calls_measures import VERSIONS as VERSIONS
from part1_calls_measures import calls_of as calls_of
from part1_calls_measures import interleaved_facts as interleaved_facts
from part1_calls_measures import medians as medians
from part1_first_step_measures import SETUP_CALLS as SETUP_CALLS
from part1_first_step_measures import cpu_calls as cpu_calls
from part1_first_step_measures import first_launch as first_launch
from part1_first_step_measures import first_step_facts as first_step_facts
from part1_first_step_measures import launch_call_facts as launch_call_facts
from part1_first_step_measures import offset_facts as offset_facts
from part1_first_step_measures import profiled_from_start as profiled_from_start
from part1_first_step_measures import request_share_facts as request_share_facts
from part1_first_step_measures import unscheduled_facts as unscheduled_facts
from part1_first_step_measures import warm_step_facts as warm_step_facts
from part1_first_step_measures import window_facts as window_facts
from part1_trace_measures import A100 as A100
from part1_trace_measures import N_SMS as N_SMS
from part1_trace_measures import SPEC_FP32_TFLOPS, SPEC_TF32_TFLOPS, Facts, chain_md, events
from part1_trace_measures import SPEC_TFLOPS as SPEC_TFLOPS
from part1_trace_measures import STAMPED as STAMPED
from part1_trace_measures import VARIANTS as VARIANTS
from part1_trace_measures import dur_us as dur_us
from part1_trace_measures import first as first
from part1_trace_measures import gemm_tflops as gemm_tflops
from part1_trace_measures import in_step as in_step
from part1_trace_measures import median_us as median_us
from part1_trace_measures import sync_window as sync_window
from tracesite.facts import claim
from tracesite.words import about, far, few, few_pct, few_us, most, no_outlier

from tracereader import (
    Kind,
    Trace,
    gpu_busy_us,
    kernel_table,
    link,
    op_table,
    step_times,
    summary,
)


def export_facts(ready: Trace, after: Trace) -> Facts:
    """One schedule cycle: exporting after the ``with`` block kept what on_trace_ready did."""
    claim(
        [s.name for s in ready.steps] == [s.name for s in after.steps],
        "the late export made no difference: the same steps as the on_trace_ready one",
    )
    # The same events: each name and kind, in the same order (two runs: not the same times).
    claim(
        events(ready) == events(after),
        "the late export held the same events as the on_trace_ready one",
    )
    return {"n_ready": len(ready), "n_after": len(after)}


def table_facts(
    t64: Trace, t4k: Trace, totals64: dict[str, float], totals4k: dict[str, float]
) -> Facts:
    """64x64 against 4096x4096: the table totals, the steps' CPU time, self against total."""
    gpu64, gpu4k = totals64["self_cuda_us"], totals4k["self_cuda_us"]
    steps64 = sum(s.dur_us for s in t64.steps)
    steps4k = sum(s.dur_us for s in t4k.steps)
    sync4k = float(t4k.dur_ns[t4k.where(name="cudaDeviceSynchronize")].sum()) / 1e3
    claim(
        few_pct(gpu64, steps64),
        "The first run is CPU-bound: the GPU worked a few % of the CPU's time on the steps",
    )
    claim(
        gpu4k > 0.7 * steps4k,
        "The second is GPU-bound: at 4096x4096 the GPU time is over 70 % of the steps' CPU time",
    )
    claim(
        0.5 < steps4k / steps64 < 1.5,
        "from 64x64 to 4096x4096 the steps' CPU time changed by less than half",
    )
    claim(
        gpu4k / gpu64 > 20 * (steps4k / steps64),
        "At 4096x4096 the GPU time of the three steps grew over 20 times more than their CPU time",
    )
    # GPU time can pass the steps' CPU time: work launched in a step runs after it ends
    # (on every repeat some GPU op of a step ends after its step; the total passes the
    # steps' CPU time on most repeats: on one H100 repeat a slow host CPU made them even)
    claim(
        gpu4k > 0.95 * steps4k and (gpu4k > steps4k or about(gpu4k, steps4k)),
        "At 4096x4096 the GPU time is about the steps' CPU time or more",
    )
    lk = link(t4k)
    late = [
        g
        for g in lk.gpu_ops
        if lk.step[g] >= 0 and t4k.end_ns[g] > t4k.steps[int(lk.step[g])].end_ns
    ]
    claim(
        len(late) >= len(t4k.steps) - 1,
        "The share can pass 100 %: work launched in one step can run after the step ends",
    )
    ops = {row["name"]: row for row in op_table(t64).to_records()}
    claim(
        ops["aten::matmul"]["self_cpu_us"] < 0.2 * ops["aten::matmul"]["total_cpu_us"],
        "aten::matmul has little self time against its total: it only hands over to aten::mm",
    )
    claim(
        ops["aten::mm"]["calls"] == ops["aten::add"]["calls"] == len(t64.steps),
        "aten::mm and aten::add each run once per step",
    )
    claim(
        all(s.verdict == "CPU-bound" for s in step_times(t64)),
        "The first run is CPU-bound: every 64x64 step",
    )
    claim(
        step_times(t4k)[-1].verdict == "GPU-bound",
        "The second (4096x4096) is GPU-bound: its last step, on every repeat",
    )
    return {
        "cpu64": totals64["self_cpu_us"],
        "gpu64": gpu64,
        "cpu4k": totals4k["self_cpu_us"],
        "gpu4k": gpu4k,
        "steps64": steps64,
        "steps4k": steps4k,
        "pct64": 100 * gpu64 / steps64,
        "pct4k": 100 * gpu4k / steps4k,
        "gpu_growth": gpu4k / gpu64,
        "steps_growth": steps4k / steps64,
        "sync4k": sync4k,
        "sync4k_pct": 100 * sync4k / totals4k["self_cpu_us"],
        "mm_self": ops["aten::mm"]["self_cpu_us"],
        "matmul_self": ops["aten::matmul"]["self_cpu_us"],
        "matmul_total": ops["aten::matmul"]["total_cpu_us"],
        "flops_ratio": 4096**3 / 64**3,
    }


def blocks(tr: Trace) -> int:
    """The launch grid (thread blocks) of the trace's first ``nvjet`` GEMM."""
    return int(tr.extra["grid"][tr.where(kind=Kind.KERNEL, prefix="nvjet")[0]])


def speed_facts(peaks: Trace, small: Trace, big: Trace, t4k: Trace) -> Facts:
    """Each kernel's achieved rate against the H200's datasheet and our own peaks."""
    peak = gemm_tflops(peaks, 8192)  # the largest GEMM we ran, not a ceiling
    peak_tbs = 2 * 2048 * 2**20 / (median_us(peaks, kind=Kind.MEMCPY) * 1e-6) / 1e12
    g64 = median_us(small, kind=Kind.KERNEL, prefix="nvjet")
    g4k = median_us(big, kind=Kind.KERNEL, prefix="nvjet")
    r64, r4k = gemm_tflops(small, 64), gemm_tflops(big, 4096)
    claim(
        g4k / g64 < 1000 and far(262_144, g4k / g64),
        "the big GEMM took far less than 262,144 times the small one's time: under 1000 times",
    )
    claim(
        few(blocks(small)) and blocks(big) >= N_SMS,
        "only a few SMs could work on the 64x64 GEMM; the 4096x4096 one's grid covers all 132",
    )
    claim(r64 / SPEC_TFLOPS < 0.001, "The small one used under a thousandth of the GPU")
    # Idle SMs explain a factor N_SMS / blocks at most; the shortfall is far larger: a
    # kernel this small is mostly the fixed cost of any kernel. The 64x64 add, with
    # almost nothing to do, takes over 40 % of the GEMM's time (not about as long: 43 %
    # on some H200 repeats).
    claim(
        SPEC_TFLOPS / r64 > 100 * N_SMS / blocks(small),
        "idle SMs explain little of it: the rest is the fixed cost every kernel pays",
    )
    add64 = median_us(small, kind=Kind.KERNEL, contains="elementwise")
    claim(
        add64 > 0.4 * g64,
        "the 64x64 add, with almost nothing to do, took … µs, over 40 % of the GEMM's time",
    )
    claim(
        r4k / SPEC_TFLOPS > 0.7, "The big GEMM ran near the hardware's limit: over 70 % of the spec"
    )
    claim(0.9 < r4k / peak < 1.1, "The big GEMM ran as fast as the largest GEMM we ran")
    kt = kernel_table(big).to_records()  # sorted by total GPU time: the GEMM, then the add
    claim(
        kt[0]["name"].startswith("nvjet") and "add" in kt[1]["name"],
        "the kernel table, sorted by total GPU time, lists the GEMM first, then the add",
    )
    grids = small.extra["grid"][small.where(kind=Kind.KERNEL, prefix="nvjet")]
    claim(len(set(grids.tolist())) == 1, "every 64x64 GEMM ran the same grid")
    # The add at 4096 is memory-bound: 2 tensors read, 1 written, 32 MiB each. It moves
    # more bytes per second than the 2 GiB device-to-device copy of ``peaks``: part of its
    # traffic probably hits the L2 cache (the GEMM's output, just written, is 32 MiB).
    add_us = median_us(big, kind=Kind.KERNEL, contains="elementwise")
    add_tbs = 3 * 4096 * 4096 * 2 / (add_us * 1e-6) / 1e12
    claim(
        peak_tbs < add_tbs < 1.15 * peak_tbs,
        "the add moved more than the large copy, under 1.15 times it: at memory speed",
    )
    claim(
        len(peaks.where(kind=Kind.MEMCPY))
        and max(peaks.extra["bytes"][peaks.where(kind=Kind.MEMCPY)]) == 2**31,
        "the large device-to-device copy we timed moved 2 GiB",
    )
    return {
        "peak_tflops": peak,
        "peak_tbs": peak_tbs,
        "peak_pct": 100 * peak / SPEC_TFLOPS,
        "g64_us": g64,
        "g4k_us": g4k,
        "gemm_time_ratio": g4k / g64,
        "r64_tflops": r64,
        "r4k_tflops": r4k,
        "r64_pct": 100 * r64 / SPEC_TFLOPS,
        "r4k_pct": 100 * r4k / SPEC_TFLOPS,
        "r4k_vs_peak": 100 * r4k / peak,
        "per_flop_gain": r4k / r64,
        "blocks64": blocks(small),
        "sm_bound": N_SMS / blocks(small),
        "add64_us": add64,
        "blocks4k": blocks(big),
        "add_us": add_us,
        "add_tbs": add_tbs,
    }


def last_gemm(tr: Trace) -> int:
    """The GEMM kernel launched in the last step (it may run just after the step ends)."""
    return first(tr, kind=Kind.KERNEL, prefix="nvjet", within=in_step(tr, -1, 100_000))


def lane_facts(t64: Trace) -> Facts:
    """The last 64x64 step: CPU busy, GPU busy, the GEMM's launch-to-start latency."""
    st = step_times(t64)[-1]
    gemm = last_gemm(t64)
    launch = int(link(t64).launch[gemm])
    claim(
        t64.name(launch) == "cuLaunchKernelEx", "the 64x64 GEMM's launch call is cuLaunchKernelEx"
    )
    claim(
        few_pct(st.gpu_busy_us, st.cpu_us),
        "in the last 64x64 step the GPU was busy a few per cent of the CPU's time",
    )
    # From the call's start, the latency is mostly the call's own CPU time: read it from the
    # call's end (P1-3).
    call_us = float(t64.dur_ns[launch]) / 1e3
    end_us = float(t64.ts_ns[gemm] - t64.ts_ns[launch] - t64.dur_ns[launch]) / 1e3
    claim(
        end_us >= 0 and few_us(end_us) and most(call_us, call_us + end_us),
        "this GEMM started a few µs after its launch call returned: from the call's start the "
        "latency is mostly the call itself",
    )
    return {
        "step_cpu": st.cpu_us,
        "step_gpu": st.gpu_busy_us,
        "step_pct": 100 * st.gpu_busy_us / st.cpu_us,
        "l2s": float(t64.ts_ns[gemm] - t64.ts_ns[launch]) / 1e3,
        "l2s_call": call_us,
        "l2s_end": end_us,
    }


def chain_facts(t64: Trace, batch: Trace) -> Facts:
    """Python call -> aten op -> launch call -> kernel, for the GEMM and the add."""
    lk = link(t64)
    gemm = last_gemm(t64)
    chain = [t64.name(i) for i in lk.stack(gemm)] + [t64.name(gemm)]
    claim(
        chain[-1].startswith("nvjet_sm90_"),
        "the kernel's name says what ran: nvjet, a cuBLAS GEMM kernel, for sm90 (Hopper)",
    )
    claim(
        chain[:5]
        == [
            t64.steps[-1].name,
            "matmul_add",
            "aten::matmul",
            "aten::mm",
            "cuLaunchKernelEx",
        ],
        "the GEMM's chain: the step, matmul_add, aten::matmul, aten::mm, cuLaunchKernelEx",
    )
    add_k = first(t64, kind=Kind.KERNEL, contains="elementwise", within=in_step(t64, -1, 100_000))
    add_chain = [t64.name(i) for i in lk.stack(add_k)]
    claim(
        add_chain == [*chain[:2], "aten::add", "cudaLaunchKernel"]
        and len(add_chain) + 1 < len(chain),
        "The add takes a shorter path: aten::add, then cudaLaunchKernel, then its kernel",
    )
    b_ops = [batch.name(int(i)) for i in batch.where(kind=Kind.CPU_OP, within=in_step(batch))]
    claim(
        "aten::bmm" not in b_ops and "aten::mm" in b_ops and "aten::reshape" in b_ops,
        "Batched to (8, 64, 64), one step runs aten::reshape and aten::mm: no aten::bmm",
    )
    return {
        "chain": chain_md(chain),
        "add_chain": chain_md(add_chain),
        "batch_ops": ", ".join(f"`{o}`" for o in dict.fromkeys(b_ops)),
        "batch_kernels": len(link(batch).gpu_ops) // len(batch.steps),
    }


def sync_facts(t64: Trace, t4k: Trace, t32: Trace, cold: Trace) -> Facts:
    """The closing synchronize: a floor of some µs over nothing, plus the work still queued."""
    out: Facts = {}
    for key, tr in (("s64", t64), ("s4k", t4k), ("s32", t32), ("s64c", cold)):
        s, window = sync_window(tr)
        busy = gpu_busy_us(tr, window=window)
        out |= {
            f"{key}_us": dur_us(tr, s),
            f"{key}_busy": busy,
            f"{key}_pct": 100 * busy / dur_us(tr, s),
        }
    claim(
        out["s64_busy"] == 0 and float(out["s64_us"]) > 5,
        "at 64x64 the closing synchronize waited some µs over no GPU work",
    )
    # It waits for that work: the last GPU op ends inside it. (Not "as long as that work":
    # on one H100 repeat it lasted 10.2 % longer than the GPU was busy during it.)
    _, (w0, w1) = sync_window(t4k)
    last_end = int(t4k.end_ns[link(t4k).gpu_ops].max())
    claim(
        w0 < last_end <= w1 and float(out["s4k_busy"]) > 0.9 * float(out["s4k_us"]),
        "With work queued, it ends only after the last GPU op; in the 4096x4096 bf16 "
        "recordings the GPU is busy for over 90 % of it",
    )
    # fp32: the first GPU op in the trace is the warm-up step's add: it starts inside the
    # window, but its launch call came before it (not in the trace). The warm-up step's
    # GEMM, already running when the window opened, is not in the trace at all.
    lk = link(t32)
    g = lk.gpu_ops[np.argsort(t32.ts_ns[lk.gpu_ops])[0]]
    claim(
        lk.launch[g] < 0 and "elementwise" in t32.name(int(g)),
        "in fp32 the trace's first GPU op is the warm-up step's add, without its launch call",
    )
    claim(
        t32.ts_ns[g] - t32.steps[0].start_ns > 1_000_000,
        "in fp32 the warm-up add started over 1 ms into the first step: the warm-up GEMM still ran",
    )
    gemms = [int(i) for i in t32.where(kind=Kind.KERNEL) if "elementwise" not in t32.name(int(i))]
    claim(
        len(gemms) == len(t32.steps) and all(lk.launch[i] >= 0 for i in gemms),
        "each fp32 step's GEMM is in the trace with its launch call",
    )
    # ... so the first step's GEMM, launched early in the step, started milliseconds later:
    # a late kernel with a long launch-to-start latency is one queued behind earlier work.
    g0 = min(gemms, key=lambda i: int(t32.ts_ns[i]))
    l2s32 = float(t32.ts_ns[g0] - t32.ts_ns[lk.launch[g0]]) / 1e3
    claim(
        l2s32 > 1000,
        "in fp32 the first step's GEMM started over a millisecond after its launch call",
    )
    # The recorded ops cover only part of the fp32 synchronize (P1N-1): before the warm-up
    # add (no launch call in the trace) the GPU ran the warm-up GEMM, unrecorded; from that
    # add to the synchronize's end the recorded ops leave no idle time. Busy throughout.
    _, (w0, w1) = sync_window(t32)
    tail = gpu_busy_us(t32, window=(int(t32.ts_ns[g]), w1))
    claim(
        w0 < int(t32.ts_ns[g]) < w1 and tail > 0.99 * (w1 - int(t32.ts_ns[g])) / 1e3,
        "in fp32 the GPU was busy throughout the synchronize: the unrecorded warm-up GEMM "
        "until the warm-up add, then the recorded ops with no idle time",
    )
    return out | {
        "s32_unrec": (int(t32.ts_ns[g]) - w0) / 1e3,
        "a100_sync_pct": 100 * A100["sync_us"] / A100["cpu64"],
        "l2s32_ms": l2s32 / 1e3,
    }


def distribution_facts(t20: Trace) -> Facts:
    """The 4096 GEMM over 20 steps: a distribution without an outlier."""
    d = np.sort(t20.dur_ns[t20.where(kind=Kind.KERNEL, prefix="nvjet")] / 1e3)
    claim(len(d) == 20, "the 20-step recording has 20 runs of the 4096 GEMM")
    claim(no_outlier([float(v) for v in d]), "the 20 runs of the 4096 GEMM have no outlier")
    med = float(np.median(d))
    claim(
        2.5 < A100["gemm_typical"] / med < 5,
        "The post's typical A100 run took 2.5 to 5 times as long as ours",
    )
    return {
        "k20_n": len(d),
        "k20_min": float(d[0]),
        "k20_med": med,
        "k20_max": float(d[-1]),
        "k20_mean": float(d.mean()),
        "k20_spread": 100 * float(d[-1] - d[0]) / med,
        "gemm_speedup": A100["gemm_typical"] / med,
        "a100_gemm": A100["gemm_typical"],
    }


def dtype_facts(t16: Trace, t32: Trace, ttf: Trace) -> Facts:
    """bf16, fp32 and TF32 GEMMs at 4096: the kernel's name says which units ran."""

    def gemm(tr: Trace) -> tuple[str, float]:
        k = [int(i) for i in tr.where(kind=Kind.KERNEL) if "elementwise" not in tr.name(int(i))]
        names = {tr.name(i) for i in k}
        claim(len(names) == 1, f"each dtype's run used one GEMM kernel ({names})")
        return names.pop(), float(np.median(tr.dur_ns[k] / 1e3))

    (g16, u16), (g32, u32), (gtf, utf) = gemm(t16), gemm(t32), gemm(ttf)
    claim(
        "ffma" in g32 and "tf32" not in g32,
        "the plain fp32 GEMM's name says ffma, fp32 on the fused multiply-add units, not tf32",
    )
    claim("tf32" in gtf, "the TF32 GEMM's name says tf32")
    claim(g16.startswith("nvjet"), "the bf16 GEMM is an nvjet kernel")
    claim(
        u32 > 5 * utf > 5 * u16,
        "plain fp32 took over 5 times as long as TF32, and TF32 longer than bf16",
    )

    def tflops(us: float) -> float:
        return 2 * 4096**3 / (us * 1e-6) / 1e12

    claim(
        0.5 < tflops(u32) / SPEC_FP32_TFLOPS < 1,
        "None is a slow kernel: fp32 ran at over half its 67 TFLOP/s datasheet peak",
    )
    claim(
        0.5 < tflops(utf) / SPEC_TF32_TFLOPS < 1,
        "None is a slow kernel: TF32 ran at over half its 494.7 TFLOP/s datasheet peak",
    )
    return {
        "g16": f"`{g16}`",
        "g32": f"`{g32}`",
        "gtf": f"`{gtf}`",
        "g16_us": u16,
        "g32_us": u32,
        "gtf_us": utf,
        "fp32_x": u32 / u16,
        "tf32_x": utf / u16,
        "r32_tflops": tflops(u32),
        "r32_pct": 100 * tflops(u32) / SPEC_FP32_TFLOPS,
        "rtf_tflops": tflops(utf),
        "rtf_pct": 100 * tflops(utf) / SPEC_TF32_TFLOPS,
    }


def _per_step(tr: Trace) -> tuple[float, list[str], set[str]]:
    ops = [tr.name(int(i)) for i in tr.where(kind=Kind.CPU_OP, within=in_step(tr))]
    return len(link(tr).gpu_ops) / len(tr.steps), ops, set(summary(tr)["launch_apis"])


def compile_facts(eager: Trace, comp: Trace, addmm: Trace, ro: Trace, comp4k: Trace) -> Facts:
    """torch.compile on one matmul + add: the same two GPU ops, one aten::addmm, new frames."""
    (e_ops, _, _), (c_ops, c_names, c_apis) = _per_step(eager), _per_step(comp)
    a_ops, _, a_apis = _per_step(addmm)
    r_ops, r_names, r_apis = _per_step(ro)
    claim(
        c_ops == e_ops == a_ops == 2,
        "The compiled step still runs two GPU operations, as eager and torch.addmm do",
    )
    claim(
        "aten::addmm" in c_names and "aten::mm" not in c_names and "aten::add" not in c_names,
        "TorchInductor turned the pair into one aten::addmm: no aten::mm, no aten::add",
    )
    claim(
        c_apis == {"cudaMemcpyAsync", "cuLaunchKernelEx"} and a_apis == c_apis,
        "the compiled step and torch.addmm launch with cudaMemcpyAsync and cuLaunchKernelEx",
    )
    frames = [n for n in dict.fromkeys(c_names) if not n.startswith("aten::")]
    claim(
        {
            "TorchDynamo Cache Lookup",
            "Torch-Compiled Region: 0/0",
            "AOTDispatcher Runtime Wrapper Prologue",
        }
        <= set(frames),
        "new frames around the call: TorchDynamo Cache Lookup, Torch-Compiled Region and more",
    )
    claim(
        any(f.startswith("## Call CompiledFxGraph") for f in frames),
        "among the new frames, a ## Call CompiledFxGraph",
    )
    cp = comp4k.where(kind=Kind.MEMCPY)
    claim(
        comp4k.extra["bytes"][cp[0]] == 4096 * 4096 * 2,
        "At 4096 the compiled step's Memcpy DtoD moves 32 MiB, one bf16 matrix",
    )
    kc = {comp4k.name(int(i)) for i in comp4k.where(kind=Kind.KERNEL)}
    claim(
        len(kc) == 1 and "badd" in kc.pop(),
        "the compiled 4096 step runs one GEMM kernel, with badd in its name",
    )
    cp_us = float(np.median(comp4k.dur_ns[cp] / 1e3))
    claim(cp_us < A100["copy_us"], "the compiled step's copy took less than the post's 33 µs")
    # reduce-overhead: per step, one input-copy kernel outside the graph, then one graph
    # launch that releases the DtoD copy and the GEMM.
    lro = link(ro)
    graphs = ro.where(name="cudaGraphLaunch")
    per_graph = [len(lro.gpu_ops_of_call(int(c))) for c in graphs]
    claim(
        len(graphs) == len(ro.steps) and set(per_graph) == {2},
        "reduce-overhead issues one cudaGraphLaunch per step, which releases two GPU operations",
    )
    claim(
        r_ops == 3 and "aten::_foreach_copy_" in r_names,
        "reduce-overhead runs three GPU operations per step, with aten::_foreach_copy_",
    )
    claim(
        r_apis == {"cudaGraphLaunch", "cudaLaunchKernel"},
        "reduce-overhead launches with cudaGraphLaunch and cudaLaunchKernel only",
    )
    copy_k = input_copy_kernel(ro)
    copy_stack = lro.stack(copy_k)
    claim(
        len(copy_stack) >= 2 and ro.name(int(copy_stack[-2])) == "aten::_foreach_copy_",
        "aten::_foreach_copy_ launches the input-copy kernel",
    )
    # the grey "other runtime call" of the picture: a capture check before the replay
    step = ro.steps[-1]
    calls = ro.where(kind=Kind.RUNTIME, within=(step.start_ns, step.end_ns))
    claim(
        [ro.name(int(i)) for i in calls]
        == [
            "cudaLaunchKernel",
            "cudaStreamIsCapturing",
            "cudaGraphLaunch",
        ],
        "The grey call before the graph launch is cudaStreamIsCapturing, a check before the replay",
    )
    return {
        "e_ops": e_ops,
        "c_ops": c_ops,
        "a_ops": a_ops,
        "r_ops": r_ops,
        "frames": ", ".join(f"`{f}`" for f in frames),
        "cp_mb": float(comp4k.extra["bytes"][cp[0]]) / 2**20,
        "cp_us": cp_us,
        "copy_tbs": 2 * 4096 * 4096 * 2 / (cp_us * 1e-6) / 1e12,
        "a100_copy_tbs": 2 * A100["copy_mb"] * 1e6 / (A100["copy_us"] * 1e-6) / 1e12,
        "n_graph": len(graphs),
        "per_graph": per_graph[0],
    }


def input_copy_kernel(ro: Trace) -> int:
    """reduce-overhead's input-copy kernel in the last step (outside the CUDA graph)."""
    return first(
        ro, kind=Kind.KERNEL, contains="multi_tensor_apply", within=in_step(ro, -1, 100_000)
    )


def same_process(metas: Sequence[dict[str, Any]], *variants: str) -> None:
    """These variants ran in one fresh process in this repeat (the recordings' meta.json):
    each recording's process fresh, all of them the same repeat and the same run of
    variants, these among them."""
    procs = [meta["process"] for meta in metas]
    claim(
        all(p["fresh"] and p["variants_in_it"] == procs[0]["variants_in_it"] for p in procs)
        and len({meta["repeat"] for meta in metas}) == 1
        and set(variants) <= set(procs[0]["variants_in_it"]),
        f"these variants ran in one fresh process in this repeat ({variants})",
    )


def gpu_us_per_step(tr: Trace) -> float:
    """Summed kernel and copy durations per step, in µs: the GPU time a version costs."""
    ops = np.concatenate([tr.where(kind=Kind.KERNEL), tr.where(kind=Kind.MEMCPY)])
    return float(tr.dur_ns[ops].sum()) / 1e3 / len(tr.steps)


def cold_table_facts(cold: Trace, totals_cold: dict[str, float]) -> Facts:
    """The cold 64x64 run's table totals, beside the A100's: overhead-bound on both. The
    GPU share is compared with the closing synchronize left out of the CPU total on both
    sides: it is the profiler's wait, 77 % of the A100's total."""
    cpu, gpu = totals_cold["self_cpu_us"], totals_cold["self_cuda_us"]
    claim(
        gpu / cpu < 0.05 and A100["gpu64"] / A100["cpu64"] < 0.05,
        "64x64 cold: both overhead-bound, the GPU under 5 % of the Self CPU total on each",
    )
    s, _ = sync_window(cold)
    work = cpu - dur_us(cold, s)
    steps = sum(st.dur_us for st in cold.steps)
    claim(
        abs(work - steps) < 0.05 * steps,
        "without the closing synchronize, the cold Self CPU total is the steps' CPU time",
    )
    a100 = 100 * A100["gpu64"] / (A100["cpu64"] - A100["sync_us"])
    h200 = 100 * gpu / work
    claim(
        h200 < a100 and gpu < A100["gpu64"],
        "a smaller GPU share than the A100's: our kernels are shorter",
    )
    return {
        "cold_pct_work": h200,
        "a100_pct_work": a100,
        "cold_cpu64": cpu,
        "cold_gpu64": gpu,
        "cold_pct": 100 * gpu / cpu,
        "a100_pct": 100 * A100["gpu64"] / A100["cpu64"],
    }
