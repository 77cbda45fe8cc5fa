"""Prepare and paint one timeline panel (used by :mod:`tracereader._draw`).

:func:`prepare_panel` gathers what one panel shows (events, rows, merged
bars, arrow ends, gaps, callout targets) from the trace, the linker's launch
array and :func:`tracereader._gaps.gaps`; :func:`paint_panel` turns that
into matplotlib artists: one :class:`~matplotlib.collections.PolyCollection`
for all bars, so a window with thousands of events draws in about a second.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._draw_layout import (
    CALLOUT_PT,
    CLASSES,
    FONT_PT,
    LABEL_PT,
    PX_PER_IN,
    PanelSpec,
    Row,
    bar_label,
    char_in,
    classify,
    layout_rows,
    merge_bars,
    place_callout,
    select,
    stack_levels,
)
from ._events import GPU_OP_KINDS, Trace, kind_mask
from ._gaps import gaps as find_gaps
from ._link import link

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["Prepared", "paint_panel", "prepare_panel"]

_F64 = npt.NDArray[np.float64]
_I64 = npt.NDArray[np.int64]
_ToX = Callable[[Any], _F64]  # ns (scalar or array) -> x in axis units

LANE_GAP = 0.5  # space between lanes, in row heights
BAR = 0.8  # bar height within its row
GAP_COLOR = "#f4a6a6"
ARROW_COLOR = "#444444"
MAX_ARROW_HEADS = 150  # beyond this, plain lines (heads would be a smudge)
ARROW_MIN_PX = 4  # automatic arrows stop when denser than one per this many pixels
CALLOUT_LEVEL = 1.6  # rows of headroom per stacked level of callout boxes
PLURAL = {
    "annotation": "step/user annotations",
    "op": "aten/CPU ops",
    "python": "Python frames",
    "launch": "launch calls",
    "sync": "synchronize calls",
    "runtime": "other runtime calls",
    "kernel": "kernels",
    "copy": "memcpys",
    "set": "memsets",
    "gpu_annotation": "GPU annotations",
}


@dataclass
class Prepared:
    """Everything one panel draws, in trace terms (ns, row indices)."""

    trace: Trace
    start_ns: int
    end_ns: int
    px_ns: float
    idx: _I64  # drawn event rows
    rows: list[Row]
    row_of: _I64  # per drawn event
    y_top: _F64  # per row
    height_rows: float
    cls: _I64  # per drawn event
    bars: dict[str, _I64]
    arrow_src: _I64  # positions in idx: launch calls
    arrow_dst: _I64  # positions in idx: GPU ops
    gaps: list[dict[str, Any]] = field(default_factory=list)
    callouts: list[dict[str, Any]] = field(default_factory=list)
    all_arrows: bool = False  # draw arrows even where they are too dense to read
    scale: float = 1.0  # text, lines: times their size at the reference width


def prepare_panel(
    trace: Trace,
    start_ns: int,
    end_ns: int,
    spec: PanelSpec,
    px_ns: float,
    launch: _I64,
    scale: float = 1.0,
) -> Prepared:
    """Select and lay out one panel; see :func:`tracereader._draw.timeline`.

    ``scale`` magnifies text and lines (:func:`tracereader._draw_layout.scale_for`).
    """
    idx = select(trace, start_ns, end_ns, python=spec.python, gpu_annotations=spec.gpu_annotations)
    rows, row_of = layout_rows(trace, idx)
    launched = np.zeros(len(trace), dtype=bool)
    launched[launch[launch >= 0]] = True
    cls = classify(trace, idx, launched)
    s = np.clip(trace.ts_ns[idx], start_ns, end_ns)
    e = np.clip(trace.end_ns[idx], start_ns, end_ns)
    bars = merge_bars(s, e, row_of, cls, px_ns)
    callouts = [
        place_callout(trace, idx, c, start_ns, end_ns, px_ns, _callout_box_in(c.text, scale))
        for c in spec.callouts
    ]
    stack_levels(callouts)
    levels = 1 + max((c["level"] for c in callouts), default=-1)
    y_top = np.zeros(len(rows))
    y = levels * CALLOUT_LEVEL  # headroom for the callout boxes
    for i, row in enumerate(rows):
        if i and row.lane != rows[i - 1].lane:
            y += LANE_GAP
        y_top[i] = y
        y += 1.0
    none = np.zeros(0, dtype=np.int64)
    prep = Prepared(
        trace=trace,
        start_ns=start_ns,
        end_ns=end_ns,
        px_ns=px_ns,
        idx=idx,
        rows=rows,
        row_of=row_of,
        y_top=y_top,
        height_rows=y,
        cls=cls,
        bars=bars,
        arrow_src=none,
        arrow_dst=none,
        callouts=callouts,
        scale=scale,
    )

    if spec.arrows and len(idx):
        pos = np.full(len(trace), -1, dtype=np.int64)
        pos[idx] = np.arange(len(idx))
        gpu = np.flatnonzero(kind_mask(trace, GPU_OP_KINDS)[idx])
        src_rows = launch[idx[gpu]]
        ok = src_rows >= 0
        ok[ok] = pos[src_rows[ok]] >= 0
        prep.arrow_src, prep.arrow_dst = pos[src_rows[ok]], gpu[ok]
        prep.all_arrows = spec.arrows == "all"

    if spec.gaps and any(r.is_gpu for r in rows):
        min_gap_us = spec.min_gap_us if spec.min_gap_us is not None else max(1.0, 3 * px_ns / 1e3)
        for g in find_gaps(trace, window=(start_ns, end_ns), min_gap_us=min_gap_us):
            g0, g1 = max(int(g.start_ns), start_ns), min(int(g.end_ns), end_ns)
            if g1 > g0:
                prep.gaps.append(
                    {
                        "start_ns": g0,
                        "end_ns": g1,
                        "gap_us": float(g.gap_us),
                        "device": int(g.device),
                        "cause": str(g.cause),
                    }
                )
    return prep


def paint_panel(ax: Axes, p: Prepared, *, scale_ns: float) -> dict[str, Any]:
    """Draw a prepared panel on ``ax``; return what was drawn (for alt text and tests)."""
    from matplotlib.collections import PolyCollection

    ns_per_in = p.px_ns * PX_PER_IN  # the same scale prepare used

    def x(t_ns: Any) -> _F64:
        return (np.asarray(t_ns, dtype=np.float64) - p.start_ns) / scale_ns

    b = p.bars
    width_ns = np.maximum(b["end_ns"] - b["start_ns"], p.px_ns)  # at least a pixel wide
    x0, x1 = x(b["start_ns"]), x(b["start_ns"] + width_ns)
    top = p.y_top[b["row"]] + (1 - BAR) / 2
    verts = np.stack(
        [np.c_[x0, top], np.c_[x1, top], np.c_[x1, top + BAR], np.c_[x0, top + BAR]], axis=1
    )
    colors = [CLASSES[int(c)][2] for c in b["cls"]]
    # An (N, 4, 2) array, not the sequence matplotlib's types ask for: its fast path.
    polys = PolyCollection(verts, facecolors=colors, edgecolors="none", zorder=2)  # type: ignore[arg-type]
    ax.add_collection(polys)

    # lane bands and names
    ticks, labels, lanes = [], [], []
    for i, row in enumerate(p.rows):
        if i == 0 or row.lane != p.rows[i - 1].lane or row.annotations != p.rows[i - 1].annotations:
            last = i
            while (
                last + 1 < len(p.rows)
                and p.rows[last + 1].lane == row.lane
                and (p.rows[last + 1].annotations == row.annotations)
            ):
                last += 1
            y0, y1 = p.y_top[i], p.y_top[last] + 1
            if row.is_gpu:
                ax.axhspan(y0, y1, color="#eef5ee", zorder=0, lw=0)
            else:
                ax.axhspan(y0, y1, color="#f3f6fa", zorder=0, lw=0)
            ticks.append((y0 + y1) / 2)
            labels.append(row.lane_label)
            lanes.append(row.lane_label)
    k = p.scale
    ax.set_yticks(ticks, labels, fontsize=LABEL_PT * k)
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelsize=LABEL_PT * k, length=3.5 * k, width=0.8 * k)
    for spine in ax.spines.values():
        spine.set_linewidth(0.8 * k)
    ax.set_ylim(max(p.height_rows, 1.0), 0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", color="#dddddd", lw=0.5 * k, zorder=0)

    n_labels = _labels(ax, p, x0, x1, top, ns_per_in)
    _gaps(ax, p, x)
    n_arrows = _arrows(ax, p, x)
    n_linked = int(len(p.arrow_src))
    callouts = _callouts(ax, p, x)

    kinds_drawn = (
        np.bincount(p.cls, minlength=len(CLASSES))
        if len(p.cls)
        else np.zeros(len(CLASSES), dtype=np.int64)
    )
    counts = {PLURAL[key]: int(kinds_drawn[i]) for i, (key, _, _) in enumerate(CLASSES)}
    return {
        "lanes": lanes,
        "rows": len(p.rows),
        "events_drawn": int(len(p.idx)),
        "bars": int(len(b["row"])),
        "labels": n_labels,
        "counts": counts,
        "arrows": n_arrows,
        "arrows_linked": n_linked,
        "gaps": p.gaps,
        "callouts": callouts,
        "_classes": {CLASSES[i][0] for i in np.flatnonzero(kinds_drawn)},
    }


def _labels(ax: Axes, p: Prepared, x0: _F64, x1: _F64, top: _F64, ns_per_in: float) -> int:
    """Write event names inside bars wide enough to hold them (truncated with …)."""
    b = p.bars
    size = FONT_PT * p.scale
    glyph = char_in(size)
    width_in = (b["end_ns"] - b["start_ns"]) / ns_per_in
    fits = np.flatnonzero((b["count"] == 1) & (width_in >= 6 * glyph))
    n = 0
    for j in fits.tolist():
        ev = int(p.idx[b["first"][j]])
        room_in = width_in[j] - 2 * glyph  # a glyph of air each side
        text = _fitted_label(p.trace.name(ev), int(p.trace.kind[ev]), room_in, size)
        if not text:
            continue
        dark = CLASSES[int(b["cls"][j])][0] in ("sync", "kernel", "copy", "op")
        ax.text(
            (x0[j] + x1[j]) / 2,
            top[j] + BAR / 2,
            text,
            ha="center",
            va="center",
            fontsize=size,
            color="white" if dark else "#222222",
            clip_on=True,
            zorder=3,
        )
        n += 1
    return n


def _callout_box_in(text: str, scale: float) -> float:
    """Width of a callout's box, in inches.

    Its text, the box's padding (0.3 em each side) and a little air.
    """
    size = CALLOUT_PT * scale
    return text_width_in(text, size) + (2 * 0.3 + 0.5) * size / 72


def _fitted_label(name: str, kind: int, room_in: float, size_pt: float) -> str:
    """The longest :func:`bar_label` of ``name`` that measures at most ``room_in`` wide.

    "" when not even three characters fit.
    """
    chars = int(room_in / char_in(size_pt))
    while chars >= 3:
        text = bar_label(name, kind, chars)
        wide = text_width_in(text, size_pt)
        if wide <= room_in:
            return text
        chars = min(chars - 1, int(chars * room_in / wide))
    return ""


def text_width_in(text: str, size_pt: float) -> float:
    """How wide ``text`` is, in inches, set at ``size_pt`` in matplotlib's default font."""
    from matplotlib import rcParams

    return _text_width_in(
        text, size_pt, repr(rcParams["font.family"]), repr(rcParams["font.sans-serif"])
    )


