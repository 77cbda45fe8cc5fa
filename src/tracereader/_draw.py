"""Timeline pictures of a trace window (matplotlib).

:func:`timeline` draws one window of one trace: CPU threads on top (nested
ops stacked by depth), GPU streams below, an arrow from each launch call to
the GPU op it launched, GPU idle gaps shaded with their length, and callouts
the author places on named events. :func:`compare_timelines` stacks several
traces on one time scale (eager over compiled).

Drawing never analyses: the launch links come from :func:`tracereader._link.link`
and the idle gaps from :func:`tracereader._gaps.gaps`; this module only
selects what to draw (see :mod:`tracereader._draw_layout`). Figures are plain
:class:`matplotlib.figure.Figure` objects, not registered with pyplot, so
nothing is shown and nothing leaks; pass ``fig=plt.figure()`` to draw into a
pyplot figure (sphinx-gallery's scraper collects those).

Every figure carries alt text (``fig.tracereader_alt``, or :func:`alt_text`)
and a dict of what was drawn (``fig.tracereader_info``) for tests.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._draw_layout import (
    AXIS_PT,
    CLASSES,
    LABEL_PT,
    PX_PER_IN,
    TITLE_PT,
    Callout,
    PanelSpec,
    scale_for,
    select,
)
from ._events import GPU_OP_KINDS, Region, Trace, kind_mask
from ._link import link
from ._measure import gpu_busy_us

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure

_Panel = tuple[Trace, int, int, str, str | None]  # trace, start_ns, end_ns, what, title

__all__ = ["alt_text", "compare_timelines", "resolve_window", "timeline"]


def resolve_window(
    trace: Trace,
    window: tuple[float, float] | None = None,
    *,
    step: int | str | None = None,
    region: str | tuple[str, int] | None = None,
    around: int | None = None,
    pad_us: float = 20.0,
) -> tuple[int, int, str]:
    """Turn one way of naming a window into ``(start_ns, end_ns, description)``.

    At most one of ``window`` (absolute ``(start_ns, end_ns)``, as in
    :attr:`Trace.ts_ns`), ``step`` (number or ``"ProfilerStep#N"``),
    ``region`` (a ``record_function`` name, or ``(name, index)`` for a later
    occurrence) or ``around`` (an event row, padded by ``pad_us`` each side)
    may be given; with none, the whole trace. A step or region is widened to
    the end of the GPU work launched inside it, so kernels that spill past
    the step's CPU end stay in the picture.
    """
    given = [x is not None for x in (window, step, region, around)]
    if sum(given) > 1:
        raise ValueError("give at most one of window, step, region, around")
    if window is not None:
        start, end = int(window[0]), int(window[1])
        what = f"{_us(trace.rel_us(start))} to {_us(trace.rel_us(end))} into the trace"
    elif step is not None:
        start, end, what = _with_spill(trace, trace.step(step))
    elif region is not None:
        start, end, what = _with_spill(trace, _region(trace, region))
    elif around is not None:
        pad = int(round(pad_us * 1e3))
        start = int(trace.ts_ns[around]) - pad
        end = int(trace.end_ns[around]) + pad
        what = f"around {trace.name(around)}"
    else:
        drawn = select(trace, -(2**62), 2**62, python=True, gpu_annotations=True)
        if not len(drawn):
            raise ValueError("this trace has no events to draw")
        start = int(trace.ts_ns[drawn].min())
        end = int(trace.end_ns[drawn].max())
        what = "whole trace"
    if end <= start:
        raise ValueError(f"empty window: end {end} <= start {start} ns")
    if window is None and around is None:
        # a little air each side, so the first and last bars do not touch the frame
        margin = max((end - start) // 50, 1)
        start, end = start - margin, end + margin
    return start, end, what


def _region(trace: Trace, region: str | tuple[str, int]) -> Region:
    """The ``record_function`` range named ``region``, or ``(name, index)``."""
    name, nth = (region, 0) if isinstance(region, str) else region
    found = trace.regions(name)
    if not found:
        raise KeyError(f"no record_function region {name!r} in this trace")
    if not -len(found) <= nth < len(found):
        raise KeyError(f"region {name!r} occurs {len(found)} times; no index {nth}")
    return found[nth]


def _with_spill(trace: Trace, reg: Region) -> tuple[int, int, str]:
    """A step or region's span, widened to the end of the GPU work launched inside it."""
    return reg.start_ns, max(reg.end_ns, _gpu_spill_end(trace, reg.start_ns, reg.end_ns)), reg.name


