"""Device memory over time, from the ``[memory]`` events of ``profile_memory=True``.

Each allocation or free by PyTorch's allocators is an instant event named
``[memory]`` whose args hold ``Bytes`` (positive: allocated, negative:
freed), ``Addr``, ``Total Allocated`` and ``Total Reserved`` (the device's
totals just after it), ``Device Type`` (1: CUDA, 0: CPU) and ``Device Id``.
The loader keeps these events as written, in file order, in
``trace.memory_events`` (:mod:`tracereader._side`).

Per device it gives the allocated and reserved series, their peaks with the
profiler step, ``record_function`` region and CPU op open at each, a peak per
step, and the largest blocks alive at the allocated peak, rebuilt by pairing
each allocation with the free of the same ``Addr``. Blocks allocated before
the profiler started have no event; their total (the first event's
``Total Allocated`` minus its ``Bytes``) is reported, not their sizes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ._columns import base_ns
from ._events import Kind, Trace, cached
from ._side import MEMORY_ARGS
from ._tables import Table

__all__ = ["SNAPSHOT_NOTE", "DeviceMemory", "MemoryView", "keep_memory_view", "memory_view"]

#: Rows of events (sorted by start), their starts and their ends.
_Spans = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]

GIB = float(1 << 30)
#: Largest live blocks listed at the peak.
TOP_BLOCKS = 10
_KEY = "memory_view"  # where the trace keeps its view
#: torch's ``c10::DeviceType`` numbers for the devices a trace names.
DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 19: "mtia"}
SNAPSHOT_NOTE = (
    "A memory snapshot (torch.cuda.memory._record_memory_history, then "
    "_dump_snapshot) adds what this trace lacks: the Python and C++ stack of every "
    "allocation, and the allocator's segments and blocks (fragmentation)."
)


@dataclass
class DeviceMemory:
    """One device's memory events in time order, and what they show.

    ``ts_ns`` is on the trace's clock; ``allocated_bytes`` and
    ``reserved_bytes`` are the totals just after each event.
    """

    device: str
    ts_ns: npt.NDArray[np.int64]
    delta_bytes: npt.NDArray[np.int64]
    allocated_bytes: npt.NDArray[np.int64]
    reserved_bytes: npt.NDArray[np.int64]
    addr: npt.NDArray[np.int64]
    lane: npt.NDArray[np.int64]
    before_bytes: int
    peak: dict[str, Any] = field(default_factory=dict)
    peak_reserved: dict[str, Any] = field(default_factory=dict)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    blocks_note: str = ""

    @property
    def events(self) -> int:
        return int(len(self.ts_ns))


@dataclass
class MemoryView:
    """Memory per device: peaks, a peak per step, the live blocks at the peak."""

    devices: list[DeviceMemory]
    steps: Table
    t0_ns: int

    def peaks(self) -> Table:
        """One row per device: its events and both peaks, when (ms into the trace) and where."""
        rows = []
        for d in self.devices:
            p, r = d.peak, d.peak_reserved
            rows.append([d.device, d.events, p["bytes"] / GIB, (p["ts_ns"] - self.t0_ns) / 1e6,
                         p["step"], p["region"], p["op"], r["bytes"] / GIB,
                         (r["ts_ns"] - self.t0_ns) / 1e6, d.before_bytes / GIB])  # fmt: skip
        cols = ["device", "events", "peak_allocated_gib", "at_ms", "step", "region", "cpu_op",
                "peak_reserved_gib", "reserved_at_ms", "allocated_before_trace_gib"]  # fmt: skip
        return Table(cols, rows, "Memory peaks per device (ms from the trace's start)", (), 40)

    def block_table(self, device: DeviceMemory) -> Table:
        """The largest blocks alive at ``device``'s allocated peak."""
        rows = [[b["bytes"] / GIB, (b["ts_ns"] - self.t0_ns) / 1e6, b["step"], b["region"],
                 b["op"]] for b in device.blocks]  # fmt: skip
        return Table(["size_gib", "allocated_at_ms", "step", "region", "cpu_op"], rows,
                     f"Largest blocks alive at the peak ({device.device})", (), 50)  # fmt: skip

    def series(self, device: DeviceMemory, points: int = 40) -> Table:
        """``device``'s series cut into ``points`` equal time bins: the highest totals in each."""
        t = device.ts_ns
        edges = np.linspace(t[0], t[-1] + 1, points + 1)
        k = np.clip(np.searchsorted(edges, t, "right") - 1, 0, points - 1)
        rows = []
        for b in np.unique(k):
            on = k == b
            rows.append([(edges[b] - self.t0_ns) / 1e6, int(on.sum()),
                         device.allocated_bytes[on].max() / GIB,
                         device.reserved_bytes[on].max() / GIB])  # fmt: skip
        cols = ["from_ms", "events", "max_allocated_gib", "max_reserved_gib"]
        return Table(cols, rows, f"Memory over time ({device.device}, highest per bin)", ())


