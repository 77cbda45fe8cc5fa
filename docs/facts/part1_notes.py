"""Part 1 lab notes' facts (``chapters/part1-notes.md``): the evidence behind the lesson.

Every number the notes quote and every claim they make about the recordings of
``01_matmul_add``, computed by :mod:`part1_measures` (each ``*_facts`` function checks
its claims) and checked on every repeat. The wording functions only the notes use
(:func:`autotune_text`, :func:`cpu_verdict`) live here; the measures Part 1's page reads
too are read by its facts module's helpers (:func:`part1.offsets`...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import part1
import part1_measures as m
from part1_measures import medians
from tracesite.facts import Facts, claim
from tracesite.notebook import verdict
from tracesite.words import about

from tracereader import Kind, Trace

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")


def autotune_text(picks: Sequence[bool]) -> str:
    """How often max-autotune picked the fused Triton GEMM, over the recorded processes."""
    n, k = len(picks), sum(picks)
    if k == n:
        return f"picked the fused Triton kernel in all {n} repeats"
    if k == 0:
        return f"kept cuBLAS and the copy in all {n} repeats"
    return f"picked the fused Triton kernel in {k} of {n} repeats and cuBLAS with the copy in the others"


def cpu_verdict(
    bare_by_process: Sequence[Sequence[tuple[str, float]]], version: str, base: str
) -> str:
    """``version`` against ``base`` in CPU time per call, timed without the profiler."""
    ratios = [(m := medians(b))[version] / m[base] for b in bare_by_process]
    return verdict(
        ratios, "cost more CPU time than", "cost less CPU time than", "could not be told apart from"
    )


def picked_triton(tr: Trace) -> bool:
    """Whether max-autotune kept Inductor's fused Triton GEMM (else cuBLAS and the copy)."""
    triton = any(tr.name(int(i)).startswith("triton_tem") for i in tr.where(kind=Kind.KERNEL))
    claim(
        triton != bool(len(tr.where(kind=Kind.MEMCPY))),
        "max-autotune picked either the fused Triton kernel, with no copy, or cuBLAS and the copy",
    )
    return triton


def fused_facts(eager4k: Trace, comp4k: Trace, triton: Trace, autotune: Trace) -> dict[str, Any]:
    """A fused Triton GEMM drops the bias copy but is no faster than cuBLAS plus the copy."""
    fused = {triton.name(int(i)) for i in triton.where(kind=Kind.KERNEL)}
    claim(
        len(fused) == 1 and next(iter(fused)).startswith("triton_tem_fused_addmm"),
        "compiled with Inductor's own Triton GEMM templates, the step runs one fused kernel",
    )
    claim(not len(triton.where(kind=Kind.MEMCPY)), "the fused kernel indeed has no copy")
    cublas_us = m.median_us(comp4k, kind=Kind.KERNEL, prefix="nvjet")
    copy_us = m.median_us(comp4k, kind=Kind.MEMCPY)
    fused_us = m.median_us(triton, kind=Kind.KERNEL)
    claim(
        fused_us / (cublas_us + copy_us) > 0.97,
        "the fused kernel was no faster than cuBLAS's GEMM and the copy together",
    )
    claim(fused_us > 1.03 * cublas_us, "the fused kernel was slower than cuBLAS's GEMM alone")
    per_step = {
        k: m.gpu_us_per_step(t)
        for k, t in (("eager", eager4k), ("cublas", comp4k), ("fused", triton))
    }
    # How close the per-step GPU times are differs by GPU: the caller claims it per GPU.
    picked_triton(autotune)
    return {
        "fused_name": f"`{next(iter(fused))}`",
        "fused_us": fused_us,
        "cublas_us": cublas_us,
        "copy_us4k": copy_us,
        "fused_vs_pair": fused_us / (cublas_us + copy_us),
        "fused_vs_gemm": fused_us / cublas_us,
        "tie_pct": 100 * (max(per_step.values()) / min(per_step.values()) - 1),
        "fused_step_pct": 100 * (per_step["fused"] / per_step["cublas"] - 1),
        **{f"step_gpu_{k}": v for k, v in per_step.items()},
    }


