"""Part 4's decode analysis, shared by its three pages (``chapters/part4.md``,
``part4-notes.md`` and ``part4-kernels.md``): reading one decode token of a recording.

The recordings' protocols (:class:`Rec`, :class:`Session`) and headline results
(:func:`res`, :func:`tim`); one token's GPU ops, gaps, syncs and launch calls; what
``generate()`` runs per token (:func:`generate_facts`, one repeat); and a token's GPU ops
by kernel class (:func:`classify`, :class:`Run` for one repeat, :class:`Table` for every
repeat of a row), with each GEMV class's weight bytes (:func:`gemv_bytes`).
:mod:`_chapter` reads every repeat of the path's rows with these.

Only :mod:`tracereader`, numpy and the standard library here: no drawing, no site glue.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tracesite.facts import claim
from tracesite.words import about, beyond_spread, most, small_share

import tracereader
from tracereader import Kind, Trace, link, step_times
from tracereader._measure import StepTime

Facts = dict[str, Any]  # glue key -> float (a number) or str (Markdown)
EXAMPLE = "05_llm_decode"
#: The helper module of the example's stories: the model's SHAPES and the PROMPT's length.
COMMON = Path(__file__).resolve().parents[2] / "examples" / EXAMPLE / "_05_common.py"
SPEC_TBS = (
    4.8  # H200 SXM datasheet: HBM3e bandwidth, TB/s (the recordings' own share divides by it)
)
GOAL = 0.70  # the fraction of SPEC_TBS the chapter aims at
FINAL = "loop_untuned_8b"  # the final loop: GEMV and attention kernels of our own, tuning off
CHECK = (
    "logits_check_8b"  # the final loop with its logits kept, and timed with a host read per token
)


class Rec(Protocol):
    """One recorded repeat (``tracesite.recordings.Recording``), as far as this module reads it."""

    @property
    def results(self) -> dict[str, Any] | None: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def env(self) -> dict[str, Any]: ...
    @property
    def meta(self) -> dict[str, Any]: ...
    def trace(self) -> Trace: ...
    def timings(self) -> dict[str, Any] | None: ...
    def stamp_line(self) -> str: ...


Recs = Callable[[str], Sequence[Rec]]


class Session(Protocol):
    """An earlier recording session of a variant (``tracesite.recordings.Session``)."""

    @property
    def name(self) -> str: ...
    @property
    def repeats(self) -> Sequence[Rec]: ...
    @property
    def code_changed(self) -> str | None: ...


Sessions = Callable[[str], Sequence[Session]]


def res(r: Rec) -> dict[str, Any]:
    """A repeat's headline results (claimed present). The share of the specified bandwidth
    is recomputed from the bytes and the unrounded median time per token (``timings.json``):
    the recording rounds the share to 4 digits and the time to 0.1 µs, either of which can
    lift a repeat just under the goal to it."""
    claim(r.results is not None, "every repeat recorded its headline results")
    assert r.results is not None  # for the type checker: the claim above holds it
    out = dict(r.results)
    if "bytes_per_token" in out and "ms_per_token" in out:
        ms = out["ms_per_token"]  # rounded to 0.1 µs: the timings' own median where they agree
        t = r.timings()
        runs = t.get("ms_per_token") if t else None
        if isinstance(runs, list) and runs:  # the example's median: the upper middle one
            mid = sorted(runs)[len(runs) // 2]
            ms = mid if round(mid, 4) == ms else ms
        tbs = out["bytes_per_token"] / (ms * 1e-3) / 1e12
        claim(
            abs(tbs / SPEC_TBS - out["hbm_fraction_spec"]) < 1e-3,
            "each repeat's recorded share is its bytes over its time per token, against the "
            "H200's 4.8 TB/s",
        )
        out["spec_tbs"] = gpu_tbs(r)
        out["hbm_fraction_spec"] = tbs / out["spec_tbs"]  # against its own GPU's datasheet
    return out


def gpu_tbs(r: Rec) -> float:
    """The datasheet memory bandwidth (TB/s) of the GPU a repeat was recorded on."""
    sheet = tracereader.datasheet(str(r.env["gpu"]))
    claim(
        sheet is not None, f"the datasheet has a row for the GPU of every repeat ({r.env['gpu']!r})"
    )
    assert sheet is not None  # for the type checker: the claim above holds it
    return sheet.hbm_tbs


def tim(r: Rec) -> dict[str, Any]:
    """A repeat's unprofiled timings (claimed present)."""
    t = r.timings()
    claim(t is not None, "every repeat recorded its unprofiled timings")
    assert t is not None  # for the type checker: the claim above holds it
    return t


