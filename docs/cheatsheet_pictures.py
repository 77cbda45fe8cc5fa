"""The matmul details' pictures (``cheatsheet-matmul.md``), one function per entry.

Each entry function draws its entry's picture from the drawn repeat (the recordings
:mod:`tracesite.notebook` reads) and returns a thunk that shows it as a small PNG, with alt
text. It picks the events it draws the way the entry's facts do
(``docs/facts/_cheatsheet_matmul.py`` and ``_cheatsheet_matmul_code.py``): the numbers and claims are computed and checked on
every repeat there, not here. The cheatsheet's own entries (``cheatsheet.md``), about the
other parts' recordings, are drawn in :mod:`cheatsheet_parts_pictures` with the helpers
here (:class:`SmallFigure`, :func:`picture`, :func:`drawn`, :func:`around`,
:func:`around_call`).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _cheatsheet_common import (
    EXAMPLE,
    LN,
    T,
    after_call_us,
    gemm_of,
    in_step,
    lead_us,
    one,
    param,
    step_add,
    step_gemm,
    table_rows,
    us,
)
from matplotlib.patches import Patch
from PIL import Image
from tracesite.facts import claim
from tracesite.html import FigureHTML
from tracesite.notebook import setup

from tracereader import Callout, Kind, compare_timelines, timeline

HERE = Path(__file__).resolve().parent
setup(EXAMPLE)

WIDTH_IN, DPI = 7.6, 80
#: The training-step entries' pictures, a little narrower: the page stays within its 1.5 MB.
TRAIN_WIDTH_IN, TRAIN_COLORS = 6.4, 16
ALTS: dict[str, str] = {}


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
    claim(alt, f"{key}: the picture has alt text")
    ALTS[key] = alt  # one picture per entry: check_entries counts them
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


def note(
    fig: Any,
    panel: int,
    trace: Any,
    event: int,
    text: str,
    dx: float = 0,
    dy: float = 26,
    at: str = "mid",
) -> None:
    """A callout on one panel of a :func:`compare_timelines` figure, which takes none: an
    arrow from ``text`` to the bar of ``event`` (the panel's drawn bar nearest its span), at
    its ``"mid"`` or a little after its ``"start"``."""
    ax = fig.axes[panel]
    start = int(fig.tracereader_info["panels"][panel]["window"]["start_ns"])
    scale = 1e6 if "(ms)" in fig.axes[-1].get_xlabel() else 1e3
    x0 = (int(trace.ts_ns[event]) - start) / scale
    x1 = (int(trace.ts_ns[event] + trace.dur_ns[event]) - start) / scale
    tol = 0.01 * (ax.get_xlim()[1] - ax.get_xlim()[0])

    def off(v: Any) -> float:
        return abs(float(v.vertices[:, 0].min()) - x0) + abs(float(v.vertices[:, 0].max()) - x1)

    bars = [v for c in ax.collections for v in getattr(c, "get_paths", list)()]
    found = sorted((v for v in bars if off(v) <= tol), key=off)
    claim(found, f"the callout's arrow points at the bar of {trace.name(event)} in panel {panel}")
    y = float(found[0].vertices[:, 1].mean())
    xp = (x0 + x1) / 2 if at == "mid" else x0 + 0.03 * (x1 - x0)
    ax.annotate(text, xy=(xp, y), xytext=(dx, dy), textcoords="offset points",
                ha="center", fontsize=9, zorder=6,
                bbox={"boxstyle": "round,pad=0.3", "fc": "#fffbe6", "ec": "0.55"},
                arrowprops={"arrowstyle": "->", "color": "0.15"})  # fmt: skip


def win(trace: Any, rows: Any, pad_us: float = 5.0) -> tuple[int, int]:
    """The window spanning some events, padded."""
    rows = np.asarray(rows)
    pad = int(pad_us * 1e3)
    return int(trace.ts_ns[rows].min()) - pad, int(
        (trace.ts_ns[rows] + trace.dur_ns[rows]).max()
    ) + pad


def drawn(
    key: str, caption: str, trace: Any, *callouts: Callout, colors: int = 32, **view: Any
) -> Callable[[], SmallFigure]:
    """Entry ``key``'s picture: a timeline of ``trace`` with ``callouts``, shown with
    ``caption`` (``view``: the rest of :func:`timeline`'s settings, the window, the step or
    the event around; ``WIDTH_IN`` wide unless it says otherwise)."""
    view.setdefault("width_in", WIDTH_IN)
    fig = timeline(trace, callouts=list(callouts), **view)
    return lambda: picture(key, fig, caption, colors=colors)


def around(
    key: str, trace: Any, event: int, pad_us: float, label: str, caption: str, **view: Any
) -> Callable[[], SmallFigure]:
    """:func:`drawn` around one ``event`` (``pad_us`` either side), with the callout ``label``
    on it."""
    return drawn(key, caption, trace, Callout(label, event=event), around=event, pad_us=pad_us,
                 **view)  # fmt: skip


def overhead() -> Callable[[], SmallFigure]:
    """Entry: *Self CPU* total far above *Self CUDA* total."""
    fig = compare_timelines(
        [T["64_bf16"], T["4096_bf16"]], [4, 4], ["64×64", "4096×4096"], width_in=WIDTH_IN
    )
    for panel, name, text in (
        (0, "64_bf16", "the GEMM: a sliver"),
        (1, "4096_bf16", "the GEMM"),
    ):
        note(fig, panel, T[name], step_gemm(name, 4), text)
    return lambda: picture(
        "overhead",
        fig,
        "Recordings 64_bf16 and 4096_bf16, ProfilerStep#4 of each, on one time scale.",
    )


def compute() -> Callable[[], SmallFigure]:
    """Entry: CPU and CUDA totals of the same order."""
    t = T["4096_bf16"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    caption = f"Recording 4096_bf16, all {len(t.steps)} recorded steps and the final synchronize."
    return drawn("compute", caption, t, Callout("GPU still busy", event=sync),
                 title="4096_bf16: the whole recorded window")  # fmt: skip


def hotspot() -> Callable[[], SmallFigure]:
    """Entry: One row owns most of the CUDA time."""
    (row,) = table_rows("4096_bf16", "nvjet")
    t = T["4096_bf16"]
    k = step_gemm("4096_bf16", 3)
    caption = "Recording 4096_bf16, ProfilerStep#3."
    return drawn("hotspot", caption, t,
                 Callout(f"GEMM: {row['self_cuda_pct']:.0f} % of CUDA time", event=k, at="mid"),
                 step=3)  # fmt: skip


def selftotal() -> Callable[[], SmallFigure]:
    """Entry: *Total* much larger than *Self*."""
    t = T["64_bf16"]
    mat = one(in_step(t, 3, name="aten::matmul"))
    mm = one(in_step(t, 3, name="aten::mm"))
    caption = "Recording 64_bf16, aten::matmul in ProfilerStep#3."
    return drawn("selftotal", caption, t, Callout("aten::matmul: total", event=mat),
                 Callout("aten::mm does the work", event=mm, at="mid"),
                 around=mat, pad_us=4)  # fmt: skip


def calls() -> Callable[[], SmallFigure]:
    """Entry: A kernel counted more often than the op that launches it."""
    name = "4096_fp32"
    t, ln = T[name], LN[name]
    adds = t.where(kind=Kind.KERNEL, contains="CUDAFunctor_add")
    orphans = [int(i) for i in adds if ln.launch[i] < 0]
    orphan = orphans[0]
    first = t.steps[0]
    caption = "Recording 4096_fp32, from the first recorded step to the first add kernel."
    return drawn("calls", caption, t, Callout("launched before the window", event=orphan),
                 window=(first.start_ns - 20_000, int(t.ts_ns[orphan] + t.dur_ns[orphan]) + 80_000))  # fmt: skip


def gpuannot() -> Callable[[], SmallFigure]:
    """Entry: A `matmul_add` row with no CPU time and more than 100 % of CUDA time."""
    name = "64_bf16"
    t = T[name]
    span = one(in_step(t, 3, kind=Kind.GPU_ANNOTATION, name="matmul_add"))
    caption = "Recording 64_bf16, ProfilerStep#3, with the GPU-side annotation strip."
    return drawn("gpuannot", caption, t,
                 Callout(f"GPU-side matmul_add: {us(t.dur_ns[span] / 1e3)}", event=span, at="mid"),
                 step=3, gpu_annotations=True)  # fmt: skip


def firststep() -> Callable[[], SmallFigure]:
    """Entry: The first step is far wider than the rest."""
    t = T["64_bf16_nowait"]
    d = [s.dur_us for s in t.steps]
    caption = "Recording 64_bf16_nowait (a fresh process, recording from the first call)."
    return drawn("firststep", caption, t,
                 Callout(f"ProfilerStep#0: {us(d[0])}", event=t.steps[0].event),
                 Callout("#1 and #2", event=t.steps[1].event),
                 title="64_bf16_nowait: the whole recorded window")  # fmt: skip


def firstgap() -> Callable[[], SmallFigure]:
    """Entry: A long wait before the first `aten` op of a range."""
    t = T["64_bf16_nowait"]
    first, ann, mat = lead_us(t, 0)
    caption = "Recording 64_bf16_nowait, the start of ProfilerStep#0."
    return drawn("firstgap", caption, t, Callout(f"{us(first)} after matmul_add", event=mat),
                 window=(int(t.ts_ns[ann]) - 15_000, int(t.ts_ns[mat]) + 40_000))  # fmt: skip


def silentself() -> Callable[[], SmallFigure]:
    """Entry: An op that is long but almost empty."""
    t = T["64_bf16_nowait"]
    mm = one(in_step(t, 0, name="aten::mm"))
    caption = "Recording 64_bf16_nowait, aten::mm in ProfilerStep#0."
    return drawn("silentself", caption, t,
                 Callout(f"aten::mm: {us(t.dur_ns[mm] / 1e3)}", event=mm, at="mid"),
                 around=mm, pad_us=300)  # fmt: skip


def occupancy() -> Callable[[], SmallFigure]:
    """Entry: Occupancy queries before the first GEMM launch."""
    t = T["64_bf16_nowait"]

    def occ(tr: Any, w: Any = None) -> Any:
        return tr.where(kind=Kind.RUNTIME, prefix="cudaOccupancy", within=w)

    rows = occ(t)
    clusters = t.where(name="cudaOccupancyMaxActiveClusters")
    caption = "Recording 64_bf16_nowait, inside aten::mm of ProfilerStep#0."
    return drawn("occupancy", caption, t,
                 Callout(f"{len(clusters)} × cudaOccupancyMaxActiveClusters", event=int(clusters[0])),
                 window=win(t, rows, pad_us=4))  # fmt: skip


def launchapi() -> Callable[[], SmallFigure]:
    """Entry: `cuLaunchKernelEx` for the GEMM, `cudaLaunchKernel` for the add."""
    t, ln = T["64_bf16"], LN["64_bf16"]
    gemm, add = step_gemm("64_bf16", 3), step_add("64_bf16", 3)
    caption = "Recording 64_bf16, ProfilerStep#3."
    return drawn("launchapi", caption, t,
                 Callout("cuLaunchKernelEx (driver API)", event=int(ln.launch[gemm])),
                 Callout("cudaLaunchKernel", event=int(ln.launch[add])),
                 step=3)  # fmt: skip


def memset() -> Callable[[], SmallFigure]:
    """Entry: A memset right before the big GEMM."""
    t, ln = T["4096_bf16"], LN["4096_bf16"]
    m = one(in_step(t, 3, name="cudaMemsetAsync"))
    k = int(ln.gpu_ops_of(one(in_step(t, 3, name="aten::mm")))[1])
    caption = "Recording 4096_bf16, aten::mm of ProfilerStep#3."
    return drawn("memset", caption, t, Callout("cudaMemsetAsync", event=m),
                 window=(int(t.ts_ns[m]) - 8_000, int(t.ts_ns[k]) + 25_000))  # fmt: skip


def sync64() -> Callable[[], SmallFigure]:
    """Entry: A short `cudaDeviceSynchronize` at the end, over an idle GPU."""
    t = T["64_bf16"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    s1 = int(t.ts_ns[sync] + t.dur_ns[sync])
    caption = "Recording 64_bf16, the last step and the profiler's closing synchronize."
    return drawn("sync64", caption, t, Callout("cudaDeviceSynchronize", event=sync),
                 window=(int(t.steps[-1].start_ns) - 5_000, s1 + 5_000))  # fmt: skip


def syncbig() -> Callable[[], SmallFigure]:
    """Entry: A long `cudaDeviceSynchronize`, with the GPU busy throughout."""
    t = T["4096_fp32"]
    sync = one(t.where(name="cudaDeviceSynchronize"))
    caption = (
        "Recording 4096_fp32 (float32 without TF32). Under the sync's start the GPU lane looks "
        "idle: it runs the warm-up call's GEMM, launched before recording began."
    )
    return drawn("syncbig", caption, t, Callout("cudaDeviceSynchronize", event=sync),
                 title="4096_fp32: the whole recorded window")  # fmt: skip


def empty() -> Callable[[], SmallFigure]:
    """Entry: The GPU row is mostly empty."""
    t = T["64_bf16"]
    k = int(LN["64_bf16"].gpu_ops_of(t.step(3).event)[0])
    caption = "Recording 64_bf16, ProfilerStep#3."
    return drawn("empty", caption, t, Callout(f"GEMM, {us(t.dur_ns[k] / 1e3)}", event=k), step=3)


def latency() -> Callable[[], SmallFigure]:
    """Entry: Kernels start long after their launch call."""
    t4, l4 = T["4096_bf16"], LN["4096_bf16"]
    first_gemm = int(t4.ts_ns[t4.where(kind=Kind.KERNEL, prefix="nvjet")].min())
    queued = [int(k) for k in l4.gpu_ops if t4.ts_ns[l4.launch[k]] > first_gemm]
    k = next(q for q in queued if t4.name(q).startswith("nvjet") and l4.step_of(q) == t4.steps[1])
    c = int(l4.launch[k])
    caption = f"Recording 4096_bf16, the GEMM launched in {t4.steps[1].name}."
    return drawn("latency", caption, t4,
                 Callout(f"GEMM: {us(after_call_us(t4, l4, k))} after its call returned", event=k),
                 window=(int(t4.ts_ns[c]) - 10_000, int(t4.ts_ns[k]) + 40_000))  # fmt: skip


def kernelgap() -> Callable[[], SmallFigure]:
    """Entry: A gap between the two kernels of every step."""
    name = "64_bf16_20steps"
    t = T[name]
    s = t.steps[10]
    caption = f"Recording {name}, {s.name} and {t.steps[11].name}."
    return drawn("kernelgap", caption, t, Callout("aten::add's launch", name="cudaLaunchKernel"),
                 window=(s.start_ns, t.steps[11].end_ns))  # fmt: skip


def variance() -> Callable[[], SmallFigure]:
    """Entry: The same kernel takes different times in different steps."""
    name = "4096_bf16_20steps"
    t = T[name]
    g = t.where(kind=Kind.KERNEL, prefix="nvjet")
    d = t.dur_ns[g] / 1e3
    j = int(np.argmax(d))
    lo, hi = max(j - 1, 0), min(j + 1, len(g) - 1)
    caption = f"Recording {name}, the longest of {len(g)} GEMMs and its neighbours."
    return drawn("variance", caption, t, Callout(f"longest: {us(d[j])}", event=int(g[j]), at="mid"),
                 window=win(t, g[[lo, hi]], pad_us=10))  # fmt: skip


def names() -> Callable[[], SmallFigure]:
    """Entry: GEMM kernel names tell the library, the GPU and the tile."""
    small = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    big = {T["4096_bf16"].name(k) for k in T["4096_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    small, big = small.pop(), big.pop()
    t, ln = T["64_bf16"], LN["64_bf16"]
    k = int(ln.gpu_ops_of(t.step(4).event)[0])
    return around("names", t, k, 6, small, "Recording 64_bf16, the GEMM of ProfilerStep#4.")


def footprint() -> Callable[[], SmallFigure]:
    """Entry: Registers and shared memory: heavy GEMM, light add."""
    t = T["4096_bf16"]
    gemm, add = step_gemm("4096_bf16", 4), step_add("4096_bf16", 4)
    ex = t.extra
    caption = "Recording 4096_bf16, the kernels launched in ProfilerStep#4."
    return drawn("footprint", caption, t,
                 Callout(f"{int(ex['registers'][gemm])} registers, {ex['shared_mem'][gemm] / 1024:.0f} KiB shared", event=gemm, at="mid"),
                 Callout(f"{int(ex['registers'][add])} registers, no shared", event=add, at="mid"),
                 window=win(t, [gemm, add], pad_us=8))  # fmt: skip


def tf32() -> Callable[[], SmallFigure]:
    """Entry: float32 GEMMs: `ffma` against `tf32` in the name."""

    t32, g32, n32 = gemm_of("4096_fp32")
    ttf, gtf, ntf = gemm_of("4096_fp32_tf32")
    k32, ktf = int(g32[1]), int(gtf[1])
    fig = compare_timelines([t32, ttf], [win(t32, [k32], 20), win(ttf, [ktf], 20)],
                            ["float32, TF32 off", "float32, TF32 on"], width_in=WIDTH_IN)  # fmt: skip
    note(fig, 0, t32, k32, "ffma: CUDA cores")
    note(fig, 1, ttf, ktf, "tf32: Tensor Cores")
    return lambda: picture(
        "tf32",
        fig,
        "Recordings 4096_fp32 and 4096_fp32_tf32, the GEMM of ProfilerStep#3, on one time scale.",
    )


def dtod() -> Callable[[], SmallFigure]:
    """Entry: A `Memcpy DtoD` right before a GEMM."""
    name = "64_bf16_addmm"
    t, ln = T[name], LN[name]
    ops = ln.gpu_ops_of(t.step(3).event)
    caption = f"Recording {name} (eager torch.addmm), ProfilerStep#3."
    return drawn("dtod", caption, t, Callout("Memcpy DtoD: b into the output", event=int(ops[0])),
                 window=(int(t.ts_ns[ln.launch[ops[0]]]) - 5_000, int(t.ts_ns[ops[1]] + t.dur_ns[ops[1]]) + 5_000))  # fmt: skip


def chain() -> Callable[[], SmallFigure]:
    """Entry: From the step down to the kernel."""
    name = "64_bf16_cold"
    t, ln = T[name], LN[name]
    k = int(ln.gpu_ops_of(t.step(4).event)[0])
    return drawn("chain", f"Recording {name}, ProfilerStep#4.", t, Callout("GEMM", event=k), step=4)


def batched() -> Callable[[], SmallFigure]:
    """Entry: `aten::matmul` → `reshape`, `mm`, `_unsafe_view` for a 3-D input."""
    name = "64_bf16_batch8"
    t = T[name]
    mat = one(in_step(t, 3, name="aten::matmul"))
    caption = f"Recording {name}, aten::matmul in ProfilerStep#3."
    return drawn("batched", caption, t, Callout("aten::reshape", name="aten::reshape"),
                 Callout("aten::_unsafe_view", name="aten::_unsafe_view"),
                 around=mat, pad_us=3)  # fmt: skip


def around_call(
    key: str, trace: Any, step: int | str, call: str, pad_us: float, caption: str
) -> Callable[[], SmallFigure]:
    """:func:`around` the one event named ``call`` in ``step`` (a number or a name), labelled
    with its name."""
    return around(key, trace, one(in_step(trace, step, name=call)), pad_us, call, caption)


def addmm() -> Callable[[], SmallFigure]:
    """Entry: `aten::addmm` instead of `aten::matmul` plus `aten::add`."""
    name = "64_bf16_addmm"
    caption = f"Recording {name}, aten::addmm in ProfilerStep#4."
    return around_call("addmm", T[name], 4, "aten::addmm", 4, caption)


def dynamo() -> Callable[[], SmallFigure]:
    """Entry: `TorchDynamo Cache Lookup` in every step."""
    name = "64_bf16_compile"
    caption = f"Recording {name}, ProfilerStep#3."
    return around_call("dynamo", T[name], 3, "TorchDynamo Cache Lookup", 25, caption)


def region() -> Callable[[], SmallFigure]:
    """Entry: `Torch-Compiled Region: 0/0`."""
    name = "4096_bf16_compile"
    t = T[name]
    regions = t.where(prefix="Torch-Compiled Region")
    r = int(regions[1])
    caption = f"Recording {name}, ProfilerStep#3."
    return around("region", t, r, 3, "Torch-Compiled Region: 0/0", caption)


def hash() -> Callable[[], SmallFigure]:
    """Entry: The same `CompiledFxGraph` hash in every step."""
    name = "64_bf16_compile"
    t = T[name]
    calls = t.where(prefix="## Call CompiledFxGraph")
    hashes = {t.name(i).split()[3] for i in calls}
    h = hashes.pop()
    caption = f"Recording {name}, all {len(t.steps)} recorded steps."
    return drawn("hash", caption, t, Callout(h[:10] + "…", event=int(calls[0])),
                 Callout(h[:10] + "…", event=int(calls[-1])),
                 title=f"{name}: the whole recorded window")  # fmt: skip


def samekernel() -> Callable[[], SmallFigure]:
    """Entry: Compiled, and still a copy plus the same GEMM."""
    a, c = "64_bf16_addmm", "64_bf16_compile"
    fig = compare_timelines(
        [T[a], T[c]], [4, 4], ["eager torch.addmm", "torch.compile"], width_in=WIDTH_IN
    )
    for panel, name in ((0, a), (1, c)):
        note(fig, panel, T[name], step_gemm(name, 4), "the same GEMM")
    return lambda: picture(
        "samekernel",
        fig,
        "Recordings 64_bf16_addmm and 64_bf16_compile, ProfilerStep#4, on one time scale.",
    )


def tax() -> Callable[[], SmallFigure]:
    """Entry: More CPU per step under compile."""
    e, c = "64_bf16", "64_bf16_compile"
    fig = compare_timelines([T[e], T[c]], [4, 4], ["eager", "torch.compile"], width_in=WIDTH_IN)
    region = one(in_step(T[c], 4, prefix="Torch-Compiled Region"))
    # below and left of the region's bar, where no label is: above it is matmul_add's
    note(fig, 1, T[c], region, "compile's runtime frames", dx=-25, dy=-75, at="start")
    return lambda: picture(
        "tax", fig, "Recordings 64_bf16 and 64_bf16_compile, ProfilerStep#4, on one time scale."
    )


def graphs() -> Callable[[], SmallFigure]:
    """Entry: One `cudaGraphLaunch`, several GPU ops."""
    name = "64_bf16_reduce_overhead"
    t, ln = T[name], LN[name]
    c = one(in_step(t, 3, name="cudaGraphLaunch"))
    ops = ln.gpu_ops_of_call(c)
    caption = f"Recording {name} (torch.compile mode reduce-overhead), ProfilerStep#3."
    return drawn("graphs", caption, t, Callout(f"cudaGraphLaunch: {len(ops)} GPU ops", event=c),
                 window=win(t, [c, *ops, one(in_step(t, 3, name="aten::_foreach_copy_"))], pad_us=4))  # fmt: skip


def schedule() -> Callable[[], SmallFigure]:
    """Entry: The steps start at #2."""
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
    i = int(abr[0])
    s0 = t.steps[0]
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
    fsa = t.where(name="cudaFuncSetAttribute")
    host = max(fsa, key=lambda i: t.dur_ns[i])
    fig = timeline(t, window=win(t, [host], pad_us=40), width_in=WIDTH_IN,
                   callouts=[Callout(f"cudaFuncSetAttribute: {us(t.dur_ns[host] / 1e3)}", event=int(host), at="mid")])  # fmt: skip
    extra = shade(fig, t, [i for i in [*rtml, *lfl] if win(t, [host], 40)[0] <= t.ts_ns[i] < win(t, [host], 40)[1]],
                  "module loading (profiler rows)")  # fmt: skip
    return lambda: picture(
        "lazy", fig, f"Recording {name}, inside aten::mm of ProfilerStep#0.", extra
    )


def check_entries(page: str = "cheatsheet.md") -> None:
    """Every entry (a level-3 heading) of ``page`` has exactly one picture, with alt text."""
    entries = re.findall(r"(?m)^### ", (HERE / page).read_text(encoding="utf-8"))
    claim(
        len(entries) == len(ALTS),
        f"every entry has exactly one picture ({len(entries)}, {len(ALTS)})",
    )
    claim(all(len(a) > 40 for a in ALTS.values()), "every picture has alt text")
