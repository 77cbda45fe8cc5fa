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
        for a, b in zip(w0.tolist(), w1.tolist(), strict=True):
            busy_ns += float(np.clip(np.minimum(g1, b) - np.maximum(g0, a), 0, None).sum())
    return Waits(len(rows), wait_ns / 1e3, busy_ns / 1e3)
