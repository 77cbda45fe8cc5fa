"""Measurements over a linked trace: launch latency, GPU busy time, idle gaps, steps.

Definitions (all per GPU op, joined to its launch call by correlation):

* **launch-to-start** ``gpu.ts - call.ts``: from the moment the CPU began the
  launch call to the moment the GPU op started. What people usually call
  "launch latency".
* **queue delay** ``gpu.ts - (call.ts + call.dur)``: how long the op waited
  after the call returned. Large when the GPU is busy (the CPU is ahead);
  negative when the op started before the call returned.
* **call cost** ``call.dur``: CPU time spent inside the launch call.
* **GPU busy** time: the length of the *union* of GPU-op intervals on a device
  (overlapping streams count once), summed over devices. ``cuda_sync`` and
  ``gpu_user_annotation`` spans are not GPU work and are excluded.
* **idle gap**: an interval on a device between two GPU ops where nothing ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._events import Kind, Trace
from ._link import LAUNCH_APIS, SYNC_APIS, _kind_mask, _name_mask, link

__all__ = [
    "CAUSES",
    "Gap",
    "LaunchTable",
    "StepTime",
    "gaps",
    "gpu_busy_us",
    "launches",
    "step_times",
    "summary",
]

Window = tuple[int, int]


@dataclass
class LaunchTable:
    """One row per GPU op: how it was launched and how long that took.

    Columns are lists/arrays of equal length. Latencies are NaN for GPU ops
    whose launch call is missing. For ``cudaGraphLaunch`` rows (``graph`` is
    True) every kernel of the graph shares one call, so only the graph's first
    kernel has a meaningful launch-to-start; :meth:`by_api` uses only that one.
    """

    gpu_op: np.ndarray
    name: list[str]
    kind: list[str]
    api: list[str]
    op: list[str]
    step: list[str]
    launch_to_start_us: np.ndarray
    queue_delay_us: np.ndarray
    call_us: np.ndarray
    graph: np.ndarray
    first_of_call: np.ndarray

    def __len__(self) -> int:
        return len(self.gpu_op)

    def to_records(self) -> list[dict[str, Any]]:
        """Rows as plain dicts (NaN latencies become ``None``)."""
        text = ("name", "kind", "api", "op", "step")
        times = ("launch_to_start_us", "queue_delay_us", "call_us")
        out = []
        for i in range(len(self)):
            rec: dict[str, Any] = {"gpu_op": int(self.gpu_op[i])}
            rec.update({c: getattr(self, c)[i] for c in text})
            for c in times:
                x = float(getattr(self, c)[i])
                rec[c] = None if np.isnan(x) else round(x, 3)
            rec["graph"] = bool(self.graph[i])
            out.append(rec)
        return out

    def by_api(self) -> list[dict[str, Any]]:
        """Per launch API: calls, GPU ops, and median/p90 latencies (µs).

        Statistics use one row per launch *call* (its first GPU op), so a graph
        launch of 30 kernels counts once, with its first kernel's latency.
        """
        out = []
        api = np.array(self.api, dtype=object)
        for name in sorted(set(self.api) - {""}, key=lambda a: (-self.api.count(a), a)):
            rows = np.flatnonzero(api == name)
            first = rows[self.first_of_call[rows]]
            out.append(
                {
                    "api": name,
                    "calls": int(len(first)),
                    "gpu_ops": int(len(rows)),
                    "launch_to_start_us_median": float(np.median(self.launch_to_start_us[first])),
                    "launch_to_start_us_p90": float(
                        np.percentile(self.launch_to_start_us[first], 90)
                    ),
                    "queue_delay_us_median": float(np.median(self.queue_delay_us[first])),
                    "call_us_median": float(np.median(self.call_us[first])),
                }
            )
        return out


def launches(trace: Trace, window: Window | None = None) -> LaunchTable:
    """Launch latencies of every GPU op (optionally those *launched* in ``window``)."""
    ln = link(trace)
    rows = ln.gpu_ops
    if window is not None:
        rows = rows[_launched_in(trace, rows, window)]
    call = ln.launch[rows]
    has = call >= 0
    c = np.maximum(call, 0)
    gpu_ts = trace.ts_ns[rows]
    nan = np.full(len(rows), np.nan)
    # Subtract in int64 first: absolute ns timestamps do not fit a float exactly.
    to_start = np.where(has, (gpu_ts - trace.ts_ns[c]) / 1e3, nan)
    queue = np.where(has, (gpu_ts - trace.ts_ns[c] - trace.dur_ns[c]) / 1e3, nan)
    call_us = np.where(has, trace.dur_ns[c] / 1e3, nan)
    names = np.array(trace.names + [""], dtype=object)
    blank = len(trace.names)
    api = names[np.where(has, trace.name_id[c], blank)].tolist()
    iss = np.where(has, ln.issuer[c], -1)
    op = names[np.where(iss >= 0, trace.name_id[np.maximum(iss, 0)], blank)].tolist()
    graph = np.array(["GraphLaunch" in a for a in api], dtype=bool)
    first = np.ones(len(rows), dtype=bool)  # first GPU op (by start) of its call
    linked = np.flatnonzero(has)
    order = linked[np.lexsort((gpu_ts[linked], call[linked]))]
    first[order[1:][call[order[1:]] == call[order[:-1]]]] = False
    steps = trace.steps
    return LaunchTable(
        gpu_op=rows,
        name=[trace.name(r) for r in rows],
        kind=[Kind(int(trace.kind[r])).name.lower() for r in rows],
        api=api,
        op=op,
        step=[steps[k].name if k >= 0 else "" for k in ln.step[rows]],
        launch_to_start_us=to_start,
        queue_delay_us=queue,
        call_us=call_us,
        graph=graph,
        first_of_call=first & has,
    )


def _launched_in(trace: Trace, rows: np.ndarray, window: Window) -> np.ndarray:
    """Mask over GPU-op ``rows``: launched (unlinked: started) inside ``window``."""
    call = link(trace).launch[rows]
    when = np.where(call >= 0, trace.ts_ns[np.maximum(call, 0)], trace.ts_ns[rows])
    return (when >= window[0]) & (when < window[1])


def _segments(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as disjoint, sorted segments."""
    if not len(starts):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], e[last]


