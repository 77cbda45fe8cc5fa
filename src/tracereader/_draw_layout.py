"""What a timeline picture shows, decided without matplotlib.

:mod:`tracereader._draw` paints; this module only *selects*: which events
overlap the window, which row each goes on (CPU threads with nested ops
stacked by depth, then one row per GPU stream), which colour class each bar
gets, how sub-pixel bars coalesce, and what text fits inside a bar.
Nothing here measures anything: launch links and idle gaps come from
:mod:`tracereader._link` and :mod:`tracereader._gaps`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._events import (
    GPU_OP_KINDS,
    LAUNCH_KINDS,
    STEP_KINDS,
    Kind,
    Lane,
    Trace,
    kind_mask,
    name_mask,
)
from ._link import LAUNCH_APIS, SYNC_APIS, link
from ._names import cut, shorten_kernel_name

__all__ = [
    "CLASSES",
    "Callout",
    "PanelSpec",
    "Row",
    "bar_label",
    "char_in",
    "classify",
    "layout_rows",
    "merge_bars",
    "place_callout",
    "scale_for",
    "select",
    "stack_levels",
]

#: Bar classes in legend order: (key, legend label, colour).
CLASSES: tuple[tuple[str, str, str], ...] = (
    ("annotation", "step / user annotation", "#c9c3e6"),
    ("op", "aten / CPU op", "#6baed6"),
    ("python", "Python frame", "#e0d3a8"),
    ("launch", "launch call (cudaLaunchKernel…)", "#fd8d3c"),
    ("sync", "synchronize call", "#d62728"),
    ("runtime", "other runtime call", "#a3a3a3"),
    ("kernel", "kernel", "#31a354"),
    ("copy", "memcpy", "#8c6bb1"),
    ("set", "memset", "#a6761d"),
    ("gpu_annotation", "GPU annotation", "#c7e9c0"),
)
CLASS_INDEX = {key: i for i, (key, _, _) in enumerate(CLASSES)}

#: Text sizes in points, for a figure up to :data:`REF_WIDTH_IN` wide. A wider figure, up
#: to :data:`MAX_SCALE_WIDTH_IN` (the default width), scales them, with its rows and lines,
#: by ``width_in / REF_WIDTH_IN`` (:func:`scale_for`): it is the same picture magnified,
#: with a finer time axis, so it reads the same when a page shrinks it to the width of a
#: text column. Wider still, the sizes stay and the extra width is room for detail.
REF_WIDTH_IN = 7.0
MAX_SCALE_WIDTH_IN = 12.0
FONT_PT = 8.0  # bar and gap labels: the smallest text in a timeline
CALLOUT_PT = 8.5
LABEL_PT = 8.5  # lane names, tick labels, legend
AXIS_PT = 9.0  # the time axis' label
TITLE_PT = 10.0
CHAR_EM = 0.56  # average glyph width of the default font (DejaVu Sans), in ems
PX_PER_IN = 144  # merge resolution: finer than any page shows the picture


def scale_for(width_in: float) -> float:
    """How much a figure ``width_in`` wide magnifies text, rows and lines (1 to 12/7)."""
    return min(max(float(width_in), REF_WIDTH_IN), MAX_SCALE_WIDTH_IN) / REF_WIDTH_IN


def char_in(size_pt: float) -> float:
    """Average glyph width, in inches, of text ``size_pt`` points high."""
    return CHAR_EM * size_pt / 72


_CPU_DRAWN = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.DRIVER)

_I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Callout:
    """A note the author pins on one event of the picture.

    Parameters
    ----------
    text
        What to say, e.g. ``"228 µs before aten::matmul starts"``.
    event
        Row index of the event in the trace, or
    name
        its exact name (else the events whose name contains it), taking the
        ``occurrence``-th match inside the window, in time order. Given with
        ``event``, it is a check instead: the event's name must be or contain it.
    step
        Only the events of this profiler step (number or ``"ProfilerStep#N"``):
        CPU events that start inside it, GPU ops launched from inside it. A step's
        window also draws the GPU work earlier steps left running, which a bare
        ``name`` would match first. Given with ``event``, it is a check.
    count
        How many events ``name`` must match (inside the window and ``step``);
        another number raises, so a picture whose window or recording holds an
        unexpected match fails instead of pointing at the wrong one.
    at
        Where the arrow points: ``"start"``, ``"mid"`` or ``"end"`` of the bar.
    """

    text: str
    event: int | None = None
    name: str | None = None
    occurrence: int = 0
    at: str = "start"
    step: int | str | None = None
    count: int | None = None


@dataclass(frozen=True)
class PanelSpec:
    """What one panel draws besides the events: see :func:`tracereader.timeline`."""

    python: bool
    gpu_annotations: bool
    arrows: bool | str
    gaps: bool
    min_gap_us: float | None
    callouts: tuple[Callout, ...]


@dataclass(frozen=True)
class Row:
    """One horizontal strip of the picture.

    ``depth`` is the nesting depth on a CPU thread (0 = outermost); GPU rows
    use ``depth = 0`` and ``annotations`` tells the GPU-annotation strip apart
    from the stream's own ops.
    """

    lane: Lane
    depth: int
    annotations: bool = False

    @property
    def is_gpu(self) -> bool:
        return self.lane.is_gpu

    @property
    def lane_label(self) -> str:
        label = self.lane.label
        if self.lane.is_gpu:
            return label + (" annotations" if self.annotations else "")
        return label if label.lower().startswith("cpu") else f"CPU {label}"


def select(
    trace: Trace, start_ns: int, end_ns: int, *, python: bool, gpu_annotations: bool
) -> _I64:
    """Rows of the events to draw: those overlapping ``[start_ns, end_ns)``.

    CPU ops, annotations and runtime/driver calls always; Python frames only
    with ``python``; kernels, copies and sets; GPU annotations only with
    ``gpu_annotations``. Profiler overhead, sync records and the ``Trace``
    span are never drawn.
    """
    kinds = list(_CPU_DRAWN) + list(GPU_OP_KINDS)
    if python:
        kinds.append(Kind.PYTHON)
    if gpu_annotations:
        kinds.append(Kind.GPU_ANNOTATION)
    want = kind_mask(trace, kinds)
    ts, end = trace.ts_ns, trace.end_ns
    # zero-length events count when they sit inside the window
    overlap = (ts < end_ns) & ((end > start_ns) | ((trace.dur_ns == 0) & (ts >= start_ns)))
    return np.flatnonzero(want & overlap)


def layout_rows(trace: Trace, idx: _I64) -> tuple[list[Row], _I64]:
    """Assign each selected event to a row.

    CPU lanes come first (the thread running ``ProfilerStep`` spans, then
    the others by their first event in the window), each as many rows deep
    as its deepest nesting in the window; GPU lanes follow, sorted by device
    and stream. Depth is found with a per-thread interval stack over events in
    start order (the trace is sorted by start, longer first on ties, so a
    parent always comes before its children).

    Returns
    -------
    rows : list of Row
    row_of : int array, one entry per element of ``idx``
    """
    depth = np.zeros(len(idx), dtype=np.int64)
    lanes = trace.lane[idx]
    is_gpu_lane = np.array([ln.is_gpu for ln in trace.lanes], dtype=bool)
    cpu = ~is_gpu_lane[lanes] if len(idx) else np.zeros(0, dtype=bool)
    stacks: dict[int, list[int]] = {}
    ts, end = trace.ts_ns[idx], trace.end_ns[idx]
    for j in np.flatnonzero(cpu).tolist():
        stack = stacks.setdefault(int(lanes[j]), [])
        t = ts[j]
        while stack and stack[-1] <= t:
            stack.pop()
        depth[j] = len(stack)
        stack.append(max(end[j], t + 1))
    ann = trace.kind[idx] == int(Kind.GPU_ANNOTATION)

    keys: dict[tuple[int, int, bool], int] = {}
    # The thread that runs the profiler steps first (then by first event in
    # the window); GPU streams after, by device and stream.
    steps = np.array(
        [trace.names[k].startswith("ProfilerStep#") for k in trace.name_id[idx]], dtype=bool
    ) & np.isin(trace.kind[idx], [int(k) for k in STEP_KINDS])
    step_lanes = {int(x) for x in lanes[steps]}
    first_ts = {int(li): int(ts[np.argmax(lanes == li)]) for li in np.unique(lanes)}
    used_lanes = sorted(
        first_ts,
        key=lambda i: (
            trace.lanes[i].is_gpu,
            _gpu_order(trace.lanes[i]),
            i not in step_lanes,
            first_ts[i],
        ),
    )
    rows: list[Row] = []
    for li in used_lanes:
        lane = trace.lanes[li]
        mask = lanes == li
        if lane.is_gpu:
            variants = [True] if ann[mask].any() else []
            variants += [False] if (~ann[mask]).any() else []
            for a in variants:
                keys[(li, 0, a)] = len(rows)
                rows.append(Row(lane, 0, a))
        else:
            for d in range(int(depth[mask].max()) + 1):
                keys[(li, d, False)] = len(rows)
                rows.append(Row(lane, d))
    row_of = np.array(
        [keys[(int(li), int(d), bool(a))] for li, d, a in zip(lanes, depth, ann, strict=True)],
        dtype=np.int64,
    )
    return rows, row_of


def _gpu_order(lane: Lane) -> tuple[int, int]:
    if not lane.is_gpu:
        return (0, 0)
    try:
        return (lane.device, lane.stream)
    except (TypeError, ValueError):
        return (1 << 30, 1 << 30)


def classify(trace: Trace, idx: _I64, launched: npt.NDArray[np.bool_]) -> _I64:
    """Colour class (index into :data:`CLASSES`) of each selected event.

    ``launched`` is a boolean mask over *all* events: runtime/driver calls the
    linker found launching at least one GPU op. A call is a *sync* when its
    name is one of the linker's :data:`~tracereader._link.SYNC_APIS`, a
    *launch* when it launched something or is named like one of
    :data:`~tracereader._link.LAUNCH_APIS` (kernel and graph launches, memcpy,
    memset), else *other runtime*.
    """
    kinds = trace.kind[idx]
    out = np.full(len(idx), CLASS_INDEX["runtime"], dtype=np.int64)
    simple = {
        Kind.USER_ANNOTATION: "annotation",
        Kind.CPU_OP: "op",
        Kind.PYTHON: "python",
        Kind.KERNEL: "kernel",
        Kind.MEMCPY: "copy",
        Kind.MEMSET: "set",
        Kind.GPU_ANNOTATION: "gpu_annotation",
    }
    for kind, key in simple.items():
        out[kinds == int(kind)] = CLASS_INDEX[key]
    calls = np.flatnonzero(kind_mask(trace, LAUNCH_KINDS)[idx])
    if len(calls):
        rows = idx[calls]
        launch = name_mask(trace, LAUNCH_APIS)[rows] | launched[rows]
        out[calls[launch]] = CLASS_INDEX["launch"]
        out[calls[name_mask(trace, SYNC_APIS)[rows]]] = CLASS_INDEX["sync"]
    return out


def merge_bars(start_ns: _I64, end_ns: _I64, row: _I64, cls: _I64, px_ns: float) -> dict[str, _I64]:
    """Coalesce sub-pixel bars so a dense window draws in bounded time.

    Within one (row, class), consecutive bars narrower than one pixel join
    while the space between them is under one pixel too. Bars a pixel wide
    or more are never merged, so every visible event keeps its own edges.

    Returns
    -------
    dict of arrays ``start_ns``, ``end_ns``, ``row``, ``cls``, ``count``
    (events per bar) and ``first`` (position of the first merged event in
    the inputs).
    """
    n = len(start_ns)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return {k: empty for k in ("start_ns", "end_ns", "row", "cls", "count", "first")}
    order = np.lexsort((start_ns, cls, row))
    s, e, r, c = start_ns[order], end_ns[order], row[order], cls[order]
    group_start = np.ones(n, dtype=bool)
    group_start[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    # running end of everything so far in the same (row, class) group
    reach = e.copy()
    bounds = np.flatnonzero(group_start).tolist() + [n]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        reach[a:b] = np.maximum.accumulate(e[a:b])
    narrow = (e - s) < px_ns
    new = group_start.copy()
    new[1:] |= (s[1:] - reach[:-1] >= px_ns) | ~narrow[1:] | ~narrow[:-1]
    heads = np.flatnonzero(new)
    return {
        "start_ns": s[heads],
        "end_ns": np.maximum.reduceat(e, heads),
        "row": r[heads],
        "cls": c[heads],
        "count": np.diff(np.append(heads, n)),
        "first": order[heads],
    }


def bar_label(name: str, kind: int, width: int) -> str:
    """The text written inside a bar that holds ``width`` characters.

    Kernel names are shortened by :func:`~tracereader._names.shorten_kernel_name`,
    as in the tables; other events (CPU ops, runtime calls, copies) keep their
    name. Either is cut with ``…`` when longer than ``width``.
    """
    if kind == Kind.KERNEL:
        return shorten_kernel_name(name, width)
    return cut(name, width)


def place_callout(
    trace: Trace,
    idx: _I64,
    c: Callout,
    start_ns: int,
    end_ns: int,
    px_ns: float,
    box_in: float | None = None,
) -> dict[str, Any]:
    """Resolve a callout's event and the span its text box takes (level set later).

    The box, ``box_in`` inches wide (default: estimated from the text's length at
    :data:`CALLOUT_PT`), is centred over the pointed-at time and kept inside the window.
    """
    j = _callout_target(trace, idx, c)
    ev = int(idx[j])
    t0 = int(np.clip(trace.ts_ns[ev], start_ns, end_ns))
    t1 = int(np.clip(trace.end_ns[ev], start_ns, end_ns))
    t = {"start": t0, "mid": (t0 + t1) // 2, "end": t1}.get(c.at, t0)
    if box_in is None:
        box_in = (len(c.text) + 2) * char_in(CALLOUT_PT)
    width = box_in * px_ns * PX_PER_IN
    width = min(width, end_ns - start_ns)
    x0 = min(max(t - width / 2, start_ns), end_ns - width)
    return {"callout": c, "pos": j, "t_ns": t, "box": (x0, x0 + width), "level": 0}


def stack_levels(callouts: list[dict[str, Any]]) -> None:
    """Give each callout box the lowest level where it overlaps no other box.

    Level 0 is nearest the lanes; boxes are placed left to right.
    """
    ends: list[float] = []
    for c in sorted(callouts, key=lambda c: c["box"][0]):
        for level, right in enumerate(ends):
            if c["box"][0] > right:
                c["level"], ends[level] = level, c["box"][1]
                break
        else:
            c["level"] = len(ends)
            ends.append(c["box"][1])


def _callout_target(trace: Trace, idx: _I64, c: Callout) -> int:
    """Position in ``idx`` of the event a callout names; checks ``name``, ``step``, ``count``."""
    in_step = np.ones(len(idx), dtype=bool)
    where = ""
    if c.step is not None:
        k = trace.steps.index(trace.step(c.step))
        in_step = link(trace).step[idx] == k
        where = f" in {trace.steps[k].name}"
    if c.event is not None:
        hit = np.flatnonzero(idx == int(c.event))
        if not len(hit):
            raise ValueError(f"callout {c.text!r}: event {c.event} is not drawn in this window")
        j = int(hit[0])
        name = trace.name(int(c.event))
        if c.name is not None and c.name not in name:
            raise ValueError(f"callout {c.text!r}: event {c.event} is {name!r}, not {c.name!r}")
        if not in_step[j]:
            raise ValueError(f"callout {c.text!r}: event {c.event} ({name!r}) is not{where}")
        return j
    if c.name is None:
        raise ValueError(f"callout {c.text!r}: give event= or name=")
    names = [trace.names[i] for i in trace.name_id[idx]]
    hits = [j for j, n in enumerate(names) if n == c.name and in_step[j]]
    hits = hits or [j for j, n in enumerate(names) if c.name in n and in_step[j]]
    if c.count is not None and len(hits) != c.count:
        raise ValueError(
            f"callout {c.text!r}: {len(hits)} drawn events named {c.name!r}{where}, "
            f"expected {c.count}"
        )
    if not -len(hits) <= c.occurrence < len(hits):
        raise ValueError(
            f"callout {c.text!r}: {len(hits)} drawn events named {c.name!r}{where}, "
            f"no occurrence {c.occurrence}"
        )
    return hits[c.occurrence]