def _gpu_spill_end(trace: Trace, start_ns: int, end_ns: int) -> int:
    launch = _links(trace)
    gpu = np.flatnonzero(kind_mask(trace, GPU_OP_KINDS) & (launch >= 0))
    if not len(gpu):
        return end_ns
    lts = trace.ts_ns[launch[gpu]]
    inside = gpu[(lts >= start_ns) & (lts < end_ns)]
    return int(trace.end_ns[inside].max()) if len(inside) else end_ns


def _links(trace: Trace) -> npt.NDArray[np.int64]:
    """GPU op row -> launching call row (-1 if none), from the linker."""
    return np.asarray(link(trace).launch, dtype=np.int64)


def timeline(
    trace: Trace,
    window: tuple[float, float] | None = None,
    *,
    step: int | str | None = None,
    region: str | tuple[str, int] | None = None,
    around: int | None = None,
    pad_us: float = 20.0,
    python: bool = False,
    gpu_annotations: bool = False,
    arrows: bool | str = True,
    gaps: bool = True,
    min_gap_us: float | None = None,
    callouts: Sequence[Callout] = (),
    title: str | None = None,
    width_in: float = 12.0,
    fig: Figure | None = None,
) -> Figure:
    """Draw one window of a trace.

    Parameters
    ----------
    trace
        A loaded :class:`~tracereader.Trace`.
    window, step, region, around, pad_us
        Which span to draw; see :func:`resolve_window`. Default: whole trace.
    python
        Also draw ``python_function`` frames (traces recorded with
        ``with_stack=True``) on the CPU rows.
    gpu_annotations
        Add a strip above each GPU stream with its ``gpu_user_annotation``
        spans (the GPU-side extent of each ``record_function``).
    arrows
        Draw an arrow from each launch call to the GPU op it launched, where
        both ends lie in the window. When they would be denser than one per
        four pixels they are left out (the alt text says so); ``"all"``
        draws them anyway.
    gaps, min_gap_us
        Shade GPU idle gaps of at least ``min_gap_us`` (default: the larger of
        1 µs and three pixels) and write their length.
    callouts
        :class:`Callout` notes placed on named events.
    title
        Title above the picture; default: trace file name and window.
    width_in
        Figure width in inches; the height follows from the number of rows.
        Up to 7 inches text is 8 to 10 points high; a wider figure, up to 12
        inches, is the same picture magnified (text, rows and lines scale with
        the width, the time axis gets finer), so it stays legible when a page
        shrinks it to a column. Beyond 12 inches the extra width is room for
        detail (longer labels).
    fig
        Draw into this (empty) figure instead of a new unmanaged one.

    Returns
    -------
    matplotlib.figure.Figure
        With ``fig.tracereader_alt`` (alt text) and ``fig.tracereader_info``.
    """
    start, end, what = resolve_window(
        trace, window, step=step, region=region, around=around, pad_us=pad_us
    )
    spec = PanelSpec(python, gpu_annotations, arrows, gaps, min_gap_us, tuple(callouts))
    return _figure([(trace, start, end, what, title)], spec, width_in, fig, None)


def compare_timelines(
    traces: Sequence[Trace],
    windows: Sequence[Any],
    labels: Sequence[str],
    *,
    python: bool = False,
    arrows: bool | str = True,
    gaps: bool = True,
    min_gap_us: float | None = None,
    title: str | None = None,
    width_in: float = 12.0,
    fig: Figure | None = None,
) -> Figure:
    """Stack several traces on one time scale, one panel each, top to bottom.

    Parameters
    ----------
    traces, labels
        The traces and the panel titles (``["eager", "compiled"]``).
    windows
        One per trace: ``(start_ns, end_ns)``, a step number, a region name,
        or ``None`` for the whole trace. Each panel's time axis starts at its
        own window start and all panels share the longest window's scale, so
        equal lengths on the page are equal times.
    """
    if not (len(traces) == len(windows) == len(labels)) or not traces:
        raise ValueError("traces, windows and labels must be non-empty and of equal length")
    panels: list[_Panel] = []
    for tr, win, label in zip(traces, windows, labels, strict=True):
        if isinstance(win, (int, np.integer)) and not isinstance(win, bool):
            start, end, what = resolve_window(tr, step=int(win))
        elif isinstance(win, str):
            start, end, what = resolve_window(tr, region=win)
        else:
            start, end, what = resolve_window(tr, win)
        panels.append((tr, start, end, what, f"{label}: {what}"))
    spec = PanelSpec(python, False, arrows, gaps, min_gap_us, ())
    return _figure(panels, spec, width_in, fig, title)