def facts(f: Facts) -> None:
    rec, recs, num, md, trace = f.rec, f.recs, f.num, f.md, f.trace

    num("n_repeats", len(recs("64_bf16")))
    md("stamp", rec("64_bf16").stamp_line().split(" (repeat")[0])

    # The cold first step, up close
    def first_step() -> None:
        f.num_from(part1.first_step_costs(f), "cold_ratio warm_ratio gap2 gap3 gap4")
        unscheduled = m.unscheduled_facts(trace("64_bf16_nowait"))
        f.num_from(
            unscheduled,
            "s0_ms mm0_ms s2_us n_attr n_clusters n_occ n_malloc n_modload silent_ms add0_ms",
        )
        warm = m.warm_step_facts(
            trace("64_bf16"),
            warm_traces=[trace(n) for n in ("64_bf16", "64_bf16_20steps", "4096_bf16")],
        )
        f.num_from(warm, "slow_min slow_max mm_growth mm_launch_growth")

    f.repeats(first_step)

    # The lane offset and the Activity Buffer Request
    def offset() -> None:
        f.num_from(
            part1.lane_offset(f),
            "off_warm l2s_warm off_cold l2s_cold off_nw l2s_nw n_abr abr_ms n_abr_20 pk_off_ms "
            "pk_share n_idle_sync idle_sync_min idle_sync_max",
        )

    f.repeats(offset)

    # The calls before a GEMM launch
    def launch_calls() -> None:
        calls = part1.launch_calls(f)
        md("c64", calls["c64"])
        md("c4k", calls["c4k"])
        md("c32", calls["c32"])
        num("memset_us", calls["memset_us"])
        md("batch_ops", part1.call_chain(f)["batch_ops"])

    f.repeats(launch_calls)

    # The closing synchronize
    def closing_sync() -> None:
        f.num_from(
            part1.closing_sync(f),
            "s64_us s64_busy s4k_us s4k_busy s4k_pct s32_us s32_busy s32_pct s32_unrec s64c_us "
            "s64c_busy a100_sync_pct l2s32_ms",
        )
        f.num_from(part1.cold_table(f), "cold_pct_work a100_pct_work cold_cpu64 cold_gpu64")

    f.repeats(closing_sync)

    # One GEMM twenty times, and three dtypes
    def kernels() -> None:
        dist = m.distribution_facts(trace("4096_bf16_20steps"))
        f.num_from(dist, "k20_n k20_min k20_med k20_max k20_spread gemm_speedup")
        f.num_from(part1.gemm_speed(f), "r4k_tflops r4k_pct")
        dtype: dict[str, Any] = m.dtype_facts(
            trace("4096_bf16"), trace("4096_fp32"), trace("4096_fp32_tf32")
        )
        md("g16", dtype["g16"])
        md("g32", dtype["g32"])
        md("gtf", dtype["gtf"])
        f.num_from(dtype, "g16_us g32_us gtf_us fp32_x tf32_x r32_pct rtf_pct")

    f.repeats(kernels)

    # torch.compile: the fused kernel and the CPU cost
    def compile_() -> None:
        f.num_from(part1.compiled(f), "r_ops cp_mb cp_us copy_tbs a100_copy_tbs per_graph")
        fused: dict[str, Any] = fused_facts(
            trace("4096_bf16"),
            trace("4096_bf16_compile"),
            trace("4096_bf16_triton_gemm"),
            trace("4096_bf16_autotune"),
        )
        md("fused_name", fused["fused_name"])
        f.num_from(fused, "fused_vs_pair fused_vs_gemm")
        # Per step, GPU time of eager, compiled (cuBLAS + copy) and fused: a tie on the H200;
        # on the H100 the fused Triton GEMM is slower, so the fused step loses.
        if f.gpu == "h200":
            claim(
                about(fused["fused_vs_pair"], 1.0) and fused["tie_pct"] < 10,
                "on the H200 the fused kernel took about as long as the GEMM plus the copy, and "
                "eager, compiled and fused kept the GPU busy within 10 % of each other",
            )
            num("tie_pct", fused["tie_pct"])
        else:
            claim(
                fused["fused_step_pct"] > 5,
                "on the H100 the fused step kept the GPU busy longer than the compiled cuBLAS one",
            )
            num("fused_step_pct", fused["fused_step_pct"])
        f.num_from(
            part1.interleaved(f),
            "rounds n_unprof prof_cost c_over_e a_over_e r_over_e u_c_over_e u_a_over_e u_r_over_e",
        )

    f.repeats(compile_)

    md(
        "autotune_picks",
        autotune_text([picked_triton(r.trace()) for r in recs("4096_bf16_autotune")]),
    )
    bare: list[Any] = [r.timings()["calls"] for r in recs("interleaved_64")]  # type: ignore[index]
    md("addmm_vs_eager", cpu_verdict(bare, "addmm", "eager"))
    md("ro_vs_compiled", cpu_verdict(bare, "reduce-overhead", "compiled"))
