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

from ._events import Kind, Trace
from ._link import LAUNCH_APIS, SYNC_APIS, _kind_mask, _name_mask, link
from ._measure import Window, _gpu_intervals, _segments

__all__ = ["CAUSES", "Gap", "gaps"]

#: Causes of an idle gap, in tie-break order.
CAUSES = ("sync", "op without kernels", "python", "launch", "nothing recorded")


@dataclass
class Gap:
    """An idle interval on one device, and what the launching CPU thread did then.

    ``cause`` describes the thread that launched the *next* GPU op:

    * ``"sync"``: a synchronize call (``cudaStreamSynchronize`` from
      ``.item()``, ``cudaDeviceSynchronize``...) overlaps the gap. It wins
      outright: the sync drained the queue, and the rest of the gap is the
      CPU refilling it.
    * otherwise the category that covers most of the gap, judging each instant
      by the innermost event on the thread:
      ``"op without kernels"`` (an op or range that launched no GPU work),
      ``"python"`` (a Python frame, with ``with_stack``), ``"launch"`` (the
      launch call itself, or an op on its way to launching GPU work),
      ``"nothing recorded"`` (no event, or a range with only unrecorded code).
      Ties go to the earlier category in :data:`CAUSES`.

    ``cause_event`` is the row of the event that contributed most of the
    winning category (for ``"nothing recorded"``: the range it happened in,
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
        if trace is not None:
            out["start_us"] = float(trace.rel_us(self.start_ns))
            out["cause_name"] = trace.name(self.cause_event) if self.cause_event >= 0 else ""
            out["next_op_name"] = trace.name(self.next_op)
        return out


_NOTHING = len(CAUSES) - 1


def _event_causes(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Cause category (index into :data:`CAUSES`) of every event, and a sync mask."""
    ln = link(trace)
    k = trace.kind
    rt = _kind_mask(trace, (Kind.RUNTIME, Kind.DRIVER))
    sync = rt & _name_mask(trace, SYNC_APIS)
    launched = np.zeros(len(trace), dtype=bool)
    launched[ln.launch_calls] = True
    launch = rt & (_name_mask(trace, LAUNCH_APIS) | launched) & ~sync
    inside = ln.gpu_ops_inside > 0
    cat = np.full(len(trace), _NOTHING, dtype=np.int8)
    cat[k == Kind.PYTHON] = CAUSES.index("python")
    cat[(k == Kind.CPU_OP) & inside] = CAUSES.index("launch")
    ops = np.isin(k, (int(Kind.CPU_OP), int(Kind.USER_ANNOTATION)))
    cat[ops & ~inside] = CAUSES.index("op without kernels")
    cat[launch] = CAUSES.index("launch")
    cat[sync] = CAUSES.index("sync")
    # Other runtime calls (cudaGetDevice, cudaMalloc...) count as their caller.
    other = np.flatnonzero(rt & ~launch & ~sync)
    p = ln.parent[other]
    cat[other[p >= 0]] = cat[p[p >= 0]]
    return cat, sync