def alt_text(fig: Any) -> str:
    """The alt text of a figure drawn by :func:`timeline` or :func:`compare_timelines`."""
    text = getattr(fig, "tracereader_alt", None)
    if text is None:
        raise ValueError("this figure was not drawn by tracereader")
    return str(text)


# ---------------------------------------------------------------------- internals


ROW_IN = 0.26  # height of one row on the page
LABEL_MARGIN_IN = 1.9


def _figure(
    panels: list[_Panel], spec: PanelSpec, width_in: float, fig: Figure | None, title: str | None
) -> Figure:
    from matplotlib.figure import Figure

    from ._draw_paint import paint_panel, prepare_panel

    longest_ns = max(end - start for _, start, end, _, _ in panels)
    unit, scale = ("ms", 1e6) if longest_ns >= 5e6 else ("µs", 1e3)
    k = scale_for(width_in)
    axes_in = max(width_in - LABEL_MARGIN_IN * k, 2.0)
    px_ns = longest_ns / (axes_in * PX_PER_IN)
    prepared = [
        prepare_panel(tr, start, end, spec, px_ns, _links(tr), k) for tr, start, end, _, _ in panels
    ]
    heights = [max(p.height_rows, 1.0) for p in prepared]
    height_in = (sum(heights) * ROW_IN + 0.9 * len(panels) + 0.9) * k
    if fig is None:
        fig = Figure(figsize=(width_in, height_in), layout="constrained")
    else:
        fig.set_size_inches(width_in, height_in)
        fig.set_layout_engine("constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False, height_ratios=heights)[:, 0]
    infos: list[dict[str, Any]] = []
    used: set[str] = set()
    for ax, prep, (tr, start, end, what, ptitle) in zip(axes, prepared, panels, strict=True):
        info = paint_panel(ax, prep, scale_ns=scale)
        used |= info.pop("_classes")
        ax.set_xlim(0, longest_ns / scale)
        head = ptitle or title or f"{_source_name(tr)}: {what}"
        if ptitle is not None or len(panels) == 1:
            ax.set_title(head, loc="left", fontsize=TITLE_PT * k)
        info.update(
            title=head, window=_window_info(tr, start, end, what), busy=_busy(tr, start, end)
        )
        infos.append(info)
    axes[-1].set_xlabel(f"time from window start ({unit})", fontsize=AXIS_PT * k)
    if title and len(panels) > 1:
        fig.suptitle(title, x=0.01, ha="left", fontsize=(TITLE_PT + 1) * k)
    arrows, gaps = any(i["arrows"] for i in infos), any(i["gaps"] for i in infos)
    _legend(fig, used, arrows, gaps, LABEL_PT * k, width_in)
    # What was drawn, for tests and captions, and the alt text: attributes of our own.
    fig.tracereader_info = infos[0] if len(infos) == 1 else {"panels": infos}  # type: ignore[attr-defined]
    fig.tracereader_alt = " ".join(_alt(i) for i in infos)  # type: ignore[attr-defined]
    return fig


def _busy(trace: Trace, start: int, end: int) -> list[tuple[int, float]]:
    """Each GPU device's busy time in the window: ``(device, µs)``, overlaps counted once.

    The alt text says it of the whole window, the idle time at its edges included.
    """
    devices = sorted({ln.device for ln in trace.gpu_lanes()})
    return [(d, gpu_busy_us(trace, device=d, window=(start, end))) for d in devices]


def _source_name(trace: Trace) -> str:
    """File name, or its folder's name for recordings called ``trace.json.gz``."""
    path = trace.source if trace.source and not trace.source.startswith("<") else "trace"
    base = os.path.basename(path)
    if base.startswith("trace.") and os.path.basename(os.path.dirname(path)):
        return os.path.basename(os.path.dirname(path))
    return base


def _window_info(trace: Trace, start: int, end: int, what: str) -> dict[str, Any]:
    return {
        "start_ns": start,
        "end_ns": end,
        "start_us": float(trace.rel_us(start)),
        "length_us": (end - start) / 1e3,
        "what": what,
    }


def _legend(
    fig: Figure, used: set[str], arrows: bool, gaps: bool, size_pt: float, width_in: float
) -> None:
    """The colour key under the picture, in as many columns as fit its width."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Artist] = [
        Patch(color=color, label=label) for key, label, color in CLASSES if key in used
    ]
    if arrows:
        handles.append(Line2D([], [], color="#444444", lw=1, label="launch → GPU op"))
    if gaps:
        handles.append(Patch(facecolor="#f4a6a6", alpha=0.5, hatch="//", label="GPU idle"))
    if handles:
        labels = [str(h.get_label()) for h in handles]
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=_legend_columns(labels, size_pt, width_in - 0.2),
            fontsize=size_pt,
            frameon=False,
        )


def _legend_columns(labels: list[str], size_pt: float, room_in: float, most: int = 5) -> int:
    """The most columns (up to ``most``) whose legend rows fit in ``room_in`` inches.

    matplotlib fills a legend column by column, the first ``len % ncols`` columns one
    entry longer; each column is as wide as its widest entry (a 2 em handle, 0.8 em to
    the text, the text), with 2 em between columns and 0.4 em of padding each side
    (matplotlib's defaults).
    """
    from ._draw_paint import text_width_in

    em = size_pt / 72
    widths = [2.8 * em + text_width_in(label, size_pt) for label in labels]
    for ncols in range(min(most, len(labels)), 1, -1):
        short, long_cols = divmod(len(widths), ncols)
        sizes = [short + 1] * long_cols + [short] * (ncols - long_cols)
        ends = np.cumsum(sizes)
        cols = [widths[end - n : end] for n, end in zip(sizes, ends, strict=True)]
        if sum(max(c) for c in cols if c) + em * (2 * (ncols - 1) + 0.8) <= room_in:
            return ncols
    return 1


def _alt(info: dict[str, Any]) -> str:
    win = info["window"]
    counts = info["counts"]
    drawn = ", ".join(_count(n, label) for label, n in counts.items() if n) or "no events"
    lanes = "; ".join(info["lanes"]) or "none"
    where = f"{_us(win['start_us'])} into the trace" if win["start_us"] > 0 else "at its start"
    parts = [
        f"Timeline of {info['title']}: a window starting {where} and lasting "
        f"{_us(win['length_us'])}.",
        f"Lanes, top to bottom: {lanes}.",
        f"Drawn: {drawn} ({info['events_drawn']} events).",
    ]
    if info["arrows"] == info["arrows_linked"]:
        parts.append(
            f"{_count(info['arrows'], 'arrows')} link launch calls to the GPU ops they launched."
        )
    else:
        parts.append(
            f"{info['arrows_linked']} launch calls and their GPU ops are both in the window; "
            f"{info['arrows']} arrows drawn (the rest would be too dense to read at this zoom)."
        )
    gaps = info["gaps"]
    if gaps:
        total = sum(g["gap_us"] for g in gaps)
        big = max(g["gap_us"] for g in gaps)
        parts.append(
            f"{_count(len(gaps), 'GPU idle gaps')} between GPU ops shaded, {_us(total)} in "
            f"total (longest {_us(big)})."
        )
    else:
        parts.append("No GPU idle gap between GPU ops shaded.")
    # The shading marks the gaps between GPU ops; the busy share also counts the idle time
    # before the window's first GPU op and after its last, which a step can begin with.
    busy = info.get("busy") or []
    for device, busy_us in busy:
        share = 100 * busy_us / win["length_us"] if win["length_us"] > 0 else 0.0
        who = "The GPU" if len(busy) == 1 else f"GPU {device}"
        parts.append(f"{who} ran work for {_us(busy_us)} of the window ({_pct(share)}).")
    for c in info["callouts"]:
        parts.append(f"Callout on {c['name']}: {c['text']}.")
    return " ".join(parts)


def _pct(value: float) -> str:
    """``37 %``, ``4.2 %``, ``0.3 %``: a whole number from 10 %, one decimal below."""
    return f"{value:.0f} %" if value >= 10 else f"{value:.1f} %"


def _count(n: int, plural: str) -> str:
    """``1 kernel``, ``2 kernels``, ``1 GPU idle gap``: the last word carries the plural."""
    return f"{n} {plural}" if n != 1 else f"1 {plural.removesuffix('s')}"


def _us(value_us: float) -> str:
    """``12.3 µs`` / ``228 µs`` / ``1.23 ms``: three significant figures."""
    v = float(value_us)
    if abs(v) >= 1000:
        return f"{v / 1e3:,.3g} ms" if abs(v) < 1e6 else f"{v / 1e6:,.3g} s"
    return f"{v:.3g} µs" if abs(v) >= 1 else f"{v:.2g} µs"
