"""Story 04c's claims (examples/04_attention/04c_interleaved_backends.py): each sentence its
text says about the recordings, checked on every repeat of both GPUs
(``interleaved_backends`` is recorded on both). A sentence about the repeats together ("the
medians moved from one repeat to the next") is checked once per GPU, over its repeats. It
pastes nothing: the story prints its numbers from the replay.

The predecessor effect is :func:`part3_measures.after_effect` (Part 3's lab notes read the
same recording); the profiler's table is read as the page prints it, by story 04a's
:func:`story_04a_naive_and_sdpa.table`.
"""

from __future__ import annotations

import statistics
from typing import Any

import part3_measures as m
from story_04a_naive_and_sdpa import named, sorted_by_gpu_time, table
from tracesite import words
from tracesite.facts import Facts, claim

import tracereader
from tracereader import Kind, Trace, link

EXAMPLE = "04_attention"
GPUS = ("h200", "h100")

VARIANT = "interleaved_backends"
VERSIONS = ("cudnn", "flash", "efficient", "math", "default")
CYCLE = len(VERSIONS) * (len(VERSIONS) - 1)  # 20 calls: every ordered pair once
SDPA = "aten::scaled_dot_product_attention"
FORWARD = {
    "cudnn": "aten::_cudnn_attention_forward",
    "flash": "aten::_flash_attention_forward",
    "efficient": "aten::_efficient_attention_forward",
    "math": "aten::_scaled_dot_product_attention_math",
}


def after_medians(calls: list[tuple[str, float]]) -> dict[tuple[str, str], float]:
    """Median CPU µs per (version, the version just before it), each cycle's first call
    (after a synchronize) left out, as the story's cell groups them."""
    groups: dict[tuple[str, str], list[float]] = {}
    for k in range(1, len(calls)):
        if k % CYCLE:
            groups.setdefault((calls[k][0], calls[k - 1][0]), []).append(calls[k][1])
    return {pair: statistics.median(us) for pair, us in groups.items()}


def overall(calls: list[tuple[str, float]], version: str) -> float:
    """A version's median CPU µs per call, each cycle's first call left out."""
    return statistics.median(us for k, (v, us) in enumerate(calls) if k % CYCLE and v == version)


def names_in(tr: Trace, regions: tuple[str, ...]) -> set[str]:
    """Every name inside the ``regions`` ranges: the ranges, their CPU ops and calls, and the
    GPU operations they launched (with the ranges' GPU-side spans)."""
    lk = link(tr)
    spans = [(r.start_ns, r.end_ns) for v in regions for r in tr.regions(v)]
    out = set(regions)
    for i in range(len(tr)):
        at = int(tr.ts_ns[i])
        if tr.kind[i] in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET):
            at = int(tr.ts_ns[lk.launch[i]]) if lk.launch[i] >= 0 else -1
        if any(a <= at < b for a, b in spans):
            out.add(tr.name(i))
    return out


def region_gpu_us(tr: Trace, region: str) -> float:
    """GPU µs of the operations launched inside the ``region`` ranges."""
    lk = link(tr)
    spans = [(r.start_ns, r.end_ns) for r in tr.regions(region)]
    return sum(
        float(tr.dur_ns[g]) / 1e3
        for g in lk.gpu_ops
        if lk.launch[g] >= 0 and any(a <= tr.ts_ns[lk.launch[g]] < b for a, b in spans)
    )


def under(tr: Trace, row: int, name: str) -> bool:
    """The CPU op ``row`` sits (at any depth) under an op called ``name``."""
    lk = link(tr)
    p = int(lk.parent[row])
    while p >= 0:
        if tr.name(p) == name:
            return True
        p = int(lk.parent[p])
    return False


