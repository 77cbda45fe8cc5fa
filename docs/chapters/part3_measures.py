"""The computations behind Part 3 (attention): what its pages quote, from the recordings.

Every function reads a :class:`tracereader.Trace` or the ``timings.json`` that a harness
of the stories in ``examples/04_attention/`` wrote, and returns plain numbers; the pages
glue them and claim what they say on every repeat. Nothing here draws.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
from tracesite import words
from tracesite.facts import claim

from tracereader import Kind, Trace, link, shorten_kernel_name

#: The versions the stream variants time, in the example's order.
STREAM_VERSIONS = ("cudnn", "flash", "efficient", "math", "default")

#: The H200 SM's resources for the occupancy arithmetic: warps, registers, shared memory.
SM_WARPS, SM_REGS, SM_SMEM = 64, 65536, 228 * 1024
#: Each recorded GPU's datasheet figures: dense bf16 TFLOP/s and HBM bandwidth, TB/s.
PEAKS = {"h200": (989.0, 4.8), "h100": (989.0, 3.35)}


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


#: The naive version's GPU time in the same parts (by issuing op).
NAIVE_PARTS: dict[str, str] = {
    "aten::bmm": "fp32 GEMMs",
    "aten::_softmax": "safe softmax",
    "aten::copy_": "additive mask",
    "aten::masked_fill_": "additive mask",
}


def naive_account(tr: Trace) -> dict[str, float]:
    """The naive version's last forward in the parts of :data:`MATH_PARTS`: its GEMMs, its
    softmax, its mask (copy and fill), no conversions, the rest (scaling, building the mask)."""
    out = dict.fromkeys((name for name, _ in MATH_PARTS), 0.0)
    for op in last_step_ops(tr):
        out[NAIVE_PARTS.get(op.issuer, "the rest")] += op.us
    return out


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


def by_hand(r: dict[str, int]) -> dict[str, float]:
    """A kernel's record with its occupancy worked out by hand beside it: the registers one
    block reserves (``block_regs``), the blocks one SM holds (``blocks``), ``theory``."""
    return {
        **r,
        "block_regs": block_regs(r),
        "blocks": blocks_per_sm(r),
        "theory": theoretical_pct(r),
    }


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
    return words.beyond_spread(t[b, d, s][1:3], t[a, d, s][1:3])


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


def region_gpu_ops(tr: Trace, region: str) -> list[int]:
    """Rows of the GPU operations (kernels, copies, memsets) launched inside the first
    ``region`` range, in the order they ran."""
    lk, reg = link(tr), tr.regions(region)[0]
    rows = [
        int(i)
        for i in tr.where(kind=(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET))
        if lk.launch[i] >= 0 and reg.start_ns <= tr.ts_ns[lk.launch[i]] < reg.end_ns
    ]
    return sorted(rows, key=lambda i: int(tr.ts_ns[i]))


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


# ------------------------------------------------------------------ the lesson's claims
# Each *_facts function computes what a section of the lesson quotes and claims what it
# says; the page's facts module runs it on every repeat (``f.repeats``) and pastes the result.
Facts = dict[str, float | str]


def naive_facts(
    naive: Trace, inplace: Trace, peak: float, peak_inplace: float, shape: Sequence[int]
) -> Facts:
    """Section 1: the five steps, the score copy, the in-place mask; peaks in MiB."""
    b, h, s, d = shape
    score, out_mib = b * h * s * s * 2, b * h * s * d * 2 / 2**20
    ops = last_step_ops(naive)
    claim(
        [o.issuer for o in ops]
        == [
            "aten::bmm",
            "aten::bmm",
            "aten::mul",
            "aten::fill_",
            "aten::triu",
            "aten::copy_",
            "aten::masked_fill_",
            "aten::_softmax",
            "aten::bmm",
        ],
        "attention written out runs nine GPU ops per step, for five lines",
    )
    copy = [o for o in ops if o.issuer == "aten::copy_"]
    claim(
        len(copy) == 1 and naive.kind[copy[0].row] == Kind.MEMCPY,
        "the purple bar, one Memcpy DtoD, is the step's aten::copy_",
    )
    # out of place: masked_fill clones the scores (clone -> copy_), then fills the clone
    claim(
        op_chain(naive, copy[0].row)[:3] == ["aten::copy_", "aten::clone", "aten::masked_fill"],
        "masked_fill is out of place: masked_fill → clone → copy_ above the copy",
    )
    kname = {o.issuer: o.name for o in ops}
    # the scaling runs the vectorized elementwise kernel, the fill the general one
    claim(
        kname["aten::mul"].startswith("void at::native::vectorized_elementwise_kernel"),
        "the scaling runs PyTorch's vectorized_elementwise_kernel",
    )
    claim(
        kname["aten::masked_fill_"].startswith("void at::native::elementwise_kernel"),
        "the fill runs the general elementwise_kernel",
    )
    claim(
        naive.extra["bytes"][copy[0].row] == score,
        "masked_fill first clones the whole score matrix",
    )
    by = by_issuer(ops)
    total = sum(by.values())
    fill_tbs = 2 * score / (by["aten::masked_fill_"] * 1e-6) / 1e12
    mul_tbs = 2 * score / (by["aten::mul"] * 1e-6) / 1e12
    claim(
        fill_tbs < 0.6 * mul_tbs,
        "the fill moves the same bytes as the scaling, slower (under 0.6 of its rate)",
    )
    # the slowest of the step's GPU ops, so the figure's mask step is the slowest step too
    fill = [o.us for o in ops if o.issuer == "aten::masked_fill_"]
    claim(
        len(fill) == 1 and all(o.us < fill[0] for o in ops if o.issuer != "aten::masked_fill_"),
        "the fill is the slowest",
    )
    claim(
        words.small_share(by["aten::bmm"], total),
        "the two GEMMs are only a small part of it (under 30 %)",
    )
    # the peak: two score matrices, the output and the boolean mask (s x s bytes)
    claim(
        abs(peak - (2 * score / 2**20 + out_mib + s * s / 2**20)) < 1,
        "the peak: two score matrices alive at once, the output and the boolean mask",
    )
    claim(words.hundreds(int(peak)), "the five steps needed hundreds of MiB at their peak")
    ip = last_step_ops(inplace)
    claim(
        not any(o.name.startswith("Memcpy") for o in ip) and len(ip) == len(ops) - 1,
        "with masked_fill_ in place the copy disappears",
    )
    ip_us = gpu_us(inplace)
    claim(
        ip_us < 0.95 * total and peak_inplace == peak,
        "in place: less GPU time (over 5 % less), but it does not lower the peak",
    )
    return {
        "naive_ops": len(ops),
        "score_mib": score / 2**20,
        "naive_us": total,
        "naive_gemm_pct": 100 * by["aten::bmm"] / total,
        "fill_tbs": fill_tbs,
        "mul_tbs": mul_tbs,
        "naive_peak_mib": peak,
        "ip_us": ip_us,
        "ip_saved_pct": 100 * (1 - ip_us / total),
    }


# each fused backend's kernel, by the part of its name a reader can search for
ATTENTION_KERNELS = {
    "sdpa_cudnn": "sdpa",
    "sdpa_flash": "flash_fwd",
    "sdpa_efficient": "fmha_cutlass",
}


def backend_facts(
    traces: dict[str, Trace], peaks: dict[str, float], out_mib: float, cudnn_version: int
) -> Facts:
    """Section 2: one row per pinned backend and PyTorch's own choice; keys are variants."""
    rows: dict[str, dict[str, Any]] = {}
    for v, tr in traces.items():
        ops = last_step_ops(tr)
        sdpa = dict.fromkeys(
            tr.name(i) for i in tr.where(kind=Kind.CPU_OP, prefix="aten::_scaled_dot_product")
        )
        rows[v] = {
            "kernels": [o.name for o in ops if tr.kind[o.row] == Kind.KERNEL],
            "us": gpu_us(tr),
            "sdpa": list(sdpa),
        }
    for v in ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_default"):
        claim(
            len(rows[v]["kernels"]) == 1,
            f"{v}: the fused backend runs one attention kernel ({rows[v]['kernels']})",
        )
    claim(
        rows["sdpa_default"]["sdpa"] == ["aten::_scaled_dot_product_cudnn_attention"],
        "PyTorch chose cuDNN: the CPU lane shows aten::_scaled_dot_product_cudnn_attention",
    )
    claim(
        rows["sdpa_default"]["kernels"] == rows["sdpa_cudnn"]["kernels"],
        "the launch arrow ends on the pinned cuDNN run's kernel",
    )
    for v, mark in ATTENTION_KERNELS.items():  # the names the lesson tells readers to look for
        claim(
            mark in rows[v]["kernels"][0],
            f"{v}: the kernel's name holds cuDNN's sdpa, flash's flash_fwd or efficient's "
            f"fmha_cutlass ({rows[v]['kernels']})",
        )
    for v, op in (
        ("flash", "flash_attention"),
        ("efficient", "efficient_attention"),
        ("math", "attention_math"),
    ):
        claim(
            rows[f"sdpa_{v}"]["sdpa"] == [f"aten::_scaled_dot_product_{op}"],
            "the aten::_scaled_dot_product_… op on the CPU lane names the backend",
        )
    us = {v: r["us"] for v, r in rows.items()}
    claim(
        us["sdpa_cudnn"] < us["sdpa_flash"] < us["sdpa_efficient"] < us["sdpa_math"],
        "cuDNN's kernel was the fastest of the three, then flash, efficient and math",
    )
    claim(
        all(words.about(peaks[v], out_mib) for v in ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient")),
        "the fused backends' extra memory is about the output",
    )
    claim(
        peaks["sdpa_math"] > peaks["naive"] and us["sdpa_math"] > us["naive"],
        "the math backend is slower than writing it by hand, and needs more memory",
    )
    claim(
        cudnn_version > 91500,
        "cuDNN is recent enough for PyTorch's preference for it (check_prefer_cudnn_attention)",
    )
    flash = traces["sdpa_flash"]  # its launcher's cudaFuncSetAttribute, for exactly 48 KiB
    claim(
        kernel_record(flash)["shared_mem"] == 48 * 1024,
        "flash's block needs exactly 48 KiB of shared memory",
    )
    claim(
        "cudaFuncSetAttribute" in forward_cpu(flash)[1],
        "flash calls cudaFuncSetAttribute before its launch",
    )
    out: Facts = {
        "naive_x": us["naive"] / us["sdpa_cudnn"],
        "cudnn_version": f"{cudnn_version // 10000}.{cudnn_version // 100 % 100}.{cudnn_version % 100}",
    }
    for v, key in (
        ("sdpa_cudnn", "cudnn"),
        ("sdpa_flash", "flash"),
        ("sdpa_efficient", "eff"),
        ("sdpa_math", "math"),
    ):
        out |= {
            f"{key}_us": us[v],
            f"{key}_peak": peaks[v],
            f"{key}_x": us[v] / us["sdpa_cudnn"],
            f"{key}_kernel": f"`{shorten(rows[v]['kernels'][0])}`"
            if key != "math"
            else "many, fp32",
        }
    return out


def math_facts(tm: Trace, naive: Trace) -> Facts:
    """Section 3: where the math backend's GPU time goes, part by part beside the naive
    version's, and which parts make the gap between them."""
    ops = last_step_ops(tm)
    names = [o.issuer for o in ops]
    claim(
        names[:3] == ["aten::copy_"] * 3 and names[-1] == "aten::copy_",
        "the math backend converts q, k and v to fp32, and its output back",
    )
    claim(
        {"aten::isneginf", "aten::all", "aten::where", "aten::add_"} <= set(names),
        "the safe softmax runs isneginf, all and where; the float mask is added (add_)",
    )
    gemms = [o.name for o in ops if "gemm" in o.name]
    claim(
        len(gemms) == 2 and all("f32f32" in n and "ffma" in n for n in gemms),
        "its two GEMMs are cuBLAS's fp32 kernels, f32f32 and ffma in their names",
    )
    # five conversions: q, k, v to fp32, then two back, the longest of which (the
    # attention weights, a (seq x seq) matrix per head) outlasts the other four together
    casts = sorted((o.us for o in ops if o.issuer == "aten::copy_"), reverse=True)
    claim(
        len(casts) == 5 and words.most(casts[0], sum(casts)),
        "the conversions are mostly one cast of the fp32 attention weights back to bf16",
    )
    acc = math_account(tm)
    total = sum(acc.values())
    claim(
        acc["fp32 GEMMs"] < 0.45 * total,
        "the fp32 GEMMs take under 45 % of the math backend's GPU time",
    )
    claim(
        acc["safe softmax"] + acc["additive mask"] + acc["dtype conversions"] > acc["fp32 GEMMs"],
        "the safe softmax, the additive mask and the conversions together outlast the fp32 GEMMs",
    )
    by_hand = naive_account(naive)
    gap = total - sum(by_hand.values())
    diff = {part: acc[part] - by_hand[part] for part in acc}
    # Which of the two is larger differs by GPU (H200: the GEMMs; H100: the safe softmax),
    # so the claims are the ones true of both; the page names each GPU's share.
    claim(
        0.4 < diff["fp32 GEMMs"] / gap < 0.6,
        "the fp32 GEMMs make between two fifths and three fifths of the gap",
    )
    claim(
        words.most(diff["fp32 GEMMs"] + diff["safe softmax"], gap),
        "the fp32 GEMMs and the safe softmax together make most of the gap",
    )
    claim(
        words.most(diff["safe softmax"], gap - diff["fp32 GEMMs"]),
        "most of the rest is the safe softmax",
    )
    claim(
        min(diff["fp32 GEMMs"], diff["safe softmax"]) > diff["dtype conversions"] > 0,
        "the conversions add more, less than either",
    )
    claim(
        diff["additive mask"] < 0 and diff["the rest"] < 0,
        "the additive mask costs less than the five steps' copy and fill",
    )
    out: Facts = {"math_gap_us": gap, "math_gemm_gap_pct": 100 * diff["fp32 GEMMs"] / gap}
    for part, key in zip(acc, ("gemm", "safe", "mask", "conv", "rest"), strict=True):
        out |= {
            f"math_{key}_us": acc[part],
            f"math_{key}_pct": 100 * acc[part] / total,
            f"math_{key}_naive_us": by_hand[part],
            f"math_{key}_diff_us": diff[part],
        }
    return out


def compile_facts(
    tc: Trace, naive: Trace, cudnn: Trace, peak: float, shape: Sequence[int]
) -> Facts:
    """Section 4: the compiled five steps."""
    b, h, s, d = shape
    ops = last_step_ops(tc)
    fused = [o for o in ops if o.name.startswith("triton_")]
    claim(
        len(ops) == 4 and len(fused) == 1 and fused[0].name.startswith("triton_per_fused_"),
        "compiled, the elementwise steps between the GEMMs become one Triton kernel",
    )
    claim(sum(o.name.startswith("nvjet") for o in ops) == 2, "the GEMMs stay cuBLAS")
    # Inductor did not rewrite these five steps into SDPA: no SDPA op, no attention kernel
    claim(
        not len(tc.where(kind=Kind.CPU_OP, prefix="aten::_scaled_dot_product")),
        "this version was not rewritten: the trace has no aten::_scaled_dot_product_… op",
    )
    claim(
        not len(tc.where(kind=Kind.CPU_OP, name="aten::scaled_dot_product_attention")),
        "this version was not rewritten: the trace has no aten::scaled_dot_product_attention op",
    )
    claim(
        not any(mark in o.name for o in ops for mark in ATTENTION_KERNELS.values()),
        "the compiled trace shows no fused attention kernel",
    )
    claim(
        all(w in fused[0].name for w in ("softmax", "masked_fill", "mul", "triu")),
        "one Triton kernel scales, builds the mask itself, masks and takes the softmax",
    )
    total = sum(o.us for o in ops)
    claim(
        abs(peak - (b * h * s * s * 2 + b * h * s * d * 2) / 2**20) < 1,
        "its extra memory fell to one score matrix and the output",
    )
    claim(
        gpu_us(cudnn) < total < gpu_us(naive),
        "compiled: less time than by hand, but still slower than cuDNN's kernel",
    )
    return {
        "c_total_us": total,
        "c_fused_us": fused[0].us,
        "c_vs_naive": gpu_us(naive) / total,
        "c_vs_cudnn": total / gpu_us(cudnn),
        "c_peak": peak,
    }


def stream_facts(
    big: dict[str, Any], small: dict[str, Any], small_trace: Trace, kernel_us: dict[str, float]
) -> Facts:
    """Section 6: CPU cost per call in same-backend streams, at the series' shape (``big``)
    and a small one (timings.json of each); ``kernel_us``: GPU µs per forward, series' shape."""
    bs, ss = stream_stats(big), stream_stats(small)
    claim(
        not small["refused"] and not big["refused"],
        "no pinned backend refused the call, at either shape",
    )
    profiled = {region_calls(small_trace, v) for v in STREAM_VERSIONS}
    claim(len(profiled) == 1, "every backend's profiled burst holds the same number of calls")
    out: Facts = {"calls_per_stream": big["calls_per_stream"], "profiled_calls": profiled.pop()}
    for v in STREAM_VERSIONS:
        # the CPU time per call does not grow along a burst (as it would if calls waited on a
        # full launch queue): over the bursts, the median of last call over second under 1.25
        claim(
            bs[v].drift < 1.25 and ss[v].drift < 1.25,
            f"{v}: calls do not slow down along a burst: the bursts' median ratio of the last "
            f"call's CPU time to the second's is under 1.25 ({bs[v].drift}, {ss[v].drift})",
        )
        k = sum(region_kernels_us(small_trace, v)) / region_calls(small_trace, v)
        out |= {
            f"st_{v}_cpu": bs[v].cpu_us,
            f"st_{v}_wall": bs[v].wall_us,
            f"sm_{v}_cpu": ss[v].cpu_us,
            f"sm_{v}_wall": ss[v].wall_us,
            f"sm_{v}_kernel": k,
        }
    fused = ("cudnn", "flash", "efficient")
    for v in fused:
        claim(
            bs[v].cpu_us < kernel_us[v],
            f"{v}: at the series' shape the median call of each pinned fused backend costs the "
            "CPU less than its kernel costs the GPU",
        )
        # so a call takes just above its kernel's time (less than a fifth more)
        claim(
            kernel_us[v] < bs[v].wall_us < 1.2 * kernel_us[v],
            f"{v}: the wall time per call is just above the kernel's time (less than a fifth more)",
        )
        claim(
            float(out[f"sm_{v}_kernel"]) < 10,
            f"{v}: at the small shape the fused kernels last under 10 µs",
        )
        claim(
            ss[v].wall_us > 2 * float(out[f"sm_{v}_kernel"]),
            "at the small shape the wall time per call is at least twice the kernel's",
        )
        # the call's CPU time sets the pace: just above it (less than a quarter more)
        claim(
            ss[v].cpu_us < ss[v].wall_us < 1.25 * ss[v].cpu_us,
            f"{v}: small shape: the wall time per call is just above the CPU time "
            "(less than a quarter more)",
        )
    claim(
        bs["math"].cpu_us > 3 * max(bs[v].cpu_us for v in fused),
        "at the series' shape a math call costs the CPU over three times any fused backend's",
    )
    # at the small shape the kernel ranking and the per-call ranking are reversed
    small_k = [float(out[f"sm_{v}_kernel"]) for v in fused]
    claim(small_k == sorted(small_k), "cuDNN's kernel is the shortest and efficient's the longest")
    claim(
        ss["efficient"].wall_us < 0.95 * min(ss["cudnn"].wall_us, ss["flash"].wall_us),
        "at the small shape efficient's call was the fastest",
    )
    claim(
        bs["cudnn"].wall_us < 0.95 * min(bs["flash"].wall_us, bs["efficient"].wall_us),
        "at the series' shape cuDNN's call is the fastest here too",
    )
    out["sm_cudnn_eff_x"] = ss["cudnn"].wall_us / ss["efficient"].wall_us
    out["st_eff_cudnn_x"] = bs["efficient"].wall_us / bs["cudnn"].wall_us
    return out


def occupancy_facts(cudnn: Trace, flash: Trace) -> Facts:
    """Section 5: cuDNN's kernel reads 0 % for its shared memory, flash's a value."""
    rc, rf = kernel_record(cudnn), kernel_record(flash)
    claim(
        rc["occupancy_pct"] == 0 and rc["grid"] == 132,
        "cuDNN's kernel reads 0 %, one block per SM",
    )
    claim(
        rc["shared_mem"] > 49152 >= rf["shared_mem"] and rf["occupancy_pct"] > 0,
        "cuDNN's blocks use more than 48 KiB; flash's block stays within 48 KiB and reads a value",
    )
    return {"c_smem_kib": rc["shared_mem"] / 1024, "f_occ": rf["occupancy_pct"]}


def sweep_facts(t: Sweep) -> Facts:
    """Section 6: the same ranking at every shape of the sweep, each step beyond the spread."""
    shapes = sorted({(d, s) for (_, d, s) in t})
    seqs = sorted({s for _, s in shapes})
    claim(
        len(shapes) == 10 and seqs == [512, 1024, 2048, 4096, 8192],
        "the sweep timed every version at 10 shapes, sequences 512 to 8192",
    )
    order = ("cudnn", "flash", "efficient", "naive", "math")
    for d, s in shapes:
        claim(
            all(faster(t, a, b, d, s) for a, b in zip(order, order[1:], strict=False)),
            f"at every shape the order was cuDNN, flash, efficient, the five steps, math ({d}, {s})",
        )
    claim(
        not crossings(t, order, seqs),
        "no two versions swap places between sequence lengths, beyond the spread",
    )
    return {
        "n_shapes": len(shapes),
        "sw_flash_lo": min(t["flash", d, s][0] / t["cudnn", d, s][0] for d, s in shapes),
    }
