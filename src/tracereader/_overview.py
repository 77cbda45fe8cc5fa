"""What the report's overview reads: the GPU's time per step, split by kind of work.

Per step (its span, as the verdict reads it: :class:`~tracereader.StepTime`;
successive spans never overlap, so no GPU time counts in two steps), the time
at least one GPU ran each kind of work: computation kernels,
memcpys, memsets, communication kernels (``nccl``/``rccl`` in the name), and
the time no GPU ran anything (idle). Each kind is a union of intervals over
every device, so one kind counts once however many streams run it; two kinds
running at once (a copy beside a kernel) both count, so the kinds can add up
to more than the busy time.

Also the per-kernel detail the report lists (call times, launching op), and
:func:`ranks_or_repeats`, which tells the ranks of one job from repeats of
one run by the traces' own metadata.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._classify import kernel_class
from ._comm import COMM, op_classes
from ._events import Kind, Trace
from ._intervals import Window, gpu_intervals, launched_in, union
from ._link import link
from ._measure import StepTime, step_times
from ._tables import Table, kernel_table

__all__ = ["GpuSplit", "gpu_split", "kernel_detail", "ranks_or_repeats"]

#: The kinds of GPU work the split reports, in order.
SPLIT_KINDS = ("computation", "memcpy", "memset", "communication")


@dataclass
class GpuSplit:
    """One step's (or the whole trace's) GPU time by kind of work, in µs.

    ``span_us`` is the window; ``busy_us`` the time some GPU ran anything;
    ``idle_us = span_us - busy_us``; ``by_kind`` maps each of
    :data:`SPLIT_KINDS` to the time some GPU ran that kind. ``step`` is the
    :class:`~tracereader.StepTime` (``None`` for the whole trace).
    """

    name: str
    span_us: float
    cpu_us: float
    busy_us: float
    by_kind: dict[str, float]
    step: StepTime | None = None

    @property
    def idle_us(self) -> float:
        return max(self.span_us - self.busy_us, 0.0)

    @property
    def busy_share(self) -> float:
        return min(self.busy_us / self.span_us, 1.0) if self.span_us > 0 else 0.0


def _covered_us(trace: Trace, rows: npt.NDArray[np.int64], window: Window) -> float:
    _, s, e, _ = gpu_intervals(trace, rows, window)
    a, b = union(s, e)
    return float((b - a).sum()) / 1e3


def _kinds(trace: Trace) -> dict[str, npt.NDArray[np.int64]]:
    ops = link(trace).gpu_ops
    kind = trace.kind[ops]
    comm = op_classes(trace, ops) == COMM
    return {
        "computation": ops[(kind == Kind.KERNEL) & ~comm],
        "memcpy": ops[kind == Kind.MEMCPY],
        "memset": ops[kind == Kind.MEMSET],
        "communication": ops[comm],
    }


def gpu_split(trace: Trace) -> list[GpuSplit]:
    """Per ``ProfilerStep`` the GPU's time by kind of work, then the total.

    The last entry, named ``"total"``, sums the steps; without steps it is the
    whole trace, from its first GPU op's start to its last one's end (and
    ``cpu_us`` is the trace's length).
    """
    ops = link(trace).gpu_ops
    kinds = _kinds(trace)
    out = []
    for st in step_times(trace):
        w = st.window
        by = {k: _covered_us(trace, r, w) for k, r in kinds.items()}
        out.append(GpuSplit(st.name, st.span_us, st.cpu_us, st.span_busy_us, by, st))
    if out:
        total = {k: sum(s.by_kind[k] for s in out) for k in SPLIT_KINDS}
        out.append(GpuSplit("total", sum(s.span_us for s in out), sum(s.cpu_us for s in out),
                            sum(s.busy_us for s in out), total))  # fmt: skip
    elif len(ops):
        w = (int(trace.ts_ns[ops].min()), int(trace.end_ns[ops].max()))
        by = {k: _covered_us(trace, r, w) for k, r in kinds.items()}
        dur = float(trace.end_ns.max() - trace.ts_ns.min()) / 1e3 if len(trace) else 0.0
        out.append(GpuSplit("total", (w[1] - w[0]) / 1e3, dur, _covered_us(trace, ops, w), by))
    return out


#: Launching ops named per kernel in :func:`kernel_detail`.
LAUNCHERS = 3


def _launched_by(trace: Trace, name_ids: npt.NDArray[np.int64]) -> str:
    """The ops (by name id) that launched a kernel name; with calls when several did."""
    by = Counter(name_ids[name_ids >= 0].tolist()).most_common()
    if len(by) <= 1:
        return trace.names[by[0][0]] if by else ""
    more = f", +{len(by) - LAUNCHERS} more" if len(by) > LAUNCHERS else ""
    return ", ".join(f"{trace.names[op]} ×{n}" for op, n in by[:LAUNCHERS]) + more


def kernel_detail(trace: Trace, window: Window | None = None, top: int | None = 20) -> Table:
    """The top GPU ops by total time, with class, call times and launching op.

    ``min_us`` and ``max_us`` are the shortest and longest call, beside the
    mean. ``launched_by`` is the CPU op that launched the name (the linker's
    issuing op); where several did (one NCCL kernel name serves all-to-all,
    all-reduce and all-gather), each with its calls, most first, up to
    :data:`LAUNCHERS` of them. Grid and block sizes are in
    :func:`~tracereader._kernel_view.launch_table`.
    """
    kt = kernel_table(trace, window, top=top)
    ln = link(trace)
    rows = ln.gpu_ops
    if window is not None:
        rows = rows[launched_in(trace, rows, window)]
    call = ln.launch[rows]
    issuer = np.where(call >= 0, ln.issuer[np.maximum(call, 0)], -1)
    index = {n: i for i, n in enumerate(trace.names)}
    out: list[list[Any]] = []
    for r in kt.rows:
        mine = rows[trace.name_id[rows] == index[r[0]]]
        who = issuer[trace.name_id[rows] == index[r[0]]]
        by = _launched_by(trace, trace.name_id[who[who >= 0]].astype(np.int64))
        out.append([r[0], kernel_class(r[0], int(trace.kind[mine[0]])), r[1], r[2], r[3],
                    r[4], r[6], by, r[7]])  # fmt: skip
    cols = ["name", "class", "calls", "total_us", "mean_us", "min_us", "max_us", "launched_by",
            "pct"]  # fmt: skip
    return Table(cols, out, "Top GPU ops by total time", name_columns=("name",))


def ranks_or_repeats(traces: Mapping[str, Trace]) -> tuple[bool, str]:
    """Whether ``traces`` (file name -> trace) are ranks of one job, and why.

    Ranks when every trace names its rank in ``distributedInfo.rank`` and no
    two name the same one; without that metadata, when the traces ran on
    different GPUs (their GPU ops' devices, else ``deviceProperties`` ids).
    Otherwise they are repeats (or unrelated runs), to be read one by one.
    """
    got = []
    for t in traces.values():
        info = t.meta.get("distributedInfo")
        got.append(info.get("rank") if isinstance(info, dict) else None)
    if all(isinstance(r, int) and not isinstance(r, bool) for r in got):
        if len(set(got)) == len(got):
            return True, "each trace names a distinct rank (distributedInfo.rank)"
        return False, "the traces name the same rank (distributedInfo.rank): repeats"
    devices = []
    for t in traces.values():
        devs = frozenset(ln.device for ln in t.gpu_lanes())
        props = frozenset(str(d.get("id")) for d in t.device_properties)
        devices.append(devs or props)
    if all(devices) and len(set(devices)) == len(devices):
        return True, "no rank metadata; each trace ran on a different GPU"
    return False, ("no distributedInfo rank metadata and the same GPU in each trace: "
                   "repeats of one run, not ranks")  # fmt: skip