def _gpu_intervals(trace: Trace, rows: np.ndarray, window: Window | None):
    s, e = trace.ts_ns[rows], trace.ts_ns[rows] + trace.dur_ns[rows]
    if window is not None:
        s, e = np.maximum(s, window[0]), np.minimum(e, window[1])
        keep = e > s
        rows, s, e = rows[keep], s[keep], e[keep]
    dev = np.array([ln.device for ln in trace.lanes], dtype=np.int64)[trace.lane[rows]]
    return rows, s, e, dev


def _busy_ns(trace: Trace, rows: np.ndarray, device: int | None, window: Window | None) -> int:
    rows, s, e, dev = _gpu_intervals(trace, rows, window)
    total = 0
    for d in np.unique(dev):
        if device is not None and d != device:
            continue
        a, b = _segments(s[dev == d], e[dev == d])
        total += int((b - a).sum())
    return total


def gpu_busy_us(trace: Trace, device: int | None = None, window: Window | None = None) -> float:
    """GPU busy time in µs: the union of GPU-op intervals per device, summed.

    Parameters
    ----------
    device
        Only this device (the trace's GPU ``pid``); default all.
    window
        ``(start_ns, end_ns)``: clip intervals to this time window.
    """
    return _busy_ns(trace, link(trace).gpu_ops, device, window) / 1e3


# ---------------------------------------------------------------------- gaps
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


# ---------------------------------------------------------------------- steps
@dataclass
class StepTime:
    """CPU and GPU time of one ``ProfilerStep``.

    ``cpu_us`` is the step's span on the CPU. ``gpu_busy_us`` is the busy time
    (union of intervals) of the GPU ops *launched* during the step, wherever
    they ran. ``verdict`` is ``"overhead-bound"`` when the GPU was busy for
    less than half the step's CPU time (the GPU mostly waited for the CPU),
    else ``"compute-bound"``.
    """

    name: str
    start_ns: int
    end_ns: int
    cpu_us: float
    gpu_busy_us: float
    gpu_ops: int
    kernels: int
    launches: int

    @property
    def gpu_fraction(self) -> float:
        return self.gpu_busy_us / self.cpu_us if self.cpu_us else 0.0

    @property
    def verdict(self) -> str:
        return "overhead-bound" if self.gpu_fraction < 0.5 else "compute-bound"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cpu_us": round(self.cpu_us, 3),
            "gpu_busy_us": round(self.gpu_busy_us, 3),
            "gpu_ops": self.gpu_ops,
            "kernels": self.kernels,
            "launches": self.launches,
            "verdict": self.verdict,
        }


