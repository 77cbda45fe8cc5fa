"""Idle gaps on the GPU, and what the launching CPU thread was doing meanwhile.

An **idle gap** is an interval on a device between two GPU ops where nothing
ran (the union of the device's GPU-op intervals, as for GPU busy time in
:mod:`tracereader._measure`, has a hole). Each gap gets a cause from the CPU
thread that launched the op after it: see :class:`Gap` and :data:`CAUSES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ._events import CPU_OP_KINDS, LAUNCH_KINDS, Kind, Trace, cached, kind_mask, name_mask
from ._intervals import Window, gpu_intervals, union
from ._link import LAUNCH_APIS, SYNC_APIS, link

__all__ = ["CAUSES", "CAUSES_HELP", "Gap", "GapColumns", "gap_columns", "gaps", "prepare_causes"]

#: Causes of an idle gap, in tie-break order.
CAUSES = ("sync", "op without kernels", "python", "launch", "nothing recorded")

#: What each cause means, for ``tracereader gaps --help``.
CAUSES_HELP = """\
A gap's cause is what the CPU thread that launched the next GPU op was doing during it:
  sync                a synchronize (.item(), cudaStreamSynchronize...) drained the queue
  op without kernels  an op or record_function range that launched no GPU work
  python              Python code (recorded only with with_stack=True)
  launch              the launch call, or an op on its way to launching GPU work
  nothing recorded    code the profiler did not record: plain Python without
                      with_stack, C++ outside any op, or the thread waiting; add
                      record_function ranges or with_stack=True to see it"""


@dataclass
class Gap:
    """An idle interval on one device, and what the launching CPU thread did then.

    ``cause`` describes the thread that launched the *next* GPU op:

    * ``"sync"``: a synchronize call (``cudaStreamSynchronize`` from
      ``.item()``, ``cudaDeviceSynchronize``...) overlaps the gap. It wins
      outright: the sync drained the queue, and the rest of the gap is the
      CPU refilling it.
    * otherwise the category that covers the largest part of the gap, judging
      each instant by the innermost event on the thread:
      ``"op without kernels"`` (an op or range that launched no GPU work),
      ``"python"`` (a Python frame, with ``with_stack``), ``"launch"`` (the
      launch call itself, or an op on its way to launching GPU work),
      ``"nothing recorded"`` (no event, or a range with only unrecorded code).
      Ties go to the earlier category in :data:`CAUSES`.

    ``cause_event`` is the row of the event that contributed the largest part
    of the winning category (for ``"nothing recorded"``: the range it happened in,
    or -1 when the thread had no event at all); :attr:`breakdown_us` holds
    every category's share.
    """

    device: int
    start_ns: int
    end_ns: int
    cause: str
    cause_event: int
    next_op: int
    share_ns: tuple[int, ...] = field(default=(), repr=False)  # per CAUSES entry
    edge: str = ""  # "start" / "end": idle at the window's start / end, not between ops

    @property
    def gap_us(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def breakdown_us(self) -> dict[str, float]:
        """µs of the gap per cause category (categories with no time omitted)."""
        return {c: ns / 1e3 for c, ns in zip(CAUSES, self.share_ns, strict=False) if ns}

    def to_dict(self, trace: Trace | None = None) -> dict[str, Any]:
        """Plain dict; with ``trace``, also the start (µs into it) and event names."""
        keys = ("device", "start_ns", "end_ns", "gap_us", "cause", "cause_event", "next_op")
        out = {k: getattr(self, k) for k in keys}
        out["breakdown_us"] = self.breakdown_us
        if self.edge:
            out["edge"] = self.edge
        if trace is not None:
            out["start_us"] = float(trace.rel_us(self.start_ns))
            out["cause_name"] = trace.name(self.cause_event) if self.cause_event >= 0 else ""
            out["next_op_name"] = trace.name(self.next_op) if self.next_op >= 0 else ""
        return out


_NOTHING = len(CAUSES) - 1
_SYNC = CAUSES.index("sync")


def _event_causes(trace: Trace) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.bool_]]:
    """Cause category (index into :data:`CAUSES`) of every event, and a sync mask."""
    ln = link(trace)
    k = trace.kind
    rt = kind_mask(trace, LAUNCH_KINDS)
    sync = rt & name_mask(trace, SYNC_APIS)
    launched = np.zeros(len(trace), dtype=bool)
    launched[ln.launch_calls] = True
    launch = rt & (name_mask(trace, LAUNCH_APIS) | launched) & ~sync
    inside = ln.gpu_ops_inside > 0
    cat = np.full(len(trace), _NOTHING, dtype=np.int8)
    cat[k == Kind.PYTHON] = CAUSES.index("python")
    cat[(k == Kind.CPU_OP) & inside] = CAUSES.index("launch")
    ops = kind_mask(trace, CPU_OP_KINDS)
    cat[ops & ~inside] = CAUSES.index("op without kernels")
    cat[launch] = CAUSES.index("launch")
    cat[sync] = CAUSES.index("sync")
    # Other runtime calls (cudaGetDevice, cudaMalloc...) count as their caller.
    other = np.flatnonzero(rt & ~launch & ~sync)
    p = ln.parent[other]
    cat[other[p >= 0]] = cat[p[p >= 0]]
    return cat, sync


@dataclass
class _LaneEvents:
    """One CPU thread's events: ``rows`` in time order, their starts, their ends sorted.

    Kept with the trace (:func:`_lane_events`): each request for gaps cuts
    only the stretch of the thread it needs into segments from these.
    """

    rows: npt.NDArray[np.int64]
    ts_ns: npt.NDArray[np.int64]
    ends_sorted_ns: npt.NDArray[np.int64]
    sync_rows: npt.NDArray[np.int64]


def _lane_events(trace: Trace, lane: int) -> _LaneEvents:
    """:class:`_LaneEvents` of ``lane``, computed once per trace."""

    def make() -> _LaneEvents:
        _, sync = _cached_event_causes(trace)
        rows = np.flatnonzero(trace.lane == lane)
        return _LaneEvents(rows, trace.ts_ns[rows], np.sort(trace.end_ns[rows]), rows[sync[rows]])

    return cached(trace, f"gap_lane_events_{lane}", make)


@dataclass
class _LaneSegments:
    """A stretch of one CPU thread's time cut into segments, each with its innermost event.

    Segment ``k`` is ``[bounds[k], bounds[k + 1])``, at every start and end of
    the thread's events; ``seg_event`` is the innermost event covering it (-1:
    none) and ``seg_cat`` its category, ``before[c, k]`` the time of category
    ``c`` from ``bounds[0]`` to segment ``k``. ``bounds`` is a run of the
    thread's sorted boundaries (:func:`_lane_segments`), so times between
    two of them, and the segments, are those of the whole thread.
    """

    bounds: npt.NDArray[np.int64]
    seg_event: npt.NDArray[np.int64]
    seg_cat: npt.NDArray[np.int8]
    before: npt.NDArray[np.int64]
    sync_rows: npt.NDArray[np.int64]


def _lane_segments(trace: Trace, lane: int, lo_ns: int, hi_ns: int) -> _LaneSegments:
    """:class:`_LaneSegments` of ``lane`` for gaps inside ``[lo_ns, hi_ns]``.

    Its bounds are the thread's boundaries from the last one at or before
    ``lo_ns`` (from the first, if none) to the first one at or after
    ``hi_ns`` (to the last, if none): the segments such gaps fall in, and no
    more, so the cost follows the stretch asked for rather than the thread.
    """
    cat, _ = _cached_event_causes(trace)
    ev = _lane_events(trace, lane)
    bounds = _boundaries(ev, lo_ns, hi_ns)
    seg_event = _innermost_events(trace, ev.rows, ev.ts_ns, bounds)
    seg_cat = np.where(seg_event >= 0, cat[np.maximum(seg_event, 0)], _NOTHING)
    seg_len = np.append(np.diff(bounds), 0)
    before = np.zeros((_NOTHING, len(bounds) + 1), dtype=np.int64)
    for c in range(_NOTHING):
        np.cumsum(np.where(seg_cat == c, seg_len, 0), out=before[c, 1:])
    return _LaneSegments(bounds, seg_event, seg_cat.astype(np.int8), before, ev.sync_rows)


def prepare_causes(trace: Trace) -> None:
    """Work out what every :func:`gaps` call reads, and keep it with ``trace``.

    Each event's cause category and each CPU thread's events (the linker's
    parents on the way): a process forked afterwards finds them ready.
    """
    for lane in trace.lanes:
        if not lane.is_gpu:
            _lane_events(trace, lane.index)


def _cached_event_causes(trace: Trace) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.bool_]]:
    """:func:`_event_causes`, computed once per trace."""
    return cached(trace, "gap_event_causes", lambda: _event_causes(trace))


def _classify_lane(
    trace: Trace,
    lane: _LaneSegments,
    gap_start: npt.NDArray[np.int64],
    gap_end: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Causes of the gaps ``[gap_start, gap_end)`` as seen from one CPU thread.

    The thread's time is cut into segments at every event start and end; each
    segment belongs to the innermost event covering it. Prefix sums of
    segment length per category then give each gap's breakdown without a loop
    over gaps.

    Returns
    -------
    cause, event : int64 arrays, one entry per gap
        Index into :data:`CAUSES`, and the row of the event behind it (-1: none).
    share : int64 array, gaps x CAUSES
        ns of each gap spent in each category.
    """
    # Segment k is [bounds[k], bounds[k + 1]); -1: before bounds[0] (the thread's first event).
    first_seg = np.searchsorted(lane.bounds, gap_start, "right") - 1
    last_seg = np.searchsorted(lane.bounds, gap_end, "left") - 1
    share = _category_shares(lane, first_seg, last_seg, gap_start, gap_end)
    cause = np.argmax(share[:, 1:], axis=1) + 1  # ties: first in CAUSES
    # A sync call overlapping the gap wins outright.
    synced, sync_event = _overlapping_sync(trace, lane.sync_rows, gap_start, gap_end)
    cause[synced] = _SYNC
    # Other causes: the event with the most exclusive time of that category.
    event = _main_events(lane, first_seg, last_seg, gap_start, gap_end, cause, ~synced)
    event[synced] = sync_event[synced]
    return cause, event, share


