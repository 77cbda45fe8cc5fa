"""Part 1's shared readings of a trace (the constants of its recordings, and small
helpers: an event by its filters, a duration, a step's window), for the measures of its two
pages: :mod:`part1_measures` and :mod:`part1_first_step_measures` import them, and
``part1_measures`` passes them on, so a page reads every one as ``m.<name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from tracesite.facts import claim

from tracereader import (
    Kind,
    Trace,
)

Facts = dict[str, float | str]
Get = Callable[[str], Trace]

SPEC_TFLOPS = 989.0  # H200 SXM datasheet: dense bf16 on the Tensor Cores
SPEC_FP32_TFLOPS = 67.0  # H200 SXM datasheet: fp32 on the FMA units
SPEC_TF32_TFLOPS = 494.7  # H200 SXM datasheet: dense TF32 on the Tensor Cores
N_SMS = 132
# Variants whose recordings must share one machine and software stamp.
STAMPED = ("64_bf16", "4096_bf16", "64_bf16_nowait", "4096_bf16_compile", "interleaved_64")
# Every recorded variant of the example (the tests check this against the recordings).
VARIANTS = (
    "4096_bf16", "4096_bf16_20steps", "4096_bf16_autotune", "4096_bf16_cold",
    "4096_bf16_compile", "4096_bf16_triton_gemm", "4096_fp32", "4096_fp32_tf32",
    "64_bf16", "64_bf16_20steps", "64_bf16_20steps_cold", "64_bf16_addmm", "64_bf16_batch8",
    "64_bf16_cold", "64_bf16_compile", "64_bf16_export_after", "64_bf16_nowait",
    "64_bf16_reduce_overhead", "interleaved_64", "peaks",
)  # fmt: skip
# The Hugging Face Part 1 post's A100 figures, as it reports them.
A100 = {
    "cpu64": 2314.0,
    "gpu64": 23.104,
    "gemm_typical": 580.0,
    "copy_mb": 32.0,
    "copy_us": 33.0,
    "sync_us": 1780.0,
}


def first(tr: Trace, **filters: Any) -> int:
    """The first row that matches ``filters`` (``Trace.where``); claims there is one."""
    rows = tr.where(**filters)
    claim(len(rows), f"the trace has an event that matches {filters}")
    return int(rows[0])


def dur_us(tr: Trace, row: int) -> float:
    return float(tr.dur_ns[row]) / 1e3


def median_us(tr: Trace, **filters: Any) -> float:
    """Median duration of the events that match, in µs."""
    return float(np.median(tr.dur_ns[tr.where(**filters)])) / 1e3


def in_step(tr: Trace, step: int = -1, slack_ns: int = 0) -> tuple[int, int]:
    s = tr.steps[step]
    return s.start_ns, s.end_ns + slack_ns


def gemm_tflops(tr: Trace, n: int) -> float:
    """Achieved rate of the ``nvjet`` GEMM of two n x n matrices: 2 n^3 / time."""
    return 2 * n**3 / (median_us(tr, kind=Kind.KERNEL, prefix="nvjet") * 1e-6) / 1e12


def chain_md(names: Iterable[str]) -> str:
    return " → ".join(f"`{n}`" for n in names)


def events(tr: Trace) -> list[tuple[str, int]]:
    """Every event's name and kind, in time order (ties in file order)."""
    order = np.argsort(tr.ts_ns, kind="stable")
    return [(tr.name(int(i)), int(tr.kind[i])) for i in order]


def sync_window(tr: Trace) -> tuple[int, tuple[int, int]]:
    """The profiler's closing cudaDeviceSynchronize (claimed to be the profiler's) and its span."""
    s = first(tr, name="cudaDeviceSynchronize")
    claim(
        tr.external_id[s] < 0,
        "the closing cudaDeviceSynchronize has no External id: no operator issued it",
    )
    claim(
        tr.ts_ns[s] >= tr.steps[-1].end_ns,
        "the closing cudaDeviceSynchronize starts after the last step: the profiler's",
    )
    claim(
        len(tr.where(name="cudaDeviceSynchronize")) == 1,
        "the trace has one cudaDeviceSynchronize, the profiler's",
    )
    return s, (int(tr.ts_ns[s]), int(tr.ts_ns[s] + tr.dur_ns[s]))
