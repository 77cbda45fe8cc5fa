"""Part 1's first profiled step and its late GPU lane (``part1.md`` and its lab notes):
what the first step runs that later ones do not, the lane's offset warm and cold, the
Activity Buffer Request's share of it, the calls before the first launch, and what each
recording's profiled window holds. ``part1_measures`` passes these on, so the pages read
them as ``m.<name>``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from part1_trace_measures import (
    VARIANTS,
    Facts,
    chain_md,
    dur_us,
    first,
    in_step,
    sync_window,
)
from tracesite import words
from tracesite.facts import claim

from tracereader import (
    Kind,
    Trace,
    gpu_busy_us,
    link,
)

SETUP_CALLS = ("cudaMalloc", "Occupancy", "Module Loading", "Lazy Function Loading")


def cpu_calls(tr: Trace, step: int) -> list[str]:
    """The CPU-side events of one step by name (the step's own span left out), sorted."""
    s = tr.steps[step]
    rows = tr.where(kind=(Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.DRIVER))
    inside = [int(i) for i in rows if s.start_ns <= tr.ts_ns[i] < s.end_ns and int(i) != s.event]
    return sorted(tr.name(i) for i in inside)


def first_step_facts(
    cold20: Trace, warm20: Trace, cold3: Trace, warm_meta: dict[str, Any]
) -> Facts:
    """The first active step is slow, in a cold process and after warm-up alike, though the
    schedule's skipped and warm-up steps absorbed the one-time setup: the first kept step
    records the same calls as every later one, and no setup call appears at all.

    Five warm-up calls lower the first step's ratio to the rest below the cold run's in
    every repeat, but do not remove it: it stays over 2. In every repeat the warm run came
    after other profiled runs in its process (``warm_meta`` says which)."""
    for tr in (cold20, warm20, cold3):
        claim(
            all(cpu_calls(tr, 0) == cpu_calls(tr, k) for k in range(1, len(tr.steps))),
            "the first kept step records the same calls as every later one",
        )
        claim(
            not any(len(tr.where(contains=c)) for c in SETUP_CALLS),
            "no allocation, occupancy query or module loading appears at all",
        )
    cold = [s.dur_us for s in cold20.steps]
    warm = [s.dur_us for s in warm20.steps]
    claim(
        cold[0] > 2 * statistics.median(cold[1:]),
        "in a fresh process the first of 20 active steps took over twice the median of the rest",
    )
    claim(
        warm[0] > 2 * statistics.median(warm[1:]),
        "After five warm-up calls the first step still took over twice the median of the rest",
    )
    cold_ratio = cold[0] / statistics.median(cold[1:])
    warm_ratio = warm[0] / statistics.median(warm[1:])
    claim(
        warm_meta["params"].get("warmup") and warm_meta["process"]["fresh"],
        "the warm 20-step run warmed up before profiling, in a fresh process",
    )
    claim(
        warm_ratio < cold_ratio,
        "after warm-up the first step's ratio was less than the fresh process's ratio",
    )
    claim(
        warm_meta["process"]["variants_in_it"][0] != warm_meta["variant"],
        "the warm run came after other profiled runs in its process",
    )

    def label_gap(step: int) -> float:
        lo_hi = in_step(cold3, step)
        a = first(cold3, name="matmul_add", kind=Kind.USER_ANNOTATION, within=lo_hi)
        b = first(cold3, name="aten::matmul", within=lo_hi)
        return float(cold3.ts_ns[b] - cold3.ts_ns[a]) / 1e3

    gaps = [label_gap(k) for k in range(len(cold3.steps))]
    claim(
        gaps[0] > max(gaps[1:]),
        "in a cold process the first kept step waited longest from matmul_add to aten::matmul",
    )
    return {
        "cold_first": cold[0],
        "cold_rest": statistics.median(cold[1:]),
        "warm_first": warm[0],
        "warm_rest": statistics.median(warm[1:]),
        "cold_ratio": cold_ratio,
        "warm_ratio": warm_ratio,
        "gap2": gaps[0],
        "gap3": gaps[1],
        "gap4": gaps[2],
    }


def _covered_ns(spans: list[tuple[int, int]]) -> int:
    """Total length of the union of ``spans``."""
    busy, cur_s, cur_e = 0, -1, -1
    for a, b in sorted(spans):
        if a > cur_e:
            busy += cur_e - cur_s
            cur_s, cur_e = a, b
        else:
            cur_e = max(cur_e, b)
    return busy + cur_e - cur_s


def unscheduled_facts(nw: Trace) -> Facts:
    """wait=0, warmup=0 in a fresh process: the cold first aten::mm, up close."""
    s0 = nw.steps[0]
    mm0 = first(nw, name="aten::mm", within=in_step(nw, 0))
    window = (int(nw.ts_ns[mm0]), int(nw.ts_ns[mm0] + nw.dur_ns[mm0]))
    inside = [int(i) for i in nw.where(within=window)]
    names = [nw.name(i) for i in inside]

    def count(prefix: str) -> int:
        return sum(n.startswith(prefix) for n in names)

    claim(
        words.far(s0.dur_us, nw.steps[2].dur_us) and s0.dur_us > 100 * nw.steps[2].dur_us,
        "Without a schedule the first step took far longer than the third: ms against µs",
    )
    claim(
        words.most(dur_us(nw, mm0), s0.dur_us),
        "Most of that first step was its first aten::mm",
    )
    claim(
        min(
            count("cudaOccupancyMaxActiveClusters"),
            count("cudaMalloc"),
            count("cudaFuncSetAttribute"),
        )
        > 0,
        "the first aten::mm shows occupancy queries, cudaMalloc and cudaFuncSetAttribute calls",
    )
    calls = [
        i for i in inside if i != mm0 and nw.kind[i] in (Kind.RUNTIME, Kind.DRIVER, Kind.CPU_OP)
    ]
    silent_ms = (
        nw.dur_ns[mm0]
        - _covered_ns([(int(nw.ts_ns[i]), int(nw.ts_ns[i] + nw.dur_ns[i])) for i in calls])
    ) / 1e6
    claim(
        silent_ms > 0.5 * dur_us(nw, mm0) / 1e3,
        "over half of the first aten::mm has no recorded call under it",
    )
    for st in nw.steps[1:]:  # occupancy queries only in the cold first step
        claim(
            not len(nw.where(contains="Occupancy", within=(st.start_ns, st.end_ns))),
            "occupancy queries appear only in the cold first step",
        )
    add0 = first(nw, name="aten::add", within=in_step(nw, 0))
    return {
        "s0_ms": s0.dur_us / 1e3,
        "mm0_ms": dur_us(nw, mm0) / 1e3,
        "s2_us": nw.steps[2].dur_us,
        "n_attr": count("cudaDeviceGetAttribute"),
        "n_clusters": count("cudaOccupancyMaxActiveClusters"),
        "n_occ": count("cudaOccupancyMaxActiveBlocksPerMultiprocessor"),
        "n_malloc": count("cudaMalloc"),
        "n_modload": count("Runtime Triggered Module Loading") + count("Lazy Function Loading"),
        "silent_ms": float(silent_ms),
        "add0_ms": dur_us(nw, add0) / 1e3,
    }


def warm_step_facts(t64: Trace, warm_traces: Sequence[Trace]) -> Facts:
    """After warm-up no one-time setup is left, yet the first active step is slower op by op."""
    for t in warm_traces:  # no occupancy query, no cudaMalloc in any warm trace
        claim(
            not len(t.where(contains="Occupancy")) and not len(t.where(name="cudaMalloc")),
            "no occupancy query and no cudaMalloc in any warm trace",
        )

    def op_us(step: int, name: str) -> float:
        return dur_us(t64, first(t64, name=name, within=in_step(t64, step)))

    slow = {
        n: op_us(0, n) / op_us(-1, n)
        for n in ("aten::mm", "aten::add", "cuLaunchKernelEx", "cudaLaunchKernel")
    }
    claim(
        slow["aten::mm"] > 1.5,  # the GEMM's op is always slower; the others vary
        "after warm-up aten::mm took over 1.5 times as long in the first active step as the last",
    )
    mm_growth = op_us(0, "aten::mm") - op_us(-1, "aten::mm")
    launch_growth = op_us(0, "cuLaunchKernelEx") - op_us(-1, "cuLaunchKernelEx")
    claim(
        launch_growth < 0.5 * mm_growth,  # most of the growth is unrecorded time in aten::mm
        "aten::mm's launch call accounts for under half of its growth in the first active step",
    )
    mm0 = first(t64, name="aten::mm", within=in_step(t64, 0))
    span = (int(t64.ts_ns[mm0]), int(t64.end_ns[mm0]))
    under = [t64.name(int(i)) for i in t64.where(lane=int(t64.lane[mm0]), within=span) if i != mm0]
    claim(
        under == ["cuLaunchKernelEx"] and mm_growth > launch_growth,
        "aten::mm grew by … µs, of which its launch call accounts for … µs; the rest has "
        "nothing recorded under it",
    )
    return {
        "slow_min": min(slow.values()),
        "slow_max": max(slow.values()),
        "mm_growth": mm_growth,
        "mm_launch_growth": launch_growth,
    }


def first_launch(tr: Trace) -> tuple[int, int]:
    """The trace's first GPU op and the launch call that queued it (rows)."""
    lk = link(tr)
    g = int(lk.gpu_ops[0])
    return g, int(lk.launch[g])


def request_share_facts(peaks: Trace) -> Facts:
    """Profiled from its first call in a warm process (``peaks``: no schedule), the lane
    offset (the first CPU op to the first GPU op) is mostly the profiler's buffer request."""
    g, launch = first_launch(peaks)
    cpu = peaks.where(kind=Kind.CPU_OP)
    off = float(peaks.ts_ns[g] - peaks.ts_ns[cpu].min()) / 1e3
    abr = peaks.where(kind=Kind.OVERHEAD, name="Activity Buffer Request")
    claim(
        len(abr) == 1 and peaks.ts_ns[abr[0]] + peaks.dur_ns[abr[0]] < peaks.ts_ns[launch],
        "in the peaks run the buffer request appeared once and ended before the first launch call",
    )
    share = 100 * dur_us(peaks, int(abr[0])) / off
    claim(
        share > 75,
        "profiled from its first call in a warm process, the buffer request was over three "
        "quarters of the lane offset",
    )
    return {
        "pk_off_ms": off / 1e3,
        "pk_abr_ms": dur_us(peaks, int(abr[0])) / 1e3,
        "pk_share": share,
    }


def offset_facts(warm: Trace, cold: Trace, nw: Trace, cold20: Trace) -> Facts:
    """The GPU lane starts late because the first launch is late, not the GPU."""
    out: Facts = {}
    for key, tr in (("warm", warm), ("cold", cold), ("nw", nw)):
        g, launch = first_launch(tr)
        off = float(tr.ts_ns[g] - tr.steps[0].start_ns) / 1e3
        l2s = float(tr.ts_ns[g] - tr.ts_ns[launch]) / 1e3
        # Soon after: at most a few µs after the call returned, as in lane_facts (the
        # kernel often starts before the call returns; its latency is mostly the call).
        after_end = l2s - dur_us(tr, launch)
        claim(
            after_end < 5,
            f"{key}: the kernel started soon after its launch call: the launch was late",
        )
        out |= {f"off_{key}": off, f"l2s_{key}": l2s, f"l2s_share_{key}": 100 * l2s / off}
    claim(
        50 < float(out["off_warm"]) < 1000,
        "warm, the first GPU op started tens to hundreds of µs into the step",
    )
    mm0 = first(nw, name="aten::mm", within=in_step(nw, 0))
    claim(
        float(out["off_nw"]) > 0.8 * dur_us(nw, mm0),
        "in the cold unscheduled run the lane offset spans the first aten::mm (over 80 % of it)",
    )
    abr = nw.where(kind=Kind.OVERHEAD, name="Activity Buffer Request")
    claim(len(abr) == 1, "the buffer request appeared once in the cold unscheduled run")
    g, launch = first_launch(nw)  # the buffer request ended long before the first launch
    claim(
        nw.ts_ns[abr[0]] + nw.dur_ns[abr[0]] < nw.ts_ns[launch],
        "in the cold unscheduled run the buffer request ended before the first launch call",
    )
    n_abr_20 = len(cold20.where(name="Activity Buffer Request"))
    claim(n_abr_20 == 0, "the buffer request appeared in none of the 20 scheduled steps")
    claim(
        dur_us(nw, mm0) > 50_000 and dur_us(nw, int(abr[0])) < 0.1 * float(out["off_nw"]),
        "in the cold unscheduled run the first aten::mm alone took over 50 ms, and the buffer "
        "request was under a tenth of the offset",
    )
    claim(
        all(len(t.where(name="Activity Buffer Request")) == 0 for t in (warm, cold)),
        "With a schedule that skips a step there is no request: none in the warm and cold runs",
    )
    return out | {"n_abr": len(abr), "abr_ms": dur_us(nw, int(abr[0])) / 1e3, "n_abr_20": n_abr_20}


def calls_under_mm(tr: Trace) -> list[str]:
    """The runtime and driver calls inside the last step's ``aten::mm``."""
    mm = first(tr, name="aten::mm", within=in_step(tr))
    rows = tr.where(
        kind=(Kind.RUNTIME, Kind.DRIVER),
        within=(int(tr.ts_ns[mm]), int(tr.ts_ns[mm] + tr.dur_ns[mm])),
    )
    return [tr.name(int(i)) for i in rows]


def launch_call_facts(
    t64: Trace, t4k: Trace, t32: Trace, ttf: Trace, others: Sequence[Trace]
) -> Facts:
    """No occupancy query before a warm GEMM launch on the H200; a memset at 4096."""
    c64, c4k, c32, ctf = (calls_under_mm(t) for t in (t64, t4k, t32, ttf))
    claim(c64 == ["cuLaunchKernelEx"], "a warm 64x64 aten::mm contains only cuLaunchKernelEx")
    claim(
        c4k == ["cudaMemsetAsync", "cuLaunchKernelEx"],
        "a warm 4096x4096 bf16 aten::mm calls cudaMemsetAsync, then cuLaunchKernelEx",
    )
    claim(
        c32 == ["cudaFuncGetAttributes", "cudaLaunchKernelExC"],
        "a warm 4096x4096 fp32 aten::mm calls cudaFuncGetAttributes, then cudaLaunchKernelExC",
    )
    claim(
        not any("Occupancy" in c for c in c64 + c4k + c32 + ctf),
        "no occupancy query before a warm GEMM launch, at any size we recorded",
    )
    memset = first(t4k, kind=Kind.MEMSET)
    claim(
        words.few_bytes(int(t4k.extra["bytes"][memset])),
        "At 4096 the extra call queues a memset of a few bytes",
    )
    # one memset before each GEMM, each launched by a cudaMemsetAsync call
    n_gemm = len(t4k.where(kind=Kind.KERNEL, prefix="nvjet"))
    claim(
        len(t4k.where(kind=Kind.MEMSET)) == len(t4k.where(name="cudaMemsetAsync")) == n_gemm,
        "a memset runs before each GEMM, each launched by a cudaMemsetAsync call",
    )
    # The memset follows the kernel, not the size: the 4096 fp32 GEMM gets none (P1N-3).
    claim(
        not len(t32.where(kind=Kind.MEMSET)) and "cudaMemsetAsync" not in c32,
        "the 4096 fp32 GEMM gets no memset",
    )
    for other in others:  # other GEMMs, other names, the same small memset
        ms = other.where(kind=Kind.MEMSET)
        claim(
            len(ms) and all(words.few_bytes(int(n)) for n in other.extra["bytes"][ms]),
            "the TF32, compiled and peaks GEMMs get the same small memset, of a few bytes",
        )
    return {
        "c64": chain_md(c64),
        "c4k": chain_md(c4k),
        "c32": chain_md(c32),
        "memset_us": dur_us(t4k, memset),
    }


def profiled_from_start(meta: dict[str, Any]) -> bool:
    """Whether a recording's first profiled call was recorded: no schedule at all, or one
    with neither a skipped (``wait``) nor a warm-up step before the active ones."""
    params = meta["params"]
    if meta["variant"] == "peaks":  # timed kernels under a bare profile(): no schedule
        return True
    return bool(params.get("wait", 1) == 0 and params.get("warmup_steps", 1) == 0)


def window_facts(recordings: Sequence[tuple[Trace, dict[str, Any]]]) -> Facts:
    """Over every recording of the example (trace, meta) of one repeat: the Activity Buffer
    Request appears once in each recording profiled from its first call, cold process or
    warm, never in any other, and ends before the first CUDA call; the profiler's closing
    synchronize over an idle GPU at 64x64; the warm-up the main recordings ran."""
    claim(
        {meta["variant"] for _, meta in recordings} == set(VARIANTS),
        "the repeat's recordings are exactly the example's variants",
    )
    metas = {meta["variant"]: meta for _, meta in recordings}
    claim(
        metas["64_bf16"]["params"]["warmup"] and metas["4096_bf16"]["params"]["warmup"],
        "Our recordings add a warm-up: the main 64x64 and 4096x4096 ones",
    )
    claim(
        "warmup" not in metas["64_bf16_cold"]["params"],
        "The script as shown, without the warm-up, is our cold recording",
    )
    positions, idle_syncs = [], []
    for tr, meta in recordings:
        abr = [int(i) for i in tr.where(name="Activity Buffer Request")]
        if not profiled_from_start(meta):
            claim(
                not abr, f"{meta['variant']}: no buffer request: not profiled from its first call"
            )
        else:
            claim(
                len(abr) == 1,
                f"{meta['variant']}: profiled from its first call: one buffer request",
            )
            calls = tr.where(kind=(Kind.RUNTIME, Kind.DRIVER))
            claim(
                tr.ts_ns[abr[0]] + tr.dur_ns[abr[0]] < tr.ts_ns[calls].min(),
                "the buffer request ended before the first CUDA call",
            )
            mm0 = first(tr, name="aten::mm")  # it falls inside the first GEMM operator
            claim(
                tr.ts_ns[mm0] <= tr.ts_ns[abr[0]],
                "the buffer request fell inside the first aten::mm: it started after aten::mm did",
            )
            claim(
                tr.ts_ns[abr[0]] + tr.dur_ns[abr[0]] <= tr.ts_ns[mm0] + tr.dur_ns[mm0],
                "the buffer request fell inside the first aten::mm: it ended before aten::mm did",
            )
            positions.append(meta["process"]["variants_in_it"].index(meta["variant"]))
        if meta["params"].get("size") == 64:
            s, window = sync_window(tr)
            claim(
                gpu_busy_us(tr, window=window) == 0,
                "Even with nothing queued: no GPU work during the closing synchronize at 64x64",
            )
            idle_syncs.append(dur_us(tr, s))
    claim(
        min(positions) == 0 < max(positions),
        "the recordings profiled from their first call ran in a fresh process and in a warm one",
    )
    return {
        "n_idle_sync": len(idle_syncs),
        "idle_sync_min": min(idle_syncs),
        "idle_sync_max": max(idle_syncs),
    }
