"""The computations behind Part 3 (attention): what its pages quote, from the recordings.

Every function reads a :class:`tracereader.Trace` or the ``timings.json`` a harness of
``examples/04_attention.py`` wrote, and returns plain numbers; the pages glue them and
assert their claims on every repeat. Nothing here draws.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tracereader import Kind, Trace, link, shorten_kernel_name

#: The versions the stream variants time, in the example's order.
STREAM_VERSIONS = ("cudnn", "flash", "efficient", "math", "default")

#: The H200 SM's resources for the occupancy arithmetic: warps, registers, shared memory.
SM_WARPS, SM_REGS, SM_SMEM = 64, 65536, 228 * 1024
#: The H200 SXM's dense bf16 peak, TFLOP/s (NVIDIA's datasheet).
H200_BF16_TFLOPS = 989.0


class GpuOp(NamedTuple):
    """One GPU op of a forward: its trace row, name, duration and the op that issued it."""

    row: int
    name: str
    us: float
    issuer: str


def last_step_ops(tr: Trace) -> list[GpuOp]:
    """The GPU ops launched in the last profiler step, in the order they ran."""
    lk, last = link(tr), tr.steps[-1].name
    mine = []
    for g in lk.gpu_ops:
        step = lk.step_of(int(g)) if lk.launch[g] >= 0 else None
        if step is not None and step.name == last:
            mine.append(int(g))
    mine.sort(key=lambda g: int(tr.ts_ns[g]))
    return [GpuOp(g, tr.name(g), tr.dur_ns[g] / 1e3, tr.name(int(lk.issuing_op(g)))) for g in mine]


def gpu_us(tr: Trace) -> float:
    """GPU time of one forward: the summed durations of the last step's GPU ops."""
    return float(sum(op.us for op in last_step_ops(tr)))


def by_issuer(ops: Iterable[GpuOp]) -> dict[str, float]:
    """GPU µs per issuing op name."""
    out: dict[str, float] = {}
    for op in ops:
        out[op.issuer] = out.get(op.issuer, 0.0) + op.us
    return out


def gpu_window(tr: Trace, ops: Sequence[GpuOp], pad_us: float = 10.0) -> tuple[int, int]:
    """``(start_ns, end_ns)`` around the GPU ops ``ops``, padded each side."""
    pad = int(pad_us * 1e3)
    return (int(tr.ts_ns[ops[0].row]) - pad, int(tr.end_ns[ops[-1].row]) + pad)


def op_chain(tr: Trace, row: int) -> list[str]:
    """The CPU ops above the launch of GPU op ``row``, innermost first."""
    lk = link(tr)
    p, chain = int(lk.issuer[lk.launch[row]]), []
    while p >= 0:
        if tr.kind[p] == Kind.CPU_OP:
            chain.append(tr.name(p))
        p = int(lk.parent[p])
    return chain


#: The math backend's GPU time, by what the work is for (checked in this order).
MATH_PARTS: tuple[tuple[str, Callable[[list[str]], bool]], ...] = (
    ("fp32 GEMMs", lambda c: c[0] == "aten::bmm"),
    ("safe softmax", lambda c: "aten::_safe_softmax" in c),
    ("additive mask", lambda c: c[0] == "aten::add_"),
    ("dtype conversions", lambda c: "aten::to" in c),
    ("the rest", lambda c: True),
)


def math_account(tr: Trace) -> dict[str, float]:
    """The math backend's last forward, GPU µs per part of :data:`MATH_PARTS`."""
    out = dict.fromkeys((name for name, _ in MATH_PARTS), 0.0)
    for op in last_step_ops(tr):
        chain = op_chain(tr, op.row)
        out[next(name for name, test in MATH_PARTS if test(chain))] += op.us
    return out


# ------------------------------------------------------------------ occupancy
def kernel_record(tr: Trace) -> dict[str, int]:
    """Launch shape and resources of the last forward's first kernel."""
    g = next(op.row for op in last_step_ops(tr) if tr.kind[op.row] == Kind.KERNEL)
    keys = ("registers", "shared_mem", "occupancy_pct", "grid", "block")
    return {k: int(tr.extra[k][g]) for k in keys}