def _boundaries(ev: _LaneEvents, lo_ns: int, hi_ns: int) -> npt.NDArray[np.int64]:
    """The thread's distinct event starts and ends, sorted, that bracket ``[lo_ns, hi_ns]``.

    From the last one at or before ``lo_ns`` (the first, if none) to the first
    one at or after ``hi_ns`` (the last, if none): a run of the sorted
    boundaries of all the thread's events.
    """
    ts, ends = ev.ts_ns, ev.ends_sorted_ns  # both sorted
    below = [int(x[i - 1]) for x in (ts, ends) if (i := int(np.searchsorted(x, lo_ns, "right")))]
    above = [int(x[i]) for x in (ts, ends) if (i := int(np.searchsorted(x, hi_ns))) < len(x)]
    parts = []
    for x in (ts, ends):
        a = int(np.searchsorted(x, max(below))) if below else 0
        z = int(np.searchsorted(x, min(above), "right")) if above else len(x)
        parts.append(x[a:z])
    b = np.sort(np.concatenate(parts))
    first: npt.NDArray[np.bool_] = np.append(True, b[1:] != b[:-1])  # (np.unique hashes: slower)
    return b[first]


def _innermost_events(
    trace: Trace,
    rows: npt.NDArray[np.int64],
    ts_ns: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Row of the innermost event of ``rows`` (starting at ``ts_ns``) covering each segment.

    -1 where none does. Each segment starts from the last event that began
    at or before it, and walks up the linker's parents (on the same thread,
    so among ``rows``) while that event ended before the segment starts.
    """
    pos = np.searchsorted(ts_ns, bounds, "right") - 1
    event = np.where(pos >= 0, rows[np.maximum(pos, 0)], -1)
    parent, end = link(trace).parent, trace.end_ns
    todo = np.flatnonzero(event >= 0)
    while todo.size:
        todo = todo[end[event[todo]] <= bounds[todo]]
        event[todo] = parent[event[todo]]
        todo = todo[event[todo] >= 0]
    return event


def _category_shares(
    lane: _LaneSegments,
    first_seg: npt.NDArray[np.int64],
    last_seg: npt.NDArray[np.int64],
    gap_start: npt.NDArray[np.int64],
    gap_end: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Time (ns) of each gap (rows) spent in each category of :data:`CAUSES` (columns).

    Time not covered by an event of another category is "nothing recorded".
    """
    share = np.zeros((len(gap_start), len(CAUSES)), dtype=np.int64)
    for c in range(_NOTHING):
        share[:, c] = _time_in(lane, c, gap_end, last_seg) - _time_in(lane, c, gap_start, first_seg)
    share[:, _NOTHING] = np.maximum((gap_end - gap_start) - share[:, :_NOTHING].sum(axis=1), 0)
    return share


