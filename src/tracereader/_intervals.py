"""Time windows and unions of intervals, shared by measure, gaps and tables.

A *window* is ``(start_ns, end_ns)`` in the trace's absolute nanoseconds. GPU
busy time (:mod:`tracereader._measure`) and idle gaps
(:mod:`tracereader._gaps`) both start from the same clipped GPU-op intervals
and their union; tables and launch latencies keep the GPU ops *launched*
inside a window.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._events import Trace
from ._link import link

__all__ = ["Window", "gpu_intervals", "launched_in", "union"]

Window = tuple[int, int]
_Times = npt.NDArray[np.int64]  # ns


def union(starts: _Times, ends: _Times) -> tuple[_Times, _Times]:
    """Union of intervals ``[starts, ends)`` as disjoint segments, sorted by start."""
    if not len(starts):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], e[last]


def gpu_intervals(
    trace: Trace, rows: npt.NDArray[np.int64], window: Window | None
) -> tuple[npt.NDArray[np.int64], _Times, _Times, npt.NDArray[np.int64]]:
    """The intervals of GPU ops ``rows``, clipped to ``window``, with their device.

    Returns ``(rows, start_ns, end_ns, device)``; ops that fall outside the
    window (nothing left after clipping) are dropped from all four.
    """
    s, e = trace.ts_ns[rows], trace.end_ns[rows]
    if window is not None:
        s, e = np.maximum(s, window[0]), np.minimum(e, window[1])
        keep = e > s
        rows, s, e = rows[keep], s[keep], e[keep]
    dev = np.array([ln.device for ln in trace.lanes], dtype=np.int64)[trace.lane[rows]]
    return rows, s, e, dev


def launched_in(trace: Trace, rows: npt.NDArray[np.int64], window: Window) -> npt.NDArray[np.bool_]:
    """Mask over GPU-op ``rows``: launched (unlinked ones: started) inside ``window``."""
    call = link(trace).launch[rows]
    when: _Times = np.where(call >= 0, trace.ts_ns[np.maximum(call, 0)], trace.ts_ns[rows])
    return (when >= window[0]) & (when < window[1])