def block_regs(r: dict[str, int]) -> int:
    """Registers one block reserves: given out per warp, in units of 256."""
    return -(-r["registers"] * 32 // 256) * 256 * (r["block"] // 32)


def blocks_per_sm(r: dict[str, int], smem_limit: int = SM_SMEM) -> int:
    """Blocks of this kernel one H200 SM holds (each also reserves 1 KB of shared memory)."""
    warps = r["block"] // 32
    return min(
        SM_REGS // block_regs(r), smem_limit // (r["shared_mem"] + 1024), SM_WARPS // warps, 32
    )


def theoretical_pct(r: dict[str, int]) -> float:
    """Theoretical occupancy: the share of the SM's warp slots its blocks fill."""
    return 100 * blocks_per_sm(r) * (r["block"] // 32) / SM_WARPS


# ------------------------------------------------------------------ the sweep
Sweep = dict[tuple[str, int, int], tuple[float, float, float, int, float]]


def sweep_table(timings: dict[str, Any]) -> Sweep:
    """``{(impl, head_dim, seq): (median ms, min ms, max ms, peak bytes, useful FLOP)}``."""
    out: Sweep = {}
    for row in timings["sweep"]:
        ms = row["ms"]  # a row without "ms" (a refused shape) fails here, loudly
        key = (row["impl"], row["head_dim"], row["seq"])
        out[key] = (
            float(np.median(ms)),
            min(ms),
            max(ms),
            row["peak_extra_bytes"],
            row["useful_flop"],
        )
    return out


def faster(t: Sweep, a: str, b: str, d: int, s: int) -> bool:
    """``a`` beat ``b`` at this shape beyond both spreads: a's slowest group < b's fastest."""
    return t[a, d, s][2] < t[b, d, s][1]


def tflops(t: Sweep, impl: str, d: int, s: int) -> float:
    """Useful TFLOP/s of ``impl`` at one shape (median time)."""
    return t[impl, d, s][4] / (t[impl, d, s][0] * 1e-3) / 1e12


def crossings(t: Sweep, order: Sequence[str], seqs: Sequence[int]) -> list[tuple[str, str, int]]:
    """Pairs whose order flips between two sequence lengths of one head_dim, beyond spread."""
    return [
        (a, b, d)
        for d in (64, 128)
        for a in order
        for b in order
        if a < b
        and any(faster(t, a, b, d, s) for s in seqs)
        and any(faster(t, b, a, d, s) for s in seqs)
    ]


# ------------------------------------------------------------------ the CPU side
def forward_cpu(tr: Trace, region: str = "attention") -> tuple[list[str], list[str]]:
    """CPU op names and runtime/driver call names inside the last ``region`` range."""
    span = tr.where(name=region, kind=Kind.USER_ANNOTATION)[-1]
    inside = tr.where(within=(int(tr.ts_ns[span]), int(tr.ts_ns[span] + tr.dur_ns[span])))
    ops = [tr.name(i) for i in inside if tr.kind[i] == Kind.CPU_OP]
    calls = [tr.name(i) for i in inside if tr.kind[i] in (Kind.RUNTIME, Kind.DRIVER)]
    return ops, calls


def launch_apis(tr: Trace, pick: Callable[[str], bool]) -> set[str]:
    """The launch calls of the GPU ops whose name ``pick`` accepts."""
    lk = link(tr)
    return {
        tr.name(int(lk.launch[i]))
        for i in tr.where(kind=Kind.KERNEL)
        if lk.launch[i] >= 0 and pick(tr.name(i))
    }


def after_effect(calls: Sequence[tuple[str, float]], cycle: int) -> dict[str, float]:
    """Per version: the largest over the smallest median CPU time of its calls grouped by the
    version that ran just before, in an interleaved run (each cycle's first call, which
    follows a GPU synchronize, left out)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for k in range(1, len(calls)):
        if k % cycle:
            groups.setdefault((calls[k][0], calls[k - 1][0]), []).append(calls[k][1])
    out: dict[str, float] = {}
    for name in {n for n, _ in groups}:
        meds = [statistics.median(v) for (n, _), v in groups.items() if n == name]
        out[name] = max(meds) / min(meds)
    return out


class StreamStats(NamedTuple):
    """One version's same-backend streams in one process (µs)."""

    cpu_us: float  # median CPU time per call, each stream's first call left out
    first_us: float  # median CPU time of a stream's first call (after another version)
    wall_us: float  # median per-call wall time of a stream, until the GPU finished
    event_us: float  # median per-call time between the CUDA events around a stream
    drift: float  # median CPU time of the streams' last calls over their second calls
    streams: int


def stream_stats(timings: dict[str, Any]) -> dict[str, StreamStats]:
    """Per version, the medians of its streams in one recorded process."""
    n = timings["calls_per_stream"]
    out = {}
    for v in dict.fromkeys(s["version"] for s in timings["streams"]):
        mine = [s for s in timings["streams"] if s["version"] == v]
        steady = [us for s in mine for us in s["cpu_us"][1:]]
        out[v] = StreamStats(
            statistics.median(steady),
            statistics.median(s["cpu_us"][0] for s in mine),
            statistics.median(s["wall_us"] / n for s in mine),
            statistics.median(s["gpu_event_us"] / n for s in mine),
            statistics.median(s["cpu_us"][-1] / s["cpu_us"][1] for s in mine),
            len(mine),
        )
    return out


def region_kernels_us(tr: Trace, region: str) -> list[float]:
    """Durations of the kernels launched inside each ``region`` range (one list, in order)."""
    lk = link(tr)
    out = []
    for reg in tr.regions(region):
        for k in tr.where(kind=Kind.KERNEL):
            launch = int(lk.launch[k])
            if launch >= 0 and reg.start_ns <= tr.ts_ns[launch] < reg.end_ns:
                out.append(float(tr.dur_ns[k]) / 1e3)
    return out


def region_calls(tr: Trace, region: str) -> int:
    """How many SDPA calls the ``region`` ranges hold."""
    return len(region_ops_rows(tr, reg_name=region, name="aten::scaled_dot_product_attention"))


def region_ops_rows(tr: Trace, reg_name: str, name: str) -> list[int]:
    """Rows of the CPU ops called ``name`` inside the ``reg_name`` ranges."""
    return [
        int(i)
        for reg in tr.regions(reg_name)
        for i in tr.where(within=(reg.start_ns, reg.end_ns))
        if tr.kind[i] == Kind.CPU_OP and tr.name(i) == name
    ]


def shorten(name: str) -> str:
    """A kernel name short enough for a table cell."""
    return shorten_kernel_name(name)


def region_ops(tr: Trace, region: str, prefix: str) -> set[str]:
    """Names of the CPU ops starting with ``prefix`` inside the ``region`` ranges."""
    out = set()
    for reg in tr.regions(region):
        for i in tr.where(within=(reg.start_ns, reg.end_ns)):
            if tr.kind[i] == Kind.CPU_OP and tr.name(i).startswith(prefix):
                out.add(tr.name(i))
    return out


# ------------------------------------------------------------------ lab-notes summaries
def sweep_memory_rows(t: Sweep, d: int = 64) -> str:
    """A Markdown table of extra memory (MiB) per sequence length at head_dim ``d``."""
    seqs = sorted({s for (_, dd, s) in t if dd == d})
    rows = ["| sequence | naive | math | cuDNN | flash |", "|---|---|---|---|---|"]
    for s in seqs:
        cells = " | ".join(
            f"{t[impl, d, s][3] / 2**20:,.0f} MiB" for impl in ("naive", "math", "cudnn", "flash")
        )
        rows.append(f"| {s} | {cells} |")
    return "\n".join(rows)


def profiled_forward_us(tr: Trace, region: str = "attention") -> list[float]:
    """CPU µs of each ``region`` range (one forward per profiled step)."""
    return [float(tr.dur_ns[i]) / 1e3 for i in tr.where(name=region, kind=Kind.USER_ANNOTATION)]


def first_call_ratio(timings: dict[str, Any]) -> dict[str, float]:
    """Per version: median CPU time of a stream's first call over its later calls."""
    return {v: s.first_us / s.cpu_us for v, s in stream_stats(timings).items()}
