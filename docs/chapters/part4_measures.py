"""The computations behind Part 4 (``part4.md`` and its lab notes ``part4-notes.md`` and
``part4-kernels.md``).

:class:`Chapter` reads every repeat of the example's variants through a ``recs`` getter
(variant name -> its recorded repeats) and, for the rows recorded in several sessions, a
``sessions`` getter (variant name -> its earlier sessions, oldest first), asserts each claim
the pages make on every repeat of every session,
and returns the numbers (floats) and Markdown snippets (str) the pages glue, keyed by the
names the prose uses. A few functions take one repeat (:func:`generate_facts`,
:func:`packed_facts`): the pages call them in ``%%repeats`` cells. Windows and events for
the pictures are chosen here too (``*_window``), drawn by the pages.
``tests/site/test_part4_measures.py`` runs all of it against the recordings.

Only :mod:`tracereader`, numpy and the standard library here: no drawing, no site glue.
"""

from __future__ import annotations

import calendar
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from typing import Any, Protocol

import numpy as np

import tracereader
from tracereader import Kind, Trace, link, step_times
from tracereader._measure import StepTime

Facts = dict[str, Any]  # glue key -> float (a number) or str (Markdown)
SPEC_TBS = 4.8  # H200 SXM datasheet: HBM3e bandwidth, TB/s
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
#: The variants that sweep the kernels' launch settings.
GEMV_SWEEP, ATTENTION_SWEEP = "gemv_settings_8b", "attention_settings_8b"
#: The rows recorded in several sessions, whose sessions the pages compare.
SESSION_ROWS = ("loop_kernels_8b", "loop_kernels_sdpa_8b", "loop_attention_8b", FINAL)


