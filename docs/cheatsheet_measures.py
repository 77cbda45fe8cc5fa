"""The computations behind the cheatsheet (docs/cheatsheet.md), one function per entry.

Each entry function reads the recordings, asserts every claim its entry makes, glues the
numbers its text shows (:func:`tracesite.notebook.put`) and returns a thunk that draws the
entry's picture. The page calls each in a ``%%repeats`` cell
(``pic = cs.overhead(); pic()``): the function runs once per recorded repeat, so every
assert holds on every repeat and each glued number is the median; the picture is drawn
once, from the first repeat. Nothing here is typed by hand: the only figures not read from
a recording are the Hugging Face post's (``HF``), cited as theirs.
"""

from __future__ import annotations

import ast
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.patches import Patch
from PIL import Image
from tracesite.html import FigureHTML
from tracesite.notebook import (
    ByRepeat,
    Fmt,
    interleaved_calls,
    medians,
    op_per_call,
    rec,
    recs,
    setup,
    unprofiled_calls,
    verdict,
)
from tracesite.notebook import put as _put

from tracereader import (
    Callout,
    Kind,
    compare_timelines,
    gaps,
    gpu_busy_us,
    kernel_table,
    link,
    op_table,
    step_times,
    timeline,
)

HERE = Path(__file__).resolve().parent
EXAMPLE = "01_matmul_add"
NAMES = [
    "64_bf16", "4096_bf16", "64_bf16_cold", "4096_bf16_cold", "64_bf16_nowait",
    "64_bf16_20steps", "64_bf16_20steps_cold", "64_bf16_export_after", "64_bf16_batch8",
    "4096_bf16_20steps", "4096_fp32", "4096_fp32_tf32", "64_bf16_addmm", "64_bf16_compile",
    "4096_bf16_compile", "64_bf16_reduce_overhead", "interleaved_64",
]  # fmt: skip
setup(EXAMPLE)
# The current repeat's recording, trace and links of each variant: every cell of the page
# that starts with %%repeats runs once per recorded repeat, so each claim is checked on all
# of them, and each number put into the text is the median over them.
REC = ByRepeat(rec)
T = ByRepeat(lambda n: REC[n].trace())
LN = ByRepeat(lambda n: link(T[n]))


def _example_defaults() -> dict[str, Any]:
    """The example's own defaults (the schedule), read from its source, not retyped here."""
    story = HERE.parent / "examples" / "01_matmul_add" / "01a_table_and_timeline.py"
    src = ast.parse(story.read_text(encoding="utf-8"))
    fn = next(
        n for n in src.body if isinstance(n, ast.FunctionDef) and n.name == "profile_matmul_add"
    )
    return {
        a.arg: ast.literal_eval(d)
        for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)
        if d is not None
    }


DEFAULTS = _example_defaults()


def param(name: str, key: str) -> Any:
    return REC[name].params.get(key, DEFAULTS[key])


WIDTH_IN, DPI = 7.6, 80
#: The training-step entries' pictures, a little narrower: the page stays within its 1.5 MB.
TRAIN_WIDTH_IN, TRAIN_COLORS = 6.4, 16
ALTS: dict[str, str] = {}


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
    """Glue a value for {glue:md}`key` in the text (the median over repeats, in %%repeats)."""
    _put(key, value)


def code(text: str) -> str:
    return f"`{text}`"


class SmallFigure(FigureHTML):
    """:class:`FigureHTML`, with the PNG reduced to a 32-colour palette (about a quarter of the bytes)."""

    def __init__(self, fig: Any, alt: str, caption: str, dpi: int, colors: int = 32) -> None:
        super().__init__(fig, alt=alt, caption=caption, dpi=dpi)
        img = Image.open(io.BytesIO(self.png)).convert("RGB")
        buf = io.BytesIO()
        img.quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(buf, "PNG", optimize=True)
        self.png = buf.getvalue()


def picture(key: str, fig: Any, caption: str, extra_alt: str = "", colors: int = 32) -> SmallFigure:
    """Show a figure as a small PNG, with its generated alt text (plus ``extra_alt``)."""
    alt = " ".join((fig.tracereader_alt + " " + extra_alt).split())
    assert alt, key
    ALTS[key] = alt  # a %%repeats cell shows its picture on every repeat; the last one is drawn
    return SmallFigure(fig, alt=alt, caption=caption, dpi=DPI, colors=colors)


def shade(fig: Any, trace: Any, rows: Any, label: str) -> str:
    """Mark events the timeline leaves out (the profiler's own overhead) as bands."""
    ax = fig.axes[0]
    start = fig.tracereader_info["window"]["start_ns"]
    scale = 1e6 if "(ms)" in ax.get_xlabel() else 1e3
    parts = []
    for i in rows:
        x0 = (int(trace.ts_ns[i]) - start) / scale
        x1 = (int(trace.ts_ns[i] + trace.dur_ns[i]) - start) / scale
        ax.axvspan(x0, x1, color="#bbbbbb", alpha=0.35, hatch="..", lw=0, zorder=0)
        parts.append(f"{trace.name(i)} ({us(trace.dur_ns[i] / 1e3)})")
    band = Patch(facecolor="#bbbbbb", alpha=0.35, hatch="..", label=label)
    fig.legend(handles=[band], loc="outside upper right", fontsize=9, frameon=False)
    return f"Shaded bands, {label}: " + "; ".join(parts) + "."


def win(trace: Any, rows: Any, pad_us: float = 5.0) -> tuple[int, int]:
    """The window spanning some events, padded."""
    rows = np.asarray(rows)
    pad = int(pad_us * 1e3)
    return int(trace.ts_ns[rows].min()) - pad, int(
        (trace.ts_ns[rows] + trace.dur_ns[rows]).max()
    ) + pad


def in_step(trace: Any, step: int | str, **where: Any) -> Any:
    s = trace.step(step)
    return trace.where(within=(s.start_ns, s.end_ns), **where)


def one(rows: Any) -> int:
    rows = np.asarray(rows)
    assert len(rows) == 1, f"expected one event, found {len(rows)}"
    return int(rows[0])


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


def median_step_us(name: str) -> float:
    return float(np.median([s.dur_us for s in T[name].steps]))


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


def intro() -> None:
    """The page's opening: the recordings' names and stamps, and the post's figures."""
    # The text names each recording by its size and dtype: check the names say what was run.
    for n in NAMES[:-1]:
        assert param(n, "size") == int(n.split("_")[0]), n
        assert param(n, "dtype") == ("float32" if "_fp32" in n else "bfloat16"), n
    env = REC["64_bf16"].env
    for r in (rep for n in NAMES for rep in recs(n)):  # one machine and software stack
        assert all(r.env.get(k) == env.get(k) for k in ("gpu", "driver", "torch", "cuda")), (
            r.variant
        )
    for key in ("gpu", "torch", "cuda", "driver"):
        put(key, env[key])
    put("n_recordings", len(NAMES))
    put("n_repeats", len(recs("64_bf16")))
    for k, v in HF.items():
        put("hf_" + k, their(v) if k.endswith("_us") else code(v) if isinstance(v, str) else v)


# --------------------------------------------------------------------------- the entries


def overhead() -> Callable[[], SmallFigure]:
    """Entry: *Self CPU* total far above *Self CUDA* total."""
    cpu, cuda = table_totals("64_bf16")
    ratio = cpu / cuda
    assert ratio > 10, "the 64x64 run should be overhead-bound"
    assert all(s.verdict == "overhead-bound" for s in step_times(T["64_bf16"]))
    put("ovh_cpu", us(cpu))
    put("ovh_cuda", us(cuda))
    put("ovh_ratio", times(ratio))
    put("ovh_hf_ratio", times(HF["cpu_64_us"] / HF["cuda_64_us"]))
    put("ovh_gpu_pct", pct(100 * max(s.gpu_fraction for s in step_times(T["64_bf16"])), 1))
    fig = compare_timelines(
        [T["64_bf16"], T["4096_bf16"]], [4, 4], ["64×64", "4096×4096"], width_in=WIDTH_IN
    )
    return lambda: picture(
        "overhead",
        fig,
        "Recordings 64_bf16 and 4096_bf16, ProfilerStep#4 of each, on one time scale.",
    )


