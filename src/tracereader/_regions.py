"""Time per ``record_function`` region: a training step's forward, backward, optimizer.

A region is a ``user_annotation`` span (what ``torch.profiler.record_function`` and
``torch.autograd.profiler.record_function`` write). Its GPU work is every GPU op
*launched* while it was open, from any CPU thread: the backward's kernels are
launched by the autograd engine's thread while the main thread waits inside its
``backward`` region, and they count for that region. A region's GPU busy time is the
union of those ops' intervals, whenever they ran (often after the region closed on
the CPU: the CPU runs ahead of the GPU).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._events import Kind, Trace
from ._intervals import Window, launched_in
from ._link import link
from ._measure import _busy_ns
from ._tables import Table

__all__ = ["RegionTime", "region_table", "region_times"]


@dataclass(frozen=True)
class RegionTime:
    """One open-to-close span of a region and the GPU work launched inside it."""

    name: str
    step: str  # the ProfilerStep it began in, "" outside any
    thread: str
    start_us: float  # from the trace's start
    cpu_us: float  # how long the region was open on its CPU thread
    launches: int  # launch calls (any CPU thread) made while it was open
    gpu_ops: int
    kernels: int
    gpu_busy_us: float  # union of its GPU ops' intervals
    gpu_end_us: float  # when its last GPU op ended, from the trace's start (nan: none)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _candidates(trace: Trace, names: set[str] | None) -> list[int]:
    rows = [
        int(i)
        for i in trace.where(kind=Kind.USER_ANNOTATION)
        if not trace.name(int(i)).startswith("ProfilerStep#")
        and (names is None or trace.name(int(i)) in names)
    ]
    if names is not None:
        return rows
    # Without names: the outermost regions only, nested ones (a compiled graph's
    # annotations inside "forward", on any thread) left out.
    start, end = trace.ts_ns, trace.end_ns
    rows.sort(key=lambda i: (int(start[i]), -int(end[i])))
    out: list[int] = []
    open_until = -1
    for i in rows:  # by start: a region ending inside the one before is nested in it
        if int(end[i]) > open_until:
            out.append(i)
            open_until = int(end[i])
    return out


def region_times(
    trace: Trace, names: Iterable[str] | None = None, window: Window | None = None
) -> list[RegionTime]:
    """Every span of the named regions, in time order, with its GPU work.

    ``names``: which regions (default: every outermost one but the profiler steps);
    ``window``: only spans that begin inside it.
    """
    wanted = set(names) if names is not None else None
    ln = link(trace)
    ops = ln.gpu_ops
    is_kernel = trace.kind[ops] == Kind.KERNEL
    calls = ln.launch_calls
    steps = trace.steps
    out = []
    for i in _candidates(trace, wanted):
        lo, hi = int(trace.ts_ns[i]), int(trace.end_ns[i])
        if window is not None and not (window[0] <= lo < window[1]):
            continue
        mine = launched_in(trace, ops, (lo, hi))
        rows = ops[mine]
        ends = trace.end_ns[rows]
        step = next((s.name for s in steps if s.start_ns <= lo < s.end_ns), "")
        out.append(
            RegionTime(
                name=trace.name(i),
                step=step,
                thread=trace.lanes[int(trace.lane[i])].label,
                start_us=float(trace.rel_us(lo)),
                cpu_us=(hi - lo) / 1e3,
                launches=int(
                    np.count_nonzero((trace.ts_ns[calls] >= lo) & (trace.ts_ns[calls] < hi))
                ),
                gpu_ops=int(len(rows)),
                kernels=int(np.count_nonzero(is_kernel[mine])),
                gpu_busy_us=_busy_ns(trace, rows, None, None) / 1e3,
                gpu_end_us=float(trace.rel_us(int(ends.max()))) if len(rows) else float("nan"),
            )
        )
    return out


def region_table(
    trace: Trace, names: Iterable[str] | None = None, window: Window | None = None
) -> Table:
    """:func:`region_times` as a table, one row per region span."""
    cols = ["step", "region", "thread", "start_us", "cpu_us", "launches", "kernels",
            "gpu_busy_us", "gpu_end_us"]  # fmt: skip
    rows = [
        [r.step, r.name, r.thread, r.start_us, r.cpu_us, r.launches, r.kernels, r.gpu_busy_us,
         r.gpu_end_us]
        for r in region_times(trace, names, window)
    ]  # fmt: skip
    return Table(
        cols,
        rows,
        "Regions (record_function): CPU time open, and the GPU work launched while open",
        name_columns=(),
    )