def facts(f: Facts) -> None:
    def each() -> None:
        rec = f.rec(VARIANT)
        timings: Any = rec.timings()
        calls = [(str(v), float(us)) for v, us in timings["calls"]]
        cycle = [v for v, _ in calls[:CYCLE]]
        loop = list(zip(cycle, cycle[1:] + cycle[:1], strict=True))
        claim(
            len(set(loop)) == CYCLE
            and all(a != b for a, b in loop)
            and set(cycle) == set(VERSIONS),
            "with five versions that is a cycle of 20 calls (5 × 4 ordered pairs): read as a "
            "loop, every version follows every other version exactly once",
        )
        claim(
            cycle[0] == "cudnn" and cycle[-1] == "default",
            "one pair, default then cudnn, is the cycle's wrap-around; each cycle's first call "
            "(cuDNN's, on a GPU)",
        )
        claim(
            len(calls) == 40 * CYCLE and [v for v, _ in calls] == cycle * 40,
            "40 unprofiled cycles of 20 calls",
        )
        tr = rec.trace()
        claim(
            all(
                len(tr.regions(v)) == len(m.region_ops_rows(tr, v, SDPA)) == 4 * cycle.count(v)
                for v in VERSIONS
            )
            and len(tr.where(kind=Kind.CPU_OP, name=SDPA)) == 4 * CYCLE,
            "4 profiled cycles, each call inside a record_function named after its version",
        )

        # The profiled cycles: the table.
        rows = table(rec.table)
        claim(sorted_by_gpu_time(rows), "sorted by GPU time (CUDA total), 15 rows")
        math_names = names_in(tr, ("math",))
        other_names = names_in(tr, tuple(v for v in VERSIONS if v != "math"))
        claim(
            all(
                any(named(r, n) for n in math_names) and not any(named(r, n) for n in other_names)
                for r in rows[1:]
            ),
            "every row but the first is its op, its range or its kernels",
        )
        gpu_total = sum(float(tr.dur_ns[g]) / 1e3 for g in link(tr).gpu_ops)
        claim(
            words.most(region_gpu_us(tr, "math"), gpu_total),
            "in this table the math backend fills the rows: its ops and kernels take most of "
            "the GPU time",
        )
        gemms = {tr.name(i) for i in tr.where(kind=Kind.KERNEL, contains="gemm")}
        claim(
            gemms
            and all(n.startswith("sm80_xmma_gemm_f32f32") and "ffma" in n for n in gemms)
            and gemms <= math_names
            and any(r["name"].startswith("sm80_xmma_gemm_f32f32") for r in rows),
            "its GEMM kernels, sm80_xmma_gemm_f32f32…, are cuBLAS's fp32 kernels built for the "
            "A100's architecture (sm80); in fp32 they use ordinary multiply-add units",
        )
        mrows = [r for r in rows if r["name"] == "math"]
        claim(
            len(mrows) == 2
            and sorted(r["cpu_total_us"] == 0 for r in mrows) == [False, True]
            and all(r["calls"] == 16 for r in mrows),
            "math has two rows: the version's record_function range on the CPU, and its "
            "gpu_user_annotation, with no CPU time",
        )
        claim(
            rows[0]["name"] == SDPA and rows[0]["calls"] == 80,
            "the first row, aten::scaled_dot_product_attention, averages the 80 profiled calls "
            "of all five versions",
        )

        # Each backend's own op, under the profiler.
        claim(
            all(
                all(under(tr, int(i), SDPA) for i in tr.where(kind=Kind.CPU_OP, name=op))
                for op in FORWARD.values()
            ),
            "each backend's own op sits under aten::scaled_dot_product_attention",
        )
        cud = FORWARD["cudnn"]
        claim(
            len(m.region_ops_rows(tr, "cudnn", cud)) == 16
            and len(m.region_ops_rows(tr, "default", cud)) == 16
            and len(tr.where(kind=Kind.CPU_OP, name=cud)) == 32,
            "aten::_cudnn_attention_forward (its calls are cudnn's and default's: PyTorch chose "
            "cuDNN)",
        )
        op = {r["name"]: r for r in tracereader.op_table(tr).to_records()}
        self_per_call = {v: op[n]["self_cpu_us"] / op[n]["calls"] for v, n in FORWARD.items()}
        share = {v: op[n]["self_cpu_us"] / op[n]["total_cpu_us"] for v, n in FORWARD.items()}
        cudnn_op = op[FORWARD["cudnn"]]
        claim(
            words.most(cudnn_op["self_cpu_us"], cudnn_op["total_cpu_us"]),
            "on the H200 and the H100, in every repeat: under the profiler, cuDNN's forward op "
            "was mostly self time, over half of its total",
        )
        claim(
            words.times(self_per_call["cudnn"], self_per_call["flash"], 2),
            "its self time per call was over twice flash's",
        )
        claim(words.about(share["flash"], 1 / 3), "flash's was about a third of its total")
        claim(
            all(
                {"cudaMemsetAsync", "cuLaunchKernelEx"} <= _calls_in(tr, reg)
                for reg in tr.regions("cudnn")
            )
            and not any("cudaMemsetAsync" in _calls_in(tr, reg) for reg in tr.regions("flash")),
            "each call's memset (cudaMemsetAsync, which flash's op does not make) and kernel "
            "launch (cuLaunchKernelEx) are recorded as calls of their own",
        )

        # Without the profiler.
        med = after_medians(calls)
        claim(
            all(med["cudnn", p] > med["flash", p] for p in ("efficient", "math")),
            "without the profiler, too, a cuDNN call cost the CPU more than a flash call after "
            "the same predecessor: compare their medians after efficient and after math",
        )

        def after(v: str) -> dict[str, float]:
            return {p: us for (w, p), us in med.items() if w == v}

        claim(
            all(
                max(after(v), key=after(v).__getitem__) == "cudnn"
                for v in ("flash", "efficient", "math")
            )
            and min(after("default"), key=after("default").__getitem__) == "cudnn",
            "in every repeat on both GPUs, flash, efficient and math were each slowest right "
            "after cuDNN, while default was fastest there",
        )
        effect = m.after_effect(calls, CYCLE)
        claim(
            max(effect, key=effect.__getitem__) == "flash",
            "flash's median moved the most with its predecessor",
        )
        claim(
            words.times(med["flash", "cudnn"], med["flash", "efficient"], 1.5),
            "over 1.5 times as long after cuDNN as after efficient",
        )
        claim(
            overall(calls, "cudnn") > max(overall(calls, v) for v in ("flash", "efficient")),
            "cuDNN's call, the costliest on the CPU of the fused backends",
        )

    f.repeats(each, n=f.n_repeats(VARIANT))

    medians = [
        {v: overall([(str(a), float(b)) for a, b in r.timings()["calls"]], v) for v in VERSIONS}  # type: ignore[index]
        for r in f.recs(VARIANT)
    ]
    claim(
        all(max(x[v] for x in medians) > 1.1 * min(x[v] for x in medians) for v in VERSIONS),
        "the medians also moved from one repeat (one process) to the next, on both GPUs",
    )


def _calls_in(tr: Trace, reg: Any) -> set[str]:
    """Names of the runtime and driver calls inside one range."""
    return {
        tr.name(int(i))
        for i in tr.where(kind=(Kind.RUNTIME, Kind.DRIVER), within=(reg.start_ns, reg.end_ns))
    }