# ---------------------------------------------------------------------- reading one token


def rng(values: Sequence[float], fmt: str = "{:.0f}") -> str:
    """'median (min–max)' of one number per repeat."""
    return (
        fmt.format(statistics.median(values))
        + " ("
        + fmt.format(min(values))
        + "–"
        + fmt.format(max(values))
        + ")"
    )


def lo_hi(values: Sequence[float], fmt: str = "{:,.0f}") -> str:
    """'min–max' of one number per repeat (one number where both print the same)."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def decode_steps(tr: Trace) -> list[StepTime]:
    """The decode tokens' profiler steps (step 0, the prefill, is trimmed from most traces)."""
    return [s for s in step_times(tr) if s.name != "ProfilerStep#0"]


def token_ops(tr: Trace, step: str = "ProfilerStep#2") -> list[int]:
    """The GPU ops one step launched, in the order they ran."""
    ops = link(tr).gpu_ops_of(tr.step(step).event)
    return [int(g) for g in ops[np.argsort(tr.ts_ns[ops], kind="stable")]]


def days(stamps: Iterable[Any]) -> list[str]:
    """The days (UTC, ``YYYY-MM-DD``) of ``recorded_at`` stamps, sorted, each once."""
    return sorted({str(t)[:10] for t in stamps})


def gpu_period_us(tr: Trace) -> list[float]:
    """Per decode token: the GPU time from its first op to the next token's first op."""
    starts = [int(tr.ts_ns[token_ops(tr, s.name)[0]]) for s in decode_steps(tr)]
    return [(b - a) / 1e3 for a, b in zip(starts, starts[1:], strict=False)]


def top_kernels(tr: Trace, step: str, n: int = 3) -> list[tuple[str, float]]:
    """The step's ``n`` kernels with the most GPU time: (name, µs)."""
    by: dict[str, float] = {}
    for g in token_ops(tr, step):
        if tr.kind[g] == Kind.KERNEL:
            by[tr.name(g)] = by.get(tr.name(g), 0.0) + float(tr.dur_ns[g]) / 1e3
    return sorted(by.items(), key=lambda kv: -kv[1])[:n]


def frames_around(tr: Trace, i: int, n: int = 3) -> list[str]:
    """The ``n`` innermost Python frames enclosing event ``i`` (traces kept with frames)."""
    frames = tr.where(kind=Kind.PYTHON)
    around = frames[(tr.ts_ns[frames] <= tr.ts_ns[i]) & (tr.end_ns[i] <= tr.end_ns[frames])]
    return [tr.name(int(j)) for j in around[-n:]]


def is_gemv(name: str) -> bool:
    """GEMV kernels: Inductor's own (reductions over a transposed weight, ``t``) or the
    example's ``gemv_kernel``."""
    return name == "gemv_kernel" or (
        name.startswith("triton_red") and "_t_" in name and "argmax" not in name
    )


def calls_per_step(tr: Trace, name: str) -> list[int]:
    """How many ``name`` calls each decode step made."""
    steps = [tr.step(s.name) for s in decode_steps(tr)]
    return [len(tr.where(name=name, within=(s.start_ns, s.end_ns))) for s in steps]


TILE = re.compile(r"nvjet_sm90_tst_(\d+)x(\d+)_")


def tile(name: str) -> tuple[int, int] | None:
    """The first MxN field after ``tst_`` in an nvjet kernel's name."""
    m = TILE.match(name)
    return (int(m[1]), int(m[2])) if m else None


# The launch calls of one token of our compiled loop, each with the CPU ops around it: one
# kernel copying the token and position into the graph's input buffers, the graph launch,
# and the two copies of the example's ``token.clone(), position.clone()`` of its outputs.
LOOP_CALLS = [
    ("cudaLaunchKernel", ("Torch-Compiled Region: 0/0", "aten::_foreach_copy_")),
    ("cudaGraphLaunch", ("Torch-Compiled Region: 0/0",)),
    ("cudaMemcpyAsync", ("aten::clone", "aten::copy_")),
    ("cudaMemcpyAsync", ("aten::clone", "aten::copy_")),
]


