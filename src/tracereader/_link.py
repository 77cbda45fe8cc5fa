"""Link GPU work back to the CPU code that caused it.

A GPU op (kernel, memcpy, memset) is joined to the CPU side in three hops:

1. **GPU op -> launch call.** The runtime/driver call (``cudaLaunchKernel``,
   ``cuLaunchKernel``, ``cudaGraphLaunch``, ``cudaMemcpyAsync``...) carrying the
   same ``args.correlation``. One ``cudaGraphLaunch`` owns *many* GPU ops, all
   sharing its correlation.
2. **launch call -> issuing op.** The innermost ``cpu_op``/``user_annotation``
   that made the call: the op named by the call's ``External id``, accepted
   only when it runs on the same thread and contains the call in time (1 ns
   tolerance); otherwise the innermost enclosing op on the same thread.
   Old traces (torch 1.x) set ``External id`` to the call's own correlation,
   so the containment fallback is what links them.
3. **op -> context.** Every CPU event gets its innermost enclosing event on the
   same thread (``parent``, worked out when first read), Python frames
   included, which yields op stacks, ``nn.Module`` frames and the
   ``ProfilerStep`` a launch belongs to.

Flow events (``ac2g``) are not used: correlation ids are the reliable join.
Everything is computed with numpy over whole columns; the only loops run over
nesting depth, never over events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ._events import CPU_OP_KINDS, GPU_OP_KINDS, LAUNCH_KINDS, Region, Trace, cached, kind_mask

__all__ = ["GRAPH_LAUNCH_APIS", "LAUNCH_APIS", "SYNC_APIS", "Links", "link"]

#: Runtime/driver calls that put work on a GPU stream. Matched by prefix, so
#: versioned names such as ``cudaLaunchKernelExC_v11060`` count too.
LAUNCH_APIS = (
    "cudaLaunchKernel",  # also cudaLaunchKernelExC
    "cudaLaunchCooperativeKernel",
    "cuLaunchKernel",  # also cuLaunchKernelEx
    "cuLaunchCooperativeKernel",
    "cudaGraphLaunch",
    "cuGraphLaunch",
    "cudaMemcpy",  # cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2DAsync...
    "cudaMemset",
    "cuMemcpy",
    "cuMemset",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipModuleLaunchKernel",
    "hipGraphLaunch",
    "hipMemcpy",
    "hipMemset",
)
#: The launch APIs above that launch a whole graph (one call, many GPU ops).
GRAPH_LAUNCH_APIS = tuple(api for api in LAUNCH_APIS if "GraphLaunch" in api)
#: Calls that block the CPU thread until the GPU catches up.
SYNC_APIS = (
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
)
#: Tolerance for "contains" (Kineto rounds start and end independently).
TOL_NS = 1
METHODS = ("none", "external_id", "containment")

_Rows = npt.NDArray[np.int64]  # event rows (-1: none)


def _parents(trace: Trace) -> _Rows:
    """Innermost enclosing event on the same CPU lane (-1 for roots and GPU events).

    Events are sorted by start (longer first on ties), so an event's innermost
    container is the *nearest earlier* event on its lane whose end is not
    before its own. That "previous greater element" is found by pointer
    jumping: start each event at its predecessor and, while the candidate ends
    too early, jump to the candidate's own candidate. Everything skipped ends
    before the event does, so no container is ever jumped over.
    """
    n = len(trace)
    parent = np.full(n, -1, dtype=np.int64)
    cpu_lane = np.array([not ln.is_gpu for ln in trace.lanes], dtype=bool)
    if n == 0 or not cpu_lane.any():
        return parent
    order = _by_lane(trace, np.flatnonzero(cpu_lane))
    lane = trace.lane[order]
    end = trace.end_ns[order]
    p = np.arange(-1, len(order) - 1, dtype=np.int64)
    first = np.ones(len(order), dtype=bool)  # first event of its lane: no predecessor
    first[1:] = lane[1:] != lane[:-1]
    p[first] = -1
    # The first jump, for every event at once: its predecessor is the row before.
    too_early = np.zeros(len(order), dtype=bool)
    too_early[1:] = end[:-1] + TOL_NS < end[1:]
    active = np.flatnonzero(too_early & ~first)
    p[active] = p[p[active]]
    active = active[p[active] >= 0]
    while active.size:
        too_early = end[p[active]] + TOL_NS < end[active]
        active = active[too_early]
        p[active] = p[p[active]]
        active = active[p[active] >= 0]
    parent[order] = np.where(p >= 0, order[np.maximum(p, 0)], -1)
    return parent


def _cached_parents(trace: Trace) -> _Rows:
    """:func:`_parents`, computed once per trace."""
    return cached(trace, "parents", lambda: _parents(trace))


def _by_lane(trace: Trace, lanes: npt.NDArray[np.int64]) -> _Rows:
    """Rows of the events on ``lanes`` (ascending), grouped by lane, in time order."""
    if len(lanes) <= 8:  # a few CPU threads: one pass per lane beats a sort
        return np.concatenate([np.flatnonzero(trace.lane == k) for k in lanes])
    rows = np.flatnonzero(np.isin(trace.lane, lanes))
    return rows[np.argsort(trace.lane[rows], kind="stable")]


def _contains(trace: Trace, outer: _Rows, inner: _Rows) -> npt.NDArray[np.bool_]:
    """Per pair: ``outer[k]`` contains ``inner[k]`` on the same lane (``TOL_NS`` slack)."""
    ts, end = trace.ts_ns, trace.end_ns
    same_lane: npt.NDArray[np.bool_] = trace.lane[outer] == trace.lane[inner]
    return same_lane & (ts[outer] <= ts[inner]) & (end[inner] <= end[outer] + TOL_NS)


def _issuers(trace: Trace, calls: _Rows) -> tuple[_Rows, npt.NDArray[np.int8]]:
    """Issuing op and method code (see :data:`METHODS`) for each call row."""
    is_op = kind_mask(trace, CPU_OP_KINDS)
    found = np.full(len(calls), -1, dtype=np.int64)
    method = np.zeros(len(calls), dtype=np.int8)
    ops = np.flatnonzero(is_op & (trace.external_id >= 0))
    ops = ops[np.argsort(trace.external_id[ops], kind="stable")]
    op_ext = trace.external_id[ops]
    ext = trace.external_id[calls]
    lo = np.searchsorted(op_ext, ext, "left")
    hi = np.searchsorted(op_ext, ext, "right")
    has = (ext >= 0) & (hi > lo)
    one = np.flatnonzero(has & (hi - lo == 1))
    cand = ops[lo[one]]
    ok = _contains(trace, cand, calls[one])
    found[one[ok]] = cand[ok]
    for k in np.flatnonzero(has & (hi - lo > 1)):  # duplicated ids: rare, check each
        cands = ops[lo[k] : hi[k]]
        cands = cands[_contains(trace, cands, np.full(len(cands), calls[k]))]
        if cands.size:
            found[k] = cands[np.argmax(trace.ts_ns[cands])]
    method[found >= 0] = 1
    # Fallback: walk up the lane's containment tree to the nearest op.
    todo = np.flatnonzero(found < 0)
    if not todo.size:
        return found, method
    parent = _cached_parents(trace)
    cur = parent[calls[todo]]
    while todo.size:
        stop = (cur < 0) | is_op[np.maximum(cur, 0)]
        hit = stop & (cur >= 0)
        found[todo[hit]] = cur[hit]
        method[todo[hit]] = 2
        todo, cur = todo[~stop], parent[cur[~stop]]
    return found, method


def _every_issuer(trace: Trace) -> tuple[_Rows, npt.NDArray[np.int8]]:
    """:attr:`Links.issuer` and :attr:`Links.issuer_method`, over every event."""
    calls = np.flatnonzero(kind_mask(trace, LAUNCH_KINDS))
    issuer = np.full(len(trace), -1, dtype=np.int64)
    issuer_method = np.full(len(trace), -1, dtype=np.int8)
    issuer[calls], issuer_method[calls] = _issuers(trace, calls)
    return issuer, issuer_method


@dataclass
class Links:
    """The CPU <-> GPU joins of one trace. Arrays cover every event (-1: n/a).

    ``issuer``, ``issuer_method``, ``parent`` and ``gpu_ops_inside`` are
    computed the first time they are read, then kept with the trace: the
    summary, for one, needs none of them (``method`` looks up the issuing op
    of launch calls only, and needs ``parent`` only for calls whose
    ``External id`` names no op, as in torch 1.x traces).

    Attributes
    ----------
    launch : int64 array
        For each GPU op, the row of its launch call (same correlation).
    issuer : int64 array
        For each runtime/driver call, the innermost ``cpu_op`` or
        ``user_annotation`` that issued it.
    issuer_method : int8 array
        How :attr:`issuer` was found: 1 ``External id``, 2 containment,
        0 not found; -1 for events that are not runtime/driver calls.
    parent : int64 array
        For each CPU event, the innermost enclosing event on the same thread.
    step : int64 array
        Index into ``trace.steps`` of the ``ProfilerStep`` each event belongs
        to: by its *launch* time for GPU ops (unlinked ones: their own start),
        by its own start for CPU events.
    gpu_ops : int64 array
        Rows of every kernel, memcpy and memset.
    linked_gpu_ops : int
        GPU ops whose launch call was found.
    method : dict
        ``{"external_id": n, "containment": n, "none": n}`` over launch calls
        (runtime/driver calls that launched at least one GPU op).
    gpu_ops_inside : int64 array
        For each CPU event, how many GPU ops were launched inside it (itself
        and everything it encloses on its thread).
    """

    trace: Trace = field(repr=False)
    launch: npt.NDArray[np.int64]
    step: npt.NDArray[np.int64]
    gpu_ops: npt.NDArray[np.int64]
    linked_gpu_ops: int
    method: dict[str, int]
    # calls that launched GPU ops, by (lane, ts)
    launch_calls: npt.NDArray[np.int64] = field(repr=False)
    _by_call: tuple[_Rows, _Rows, _Rows] = field(repr=False)  # CSR call -> ops

    @property
    def issuer(self) -> _Rows:
        """Issuing op of each runtime/driver call (-1: none, or not a call)."""
        return self._issuers()[0]

    @property
    def issuer_method(self) -> npt.NDArray[np.int8]:
        """How :attr:`issuer` was found (see the class docstring)."""
        return self._issuers()[1]

    def _issuers(self) -> tuple[_Rows, npt.NDArray[np.int8]]:
        return cached(self.trace, "issuers", lambda: _every_issuer(self.trace))

    @property
    def parent(self) -> _Rows:
        """Innermost enclosing event on the same thread, per event (-1: none)."""
        return _cached_parents(self.trace)

    @property
    def gpu_ops_inside(self) -> _Rows:
        """GPU ops launched inside each CPU event (itself and what it encloses)."""
        return cached(self.trace, "gpu_ops_inside", self._gpu_ops_inside)

    def _gpu_ops_inside(self) -> _Rows:
        """Add each launch call's count of GPU ops to the call and every enclosing event."""
        parent = self.parent
        inside = np.zeros(len(self.trace), dtype=np.int64)
        call_rows, starts, _ = self._by_call
        counts = np.diff(starts)
        cur = call_rows.copy()
        while cur.size:
            np.add.at(inside, cur, counts)
            cur = parent[cur]
            keep = cur >= 0
            cur, counts = cur[keep], counts[keep]
        return inside

    def stack(self, i: int) -> list[int]:
        """Enclosing events of ``i``, outermost first.

        For a GPU op this is the stack of its launch call, ending with the call
        itself; for a CPU event, its enclosing events on the same thread.
        """
        i = int(i)
        if self.launch[i] >= 0:
            return [*self.stack(int(self.launch[i])), int(self.launch[i])]
        out: list[int] = []
        p = int(self.parent[i])
        while p >= 0:
            out.append(p)
            p = int(self.parent[p])
        return out[::-1]

    def launch_api(self, i: int) -> str:
        """Name of the call that launched GPU op ``i`` ("" when unlinked)."""
        row = int(self.launch[int(i)])
        return self.trace.name(row) if row >= 0 else ""

    def issuing_op(self, i: int) -> int:
        """Row of the op that issued GPU op ``i`` (-1 when unknown)."""
        row = int(self.launch[int(i)])
        return int(self.issuer[row]) if row >= 0 else -1

    def step_of(self, i: int) -> Region | None:
        """The ``ProfilerStep`` an event belongs to (GPU ops: by launch time)."""
        k = int(self.step[int(i)])
        return self.trace.steps[k] if k >= 0 else None

    def gpu_ops_of_call(self, call: int) -> npt.NDArray[np.int64]:
        """GPU ops launched by one runtime/driver call (many for a graph launch)."""
        calls, starts, ops = self._by_call
        k = int(np.searchsorted(calls, call))
        if k >= len(calls) or calls[k] != call:
            return np.empty(0, dtype=np.int64)
        return ops[starts[k] : starts[k + 1]]

    def gpu_ops_of(self, op_row: int) -> npt.NDArray[np.int64]:
        """GPU ops launched inside an event (an op, a Python frame, a range), recursively.

        These are the GPU ops of every launch call on the same thread that the
        event contains in time. Launches from other threads (the autograd
        thread during ``backward``) are not inside it.
        """
        t = self.trace
        op_row = int(op_row)
        calls = self.launch_calls
        lane = t.lane[calls]
        ts = t.ts_ns[calls]
        lo = np.searchsorted(lane, t.lane[op_row], "left")
        hi = np.searchsorted(lane, t.lane[op_row], "right")
        a = lo + np.searchsorted(ts[lo:hi], t.ts_ns[op_row], "left")
        b = lo + np.searchsorted(ts[lo:hi], t.end_ns[op_row], "right")
        inside = calls[a:b]
        inside = inside[_contains(t, np.full(len(inside), op_row), inside)]
        if not inside.size:
            return np.empty(0, dtype=np.int64)
        return np.sort(np.concatenate([self.gpu_ops_of_call(c) for c in inside]))


