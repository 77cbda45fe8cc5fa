"""The CPU waiting for the GPU: host syncs, told apart from work.

A synchronize call (``cudaStreamSynchronize`` under ``aten::item`` >
``aten::_local_scalar_dense``, ``cudaDeviceSynchronize``, the sync of a
``.cpu()`` copy) blocks the CPU thread until the GPU has run what was queued.
Its time is waiting, not work: it grows when the CPU gets ahead (faster
launches, a compiled model) as much as when the GPU gets slower. Whether it
cost anything shows on the GPU: busy during the wait, the GPU ran queued work
and lost nothing then; what it loses is the idle right after, while the CPU
launches again (the gap table's ``sync`` cause).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._events import Kind, Trace
from ._intervals import Window, gpu_intervals, union
from ._link import SYNC_APIS, link

__all__ = ["WAIT_OPS", "Waits", "is_wait", "wait_rows", "waits"]

#: Ops that are a host sync whole: their time is the CPU waiting for the GPU.
WAIT_OPS = ("aten::item", "aten::_local_scalar_dense", *SYNC_APIS)
#: The label the tables and the diff give that time.
WAITING = "CPU waiting for the GPU"


def is_wait(name: str) -> bool:
    """Whether op ``name`` is a host sync as a whole (``aten::item``, ``cudaStreamSynchronize``...)."""
    return name in WAIT_OPS


def wait_rows(trace: Trace, window: Window | None = None) -> npt.NDArray[np.int64]:
    """Rows of the sync calls (runtime or driver) that start inside ``window``."""
    ids = [i for i, n in enumerate(trace.names) if n in SYNC_APIS]
    api = np.isin(trace.kind, [Kind.RUNTIME, Kind.DRIVER])
    rows = np.flatnonzero(api & np.isin(trace.name_id, ids))
    if window is not None:
        rows = rows[(trace.ts_ns[rows] >= window[0]) & (trace.ts_ns[rows] < window[1])]
    return rows


@dataclass(frozen=True)
class Waits:
    """Sync calls in a window: how many, how long the CPU waited, and the GPU meanwhile.

    ``wait_us`` is the union of the calls' time; ``gpu_busy_us`` the part of
    it during which some GPU ran something.
    """

    calls: int
    wait_us: float
    gpu_busy_us: float

    @property
    def gpu_busy_pct(self) -> float:
        return 100 * self.gpu_busy_us / self.wait_us if self.wait_us > 0 else 0.0


def waits(trace: Trace, window: Window | None = None) -> Waits:
    """The sync calls starting inside ``window`` (the whole trace: ``None``)."""
    rows = wait_rows(trace, window)
    if not len(rows):
        return Waits(0, 0.0, 0.0)
    w0, w1 = union(trace.ts_ns[rows], trace.end_ns[rows])
    wait_ns = float((w1 - w0).sum())
    busy_ns = 0.0
    ops = link(trace).gpu_ops
    if len(ops):
        _, s, e, _ = gpu_intervals(trace, ops, (int(w0.min()), int(w1.max())))
        g0, g1 = union(s, e)
        # GPU busy time before t: the busy intervals ending before t, and the part
        # of the one t falls in; each wait's share is the difference at its ends.
        done = np.concatenate(([0], np.cumsum(g1 - g0)))
        for overlap_ns in (
            _busy_before(g0, g1, done, w1) - _busy_before(g0, g1, done, w0)
        ).tolist():
            busy_ns += float(overlap_ns)  # summed in order, as one wait after another
    return Waits(len(rows), wait_ns / 1e3, busy_ns / 1e3)


def _busy_before(
    g0: npt.NDArray[np.int64],
    g1: npt.NDArray[np.int64],
    done: npt.NDArray[np.int64],
    t: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Busy ns before each time ``t``: the part of the sorted, disjoint ``[g0, g1)`` before it.

    ``done[k]`` is the length of the first ``k`` intervals.
    """
    if not len(g0):
        return np.zeros(len(t), dtype=np.int64)
    k = np.searchsorted(g0, t, "right") - 1  # the last interval starting at or before t
    inside = np.minimum(t, g1[np.maximum(k, 0)]) - g0[np.maximum(k, 0)]
    return np.where(k >= 0, done[np.maximum(k, 0)] + inside, 0)
