"""Part 1 lab notes' facts (``chapters/part1-notes.md``): the evidence behind the lesson.

Every number the notes quote and every claim they make about the recordings of
``01_matmul_add``, computed by :mod:`part1_measures` (each ``*_facts`` function asserts
its claims) and checked on every repeat. The wording functions only the notes use
(:func:`autotune_text`, :func:`verdict`, :func:`cpu_verdict`) live here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import part1_measures as m
from _part1_common import glue_measure
from part1_measures import medians
from tracesite.facts import Facts

EXAMPLE = "01_matmul_add"


def autotune_text(picks: Sequence[bool]) -> str:
    """How often max-autotune picked the fused Triton GEMM, over the recorded processes."""
    n, k = len(picks), sum(picks)
    if k == n:
        return f"picked the fused Triton kernel in all {n} repeats"
    if k == 0:
        return f"kept cuBLAS and the copy in all {n} repeats"
    return f"picked the fused Triton kernel in {k} of {n} repeats and cuBLAS with the copy in the others"


def verdict(ratios: Sequence[float], more: str, less: str, same: str, margin: float = 0.05) -> str:
    """Word a ratio measured once per process, claiming a difference only beyond ``margin``
    on the same side in every process."""
    if min(ratios) > 1 + margin:
        return more
    if max(ratios) < 1 - margin:
        return less
    return same


def cpu_verdict(
    bare_by_process: Sequence[Sequence[tuple[str, float]]], version: str, base: str
) -> str:
    """``version`` against ``base`` in CPU time per call, timed without the profiler."""
    ratios = [(m := medians(b))[version] / m[base] for b in bare_by_process]
    return verdict(
        ratios, "cost more CPU time than", "cost less CPU time than", "could not be told apart from"
    )


def facts(f: Facts) -> None:
    rec, recs, num, md, trace = f.rec, f.recs, f.num, f.md, f.trace
    glue = glue_measure(f)  # the page's facts() helper: a measure's values under its keys

    num("n_repeats", len(recs("64_bf16")))
    md("stamp", rec("64_bf16").stamp_line().split(" (repeat")[0])

    # The cold first step, up close
    def first_step() -> None:
        glue(
            m.first_step_facts,
            "64_bf16_20steps_cold",
            "64_bf16_20steps",
            "64_bf16_cold",
            warm_meta=rec("64_bf16_20steps").meta,
        )
        glue(m.unscheduled_facts, "64_bf16_nowait")
        glue(
            m.warm_step_facts,
            "64_bf16",
            warm_traces=[trace(n) for n in ("64_bf16", "64_bf16_20steps", "4096_bf16")],
        )

    f.repeats(first_step)

    # The lane offset and the Activity Buffer Request
    def offset() -> None:
        glue(m.offset_facts, "64_bf16", "64_bf16_cold", "64_bf16_nowait", "64_bf16_20steps_cold")
        glue(m.window_facts, recordings=[(trace(n), rec(n).meta) for n in m.VARIANTS])

    f.repeats(offset)

    # The calls before a GEMM launch
    def launch_calls() -> None:
        others = [trace(n) for n in ("4096_fp32_tf32", "4096_bf16_compile", "peaks")]
        glue(
            m.launch_call_facts,
            "64_bf16",
            "4096_bf16",
            "4096_fp32",
            "4096_fp32_tf32",
            others=others,
        )
        glue(m.chain_facts, "64_bf16", "64_bf16_batch8")

    f.repeats(launch_calls)

    # The closing synchronize
    def closing_sync() -> None:
        glue(m.sync_facts, "64_bf16", "4096_bf16", "4096_fp32", "64_bf16_cold")
        glue(m.cold_table_facts, "64_bf16_cold", totals_cold=rec("64_bf16_cold").table_totals_us())

    f.repeats(closing_sync)

    # One GEMM twenty times, and three dtypes
    def kernels() -> None:
        glue(m.distribution_facts, "4096_bf16_20steps")
        glue(m.speed_facts, "peaks", "64_bf16", "4096_bf16_20steps", "4096_bf16")
        glue(m.dtype_facts, "4096_bf16", "4096_fp32", "4096_fp32_tf32")

    f.repeats(kernels)

    # torch.compile: the fused kernel and the CPU cost
    def compile_() -> None:
        glue(
            m.compile_facts,
            "64_bf16",
            "64_bf16_compile",
            "64_bf16_addmm",
            "64_bf16_reduce_overhead",
            "4096_bf16_compile",
        )
        glue(
            m.fused_facts,
            "4096_bf16",
            "4096_bf16_compile",
            "4096_bf16_triton_gemm",
            "4096_bf16_autotune",
        )
        timings: Any = rec("interleaved_64").timings()  # what the harness timed, unprofiled
        glue(m.interleaved_facts, "interleaved_64", bare=timings["calls"])
        m.same_process(
            [rec("64_bf16").meta, rec("64_bf16_compile").meta], "64_bf16", "64_bf16_compile"
        )

    f.repeats(compile_)

    md(
        "autotune_picks",
        autotune_text([m.picked_triton(r.trace()) for r in recs("4096_bf16_autotune")]),
    )
    bare: list[Any] = [r.timings()["calls"] for r in recs("interleaved_64")]  # type: ignore[index]
    md("addmm_vs_eager", cpu_verdict(bare, "addmm", "eager"))
    md("ro_vs_compiled", cpu_verdict(bare, "reduce-overhead", "compiled"))