def _time_in(
    lane: _LaneSegments, c: int, t: npt.NDArray[np.int64], seg: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Time (ns) in category ``c`` from the first boundary up to ``t`` (in segment ``seg``).

    ``lane.before[c, k]`` is the category's time before segment ``k``; the part
    of segment ``seg`` up to ``t`` counts when the segment is in the category.
    """
    k = np.maximum(seg, 0)
    part = np.where(lane.seg_cat[k] == c, t - lane.bounds[k], 0)
    return np.where(seg >= 0, lane.before[c, k] + part, 0)


def _overlapping_sync(
    trace: Trace,
    sync_rows: npt.NDArray[np.int64],
    gap_start: npt.NDArray[np.int64],
    gap_end: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    """Per gap: does a sync call overlap it, and which (the first; -1: none)."""
    ended_by = np.maximum.accumulate(trace.end_ns[sync_rows])  # sorted, unlike the ends
    j = np.searchsorted(ended_by, gap_start, "right")  # first sync still running at the start
    hit = j < len(sync_rows)
    hit[hit] = trace.ts_ns[sync_rows[j[hit]]] < gap_end[hit]
    event = np.full(len(gap_start), -1, dtype=np.int64)
    event[hit] = sync_rows[j[hit]]
    return hit, event


def _main_events(
    lane: _LaneSegments,
    first_seg: npt.NDArray[np.int64],
    last_seg: npt.NDArray[np.int64],
    gap_start: npt.NDArray[np.int64],
    gap_end: npt.NDArray[np.int64],
    cause: npt.NDArray[np.int64],
    wanted: npt.NDArray[np.bool_],
) -> npt.NDArray[np.int64]:
    """Per ``wanted`` gap, the event with the most time of the gap's cause in it (-1: none).

    Each gap is expanded into the segments it spans; their time inside the
    gap is summed per event, and the largest total wins (ties: the lower row).
    """
    bounds, seg_event, seg_cat = lane.bounds, lane.seg_event, lane.seg_cat
    n_gaps = len(gap_start)
    first_seg = np.maximum(first_seg, 0)
    count = np.where(wanted, np.maximum(last_seg - first_seg + 1, 0), 0)
    gap = np.repeat(np.arange(n_gaps), count)
    seg = np.repeat(first_seg - np.cumsum(count) + count, count) + np.arange(count.sum())
    keep = (seg_cat[seg] == cause[gap]) & (seg_event[seg] >= 0)
    gap, seg = gap[keep], seg[keep]
    seg_end = np.append(bounds[1:], np.iinfo(np.int64).max)
    length = np.minimum(seg_end[seg], gap_end[gap]) - np.maximum(bounds[seg], gap_start[gap])
    inside = length > 0
    gap, ev, length = gap[inside], seg_event[seg[inside]], length[inside]
    event = np.full(n_gaps, -1, dtype=np.int64)
    if not gap.size:
        return event
    # The time of each (gap, event) pair: by gap, then event.
    order = np.lexsort((ev, gap))
    gap, ev, length = gap[order], ev[order], length[order]
    new = np.ones(len(gap), dtype=bool)
    new[1:] = (gap[1:] != gap[:-1]) | (ev[1:] != ev[:-1])
    first = np.flatnonzero(new)
    g, e, total = gap[first], ev[first], np.add.reduceat(length, first)
    # Per gap, the first pair (the lowest row) with the largest time.
    new_gap = np.append(True, g[1:] != g[:-1])
    group = np.cumsum(new_gap) - 1
    best = np.flatnonzero(total == np.maximum.reduceat(total, np.flatnonzero(new_gap))[group])
    top = best[np.append(True, group[best][1:] != group[best][:-1])]
    event[g[top]] = e[top]
    return event


def gaps(
    trace: Trace, window: Window | None = None, min_gap_us: float = 1.0, *, edges: bool = False
) -> list[Gap]:
    """Idle gaps between GPU ops on each device, with their CPU-side cause.

    Parameters
    ----------
    window
        ``(start_ns, end_ns)``: only gaps inside this window (GPU ops clipped to it).
    min_gap_us
        Ignore shorter gaps (back-to-back kernels leave ~1 µs between them).
    edges
        With a ``window``, also the idle time at its edges on each device that
        ran something in it: from the window's start to the first GPU op
        (``edge="start"``), and from the last GPU op's end to the window's end
        (``edge="end"``; its ``next_op`` is the device's next GPU op after the
        window, -1 if none). A step that waited for its data before launching
        anything has its wait there, not between two ops.

    Returns
    -------
    list of Gap
        Sorted by device, then time.
    """
    g = gap_columns(trace, window, min_gap_us, edges=edges)
    names = [CAUSES[c] for c in g.cause.tolist()]
    return [
        Gap(*args)
        for args in zip(
            g.device.tolist(),
            g.start_ns.tolist(),
            g.end_ns.tolist(),
            names,
            g.event.tolist(),
            g.next_op.tolist(),
            map(tuple, g.share.tolist()),
            g.edge.tolist(),
            strict=False,
        )
    ]


@dataclass
class GapColumns:
    """What :func:`gaps` finds, as arrays (one entry per gap): no :class:`Gap` objects.

    ``cause`` indexes :data:`CAUSES`; ``share`` is gaps x CAUSES ns.
    """

    device: npt.NDArray[np.int64]
    start_ns: npt.NDArray[np.int64]
    end_ns: npt.NDArray[np.int64]
    cause: npt.NDArray[np.int64]
    event: npt.NDArray[np.int64]
    next_op: npt.NDArray[np.int64]
    share: npt.NDArray[np.int64]
    edge: npt.NDArray[Any]

    def gap_us(self) -> npt.NDArray[np.float64]:
        """Each gap's length in µs, as :attr:`Gap.gap_us` computes it."""
        return (self.end_ns - self.start_ns) / 1e3


def gap_columns(
    trace: Trace, window: Window | None = None, min_gap_us: float = 1.0, *, edges: bool = False
) -> GapColumns:
    """:func:`gaps` as columns, in the same order (for sums over many gaps)."""
    ln = link(trace)
    rows, s, e, dev = gpu_intervals(trace, ln.gpu_ops, window)
    found: list[tuple[npt.NDArray[Any], ...]] = []  # (device, start, end, next op, edge)
    for d in np.unique(dev):
        on = dev == d
        r, rs = rows[on], s[on]
        a, b = union(rs, e[on])
        big = np.flatnonzero((a[1:] - b[:-1]) >= min_gap_us * 1e3)
        order = np.argsort(rs, kind="stable")
        nxt = r[order[np.searchsorted(rs[order], a[big + 1], "left")]]
        found.append((np.full(len(big), d), b[big], a[big + 1], nxt, np.full(len(big), "")))
        if edges and window is not None:
            found.append(_edges(trace, int(d), r[order], a, b, window, min_gap_us))
    if not found:
        none = np.zeros(0, dtype=np.int64)
        return GapColumns(none, none, none, none, none, none,
                          np.zeros((0, len(CAUSES)), dtype=np.int64), np.zeros(0, "<U5"))  # fmt: skip
    cols = [np.concatenate(col) for col in zip(*found, strict=False)]
    dev, gap_start, gap_end, nxt, edge = cols
    order = np.lexsort((gap_start, dev))
    dev, gap_start, gap_end, nxt, edge = (c[order] for c in cols)
    cause, event, share = _causes(trace, gap_start, gap_end, _threads(trace, nxt, rows, dev))
    return GapColumns(dev, gap_start, gap_end, cause, event, nxt, share, edge)


def _edges(
    trace: Trace,
    device: int,
    ops: npt.NDArray[np.int64],
    seg_s: npt.NDArray[np.int64],
    seg_e: npt.NDArray[np.int64],
    window: Window,
    min_gap_us: float,
) -> tuple[npt.NDArray[Any], ...]:
    """The idle time at ``window``'s start and end on ``device``, as gap columns.

    ``ops`` are the device's GPU ops in the window by start; ``seg_s``, ``seg_e``
    their union. The end gap's next op is the device's first GPU op starting
    at or after the window's end (-1: none).
    """
    got: list[tuple[int, int, int, str]] = []  # (start, end, next op, edge)
    if seg_s[0] - window[0] >= min_gap_us * 1e3:
        got.append((window[0], int(seg_s[0]), int(ops[0]), "start"))
    if window[1] - seg_e[-1] >= min_gap_us * 1e3:
        gpu = link(trace).gpu_ops
        lane_dev = np.array([ln.device for ln in trace.lanes], dtype=np.int64)
        after = gpu[(lane_dev[trace.lane[gpu]] == device) & (trace.ts_ns[gpu] >= window[1])]
        nxt = int(after[np.argmin(trace.ts_ns[after])]) if len(after) else -1
        got.append((int(seg_e[-1]), window[1], nxt, "end"))
    return (np.full(len(got), device, dtype=np.int64),
            np.array([g[0] for g in got], dtype=np.int64),
            np.array([g[1] for g in got], dtype=np.int64),
            np.array([g[2] for g in got], dtype=np.int64),
            np.array([g[3] for g in got], dtype="<U5"))  # fmt: skip


def _threads(
    trace: Trace,
    nxt: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    dev: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """The CPU thread (lane) that launched each gap's next op (-1: unknown).

    A gap with no next op (-1) reads the thread that launched the device's
    last op before it, among ``rows``.
    """
    ln = link(trace)
    op = nxt.copy()
    lane_dev = np.array([x.device for x in trace.lanes], dtype=np.int64)
    for k in np.flatnonzero(op < 0):
        mine = rows[lane_dev[trace.lane[rows]] == dev[k]]
        op[k] = mine[np.argmax(trace.end_ns[mine])] if len(mine) else -1
    call = np.where(op >= 0, ln.launch[np.maximum(op, 0)], -1)
    return np.where(call >= 0, trace.lane[np.maximum(call, 0)], -1)


def _causes(
    trace: Trace,
    gap_start: npt.NDArray[np.int64],
    gap_end: npt.NDArray[np.int64],
    thread: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Each gap's cause, the event behind it and its breakdown, from its ``thread``."""
    cause = np.full(len(gap_start), _NOTHING, dtype=np.int64)
    event = np.full(len(gap_start), -1, dtype=np.int64)
    share = np.zeros((len(gap_start), len(CAUSES)), dtype=np.int64)
    share[:, _NOTHING] = gap_end - gap_start
    for lane in np.unique(thread[thread >= 0]).tolist():
        mine = np.flatnonzero(thread == lane)
        start, end = gap_start[mine], gap_end[mine]
        segments = _lane_segments(trace, lane, int(start.min()), int(end.max()))
        cause[mine], event[mine], share[mine] = _classify_lane(trace, segments, start, end)
    return cause, event, share
