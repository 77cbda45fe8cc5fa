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
* **idle gap**: an interval on a device between two GPU ops where nothing ran
  (found and explained in :mod:`tracereader._gaps`).
* **step verdict**: how much of a step's span the GPU sat idle. Steps tile
  the GPU's timeline: a step's span starts at the start of its
  ``ProfilerStep`` CPU range, or where the previous step's span ended if that
  is later (the CPU ran ahead), and ends at the later of its CPU end and the
  end of the last GPU op the step launched. The GPU's busy time in it is the
  union of all GPU activity there, so the steps' busy times add up to the
  trace's GPU busy time inside them, each GPU op counted once (with one
  stream, exactly the work the step launched). ``GPU-bound`` at
  ``GPU_BOUND_BUSY`` (95 %) busy or more, ``CPU-bound`` under
  ``CPU_BOUND_BUSY`` (50 %), ``balanced`` in between
  (:class:`StepTime`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ._events import LAUNCH_KINDS, Kind, Trace, cached, kind_mask, name_mask
from ._intervals import Window, gpu_intervals, launched_in, union
from ._link import GRAPH_LAUNCH_APIS, link

__all__ = [
    "LaunchTable",
    "BALANCED",
    "CPU_BOUND",
    "CPU_BOUND_BUSY",
    "GPU_BOUND",
    "GPU_BOUND_BUSY",
    "NO_GPU_ACTIVITY",
    "NO_GPU_WORK",
    "VERDICTS",
    "StepTime",
    "gpu_busy_us",
    "launches",
    "step_times",
    "summary",
]


@dataclass
class LaunchTable:
    """One row per GPU op: how it was launched and how long that took.

    Columns are lists/arrays of equal length. Latencies are NaN for GPU ops
    whose launch call is missing. For ``cudaGraphLaunch`` rows (``graph`` is
    True) every kernel of the graph shares one call, so only the graph's first
    kernel has a meaningful launch-to-start; :meth:`by_api` uses only that one.
    """

    gpu_op: npt.NDArray[np.int64]
    name: list[str]
    kind: list[str]
    api: list[str]
    op: list[str]
    step: list[str]
    launch_to_start_us: npt.NDArray[np.float64]
    queue_delay_us: npt.NDArray[np.float64]
    call_us: npt.NDArray[np.float64]
    graph: npt.NDArray[np.bool_]
    first_of_call: npt.NDArray[np.bool_]

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


def _latencies(
    trace: Trace, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Launch call, launch-to-start and first-of-call flag for GPU ops ``rows``.

    The call is -1 and launch-to-start (µs) NaN for ops without a launch
    call; the flag marks the first op (by start) of each call.
    """
    call = link(trace).launch[rows]
    has = call >= 0
    gpu_ts = trace.ts_ns[rows]
    # Subtract in int64 first: absolute ns timestamps do not fit a float exactly.
    to_start = np.where(has, (gpu_ts - trace.ts_ns[np.maximum(call, 0)]) / 1e3, np.nan)
    first = np.ones(len(rows), dtype=bool)
    linked = np.flatnonzero(has)
    order = linked[np.lexsort((gpu_ts[linked], call[linked]))]
    first[order[1:][call[order[1:]] == call[order[:-1]]]] = False
    return call, to_start, first & has


def launches(trace: Trace, window: Window | None = None) -> LaunchTable:
    """Launch latencies of every GPU op (optionally those *launched* in ``window``)."""
    ln = link(trace)
    rows = ln.gpu_ops
    if window is not None:
        rows = rows[launched_in(trace, rows, window)]
    call, to_start, first = _latencies(trace, rows)
    has = call >= 0
    c = np.maximum(call, 0)
    nan = np.full(len(rows), np.nan)
    queue = np.where(has, (trace.ts_ns[rows] - trace.end_ns[c]) / 1e3, nan)
    call_us = np.where(has, trace.dur_ns[c] / 1e3, nan)
    names = np.array(trace.names + [""], dtype=object)
    blank = len(trace.names)
    api = names[np.where(has, trace.name_id[c], blank)].tolist()
    iss = np.where(has, ln.issuer[c], -1)
    op = names[np.where(iss >= 0, trace.name_id[np.maximum(iss, 0)], blank)].tolist()
    graph = np.array(["GraphLaunch" in a for a in api], dtype=bool)
    kinds = np.array([k.name.lower() for k in Kind], dtype=object)
    steps = np.array([s.name for s in trace.steps] + [""], dtype=object)
    return LaunchTable(
        gpu_op=rows,
        name=names[trace.name_id[rows]].tolist(),
        kind=kinds[trace.kind[rows]].tolist(),
        api=api,
        op=op,
        step=steps[ln.step[rows]].tolist(),  # -1 (no step): the "" at the end
        launch_to_start_us=to_start,
        queue_delay_us=queue,
        call_us=call_us,
        graph=graph,
        first_of_call=first,
    )


def _busy_ns(
    trace: Trace, rows: npt.NDArray[np.int64], device: int | None, window: Window | None
) -> int:
    rows, s, e, dev = gpu_intervals(trace, rows, window)
    total = 0
    for d in np.unique(dev):
        if device is not None and d != device:
            continue
        a, b = union(s[dev == d], e[dev == d])
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


# ---------------------------------------------------------------------- steps
#: A step is ``GPU-bound`` when the GPU was busy for at least this share of the
#: step's span: it (almost) never waited, so the GPU work sets the pace.
GPU_BOUND_BUSY = 0.95
#: A step is ``CPU-bound`` when the GPU was busy for less than this share of
#: the step's span: it mostly waited for the CPU (launch overhead, host syncs,
#: data loading). Between the two thresholds a step is ``balanced``.
CPU_BOUND_BUSY = 0.50
#: The verdict words, from the GPU's side to the CPU's, then a step without GPU work.
GPU_BOUND, BALANCED, CPU_BOUND, NO_GPU_WORK = "GPU-bound", "balanced", "CPU-bound", "no GPU work"
VERDICTS = (GPU_BOUND, BALANCED, CPU_BOUND, NO_GPU_WORK)
#: What to say about a trace that holds no GPU activity at all.
NO_GPU_ACTIVITY = (
    "no GPU activity in this trace: record one with activities=[ProfilerActivity.CPU, "
    "ProfilerActivity.CUDA] on a machine with a GPU"
)


def step_verdict(busy_share: float) -> str:
    """The verdict for a step whose GPU was busy ``busy_share`` (0 to 1) of its span.

    ``GPU-bound`` at ``GPU_BOUND_BUSY`` or more, ``CPU-bound`` under
    ``CPU_BOUND_BUSY``, ``balanced`` in between.
    """
    if busy_share >= GPU_BOUND_BUSY:
        return GPU_BOUND
    return CPU_BOUND if busy_share < CPU_BOUND_BUSY else BALANCED


@dataclass
class StepTime:
    """CPU and GPU time of one ``ProfilerStep``, and whether the GPU waited in it.

    ``cpu_us`` is the step's range on the CPU. ``gpu_busy_us`` is the busy time
    (union of intervals) of the GPU ops *launched* during the step, wherever
    they ran.

    The verdict reads the GPU's idle time inside the step. The step's *span*
    (``span_start_ns`` to ``span_end_ns``) starts at the start of its
    ``ProfilerStep`` CPU range, or at the end of the previous step's span when
    that is later (the CPU ran ahead and the GPU was still busy with the
    previous step's work), and ends at the later of the CPU range's end and
    the end of the last GPU op the step launched. The spans of successive
    steps never overlap, so no GPU time counts in two steps. ``span_busy_us``
    is the union of *all* GPU activity inside the span (kernels, memcpys,
    memsets, on any device: the time at least one GPU was busy; with one
    stream, the work the step launched); ``gpu_idle_us`` is the span minus
    that, and ``busy_share`` the busy part of the span. ``verdict`` is

    * ``"GPU-bound"`` when the GPU was busy for at least
      ``GPU_BOUND_BUSY`` (95 %) of the span: it never waits, so speed up
      the GPU work (the trace cannot tell whether arithmetic or memory limits
      it);
    * ``"CPU-bound"`` (also called overhead-bound) when it was busy for less
      than ``CPU_BOUND_BUSY`` (50 %): it mostly waits for the CPU (launch
      overhead, host syncs, data loading);
    * ``"balanced"`` in between: both sides matter, read ``gpu_idle_us``;
    * ``"no GPU work"`` when the step ran no GPU op of its own and either
      launched nothing or nothing ran on a GPU during it (a CPU-only trace).

    A pipelined step, whose CPU runs ahead and whose kernels queue behind the
    previous step's, is GPU-bound: its span starts when the previous step's
    GPU work ends, and its own kernels fill it.
    """

    name: str
    start_ns: int
    end_ns: int
    cpu_us: float
    gpu_busy_us: float
    gpu_ops: int
    kernels: int
    launches: int
    span_end_ns: int
    span_busy_us: float
    span_start_ns: int | None = None  # None: the CPU start (``start_ns``)

    @property
    def window(self) -> tuple[int, int]:
        """The span as ``(start_ns, end_ns)``."""
        start = self.start_ns if self.span_start_ns is None else self.span_start_ns
        return start, max(self.span_end_ns, self.end_ns, start)

    @property
    def span_us(self) -> float:
        """From the span's start (CPU start, or the previous span's end) to its end."""
        start, end = self.window
        return (end - start) / 1e3

    @property
    def gpu_idle_us(self) -> float:
        """Time inside the span when no GPU ran anything."""
        return max(self.span_us - self.span_busy_us, 0.0)

    @property
    def busy_share(self) -> float:
        """The share (0 to 1) of the span during which a GPU was busy.

        A step whose whole GPU work ran inside the previous step's span (an
        empty span of its own) counts as busy throughout.
        """
        if self.span_us <= 0:
            return 1.0 if self.gpu_ops else 0.0
        return min(self.span_busy_us / self.span_us, 1.0)

    @property
    def gpu_fraction(self) -> float:
        """``gpu_busy_us / cpu_us``, the step's own GPU work against its CPU range.

        Above 1 when the work outlasts the range. Not what the verdict reads.
        """
        return self.gpu_busy_us / self.cpu_us if self.cpu_us else 0.0

    @property
    def verdict(self) -> str:
        if not self.gpu_ops and (not self.launches or not self.span_busy_us):
            return NO_GPU_WORK
        return step_verdict(self.busy_share)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cpu_us": round(self.cpu_us, 3),
            "gpu_busy_us": round(self.gpu_busy_us, 3),
            "gpu_ops": self.gpu_ops,
            "kernels": self.kernels,
            "launches": self.launches,
            "span_us": round(self.span_us, 3),
            "gpu_idle_us": round(self.gpu_idle_us, 3),
            "busy_share": round(self.busy_share, 4),
            "verdict": self.verdict,
        }


def _covered_ns(seg_s: npt.NDArray[np.int64], seg_e: npt.NDArray[np.int64], a: int, b: int) -> int:
    """How much of ``[a, b)`` the disjoint sorted segments ``[seg_s, seg_e)`` cover."""
    i = int(np.searchsorted(seg_e, a, side="right"))
    j = int(np.searchsorted(seg_s, b, side="left"))
    if j <= i:
        return 0
    return int((np.minimum(seg_e[i:j], b) - np.maximum(seg_s[i:j], a)).sum())


def step_times(trace: Trace) -> list[StepTime]:
    """Per ``ProfilerStep``: CPU range, GPU busy time of its launches, counts, verdict.

    Also each step's span and the GPU's idle time inside it, which the verdict
    reads (see :class:`StepTime`). Worked out once per trace; each call
    returns copies.
    """
    return [replace(st) for st in cached(trace, "step_times", lambda: _step_times(trace))]


def _step_times(trace: Trace) -> list[StepTime]:
    ln = link(trace)
    out = []
    step_of_op = ln.step[ln.gpu_ops]
    step_of_call = ln.step[ln.launch_calls]
    _, s_all, e_all, _ = gpu_intervals(trace, ln.gpu_ops, None)
    seg_s, seg_e = union(s_all, e_all)  # every GPU op, every device: "some GPU busy"
    prev_end = None  # where the previous step's span ended
    for k, st in enumerate(trace.steps):
        ops = ln.gpu_ops[step_of_op == k]
        start = st.start_ns if prev_end is None else max(st.start_ns, prev_end)
        span_end = max(st.end_ns, int(trace.end_ns[ops].max()) if len(ops) else st.end_ns, start)
        prev_end = span_end
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
                span_end_ns=span_end,
                span_busy_us=_covered_ns(seg_s, seg_e, start, span_end) / 1e3,
                span_start_ns=start,
            )
        )
    return out


def summary(trace: Trace) -> dict[str, Any]:
    """The trace at a glance, as one JSON-ready dict.

    Keys: ``source``, ``parser``, ``repairs``, ``events``, ``duration_us``,
    ``cpu_threads`` (threads with CPU events), ``gpu_streams`` (streams with
    GPU ops), ``devices``, ``kernels``, ``memcpys``,
    ``memsets``, ``gpu_ops`` (their sum), ``mtia_device_ops`` (MTIA device
    ops, which are not read as GPU work yet), ``linked_gpu_ops`` (GPU ops whose
    launch call was found), ``launch_calls``, ``launch_apis`` (API name ->
    GPU ops it launched), ``graph_launches`` (calls of any graph-launch API:
    ``cudaGraphLaunch``, ``cuGraphLaunch``, ``hipGraphLaunch``),
    ``issuer_methods``, ``gpu_busy_us``, ``launch_to_start_us_median``,
    ``steps`` (names) and ``step_times`` (per step dicts, see :class:`StepTime`).
    """
    ln = link(trace)
    k = trace.kind
    cpu_kinds = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON, Kind.RUNTIME, Kind.DRIVER)
    threads = np.zeros(len(trace.lanes), dtype=bool)
    threads[trace.lane[kind_mask(trace, cpu_kinds)]] = True
    streams = [trace.lanes[i] for i in np.unique(trace.lane[ln.gpu_ops])]
    call_of_op = ln.launch[ln.gpu_ops]  # GPU ops per launch API name, from the linker
    api_ids, counts = np.unique(trace.name_id[call_of_op[call_of_op >= 0]], return_counts=True)
    apis: dict[str, int] = {
        trace.names[i]: int(n) for i, n in zip(api_ids.tolist(), counts, strict=True)
    }
    graph_calls = kind_mask(trace, LAUNCH_KINDS) & name_mask(trace, GRAPH_LAUNCH_APIS)
    graph = int(np.count_nonzero(graph_calls))
    _, to_start, is_first = _latencies(trace, ln.gpu_ops)
    first = to_start[is_first]  # one launch-to-start per launch call
    end = int(trace.end_ns.max()) if len(trace) else 0
    return {
        "source": trace.source,
        "parser": trace.parser,
        "repairs": list(trace.repairs),
        "events": len(trace),
        "duration_us": (end - trace.t0_ns) / 1e3,
        "cpu_threads": int(np.count_nonzero(threads)),
        "gpu_streams": len(streams),
        "devices": sorted({lane.device for lane in streams}),
        "kernels": int(np.count_nonzero(k == Kind.KERNEL)),
        "memcpys": int(np.count_nonzero(k == Kind.MEMCPY)),
        "memsets": int(np.count_nonzero(k == Kind.MEMSET)),
        "gpu_ops": int(len(ln.gpu_ops)),
        "mtia_device_ops": trace.mtia_device_ops,
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