def res(r: Rec) -> dict[str, Any]:
    """A repeat's headline results (asserted present). The share of the specified bandwidth
    is recomputed from the bytes and the unrounded median time per token (``timings.json``):
    the recording rounds the share to 4 digits and the time to 0.1 µs, either of which can
    lift a repeat just under the goal to it."""
    assert r.results is not None
    out = dict(r.results)
    if "bytes_per_token" in out and "ms_per_token" in out:
        ms = out["ms_per_token"]  # rounded to 0.1 µs: the timings' own median where they agree
        t = r.timings()
        runs = t.get("ms_per_token") if t else None
        if isinstance(runs, list) and runs:  # the example's median: the upper middle one
            mid = sorted(runs)[len(runs) // 2]
            ms = mid if round(mid, 4) == ms else ms
        tbs = out["bytes_per_token"] / (ms * 1e-3) / 1e12
        assert abs(tbs / SPEC_TBS - out["hbm_fraction_spec"]) < 1e-3
        out["hbm_fraction_spec"] = tbs / SPEC_TBS
    return out


def tim(r: Rec) -> dict[str, Any]:
    """A repeat's unprofiled timings (asserted present)."""
    t = r.timings()
    assert t is not None
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


def token_gaps_us(tr: Trace, step: str = "ProfilerStep#2") -> np.ndarray:
    """The GPU's idle time between consecutive GPU ops of one step, µs each (profiled)."""
    ops = token_ops(tr, step)
    ends = np.maximum.accumulate(tr.end_ns[ops])
    return np.clip((tr.ts_ns[ops][1:] - ends[:-1]) / 1e3, 0, None)


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


def _region(tr: Trace, name: str) -> int:
    """The CPU event of the ``record_function`` region ``name`` (one in the trace)."""
    (event,) = [int(i) for i in tr.where(name=name) if tr.kind[i] == Kind.USER_ANNOTATION]
    return event


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
    assert st[0].name == "ProfilerStep#0" and len(st) == 2  # the prefill, one decode token
    pre, dec = st[0], st[1:]
    assert all(s.kernels == dec[0].kernels for s in dec)
    assert abs(pre.kernels - dec[0].kernels) < 0.1 * pre.kernels  # about as many kernels
    gaps = tracereader.gaps(tr, window=_in(tr, "ProfilerStep#2"))
    causes = [g.cause for g in gaps]
    assert (
        max(set(causes), key=causes.count) == "launch" and causes.count("launch") > len(causes) / 2
    )
    ms = float(res(dyn)["ms_per_token"])
    assert all(s.gpu_busy_us < 0.2 * s.cpu_us for s in dec)  # the GPU mostly waits
    assert all(
        s.cpu_us > 1e3 * ms for s in dec
    )  # the profiler (and its Python frames) slows the CPU
    assert statistics.median(s.gpu_busy_us for s in dec) / 1e3 < 0.3 * ms
    pre_top = top_kernels(tr, "ProfilerStep#0")
    pre_tile = tile(pre_top[0][0])
    assert pre_tile and 8 not in pre_tile  # prefill: a wide nvjet tile
    dec_nvjet = [tr.name(g) for g in token_ops(tr) if tile(tr.name(g))]
    tiles = [t for t in map(tile, dec_nvjet) if t]
    # Decode: one side of every tile is 8. The GEMMs run per layer as q, k, v, o, gate, up,
    # down (the nn.Module Linear_<i> that launched each), then the LM head. In ``TNT`` kernels
    # the 8 (N) is the row's side; the grid covers the outputs M at a time (a multiple of it
    # when split over K). In ``TNN`` kernels, exactly the k and v projections, the 8 (M) is
    # the weight's side: one block per 8 outputs; the row is padded to N.
    assert dec_nvjet and all(n.endswith(("TNT", "TNN")) for n in dec_nvjet)
    assert all(
        t[1] == 8 if n.endswith("TNT") else t[0] == 8 for n, t in zip(dec_nvjet, tiles, strict=True)
    )
    tnn = sum(n.endswith("TNN") for n in dec_nvjet)
    h, kv = shape["hidden_size"], shape["num_key_value_heads"] * shape["head_dim"]
    q, i = shape["num_attention_heads"] * shape["head_dim"], shape["intermediate_size"]
    outs = [q, kv, kv, h, i, i, h] * shape["num_hidden_layers"]
    gemm = [g for g in token_ops(tr) if tile(tr.name(g))]
    assert len(gemm) == len(outs) + 1
    linears = tr.where(prefix="nn.Module: Linear_")
    for k, (g, n, t, out) in enumerate(
        zip(gemm, dec_nvjet, tiles, outs, strict=False)
    ):  # all but the LM head
        la = link(tr).launch[g]
        mods = linears[(tr.ts_ns[linears] <= tr.ts_ns[la]) & (tr.end_ns[la] <= tr.end_ns[linears])]
        assert len(mods) == 1 and int(tr.name(int(mods[0])).rsplit("_", 1)[1]) % 7 == k % 7
        grid = int(tr.extra["grid"][g])
        if n.endswith("TNN"):
            assert k % 7 in (1, 2) and grid == out // t[0]
        else:
            assert k % 7 not in (1, 2) and grid % (out // t[0]) == 0
    tnn_tiles = {t for n, t in zip(dec_nvjet, tiles, strict=True) if n.endswith("TNN")}
    assert tnn == 2 * shape["num_hidden_layers"] and len(tnn_tiles) == 1
    n_syncs = calls_per_step(tr, "cudaStreamSynchronize")
    assert len(set(n_syncs)) == 1 and n_syncs[0] == 2
    # The two syncs return within microseconds: the CPU is behind, the GPU already idle. The
    # gaps counted as ``sync`` are the ones either side of their device-to-host copies.
    sync_us = [float(tr.end_ns[i] - tr.ts_ns[i]) / 1e3 for i in syncs(tr)]
    assert max(sync_us) < 50
    step_gaps = tracereader.gaps(tr, window=_in(tr, "ProfilerStep#2"))
    assert {g.cause_event for g in step_gaps if g.cause == "sync"} == set(syncs(tr))
    big = max(tracereader.gaps(tr, window=sync_window(tr)), key=lambda g: g.gap_us)
    assert big.cause == "python" and "prepare_inputs_for_generation" in tr.name(big.cause_event)
    assert big.gap_us == max(g.gap_us for g in step_gaps)  # the token's longest wait
    in2 = _in(tr, "ProfilerStep#2")
    # most of the python gaps' time falls inside the model's forward, not generate()'s code
    model = [(int(tr.ts_ns[i]), int(tr.end_ns[i]))
             for i in tr.where(prefix="nn.Module: LlamaForCausalLM", within=in2)]  # fmt: skip
    py_gaps = [g for g in step_gaps if g.cause == "python"]
    in_model = sum(g.gap_us for g in py_gaps if any(a <= g.start_ns < b for a, b in model))
    assert in_model > 0.5 * sum(g.gap_us for g in py_gaps)
    callers = [
        frames_around(tr, int(i)) for i in tr.where(name="cudaStreamSynchronize", within=in2)
    ]
    assert len(callers) == 2
    assert any("generation/utils.py" in f for f in callers[0])  # generate()'s stop flag
    assert any("_ignore_causal_mask_sdpa" in f for f in callers[1])  # the mask's .item()
    copies: dict[str, int] = {}
    for g in token_ops(tr):
        if tr.kind[g] == Kind.MEMCPY:
            kind = "DtoH" if "DtoH" in tr.name(g) else "DtoD" if "DtoD" in tr.name(g) else "other"
            copies[kind] = copies.get(kind, 0) + 1
    assert set(copies) == {"DtoH", "DtoD"} and copies["DtoH"] == 2
    assert set(calls_per_step(static.trace(), "cudaStreamSynchronize")) == {1}  # no mask check
    copy_callers = set()
    for i in tr.where(name="cudaMemcpyAsync", within=in2):
        mine = [f for f in frames_around(tr, int(i), 12) if f.startswith("transformers/")]
        copy_callers.add(mine[-1].split("(")[0])
    assert copy_callers == {
        "transformers/generation/utils.py",
        "transformers/masking_utils.py",
        "transformers/generation/logits_process.py",
        "transformers/generation/stopping_criteria.py",
    }, copy_callers
    # Every CPU op of the token outside the model's own forward is generate()'s.
    fwd = tr.where(prefix="nn.Module: LlamaForCausalLM", within=in2)
    assert len(fwd) == 1
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
    assert len(outside) > 10 and "aten::argmax" in names
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


def packed_facts(short: Rec, packed: Rec) -> Facts:
    """Packed GQA, one repeat: the attention work per token before and after."""

    def attention_ops(r: Rec) -> tuple[Trace, list[int]]:
        tr = r.trace()
        return tr, [g for g in token_ops(tr) if "sdpa" in tr.name(g) or "attention" in tr.name(g)]

    tr, att = attention_ops(short)
    tr2, att2 = attention_ops(packed)
    before = [g for g in att if tr.name(g).startswith("triton_poi")]
    after = [g for g in att2 if tr2.name(g).startswith("triton_poi")]
    assert len(after) < len(before)
    assert sum(tr2.dur_ns[g] for g in att2) < sum(tr.dur_ns[g] for g in att)
    cudnn = [g for g in att2 if tr2.name(g).startswith("cudnn")]
    assert len(cudnn) == 32  # one per layer, cuDNN's kernel
    return {
        "gqa_copy_kernels_before": len(before),
        "gqa_copy_kernels_after": len(after),
        "gqa_copy_us_before": sum(float(tr.dur_ns[g]) for g in before) / 1e3,
        "gqa_copy_us_after": sum(float(tr2.dur_ns[g]) for g in after) / 1e3,
        "att_us_before": sum(float(tr.dur_ns[g]) for g in att) / 1e3,
        "att_us_after": sum(float(tr2.dur_ns[g]) for g in att2) / 1e3,
        "cudnn_us": statistics.median(float(tr2.dur_ns[g]) / 1e3 for g in cudnn),
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
#: The settings ``gemv_op`` launches ``gemv_kernel`` with, as the page quotes them from the
#: example (``literalinclude``): columns per step (for the other GEMVs, for gate/up) and warps.
#: The recordings show the warps (the block's threads), not the columns.
GEMV_BLOCK_K, GEMV_WARPS = (1024, 2048), 8
#: Likewise ``attention_op``'s ``attention_kernel``: keys per step and warps.
ATTENTION_BLOCK_N, ATTENTION_WARPS = 256, 8


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
    assert len(gemvs) == 4 * layers + 1, len(gemvs)
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
        assert len(attention) in (3, 4) or attention == ["attention_kernel"], attention
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

    def spread_pct(self, c: str) -> float:
        """How much slower the slowest repeat ran one class than the fastest, in %."""
        return 100 * (max(x.t[c] for x in self.runs) / min(x.t[c] for x in self.runs) - 1)

    def markdown(self) -> str:
        rows = [
            f"| {c} | {self.runs[0].n[c]} | {self.med[c]:,.0f} | {100 * self.med[c] / self.token:.1f} % | "
            + (f"{self.gbs[c]:,.0f}" if c in self.gbs else "")
            + " |"
            for c in CLASSES
        ]
        rows.append(
            f"| the rest of the token | | {self.rest:,.0f} | {100 * self.rest / self.token:.1f} % | |"
        )
        return (
            "| class | ops | µs per token | of the token | GB/s |\n|---|---:|---:|---:|---:|\n"
            + "\n".join(rows)
        )


# ---------------------------------------------------------------------- the whole path

PATH = [
    ("generate_dynamic_1b", "generate(), dynamic cache", "1B"),
    ("generate_static_1b", "static cache", "1B"),
    ("generate_static_compiled_1b", "generate() compiles", "1B"),
    ("generate_static_compiled_8b", "generate() compiles", "8B"),
    ("loop_compiled_8b", "our loop, CUDA graph", "8B"),
    ("loop_tuned_8b", "+ tuned GEMVs", "8B"),
    ("loop_short_8b", "+ short cache", "8B"),
    ("loop_packed_8b", "+ packed GQA", "8B"),
    ("loop_fused_8b", "+ fused projections", "8B"),
    ("loop_act_8b", "+ activation computed once", "8B"),
    ("loop_act_attn_8b", "+ attention as reductions", "8B"),
    ("loop_kernels_8b", "GEMV kernels of our own", "8B"),
    ("loop_kernels_sdpa_8b", "+ cuDNN attention again", "8B"),
    ("loop_norms_8b", "+ norms in the GEMVs", "8B"),
    ("loop_attention_8b", "GEMV and attention kernels of our own", "8B"),
    (FINAL, "+ Inductor's tuning off", "8B"),
]
#: The lesson's short path: where the CPU sets the pace, then where the kernels do.
LESSON_PATH = (
    "generate_dynamic_1b",
    "generate_static_compiled_1b",
    "generate_static_compiled_8b",
    "loop_compiled_8b",
    "loop_fused_8b",
    FINAL,
)
#: The lesson's table skips the rows between the fused loop and the final loop: its label says all it holds.
LESSON_LABELS = {
    "loop_fused_8b": "+ tuned GEMVs, short cache, packed GQA, fused projections",
    FINAL: "GEMV and attention kernels of our own, tuning off",
}
BUILDS_ON = {"loop_attention_8b": "loop_kernels_8b"}  # each other row builds on the row above it
KROWS = ("loop_kernels_8b", "loop_kernels_sdpa_8b", "loop_norms_8b")


class Chapter:
    """Every claim of Part 4's pages that reads more than one repeat, and their numbers.

    ``recs`` returns every repeat of a variant; ``shapes`` is the example's ``SHAPES``;
    ``sessions`` returns a variant's earlier recording sessions (:data:`SESSION_ROWS`').
    """

    def __init__(
        self,
        recs: Recs,
        shapes: dict[str, dict[str, int]],
        sessions: Sessions = lambda name: (),
    ) -> None:
        self.recs, self.shapes, self.sessions = recs, shapes, sessions
        self._tables: dict[str, Table] = {}

    # --- the path table (part4-notes) and the lesson's short one

    @cached_property
    def per(self) -> dict[str, dict[str, list[float]]]:
        per = {}
        for name, _, _ in PATH:
            rs = self.recs(name)
            kern, launches, busy = [], [], []
            for r in rs:
                dec = decode_steps(r.trace())
                ks = [s.kernels for s in dec]
                assert max(ks) - min(ks) <= 2, name  # every token alike
                kern.append(statistics.median(ks))
                launches.append(statistics.median(s.launches for s in dec))
                busy.append(
                    statistics.median(s.gpu_busy_us for s in dec) / 1e3 / res(r)["ms_per_token"]
                )
                assert tim(r)["graphs_compiled_while_timed"] == 0, name  # no recompile while timed
            assert max(busy) < 1.03, (name, busy)
            per[name] = {
                "tps": [res(r)["tokens_per_s"] for r in rs],
                "ms": [res(r)["ms_per_token"] for r in rs],
                "frac": [res(r)["hbm_fraction_spec"] for r in rs],
                "kernels": kern,
                "busy": busy,
                "launches": launches,
            }
        return per

    def beats(self, a: str, b: str) -> bool:
        """Every repeat of ``a`` faster than every repeat of ``b``."""
        return min(self.per[a]["tps"]) > max(self.per[b]["tps"])

    def _row(self, name: str, what: str, shape: str, base: str) -> str:
        p = self.per[name]
        on = [
            f"{int(d[8:10])} {calendar.month_abbr[int(d[5:7])]}"
            for d in days(r.env["recorded_at"] for r in self.recs(name))
        ]
        return (
            f"| {what} | {base} | {' and '.join(on)} | {shape} | {rng(p['tps'])} | {rng(p['ms'], '{:.2f}')} | {p['kernels'][0]:.0f} | "
            f"{p['launches'][0]:.0f} | {rng([min(b, 1) * 100 for b in p['busy']])} % | "
            f"{rng([f * 100 for f in p['frac']])} % |"
        )

    def path_table(self, names: Sequence[str] | None = None) -> str:
        label = {n: what for n, what, _ in PATH}
        base = {n: BUILDS_ON.get(n, a[0]) for a, (n, _, _) in zip(PATH, PATH[1:], strict=False)}
        rows = [
            self._row(*p, label[base[p[0]]] if p[0] in base else "")
            for p in PATH
            if names is None or p[0] in names
        ]
        return (
            "| change | built on | recorded | shape | tokens/s | ms/token | kernels per token "
            "| launch calls per token | GPU busy | of 4.8 TB/s |\n"
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows)
        )

    def lesson_table(self) -> str:
        """The lesson's short path: medians over the repeats (the ranges are in the notes)."""
        rows = []
        for name, what, shape in PATH:
            if name in LESSON_PATH:
                p = self.per[name]
                rows.append(
                    f"| {LESSON_LABELS.get(name, what)} | {shape} | {statistics.median(p['tps']):.0f} | "
                    f"{statistics.median(p['launches']):.0f} | "
                    f"{100 * min(1, statistics.median(p['busy'])):.0f} % | "
                    f"{100 * statistics.median(p['frac']):.0f} % |"
                )
        return (
            "| change | shape | tokens/s | launch calls per token | GPU busy | of 4.8 TB/s |\n"
            "|---|---|---:|---:|---:|---:|\n" + "\n".join(rows)
        )

    def path_facts(self) -> Facts:
        per, beats = self.per, self.beats
        assert beats("generate_static_compiled_1b", "generate_dynamic_1b")
        assert beats("loop_compiled_8b", "generate_static_compiled_8b")
        assert beats("loop_fused_8b", "loop_compiled_8b") and beats(
            "loop_act_attn_8b", "loop_compiled_8b"
        )
        # A static cache alone is no faster: never faster in every repeat, and slower in the
        # median. The page words how much from the recording: slower in every repeat (as on
        # 2026-12-02), or only in the median (the recording before it: the repeats overlapped).
        assert not beats("generate_static_1b", "generate_dynamic_1b")
        assert statistics.median(per["generate_static_1b"]["tps"]) < statistics.median(
            per["generate_dynamic_1b"]["tps"]
        )
        static_slower = (
            "slower in every repeat"
            if beats("generate_dynamic_1b", "generate_static_1b")
            else "slower in the median, though some repeats overlap"
        )
        # It launches more kernels per token than the dynamic cache, in every repeat, and
        # both are bound by the CPU (the GPU busy under half of each token).
        assert min(per["generate_static_1b"]["kernels"]) > max(
            per["generate_dynamic_1b"]["kernels"]
        )
        assert max(per["generate_static_1b"]["busy"] + per["generate_dynamic_1b"]["busy"]) < 0.5
        assert beats(FINAL, "loop_fused_8b")
        built = [
            (next(p for p in PATH if p[0] == BUILDS_ON.get(b[0], a[0])), b)
            for a, b in zip(PATH[4:], PATH[5:], strict=False)
        ]
        section2 = ["loop_tuned_8b", "loop_short_8b", "loop_packed_8b", "loop_fused_8b"]
        overlapping = [
            b
            for a, b in built
            if b[0] in section2 and not beats(b[0], a[0]) and not beats(a[0], b[0])
        ]
        assert len(overlapping) >= 2
        beating = [(w, n, a[0]) for a, (n, w, _) in built if n in section2 and beats(n, a[0])]

        def by(n: str, a: str) -> str:  # say so when the slowest repeat wins by under 1 %
            lo, hi = min(per[n]["tps"]), max(per[a]["tps"])
            return (
                f" (its slowest repeat only just: {lo:.1f} against {hi:.1f} tokens/s)"
                if (lo < 1.01 * hi)
                else ""
            )

        lesson_beating = (
            "only " + ", ".join(f"*{w}*{by(n, a)}" for w, n, a in beating)
            if beating
            else "none of them"
        )
        f: Facts = {
            "path_table": self.path_table(),
            "lesson_path_table": self.lesson_table(),
            "overlap_steps": ", ".join(f"*{w}*" for _, w, _ in overlapping),
            "lesson_beating": lesson_beating,
            "gs1_vs": static_slower,
            "gs1_kernels": statistics.median(per["generate_static_1b"]["kernels"]),
            "gd1_kernels": statistics.median(per["generate_dynamic_1b"]["kernels"]),
        }
        for name in ("generate_static_compiled_1b", "generate_static_compiled_8b"):
            for r in self.recs(name):
                assert set(calls_per_step(r.trace(), "cudaStreamSynchronize")) == {1}, name
                assert set(calls_per_step(r.trace(), "cudaGraphLaunch")) == {1}, name
        # On 8B the compiled forward runs ahead of generate()'s CPU work, and the stop check's
        # sync (in step 2, before its graph launch) waits milliseconds, until the GPU has run
        # the previous token's forward (its last kernel), in every repeat less than a token.
        waits, profiled = [], []
        for r in self.recs("generate_static_compiled_8b"):
            tr = r.trace()
            (i,) = syncs(tr)
            waits.append(float(tr.end_ns[i] - tr.ts_ns[i]) / 1e6)
            (st,) = [s for s in step_times(tr) if s.name == "ProfilerStep#2"]
            profiled.append((st.end_ns - st.start_ns) / 1e6)
            (launch,) = tr.where(name="cudaGraphLaunch", within=_in(tr, "ProfilerStep#2"))
            done = max(
                int(tr.end_ns[g])
                for g in token_ops(tr, "ProfilerStep#1")
                if tr.kind[g] == Kind.KERNEL
            )
            assert tr.end_ns[i] < tr.ts_ns[launch] and 0 < tr.end_ns[i] - done < 100_000
            assert 1 < waits[-1] < res(r)["ms_per_token"]
        f["gsc8_sync_ms"] = statistics.median(waits)
        f["gsc8_prof_ms"] = statistics.median(profiled)
        f["gsc8_ms"] = statistics.median(per["generate_static_compiled_8b"]["ms"])
        for r in [
            *self.recs("loop_compiled_8b"),
            *self.recs(FINAL),
        ]:  # our loop: no host sync at all
            tr = r.trace()
            assert set(calls_per_step(tr, "cudaStreamSynchronize")) == {0}
            assert set(calls_per_step(tr, "cudaGraphLaunch")) == {1}
            assert [launch_calls(tr, st.name) for st in decode_steps(tr)] == [LOOP_CALLS] * 3
            # Once the CPU is ahead (from the second profiled token on), the GPU never waits.
            steps = decode_steps(tr)
            ahead = (
                int(tr.ts_ns[token_ops(tr, steps[1].name)[0]]),
                int(tr.end_ns[token_ops(tr, steps[-1].name)[-1]]),
            )
            assert not tracereader.gaps(tr, window=ahead, min_gap_us=10)
        trg = self.recs("generate_static_compiled_1b")[0].trace()
        f["gsc1_kernel_calls"] = statistics.median(calls_per_step(trg, "cudaLaunchKernel"))
        f["gsc1_copy_calls"] = statistics.median(calls_per_step(trg, "cudaMemcpyAsync"))

        def gemv_total_us(r: Rec) -> float:
            tr = r.trace()
            return sum(float(tr.dur_ns[g]) for g in token_ops(tr) if is_gemv(tr.name(g))) / 1e3

        tuned = sorted(
            (res(r)["tokens_per_s"], gemv_total_us(r)) for r in self.recs("loop_tuned_8b")
        )
        assert tuned[0][1] == max(g for _, g in tuned)  # the slowest repeat has the slowest GEMVs
        f["tuned_runs"] = "; ".join(f"{g:,.0f} µs of GEMVs and {t:.0f} tokens/s" for t, g in tuned)
        keys = {
            "gsc1": "generate_static_compiled_1b",
            "gd1": "generate_dynamic_1b",
            "gs1": "generate_static_1b",
            "gsc8": "generate_static_compiled_8b",
            "lc8": "loop_compiled_8b",
            "lf8": "loop_fused_8b",
            "la8": "loop_act_8b",
            "laa8": "loop_act_attn_8b",
            "lk8": "loop_kernels_8b",
            "ln8": "loop_norms_8b",
            "ls8": "loop_kernels_sdpa_8b",
            "lat8": "loop_attention_8b",
            "lu8": FINAL,
        }
        for key, name in keys.items():
            p = per[name]
            f.update(
                {
                    f"{key}_tps": statistics.median(p["tps"]),
                    f"{key}_tps_lo": min(p["tps"]),
                    f"{key}_tps_hi": max(p["tps"]),
                    f"{key}_kernels": statistics.median(p["kernels"]),
                    f"{key}_launches": statistics.median(p["launches"]),
                    f"{key}_busy": 100 * min(1, statistics.median(p["busy"])),
                }
            )
        tok = {
            n: tim(self.recs(n)[0])["tokens"]
            for n in ("loop_fused_8b", "generate_static_compiled_8b")
        }
        f["same_tokens"] = first_diff(*tok.values())
        assert 0 < f["same_tokens"] < len(tok["loop_fused_8b"])
        lc = [tim(r)["tokens"] for r in self.recs("loop_compiled_8b")]
        f["lc_diverge"] = min(first_diff(a, b) for a in lc for b in lc if a is not b)
        assert f["lc_diverge"] < len(lc[0])
        f["fused_diff"] = max(
            tim(r)["fused_logits_max_abs_diff"] for r in self.recs("loop_fused_8b")
        )

        def o_proj(r: Rec) -> tuple[float, int, int, str]:
            """Duration, grid and block of layer 5's output-projection GEMV in step 2."""
            tr = r.trace()
            ops = token_ops(tr)
            cud = [i for i, g in enumerate(ops) if tr.name(g).startswith("cudnn")]
            g = next(g for g in ops[cud[5] + 1 : cud[6]] if is_gemv(tr.name(g)))
            grid, block = int(tr.extra["grid"][g]), int(tr.extra["block"][g])
            return float(tr.dur_ns[g]) / 1e3, grid, block, tr.name(g)

        o_runs = [o_proj(r) for r in self.recs("loop_packed_8b")]
        assert len({n for *_, n in o_runs}) == 1  # the same kernel in every repeat ...
        o_us = [u for u, *_ in o_runs]
        assert max(o_us) > 1.1 * min(o_us)  # ... at different speeds: every launch of it in
        # the slowest repeat's token slower than every launch of it in the others'
        o_name = o_runs[0][3]
        o_all = []
        for r in self.recs("loop_packed_8b"):
            tr = r.trace()
            o_all.append([float(tr.dur_ns[g]) / 1e3 for g in token_ops(tr) if tr.name(g) == o_name])
        o_slow = o_us.index(max(o_us))
        assert min(o_all[o_slow]) > max(max(d) for i, d in enumerate(o_all) if i != o_slow)
        launches = {(grid, block) for _, grid, block, _ in o_runs}
        blocks = {block for _, _, block, _ in o_runs}
        each = [f"{u:.1f} µs on {grid:,} blocks" for u, grid, _, _ in o_runs]
        listed = ", ".join(each[:-1]) + " and " + each[-1]
        if len(launches) > 1:  # launched differently: the tuning settled differently
            f["o_runs"] = (
                (
                    f"{listed}, of {blocks.pop()} threads each"
                    if len(blocks) == 1
                    else "; ".join(
                        f"{u:.1f} µs on {grid:,} blocks of {block} threads"
                        for u, grid, block, _ in o_runs
                    )
                )
                + ": coordinate-descent tuning picks each kernel's launch configuration by "
                "timing candidates the first time each kernel runs, and different processes "
                "settled differently"
            )
        else:
            f["o_runs"] = (
                f"{listed}, of {blocks.pop()} threads each: the same grid and blocks in every "
                "process, at speeds that differ by process"
            )
        return f

    # --- the bound

    @cached_property
    def copy(self) -> list[float]:
        return [
            res(r)["copy_tbs"] for v in ("loop_fused_8b", "loop_compiled_8b") for r in self.recs(v)
        ]

    def bound_facts(self) -> Facts:
        b8 = tim(self.recs("loop_fused_8b")[0])["bytes_per_token"]
        b1 = tim(self.recs("loop_fused_1b")[0])["bytes_per_token"]
        for v in ("loop_fused_8b", FINAL):
            assert all(tim(r)["bytes_per_token"] == b8 for r in self.recs(v))
            assert all(res(r)["bytes_per_token"] == b8["total"] for r in self.recs(v))
        copy = self.copy
        fr = [res(r)["hbm_fraction_spec"] for r in self.recs("loop_fused_8b")]
        frc = [res(r)["hbm_fraction_copy"] for r in self.recs("loop_fused_8b")]
        assert max(fr) < GOAL  # short of the goal
        assert b8["weights"] > 0.99 * b8["total"]  # almost all of it weights
        return {
            "b8_gb": b8["total"] / 1e9,
            "b8_kv_mb": b8["kv_cache"] / 1e6,
            "b8_w_gb": b8["weights"] / 1e9,
            "b1_gb": b1["total"] / 1e9,
            "b_ratio": b8["total"] / b1["total"],
            "copy_tbs": statistics.median(copy),
            "copy_tbs_lo": min(copy),
            "copy_tbs_hi": max(copy),
            "copy_spec_pct": 100 * statistics.median(copy) / SPEC_TBS,
            "floor_spec_ms": b8["total"] / (SPEC_TBS * 1e12) * 1e3,
            "at_copy_ms": b8["total"] / (statistics.median(copy) * 1e12) * 1e3,
            "goal_tps": GOAL * SPEC_TBS * 1e12 / b8["total"],
            "max_tps": SPEC_TBS * 1e12 / b8["total"],
            "lf8_frac": 100 * statistics.median(fr),
            "lf8_frac_lo": 100 * min(fr),
            "lf8_frac_hi": 100 * max(fr),
            "lf8_fracc": 100 * statistics.median(frc),
            "lf8_ms": statistics.median(res(r)["ms_per_token"] for r in self.recs("loop_fused_8b")),
            "spec_tbs": SPEC_TBS,
            "goal_pct": 100 * GOAL,
        }

    # --- tokens by class

    def table(self, name: str, shape: str = "8b") -> Table:
        """Every repeat of the fused loop ``name`` by class (made once)."""
        if name not in self._tables:
            layers = self.shapes[shape]["num_hidden_layers"]
            self._tables[name] = Table(
                [Run(r, self.shapes[shape], layers) for r in self.recs(name)]
            )
        return self._tables[name]

    def fused_facts(self) -> Facts:
        t8 = self.table("loop_fused_8b")
        f: Facts = {
            "class_table": t8.markdown(),
            "cls_rest_us": t8.rest,
            "cls_token_us": t8.token,
            "stretch_pct": 100 * t8.stretch,
        }
        f.update({f"cls_{c.split(',')[0]}_us": t8.med[c] for c in CLASSES})
        f.update({f"cls_{c}_gbs": t8.gbs[c] for c in t8.gbs})
        gemv_us = sum(t8.med[c] for c in t8.gbs)
        f.update(gemv_us=gemv_us, gemv_pct=100 * gemv_us / t8.token)
        assert all(x.gemvs > 0.5 * x.token_us for x in t8.runs)  # the GEMVs take most of the token
        nb = gemv_bytes(self.shapes["8b"])
        for x in t8.runs:  # every claim below, on every repeat
            t, g = x.t, x.gbs
            assert t["gate_up"] > t["down"] > max(t["qkv"], t["o"])
            assert g["lm_head"] > max(g[c] for c in ("qkv", "o", "down"))
            assert g["lm_head"] / 1e3 > max(self.copy)  # a read-only GEMV beats the copy
            assert g["down"] < g["qkv"] and g["down"] < g["gate_up"] and g["o"] < g["qkv"]
            lost = {c: t[c] - 32 * nb[c] / (g["gate_up"] * 1e9) * 1e6 for c in ("down", "o", "qkv")}
            assert lost["down"] > max(lost["o"], lost["qkv"])  # down loses the most time
        for c in ("down", "o"):
            f[f"lost_{c}_us"] = t8.med[c] - 32 * nb[c] / (t8.gbs["gate_up"] * 1e9) * 1e6
        return f

    # --- further attempts on the fused loop (part4-kernels)

    def attempt_facts(self) -> Facts:
        t8, ta, tb = (
            self.table("loop_fused_8b"),
            self.table("loop_act_8b"),
            self.table("loop_act_attn_8b"),
        )
        assert max(x.t["down"] for x in ta.runs) < min(
            x.t["down"] for x in t8.runs
        )  # down: faster, every repeat
        assert min(x.t["pointwise, copies"] for x in ta.runs) > max(
            x.t["pointwise, copies"] for x in t8.runs
        )
        # Computing the activation once is faster in the median. In every repeat too in the
        # 2026-12-02 recording, but not in the one before (its repeats overlapped the fused
        # loop's), so the page claims the median only.
        gain = statistics.median(self.per["loop_act_8b"]["tps"]) / statistics.median(
            self.per["loop_fused_8b"]["tps"]
        )
        assert gain > 1
        assert not self.beats("loop_act_attn_8b", "loop_act_8b")
        assert (
            abs(tb.med["attention"] - t8.med["attention"]) < 0.02 * tb.token
        )  # attention: about the same
        # The activation's extra kernels per layer: two eager ones (silu, mul) and two Inductor ones.
        tr = self.recs("loop_act_8b")[0].trace()
        ops = token_ops(tr)
        assert sum("vectorized_elementwise_kernel" in tr.name(g) for g in ops) == 64
        assert (
            sum(tr.name(g).startswith("triton_poi") and "silu_mul" in tr.name(g) for g in ops) == 64
        )
        gu = [x.t["gate_up"] for x in ta.runs]
        assert max(gu) > 1.02 * min(gu)  # the gate/up GEMV's time varies from repeat to repeat
        # The gate/up GEMV, not aimed at, moved too; the page gives its share of the saving.
        gu8 = [x.t["gate_up"] for x in t8.runs]
        gu_drop = statistics.median(gu8) - statistics.median(gu)
        saving = t8.token - ta.token
        assert saving > 0
        rows = []
        for label, m, name in (
            ("fused projections", t8.med, "loop_fused_8b"),
            ("+ activation computed once", ta.med, "loop_act_8b"),
            ("+ attention as reductions", tb.med, "loop_act_attn_8b"),
        ):
            rows.append(
                f"| {label} | {m['gate_up']:,.0f} | {m['down']:,.0f} | {m['attention']:,.0f} | "
                f"{m['pointwise, copies']:,.0f} | {rng(self.per[name]['tps'])} |"
            )
        return {
            "act_gain_pct": 100 * (gain - 1),
            "act_down_gbs": ta.gbs["down"],
            "act_down_us": ta.med["down"],
            "act_pointwise_us": ta.med["pointwise, copies"],
            "lf8_pointwise_us": t8.med["pointwise, copies"],
            "attn_red_us": tb.med["attention"],
            "act_slow_gu_us": max(gu),
            "act_fast_gu_us": min(gu),
            "fused_slow_gu_us": max(gu8),
            "fused_fast_gu_us": min(gu8),
            "act_gu_moved": f"its median fell by {gu_drop:,.0f} µs, {100 * gu_drop / saving:.0f} % of "
            f"the token's saving of {saving:,.0f} µs"
            if gu_drop > 0
            else f"its median rose by {-gu_drop:,.0f} µs",
            "act_vs": "faster in every repeat"
            if self.beats("loop_act_8b", "loop_fused_8b")
            else "though some repeats overlap the fused loop's",
            "attempt_table": "| loop | gate/up µs | down µs | attention µs | pointwise, copies µs | tokens/s |\n"
            "|---|---:|---:|---:|---:|---:|\n" + "\n".join(rows),
        }

    # --- GEMV kernels of our own (part4-kernels)

    def gemv_kernel_facts(self) -> Facts:
        # The sweep variant times every setting on every GEMV, in every repeat: per GEMV, the
        # fixed settings' distance from the fastest, how many times as fast as cuBLAS, and
        # whether another setting won in every repeat.
        sweeps = [tim(r)["gemvs"] for r in self.recs(GEMV_SWEEP)]
        labels = {"qkv": "q/k/v", "o": "output", "gate_up": "gate/up", "down": "down"}
        labels["lm_head"] = "LM head"
        gaps, per_gemv, others = [], [], []
        for name, label in labels.items():
            want = (GEMV_BLOCK_K[name == "gate_up"], GEMV_WARPS)
            ratios, won = [], []
            for sw in sweeps:
                g = sw[name]
                chosen = next(t for t in g["settings"] if (t["BLOCK_K"], t["num_warps"]) == want)
                best = min(g["settings"], key=lambda t: t["us"])
                gaps.append(chosen["us"] / best["us"] - 1)
                ratios.append(g["cublas_us"] / chosen["us"])
                won.append((best["BLOCK_K"], best["num_warps"]))
            assert min(ratios) > 1
            per_gemv.append(f"{label} {lo_hi(ratios, '{:.2f}')}")
            if len(set(won)) == 1 and won[0] != want:
                others.append(f"{label} ({won[0][0]:,} columns, {won[0][1]} warps)")
        assert all(len(sw) == len(labels) for sw in sweeps) and max(gaps) < 0.05
        f: Facts = {
            "sweep_gap": 100 * max(gaps),
            "sweep_vs_cublas": "; ".join(per_gemv),
            "sweep_others": (
                "no other setting won any GEMV in every repeat"
                if not others
                else "another setting won in every repeat for "
                + (", ".join(others[:-1]) + " and " if len(others) > 1 else "")
                + others[-1]
            ),
            "sweep_repeats": len(self.recs(GEMV_SWEEP)),
        }
        t8, tb, tk = (
            self.table("loop_fused_8b"),
            self.table("loop_act_attn_8b"),
            self.table("loop_kernels_8b"),
        )
        ts, tn = self.table("loop_kernels_sdpa_8b"), self.table("loop_norms_8b")
        shape = self.shapes["8b"]
        for v in KROWS:
            for r in self.recs(v):
                tr = r.trace()
                ops = token_ops(tr)
                gemvs = [g for g in ops if tr.name(g) == "gemv_kernel"]
                assert len(gemvs) == 4 * 32 + 1  # every GEMV is ours
                assert not any("silu" in tr.name(g) for g in ops)  # no activation kernel
                # Launched as the page says: one program per output row, 8 warps each.
                assert [int(tr.extra["grid"][g]) for g in gemvs[:4]] == gemv_rows(shape)
                assert {int(tr.extra["block"][g]) for g in gemvs} == {32 * GEMV_WARPS}
        f["spread_fused"] = max(t8.spread_pct(c) for c in GEMV_CLASSES)
        f["spread_final"] = max(tk.spread_pct(c) for c in GEMV_CLASSES)
        assert f["spread_final"] < 3 < 10 < f["spread_fused"]
        for c in ("qkv", "o"):  # ours against Inductor's, in every repeat
            assert max(x.t[c] for x in tk.runs) < min(x.t[c] for x in t8.runs)
            f[f"own_{c}"], f[f"ind_{c}"] = tk.lohi(c), t8.lohi(c)
        for c in ("gate_up", "down"):
            f[f"own_{c}"], f[f"ind_{c}"] = tk.lohi(c), tb.lohi(c)
        # Against the row above: GEMVs faster in every repeat, the speed set by the attention reductions.
        assert max(x.gemvs for x in tk.runs) < min(x.gemvs for x in tb.runs)
        f["own_gemvs"], f["ind_gemvs"] = (
            lo_hi([x.gemvs for x in tk.runs]),
            lo_hi([x.gemvs for x in tb.runs]),
        )
        tps_k = self.per["loop_kernels_8b"]["tps"]
        slowk = min(range(len(tps_k)), key=lambda i: tps_k[i])
        att_k = [x.t["attention"] for x in tk.runs]
        n_fast = sum(x > max(self.per["loop_act_attn_8b"]["tps"]) for x in tps_k)
        assert n_fast > 0
        if n_fast == len(tps_k):
            f["k_vs_above"] = "every current repeat ran faster than every repeat of the row above"
        else:  # the slowest held back by its attention
            assert att_k[slowk] == max(att_k) and max(att_k) > 2 * min(att_k)
            f["k_vs_above"] = (
                f"{n_fast} of its repeats ran faster than every repeat of the row above, and "
                f"its slowest ({tps_k[slowk]:.0f} tokens/s) did not, because of its attention "
                f"({att_k[slowk]:,.0f} µs per token; next bullet)"
            )
        f.update(
            att_attention_k=tk.lohi("attention"),
            att_attention_aa=tb.lohi("attention"),
            att_attention_s=ts.lohi("attention"),
        )
        n_red = sum(x.t["attention"] < min(u.t["attention"] for u in ts.runs) for x in tk.runs)
        assert 0 < n_red < 3 and all(
            x.t["attention"] != u.t["attention"] for x in tk.runs for u in ts.runs
        )
        f["k_red_faster"] = n_red
        # The first attention kernel of each layer now also computes q's rotary embedding.
        for r in self.recs("loop_kernels_8b"):
            trk = r.trace()
            scores = [
                trk.name(g)
                for g in token_ops(trk)
                if trk.name(g).startswith("triton_red") and "cos" in trk.name(g)
            ]
            assert len(scores) == 32 and all("sum" in n for n in scores)
        f["scores_kernel"] = f"`{scores[0][: scores[0].index('_sum') + 4]}…`"
        for r in self.recs("loop_act_attn_8b"):
            tra = r.trace()
            assert not any(
                tra.name(g).startswith("triton_red") and "cos" in tra.name(g)
                for g in token_ops(tra)
            )

        def softmax_kernels(r: Rec) -> tuple[float, int, int]:
            tr = r.trace()
            ks = [
                g
                for g in token_ops(tr)
                if tr.name(g).startswith("triton_red") and "softmax" in tr.name(g)
            ]
            assert len(ks) == 32
            return (
                sum(float(tr.dur_ns[g]) for g in ks) / 1e3,
                int(tr.extra["grid"][ks[0]]),
                int(tr.extra["block"][ks[0]]),
            )

        sm_aa = [softmax_kernels(r) for r in self.recs("loop_act_attn_8b")]
        sm_k = [softmax_kernels(r) for r in self.recs("loop_kernels_8b")]
        assert len({(g, b) for _, g, b in sm_k}) > 1  # launched differently from repeat to repeat
        assert max(u for u, *_ in sm_k) > 2 * min(u for u, *_ in sm_k)
        assert max(u for u, *_ in sm_k) - min(u for u, *_ in sm_k) > 0.8 * (
            max(att_k) - min(att_k)
        )  # the softmax
        f["sm_k_runs"] = "; ".join(
            f"{u:,.0f} µs on {g:,} blocks of {b} threads" for u, g, b in sm_k
        )
        f["sm_aa"] = lo_hi([u for u, *_ in sm_aa])
        f.update(self._norms_facts(t8, tk, ts, tn))
        return f

    def _norms_facts(self, t8: Table, tk: Table, ts: Table, tn: Table) -> Facts:
        """The norms row against the cuDNN row: the norm kernels go, the gaps shrink, the GEMVs
        that now carry a norm or a residual slow down, in every repeat."""
        f: Facts = {}
        for c in GEMV_CLASSES:
            assert min(x.t[c] for x in tn.runs) > max(x.t[c] for x in ts.runs), c
            f[f"n_{c}"], f[f"s_{c}"] = tn.lohi(c), ts.lohi(c)
        norms = "norms, argmax"
        assert max(x.t[norms] for x in tn.runs) < 0.25 * min(x.t[norms] for x in ts.runs)
        f.update(n_norms=tn.lohi(norms), s_norms=ts.lohi(norms))
        # Our GEMVs left the norm kernels their scaling: the same count of norm kernels per
        # token as in the fused loop, each doing more. Grew in every repeat of which row?
        assert {x.n[norms] for x in tk.runs + ts.runs} == {x.n[norms] for x in t8.runs}
        grew = [
            (label, t)
            for label, t in (("the GEMV-kernel row", tk), ("the cuDNN row", ts))
            if min(x.t[norms] for x in t.runs) > max(x.t[norms] for x in t8.runs)
        ]
        assert grew  # the undone fusion shows in at least one row, in every repeat
        f["norms_grew"] = (
            f"the norms class grew from {t8.lohi(norms)} µs per token in the fused loop to "
            + " and ".join(f"{t.lohi(norms)} in {label}" for label, t in grew)
        )
        assert max(x.rest for x in tn.runs) < min(x.rest for x in ts.runs)
        f["n_rest"], f["s_rest"] = (
            lo_hi([x.rest for x in tn.runs]),
            lo_hi([x.rest for x in ts.runs]),
        )
        assert min(x.gemvs for x in tn.runs) > max(x.gemvs for x in ts.runs)
        pw = "pointwise, copies"

        def med(runs: list[Run], key: Callable[[Run], float]) -> float:
            return statistics.median(map(key, runs))

        d_gemv = med(tn.runs, lambda x: x.gemvs) - med(ts.runs, lambda x: x.gemvs)
        d_norm = med(ts.runs, lambda x: x.t[norms]) - med(tn.runs, lambda x: x.t[norms])
        d_rest = med(ts.runs, lambda x: x.rest) - med(tn.runs, lambda x: x.rest)
        assert d_gemv > 0 and d_norm > 0 and d_rest > 0
        d_token = med(ts.runs, lambda x: x.token_us) - med(tn.runs, lambda x: x.token_us)
        d_pw = med(tn.runs, lambda x: x.t[pw]) - med(ts.runs, lambda x: x.t[pw])
        tok_s = med(ts.runs, lambda x: x.token_us)
        assert d_token > 0
        per_kernel_rest = [x.rest / sum(x.n.values()) for x in tn.runs]
        # The profiled token's own gaps between consecutive GPU ops, median per repeat: each
        # larger than the rest per kernel, so without the profiler the gaps, the kernels or
        # both were shorter.
        gap_med = []
        for r, x in zip(self.recs("loop_norms_8b"), tn.runs, strict=True):
            gaps = token_gaps_us(r.trace())
            gap_med.append(float(np.median(gaps)))
            assert 0 < x.rest < float(gaps.sum())  # less than the profiled gaps alone
        assert max(per_kernel_rest) < min(gap_med)
        # The groups of processes (slow_gemv, by the copy rate each measured): the GEMVs
        # compared within a group.
        n_slow = [slow_gemv(res(r)) for r in self.recs("loop_norms_8b")]
        s_slow = [slow_gemv(res(r)) for r in self.recs("loop_kernels_sdpa_8b")]
        same = [
            xn.gemvs - xs.gemvs
            for xn, a in zip(tn.runs, n_slow, strict=True)
            for xs, b in zip(ts.runs, s_slow, strict=True)
            if a == b
        ]
        assert same and min(same) > 0
        f["norms_groups"] = (
            "Every current repeat of both rows ran in the same one of the two groups of "
            "processes described below (the faster-GEMV one), so that grouping does not "
            "explain these differences"
            if sum(n_slow) == sum(s_slow) == 0
            else "Of the two groups of processes described below, the slower-GEMV one holds "
            f"{sum(n_slow)} of the norms row's {len(n_slow)} repeats and {sum(s_slow)} of the "
            f"cuDNN row's {len(s_slow)}"
            + (
                ""
                if n_slow == s_slow
                else f"; repeat against repeat within a group, the GEMVs took {lo_hi(same)} µs more"
            )
        )
        # Worded from the recording: the two rows may come from different sessions.
        n8, s8 = self.per["loop_norms_8b"]["tps"], self.per["loop_kernels_sdpa_8b"]["tps"]
        earlier = [x["tokens_per_s"] for ss in self.sess["loop_kernels_sdpa_8b"][:-1] for x in ss]
        if self.beats("loop_norms_8b", "loop_kernels_sdpa_8b"):
            f["norms_vs_sdpa"] = "faster than every repeat of the cuDNN row's current session, " + (
                f"if only just ({min(n8):.1f} against {max(s8):.1f})"
                if min(n8) < 1.01 * max(s8)
                else f"by {100 * (min(n8) / max(s8) - 1):.0f} % or more"
            )
            f["norms_vs_sdpa"] += (
                f", and about as fast as the best repeat of its earlier sessions ({min(n8):.1f} against {max(earlier):.1f})"
                if max(earlier) < min(n8) < 1.01 * max(earlier)
                else f", and faster than the best repeat of its earlier sessions ({min(n8):.1f} against {max(earlier):.1f})"
                if max(earlier) < min(n8)
                else f", but not than every repeat of its earlier sessions (the best ran at {max(earlier):.1f})"
            )
        elif self.beats("loop_kernels_sdpa_8b", "loop_norms_8b"):
            f["norms_vs_sdpa"] = "slower in every repeat"
        else:
            f["norms_vs_sdpa"] = "the repeats overlap: no difference beyond the spread"
        session_medians = [
            statistics.median(x["tokens_per_s"] for x in ss)
            for ss in self.sess["loop_kernels_sdpa_8b"]
        ]
        n_days, s_days = (
            days(r.env["recorded_at"] for r in self.recs(v))
            for v in ("loop_norms_8b", "loop_kernels_sdpa_8b")
        )
        f["norms_days"] = (
            ""
            if n_days == s_days
            else " The two rows were recorded on different days ("
            + ", ".join(n_days)
            + " and "
            + ", ".join(s_days)
            + "), and the medians of the cuDNN row's own sessions (table below) were "
            + lo_hi(session_medians, "{:.1f}")
            + " tokens/s."
        )
        f.update(
            d_gemv=d_gemv,
            d_norm=d_norm,
            d_rest=d_rest,
            d_token=d_token,
            d_token_pct=100 * d_token / tok_s,
            d_pw=(
                f"{abs(d_pw):,.0f} µs {'more' if d_pw > 0 else 'less'} (in every repeat)"
                if min(x.t[pw] for x in tn.runs) > max(x.t[pw] for x in ts.runs)
                or max(x.t[pw] for x in tn.runs) < min(x.t[pw] for x in ts.runs)
                else f"about the same ({tn.lohi(pw)} µs in its repeats, against {ts.lohi(pw)} "
                "in the cuDNN row's)"
            ),
            n_rest_per_kernel=max(per_kernel_rest),
            n_gap_med=lo_hi(gap_med, "{:.2f}"),
        )

        def gemv_launch(r: Rec, pos: int) -> tuple[int, float]:
            """Registers per thread and estimated occupancy of layer 5's GEMV number ``pos``."""
            tr = r.trace()
            g = [g for g in token_ops(tr) if tr.name(g) == "gemv_kernel"][4 * 5 + pos]
            return int(tr.extra["registers"][g]), float(tr.extra["occupancy_pct"][g])

        occupancy_fell = {}
        for pos, c in enumerate(GEMV_CLASSES):
            ns_ = {gemv_launch(r, pos) for r in self.recs("loop_norms_8b")}
            ss_ = {gemv_launch(r, pos) for r in self.recs("loop_kernels_sdpa_8b")}
            assert len(ns_) == len(ss_) == 1
            (n_launch,), (s_launch,) = ns_, ss_
            occupancy_fell[c] = n_launch[1] < s_launch[1]
            f[f"launch_n{pos}"] = "{} registers, {:.0f} %".format(*n_launch)
            f[f"launch_s{pos}"] = "{} registers, {:.0f} %".format(*s_launch)
            f[f"slow_{c}_pct"] = 100 * (tn.med[c] / ts.med[c] - 1)
        # Occupancy does not explain the slowdowns: it fell for gate/up and down only, and
        # those slowed less than q/k/v and o, whose occupancy did not change.
        assert [c for c in GEMV_CLASSES if occupancy_fell[c]] == ["gate_up", "down"]
        assert max(f["slow_gate_up_pct"], f["slow_down_pct"]) < min(
            f["slow_qkv_pct"], f["slow_o_pct"]
        )
        rows = []
        for label, name in (
            ("activation once, attention as reductions", "loop_act_attn_8b"),
            ("GEMV kernels of our own", "loop_kernels_8b"),
            ("+ cuDNN attention again", "loop_kernels_sdpa_8b"),
            ("+ norms in the GEMVs", "loop_norms_8b"),
        ):
            t = self.table(name)
            m = t.med
            rows.append(
                f"| {label} | {m['gate_up']:,.0f} | {m['down']:,.0f} | {m['qkv'] + m['o']:,.0f} | "
                f"{m['attention']:,.0f} | {m[norms]:,.0f} | {m[pw]:,.0f} | {t.rest:,.0f} | "
                f"{statistics.median(self.per[name]['kernels']):.0f} | {rng(self.per[name]['tps'])} |"
            )
        f["kernel_table"] = (
            "| loop | gate/up | down | q/k/v + o | attention | norms, argmax | pointwise, copies "
            "| rest | kernels | tokens/s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            + "\n".join(rows)
        )
        return f

    # --- an attention kernel of our own, then no tuning (part4-kernels)

    def attention_facts(self) -> Facts:
        # The sweep variant times every setting at each position, in every repeat: the
        # example's setting within 5 % of the fastest, and faster than either peer.
        sweeps = [tim(r) for r in self.recs(ATTENTION_SWEEP)]
        by_pos: dict[int, list[tuple[float, float, float, float]]] = {}
        gaps = []
        for sw in sweeps:
            for pos in sw["positions"]:
                mine = next(
                    t
                    for t in pos["settings"]
                    if (t["BLOCK_N"], t["num_warps"]) == (ATTENTION_BLOCK_N, ATTENTION_WARPS)
                )
                gaps.append(mine["us"] / min(t["us"] for t in pos["settings"]) - 1)
                assert mine["us"] < min(pos["sdpa_us"], pos["inductor_reductions_us"])
                by_pos.setdefault(pos["position"], []).append(
                    (
                        mine["us"],
                        pos["sdpa_us"],
                        pos["inductor_reductions_us"],
                        max(t["max_abs_err"] for t in pos["settings"]),
                    )
                )
        assert max(gaps) < 0.05
        per_pass = min(p["bytes"] for p in sweeps[0]["positions"]) * sweeps[0]["shape"]["copies"]
        assert sorted(by_pos) == [128, 191] and tim(self.recs(FINAL)[0])["new_tokens"] == 64

        def med(i: int) -> str:
            return " and ".join(
                f"{statistics.median(x[i] for x in v):.1f}" for v in by_pos.values()
            )

        # The profiled pass (position 191, the plan keeps only it): SDPA's own kernel, cuDNN's,
        # against ours, and the other GPU ops each SDPA call runs, per call (medians).
        cudnn, mine_k, extra = [], [], []
        calls = sweeps[0]["shape"]["copies"]
        for r in self.recs(ATTENTION_SWEEP):
            tr = r.trace()
            peer = link(tr).gpu_ops_of(_region(tr, "position 191 peer"))
            ours = link(tr).gpu_ops_of(_region(tr, "position 191 ours"))
            cud = [float(tr.dur_ns[g]) / 1e3 for g in peer if tr.name(g).startswith("cudnn")]
            assert len(cud) == calls and len(ours) == calls
            cudnn.append(statistics.median(cud))
            mine_k.append(statistics.median(float(tr.dur_ns[g]) / 1e3 for g in ours))
            extra.append((len(peer) - calls) / calls)
        assert max(mine_k) < min(cudnn) and len(set(extra)) == 1
        passes = [p["bytes"] * sweeps[0]["shape"]["copies"] for p in sweeps[0]["positions"]]
        ind_all = [p["inductor_reductions_us"] for sw in sweeps for p in sw["positions"]]
        f: Facts = {
            "asweep_cudnn": lo_hi(cudnn, "{:.1f}"),
            "asweep_kernel_ours": lo_hi(mine_k, "{:.1f}"),
            "asweep_extra": extra[0],
            "asweep_kernel_x": statistics.median(c / m for c, m in zip(cudnn, mine_k, strict=True)),
            "asweep_call_x": statistics.median(x[1] / x[0] for x in by_pos[191]),
            "asweep_ind_range": lo_hi(ind_all, "{:.1f}"),
            "asweep_mb_hi": max(passes) / 1e6,
            "asweep_n": len(sweeps[0]["positions"][0]["settings"]),
            "asweep_mb": per_pass / 1e6,
            "asweep_pos": " or ".join(f"{p}" for p in by_pos),
            "asweep_ours": med(0),
            "asweep_sdpa": med(1),
            "asweep_ind": med(2),
            "asweep_err": max(x[3] for v in by_pos.values() for x in v),
            "asweep_gap": (
                "were the fastest"
                if max(gaps) == 0
                else f"came within {100 * max(gaps):.1f} % of the fastest"
            ),
        }
        l2 = self.l2_bytes()
        if l2 is not None:  # the device's own report, stamped by the logits check's recording
            assert per_pass > l2
            f["asweep_l2_pct"] = 100 * (per_pass / l2 - 1)
            f["asweep_l2_x_hi"] = max(passes) / l2
        tk, ts = self.table("loop_kernels_8b"), self.table("loop_kernels_sdpa_8b")
        tat, tu = self.table("loop_attention_8b"), self.table(FINAL)
        for t in (tat, tu):  # attention: faster than the reductions and cuDNN, every repeat
            assert max(x.t["attention"] for x in t.runs) < min(
                x.t["attention"] for x in tk.runs + ts.runs
            )
        f["at_att"] = tat.lohi("attention")

        def mask_kernels_us(r: Rec) -> float:
            """The kernels that build the mask (a comparison, ``le``, beside q's rotary ``cos``)."""
            tr = r.trace()
            ops = token_ops(tr)
            ks = {
                g
                for g in ops
                if tr.name(g).startswith("triton_poi")
                and "cos" in tr.name(g)
                and "_le_" in tr.name(g)
            }
            assert len(ks) == 64
            names = [tr.name(g) for g in ops]
            at = [i for i, g in enumerate(ops) if g in ks]
            assert sum(i < names.index("gemv_kernel") for i in at) == 32  # 32 at the token's start
            assert (
                sum(names[i + 1] == "attention_kernel" for i in at) == 32
            )  # one before each layer's
            return sum(float(tr.dur_ns[g]) for g in ks) / 1e3

        like = [
            x.t["attention"] + mask_kernels_us(r)
            for x, r in zip(tat.runs, self.recs("loop_attention_8b"), strict=True)
        ]
        f["at_att_like"] = lo_hi(like)
        parts = []
        for label, their, t in (
            ("the reductions", "their", tk),
            ("cuDNN's kernel with its preparation", "its", ts),
        ):
            xs = sorted(x.t["attention"] for x in t.runs)
            above = [x for x in xs if x > max(like)]  # longer than ours in every repeat
            assert len(above) >= 2 and all(x > min(like) for x in xs)
            if len(above) == len(xs):
                parts.append(
                    f"less than {label} took in any current repeat ({t.lohi('attention')} µs)"
                )
            else:  # the rest fall inside our range: about as long
                inside = [x for x in xs if x not in above]
                fastest = (
                    "fastest current repeat"
                    if len(inside) == 1
                    else f"{len(inside)} fastest current repeats"
                )
                parts.append(
                    f"about as long as {label} took in {their} {fastest} "
                    f"({', '.join(f'{x:,.0f}' for x in inside)} µs) and less than in the other "
                    f"{len(above)} ({' and '.join(f'{x:,.0f}' for x in above)} µs)"
                )
        f["at_like_vs"] = "; ".join(parts)
        for v in ("loop_attention_8b", FINAL):
            for r in self.recs(v):
                tr = r.trace()
                names = [tr.name(g) for g in token_ops(tr)]
                assert (
                    names.count("attention_kernel") == 32
                    and names.count("gemv_kernel") == 4 * 32 + 1
                )
                # One program per query head, 8 warps each, as the page says.
                att = [g for g in token_ops(tr) if tr.name(g) == "attention_kernel"]
                assert {int(tr.extra["grid"][g]) for g in att} == {
                    self.shapes["8b"]["num_attention_heads"]
                }
                assert {int(tr.extra["block"][g]) for g in att} == {32 * ATTENTION_WARPS}
        # The attention row's slowest repeat over all its sessions (the current one and the
        # earlier ones the recordings keep): one pointwise kernel, launched on a tiny grid.
        ATT = "loop_attention_8b"
        at_sess = self.sessions_of(ATT)
        at_reps = [r for _, reps in at_sess for r in reps]
        at_names = [name for name, reps in at_sess for _ in reps]
        tps_at = [session_summary(r)["tokens_per_s"] for r in at_reps]
        slow = min(range(len(tps_at)), key=lambda i: tps_at[i])
        heavy = [heaviest_pointwise(r) for r in at_reps]
        pn, pu, pg, pb, _ = heavy[slow]
        assert "cos" in pn and "index_copy" in pn and pg == 1
        elsewhere = [h[4][pn][0] for i, h in enumerate(heavy) if i != slow]
        assert len(elsewhere) == len(at_reps) - 1 and pu > 4 * max(elsewhere)
        for i, r in enumerate(at_reps):  # the others launched it on more than one block
            if i != slow:
                tr = r.trace()
                assert int(tr.extra["grid"][heavy[i][4][pn][1]]) > 1
        others_tps = [t for i, t in enumerate(tps_at) if i != slow]
        assert tps_at[slow] < min(others_tps)
        # Against the other repeats of its own session: the kernel's extra time (profiled
        # token) covers most or all of what its token took longer (timed without the profiler).
        slow_session = at_names[slow]
        assert slow_session is not None  # an earlier session: say which
        mates = [i for i, n in enumerate(at_names) if n == slow_session and i != slow]
        lost_us = 1e6 / tps_at[slow] - 1e6 / statistics.median(tps_at[i] for i in mates)
        extra_us = pu - statistics.median(heavy[i][4][pn][0] for i in mates)
        assert mates and extra_us > 0.8 * lost_us > 0
        f.update(
            slow_ratio=f"{pu / max(elsewhere):.0f} to {pu / min(elsewhere):.0f}",
            at_slow_tps=tps_at[slow],
            at_slow_session=f"`sessions/{slow_session}`",
            at_slow_when="on {} at {} UTC".format(
                *str(at_reps[slow].env["recorded_at"])[:16].split("T")
            ),
            at_slow_extra=extra_us,
            at_slow_lost=lost_us,
            at_slow_covers="all of" if extra_us >= lost_us else "most of",
            at_tps_others=lo_hi(others_tps),
            at_n_reps=len(at_reps),
            at_n_sessions=len(self.sessions(ATT)) + 1,
            slow_kernel=f"`{pn[:56]}…`",
            slow_kernel_us=pu,
            slow_launch=f"{pg} block of {pb} threads",
            slow_kernel_else=lo_hi(elsewhere),
            at_att_layer=statistics.median(x.t["attention"] for x in tat.runs) / 32,
        )
        # Tuning off: a GEMM for the rotary embedding's product, and the argmax's own launch.
        for r in self.recs(FINAL):
            names = [r.trace().name(g) for g in token_ops(r.trace())]
            assert sum("gemm" in n for n in names) == 1 and any(
                "bmm" in n and "cos" not in n for n in names
            )
        for r in self.recs("loop_attention_8b"):
            assert not any("gemm" in r.trace().name(g) for g in token_ops(r.trace()))
        f["lu8_kernels_n"] = statistics.median(self.per[FINAL]["kernels"])
        f["lat8_kernels_n"] = statistics.median(self.per["loop_attention_8b"]["kernels"])
        assert max(x.small for x in tu.runs) < min(x.small for x in tat.runs)
        f["u_small"], f["at_small"] = (
            lo_hi([x.small for x in tu.runs]),
            lo_hi([x.small for x in tat.runs]),
        )
        f["u_argmax_launch"], f["at_argmax_launch"] = (
            argmax_launch(self.recs(FINAL)),
            argmax_launch(self.recs("loop_attention_8b")),
        )
        am_u = [argmax_us(r) for r in self.recs(FINAL)]
        am_at = [argmax_us(r) for r in self.recs("loop_attention_8b")]
        assert min(am_u) > max(am_at)
        f["u_argmax"], f["at_argmax"] = lo_hi(am_u), lo_hi(am_at)
        rows = []
        for label, name, t in (
            ("GEMV kernels of our own", "loop_kernels_8b", tk),
            ("GEMV and attention kernels of our own", "loop_attention_8b", tat),
            ("+ Inductor's tuning off", FINAL, tu),
        ):
            rows.append(
                f"| {label} | {t.lohi('attention')} | {t.lohi('norms, argmax')} | "
                f"{t.lohi('pointwise, copies')} | {lo_hi([x.gemvs for x in t.runs])} | "
                f"{statistics.median(self.per[name]['kernels']):.0f} | {rng(self.per[name]['tps'], '{:.1f}')} |"
            )
        f["attention_table"] = (
            "| loop | attention | norms, argmax | pointwise, copies | all GEMVs | kernels | "
            "tokens/s |\n|---|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows)
        )
        return f

    def runs_note(self) -> str:
        """How the current recordings were made: over how many days, and how many of their
        processes ran while another recording process ran beside them (the recorder runs one
        process per GPU at a time, so beside them means on another GPU of the host)."""
        import datetime as dt

        names = [*(n for n, _, _ in PATH), CHECK, "loop_compiled_1b", "loop_fused_1b"]
        spans, days = [], set()
        for n in names:
            for r in self.recs(n):
                at = str(r.env["recorded_at"])
                days.add(at[:10])
                end = dt.datetime.fromisoformat(at).timestamp()
                spans.append((end - float(r.env["wall_s"]), end))
        # recorded_at is stamped to the second, hence the 1 s of slack
        beside = sum(
            any(a < d - 1 and c < b - 1 for j, (c, d) in enumerate(spans) if j != i)
            for i, (a, b) in enumerate(spans)
        )
        # Only the kept recordings are compared: a process may also have run beside one
        # whose recording was replaced since, hence "at least".
        alone = (
            f"at least {beside} of their {len(spans)} processes ran while another recording "
            "process ran on a second GPU of the same host"
            if beside
            else f"none of their {len(spans)} processes ran beside another kept here"
        )
        return f"These repeats come from recording runs on {len(days)} days; {alone}."

    # --- sessions (part4-kernels)

    def sessions_of(self, v: str) -> list[tuple[str | None, Sequence[Rec]]]:
        """Every recording session of ``v`` the recordings keep, oldest first: each earlier
        one as (its name, its repeats), then the current repeats as (None, repeats)."""
        return [*((s.name, s.repeats) for s in self.sessions(v)), (None, self.recs(v))]

    @cached_property
    def kept(self) -> dict[str, list[list[dict[str, Any]]]]:
        """Per row with kept earlier sessions (in :data:`PATH` order), per session (oldest
        first, the current one last), per repeat: :func:`session_summary`."""
        return {
            n: [[session_summary(r) for r in reps] for _, reps in self.sessions_of(n)]
            for n, _, _ in PATH
            if self.sessions(n)
        }

    @cached_property
    def sess(self) -> dict[str, list[list[dict[str, Any]]]]:
        """:attr:`kept` for the rows of :data:`SESSION_ROWS` only."""
        return {v: self.kept[v] for v in SESSION_ROWS}

    def session_facts(self) -> Facts:
        sess = self.sess

        def repeats(v: str) -> list[dict[str, Any]]:
            return [x for ss in sess[v] for x in ss]

        uv = repeats(FINAL)
        tuned_launches = [x["launches"] for v in sess if v != FINAL for x in repeats(v)]
        assert len({x["launches"] for x in uv}) == 1 and len(set(tuned_launches)) == len(
            tuned_launches
        )
        assert all(x["fresh_compile_cache"] for x in uv) and all(len(sess[v]) > 1 for v in sess)
        f: Facts = {
            "sess_u_n": len(uv),
            "sess_u_sessions": len(sess[FINAL]),
            "sess_tuned_n": len(tuned_launches),
        }
        # The earlier sessions of the GEMV-kernel and cuDNN rows ran an earlier version of
        # the example, each saying how it differs (session.json); the others, the same code.
        # The first sessions of those two rows, the same number for each; none after them.
        other = {v: [s.code_changed is not None for s in self.sessions(v)] for v in SESSION_ROWS}
        n_other = sum(other["loop_kernels_8b"])
        for v in ("loop_kernels_8b", "loop_kernels_sdpa_8b"):
            assert n_other > 0 and other[v] == sorted(other[v], reverse=True)
            assert sum(other[v]) == n_other
        assert not any(other["loop_attention_8b"] + other[FINAL])
        f["n_other_code"] = n_other
        su = [x["tokens_per_s"] for x in uv]
        sa = [x["tokens_per_s"] for x in repeats("loop_attention_8b")]
        assert max(su) - min(su) < max(sa) - min(sa)  # a narrower range: steadier
        f["u_tps_all"], f["at_tps_all"] = lo_hi(su, "{:.1f}"), lo_hi(sa, "{:.1f}")
        # Faster? Only if every repeat of every session beat every repeat of the attention row.
        xa = repeats("loop_attention_8b")
        if min(su) > max(sa):
            f["u_vs_at"] = (
                "It was also faster: every repeat of it beat every repeat of the attention row."
            )
        else:
            row_days = {v: days(x["recorded_at"] for x in xs) for v, xs in (("u", uv), ("a", xa))}
            groups = {v: {slow_gemv(x) for x in xs} for v, xs in (("u", uv), ("a", xa))}
            assert groups["u"] == groups["a"] == {True, False}
            days_said = (
                f"both rows were recorded on {' and '.join(row_days['a'])}"
                if row_days["a"] == row_days["u"]
                else f"the attention row was recorded on {' and '.join(row_days['a'])} and "
                f"this row on {' and '.join(row_days['u'])}"
            )
            f["u_vs_at"] = (
                "Whether it is also faster, these recordings cannot say: the two ranges overlap, "
                f"{days_said}, and both rows ran in processes of both groups described in the "
                "next section."
            )
        late = (*KROWS, "loop_attention_8b", FINAL)
        when = sorted(r.env["recorded_at"] for v in late for r in self.recs(v))
        first, last = when[0][:16].replace("T", " "), when[-1][:16].replace("T", " ")
        span = (
            f"on {first[:10]}, {first[11:]}–{last[11:]} UTC"
            if first[:10] == last[:10]
            else f"from {first} to {last} UTC"
        )
        env = self.recs(FINAL)[0].stamp_line().split(" (repeat")[0].rsplit(" ", 3)[0]
        assert env.startswith("Recorded on ")
        f["k_stamp"] = f"{env.removeprefix('Recorded ').rstrip(',')}, {span}"
        assert all(r.meta["process"].get("fresh_compile_cache") for v in late for r in self.recs(v))
        assert sum(not x["fresh_compile_cache"] for v in sess for x in repeats(v)) > 0
        # The first sessions of those two rows shared the host's compile cache; the later
        # ones (the current one among them) compiled afresh in every process.
        shared = {
            v: [not any(x["fresh_compile_cache"] for x in ss) for ss in sess[v]]
            for v in ("loop_kernels_8b", "loop_kernels_sdpa_8b")
        }
        for v, sh in shared.items():
            assert sh == sorted(sh, reverse=True) and not sh[-1]
            assert all(
                x["fresh_compile_cache"]
                for ss, s_ in zip(sess[v], sh, strict=True)
                if not s_
                for x in ss
            )
        assert len({sum(sh) for sh in shared.values()}) == 1
        f["n_shared_sessions"] = sum(shared["loop_kernels_8b"])
        # The GEMVs' remaining spread: two groups, by the copy rate each process measured.
        allr = [x for v in sess for x in repeats(v)]
        lo_g, hi_g = [x for x in allr if not slow_gemv(x)], [x for x in allr if slow_gemv(x)]
        assert (
            lo_g
            and hi_g
            and max(x["copy_tbs"] for x in lo_g) < min(x["copy_tbs"] for x in hi_g) - 0.015
        )
        assert max(x["gemv_us"] for x in lo_g) < min(x["gemv_us"] for x in hi_g)
        for key, grp in (("glo", lo_g), ("ghi", hi_g)):
            f[f"{key}_copy"] = lo_hi([x["copy_tbs"] for x in grp], "{:.3f}")
            f[f"{key}_gemv"] = lo_hi([x["gemv_us"] for x in grp])
            f[f"{key}_n"] = len(grp)
        f["u_in_hi"] = sum(x in hi_g for x in uv)
        f["sess_rows"] = len(sess)
        kv, sv, av = (
            repeats("loop_kernels_8b"),
            repeats("loop_kernels_sdpa_8b"),
            repeats("loop_attention_8b"),
        )
        gem = [x["gemv_us"] for x in kv + sv + av + uv]
        assert max(gem) < 1.03 * min(gem)
        f["sess_gemv"] = lo_hi(gem)
        att = [x["attention_us"] for x in kv]
        assert max(att) > 2 * min(att)
        f["sess_att"] = lo_hi(att)
        k_gemv = [x["gemv_us"] for x in kv]  # the same row's GEMVs vary far less
        assert max(att) - min(att) > 5 * (max(k_gemv) - min(k_gemv))
        f["sess_k_gemv"] = lo_hi(k_gemv)
        grids = sorted({x["softmax_grid"] for x in kv}, key=int, reverse=True)
        f["sess_grids"] = ", ".join(f"{int(g):,}" for g in grids[:-1]) + f" or {int(grids[-1]):,}"
        aatt = [x["attention_us"] for x in av + uv]
        assert max(aatt) < 1.03 * min(aatt) and max(aatt) < min(att)
        f["sess_a_att"] = lo_hi(aatt)
        hits = {
            k: sum(x["hbm_fraction_spec"] >= GOAL for x in v)
            for k, v in (("k", kv), ("s", sv), ("a", av), ("u", uv))
        }
        assert (
            0 < hits["k"] < len(kv)
            and hits["s"] < len(sv)
            and hits["a"] < len(av)
            and hits["u"] == len(uv)
        )
        # The other 8B rows that reached the goal in every current repeat: in every repeat of
        # every session they were recorded in, or in their current session only.
        others = [
            (n, what)
            for n, what, shape in PATH
            if shape == "8B" and n != FINAL and min(self.per[n]["frac"]) >= GOAL
        ]

        def every_repeat(n: str) -> list[Rec]:  # its kept earlier sessions' and the current
            return [r for _, reps in self.sessions_of(n) for r in reps]

        always = [
            (n, w)
            for n, w in others
            if all(res(r)["hbm_fraction_spec"] >= GOAL for r in every_repeat(n))
        ]
        lately = [(n, w) for n, w in others if (n, w) not in always]

        def rows(xs: list[tuple[str, str]]) -> str:
            names = [f"*{w}*" for _, w in xs]
            return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]

        said = []
        if always:
            kept = [n for n, _ in always if self.sessions(n)]
            assert not kept or len(kept) == len(always)
            said.append(
                f", and {rows(always)} in every repeat of "
                + (
                    "every session"
                    if kept
                    else (
                        "its current session (the recordings keep no earlier one)"
                        if len(always) == 1
                        else "their current sessions (the recordings keep no earlier ones)"
                    )
                )
            )
        if lately:
            said.append(
                f". {({1: 'One', 2: 'Two', 3: 'Three', 4: 'Four'}).get(len(lately), len(lately))} more "
                + ("rows" if len(lately) > 1 else "row")
                + " reached it in every current repeat but not in every repeat of "
                + ("their" if len(lately) > 1 else "its")
                + " earlier sessions (table below): "
                + "; ".join(f"*{w}*" for _, w in lately)
            )
        f["goal_others"] = "".join(said) if said else ", and no other row did that"
        f.update({f"sess_{k}_hits": v for k, v in hits.items()})
        f.update(
            sess_k_n=len(kv),
            sess_s_n=len(sv),
            sess_a_n=len(av),
            n_k_sessions=len(sess["loop_kernels_8b"]),
            n_a_sessions=len(sess["loop_attention_8b"]),
        )
        fu = [x["hbm_fraction_spec"] for x in uv]
        f["sess_u_lo"], f["sess_u_hi"] = 100 * min(fu), 100 * max(fu)
        labels = {name: what for name, what, _ in PATH}
        table = []
        assert set(SESSION_ROWS) <= set(self.kept)
        f["kept_rows"] = len(self.kept)
        for v, kept_v in self.kept.items():
            xs = [x for ss in kept_v for x in ss]
            on = days(x["recorded_at"] for x in xs)
            table.append(
                f"| {labels[v]} | {len(kept_v)} | {len(xs)} | "
                f"{sum(x['hbm_fraction_spec'] >= GOAL for x in xs)} | "
                f"{on[0]}{' to ' + on[-1] if len(on) > 1 else ''} |"
            )
        f["sessions_table"] = (
            f"| row | sessions | repeats | repeats at {100 * GOAL:.0f} % or more | recorded |\n"
            "|---|---:|---:|---:|---|\n" + "\n".join(table)
        )
        copy_k = [res(r)["copy_tbs"] for v in late for r in self.recs(v)]
        f["copy_k_lo"], f["copy_k_hi"] = min(copy_k), max(copy_k)
        copy_f = [res(r)["copy_tbs"] for r in self.recs("loop_fused_8b")]
        f["copy_f_lo"], f["copy_f_hi"] = min(copy_f), max(copy_f)
        assert abs(statistics.median(copy_k) / statistics.median(self.copy) - 1) < 0.02
        return f

    # --- the final loop, class by class (the lesson; the details in part4-kernels)

    def final_facts(self) -> Facts:
        tu = self.table(FINAL)
        b8 = tim(self.recs(FINAL)[0])["bytes_per_token"]["total"]
        ff = [res(r)["hbm_fraction_spec"] for r in self.recs(FINAL)]
        tpsf = [res(r)["tokens_per_s"] for r in self.recs(FINAL)]
        assert (
            min(ff) >= GOAL and min(tpsf) >= GOAL * SPEC_TBS * 1e12 / b8
        )  # the goal, in every repeat
        nb = gemv_bytes(self.shapes["8b"])
        floor_us = (sum(32 * nb[c] for c in GEMV_CLASSES) + nb["lm_head"]) / (SPEC_TBS * 1e12) * 1e6
        f: Facts = {
            "class_table_final": tu.markdown(),
            "final_frac": 100 * statistics.median(ff),
            "final_frac_lo": 100 * min(ff),
            "final_frac_hi": 100 * max(ff),
            "final_fracc": 100
            * statistics.median(res(r)["hbm_fraction_copy"] for r in self.recs(FINAL)),
            "f_token_us": tu.token,
            "f_gemv_over_us": sum(tu.med[c] for c in tu.gbs) - floor_us,
            "f_small_us": sum(tu.med[c] for c in OTHER),
            "f_rest_us": tu.rest,
            "f_gemv_us": sum(tu.med[c] for c in tu.gbs),
            "f_floor_us": floor_us,
            "f_gemv_pct": 100 * sum(tu.med[c] for c in tu.gbs) / tu.token,
            "f_lost_us": tu.token - floor_us,
            "f_ms": statistics.median(res(r)["ms_per_token"] for r in self.recs(FINAL)),
        }
        f.update({f"f_{c}_gbs": tu.gbs[c] for c in tu.gbs})
        f.update({f"f_{c.split(',')[0]}_us": tu.med[c] for c in CLASSES})
        for x in tu.runs:  # every claim below, on every repeat
            g = x.gbs
            assert min(g[c] for c in ("gate_up", "down", "lm_head")) > max(g["qkv"], g["o"])
            assert g["o"] < g["qkv"]
            small, over = sum(x.t[c] for c in OTHER), x.gemvs - floor_us
            assert small > over > x.rest > 0
        copies = []
        for r in self.recs(FINAL):  # a copy kernel in each layer, between its GEMVs
            tr = r.trace()
            ops = token_ops(tr)
            c = [g for g in ops if tr.name(g).startswith("triton_poi_fused_add_copy_")]
            gv = [g for g in ops if tr.name(g) == "gemv_kernel"]
            starts = [tr.ts_ns[g] for g in gv[0:-1:4]] + [tr.ts_ns[gv[-1]]]
            assert len(c) == 32 and all(
                a < tr.ts_ns[g] < b for g, a, b in zip(c, starts, starts[1:], strict=False)
            )
            copies.append(sum(float(tr.dur_ns[g]) for g in c) / 1e3)
        f["add_copy_us"] = lo_hi(copies)
        # The layer pictures: one attention kernel of ours where the fused loop ran three,
        # Inductor's mask kernel, a memset and cuDNN's kernel; in the final loop Inductor
        # computes the mask (``le``) in rotary-embedding kernels (``cos``), counted as
        # pointwise. The small kernels around it no fewer and no shorter than in the fused loop.
        t8 = self.table("loop_fused_8b")
        assert {x.n["attention"] for x in tu.runs} == {32} and {
            x.n["attention"] for x in t8.runs
        } == {96}
        for r in self.recs("loop_fused_8b"):
            tr = r.trace()
            att = [tr.name(g) for c, _, g in classify(tr, token_ops(tr), 32) if c == "attention"]
            assert all(
                a.startswith("triton_poi_fused__scaled_dot_product_cudnn_attention")
                and "le" in a.split("_")
                and b == "Memset (Device)"
                and c.startswith("cudnn")
                for a, b, c in zip(att[::3], att[1::3], att[2::3], strict=True)
            )
        for r in self.recs(FINAL):
            tr = r.trace()
            rows = classify(tr, token_ops(tr), 32)
            assert all(c != "attention" or tr.name(g) == "attention_kernel" for c, _, g in rows)
            mask = [g for c, _, g in rows if {"le", "cos"} <= set(tr.name(g).split("_"))]
            assert len(mask) >= 32 and all(
                c == "pointwise, copies" for c, _, g in rows if g in mask
            )
        assert min(x.n["norms, argmax"] + x.n["pointwise, copies"] for x in tu.runs) >= max(
            x.n["norms, argmax"] + x.n["pointwise, copies"] for x in t8.runs
        )
        assert min(x.small for x in tu.runs) > max(x.small for x in t8.runs)
        return f

    # --- a small model (part4-notes)

    def small_model_facts(self) -> Facts:
        t1, t8 = self.table("loop_fused_1b", "1b"), self.table("loop_fused_8b")
        f1 = [res(r)["hbm_fraction_spec"] for r in self.recs("loop_fused_1b")]
        fr = self.per["loop_fused_8b"]["frac"]
        assert max(f1) < min(fr)
        f: Facts = {
            "class_table_1b": t1.markdown(),
            "s1_frac": 100 * statistics.median(f1),
            "s8_frac": 100 * statistics.median(fr),
            "s1_kernels": statistics.median(
                decode_steps(r.trace())[0].kernels for r in self.recs("loop_fused_1b")
            ),
            "s8_kernels": statistics.median(self.per["loop_fused_8b"]["kernels"]),
        }
        b1, b8 = gemv_bytes(self.shapes["1b"]), gemv_bytes(self.shapes["8b"])
        for c in ("o", "down", "qkv"):
            f[f"s1_{c}_gbs"] = t1.gbs[c]
            assert max(x.gbs[c] for x in t1.runs) < min(x.gbs[c] for x in t8.runs), (
                c
            )  # every repeat
            assert b1[c] / b8[c] < 0.3

        def other_share(t: Table) -> list[float]:
            """Per repeat: the share of the token that is not GEMVs (small kernels and the rest)."""
            return [(sum(x.t[c] for c in OTHER) + x.rest) / x.token_us for x in t.runs]

        o1, o8 = other_share(t1), other_share(t8)
        assert min(o1) > max(o8)
        f["s1_other_pct"], f["s8_other_pct"] = (
            100 * statistics.median(o1),
            100 * statistics.median(o8),
        )
        for c in OTHER:
            k = c.split(",")[0]
            f[f"s1_{k}_per_layer"], f[f"s8_{k}_per_layer"] = t1.med[c] / 16, t8.med[c] / 32
        return f

    # --- the final loop's logits, and a host read per token (the logits-check recording)

    def logits_facts(self) -> Facts:
        """The final loop's logits at every decoded position against an fp32 reference of the
        same weights (teacher-forced on the loop's tokens), and the loop timed with and without
        a per-token ``.item()``, from the logits check's recording. (Its ``bf16_*`` fields are
        left out: that forward also had its rotary frequencies cast to bf16.)"""
        rs = self.recs(CHECK)
        f: Facts = {}
        for r in rs:
            x = res(r)
            n = len(x["positions"])
            assert (
                n == tim(r)["new_tokens"] - 1
                and x["weights_match"]
                and x["graphs_compiled_while_timed"] == 0
            )
            assert all(
                len(x[k]) == n for k in ("max_abs_diff", "rel_err", "argmax_agrees", "ref_gap")
            )
        per = [res(r) for r in rs]
        fused = max(tim(r)["fused_logits_max_abs_diff"] for r in self.recs("loop_fused_8b"))
        for x in (
            per
        ):  # where the loop's token is not fp32's top token, the two are within the loop's error
            assert x["prefill_agrees"] and x["weights_match"]
            flips = [
                (g, d)
                for g, d, ok in zip(
                    x["ref_gap"], x["max_abs_diff"], x["argmax_agrees"], strict=True
                )
                if not ok
            ]
            assert all(0 < g < d for g, d in flips)
            assert (
                0.5 * fused < statistics.median(x["max_abs_diff"]) < 2 * fused
            )  # the size reordering makes
        for r in (
            rs
        ):  # the profiled loop reads every token: one synchronize per token, then the GPU idles
            tr = r.trace()
            assert set(calls_per_step(tr, "cudaStreamSynchronize")) == {1}
            assert any(g.cause == "sync" for g in tracereader.gaps(tr, min_gap_us=100))
        item = [x["item_us_per_token"] for x in per]
        assert min(item) > 0
        for r in rs:  # the host read costs time in every round of every repeat
            t = tim(r)
            assert min(t["ms_per_token_item"]) > max(t["ms_per_token"])
        rel = [e for x in per for e in x["rel_err"]]
        agree = [sum(x["argmax_agrees"]) for x in per]
        gaps = [
            g for x in per for g, ok in zip(x["ref_gap"], x["argmax_agrees"], strict=True) if not ok
        ]
        f.update(
            lg_positions=len(per[0]["positions"]),
            lg_first=per[0]["positions"][0],
            lg_last=per[0]["positions"][-1],
            lg_rel_max=max(rel),
            lg_rel_med=statistics.median(rel),
            lg_abs_max=max(e for x in per for e in x["max_abs_diff"]),
            lg_agree=statistics.median(agree),
            lg_agree_lo=min(agree),
            lg_agree_hi=max(agree),
            lg_n_disagree=len(gaps),
            lg_gap_max=max(gaps) if gaps else 0.0,
            lg_prefill_all=all(x["prefill_agrees"] for x in per),
            item_us=statistics.median(item),
            item_us_lo=min(item),
            item_us_hi=max(item),
            item_tps=statistics.median(1e3 / x["ms_per_token_item"] for x in per),
            check_tps=statistics.median(x["tokens_per_s"] for x in per),
            fused_diff=fused,
            lg_abs_med=statistics.median(e for x in per for e in x["max_abs_diff"]),
            l2_mib=(self.l2_bytes() or 0) / 2**20,
            read_gap_ms=statistics.median(
                max(
                    (g.end_ns - g.start_ns) / 1e6
                    for g in tracereader.gaps(r.trace(), min_gap_us=100)
                    if g.cause == "sync"
                )
                for r in rs
            ),
        )
        rows = [
            f"| {k + 1} | {statistics.median(x['rel_err']):.3f} | {max(x['rel_err']):.3f} | "
            f"{statistics.median(x['max_abs_diff']):.2f} | {max(x['max_abs_diff']):.2f} | "
            f"{sum(x['argmax_agrees'])} of {len(x['positions'])} | "
            f"{max((g for g, ok in zip(x['ref_gap'], x['argmax_agrees'], strict=True) if not ok), default=0):.3f} | "
            f"{x['ms_per_token']:.3f} | {x['ms_per_token_item']:.3f} |"
            for k, x in enumerate(per)
        ]
        f["lg_table"] = (
            "| repeat | relative error, median | relative error, largest | largest difference, median "
            "| largest difference, largest | top token agrees | fp32 margin where not, largest "
            "| ms per token | ms per token with `.item()` |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows)
        )
        return f

    def l2_bytes(self) -> int | None:
        """The GPU's L2 size as the device reports it, stamped by the logits check (None
        until it is recorded)."""
        try:
            rs = self.recs(CHECK)
        except RuntimeError:  # tracesite's RecordingError: not recorded yet
            return None
        sizes = {res(r)["l2_cache_bytes"] for r in rs}
        assert len(sizes) == 1
        return int(sizes.pop())


def heaviest_pointwise(r: Rec) -> tuple[str, float, int, int, dict[str, tuple[float, int]]]:
    """The step's pointwise kernel with the most time: name, µs, grid, block, and every one's."""
    tr = r.trace()
    by: dict[str, tuple[float, int]] = {}
    for g in token_ops(tr):
        if tr.name(g).startswith("triton_poi"):
            us, g0 = by.get(tr.name(g), (0.0, g))
            by[tr.name(g)] = (us + float(tr.dur_ns[g]) / 1e3, g0)
    name, (us, g0) = max(by.items(), key=lambda kv: kv[1][0])
    return name, us, int(tr.extra["grid"][g0]), int(tr.extra["block"][g0]), by


def _argmax_kernel(tr: Trace) -> int:
    (g,) = [g for g in token_ops(tr) if "argmax" in tr.name(g)]
    return g


def argmax_us(r: Rec) -> float:
    tr = r.trace()
    return float(tr.dur_ns[_argmax_kernel(tr)]) / 1e3


def argmax_launch(rs: Sequence[Rec]) -> str:
    """The final argmax's grid and block, the same in every repeat."""
    out = set()
    for r in rs:
        tr = r.trace()
        g = _argmax_kernel(tr)
        out.add((int(tr.extra["grid"][g]), int(tr.extra["block"][g])))
    assert len(out) == 1
    g, b = out.pop()
    return f"{g} block{'s' * (g > 1)} of {b:,} threads"


def session_summary(r: Rec) -> dict[str, Any]:
    """What Part 4 compares across one repeat of a row's sessions: its headline results,
    whether its process compiled into an empty cache, and from one profiled token (step 2):
    the GPU time of its GEMVs and of its attention (the attention reductions: the scores,
    the softmax's preparation and the softmax, with the launch grid and block of the
    softmax kernel; or ``attention_kernel``), and its kernel launches (each kernel's name,
    grid and block, in order: two repeats with the same launches ran the same kernels on
    the same grids and blocks, though not necessarily with the same constants inside)."""
    tr = r.trace()
    ops = token_kernels(tr)
    names = [tr.name(g) for g in ops]
    gemv = [g for g, n in zip(ops, names, strict=True) if n == "gemv_kernel"]
    softmax = [
        g for g, n in zip(ops, names, strict=True) if n.startswith("triton_red") and "softmax" in n
    ]
    scores = [
        g
        for g, n in zip(ops, names, strict=True)
        if n.startswith("triton_red") and "cos" in n and "sum" in n
    ]
    prepare = [
        g for g, n in zip(ops, names, strict=True) if n.startswith("triton_per") and "softmax" in n
    ]
    attention = (
        softmax
        + scores
        + prepare
        + [g for g, n in zip(ops, names, strict=True) if n == "attention_kernel"]
    )
    return {
        "recorded_at": r.env["recorded_at"],
        "tokens_per_s": res(r)["tokens_per_s"],
        "hbm_fraction_spec": res(r)["hbm_fraction_spec"],
        "copy_tbs": res(r)["copy_tbs"],
        "fresh_compile_cache": bool(r.meta["process"].get("fresh_compile_cache")),
        "gemv_us": sum(float(tr.dur_ns[g]) for g in gemv) / 1e3,
        "attention_us": sum(float(tr.dur_ns[g]) for g in attention) / 1e3,
        "softmax_grid": str(tr.extra["grid"][softmax[0]]) if softmax else None,
        "softmax_block": str(tr.extra["block"][softmax[0]]) if softmax else None,
        "kernels": len(ops),
        "launches": launches(tr),
    }


def token_kernels(tr: Trace, step: str = "ProfilerStep#2") -> list[int]:
    """The kernels one step launched (its GPU ops without copies and sets), in the order
    they ran."""
    return [g for g in token_ops(tr, step) if tr.kind[g] == Kind.KERNEL]


def launches(tr: Trace, step: str = "ProfilerStep#2") -> tuple[tuple[str, str, str], ...]:
    """One profiled token's kernel launches, in order: each kernel's name, grid and block."""
    return tuple(
        (tr.name(g), str(tr.extra["grid"][g]), str(tr.extra["block"][g]))
        for g in token_kernels(tr, step)
    )


def gemv_rows(shape: dict[str, int]) -> list[int]:
    """The output rows of one layer's four GEMVs (q/k/v, output, gate/up with the
    activation, down), in the order a token launches them: ``gemv_kernel`` runs one program
    per output row."""
    q, kv = (
        shape["num_attention_heads"] * shape["head_dim"],
        shape["num_key_value_heads"] * shape["head_dim"],
    )
    h, i = shape["hidden_size"], shape["intermediate_size"]
    return [q + 2 * kv, h, i, h]


def slow_gemv(x: dict[str, Any]) -> bool:
    """The session repeats whose processes measured the faster copy and ran the slower GEMVs."""
    return bool(x["copy_tbs"] >= 4.26)


# ---------------------------------------------------------------------- what the pictures show


def python_gap_op(tr: Trace) -> int:
    """The GPU op after the longest idle gap of the sync picture's window (generate()'s Python)."""
    return int(max(tracereader.gaps(tr, window=sync_window(tr)), key=lambda g: g.gap_us).next_op)


def decode_zoom(
    tr: Trace, before_us: float = 120, after_us: float = 80
) -> tuple[tuple[int, int], int, int]:
    """A window in the middle of an eager decode token (step 2): the window, one of its
    nvjet GEMMs and that GEMM's launch call."""
    nv = [g for g in token_ops(tr) if tile(tr.name(g))]
    g = nv[len(nv) // 4]
    start = int(tr.ts_ns[g])
    return (start - int(before_us * 1e3), start + int(after_us * 1e3)), g, int(link(tr).launch[g])


def syncs(tr: Trace, step: str = "ProfilerStep#2") -> list[int]:
    """The step's ``cudaStreamSynchronize`` calls, in time order."""
    return [int(i) for i in tr.where(name="cudaStreamSynchronize", within=_in(tr, step))]


def graph_launches(tr: Trace) -> list[int]:
    """The trace's ``cudaGraphLaunch`` calls, in time order."""
    return [int(i) for i in tr.where(name="cudaGraphLaunch")]


def tokens_window(tr: Trace) -> tuple[int, int]:
    """From the first decode step's start to the end of the last step's last GPU op."""
    steps = decode_steps(tr)
    return steps[0].start_ns, int(tr.end_ns[token_ops(tr, steps[-1].name)[-1]])


def longest_gap_us(tr: Trace, step: str = "ProfilerStep#2") -> float:
    """The longest GPU idle gap among the step's own GPU ops, µs."""
    ops = token_ops(tr, step)
    starts, ends = tr.ts_ns[ops], np.maximum.accumulate(tr.end_ns[ops])
    return float((starts[1:] - ends[:-1]).max()) / 1e3


def layer_window(
    tr: Trace, layers: int = 32, layer: int = 5
) -> tuple[tuple[int, int], dict[str, int]]:
    """One layer of a fused loop's step-2 token: the window from its q/k/v GEMV to the
    next layer's, and the row of its first op of each class."""
    rows = classify(tr, token_ops(tr), layers)
    gemvs = [i for i, (c, _, _) in enumerate(rows) if c in GEMV_CLASSES or c == "lm_head"]
    a, b = gemvs[4 * layer], gemvs[4 * layer + 4]
    first: dict[str, int] = {}
    for c, _, g in rows[a:b]:
        first.setdefault(c, g)
    return (int(tr.ts_ns[rows[a][2]]) - 2000, int(tr.ts_ns[rows[b][2]]) + 1000), first


def sync_window(tr: Trace, after_us: float = 400) -> tuple[int, int]:
    """From step 2's start to a little after its last synchronize call."""
    step = tr.step("ProfilerStep#2")
    return step.start_ns, int(tr.end_ns[syncs(tr)[-1]]) + int(after_us * 1e3)