def launch_calls(tr: Trace, step: str) -> list[tuple[str, tuple[str, ...]]]:
    """The step's launch and copy calls, each with the names of the CPU ops enclosing it."""
    lo, hi = _in(tr, step)
    cpu = tr.where(kind=Kind.CPU_OP, within=(lo, hi))
    out = []
    for i in tr.where(kind=Kind.RUNTIME, within=(lo, hi)):
        if tr.name(int(i)) in ("cudaLaunchKernel", "cudaGraphLaunch", "cudaMemcpyAsync"):
            around = cpu[(tr.ts_ns[cpu] <= tr.ts_ns[i]) & (tr.end_ns[i] <= tr.end_ns[cpu])]
            out.append((tr.name(int(i)), tuple(tr.name(int(j)) for j in around)))
    return out


def first_diff(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))


def _in(tr: Trace, step: str) -> tuple[int, int]:
    s = tr.step(step)
    return s.start_ns, s.end_ns


# ---------------------------------------------------------------------- section 1, per repeat


def generate_facts(dyn: Rec, static: Rec, shape: dict[str, int]) -> Facts:
    """``generate()`` with a dynamic cache, one repeat (``shape``: the model's): prefill and
    one decoded token, the host syncs and copies of a token and who asks for them, and what
    runs outside the model's forward."""
    tr = dyn.trace()
    st = step_times(tr)
    claim(
        st[0].name == "ProfilerStep#0" and len(st) == 2,
        "the download keeps steps 0 and 2: the prefill and one decode token",
    )
    pre, dec = st[0], st[1:]
    claim(
        all(s.kernels == dec[0].kernels for s in dec), "every decode step launches as many kernels"
    )
    claim(about(dec[0].kernels, pre.kernels), "Both steps launch about as many kernels")
    gaps = tracereader.gaps(tr, window=_in(tr, "ProfilerStep#2"))
    causes = [g.cause for g in gaps]
    claim(
        max(set(causes), key=causes.count) == "launch"
        and most(causes.count("launch"), len(causes)),
        "Most gaps are launch: the CPU was on its way to the next launch call",
    )
    # The launch call itself is short: most of the GPU's idle time passes before the CPU
    # reaches the launch call of the kernel that ends the gap.
    lk = link(tr)
    idle_ns = sum(g.end_ns - g.start_ns for g in gaps)
    before_ns = sum(
        min(g.end_ns, max(g.start_ns, int(tr.ts_ns[lk.launch[g.next_op]]))) - g.start_ns
        for g in gaps
        if lk.launch[g.next_op] >= 0
    )
    claim(
        most(before_ns, idle_ns),
        "The launch call is short: most idle time passes before the CPU reaches it",
    )
    ms = float(res(dyn)["ms_per_token"])
    claim(
        all(most(s.cpu_us - s.gpu_busy_us, s.cpu_us) for s in dec),
        "In the picture the GPU is mostly hatched, waiting for launches",
    )
    claim(
        all(s.cpu_us > 1e3 * ms for s in dec),
        "Under the profiler the CPU spent longer on the token than a token takes without it",
    )
    claim(
        small_share(statistics.median(s.gpu_busy_us for s in dec) / 1e3, ms),
        "the GPU is busy a small share of the unprofiled token: overhead-bound work",
    )
    pre_top = top_kernels(tr, "ProfilerStep#0")
    pre_tile = tile(pre_top[0][0])
    claim(
        pre_tile and 8 not in pre_tile,
        "the prefill's kernel with the most GPU time is an nvjet GEMM, its tile wider than 8",
    )
    assert pre_tile is not None  # for the type checker: the claim above holds it
    dec_nvjet = [tr.name(g) for g in token_ops(tr) if tile(tr.name(g))]
    tiles = [t for t in map(tile, dec_nvjet) if t]
    # Decode: one side of every tile is 8. The GEMMs run per layer as q, k, v, o, gate, up,
    # down (the nn.Module Linear_<i> that launched each), then the LM head. In ``TNT`` kernels
    # the 8 (N) is the row's side; the grid covers the outputs M at a time (a multiple of it
    # when split over K). In ``TNN`` kernels, exactly the k and v projections, the 8 (M) is
    # the weight's side: one block per 8 outputs; the row is padded to N.
    claim(
        dec_nvjet and all(n.endswith(("TNT", "TNN")) for n in dec_nvjet),
        "every nvjet kernel of the decode step ends in TNT or TNN",
    )
    claim(
        all(
            t[1] == 8 if n.endswith("TNT") else t[0] == 8
            for n, t in zip(dec_nvjet, tiles, strict=True)
        ),
        "every nvjet kernel has a tile with one side 8: the N of the TNT kernels, the M of the "
        "TNN ones",
    )
    tnn = sum(n.endswith("TNN") for n in dec_nvjet)
    h, kv = shape["hidden_size"], shape["num_key_value_heads"] * shape["head_dim"]
    q, i = shape["num_attention_heads"] * shape["head_dim"], shape["intermediate_size"]
    outs = [q, kv, kv, h, i, i, h] * shape["num_hidden_layers"]
    gemm = [g for g in token_ops(tr) if tile(tr.name(g))]
    claim(
        len(gemm) == len(outs) + 1,
        "the decode step runs one nvjet GEMM per projection of every layer, and one for the LM "
        "head",
    )
    linears = tr.where(prefix="nn.Module: Linear_")
    for k, (g, n, t, out) in enumerate(
        zip(gemm, dec_nvjet, tiles, outs, strict=False)
    ):  # all but the LM head
        la = link(tr).launch[g]
        mods = linears[(tr.ts_ns[linears] <= tr.ts_ns[la]) & (tr.end_ns[la] <= tr.end_ns[linears])]
        claim(
            len(mods) == 1 and int(tr.name(int(mods[0])).rsplit("_", 1)[1]) % 7 == k % 7,
            "each GEMM launches inside one Linear module, in the layer's order q, k, v, o, gate, "
            "up, down",
        )
        grid = int(tr.extra["grid"][g])
        if n.endswith("TNN"):
            claim(
                k % 7 in (1, 2) and grid == out // t[0],
                "the TNN ones, the k and v projections, hold their outputs 8 at a time, one block "
                "each",
            )
        else:
            claim(
                k % 7 not in (1, 2) and grid % (out // t[0]) == 0,
                "the other projections' TNT kernels cover their outputs a tile at a time",
            )
    tnn_tiles = {t for n, t in zip(dec_nvjet, tiles, strict=True) if n.endswith("TNN")}
    claim(
        tnn == 2 * shape["num_hidden_layers"] and len(tnn_tiles) == 1,
        "the kernels ending in TNN are k and v, two per layer, all with one tile",
    )
    n_syncs = calls_per_step(tr, "cudaStreamSynchronize")
    claim(len(set(n_syncs)) == 1 and n_syncs[0] == 2, "Each token synchronizes twice with the host")
    # The two syncs return within microseconds: the CPU is behind, the GPU already idle. The
    # gaps counted as ``sync`` are the ones either side of their device-to-host copies.
    sync_us = [float(tr.end_ns[i] - tr.ts_ns[i]) / 1e3 for i in syncs(tr)]
    claim(max(sync_us) < 50, "Both last at most N µs: the GPU is already idle when the CPU asks")
    step_gaps = tracereader.gaps(tr, window=_in(tr, "ProfilerStep#2"))
    claim(
        {g.cause_event for g in step_gaps if g.cause == "sync"} == set(syncs(tr)),
        "the sync gaps are those a synchronize call of the step overlapped, each call at least one",
    )
    big = max(tracereader.gaps(tr, window=sync_window(tr)), key=lambda g: g.gap_us)
    # on generate()'s way into the next forward: preparing its inputs, or the model's call
    # wrapper (the frame the profiler saw last differs between repeats)
    claim(
        big.cause == "python"
        and any(
            w in tr.name(big.cause_event)
            for w in ("prepare_inputs_for_generation", "output_capturing.py")
        ),
        "the longest such gap is on generate()'s way into the next forward",
    )
    claim(
        big.gap_us == max(g.gap_us for g in step_gaps),
        "The longest wait is Python code of generate() that launches nothing",
    )
    in2 = _in(tr, "ProfilerStep#2")
    # most of the python gaps' time falls inside the model's forward, not generate()'s code
    model = [(int(tr.ts_ns[i]), int(tr.end_ns[i]))
             for i in tr.where(prefix="nn.Module: LlamaForCausalLM", within=in2)]  # fmt: skip
    py_gaps = [g for g in step_gaps if g.cause == "python"]
    in_model = sum(g.gap_us for g in py_gaps if any(a <= g.start_ns < b for a, b in model))
    claim(
        most(in_model, sum(g.gap_us for g in py_gaps)),
        "python gaps: here mostly the model's own Python between its ops",
    )
    callers = [
        frames_around(tr, int(i)) for i in tr.where(name="cudaStreamSynchronize", within=in2)
    ]
    claim(len(callers) == 2, "the kept Python frames name the callers of the token's two syncs")
    claim(
        any("generation/utils.py" in f for f in callers[0]),
        "The first is generate() itself, reading back whether every sequence has finished",
    )
    claim(
        any("_ignore_causal_mask_sdpa" in f for f in callers[1]),
        "The second is the attention-mask code, whose Python if decides whether it can skip the "
        "causal mask",
    )
    copies: dict[str, int] = {}
    for g in token_ops(tr):
        if tr.kind[g] == Kind.MEMCPY:
            kind = "DtoH" if "DtoH" in tr.name(g) else "DtoD" if "DtoD" in tr.name(g) else "other"
            copies[kind] = copies.get(kind, 0) + 1
    claim(
        set(copies) == {"DtoH", "DtoD"} and copies["DtoH"] == 2,
        "Those are the step's 2 device-to-host copies; its other copies are device-to-device",
    )
    claim(
        set(calls_per_step(static.trace(), "cudaStreamSynchronize")) == {1},
        "With a static cache (generate_static_1b) one synchronize per token is left",
    )
    copy_callers = set()
    for i in tr.where(name="cudaMemcpyAsync", within=in2):
        mine = [f for f in frames_around(tr, int(i), 12) if f.startswith("transformers/")]
        copy_callers.add(mine[-1].split("(")[0])
    claim(
        copy_callers
        == {
            "transformers/generation/utils.py",
            "transformers/masking_utils.py",
            "transformers/generation/logits_process.py",
            "transformers/generation/stopping_criteria.py",
        },
        "the copies come from generate()'s input preparation, the mask code, its logits "
        f"processors and its end-of-sequence check ({copy_callers})",
    )
    # Every CPU op of the token outside the model's own forward is generate()'s.
    fwd = tr.where(prefix="nn.Module: LlamaForCausalLM", within=in2)
    claim(len(fwd) == 1, "step 2 runs the model's forward once")
    lo, hi = int(tr.ts_ns[fwd[0]]), int(tr.end_ns[fwd[0]])
    cpu_ops = [int(i) for i in tr.where(kind=Kind.CPU_OP, within=in2)]
    top_level = [
        i
        for i in cpu_ops
        if not any(
            tr.ts_ns[j] < tr.ts_ns[i] and tr.end_ns[i] <= tr.end_ns[j] for j in cpu_ops if j != i
        )
    ]
    outside = [i for i in top_level if not (lo <= tr.ts_ns[i] and tr.end_ns[i] <= hi)]
    names = sorted({tr.name(i) for i in outside})
    claim(
        len(outside) > 10 and "aten::argmax" in names,
        "top-level CPU ops ran outside the model's forward, among them the greedy argmax",
    )
    return {
        "dyn_pre_kernels": pre.kernels,
        "dyn_dec_kernels": statistics.median(s.kernels for s in dec),
        "dyn_dec_cpu_ms": statistics.median(s.cpu_us for s in dec) / 1e3,
        "dyn_dec_busy_ms": statistics.median(s.gpu_busy_us for s in dec) / 1e3,
        "dyn_busy_pct": 100 * statistics.median(s.gpu_busy_us for s in dec) / 1e3 / ms,
        "dyn_unprof_ms": ms,
        "dec_nvjet": len(dec_nvjet),
        "dec_tnn": tnn,
        "tnn_n": tnn_tiles.pop()[1],
        "kv_out": kv,
        "eager_sync_us": max(sync_us),
        "dyn_cpu_x": statistics.median(s.cpu_us for s in dec) / 1e3 / ms,
        "py_gap_us": big.gap_us,
        "dec_tiles": ", ".join(f"`{a}x{b}`" for a, b in sorted(set(tiles))),
        "pre_tile": "`" + "x".join(map(str, pre_tile)) + "`",
        "dyn_dtoh": copies["DtoH"],
        "dyn_dtod": copies["DtoD"],
        "gen_outside_ops": len(outside),
        "gen_inside_ops": len(top_level) - len(outside),
        "gen_outside_us": sum(float(tr.end_ns[i] - tr.ts_ns[i]) / 1e3 for i in outside),
        "fwd_ms": (hi - lo) / 1e6,
        "gen_outside_names": ", ".join(f"`{n}`" for n in names[:12]),
    }


# ---------------------------------------------------------------------- classes of one token


CLASSES = (
    "gate_up",
    "down",
    "qkv",
    "o",
    "lm_head",
    "attention",
    "norms, argmax",
    "pointwise, copies",
)
OTHER = ("attention", "norms, argmax", "pointwise, copies")  # the classes that are not GEMVs
GEMV_CLASSES = ("qkv", "o", "gate_up", "down")


def gemv_bytes(shape: dict[str, int]) -> dict[str, int]:
    """Weight bytes each GEMV class reads, from the model's shape (bf16)."""
    q, kv = (
        shape["num_attention_heads"] * shape["head_dim"],
        shape["num_key_value_heads"] * shape["head_dim"],
    )
    h, i = shape["hidden_size"], shape["intermediate_size"]
    return {
        "qkv": 2 * h * (q + 2 * kv),
        "o": 2 * q * h,
        "gate_up": 2 * h * 2 * i,
        "down": 2 * i * h,
        "lm_head": 2 * h * shape["vocab_size"],
    }


def classify(tr: Trace, ops: list[int], layers: int) -> list[tuple[str, float, int]]:
    """Each GPU op of one token of a fused loop, by class: (class, µs, row). GEMVs
    (``is_gemv``) by layer type, from their order: per layer qkv, o, gate_up, down; the last
    is the LM head. Attention is what runs between a layer's qkv and o GEMVs, except
    pointwise kernels (the rotary embedding, the cache writes, copies) and the rotary
    embedding's small matrix product where cuBLAS runs it (``gemm`` in the name), both
    counted as pointwise work; a kernel into which Inductor fused some of that with
    attention work (a reduction, or ``scaled_dot_product`` in the name) counts as attention,
    and so does the example's own ``attention_kernel``."""
    out: list[list[Any]] = []
    for g in ops:
        name = tr.name(g)
        kind = (
            "gemv"
            if is_gemv(name)
            else "norms, argmax"
            if name.startswith("triton_red")
            else "pointwise, copies"
        )
        out.append([kind, float(tr.dur_ns[g]) / 1e3, g])
    gemvs = [row for row in out if row[0] == "gemv"]
    claim(
        len(gemvs) == 4 * layers + 1,
        f"a token runs four GEMVs per layer and one more at the end ({len(gemvs)})",
    )
    for i, row in enumerate(gemvs[:-1]):
        row[0] = GEMV_CLASSES[i % 4]
    gemvs[-1][0] = "lm_head"
    where = {id(row): i for i, row in enumerate(out)}
    for q, o in zip(gemvs[0:-1:4], gemvs[1::4], strict=True):
        between = out[where[id(q)] + 1 : where[id(o)]]
        for row in between:
            name = tr.name(row[2])
            if "gemm" in name:
                row[0] = "pointwise, copies"
            elif not (name.startswith("triton_poi") and "scaled_dot_product" not in name):
                row[0] = "attention"
        attention = [tr.name(row[2]) for row in between if row[0] == "attention"]
        claim(
            len(attention) in (3, 4) or attention == ["attention_kernel"],
            "attention, between a layer's q/k/v and output GEMVs, is three or four kernels, or "
            f"attention_kernel ({attention})",
        )
    return [(str(c), float(us), int(g)) for c, us, g in out]


class Run:
    """One repeat of a fused loop, its step-2 token by class."""

    def __init__(self, r: Rec, shape: dict[str, int], layers: int) -> None:
        tr = r.trace()
        self.t = {c: 0.0 for c in CLASSES}  # µs per class
        self.n = {c: 0 for c in CLASSES}  # ops per class
        for c, us, _ in classify(tr, token_ops(tr), layers):
            self.t[c] += us
            self.n[c] += 1
        self.token_us = float(res(r)["ms_per_token"]) * 1e3  # unprofiled
        self.period_us = gpu_period_us(tr)[1]  # profiled: step 2's first GPU op to step 3's
        nb = gemv_bytes(shape)
        self.gbs = {c: nb[c] * self.n[c] / (self.t[c] * 1e-6) / 1e9 for c in nb}
        self.tps = float(res(r)["tokens_per_s"])

    @property
    def rest(self) -> float:
        """The rest of the token: unprofiled time minus the GPU time of every class."""
        return self.token_us - sum(self.t[c] for c in CLASSES)

    @property
    def gemvs(self) -> float:
        return sum(self.t[c] for c in ("gate_up", "down", "qkv", "o", "lm_head"))

    @property
    def small(self) -> float:
        return self.t["norms, argmax"] + self.t["pointwise, copies"]


class Table:
    """Every repeat of one fused loop, by class: the medians and the Markdown table."""

    def __init__(self, runs: list[Run]) -> None:
        self.runs = runs
        self.med = {c: statistics.median(x.t[c] for x in runs) for c in CLASSES}
        self.gbs = {c: statistics.median(x.gbs[c] for x in runs) for c in runs[0].gbs}
        self.token = statistics.median(x.token_us for x in runs)
        self.rest = statistics.median(x.rest for x in runs)
        self.stretch = statistics.median(x.period_us / x.token_us - 1 for x in runs)

    def lohi(self, c: str) -> str:
        return lo_hi([x.t[c] for x in self.runs])

    def below(self, other: Table, part: str, sentence: str) -> tuple[str, str]:
        """Claim that every repeat of this loop spent less on ``part`` (a :class:`Run`
        property: ``gemvs``, ``small``, ``rest``) than every repeat of ``other``; return both
        ranges, this loop's first."""
        mine = [float(getattr(x, part)) for x in self.runs]
        theirs = [float(getattr(x, part)) for x in other.runs]
        claim(beyond_spread(theirs, mine), sentence)
        return lo_hi(mine), lo_hi(theirs)

    def spread_pct(self, c: str) -> float:
        """How much slower the slowest repeat ran one class than the fastest, in %."""
        return 100 * (max(x.t[c] for x in self.runs) / min(x.t[c] for x in self.runs) - 1)

    def markdown(self, beside: tuple[str, Table] | None = None) -> str:
        """The table; ``beside``: another GPU's table of the same loop, as two more columns."""
        other = beside[1] if beside else None

        def more(c: str | None) -> str:
            if other is None:
                return ""
            if c is None:  # the rest of the token
                return f" {other.rest:,.0f} | |"
            gbs = f"{other.gbs[c]:,.0f}" if c in other.gbs else ""
            return f" {other.med[c]:,.0f} | {gbs} |"

        rows = [
            f"| {c} | {self.runs[0].n[c]} | {self.med[c]:,.0f} | {100 * self.med[c] / self.token:.1f} % | "
            + (f"{self.gbs[c]:,.0f}" if c in self.gbs else "")
            + " |"
            + more(c)
            for c in CLASSES
        ]
        rows.append(
            f"| the rest of the token | | {self.rest:,.0f} | {100 * self.rest / self.token:.1f} % | |"
            + more(None)
        )
        head = "| class | ops | µs per token | of the token | GB/s |"
        rule = "|---|---:|---:|---:|---:|"
        if beside:
            head += f" {beside[0]} µs | {beside[0]} GB/s |"
            rule += "---:|---:|"
        return f"{head}\n{rule}\n" + "\n".join(rows)


# ---------------------------------------------------------------------- what the pictures show
# (the windows the pages draw; generate_facts reads the syncs too)


def syncs(tr: Trace, step: str = "ProfilerStep#2") -> list[int]:
    """The step's ``cudaStreamSynchronize`` calls, in time order."""
    return [int(i) for i in tr.where(name="cudaStreamSynchronize", within=_in(tr, step))]


def sync_window(tr: Trace, after_us: float = 400) -> tuple[int, int]:
    """From step 2's start to a little after its last synchronize call."""
    step = tr.step("ProfilerStep#2")
    return step.start_ns, int(tr.end_ns[syncs(tr)[-1]]) + int(after_us * 1e3)