def step_times(trace: Trace) -> list[StepTime]:
    """Per ``ProfilerStep``: CPU span, GPU busy time of its launches, counts, verdict."""
    ln = link(trace)
    out = []
    step_of_op = ln.step[ln.gpu_ops]
    step_of_call = ln.step[ln.launch_calls]
    for k, st in enumerate(trace.steps):
        ops = ln.gpu_ops[step_of_op == k]
        out.append(
            StepTime(
                name=st.name,
                start_ns=st.start_ns,
                end_ns=st.end_ns,
                cpu_us=st.dur_us,
                gpu_busy_us=_busy_ns(trace, ops, None, None) / 1e3,
                gpu_ops=int(len(ops)),
                kernels=int(np.count_nonzero(trace.kind[ops] == Kind.KERNEL)),
                launches=int(np.count_nonzero(step_of_call == k)),
            )
        )
    return out


def summary(trace: Trace) -> dict[str, Any]:
    """The trace at a glance, as one JSON-ready dict.

    Keys: ``source``, ``parser``, ``repairs``, ``events``, ``duration_us``,
    ``cpu_threads`` (threads with CPU events), ``gpu_streams`` (streams with
    GPU ops), ``devices``, ``kernels``, ``memcpys``,
    ``memsets``, ``gpu_ops`` (their sum), ``linked_gpu_ops`` (GPU ops whose
    launch call was found), ``launch_calls``, ``launch_apis`` (API name ->
    GPU ops it launched), ``graph_launches`` (``cudaGraphLaunch`` calls),
    ``issuer_methods``, ``gpu_busy_us``, ``launch_to_start_us_median``,
    ``steps`` (names) and ``step_times`` (per step dicts, see :class:`StepTime`).
    """
    ln = link(trace)
    k = trace.kind
    cpu_kinds = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON, Kind.RUNTIME, Kind.DRIVER)
    threads = np.unique(trace.lane[_kind_mask(trace, cpu_kinds)])
    streams = [trace.lanes[i] for i in np.unique(trace.lane[ln.gpu_ops])]
    apis: dict[str, int] = {}
    for call, count in zip(ln._by_call[0], np.diff(ln._by_call[1]), strict=False):
        apis[trace.name(call)] = apis.get(trace.name(call), 0) + int(count)
    calls = _kind_mask(trace, (Kind.RUNTIME, Kind.DRIVER))
    graph = int(np.count_nonzero(calls & _name_mask(trace, ("cudaGraphLaunch", "cuGraphLaunch"))))
    lat = launches(trace)
    first = lat.launch_to_start_us[lat.first_of_call]
    end = int((trace.ts_ns + trace.dur_ns).max()) if len(trace) else 0
    return {
        "source": trace.source,
        "parser": trace.parser,
        "repairs": list(trace.repairs),
        "events": len(trace),
        "duration_us": (end - trace.t0_ns) / 1e3,
        "cpu_threads": int(len(threads)),
        "gpu_streams": len(streams),
        "devices": sorted({lane.device for lane in streams}),
        "kernels": int(np.count_nonzero(k == Kind.KERNEL)),
        "memcpys": int(np.count_nonzero(k == Kind.MEMCPY)),
        "memsets": int(np.count_nonzero(k == Kind.MEMSET)),
        "gpu_ops": int(len(ln.gpu_ops)),
        "linked_gpu_ops": ln.linked_gpu_ops,
        "launch_calls": int(len(ln.launch_calls)),
        "launch_apis": dict(sorted(apis.items(), key=lambda kv: (-kv[1], kv[0]))),
        "graph_launches": graph,
        "issuer_methods": dict(ln.method),
        "gpu_busy_us": gpu_busy_us(trace),
        "launch_to_start_us_median": float(np.median(first)) if first.size else None,
        "steps": [s.name for s in trace.steps],
        "step_times": [st.to_dict() for st in step_times(trace)],
    }