# ---------------------------------------------------------------- where in the trace
class _Where:
    """Step, ``record_function`` region and innermost CPU op open at a time."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        ann = np.flatnonzero(trace.kind == Kind.USER_ANNOTATION)
        step = np.array([n.startswith("ProfilerStep#") for n in trace.names], dtype=bool)
        self.ann = self._spans(ann[~step[trace.name_id[ann]]] if len(step) else ann)
        self.ops = np.flatnonzero(trace.kind == Kind.CPU_OP)
        self.ops_on: dict[int, _Spans] = {}  # lane -> its CPU ops, as _spans

    def _spans(self, rows: npt.NDArray[np.int64]) -> _Spans:
        return rows, self.trace.ts_ns[rows], self.trace.end_ns[rows]

    def _innermost(self, spans: _Spans, when_ns: int) -> str:
        rows, ts, end = spans
        inside = rows[(ts <= when_ns) & (when_ns < end)]  # sorted by start: the last is inner
        return self.trace.name(int(inside[-1])) if len(inside) else ""

    def __call__(self, when_ns: int, lane: int) -> dict[str, Any]:
        step = next((s.name for s in self.trace.steps if s.start_ns <= when_ns < s.end_ns), "")
        if lane not in self.ops_on:
            on = self.ops[self.trace.lane[self.ops] == lane] if lane >= 0 else self.ops[:0]
            self.ops_on[lane] = self._spans(on)
        return {"ts_ns": when_ns, "step": step, "region": self._innermost(self.ann, when_ns),
                "op": self._innermost(self.ops_on[lane], when_ns)}  # fmt: skip


# ---------------------------------------------------------------- reading
def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _ints(values: tuple[Any, ...]) -> npt.NDArray[np.int64]:
    """:func:`_int` of each value, at once where all are plain ints (as torch writes them)."""
    if set(map(type, values)) <= {int}:
        return np.fromiter(values, np.int64, len(values))
    return np.fromiter(map(_int, values), np.int64, len(values))


def _ts_ns(ts_us: Any, base: int) -> int | None:
    """A ``[memory]`` event's ``ts`` (µs) on the trace's ns clock (``trace.ts_ns``), or ``None``.

    The loader reads ``ts`` as a float: one that is whole and beyond a float's
    exact ns (absolute µs written as an integer, torch 1.x) is multiplied as
    an integer, as that integer would be.
    """
    if isinstance(ts_us, bool) or not isinstance(ts_us, (int, float)):
        return None
    if isinstance(ts_us, float) and abs(ts_us) >= 2**53 / 1000 and ts_us.is_integer():
        return int(ts_us) * 1000 + base
    return round(ts_us * 1000) + base


def _all_ts_ns(
    ts_us: tuple[Any, ...], base: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """:func:`_ts_ns` of each ``ts`` and whether it has one; at once where all are floats."""
    if set(map(type, ts_us)) <= {float}:
        us = np.array(ts_us, dtype=np.float64)
        if np.isfinite(us).all() and (np.abs(us) < 9e15).all():
            ns = np.rint(us * 1000.0).astype(np.int64)
            whole = (np.abs(us) >= 2**53 / 1000) & (us == np.floor(us))
            ns[whole] = us[whole].astype(np.int64) * 1000
            return ns + base, np.ones(len(us), dtype=bool)
    found = [_ts_ns(t, base) for t in ts_us]
    ns = np.array([0 if t is None else t for t in found], dtype=np.int64)
    return ns, np.array([t is not None for t in found], dtype=bool)


def _lanes(trace: Trace) -> dict[tuple[Any, Any], int]:
    return {(ln.pid, ln.tid): ln.index for ln in trace.lanes if not ln.is_gpu}


def _device(
    trace: Trace, name: str, cols: dict[str, npt.NDArray[np.int64]], where: _Where
) -> DeviceMemory:
    order = np.lexsort((cols["order"], cols["ts_ns"]))
    c = {k: v[order] for k, v in cols.items()}
    d = DeviceMemory(name, c["ts_ns"], c["bytes"], c["allocated"], c["reserved"], c["addr"],
                     c["lane"], int(c["allocated"][0] - c["bytes"][0]))  # fmt: skip
    k = int(np.argmax(d.allocated_bytes))
    d.peak = {"bytes": int(d.allocated_bytes[k]), **where(int(d.ts_ns[k]), int(d.lane[k]))}
    j = int(np.argmax(d.reserved_bytes))
    d.peak_reserved = {"bytes": int(d.reserved_bytes[j]), **where(int(d.ts_ns[j]), -1)}
    live: dict[int, int] = {}  # addr -> event index of its allocation
    unpaired = 0
    for i in range(k + 1):
        a = int(d.addr[i])
        if d.delta_bytes[i] > 0:
            live[a] = i
        elif live.pop(a, None) is None:
            unpaired += 1  # freed a block allocated before the trace began
    if not live:
        d.blocks_note = "No block allocated inside the trace is alive at the peak."
    else:
        idx = sorted(live.values(), key=lambda i: -int(d.delta_bytes[i]))[:TOP_BLOCKS]
        d.blocks = [{"bytes": int(d.delta_bytes[i]), **where(int(d.ts_ns[i]), int(d.lane[i]))}
                    for i in idx]  # fmt: skip
        in_trace = sum(int(d.delta_bytes[i]) for i in live.values())
        d.blocks_note = (
            f"{len(live):,} blocks allocated inside the trace are alive at the peak, "
            f"{in_trace / GIB:,.2f} GiB (rebuilt from Addr/Bytes pairs); the other "
            f"{(d.peak['bytes'] - in_trace) / GIB:,.2f} GiB was allocated before the trace "
            "began, so its blocks are unknown"
            + (f" ({unpaired:,} frees of such blocks seen)." if unpaired else ".")
        )
    return d


def _step_peaks(trace: Trace, devices: list[DeviceMemory]) -> Table:
    rows = []
    for d in devices:
        for s in trace.steps:
            on = (d.ts_ns >= s.start_ns) & (d.ts_ns < s.end_ns)
            if on.any():
                rows.append([d.device, s.name, int(on.sum()),
                             d.allocated_bytes[on].max() / GIB, d.reserved_bytes[on].max() / GIB,
                             int(d.delta_bytes[on & (d.delta_bytes > 0)].sum()) / GIB])  # fmt: skip
    cols = ["device", "step", "events", "peak_allocated_gib", "peak_reserved_gib",
            "allocated_in_step_gib"]  # fmt: skip
    return Table(cols, rows, "Memory peak per profiler step", ())


def memory_view(trace: Trace) -> MemoryView | None:
    """The memory view of ``trace``, or ``None`` when it holds no ``[memory]`` event.

    Worked out once per trace and kept with it (the report's section and its
    charts both read it).
    """
    return cached(trace, _KEY, lambda: _memory_view(trace))


def keep_memory_view(trace: Trace, view: MemoryView | None) -> None:
    """Keep ``view``, :func:`memory_view` of ``trace`` worked out elsewhere (a helper process)."""
    cached(trace, _KEY, lambda: view)


def _memory_view(trace: Trace) -> MemoryView | None:
    if not trace.memory_events:
        return None
    base = base_ns(trace.meta)
    if any("ignored baseTimeNanoseconds" in r for r in trace.repairs):
        base = 0
    lanes = _lanes(trace)
    ts_us, pids, tids, *values = zip(*trace.memory_events, strict=True)
    when, has_ts = _all_ts_ns(ts_us, base)
    args = dict(zip(MEMORY_ARGS, map(_ints, values), strict=True))
    lane = np.fromiter(
        map(lanes.get, zip(pids, tids, strict=True), itertools.repeat(-1)), np.int64, len(when)
    )
    cols = np.stack([when, args["Bytes"], args["Total Allocated"], args["Total Reserved"],
                     args["Addr"], lane, np.arange(len(when))], axis=1)  # fmt: skip
    # Device Type and Id -> "cuda:0", "cpu"...
    dev_type, dev_id = args["Device Type"][has_ts], args["Device Id"][has_ts]
    kept = cols[has_ts]
    by_dev: dict[str, npt.NDArray[np.int64]] = {}
    for dtype in np.unique(dev_type).tolist():
        of_type = dev_type == dtype
        for did in np.unique(dev_id[of_type]).tolist():
            kind = DEVICE_TYPES.get(dtype, f"type{dtype}")
            dev = kind if kind == "cpu" else f"{kind}:{did}"
            mine = np.flatnonzero(of_type & (dev_id == did))
            by_dev[dev] = mine if dev not in by_dev else np.union1d(by_dev[dev], mine)
    if not by_dev:
        return None
    devices = []
    keys = ("ts_ns", "bytes", "allocated", "reserved", "addr", "lane", "order")
    where = _Where(trace)
    for dev in sorted(by_dev, key=lambda d: (d == "cpu", d)):
        arr = kept[by_dev[dev]]
        devices.append(_device(trace, dev, {k: arr[:, i] for i, k in enumerate(keys)}, where))
    return MemoryView(devices, _step_peaks(trace, devices), trace.t0_ns)