def _classify_lane(trace, rows, cat, sync, gs, ge):
    """Causes of the gaps ``[gs, ge)`` as seen from one CPU thread (event ``rows``).

    The thread's time is cut into segments at every event start and end; each
    segment belongs to the innermost event covering it. Prefix sums of segment
    length per category then give each gap's breakdown without a loop.
    """
    parent = link(trace).parent
    ts, end = trace.ts_ns[rows], trace.ts_ns[rows] + trace.dur_ns[rows]
    b = np.sort(np.concatenate([ts, end]))
    b = b[np.append(True, b[1:] != b[:-1])]  # (np.unique hashes: slower here)
    ks = np.searchsorted(b, gs, "right") - 1
    ke = np.searchsorted(b, ge, "left") - 1
    # Only segments inside some gap matter: mark them with a difference array.
    mark = np.zeros(len(b) + 1, dtype=np.int64)
    np.add.at(mark, np.maximum(ks, 0), 1)
    np.add.at(mark, np.maximum(ke + 1, 0), -1)
    # Innermost event covering each segment start: walk up from the last start.
    cand = np.searchsorted(ts, b, "right") - 1
    cand[np.cumsum(mark[:-1]) <= 0] = -1
    local_parent = np.searchsorted(rows, parent[rows])
    local_parent[parent[rows] < 0] = -1
    todo = np.flatnonzero(cand >= 0)
    while todo.size:
        todo = todo[end[cand[todo]] <= b[todo]]
        cand[todo] = local_parent[cand[todo]]
        todo = todo[cand[todo] >= 0]
    seg_event = np.where(cand >= 0, rows[np.maximum(cand, 0)], -1)
    seg_cat = np.where(cand >= 0, cat[np.maximum(seg_event, 0)], _NOTHING)
    seg_end = np.append(b[1:], np.iinfo(np.int64).max)
    seg_len = np.append(np.diff(b), 0)
    n_gaps = len(gs)
    share = np.zeros((n_gaps, len(CAUSES)), dtype=np.int64)
    for c in range(_NOTHING):
        cum = np.concatenate([[0], np.cumsum(np.where(seg_cat == c, seg_len, 0))])

        def upto(x, k, c=c, cum=cum):
            kk = np.maximum(k, 0)
            part = np.where(seg_cat[kk] == c, x - b[kk], 0)
            return np.where(k >= 0, cum[kk] + part, 0)

        share[:, c] = upto(ge, ke) - upto(gs, ks)
    share[:, _NOTHING] = np.maximum((ge - gs) - share[:, :_NOTHING].sum(axis=1), 0)
    cause = np.argmax(share[:, 1:], axis=1) + 1  # ties: first in CAUSES
    # A sync call overlapping the gap wins outright.
    srows = rows[sync[rows]]
    s_ts, s_end = (
        trace.ts_ns[srows],
        np.maximum.accumulate(trace.ts_ns[srows] + trace.dur_ns[srows]),
    )
    j = np.searchsorted(s_end, gs, "right")
    hit = j < len(srows)
    hit[hit] = s_ts[j[hit]] < ge[hit]
    cause[hit] = 0
    event = np.full(n_gaps, -1, dtype=np.int64)
    event[hit] = srows[j[hit]]
    # Other causes: the event with the most exclusive time of that category.
    ks = np.maximum(ks, 0)
    count = np.maximum(ke - ks + 1, 0)
    gap_id = np.repeat(np.arange(n_gaps), count)
    k = np.repeat(ks - np.cumsum(count) + count, count) + np.arange(count.sum())
    length = np.minimum(seg_end[k], ge[gap_id]) - np.maximum(b[k], gs[gap_id])
    keep = (seg_cat[k] == cause[gap_id]) & (seg_event[k] >= 0) & ~hit[gap_id] & (length > 0)
    gap_id, ev, length = gap_id[keep], seg_event[k[keep]], length[keep]
    if gap_id.size:
        order = np.lexsort((ev, gap_id))
        gap_id, ev, length = gap_id[order], ev[order], length[order]
        new = np.ones(len(gap_id), dtype=bool)
        new[1:] = (gap_id[1:] != gap_id[:-1]) | (ev[1:] != ev[:-1])
        first = np.flatnonzero(new)
        g, e, total = gap_id[first], ev[first], np.add.reduceat(length, first)
        best = np.lexsort((-total, g))
        top = best[np.append(True, g[best][1:] != g[best][:-1])]
        event[g[top]] = e[top]
    return cause, event, share


def gaps(trace: Trace, window: Window | None = None, min_gap_us: float = 1.0) -> list[Gap]:
    """Idle gaps between GPU ops on each device, with their CPU-side cause.

    Parameters
    ----------
    window
        ``(start_ns, end_ns)``: only gaps inside this window (GPU ops clipped to it).
    min_gap_us
        Ignore shorter gaps (back-to-back kernels leave ~1 µs between them).

    Returns
    -------
    list of Gap
        Sorted by device, then time.
    """
    ln = link(trace)
    rows, s, e, dev = _gpu_intervals(trace, ln.gpu_ops, window)
    found = []  # (device, start, end, next op)
    for d in np.unique(dev):
        on = dev == d
        r, rs = rows[on], s[on]
        a, b = _segments(rs, e[on])
        big = np.flatnonzero((a[1:] - b[:-1]) >= min_gap_us * 1e3)
        order = np.argsort(rs, kind="stable")
        nxt = r[order[np.searchsorted(rs[order], a[big + 1], "left")]]
        found.append((np.full(len(big), d), b[big], a[big + 1], nxt))
    if not found:
        return []
    dev, gs, ge, nxt = (np.concatenate(col) for col in zip(*found, strict=False))
    call = ln.launch[nxt]
    thread = np.where(call >= 0, trace.lane[np.maximum(call, 0)], -1)
    cause = np.full(len(gs), _NOTHING, dtype=np.int64)
    event = np.full(len(gs), -1, dtype=np.int64)
    share = np.zeros((len(gs), len(CAUSES)), dtype=np.int64)
    share[:, _NOTHING] = ge - gs
    cat, sync = _event_causes(trace)
    for lane in np.unique(thread[thread >= 0]):
        mine = np.flatnonzero(thread == lane)
        lane_rows = np.flatnonzero(trace.lane == lane)
        cause[mine], event[mine], share[mine] = _classify_lane(
            trace, lane_rows, cat, sync, gs[mine], ge[mine]
        )
    names = [CAUSES[c] for c in cause.tolist()]
    return [
        Gap(*args)
        for args in zip(
            dev.tolist(),
            gs.tolist(),
            ge.tolist(),
            names,
            event.tolist(),
            nxt.tolist(),
            map(tuple, share.tolist()),
            strict=False,
        )
    ]