def _step_index(trace: Trace, when_ns: npt.NDArray[np.int64]) -> _Rows:
    steps = trace.steps
    out = np.full(len(when_ns), -1, dtype=np.int64)
    if not steps:
        return out
    starts = np.array([s.start_ns for s in steps], dtype=np.int64)
    ends = np.array([s.end_ns for s in steps], dtype=np.int64)
    k = np.searchsorted(starts, when_ns, "right") - 1
    ok = (k >= 0) & (when_ns < ends[np.maximum(k, 0)])
    out[ok] = k[ok]
    return out


def link(trace: Trace) -> Links:
    """Link every GPU op to its launch call, issuing op and stack (cached).

    Parameters
    ----------
    trace
        A loaded trace. The result is computed once and kept with the trace.

    Returns
    -------
    Links
        Arrays over all events; see :class:`Links`.
    """
    return cached(trace, "links", lambda: _link(trace))


def _link(trace: Trace) -> Links:
    n = len(trace)
    gpu_ops = np.flatnonzero(kind_mask(trace, GPU_OP_KINDS))
    calls = np.flatnonzero(kind_mask(trace, LAUNCH_KINDS) & (trace.correlation >= 0))

    # 1. GPU op -> launch call, joined on correlation (first call if duplicated).
    launch = np.full(n, -1, dtype=np.int64)
    by_corr = calls[np.argsort(trace.correlation[calls], kind="stable")]
    corr_sorted = trace.correlation[by_corr]
    corr = trace.correlation[gpu_ops]
    pos = np.searchsorted(corr_sorted, corr, "left")
    ok = (corr >= 0) & (pos < len(corr_sorted))
    ok[ok] = corr_sorted[pos[ok]] == corr[ok]
    launch[gpu_ops[ok]] = by_corr[pos[ok]]

    linked = gpu_ops[ok]
    owners = launch[linked]
    order = np.lexsort((linked, owners))
    owners_sorted, ops_sorted = owners[order], linked[order]
    call_rows, starts = np.unique(owners_sorted, return_index=True)
    starts = np.append(starts, len(ops_sorted)).astype(np.int64)
    launch_calls = call_rows[np.lexsort((trace.ts_ns[call_rows], trace.lane[call_rows]))]

    # 2. launch call -> issuing op: here how it was found, for the calls that
    #    launched GPU ops; Links.issuer does every runtime/driver call when read.
    _, codes = _issuers(trace, call_rows)
    method = {name: int(np.count_nonzero(codes == METHODS.index(name)))
              for name in ("external_id", "containment", "none")}  # fmt: skip

    when = trace.ts_ns.copy()
    when[linked] = trace.ts_ns[owners]
    return Links(
        trace=trace,
        launch=launch,
        step=_step_index(trace, when),
        gpu_ops=gpu_ops,
        linked_gpu_ops=int(ok.sum()),
        method=method,
        launch_calls=launch_calls,
        _by_call=(call_rows, starts, ops_sorted),
    )
