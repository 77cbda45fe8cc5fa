"""What the cheatsheet's facts and pictures share (``cheatsheet.md``): its recordings, read
for the current repeat, the events its entries pick, and how it writes numbers.

``REC``, ``T`` and ``LN`` give the current repeat's recording, trace and links of each
variant. Inside a facts run (:func:`bind`) that is the run's current repeat, so each claim
is checked on every repeat and each number put into the text is the median over them; in
the page (nothing bound) it is the repeat :mod:`tracesite.notebook` reads, the drawn one.
Nothing here is typed by hand: the only figures not read from a recording are the Hugging
Face post's (``HF``), cited as theirs.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tracesite import notebook
from tracesite._source import statements
from tracesite.facts import Fmt, claim
from tracesite.notebook import interleaved_calls, medians, unprofiled_calls
from tracesite.recordings import Recording, Variant

from tracereader import Kind, link

HERE = Path(__file__).resolve().parents[1]  # docs/, beside the page
EXAMPLE = "01_matmul_add"
NAMES = [
    "64_bf16", "4096_bf16", "64_bf16_cold", "4096_bf16_cold", "64_bf16_nowait",
    "64_bf16_20steps", "64_bf16_20steps_cold", "64_bf16_export_after", "64_bf16_batch8",
    "4096_bf16_20steps", "4096_fp32", "4096_fp32_tf32", "64_bf16_addmm", "64_bf16_compile",
    "4096_bf16_compile", "64_bf16_reduce_overhead", "interleaved_64",
]  # fmt: skip

#: The facts run the helpers read through and put into (:func:`bind`); ``None``: the page's
#: notebook helpers (:mod:`tracesite.notebook`).
_facts: Any = None


def bind(f: Any) -> None:
    """Read the recordings through the facts run ``f`` and put numbers into it (``None``:
    through :mod:`tracesite.notebook`, as the page does)."""
    global _facts
    _facts = f


def _reader() -> Any:
    return notebook if _facts is None else _facts


def rec(name: str, example: str | None = None) -> Recording:
    """The current repeat of ``name`` (of the page's example, or of ``example``)."""
    found: Recording = _reader().rec(name, example)
    return found


def recs(name: str) -> list[Recording]:
    """Every repeat of ``name``."""
    found: list[Recording] = _reader().recs(name)
    return found


def variant(name: str, example: str | None = None) -> Variant:
    """Every repeat (and every earlier session) of ``name``."""
    found: Variant = _reader().variant(name, example)
    return found


class ByRepeat:
    """``mapping[name]``: ``make(name)`` for the current repeat's recording of ``name``, made
    once per recording."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.cache: dict[Any, Any] = {}

    def __getitem__(self, name: str) -> Any:
        key = rec(name).trace_path
        if key not in self.cache:
            self.cache[key] = self.make(name)
        return self.cache[key]


# The current repeat's recording, trace and links of each variant: the facts run reads
# every recorded repeat in turn, so each claim is checked on all of them, and each number
# put into the text is the median over them.
REC = ByRepeat(rec)
T = ByRepeat(lambda n: REC[n].trace())
LN = ByRepeat(lambda n: link(T[n]))


def _example_defaults() -> dict[str, Any]:
    """The example's own defaults (the schedule), read from its source, not retyped here
    (from the helper module beside the story, where the story imports its harness from one)."""
    story = HERE.parent / "examples" / "01_matmul_add" / "01a_table_and_timeline.py"
    body = [stmt for _, stmt in statements(story)]
    fn = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == "profile_matmul_add")
    return {
        a.arg: ast.literal_eval(d)
        for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)
        if d is not None
    }


DEFAULTS = _example_defaults()


def param(name: str, key: str) -> Any:
    return REC[name].params.get(key, DEFAULTS[key])


def us(x: float) -> Fmt:
    """A duration given in µs, written to three significant figures in µs, ms or s."""
    return Fmt(x, _us)


def _us(x: float) -> str:
    x = float(x)
    unit, scale = ("s", 1e6) if x >= 1e6 else ("ms", 1e3) if x >= 1e3 else ("µs", 1.0)
    v = x / scale
    text = f"{v:.0f}" if v >= 100 else f"{v:#.3g}" if v >= 0.01 else f"{v:.2g}"
    return f"{text} {unit}"


def their(x: float) -> str:
    """A figure quoted from the Hugging Face post, as they gave it (no added precision)."""
    x = float(x)
    return f"{x / 1e3:.6g} ms" if x >= 1e3 else f"{x:.6g} µs"


def times(x: float) -> Fmt:
    return Fmt(x, lambda v: f"{v:.1f}×" if v < 10 else f"{v:,.0f}×")


def pct(x: float, digits: int = 0) -> Fmt:
    return Fmt(x, lambda v: f"{v:.{digits}f} %")


def put(key: str, value: Any) -> None:
    """Glue a value for {glue:md}`key` in the text (the median over repeats, in ``f.repeats``)."""
    _reader().put(key, value)


def code(text: str) -> str:
    return f"`{text}`"


def in_step(trace: Any, step: int | str, **where: Any) -> Any:
    s = trace.step(step)
    return trace.where(within=(s.start_ns, s.end_ns), **where)


def one(rows: Any) -> int:
    rows = np.asarray(rows)
    claim(len(rows) == 1, f"exactly one event matches (found {len(rows)})")
    return int(rows[0])


def step_kernel(name: str, step: int, wanted: Callable[[str], bool]) -> int:
    """The first GPU op launched in step ``step`` of ``name`` whose name is ``wanted``."""
    t = T[name]
    return next(int(o) for o in LN[name].gpu_ops_of(t.step(step).event) if wanted(t.name(o)))


def step_gemm(name: str, step: int) -> int:
    """The GEMM (the ``nvjet`` kernel) launched in step ``step`` of ``name``."""
    return step_kernel(name, step, lambda kernel: kernel.startswith("nvjet"))


def step_add(name: str, step: int) -> int:
    """The add kernel (``CUDAFunctor_add``) launched in step ``step`` of ``name``."""
    return step_kernel(name, step, lambda kernel: "CUDAFunctor_add" in kernel)


def gemm_of(name: str) -> tuple[Any, Any, str]:
    """The trace of ``name``, its GEMM kernels (``gemm`` in the name) and their one name."""
    t = T[name]
    rows = t.where(kind=Kind.KERNEL, contains="gemm")
    names = {t.name(i) for i in rows}
    claim(len(names) == 1, f"the recording's GEMM kernels all have one name ({names})")
    return t, rows, names.pop()


def lead_us(t: Any, step: int) -> tuple[float, int, int]:
    """In step ``step``: from the start of the ``matmul_add`` range to its ``aten::matmul``'s,
    in µs; with the range and the op."""
    ann = one(in_step(t, step, kind=Kind.USER_ANNOTATION, name="matmul_add"))
    mat = one(in_step(t, step, name="aten::matmul"))
    return (t.ts_ns[mat] - t.ts_ns[ann]) / 1e3, ann, mat


def table_totals(name: str) -> tuple[float, float]:
    """'Self CPU time total' and 'Self CUDA time total' of the profiler's table, in µs."""
    totals = REC[name].table_totals_us()
    return totals["self_cpu_us"], totals["self_cuda_us"]


def table_rows(name: str, prefix: str) -> list[dict[str, Any]]:
    """Rows of the profiler's table whose name starts with ``prefix``, as numbers."""
    return [row for row in REC[name].table_rows() if row["name"].startswith(prefix)]


def cpu_ratios(version: str, base: str = "eager", bare: bool = False) -> list[float]:
    """CPU time per call of ``version`` over ``base``, one ratio per recorded process, from
    the interleaved recording (all versions in turn in one process, in a balanced order);
    ``bare``: the calls timed without the profiler, else those timed under it."""
    out = []
    for r in recs("interleaved_64"):
        calls = unprofiled_calls(r) if bare else interleaved_calls(r.trace(), (version, base))
        m = medians(calls)
        out.append(m[version] / m[base])
    return out


def ratio_range(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}×"


def after_call_us(t: Any, ln: Any, k: int) -> float:
    """From the END of a GPU op's launch call to the op's start, in µs."""
    c = int(ln.launch[k])
    return (int(t.ts_ns[k]) - int(t.ts_ns[c] + t.dur_ns[c])) / 1e3


def idle_before_us(t: Any, ln: Any, k: int) -> float:
    """How long the GPU lane was idle right before op ``k`` (inf: nothing ran before it)."""
    g = ln.gpu_ops[t.ts_ns[ln.gpu_ops] < t.ts_ns[k]]
    return (int(t.ts_ns[k]) - int((t.ts_ns[g] + t.dur_ns[g]).max())) / 1e3 if len(g) else np.inf


# Figures from the Hugging Face post (A100-SXM4-80GB), cited as theirs, never as ours:
# https://huggingface.co/blog/torch-profiler ("Profiling in PyTorch (Part 1)").
HF: dict[str, Any] = {
    "cpu_64_us": 2314.0, "cuda_64_us": 23.104,
    "cpu_4096_us": 4908.0, "cuda_4096_us": 4495.0,
    "gap_first_us": 227.757, "gap_later_us": 5.521,
    "sync_us": 1780.0, "sync_gpu_us": 26.0, "offset_us": 2500.0,
    "gemm_mean_us": 1084.0, "gemm_typical_us": 580.0,
    "memcpy_us": 33.0,
    "add_registers": 32,
    "gemm_name": "ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_nn",
}  # fmt: skip
