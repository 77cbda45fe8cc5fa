"""Communication against computation on one trace: kernel classes, overlap, idle per stream.

The measure stage for one rank of a distributed job (:mod:`tracereader._ranks`
puts several ranks side by side). Every GPU op falls in one class:

* **communication**: a kernel whose name contains ``nccl`` or ``rccl`` (any
  case): ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``, ``ncclKernel_SendRecv...``,
  RCCL's kernels on ROCm;
* **memory**: a memcpy or memset;
* **computation**: every other kernel.

Times are lengths of *unions* of intervals, per device, summed over devices
(a rank normally drives one): two computation kernels on two streams at once
count once, as in :func:`~tracereader.gpu_busy_us`.

* ``span_us``: from the first GPU op's start to the last one's end;
* ``busy_us``: the union of all GPU ops; ``idle_us = span_us - busy_us``;
* ``comm_us``, ``comp_us``, ``memory_us``: the union of each class;
* ``overlap_us``: the time when a communication kernel runs while a
  computation kernel runs, on any stream of that device:
  ``|comm ∩ comp| = comm_us + comp_us - |comm ∪ comp|``;
* ``exposed_comm_us = comm_us - overlap_us``: communication nothing hides.

Per stream, ``idle_us`` is the stream's span minus its busy time: the sum of
the gaps between consecutive GPU ops on that stream.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._events import Kind, Trace
from ._intervals import union
from ._link import link

__all__ = ["COMM", "COMP", "MEMORY", "CommTimes", "comm_times", "op_classes", "stream_idle"]

COMP, COMM, MEMORY = 0, 1, 2
#: Substrings (lower case) that make a kernel a communication kernel.
COMM_MARKERS = ("nccl", "rccl")

_Rows = npt.NDArray[np.int64]


def op_classes(trace: Trace, rows: _Rows) -> npt.NDArray[np.int8]:
    """Class of each GPU op in ``rows``: :data:`COMP`, :data:`COMM` or :data:`MEMORY`."""
    is_comm = np.array([any(m in n.lower() for m in COMM_MARKERS) for n in trace.names], bool)
    kind = trace.kind[rows]
    out = np.full(len(rows), COMP, dtype=np.int8)
    if len(is_comm):
        out[(kind == Kind.KERNEL) & is_comm[trace.name_id[rows]]] = COMM
    out[(kind == Kind.MEMCPY) | (kind == Kind.MEMSET)] = MEMORY
    return out


def _union_ns(s: npt.NDArray[np.int64], e: npt.NDArray[np.int64]) -> int:
    a, b = union(s, e)
    return int((b - a).sum())


@dataclass(frozen=True)
class CommTimes:
    """GPU time of one trace split into communication and computation (µs).

    See the module's docstring for each definition. ``overlap_pct`` is the
    share of communication time that computation hides (``None`` without
    communication).
    """

    gpu_ops: int
    comm_kernels: int
    span_us: float
    busy_us: float
    idle_us: float
    comp_us: float
    comm_us: float
    memory_us: float
    overlap_us: float

    @property
    def exposed_comm_us(self) -> float:
        return self.comm_us - self.overlap_us

    @property
    def overlap_pct(self) -> float | None:
        return 100 * self.overlap_us / self.comm_us if self.comm_us else None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["exposed_comm_us"] = self.exposed_comm_us
        out["overlap_pct"] = self.overlap_pct
        return out


def _device_of(trace: Trace, rows: _Rows) -> npt.NDArray[np.int64]:
    dev = np.array([ln.device for ln in trace.lanes], dtype=np.int64)
    return dev[trace.lane[rows]]


def comm_times(trace: Trace, rows: _Rows | None = None) -> CommTimes:
    """Communication, computation and their overlap for GPU ops ``rows`` (default all).

    Parameters
    ----------
    trace
        A loaded trace.
    rows
        GPU-op rows to count (for instance those launched before the last
        step); default every GPU op the linker found.
    """
    rows = link(trace).gpu_ops if rows is None else rows
    s, e = trace.ts_ns[rows], trace.end_ns[rows]
    cls = op_classes(trace, rows)
    dev = _device_of(trace, rows)
    ns = dict.fromkeys(("span", "busy", "comp", "comm", "memory", "overlap"), 0)
    for d in np.unique(dev):
        on = dev == d
        ns["span"] += int(e[on].max() - s[on].min())
        ns["busy"] += _union_ns(s[on], e[on])
        comp, comm = on & (cls == COMP), on & (cls == COMM)
        ns["comp"] += (c := _union_ns(s[comp], e[comp]))
        ns["comm"] += (m := _union_ns(s[comm], e[comm]))
        ns["memory"] += _union_ns(s[on & (cls == MEMORY)], e[on & (cls == MEMORY)])
        both = comp | comm
        ns["overlap"] += c + m - _union_ns(s[both], e[both])
    us = {k: v / 1e3 for k, v in ns.items()}
    return CommTimes(
        gpu_ops=int(len(rows)),
        comm_kernels=int(np.count_nonzero(cls == COMM)),
        span_us=us["span"],
        busy_us=us["busy"],
        idle_us=us["span"] - us["busy"],
        comp_us=us["comp"],
        comm_us=us["comm"],
        memory_us=us["memory"],
        overlap_us=us["overlap"],
    )


def stream_idle(trace: Trace, rows: _Rows | None = None) -> list[dict[str, Any]]:
    """Per GPU stream: GPU ops, busy, span and idle time (µs), and what ran there.

    One dict per stream with GPU ops among ``rows`` (default all), ordered by
    device and stream: ``device``, ``stream``, ``gpu_ops``, ``comm_kernels``,
    ``busy_us`` (union of its ops), ``span_us`` (first start to last end),
    ``idle_us`` (span minus busy: the gaps between its ops) and ``idle_pct``
    (of its span).
    """
    rows = link(trace).gpu_ops if rows is None else rows
    cls = op_classes(trace, rows)
    lane = trace.lane[rows]
    s, e = trace.ts_ns[rows], trace.end_ns[rows]
    out = []
    for k in np.unique(lane):
        on = lane == k
        span = int(e[on].max() - s[on].min())
        busy = _union_ns(s[on], e[on])
        ln = trace.lanes[int(k)]
        out.append(
            {
                "device": ln.device,
                "stream": ln.stream,
                "gpu_ops": int(np.count_nonzero(on)),
                "comm_kernels": int(np.count_nonzero(on & (cls == COMM))),
                "busy_us": busy / 1e3,
                "span_us": span / 1e3,
                "idle_us": (span - busy) / 1e3,
                "idle_pct": 100 * (span - busy) / span if span else 0.0,
            }
        )
    out.sort(key=lambda r: (r["device"], r["stream"]))
    return out
