"""Signs that GPU work was cut out of a trace file (a trimmed or incomplete trace).

Kineto writes each ``record_function`` range twice: on the CPU thread, and
as a ``gpu_user_annotation`` on the GPU spanning the GPU ops it launched. A
GPU annotation of some length with no GPU op under it means the ops were
there when the profiler wrote the range and are gone from the file: it was
trimmed (to make it smaller) or cut short. Such a trace understates GPU
busy time and overstates idle time.
"""

from __future__ import annotations

import numpy as np

from ._events import Kind, Trace
from ._intervals import gpu_intervals, union
from ._link import link

__all__ = ["EMPTY_MIN_US", "empty_annotations", "trimmed_note"]

#: A GPU annotation at least this long (µs) with no GPU op under it is a sign.
EMPTY_MIN_US = 100.0


def empty_annotations(trace: Trace) -> list[tuple[str, float]]:
    """GPU annotations of :data:`EMPTY_MIN_US` or more with no GPU op of their device.

    ``(name, duration_us)``, longest first.
    """
    ann = trace.where(kind=Kind.GPU_ANNOTATION)
    ann = ann[trace.dur_ns[ann] >= EMPTY_MIN_US * 1e3]
    if len(trace.steps):  # only inside the profiled steps: a file may keep some steps whole
        from ._measure import step_times

        spans = [st.window for st in step_times(trace)]
        lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
        inside = np.minimum(trace.end_ns[ann], hi) - np.maximum(trace.ts_ns[ann], lo)
        ann = ann[inside > 0.5 * trace.dur_ns[ann]]  # mostly inside the steps
    if not len(ann):
        return []
    devices = np.array([ln.device for ln in trace.lanes], dtype=np.int64)
    _, s, e, dev = gpu_intervals(trace, link(trace).gpu_ops, None)
    out = []
    for d in np.unique(devices[trace.lane[ann]]).tolist():
        mine = ann[devices[trace.lane[ann]] == d]
        u0, u1 = union(s[dev == d], e[dev == d])
        k = np.searchsorted(u1, trace.ts_ns[mine], "right")  # first segment ending after start
        covered = k < len(u0)
        covered[covered] = u0[k[covered]] < trace.end_ns[mine][covered]
        out += [(trace.name(int(r)), float(trace.dur_ns[r]) / 1e3) for r in mine[~covered]]
    return sorted(out, key=lambda x: (-x[1], x[0]))


def trimmed_note(trace: Trace) -> str | None:
    """One sentence saying the trace looks trimmed, and why; ``None`` when it does not."""
    empty = empty_annotations(trace)
    if not empty:
        return None
    named = ", ".join(f"{n} {us / 1e3:,.1f} ms" for n, us in empty[:4])
    more = f" and {len(empty) - 4} more" if len(empty) > 4 else ""
    return (f"looks trimmed: {len(empty)} GPU-side record_function range(s) ({named}{more}) "
            "hold no GPU op, so GPU work was cut from the file; GPU busy time reads low and "
            "idle time high")  # fmt: skip