def compute() -> Callable[[], SmallFigure]:
    """Entry: CPU and CUDA totals of the same order."""
    cpu, cuda = table_totals("4096_bf16")
    assert 0.1 < cpu / cuda < 10, "the 4096x4096 run should be balanced"
    assert all(s.verdict == "compute-bound" for s in step_times(T["4096_bf16"]))
    put("cmp_cpu", us(cpu))
    put("cmp_cuda", us(cuda))
    t = T["4096_bf16"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    busy = gpu_busy_us(t, window=(int(t.ts_ns[sync]), int(t.ts_ns[sync] + t.dur_ns[sync])))
    assert busy > 0.5 * t.dur_ns[sync] / 1e3
    g = LN["4096_bf16"].gpu_ops
    g0, g1 = int(t.ts_ns[g].min()), int((t.ts_ns[g] + t.dur_ns[g]).max())
    assert gpu_busy_us(t, window=(g0, g1)) > 0.7 * (g1 - g0) / 1e3, "the GPU row is mostly solid"
    put("cmp_sync_busy", pct(100 * busy / (t.dur_ns[sync] / 1e3), 0))
    put("cmp_sync", us(t.dur_ns[sync] / 1e3))
    steps_us = sum(st.dur_us for st in t.steps)
    put("cmp_steps", us(steps_us))
    assert cuda > 0.7 * steps_us  # the GPU has as much to do as the CPU's steps, or more
    fig = timeline(t, callouts=[Callout("GPU still busy", event=sync)], width_in=WIDTH_IN,
                   title="4096_bf16: the whole recorded window")  # fmt: skip
    return lambda: picture(
        "compute",
        fig,
        f"Recording 4096_bf16, all {len(t.steps)} recorded steps and the final synchronize.",
    )


def hotspot() -> Callable[[], SmallFigure]:
    """Entry: One row owns most of the CUDA time."""
    (row,) = table_rows("4096_bf16", "nvjet")
    kt = kernel_table(T["4096_bf16"]).to_records()
    top = kt[0]
    assert top["name"].startswith("nvjet"), "the GEMM should top the kernel table"
    assert row["self_cuda_pct"] > 50 and abs(row["self_cuda_pct"] - top["pct"]) < 1.0
    put("hot_pct", pct(row["self_cuda_pct"], 0))
    put("hot_name", code(top["name"]))
    t = T["4096_bf16"]
    k = next(
        int(o) for o in LN["4096_bf16"].gpu_ops_of(t.step(3).event) if t.name(o).startswith("nvjet")
    )
    assert t.name(k) == top["name"] and t.name(LN["4096_bf16"].issuing_op(k)) == "aten::mm"
    fig = timeline(t, step=3, callouts=[Callout(f"GEMM: {row['self_cuda_pct']:.0f} % of CUDA time", event=k, at="mid")],
                   width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture("hotspot", fig, "Recording 4096_bf16, ProfilerStep#3.")


def selftotal() -> Callable[[], SmallFigure]:
    """Entry: *Total* much larger than *Self*."""
    (mm_row,) = table_rows("64_bf16", "aten::matmul")
    ops = {r["name"]: r for r in op_table(T["64_bf16"]).to_records()}
    ours = ops["aten::matmul"]
    assert abs(ours["self_cpu_us"] - mm_row["self_cpu_us"]) < 0.01 * mm_row["self_cpu_us"] + 0.01
    assert abs(ours["total_cpu_us"] - mm_row["cpu_total_us"]) < 0.01 * mm_row["cpu_total_us"] + 0.01
    assert mm_row["self_cpu_us"] < 0.2 * mm_row["cpu_total_us"]
    assert ops["aten::mm"]["total_cpu_us"] > 0.8 * mm_row["cpu_total_us"]
    put("st_self", us(mm_row["self_cpu_us"]))
    put("st_calls", mm_row["calls"])
    put("st_total", us(mm_row["cpu_total_us"]))
    put("st_mm_total", us(ops["aten::mm"]["total_cpu_us"]))
    t = T["64_bf16"]
    mat = one(in_step(t, 3, name="aten::matmul"))
    mm = one(in_step(t, 3, name="aten::mm"))
    fig = timeline(t, around=mat, pad_us=4, callouts=[
        Callout("aten::matmul: total", event=mat), Callout("aten::mm does the work", event=mm, at="mid")],
        width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture("selftotal", fig, "Recording 64_bf16, aten::matmul in ProfilerStep#3.")


def calls() -> Callable[[], SmallFigure]:
    """Entry: A kernel counted more often than the op that launches it."""
    name = "4096_fp32"
    t, ln = T[name], LN[name]
    (op_row,) = table_rows(name, "aten::add")
    (k_row,) = table_rows(name, "void at::native::vectorized_elementwise")
    adds = t.where(kind=Kind.KERNEL, contains="CUDAFunctor_add")
    orphans = [int(i) for i in adds if ln.launch[i] < 0]
    assert k_row["calls"] == len(adds) == op_row["calls"] + 1 and len(orphans) == 1
    orphan = orphans[0]
    first = t.steps[0]
    assert t.ts_ns[orphan] > first.start_ns and not len(
        t.where(kind=Kind.KERNEL, within=(0, int(t.ts_ns[orphan])))
    )
    nxt = LN[name].gpu_ops[LN[name].gpu_ops > orphan][0]
    assert (
        t.name(nxt) == t.name(ln.gpu_ops_of(first.event)[0]) and ln.step_of(nxt).name == first.name
    )
    assert int(first.name.rsplit("#", 1)[1]) == param(name, "wait") + param(name, "warmup_steps")
    put("calls_k", k_row["calls"])
    put("calls_op", op_row["calls"])
    put("calls_at", us((t.ts_ns[orphan] - first.start_ns) / 1e3))
    put("calls_step", code(first.name))
    fig = timeline(t, window=(first.start_ns - 20_000, int(t.ts_ns[orphan] + t.dur_ns[orphan]) + 80_000),
                   callouts=[Callout("launched before the window", event=orphan)], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "calls", fig, "Recording 4096_fp32, from the first recorded step to the first add kernel."
    )


def gpuannot() -> Callable[[], SmallFigure]:
    """Entry: A `matmul_add` row with no CPU time and more than 100 % of CUDA time."""
    name = "64_bf16"
    rows = table_rows(name, "matmul_add")
    assert len(rows) == 2
    gpu_row = next(r for r in rows if r["self_cpu_us"] == 0)
    cpu_row = next(r for r in rows if r["self_cpu_us"] > 0)
    t = T[name]
    spans = t.where(kind=Kind.GPU_ANNOTATION, name="matmul_add")
    assert gpu_row["self_cuda_pct"] > 100
    assert abs(t.dur_ns[spans].sum() / 1e3 - gpu_row["self_cuda_us"]) < 0.1
    assert gpu_row["self_cuda_us"] > 3 * cpu_row["cuda_total_us"]
    for r in t.regions("matmul_add"):
        ops = LN[name].gpu_ops_of(r.event)
        first_ns, last_ns = int(t.ts_ns[ops].min()), int((t.ts_ns[ops] + t.dur_ns[ops]).max())
        sp = [i for i in spans if abs(int(t.ts_ns[i]) - first_ns) < 100]  # ns: rounding only
        assert len(sp) == 1 and abs(int(t.ts_ns[sp[0]] + t.dur_ns[sp[0]]) - last_ns) < 100
    put("ga_cuda", us(gpu_row["self_cuda_us"]))
    put("ga_pct", pct(gpu_row["self_cuda_pct"], 0))
    put("ga_real", us(cpu_row["cuda_total_us"]))
    span = one(in_step(t, 3, kind=Kind.GPU_ANNOTATION, name="matmul_add"))
    fig = timeline(t, step=3, gpu_annotations=True,
                   callouts=[Callout(f"GPU-side matmul_add: {us(t.dur_ns[span] / 1e3)}", event=span, at="mid")],
                   width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "gpuannot", fig, "Recording 64_bf16, ProfilerStep#3, with the GPU-side annotation strip."
    )


def firststep() -> Callable[[], SmallFigure]:
    """Entry: The first step is far wider than the rest."""
    t = T["64_bf16_nowait"]
    d = [s.dur_us for s in t.steps]
    assert d[0] > 100 * d[-1]
    w = [s.dur_us for s in T["64_bf16"].steps]
    assert w[0] == max(w), "even the warm run's first recorded step is its widest"
    tw = T["64_bf16"]
    cpu = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.DRIVER)
    calls = [sorted(tw.name(i) for i in in_step(tw, s.name, kind=cpu) if int(i) != s.event)
             for s in tw.steps]  # fmt: skip
    assert all(c == calls[0] for c in calls[1:]), "the first kept step makes the same calls"
    assert not any(len(tw.where(contains=c)) for c in ("cudaMalloc", "Occupancy", "Module Loading"))
    assert param("64_bf16", "warmup") is True
    assert param("64_bf16_nowait", "wait") == param("64_bf16_nowait", "warmup_steps") == 0
    put("fs_first", us(d[0]))
    put("fs_first_name", code(t.steps[0].name))
    put("fs_last_name", code(t.steps[-1].name))
    put("fs_last", us(d[-1]))
    put("fs_drawn", str(us(d[0])))  # text: the drawn repeat's, as in the picture
    put("fs_warm_first", us(w[0]))
    put("fs_warm_last", us(w[-1]))
    fig = timeline(t, callouts=[Callout(f"ProfilerStep#0: {us(d[0])}", event=t.steps[0].event),
                                Callout("#1 and #2", event=t.steps[1].event)],
                   width_in=WIDTH_IN, title="64_bf16_nowait: the whole recorded window")  # fmt: skip
    return lambda: picture(
        "firststep",
        fig,
        "Recording 64_bf16_nowait (a fresh process, recording from the first call).",
    )


def firstgap() -> Callable[[], SmallFigure]:
    """Entry: A long wait before the first `aten` op of a range."""
    t = T["64_bf16_nowait"]

    def lead_us(step: int) -> tuple[float, int, int]:
        ann = one(in_step(t, step, kind=Kind.USER_ANNOTATION, name="matmul_add"))
        mat = one(in_step(t, step, name="aten::matmul"))
        return (t.ts_ns[mat] - t.ts_ns[ann]) / 1e3, ann, mat

    first, ann, mat = lead_us(0)
    last = lead_us(2)[0]
    assert first > 3 * last
    py = t.lane[ann]
    between = t.where(within=(int(t.ts_ns[ann]) + 1, int(t.ts_ns[mat])))
    assert not any(t.lane[i] == py for i in between), "nothing recorded on the thread in the lead"
    put("fg_first", us(first))
    put("fg_last", us(last))
    fig = timeline(t, window=(int(t.ts_ns[ann]) - 15_000, int(t.ts_ns[mat]) + 40_000),
                   callouts=[Callout(f"{us(first)} after matmul_add", event=mat)], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "firstgap", fig, "Recording 64_bf16_nowait, the start of ProfilerStep#0."
    )


def silentself() -> Callable[[], SmallFigure]:
    """Entry: An op that is long but almost empty."""
    t, ln = T["64_bf16_nowait"], LN["64_bf16_nowait"]
    mm = one(in_step(t, 0, name="aten::mm"))
    kids = np.flatnonzero(ln.parent == mm)
    self_us = (t.dur_ns[mm] - t.dur_ns[kids].sum()) / 1e3
    assert self_us > 0.9 * t.dur_ns[mm] / 1e3
    assert all(Kind(int(t.kind[i])) in (Kind.RUNTIME, Kind.DRIVER) for i in kids)
    edges = np.sort(np.concatenate([[t.ts_ns[mm]], t.ts_ns[kids] + t.dur_ns[kids]]))
    starts = np.sort(np.concatenate([t.ts_ns[kids], [t.ts_ns[mm] + t.dur_ns[mm]]]))
    hole_us = float(np.max(starts - edges)) / 1e3
    assert hole_us > 0.5 * self_us
    put("em_total", us(t.dur_ns[mm] / 1e3))
    put("em_self_pct", pct(100 * self_us / (t.dur_ns[mm] / 1e3), 0))
    put("em_hole", us(hole_us))
    put("em_kids", len(kids))
    fig = timeline(t, around=mm, pad_us=300,
                   callouts=[Callout(f"aten::mm: {us(t.dur_ns[mm] / 1e3)}", event=mm, at="mid")],
                   width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "silentself", fig, "Recording 64_bf16_nowait, aten::mm in ProfilerStep#0."
    )


def occupancy() -> Callable[[], SmallFigure]:
    """Entry: Occupancy queries before the first GEMM launch."""
    t = T["64_bf16_nowait"]

    def occ(tr: Any, w: Any = None) -> Any:
        return tr.where(kind=Kind.RUNTIME, prefix="cudaOccupancy", within=w)

    counts = [len(occ(t, (s.start_ns, s.end_ns))) for s in t.steps]
    assert counts[0] > 0 and sum(counts[1:]) == 0
    others = {n: len(occ(T[n])) for n in NAMES if n != "64_bf16_nowait"}
    assert not any(others.values()), others
    rows = occ(t)
    clusters = t.where(name="cudaOccupancyMaxActiveClusters")
    launch = one(in_step(t, 0, kind=Kind.DRIVER, name="cuLaunchKernelEx"))
    add0 = one(in_step(t, 0, name="aten::add"))
    assert not len(occ(t, (int(t.ts_ns[add0]), int(t.ts_ns[add0] + t.dur_ns[add0])))), (
        "the add asks nothing"
    )
    assert t.ts_ns[rows].max() < t.ts_ns[launch]
    mm0 = one(in_step(t, 0, name="aten::mm"))
    assert t.dur_ns[rows].sum() < 0.01 * t.dur_ns[mm0]  # microseconds of its milliseconds
    put("oc_n", counts[0])
    put("oc_clusters", len(clusters))
    put("oc_others", len(others))
    fig = timeline(t, window=win(t, rows, pad_us=4),
                   callouts=[Callout(f"{len(clusters)} × cudaOccupancyMaxActiveClusters", event=int(clusters[0]))],
                   width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "occupancy", fig, "Recording 64_bf16_nowait, inside aten::mm of ProfilerStep#0."
    )


def launchapi() -> Callable[[], SmallFigure]:
    """Entry: `cuLaunchKernelEx` for the GEMM, `cudaLaunchKernel` for the add."""
    t, ln = T["64_bf16"], LN["64_bf16"]
    ks = LN["64_bf16"].gpu_ops_of(t.step(3).event)
    gemm = next(k for k in ks if t.name(k).startswith("nvjet"))
    add = next(k for k in ks if "CUDAFunctor_add" in t.name(k))
    assert ln.launch_api(gemm) == "cuLaunchKernelEx" and ln.launch_api(add) == "cudaLaunchKernel"
    # Across every eager bf16 recording: each nvjet GEMM by the driver API.
    for n in ("64_bf16", "4096_bf16", "64_bf16_cold", "4096_bf16_cold", "64_bf16_batch8"):
        for k in T[n].where(kind=Kind.KERNEL, prefix="nvjet"):
            assert LN[n].launch_api(k) == "cuLaunchKernelEx", n
    fp32 = {
        LN["4096_fp32"].launch_api(k)
        for k in T["4096_fp32"].where(kind=Kind.KERNEL, contains="gemm")
    }
    assert fp32 == {"cudaLaunchKernelExC"}
    put("la_fp32", code("cudaLaunchKernelExC"))
    fig = timeline(t, step=3, callouts=[
        Callout("cuLaunchKernelEx (driver API)", event=int(ln.launch[gemm])),
        Callout("cudaLaunchKernel", event=int(ln.launch[add]))], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture("launchapi", fig, "Recording 64_bf16, ProfilerStep#3.")


def memset() -> Callable[[], SmallFigure]:
    """Entry: A memset right before the big GEMM."""
    t, ln = T["4096_bf16"], LN["4096_bf16"]
    for s in (2, 3, 4):
        ops = ln.gpu_ops_of(one(in_step(t, s, name="aten::mm")))
        assert [Kind(int(t.kind[o])) for o in ops] == [Kind.MEMSET, Kind.KERNEL], s
        assert t.name(ln.launch[ops[0]]) == "cudaMemsetAsync"
    ms = t.where(kind=Kind.MEMSET)
    nbytes = {int(t.extra["bytes"][i]) for i in ms}
    assert len(nbytes) == 1 and 0 < min(nbytes) < 64
    assert not len(T["64_bf16"].where(kind=Kind.MEMSET))
    put("ms_bytes", nbytes.pop())
    put("ms_dur", us(np.median(t.dur_ns[ms]) / 1e3))
    m = one(in_step(t, 3, name="cudaMemsetAsync"))
    k = int(ln.gpu_ops_of(one(in_step(t, 3, name="aten::mm")))[1])
    fig = timeline(t, window=(int(t.ts_ns[m]) - 8_000, int(t.ts_ns[k]) + 25_000),
                   callouts=[Callout("cudaMemsetAsync", event=m)], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture("memset", fig, "Recording 4096_bf16, aten::mm of ProfilerStep#3.")


def sync64() -> Callable[[], SmallFigure]:
    """Entry: A short `cudaDeviceSynchronize` at the end, over an idle GPU."""
    t = T["64_bf16"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    s0, s1 = int(t.ts_ns[sync]), int(t.ts_ns[sync] + t.dur_ns[sync])
    busy = gpu_busy_us(t, window=(s0, s1))
    last_end = int((t.ts_ns[LN["64_bf16"].gpu_ops] + t.dur_ns[LN["64_bf16"].gpu_ops]).max())
    assert busy == 0 and last_end < s0
    put("sy_dur", us((s1 - s0) / 1e3))
    put("sy_idle", us((s0 - last_end) / 1e3))
    fig = timeline(t, window=(int(t.steps[-1].start_ns) - 5_000, s1 + 5_000),
                   callouts=[Callout("cudaDeviceSynchronize", event=sync)], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "sync64", fig, "Recording 64_bf16, the last step and the profiler's closing synchronize."
    )


def syncbig() -> Callable[[], SmallFigure]:
    """Entry: A long `cudaDeviceSynchronize`, with the GPU busy throughout."""
    t = T["4096_fp32"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    s0, s1 = int(t.ts_ns[sync]), int(t.ts_ns[sync] + t.dur_ns[sync])
    busy = gpu_busy_us(t, window=(s0, s1))
    cpu_steps = (t.steps[-1].end_ns - t.steps[0].start_ns) / 1e3
    assert busy > 0.7 * (s1 - s0) / 1e3 and (s1 - s0) / 1e3 > 10 * cpu_steps
    put("sb_dur", us((s1 - s0) / 1e3))
    put("sb_busy", pct(100 * busy / ((s1 - s0) / 1e3), 0))
    put("sb_steps", us(cpu_steps))
    put("sb_n", len(t.steps))
    fig = timeline(t, callouts=[Callout("cudaDeviceSynchronize", event=sync)], width_in=WIDTH_IN,
                   title="4096_fp32: the whole recorded window")  # fmt: skip
    return lambda: picture("syncbig", fig, "Recording 4096_fp32 (float32 without TF32).")


def empty() -> Callable[[], SmallFigure]:
    """Entry: The GPU row is mostly empty."""
    t = T["64_bf16"]
    st = step_times(t)[1]
    assert st.name == "ProfilerStep#3" and st.gpu_fraction < 0.1
    put("em_busy", us(st.gpu_busy_us))
    put("em_cpu", us(st.cpu_us))
    put("em_pct", pct(100 * st.gpu_fraction, 1))
    k = int(LN["64_bf16"].gpu_ops_of(t.step(3).event)[0])
    fig = timeline(
        t, step=3, callouts=[Callout(f"GEMM, {us(t.dur_ns[k] / 1e3)}", event=k)], width_in=WIDTH_IN
    )
    return lambda: picture("empty", fig, "Recording 64_bf16, ProfilerStep#3.")


def after_call_us(t: Any, ln: Any, k: int) -> float:
    """From the END of a GPU op's launch call to the op's start, in µs."""
    c = int(ln.launch[k])
    return (int(t.ts_ns[k]) - int(t.ts_ns[c] + t.dur_ns[c])) / 1e3


def idle_before_us(t: Any, ln: Any, k: int) -> float:
    """How long the GPU lane was idle right before op ``k`` (inf: nothing ran before it)."""
    g = ln.gpu_ops[t.ts_ns[ln.gpu_ops] < t.ts_ns[k]]
    return (int(t.ts_ns[k]) - int((t.ts_ns[g] + t.dur_ns[g]).max())) / 1e3 if len(g) else np.inf


def latency() -> Callable[[], SmallFigure]:
    """Entry: Kernels start long after their launch call."""
    # The full queue: at 4096x4096, every op launched after the first GEMM started waits
    # long after its call returned, and starts as the GPU finishes the op before it.
    t4, l4 = T["4096_bf16"], LN["4096_bf16"]
    first_gemm = int(t4.ts_ns[t4.where(kind=Kind.KERNEL, prefix="nvjet")].min())
    queued = [int(k) for k in l4.gpu_ops if t4.ts_ns[l4.launch[k]] > first_gemm]
    waits = [after_call_us(t4, l4, k) for k in queued]
    idles = [idle_before_us(t4, l4, k) for k in queued]
    assert len(queued) >= 6 and min(waits) > 20 and min(idles) >= 0 and max(idles) < 5
    assert all(s.verdict == "compute-bound" for s in step_times(t4)[1:])
    # The empty queue: at 64x64 every kernel starts within a few µs of its call's end, on
    # an idle GPU.
    t, ln = T["64_bf16"], LN["64_bf16"]
    waits64 = [after_call_us(t, ln, int(k)) for k in ln.gpu_ops]
    assert max(abs(w) for w in waits64) < 5
    assert min(idle_before_us(t, ln, int(k)) for k in ln.gpu_ops) > 5
    calls64 = [t.dur_ns[ln.launch[k]] / 1e3 for k in ln.gpu_ops]
    assert np.median(calls64) > np.median(waits64)  # from the call's start: mostly the call
    first_k = int(ln.gpu_ops_of(t.steps[0].event)[0])
    offset = (t.ts_ns[first_k] - t.steps[0].start_ns) / 1e3
    call = int(ln.launch[first_k])
    before = (t.ts_ns[call] - t.steps[0].start_ns) / 1e3
    assert before > 0.5 * offset, "most of the lane offset is CPU work before the first launch"
    assert not len(t.where(kind=Kind.OVERHEAD))
    put("lt_q4k", us(np.median(waits)))
    put("lt_idle", us(max(idles)))
    put("lt_q64", us(np.median(waits64)))
    put("lt_call64", us(np.median(calls64)))
    put("lt_offset", us(offset))
    put("lt_before", us(before))
    k = next(q for q in queued if t4.name(q).startswith("nvjet") and l4.step_of(q) == t4.steps[1])
    c = int(l4.launch[k])
    fig = timeline(t4, window=(int(t4.ts_ns[c]) - 10_000, int(t4.ts_ns[k]) + 40_000),
                   callouts=[Callout(f"GEMM: {us(after_call_us(t4, l4, k))} after its call returned", event=k)],
                   width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "latency", fig, f"Recording 4096_bf16, the GEMM launched in {t4.steps[1].name}."
    )


def kernelgap() -> Callable[[], SmallFigure]:
    """Entry: A gap between the two kernels of every step."""
    name = "64_bf16_20steps"
    t = T[name]
    adds = t.where(kind=Kind.KERNEL, contains="CUDAFunctor_add")
    before_add = [g for g in gaps(t) if int(g.next_op) in set(adds.tolist())]
    assert len(before_add) == len(t.steps) == len(adds)
    assert all(g.cause == "launch" for g in before_add)
    assert not len(t.where(kind=Kind.OVERHEAD))
    lens = [g.gap_us for g in before_add]
    put("kg_n", len(before_add))
    put("kg_steps", len(t.steps))
    put("kg_med", us(np.median(lens)))
    put("kg_first", us(lens[0]))
    s = t.steps[10]
    fig = timeline(t, window=(s.start_ns, t.steps[11].end_ns), width_in=WIDTH_IN,
                   callouts=[Callout("aten::add's launch", name="cudaLaunchKernel")])  # fmt: skip
    return lambda: picture("kernelgap", fig, f"Recording {name}, {s.name} and {t.steps[11].name}.")


def variance() -> Callable[[], SmallFigure]:
    """Entry: The same kernel takes different times in different steps."""
    name = "4096_bf16_20steps"
    t = T[name]
    g = t.where(kind=Kind.KERNEL, prefix="nvjet")
    d = t.dur_ns[g] / 1e3
    assert len(g) == len(t.steps) and d.max() / d.min() < 1.1
    put("va_n", len(g))
    put("va_min", us(d.min()))
    put("va_med", us(np.median(d)))
    put("va_max", us(d.max()))
    put("va_spread", pct(100 * (d.max() - d.min()) / np.median(d), 0))
    put("va_hf_ratio", times(HF["gemm_mean_us"] / HF["gemm_typical_us"]))
    j = int(np.argmax(d))
    lo, hi = max(j - 1, 0), min(j + 1, len(g) - 1)
    fig = timeline(t, window=win(t, g[[lo, hi]], pad_us=10),
                   callouts=[Callout(f"longest: {us(d[j])}", event=int(g[j]), at="mid")], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "variance", fig, f"Recording {name}, the longest of {len(g)} GEMMs and its neighbours."
    )


def names() -> Callable[[], SmallFigure]:
    """Entry: GEMM kernel names tell the library, the GPU and the tile."""
    small = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    big = {T["4096_bf16"].name(k) for k in T["4096_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    assert len(small) == len(big) == 1 and small != big
    small, big = small.pop(), big.pop()
    assert small.startswith("nvjet_sm90") and big.startswith("nvjet_sm90")
    assert T["64_bf16"].device_properties[0]["computeMajor"] == 9  # sm90: Hopper
    assert all(
        T["4096_fp32"].name(k).startswith("sm80_xmma")
        for k in T["4096_fp32"].where(kind=Kind.KERNEL, contains="gemm")
    )
    assert HF["gemm_name"] not in (small, big)
    assert "_64x8_" in small and "_256x128_" in big and "coopA" in big
    put("nm_small", code(small))
    put("nm_big", code(big))
    t, ln = T["64_bf16"], LN["64_bf16"]
    k = int(ln.gpu_ops_of(t.step(4).event)[0])
    fig = timeline(t, around=k, pad_us=6, callouts=[Callout(small, event=k)], width_in=WIDTH_IN)
    return lambda: picture("names", fig, "Recording 64_bf16, the GEMM of ProfilerStep#4.")


def footprint() -> Callable[[], SmallFigure]:
    """Entry: Registers and shared memory: heavy GEMM, light add."""
    t, ln = T["4096_bf16"], LN["4096_bf16"]
    ops = ln.gpu_ops_of(t.step(4).event)
    gemm = next(int(o) for o in ops if t.name(o).startswith("nvjet"))
    add = next(int(o) for o in ops if "CUDAFunctor_add" in t.name(o))
    ex = t.extra
    sms = t.device_properties[0]["numSms"]
    assert ex["registers"][gemm] > 3 * ex["registers"][add] and ex["shared_mem"][add] == 0
    assert ex["shared_mem"][gemm] > 100 * 1024 and int(ex["grid"][gemm]) == sms
    put("fp_g_regs", int(ex["registers"][gemm]))
    put("fp_g_smem", f"{ex['shared_mem'][gemm] / 1024:.0f} KiB")
    put("fp_g_grid", int(ex["grid"][gemm]))
    put("fp_sms", sms)
    put("fp_a_regs", int(ex["registers"][add]))
    put("fp_a_grid", f"{int(ex['grid'][add]):,}")
    fig = timeline(t, window=win(t, [gemm, add], pad_us=8), callouts=[
        Callout(f"{int(ex['registers'][gemm])} registers, {ex['shared_mem'][gemm] / 1024:.0f} KiB shared", event=gemm, at="mid"),
        Callout(f"{int(ex['registers'][add])} registers, no shared", event=add, at="mid")], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "footprint", fig, "Recording 4096_bf16, the kernels launched in ProfilerStep#4."
    )


def tf32() -> Callable[[], SmallFigure]:
    """Entry: float32 GEMMs: `ffma` against `tf32` in the name."""

    def gemm_of(name: str) -> tuple[Any, Any, str]:
        t = T[name]
        rows = t.where(kind=Kind.KERNEL, contains="gemm")
        names = {t.name(i) for i in rows}
        assert len(names) == 1, names
        return t, rows, names.pop()

    t32, g32, n32 = gemm_of("4096_fp32")
    ttf, gtf, ntf = gemm_of("4096_fp32_tf32")
    assert "ffma" in n32 and "tf32" not in n32 and "tf32" in ntf
    assert param("4096_fp32", "tf32") is False and param("4096_fp32_tf32", "tf32") is True
    d32, dtf = np.median(t32.dur_ns[g32]) / 1e3, np.median(ttf.dur_ns[gtf]) / 1e3
    assert d32 > 3 * dtf
    dbf = (
        np.median(T["4096_bf16"].dur_ns[T["4096_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")])
        / 1e3
    )
    assert dtf > dbf
    put("tf_n32", code(n32[:60] + "…"))
    put("tf_ntf", code(ntf[:60] + "…"))
    put("tf_d32", us(d32))
    put("tf_dtf", us(dtf))
    put("tf_dbf", us(dbf))
    put("tf_ratio", times(d32 / dtf))
    k32, ktf = int(g32[1]), int(gtf[1])
    fig = compare_timelines([t32, ttf], [win(t32, [k32], 20), win(ttf, [ktf], 20)],
                            ["float32, TF32 off", "float32, TF32 on"], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "tf32",
        fig,
        "Recordings 4096_fp32 and 4096_fp32_tf32, the GEMM of ProfilerStep#3, on one time scale.",
    )


def dtod() -> Callable[[], SmallFigure]:
    """Entry: A `Memcpy DtoD` right before a GEMM."""
    name = "64_bf16_addmm"
    t, ln = T[name], LN[name]
    for s in t.steps:
        ops = ln.gpu_ops_of(s.event)
        assert [Kind(int(t.kind[o])) for o in ops] == [Kind.MEMCPY, Kind.KERNEL], s.name
        assert t.name(ops[0]).startswith("Memcpy DtoD") and "_badd_" in t.name(ops[1])
        assert t.name(ln.issuing_op(ops[0])) == "aten::addmm"
        assert int(t.extra["bytes"][ops[0]]) == param(name, "size") ** 2 * 2  # b, in bfloat16
    eager = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    assert all("_bz_" in n for n in eager)
    big = T["4096_bf16_compile"]
    cp = big.where(kind=Kind.MEMCPY)
    assert {int(big.extra["bytes"][i]) for i in cp} == {param("4096_bf16_compile", "size") ** 2 * 2}
    put("dd_bytes", f"{int(t.extra['bytes'][t.where(kind=Kind.MEMCPY)[0]]):,}")
    put("dd_big_mib", f"{int(big.extra['bytes'][cp[0]]) / 2**20:.0f} MiB")
    put("dd_big_us", us(np.median(big.dur_ns[cp]) / 1e3))
    ops = ln.gpu_ops_of(t.step(3).event)
    fig = timeline(t, window=(int(t.ts_ns[ln.launch[ops[0]]]) - 5_000, int(t.ts_ns[ops[1]] + t.dur_ns[ops[1]]) + 5_000),
                   callouts=[Callout("Memcpy DtoD: b into the output", event=int(ops[0]))], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture("dtod", fig, f"Recording {name} (eager torch.addmm), ProfilerStep#3.")


def chain() -> Callable[[], SmallFigure]:
    """Entry: From the step down to the kernel."""
    name = "64_bf16_cold"
    t, ln = T[name], LN[name]
    k = int(ln.gpu_ops_of(t.step(4).event)[0])
    chain = [t.name(i) for i in ln.stack(k)] + [t.name(k)]
    assert chain[:5] == [
        "ProfilerStep#4",
        "matmul_add",
        "aten::matmul",
        "aten::mm",
        "cuLaunchKernelEx",
    ]
    assert chain[5].startswith("nvjet")
    add = int(ln.gpu_ops_of(t.step(4).event)[1])
    assert [t.name(i) for i in ln.stack(add)] == [
        "ProfilerStep#4",
        "matmul_add",
        "aten::add",
        "cudaLaunchKernel",
    ]
    put("ch_chain", " → ".join(code(c) for c in chain))
    one(in_step(t, 4, name="aten::matmul"))  # exactly one matmul in the step
    fig = timeline(t, step=4, callouts=[Callout("GEMM", event=k)], width_in=WIDTH_IN)
    return lambda: picture("chain", fig, f"Recording {name}, ProfilerStep#4.")


def batched() -> Callable[[], SmallFigure]:
    """Entry: `aten::matmul` → `reshape`, `mm`, `_unsafe_view` for a 3-D input."""
    name = "64_bf16_batch8"
    t, ln = T[name], LN[name]
    assert param(name, "batch") > 0
    assert not len(t.where(prefix="aten::bmm"))
    for s in t.steps:
        mat = one(in_step(t, s.name, name="aten::matmul"))
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == mat)]
        assert kids == ["aten::reshape", "aten::mm", "aten::_unsafe_view"], kids
        view = one(in_step(t, s.name, name="aten::view"))
        assert t.name(ln.parent[view]) == "aten::reshape"
    gemm_b = {t.name(k) for k in t.where(kind=Kind.KERNEL, prefix="nvjet")}
    gemm_2d = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    assert gemm_b == gemm_2d
    add_b = {t.name(k) for k in t.where(kind=Kind.KERNEL, contains="CUDAFunctor_add")}
    assert all("vectorized" not in n and "elementwise_kernel" in n for n in add_b)
    assert all(
        "vectorized_elementwise_kernel" in T["64_bf16"].name(k)
        for k in T["64_bf16"].where(kind=Kind.KERNEL, contains="CUDAFunctor_add")
    )
    put("bt_batch", param(name, "batch"))
    put("bt_size", param(name, "size"))
    put("bt_rows", param(name, "batch") * param(name, "size"))
    mat = one(in_step(t, 3, name="aten::matmul"))
    fig = timeline(t, around=mat, pad_us=3, callouts=[
        Callout("aten::reshape", name="aten::reshape"),
        Callout("aten::_unsafe_view", name="aten::_unsafe_view")], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture("batched", fig, f"Recording {name}, aten::matmul in ProfilerStep#3.")


def addmm() -> Callable[[], SmallFigure]:
    """Entry: `aten::addmm` instead of `aten::matmul` plus `aten::add`."""
    name = "64_bf16_addmm"
    t, ln = T[name], LN[name]
    assert param(name, "op") == "addmm"
    assert not len(t.where(name="aten::matmul")) and not len(t.where(name="aten::add"))
    for s in t.steps:
        op = one(in_step(t, s.name, name="aten::addmm"))
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == op)]
        assert kids == ["aten::squeeze", "cudaMemcpyAsync", "cuLaunchKernelEx"], kids
    am = cpu_ratios("addmm", bare=True)
    put(
        "am_verdict",
        verdict(am, "a measurable cost", "a measurable saving", "too close to tell apart"),
    )
    put("am_ratio", Fmt(float(np.median(am)), lambda v: f"{v:.2f}×"))
    put("am_range", ratio_range(am))
    op = one(in_step(t, 4, name="aten::addmm"))
    fig = timeline(
        t, around=op, pad_us=4, callouts=[Callout("aten::addmm", event=op)], width_in=WIDTH_IN
    )
    return lambda: picture("addmm", fig, f"Recording {name}, aten::addmm in ProfilerStep#4.")


def dynamo() -> Callable[[], SmallFigure]:
    """Entry: `TorchDynamo Cache Lookup` in every step."""
    name = "64_bf16_compile"
    t = T[name]
    cl = t.where(name="TorchDynamo Cache Lookup")
    assert len(cl) == len(t.steps) and all(
        len(in_step(t, s.name, name="TorchDynamo Cache Lookup")) == 1 for s in t.steps
    )
    for n in ("4096_bf16_compile", "64_bf16_reduce_overhead"):
        assert len(T[n].where(name="TorchDynamo Cache Lookup")) == len(T[n].steps)
    for s in t.steps:
        lk = one(in_step(t, s.name, name="TorchDynamo Cache Lookup"))
        rg = one(in_step(t, s.name, prefix="Torch-Compiled Region"))
        assert t.ts_ns[lk] + t.dur_ns[lk] <= t.ts_ns[rg]
    put("dy_med", us(np.median(t.dur_ns[cl]) / 1e3))
    put("dy_step", us(median_step_us(name)))
    c = one(in_step(t, 3, name="TorchDynamo Cache Lookup"))
    fig = timeline(
        t,
        around=c,
        pad_us=25,
        callouts=[Callout("TorchDynamo Cache Lookup", event=c)],
        width_in=WIDTH_IN,
    )
    return lambda: picture("dynamo", fig, f"Recording {name}, ProfilerStep#3.")


def region() -> Callable[[], SmallFigure]:
    """Entry: `Torch-Compiled Region: 0/0`."""
    name = "4096_bf16_compile"
    t, ln = T[name], LN[name]
    regions = t.where(prefix="Torch-Compiled Region")
    assert {t.name(i) for i in regions} == {"Torch-Compiled Region: 0/0"} and len(regions) == len(
        t.steps
    )
    for r in regions:
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == r)]
        assert kids[:2] == ["Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue"], kids
        assert len(kids) == 3 and kids[2].startswith("## Call CompiledFxGraph"), kids
        up = int(ln.parent[r])
        assert t.name(up) == "matmul_add" and list(ln.gpu_ops_of(r)) == list(ln.gpu_ops_of(up))
        fx = int(np.flatnonzero(ln.parent == r)[2])
        assert len(ln.gpu_ops_of(fx)) and list(ln.gpu_ops_of(fx)) == list(ln.gpu_ops_of(r))
    r = int(regions[1])
    fig = timeline(
        t,
        around=r,
        pad_us=3,
        callouts=[Callout("Torch-Compiled Region: 0/0", event=r)],
        width_in=WIDTH_IN,
    )
    return lambda: picture("region", fig, f"Recording {name}, ProfilerStep#3.")


def hash() -> Callable[[], SmallFigure]:
    """Entry: The same `CompiledFxGraph` hash in every step."""
    name = "64_bf16_compile"
    t = T[name]
    calls = t.where(prefix="## Call CompiledFxGraph")
    hashes = {t.name(i).split()[3] for i in calls}
    assert len(calls) == len(t.steps) and len(hashes) == 1
    other = {
        T["4096_bf16_compile"].name(i).split()[3]
        for i in T["4096_bf16_compile"].where(prefix="## Call CompiledFxGraph")
    }
    assert len(other) == 1 and other != hashes
    h = hashes.pop()
    put("fx_hash", code(h))
    put("fx_other", code(other.pop()))
    put("fx_n", len(calls))
    fig = timeline(t, callouts=[Callout(h[:10] + "…", event=int(calls[0])), Callout(h[:10] + "…", event=int(calls[-1]))],
                   width_in=WIDTH_IN, title=f"{name}: the whole recorded window")  # fmt: skip
    return lambda: picture("hash", fig, f"Recording {name}, all {len(t.steps)} recorded steps.")


def samekernel() -> Callable[[], SmallFigure]:
    """Entry: Compiled, and still a copy plus the same GEMM."""
    a, c = "64_bf16_addmm", "64_bf16_compile"
    ka = {T[a].name(k) for k in T[a].where(kind=Kind.KERNEL)}
    kc = {T[c].name(k) for k in T[c].where(kind=Kind.KERNEL)}
    assert ka == kc and len(kc) == 1, (ka, kc)
    assert not any("triton" in n for n in kc)
    for s in T[c].steps:
        ops = LN[c].gpu_ops_of(s.event)
        assert [Kind(int(T[c].kind[o])) for o in ops] == [Kind.MEMCPY, Kind.KERNEL]
        assert LN[c].launch_api(ops[1]) == "cuLaunchKernelEx"
        assert len(in_step(T[c], s.name, name="aten::addmm")) == 1
    assert (
        {st.launches for st in step_times(T[c])}
        == {st.launches for st in step_times(T["64_bf16"])}
        == {2}
    )
    put("sk_gemm", code(kc.pop()))
    fig = compare_timelines(
        [T[a], T[c]], [4, 4], ["eager torch.addmm", "torch.compile"], width_in=WIDTH_IN
    )
    return lambda: picture(
        "samekernel",
        fig,
        "Recordings 64_bf16_addmm and 64_bf16_compile, ProfilerStep#4, on one time scale.",
    )


def tax() -> Callable[[], SmallFigure]:
    """Entry: More CPU per step under compile."""
    e, c = "64_bf16", "64_bf16_compile"
    tx = cpu_ratios("compiled")
    assert min(tx) > 1.5  # in every recorded process
    put("tx_ratio", times(float(np.median(tx))))
    put("tx_range", ratio_range(tx))
    tro = cpu_ratios("reduce-overhead")
    assert min(tro) > 1.5  # graphs did not make this step cheaper than eager
    assert min(cpu_ratios("reduce-overhead", "compiled")) > 0.95  # nor than the default mode
    put("tx_ro_ratio", times(float(np.median(tro))))
    fig = compare_timelines([T[e], T[c]], [4, 4], ["eager", "torch.compile"], width_in=WIDTH_IN)
    return lambda: picture(
        "tax", fig, "Recordings 64_bf16 and 64_bf16_compile, ProfilerStep#4, on one time scale."
    )


def graphs() -> Callable[[], SmallFigure]:
    """Entry: One `cudaGraphLaunch`, several kernels."""
    name = "64_bf16_reduce_overhead"
    t, ln = T[name], LN[name]
    assert param(name, "compile") == "reduce-overhead"
    gl = t.where(name="cudaGraphLaunch")
    per = [len(ln.gpu_ops_of_call(c)) for c in gl]
    assert len(gl) == len(t.steps) and min(per) >= 2
    for s in t.steps:
        fc = one(in_step(t, s.name, name="aten::_foreach_copy_"))
        (k,) = ln.gpu_ops_of(fc)
        g = one(in_step(t, s.name, name="cudaGraphLaunch"))
        assert (
            ln.launch_api(k) == "cudaLaunchKernel"
            and t.ts_ns[k] < t.ts_ns[ln.gpu_ops_of_call(g)].min()
        )
    names = [t.name(o) for o in ln.gpu_ops_of_call(gl[0])]
    put("cg_n", per[0])
    put("cg_names", ", ".join(code(n) for n in names))
    c = one(in_step(t, 3, name="cudaGraphLaunch"))
    ops = ln.gpu_ops_of_call(c)
    fig = timeline(t, window=win(t, [c, *ops, one(in_step(t, 3, name="aten::_foreach_copy_"))], pad_us=4),
                   callouts=[Callout(f"cudaGraphLaunch: {len(ops)} kernels", event=c)], width_in=WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "graphs", fig, f"Recording {name} (torch.compile mode reduce-overhead), ProfilerStep#3."
    )


def bias() -> Callable[[], SmallFigure]:
    """Entry: `bias` in a GEMM kernel's name, and no add kernel."""
    t = rec("small", "02_linear").trace()
    names = {t.name(i) for i in t.where(kind=Kind.KERNEL)}
    assert (
        len(names) == 1 and next(iter(names)).endswith("_bias_TNT") and "_bz_" in next(iter(names))
    )
    assert not len(t.where(kind=Kind.MEMCPY)) and not len(t.where(name="aten::add"))
    put("cs_bias_kernel", code(next(iter(names))))
    op = one(in_step(t, t.steps[-1].name, name="aten::addmm"))
    fig = timeline(
        t, around=op, pad_us=6, callouts=[Callout("aten::addmm", event=op)], width_in=WIDTH_IN
    )
    return lambda: picture(
        "bias", fig, "Recording 02_linear small, the last step: one addmm, one launch, one kernel."
    )


def views() -> Callable[[], SmallFigure]:
    """Entry: Ops with zero CUDA time."""
    t = rec("eager", "03_mlp").trace()
    lk = link(t)
    views = (
        "aten::t",
        "aten::transpose",
        "aten::as_strided",
        "aten::reshape",
        "aten::view",
        "aten::_unsafe_view",
    )
    rows = [int(r) for v in views for r in in_step(t, t.steps[-1].name, name=v)]
    assert rows and all(len(lk.gpu_ops_of(r)) == 0 for r in rows)
    idle_ops = [int(r) for r in in_step(t, t.steps[-1].name, kind=Kind.CPU_OP)
                if len(lk.gpu_ops_of(int(r))) == 0]  # fmt: skip
    assert sorted(idle_ops) == sorted(rows), "every op that launches nothing here is a view"
    put("cs_views_per_step", len(rows))
    put("cs_kernels_per_step", len(t.where(kind=Kind.KERNEL)) // len(t.steps))
    lin = int(in_step(t, t.steps[-1].name, name="aten::linear")[-1])
    fig = timeline(
        t,
        around=lin,
        pad_us=3,
        arrows=False,
        callouts=[Callout("aten::t: a view", name="aten::t")],
        width_in=WIDTH_IN,
    )
    return lambda: picture(
        "views", fig, "Recording 03_mlp eager, the down projection's aten::linear in the last step."
    )


def fused() -> Callable[[], SmallFigure]:
    """Entry: A `triton_poi_fused_…` kernel where two pointwise kernels were."""
    te, tc = rec("eager", "03_mlp").trace(), rec("compile", "03_mlp").trace()

    def med(t: Any, pick: Callable[[str], bool]) -> float:
        return (
            float(np.median([t.dur_ns[i] for i in t.where(kind=Kind.KERNEL) if pick(t.name(i))]))
            / 1e3
        )

    fused = {
        tc.name(i) for i in tc.where(kind=Kind.KERNEL) if tc.name(i).startswith("triton_poi_fused_")
    }
    assert len(fused) == 1
    f = next(iter(fused))
    pair = med(te, lambda n: "Gelu" in n) + med(te, lambda n: "MulFunctor" in n)
    assert med(tc, lambda n: n == f) < 0.95 * pair
    assert {
        n for n in (te.name(i) for i in te.where(kind=Kind.KERNEL)) if n.startswith("nvjet")
    } == {n for n in (tc.name(i) for i in tc.where(kind=Kind.KERNEL)) if n.startswith("nvjet")}
    put("cs_fused", code(f))
    put("cs_fused_us", us(med(tc, lambda n: n == f)))
    put("cs_pair_us", us(pair))
    last = tc.steps[-1].name
    k = one(
        [
            i
            for i in tc.where(kind=Kind.KERNEL)
            if tc.name(i) == f
            and link(tc).launch[i] >= 0
            and (s_ := link(tc).step_of(int(i))) is not None
            and s_.name == last
        ]
    )
    fig = timeline(
        tc, around=k, pad_us=60, callouts=[Callout("fused gelu * mul", event=k)], width_in=WIDTH_IN
    )
    return lambda: picture(
        "fused", fig, "Recording 03_mlp compile, around the fused kernel of the last step."
    )


def graph() -> Callable[[], SmallFigure]:
    """Entry: No `aten::mm` row under `mode='reduce-overhead'`."""
    r = rec("reduce_overhead", "03_mlp")
    t = r.trace()
    assert not len(t.where(name="aten::mm")) and len(t.where(name="Torch-Compiled Region: 0/0"))
    g = t.where(name="cudaGraphLaunch")
    assert len(g) == len(t.steps)
    n_ops = {len(link(t).gpu_ops_of_call(int(c))) for c in g}
    assert len(n_ops) == 1
    put("cs_graph_ops", n_ops.pop())
    fig = timeline(
        t,
        step=t.steps[-1].name,
        callouts=[Callout("one cudaGraphLaunch", event=int(g[-1]))],
        width_in=WIDTH_IN,
    )
    return lambda: picture(
        "graph",
        fig,
        "Recording 03_mlp reduce_overhead, the last step: the input copy, then one graph launch.",
    )


def att_copy() -> Callable[[], SmallFigure]:
    """Entry: A `Memcpy DtoD` before the mask in hand-written attention."""
    t = rec("naive", "04_attention").trace()
    ln = link(t)
    copies = [int(i) for i in t.where(kind=Kind.MEMCPY) if ln.launch[i] >= 0]
    assert copies and {t.name(int(ln.issuing_op(c))) for c in copies} == {"aten::copy_"}
    sizes = {int(t.extra["bytes"][c]) for c in copies}
    assert sizes == {8 * 16 * 1024 * 1024 * 2}  # one bf16 score matrix
    put("cs_att_copy_mib", f"{sizes.pop() / 2**20:.0f} MiB")
    ti = rec("naive_inplace", "04_attention").trace()
    assert not len(ti.where(kind=Kind.MEMCPY))  # in place: no copy

    def busy(tr: Any) -> float:
        return step_times(tr)[-1].gpu_busy_us

    put("cs_inplace_pct", f"{100 * (1 - busy(ti) / busy(t)):.0f} %")
    chain = [t.name(i) for i in t.where(kind=Kind.CPU_OP)]
    assert "aten::masked_fill" in chain and "aten::clone" in chain
    last = t.steps[-1].name
    c = one([c for c in copies if (s_ := ln.step_of(c)) is not None and s_.name == last])
    fig = timeline(
        t,
        around=c,
        pad_us=150,
        callouts=[Callout("Memcpy DtoD: the clone", event=c)],
        width_in=WIDTH_IN,
    )
    return lambda: picture(
        "att_copy",
        fig,
        "Recording 04_attention naive, the last step: the score matrix copied, then masked.",
    )


def att_cudnn() -> Callable[[], SmallFigure]:
    """Entry: An `aten::_scaled_dot_product_cudnn_attention` you did not ask for."""
    r = rec("sdpa_default", "04_attention")
    t = r.trace()
    sdpa = sorted(
        {
            t.name(i)
            for i in t.where(kind=Kind.CPU_OP)
            if t.name(i).startswith("aten::_scaled_dot_product")
        }
    )
    assert sdpa == ["aten::_scaled_dot_product_cudnn_attention"]
    ks = {t.name(i) for i in t.where(kind=Kind.KERNEL)}
    assert len(ks) == 1 and next(iter(ks)).startswith("cudnn_generated_")
    ln = link(t)
    assert {t.name(int(ln.launch[i])) for i in t.where(kind=Kind.KERNEL)} == {"cuLaunchKernelEx"}
    assert r.env["cudnn"] > 91500
    put("cs_sdpa_op", code(sdpa[0]))
    put("cs_cudnn_kernel", code(next(iter(ks))[:60] + "…"))
    put("cs_cudnn_version", code(str(r.env["cudnn"])))
    k_last = one(in_step(t, t.steps[-1].name, kind=Kind.KERNEL))
    fig = timeline(
        t,
        around=k_last,
        pad_us=40,
        callouts=[Callout("cuDNN's fused kernel", event=k_last)],
        width_in=WIDTH_IN,
        title="sdpa_default: around the cuDNN kernel",
    )
    return lambda: picture(
        "att_cudnn",
        fig,
        "Recording 04_attention sdpa_default, the last step: one op chain, one launch, one kernel.",
    )


def att_occupancy() -> Callable[[], SmallFigure]:
    """Entry: 0 % occupancy on the fastest attention kernel."""
    t = rec("sdpa_cudnn", "04_attention").trace()
    k = [int(i) for i in t.where(kind=Kind.KERNEL) if t.name(int(i)).startswith("cudnn_generated_")]
    assert k and all(t.extra["occupancy_pct"][i] == 0 for i in k)
    smem = {int(t.extra["shared_mem"][i]) for i in k}
    assert len(smem) == 1 and smem.pop() > 48 * 1024
    put("cs_att_smem", f"{int(t.extra['shared_mem'][k[0]]) / 1024:.0f} KB")
    # Every distinct large kernel of the attention recordings: shared memory per block against
    # the occupancy the trace reports. Over 48 KB reads 0; under it, a value.
    from matplotlib.figure import Figure

    pts = {}
    for v in ("naive", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"):
        tv = rec(v, "04_attention").trace()
        for i in tv.where(kind=Kind.KERNEL):
            if tv.dur_ns[i] > 10_000:
                pts[tv.name(int(i))] = (
                    int(tv.extra["shared_mem"][i]) / 1024,
                    float(tv.extra["occupancy_pct"][i]),
                )
    assert all((o == 0) == (kb > 48) for kb, o in pts.values())
    fig = Figure(figsize=(WIDTH_IN, 2.4))
    ax = fig.subplots()
    for kb, o in pts.values():
        ax.plot(kb, o, "o", color="C3" if o == 0 else "C0")
    ax.axvline(48, color="k", lw=1, ls="--")
    ax.text(49, ax.get_ylim()[1] * 0.9, "48 KB", fontsize=9, va="top")
    ax.set_xlabel("shared memory per block (KB)")
    ax.set_ylabel("reported occupancy (%)")
    n0 = sum(o == 0 for _, o in pts.values())
    fig.tracereader_alt = (  # type: ignore[attr-defined]
        f"Scatter of {len(pts)} attention-recording kernels: the {n0} with more than "
        f"48 KB of shared memory per block all report 0 % occupancy, the others a value."
    )
    return lambda: picture(
        "att_occupancy",
        fig,
        "Recordings 04_attention: every kernel over 10 µs, by shared memory per block.",
    )


def att_cudnn_self() -> Callable[[], SmallFigure]:
    """Entry: A fused attention op that is mostly self time."""
    r_il = rec("interleaved_backends", "04_attention")
    t = r_il.trace()
    cud = op_per_call(t, "cudnn", "aten::_cudnn_attention_forward")
    fl = op_per_call(t, "flash", "aten::_flash_attention_forward")

    def self_us(rows: list[dict[str, Any]]) -> float:
        return float(np.median([r["self_cpu_us"] for r in rows]))

    assert self_us(cud) > 2 * self_us(fl)
    bare = unprofiled_calls(r_il)
    cycle = 20  # 5 versions, balanced
    assert bare[0][0] == "cudnn" and all(bare[k][0] == "cudnn" for k in range(0, len(bare), cycle))
    per = medians([c for k, c in enumerate(bare) if k % cycle])  # off the cycle's seam (Part 3)
    assert per["cudnn"] > per["flash"]  # unprofiled, the call costs more
    put("cs_cudnn_self", f"{self_us(cud):.0f} µs")
    put("cs_flash_self", f"{self_us(fl):.0f} µs")
    spans = t.where(name="cudnn", kind=Kind.USER_ANNOTATION)
    span = int(spans[len(spans) // 2])
    op = one(
        t.where(
            name="aten::_cudnn_attention_forward",
            kind=Kind.CPU_OP,
            within=(t.ts_ns[span], t.ts_ns[span] + t.dur_ns[span]),
        )
    )
    fig = timeline(
        t,
        window=win(t, [span], pad_us=3),
        gaps=False,
        callouts=[Callout("_cudnn_attention_forward: mostly self time", event=op)],
        width_in=WIDTH_IN,
    )
    return lambda: picture(
        "att_cudnn_self",
        fig,
        "Recording 04_attention interleaved_backends: one cuDNN call under the profiler.",
    )


def schedule() -> Callable[[], SmallFigure]:
    """Entry: The steps start at #2."""
    for n in NAMES[:-1]:  # the interleaved recording has its own schedule
        expect = param(n, "wait") + param(n, "warmup_steps")
        assert T[n].steps[0].name == f"ProfilerStep#{expect}", n
        assert len(T[n].steps) == param(n, "active"), n
    assert (
        T["64_bf16"].steps[0].name == "ProfilerStep#2"
        and T["64_bf16_nowait"].steps[0].name == "ProfilerStep#0"
    )
    put("sc_wait", param("64_bf16", "wait"))
    put("sc_warm", param("64_bf16", "warmup_steps"))
    put("sc_active", param("64_bf16", "active"))
    put("sc_first", code(T["64_bf16"].steps[0].name))
    put(
        "sc_missing",
        " and ".join(
            f"#{i}" for i in range(param("64_bf16", "wait") + param("64_bf16", "warmup_steps"))
        ),
    )
    t = T["64_bf16"]
    fig = timeline(t, callouts=[Callout("ProfilerStep#2", event=t.steps[0].event)], width_in=WIDTH_IN,
                   title="64_bf16: the whole recorded window")  # fmt: skip
    sched = ", ".join(
        f"{k}={param('64_bf16', key)}"
        for k, key in (("wait", "wait"), ("warmup", "warmup_steps"), ("active", "active"))
    )
    return lambda: picture("schedule", fig, f"Recording 64_bf16, recorded with schedule({sched}).")


def abr() -> Callable[[], SmallFigure]:
    """Entry: An `Activity Buffer Request` row."""
    name = "64_bf16_nowait"
    t = T[name]
    abr = t.where(name="Activity Buffer Request")
    others = [n for n in NAMES if n != name and len(T[n].where(name="Activity Buffer Request"))]
    assert len(abr) == 1 and not others
    i = int(abr[0])
    s0 = t.steps[0]
    assert Kind(int(t.kind[i])) == Kind.OVERHEAD and s0.start_ns < t.ts_ns[i] < s0.end_ns
    assert not t.lanes[int(t.lane[i])].is_gpu and t.lane[i] != t.lane[s0.event]
    put("ab_dur", us(t.dur_ns[i] / 1e3))
    put("ab_at", us((t.ts_ns[i] - s0.start_ns) / 1e3))
    put("ab_lane", code(t.lanes[int(t.lane[i])].label))
    put("ab_others", len(NAMES) - 1)
    free = int(t.where(name="cudaFree", within=(int(t.ts_ns[i]), s0.end_ns))[0])
    fig = timeline(t, window=(int(t.ts_ns[i]) - 300_000, int(t.ts_ns[free] + t.dur_ns[free]) + 100_000),
                   callouts=[Callout("first runtime call after it", event=free)], width_in=WIDTH_IN)  # fmt: skip
    extra = shade(fig, t, [i], "profiler overhead")
    return lambda: picture(
        "abr",
        fig,
        f"Recording {name}, early in ProfilerStep#0; the band marks the buffer request.",
        extra,
    )


def lazy() -> Callable[[], SmallFigure]:
    """Entry: Module loading inside the first runtime calls."""
    name = "64_bf16_nowait"
    t = T[name]
    rtml = t.where(name="Runtime Triggered Module Loading")
    lfl = t.where(name="Lazy Function Loading")
    assert len(rtml) and len(lfl)
    s0 = t.steps[0]
    assert all(s0.start_ns <= t.ts_ns[i] < s0.end_ns for i in [*rtml, *lfl])
    for n in NAMES:
        if n != name:
            assert not len(T[n].where(kind=Kind.OVERHEAD)), n
    fsa = t.where(name="cudaFuncSetAttribute")
    host = max(fsa, key=lambda i: t.dur_ns[i])
    inside = [
        i
        for i in rtml
        if t.ts_ns[host] <= t.ts_ns[i]
        and t.ts_ns[i] + t.dur_ns[i] <= t.ts_ns[host] + t.dur_ns[host]
    ]
    assert len(inside) == 1
    calls = t.where(kind=(Kind.RUNTIME, Kind.DRIVER))
    for i in lfl:  # each one inside a runtime call, or right before one
        a, b = int(t.ts_ns[i]), int(t.ts_ns[i] + t.dur_ns[i])
        assert any(
            t.ts_ns[c] <= a < t.ts_ns[c] + t.dur_ns[c] or 0 <= t.ts_ns[c] - b < 100_000
            for c in calls
        )
    put("ml_host", us(t.dur_ns[host] / 1e3))
    put("ml_load", us(t.dur_ns[inside[0]] / 1e3))
    put("ml_lfl", len(lfl))
    put("ml_lfl_max", us(t.dur_ns[lfl].max() / 1e3))
    fig = timeline(t, window=win(t, [host], pad_us=40), width_in=WIDTH_IN,
                   callouts=[Callout(f"cudaFuncSetAttribute: {us(t.dur_ns[host] / 1e3)}", event=int(host), at="mid")])  # fmt: skip
    extra = shade(fig, t, [i for i in [*rtml, *lfl] if win(t, [host], 40)[0] <= t.ts_ns[i] < win(t, [host], 40)[1]],
                  "module loading (profiler rows)")  # fmt: skip
    return lambda: picture(
        "lazy", fig, f"Recording {name}, inside aten::mm of ProfilerStep#0.", extra
    )


def llm_eager() -> Callable[[], SmallFigure]:
    """Entry: Hundreds of short kernels per token, and the GPU lane mostly empty."""
    t = rec("generate_dynamic_1b", "05_llm_decode").trace()
    r = rec("generate_dynamic_1b", "05_llm_decode")
    assert r.results is not None, "the recording has no results.json"
    dec = [s for s in step_times(t) if s.name != "ProfilerStep#0"]
    assert all(s.gpu_busy_us < 0.3 * r.results["ms_per_token"] * 1e3 for s in dec)
    put("cs_llm_kernels", f"{dec[0].kernels}")
    put("cs_llm_busy", us(np.median([s.gpu_busy_us for s in dec])))
    put("cs_llm_token", us(r.results["ms_per_token"] * 1e3))
    lk_ = link(t)
    syncs: dict[str, int] = {}
    for i in t.where(name="cudaStreamSynchronize"):
        if (st_ := lk_.step_of(int(i))) is not None and st_.name != "ProfilerStep#0":
            syncs[st_.name] = syncs.get(st_.name, 0) + 1
    assert len(set(syncs.values())) == 1
    put("cs_llm_syncs", {1: "one", 2: "two", 3: "three"}[next(iter(syncs.values()))])
    tg = rec("generate_static_compiled_1b", "05_llm_decode").trace()
    lg = link(tg)
    per_step: dict[str, int] = {}
    for i in tg.where(name="cudaStreamSynchronize"):
        if (st_ := lg.step_of(int(i))) is not None:
            per_step[st_.name] = per_step.get(st_.name, 0) + 1
    gst = step_times(tg)[:-1]
    assert set(per_step[s_.name] for s_ in gst) == {1}
    put("cs_gen_launches", f"{np.median([s_.launches for s_ in gst]) - 1:.0f}")
    put("cs_gen_syncs", "one")
    s1 = t.step("ProfilerStep#2")
    mid = (s1.start_ns + s1.end_ns) // 2
    fig = timeline(t, window=(mid, mid + 1_000_000), arrows=False, width_in=WIDTH_IN)
    return lambda: picture(
        "llm_eager",
        fig,
        "Recording 05_llm_decode generate_dynamic_1b: one millisecond in the middle of decode step 2.",
    )


def llm_graph() -> Callable[[], SmallFigure]:
    """Entry: One `cudaGraphLaunch` per token, and the GPU lane full."""
    r = rec("loop_fused_8b", "05_llm_decode")
    assert r.results is not None, "the recording has no results.json"
    t = r.trace()
    ln = link(t)
    dec = step_times(t)[:-1]
    assert all(s.launches == 4 for s in dec)
    graph_calls = t.where(name="cudaGraphLaunch")
    assert len(graph_calls) == len(step_times(t))  # one per token
    ops2 = ln.gpu_ops_of(t.step("ProfilerStep#2").event)  # the GPU work of one token
    busy_frac = np.median([s.gpu_busy_us for s in dec]) / (r.results["ms_per_token"] * 1e3)
    assert busy_frac > 0.9
    put("cs_graph_kernels", f"{dec[0].kernels}")
    put("cs_graph_busy", f"{100 * min(busy_frac, 1):.0f} %")
    fig = timeline(t, window=win(t, ops2, pad_us=30), arrows=False, width_in=WIDTH_IN)
    return lambda: picture(
        "llm_graph",
        fig,
        "Recording 05_llm_decode loop_fused_8b: the GPU work of one token (ProfilerStep#2).",
    )


def llm_tuning() -> SmallFigure:
    """Entry: The same kernel, at different speeds in different runs."""
    # Across the repeats (one process each), so not a %%repeats cell: every repeat is read here.
    from matplotlib.figure import Figure
    from tracesite.notebook import variant as recorded

    def kernel_runs(name: str) -> list[dict[str, tuple[float, Any]]]:
        """Per repeat: {kernel name: (µs per token, (grid, block) of its first launch)} for the
        kernels of profiler step 2."""
        out = []
        for r in recorded(name, "05_llm_decode").repeats:
            tv = r.trace()
            by: dict[str, tuple[float, Any]] = {}
            for g in link(tv).gpu_ops_of(tv.step("ProfilerStep#2").event):
                if tv.kind[g] == Kind.KERNEL:
                    launch = (int(tv.extra["grid"][g]), int(tv.extra["block"][g]))
                    us_, launch = by.get(tv.name(g), (0.0, launch))
                    by[tv.name(g)] = (us_ + tv.dur_ns[g] / 1e3, launch)
            out.append(by)
        return out

    tuned = kernel_runs("loop_packed_8b")
    common = {
        n
        for n in set.intersection(*(set(k) for k in tuned))  # Inductor's GEMVs: reductions
        if n.startswith("triton_red") and "_t_" in n and "argmax" not in n
    }  # over a transposed weight
    # Of those launched with different settings in different processes, the most uneven.
    relaunched = [n for n in common if len({t[n][1] for t in tuned}) > 1]
    name = max(relaunched, key=lambda n: max(t[n][0] for t in tuned) / min(t[n][0] for t in tuned))
    per_run = [t[name] for t in tuned]
    assert max(u for u, _ in per_run) > 1.2 * min(u for u, _ in per_run)
    put("cs_tune_kernel", f"`{name[:48]}…`")
    put(
        "cs_tune_runs",
        ", ".join(f"{us(u)} ({g:,} blocks of {b} threads)" for u, (g, b) in per_run),
    )
    fixed = [t["gemv_kernel"][0] for t in kernel_runs("loop_kernels_8b")]
    assert max(fixed) < 1.03 * min(fixed)
    put("cs_fixed_runs", ", ".join(f"{us(u)}" for u in fixed))

    def launches(r: Any) -> tuple[tuple[str, str, str], ...]:
        """One token's kernel launches (profiler step 2), in order: name, grid, block."""
        tv = r.trace()
        ops = link(tv).gpu_ops_of(tv.step("ProfilerStep#2").event)
        ops = ops[np.argsort(tv.ts_ns[ops], kind="stable")]
        return tuple(
            (tv.name(g), str(tv.extra["grid"][g]), str(tv.extra["block"][g]))
            for g in ops
            if tv.kind[g] == Kind.KERNEL
        )

    final = recorded("loop_untuned_8b", "05_llm_decode")  # every session it was recorded in
    untuned = [launches(r) for s in final.sessions for r in s.repeats] + [
        launches(r) for r in final.repeats
    ]
    assert len(untuned) >= 6 and len(set(untuned)) == 1  # the same launches in every process
    put("cs_untuned_n", f"{len(untuned)}")
    fig = Figure(figsize=(WIDTH_IN, 1.8))
    ax = fig.subplots()
    slow_tuned = [u / min(v for v, _ in per_run) for u, _ in per_run]
    slow_fixed = [u / min(fixed) for u in fixed]
    ax.plot(slow_tuned, [1] * 3, "o", color="C3")
    ax.plot(slow_fixed, [0] * 3, "o", color="C0")
    ax.set_yticks([0, 1], ["fixed settings", "tuned per process"])
    ax.set_ylim(-0.6, 1.6)
    ax.set_xlabel("time per token / fastest process's (one dot per process)")
    fig.tracereader_alt = (  # type: ignore[attr-defined]
        f"Dot plot: an Inductor GEMV kernel tuned in each process runs up to "
        f"{max(slow_tuned):.2f} times as long as in its fastest process; the fixed-setting "
        f"GEMV kernels stay within {100 * (max(slow_fixed) - 1):.1f} %."
    )
    return picture(
        "llm_tuning",
        fig,
        "Recordings 05_llm_decode loop_packed_8b and loop_kernels_8b: profiler step 2 of each repeat.",
    )


# --------------------------------------------------------------------------- Part 5


def train_backward_thread() -> Callable[[], SmallFigure]:
    """Entry: A second CPU thread that only works during the backward."""
    t = rec("eager", "06_train_step").trace()
    (fwd,) = t.regions("forward")
    (bwd,) = t.regions("backward")
    main = int(t.lane[fwd.event])
    evaluate = t.where(prefix="autograd::engine::evaluate_function: ")
    lanes = {int(x) for x in t.lane[evaluate]}
    assert len(lanes) == 1 and main not in lanes, lanes
    assert all(bwd.start_ns <= t.ts_ns[i] <= bwd.end_ns for i in evaluate)
    on_it = np.flatnonzero(t.lane == next(iter(lanes)))
    assert t.ts_ns[on_it].min() >= bwd.start_ns, "the thread is idle before the backward"
    put("cs_train_evaluate", f"{len(evaluate):,}")
    start = int(t.ts_ns[evaluate].min())
    fig = timeline(
        t, window=(start - 1_500_000, start + 1_000_000), arrows=False, width_in=TRAIN_WIDTH_IN
    )
    return lambda: picture(
        "train_backward_thread",
        fig,
        "Recording 06_train_step eager: the start of the backward, on a second CPU thread.",
        colors=TRAIN_COLORS,
    )


def train_data_gap() -> Callable[[], SmallFigure]:
    """Entry: The GPU lane empty under a long `enumerate(DataLoader)` span."""
    t = rec("loader_inline", "06_train_step").trace()
    (data,) = t.regions("data")
    ln = link(t)
    ops = ln.gpu_ops
    during = ops[(t.ts_ns[ops] < data.end_ns) & (t.ts_ns[ops] + t.dur_ns[ops] > data.start_ns)]
    busy = float(t.dur_ns[during].sum())
    assert busy < 0.01 * (data.end_ns - data.start_ns), busy
    (it,) = t.where(name="enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    assert t.dur_ns[it] > 0.95 * (data.end_ns - data.start_ns)
    put("cs_train_data", us((data.end_ns - data.start_ns) / 1e3))
    fig = timeline(t, window=(data.start_ns - 50_000, data.end_ns + 400_000), arrows=False,
                   width_in=TRAIN_WIDTH_IN)  # fmt: skip
    return lambda: picture(
        "train_data_gap",
        fig,
        "Recording 06_train_step loader_inline: the data region, the DataLoader working in "
        "the training process.",
        colors=TRAIN_COLORS,
    )


def check_entries() -> None:
    """Every entry (a level-3 heading) has exactly one picture, with alt text."""
    # Every entry (a level-3 heading) has exactly one picture, and every picture has alt text.
    entries = re.findall(r"(?m)^### ", (HERE / "cheatsheet.md").read_text(encoding="utf-8"))
    assert len(entries) == len(ALTS), (len(entries), len(ALTS))
    assert all(len(a) > 40 for a in ALTS.values())