@functools.lru_cache(maxsize=4096)
def _text_width_in(text: str, size_pt: float, family: str, sans: str) -> float:
    """:func:`text_width_in`, measured once per text, size and default font."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    width, _, _ = text_to_path.get_text_width_height_descent(
        text, FontProperties(size=size_pt), ismath=False
    )
    return float(width) / 72


def _gpu_rows_of(p: Prepared, device: int) -> list[int]:
    rows = [i for i, r in enumerate(p.rows) if r.is_gpu and r.lane.device == device]
    return rows or [i for i, r in enumerate(p.rows) if r.is_gpu]


def _gaps(ax: Axes, p: Prepared, x: _ToX) -> None:
    from matplotlib.patches import Rectangle

    ns_per_in = p.px_ns * PX_PER_IN
    size = FONT_PT * p.scale
    for g in p.gaps:
        rows = _gpu_rows_of(p, g["device"])
        y0, y1 = p.y_top[rows[0]], p.y_top[rows[-1]] + 1
        gx0, gx1 = float(x(g["start_ns"])), float(x(g["end_ns"]))
        # add_artist, not add_patch: the limits are set, so the patch's data limits
        # (costly to work out for a hatched patch) would change nothing.
        ax.add_artist(
            Rectangle(
                (gx0, y0),
                gx1 - gx0,
                y1 - y0,
                facecolor=GAP_COLOR,
                alpha=0.5,
                hatch="//",
                edgecolor="#d46a6a",
                lw=0,
                zorder=1,
                gid="tracereader-gap",
            )
        )
        room_in = (g["end_ns"] - g["start_ns"]) / ns_per_in
        dur = _fmt_us(g["gap_us"])
        texts = [f"idle {dur} ({g['cause']})", f"idle {dur}", dur]
        room_in -= 2 * char_in(size)
        text = next((t for t in texts if text_width_in(t, size) <= room_in), "")
        if text:
            ax.text(
                (gx0 + gx1) / 2,
                (y0 + y1) / 2,
                text,
                ha="center",
                va="center",
                fontsize=size,
                color="#9b1c1c",
                zorder=3,
                clip_on=True,
            )


def _arrows(ax: Axes, p: Prepared, x: _ToX) -> int:
    """Launch -> GPU op arrows; returns how many were drawn.

    Up to :data:`MAX_ARROW_HEADS` get arrow heads; more become plain lines;
    beyond one per :data:`ARROW_MIN_PX` pixels of width they would only grey
    the picture out, so none are drawn unless ``arrows="all"``.
    """
    n = len(p.arrow_src)
    width_px = (p.end_ns - p.start_ns) / p.px_ns
    if not n or (n * ARROW_MIN_PX > width_px and not p.all_arrows):
        return 0
    s = np.clip(p.trace.ts_ns[p.idx[p.arrow_src]], p.start_ns, p.end_ns)
    d = np.clip(p.trace.ts_ns[p.idx[p.arrow_dst]], p.start_ns, p.end_ns)
    sy = p.y_top[p.row_of[p.arrow_src]] + (1 + BAR) / 2
    dy = p.y_top[p.row_of[p.arrow_dst]] + (1 - BAR) / 2
    sx, dx = x(s), x(d)
    if n <= MAX_ARROW_HEADS:
        for a, b_, c, e in zip(sx, sy, dx, dy, strict=True):
            ax.annotate(
                "",
                xy=(c, e),
                xytext=(a, b_),
                zorder=4,
                annotation_clip=False,
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": ARROW_COLOR,
                    "lw": 0.7 * p.scale,
                    "mutation_scale": 7 * p.scale,
                    "shrinkA": 0,
                    "shrinkB": 0,
                    "alpha": 0.8,
                },
            )
    else:
        from matplotlib.collections import LineCollection

        segs = np.stack([np.c_[sx, sy], np.c_[dx, dy]], axis=1)
        ax.add_collection(
            LineCollection(
                list(segs), colors=ARROW_COLOR, linewidths=0.5 * p.scale, alpha=0.35, zorder=4
            )
        )
    return n


def _callouts(ax: Axes, p: Prepared, x: _ToX) -> list[dict[str, Any]]:
    """Boxes in the headroom above the lanes, each with an arrow down to its event."""
    out = []
    levels = 1 + max((c["level"] for c in p.callouts), default=-1)
    for c in p.callouts:
        j, t, co = c["pos"], c["t_ns"], c["callout"]
        ev, row = int(p.idx[j]), int(p.row_of[j])
        box_y = (levels - 1 - c["level"] + 0.5) * CALLOUT_LEVEL
        ax.annotate(
            c["callout"].text,
            xy=(float(x(t)), p.y_top[row] + (1 - BAR) / 2),
            xytext=(float(x(sum(c["box"]) / 2)), box_y),
            textcoords="data",
            ha="center",
            va="center",
            fontsize=CALLOUT_PT * p.scale,
            zorder=5,
            annotation_clip=False,
            bbox={
                "boxstyle": "round,pad=0.3",
                "fc": "#fffbe6",
                "ec": "#999999",
                "lw": 0.6 * p.scale,
            },
            arrowprops={
                "arrowstyle": "->",
                "color": "#222222",
                "lw": 0.9 * p.scale,
                "shrinkA": 0,
                "shrinkB": 1,
            },
        )
        out.append(
            {
                "text": c["callout"].text,
                "event": ev,
                "name": p.trace.name(ev),
                "row": row,
                "lane": p.rows[row].lane_label,
                "t_us": (t - p.start_ns) / 1e3,
                "level": c["level"],
                "step": _step_of(p.trace, ev),
                "by": "event"
                if co.event is not None
                else "step"
                if co.step is not None
                else "name",
            }
        )
    return out


def _step_of(trace: Trace, ev: int) -> str | None:
    """The profiler step an event belongs to (a GPU op: the step that launched it), or None."""
    k = int(link(trace).step[ev])
    return trace.steps[k].name if k >= 0 else None


def _fmt_us(v: float) -> str:
    if v >= 1000:
        return f"{v / 1e3:.3g} ms"
    return f"{v:.3g} µs" if v >= 1 else f"{v:.2g} µs"
