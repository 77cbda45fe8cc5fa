"""The report's "Memory" and "Communication" sections (R-E4, R-E7).

Numbers come from :mod:`tracereader._memory` and
:mod:`tracereader._collectives`; this module only formats them. The memory
chart is drawn with matplotlib (imported only here, only when drawing) on a
plain :class:`~matplotlib.figure.Figure`, inlined as a PNG like the
report's timeline picture; without matplotlib a table of the series,
downsampled, stands in for it.
"""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

from ._collectives import collective_table, exposed_comm
from ._events import Trace
from ._memory import GIB, SNAPSHOT_NOTE, DeviceMemory, MemoryView, memory_view
from ._report_html import esc, ms_columns, picture, table

__all__ = ["comm_section", "memory_charts", "memory_section"]

#: Rows of the downsampled series shown without matplotlib.
SERIES_ROWS = 40
#: Collective rows shown.
TOP_COLLECTIVES = 20
ALGBW_NOTE = (
    "msg_bytes: the larger of the input and output buffers (In/Out msg nelems × dtype, or "
    "record_param_comms' Input Dims × Input type in older traces); empty where the trace "
    "does not say (columns the trace never fills are left out). algbw_gb_s: bytes / kernel time (1e9 B/s). A kernel's time includes "
    "waiting for the slowest peer, so a low bandwidth can mean a late rank, not a slow link."
)


def _chart(view: MemoryView, dev: DeviceMemory, trace: Trace) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 2.6))
    ax = fig.add_subplot()
    t_ms = (dev.ts_ns - view.t0_ns) / 1e6
    for k, s in enumerate(trace.steps):
        a, b = (s.start_ns - view.t0_ns) / 1e6, (s.end_ns - view.t0_ns) / 1e6
        ax.axvspan(a, b, color="#f0f0f0" if k % 2 else "#e2e8f0", lw=0)
        ax.text(a, 1.0, f" {s.name.split('#')[-1]}", transform=ax.get_xaxis_transform(),
                va="top", fontsize=7, color="#555")  # fmt: skip
    ax.step(t_ms, dev.reserved_bytes / GIB, where="post", color="#dd8452", lw=1.2,
            label="reserved")  # fmt: skip
    ax.step(t_ms, dev.allocated_bytes / GIB, where="post", color="#4c72b0", lw=1.2,
            label="allocated")  # fmt: skip
    ax.plot([t_ms[int(dev.allocated_bytes.argmax())]], [dev.peak["bytes"] / GIB], "v",
            color="#a40000", ms=6)  # fmt: skip
    ax.set_xlabel("ms from the trace's start (shaded: profiler steps, numbered)", fontsize=8)
    ax.set_ylabel("GiB", fontsize=8)
    ax.set_ylim(0, max(float(dev.reserved_bytes.max()), float(dev.allocated_bytes.max())) / GIB
                * 1.15 or 1.0)  # fmt: skip
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    alt = (f"Memory of {dev.device} over time: allocated peaks at {dev.peak['bytes'] / GIB:.2f} "
           f"GiB, reserved at {dev.peak_reserved['bytes'] / GIB:.2f} GiB")  # fmt: skip
    return picture(buf.getvalue(), alt)


def _size(nbytes: int) -> str:
    """Bytes in the largest binary unit that keeps a digit before the point."""
    for name, scale in (("GiB", GIB), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:,.2f} {name}"
    return f"{nbytes:,} B"


def _where(p: dict[str, Any]) -> str:
    parts = [x for x in (p["step"], p["region"] and f"in {p['region']}",
                         p["op"] and f"op {p['op']}") if x]  # fmt: skip
    return f" ({', '.join(parts)})" if parts else ""


def _line(view: MemoryView, d: DeviceMemory) -> str:
    p, r = d.peak, d.peak_reserved
    return (f"{d.device}: peak allocated {_size(p['bytes'])} at "
            f"{(p['ts_ns'] - view.t0_ns) / 1e6:,.1f} ms{_where(p)}; peak reserved "
            f"{_size(r['bytes'])} at {(r['ts_ns'] - view.t0_ns) / 1e6:,.1f} ms; "
            f"{_size(d.before_bytes)} was allocated before the trace began; "
            f"{d.events:,} events.")  # fmt: skip


def memory_charts(trace: Trace, draw: bool = True) -> list[str]:
    """The memory section's chart per GPU device, as :func:`memory_section` shows them.

    Each is an inlined PNG, a note when matplotlib is missing, or ``""``
    without ``draw``; no entry when the trace has no ``[memory]`` event.
    The report draws them in a helper process meanwhile (:mod:`tracereader._fork`).
    """
    view = memory_view(trace)
    if view is None or not draw:
        return [] if view is None else [""] * len(_gpus(view))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return ['<p class="note">(Install matplotlib for a memory chart.)</p>'] * len(_gpus(view))
    return [_chart(view, d, trace) for d in _gpus(view)]


def _gpus(view: MemoryView) -> list[DeviceMemory]:
    """The devices the section draws: the GPUs, else every device."""
    return [d for d in view.devices if d.device != "cpu"] or view.devices


def memory_section(trace: Trace, draw: bool = True, charts: list[str] | None = None) -> str:
    """The "Memory" section, or "" when the trace has no ``[memory]`` event.

    ``charts``: :func:`memory_charts`' result, drawn elsewhere; ``None``: drawn here.
    """
    view = memory_view(trace)
    if view is None:
        return ""
    gpus = _gpus(view)
    out = ['<h2 id="memory">Memory</h2>', "<ul>"]
    out += [f"<li>{esc(_line(view, d))}</li>" for d in view.devices]
    out.append("</ul>")
    charts = memory_charts(trace, draw) if charts is None else charts
    for d, shown in zip(gpus, charts, strict=True):
        if not shown.startswith("<img"):
            shown += table(view.series(d, SERIES_ROWS), sortable=False)
        out.append(shown)
    out.append(table(view.peaks()))
    if len(view.steps):
        out.append(table(view.steps))
    for d in gpus:
        if d.blocks:
            out.append(table(view.block_table(d)))
        out.append(f'<p class="note">{esc(d.blocks_note)}</p>')
    out.append(f'<p class="note">{esc(SNAPSHOT_NOTE)}</p>')
    return "".join(out)


def comm_section(trace: Trace) -> str:
    """The "Communication" section, or "" when the trace has no communication kernel."""
    exposed = exposed_comm(trace)
    if exposed is None:
        return ""
    cls = ' class="verdict-CPU-bound"' if exposed.flagged else ""
    coll = collective_table(trace)
    more = len(coll) - TOP_COLLECTIVES
    if more > 0:
        coll = replace(coll.head(TOP_COLLECTIVES), title=f"{coll.title} (top {TOP_COLLECTIVES})")
    keep = [k for k, c in enumerate(coll.columns) if any(r[k] not in (None, "") for r in coll.rows)]
    coll = replace(coll, columns=[coll.columns[k] for k in keep],
                   rows=[[r[k] for k in keep] for r in coll.rows])  # fmt: skip
    return (
        '<h2 id="comm">Communication</h2>'
        + f"<p{cls}>{esc(exposed.sentence())}</p>"
        + table(ms_columns(coll))
        + f'<p class="note">{esc(ALGBW_NOTE)}</p>'
    )
