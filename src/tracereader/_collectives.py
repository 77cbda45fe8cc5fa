"""Collectives: the communication kernels of one trace, by collective and message size.

A communication kernel is one :func:`~tracereader._comm.op_classes` calls
communication (NCCL or RCCL: ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``,
``ncclKernel_SendRecv_...``). For each, :func:`collective_table` finds

* the **collective** (``all_reduce``, ``all_gather``, ``reduce_scatter``,
  ``all_to_all``, ``broadcast``, ``send/recv``...), from the kernel's
  ``Collective name`` arg (torch >= 2.3), else from the op that launched it
  (``nccl:all_to_all``, ``c10d::allreduce_``), else from the kernel's name
  (an all-to-all runs as ``SendRecv`` kernels, so the name alone misleads);
* the **message size**: ``In msg nelems`` and ``Out msg nelems`` times the
  size of ``dtype``, on the kernel or on the ``record_param_comms`` op
  around its launch, else that op's ``Input Dims`` and ``Input type``
  (older traces); the larger of input and output, which is the buffer
  nccl-tests divides by time (all-gather: the gathered output);
* the process group (``Process Group Name``, ``Group size``) where written.

Rows group calls of one collective, group and size: calls, total and mean
kernel time, and the **algorithm bandwidth** ``bytes / kernel time`` (GB/s).
Kernel time includes waiting for the slowest peer, so a low bandwidth can mean
a late rank rather than a slow link.

:func:`exposed_comm` reuses :func:`~tracereader._comm.comm_times`: the
communication time no computation kernel overlaps, as ms and as a share of
the GPU span, flagged above :data:`EXPOSED_FLAG_PCT`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._comm import COMM, comm_times, op_classes
from ._events import Kind, Trace
from ._link import link
from ._side import is_comm_name
from ._tables import Table

__all__ = ["EXPOSED_FLAG_PCT", "Exposed", "collective_of", "collective_table", "exposed_comm"]

#: Exposed communication above this share of the GPU span is flagged.
EXPOSED_FLAG_PCT = 10.0
SUGGESTION = ("overlap communication with computation: DDP's gradient buckets "
              "(bucket_cap_mb), FSDP's forward and backward prefetch, or async "
              "collectives waited on later")  # fmt: skip
#: Lower-case names without underscores -> collective; the first match wins.
_COLLECTIVES = (("reducescatter", "reduce_scatter"), ("allreduce", "all_reduce"),
                ("allgather", "all_gather"), ("alltoall", "all_to_all"),
                ("broadcast", "broadcast"), ("barrier", "barrier"),
                ("sendrecv", "send/recv"), ("send", "send/recv"), ("recv", "send/recv"),
                ("reduce", "reduce"), ("gather", "gather"), ("scatter", "scatter"))  # fmt: skip
#: Bytes per element of the dtype names torch writes (``dtype``, ``Input type``).
DTYPE_BYTES = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
               "bfloat16": 2, "long": 8, "longint": 8, "int64": 8, "int": 4, "int32": 4,
               "short": 2, "int16": 2, "char": 1, "signedchar": 1, "byte": 1,
               "unsignedchar": 1, "uint8": 1, "int8": 1, "bool": 1, "float8_e4m3fn": 1,
               "float8_e5m2": 1, "complexfloat": 8, "complexdouble": 16}  # fmt: skip
_PARAM_OP = "record_param_comms"


def collective_of(name: str) -> str:
    """The collective a kernel, op or ``Collective name`` arg names ("" if none)."""
    text = re.sub(r"^(nccl:|c10d::|gloo:)", "", name.strip().lower()).replace("_", "")
    text = text.replace("ncclkernel", "").replace("nccldevkernel", "").replace("rccl", "")
    return next((c for key, c in _COLLECTIVES if key in text), "")


def _dtype_bytes(dtype: Any) -> int | None:
    if not isinstance(dtype, str):
        return None
    key = dtype.lower().replace("c10::", "").replace("torch.", "").replace(" ", "")
    return DTYPE_BYTES.get(key)


def _num(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else None


def message_bytes(args: dict[str, Any]) -> int | None:
    """The larger of a collective's input and output buffers, from one event's args."""
    size = _dtype_bytes(args.get("dtype"))
    n = [x for x in (_num(args.get("In msg nelems")), _num(args.get("Out msg nelems"))) if x]
    if size and n:
        return max(n) * size
    dims, types = args.get("Input Dims"), args.get("Input type")
    if isinstance(dims, list) and dims and isinstance(dims[0], list) and dims[0]:
        first, kind = dims[0], types[0] if isinstance(types, list) and types else None
        elem = _dtype_bytes(kind)
        if elem and all(_num(d) is not None for d in first):
            return int(np.prod(first, dtype=np.int64)) * elem
    return None


def _group(args: dict[str, Any]) -> tuple[str, int | None]:
    pg = args.get("Process Group Name")
    desc = args.get("Process Group Description")
    name = "" if pg is None else str(pg) + (f" ({desc})" if isinstance(desc, str) and desc else "")
    return name, _num(args.get("Group size"))


def _raw_args(trace: Trace) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[int, Any]]:
    """Args of communication kernels by (name, correlation), of record_param_comms by id."""
    kernels: dict[tuple[str, int], dict[str, Any]] = {}
    params: dict[int, Any] = {}
    for name, args in trace.comm_args:  # what the loader kept (tracereader._side)
        if not args or not is_comm_name(name):
            continue
        if name == _PARAM_OP and _num(args.get("External id")) is not None:
            params[int(args["External id"])] = args
        elif _num(args.get("correlation")) is not None:
            kernels[(name, int(args["correlation"]))] = args
    return kernels, params


@dataclass(frozen=True)
class _Call:
    collective: str
    source: str  # where the collective's name came from
    group: str
    group_size: int | None
    msg_bytes: int | None
    dur_us: float


def _calls(trace: Trace) -> list[_Call]:
    ln = link(trace)
    ops = ln.gpu_ops
    rows = ops[op_classes(trace, ops) == COMM]
    if not len(rows):
        return []
    kernels, params = _raw_args(trace)
    out = []
    for r in rows.tolist():
        name = trace.name(r)
        args = kernels.get((name, int(trace.correlation[r])), {})
        stack = ln.stack(r)[::-1] if ln.launch[r] >= 0 else []
        param: dict[str, Any] = {}
        for s in stack:
            if trace.name(s) == _PARAM_OP and int(trace.external_id[s]) in params:
                param = params[int(trace.external_id[s])]
                break
        coll, source = collective_of(str(args.get("Collective name", ""))), "kernel arg"
        if not coll:
            coll, source = collective_of(str(param.get("Collective name", ""))), "op arg"
        if not coll:
            ops_above = [s for s in stack if trace.kind[s] in (Kind.CPU_OP, Kind.USER_ANNOTATION)]
            coll = next((c for s in ops_above if (c := collective_of(trace.name(s)))), "")
            source = "launching op"
        if not coll:
            coll, source = collective_of(name) or "other", "kernel name"
        size = message_bytes(args) or message_bytes(param)
        group, group_size = _group(args if "Process Group Name" in args else param)
        out.append(_Call(coll, source, group, group_size, size, float(trace.dur_ns[r]) / 1e3))
    return out


def collective_table(trace: Trace) -> Table:
    """Communication kernels grouped by collective, process group and message size.

    Columns: ``collective``, ``process_group``, ``group_size``,
    ``msg_bytes`` (``None``: not in the trace), ``calls``, ``total_ms``,
    ``mean_us``, ``algbw_gb_s`` (bytes per second of kernel time, 1e9) and
    ``named_by`` (kernel arg, op arg, launching op or kernel name). Largest
    total first.
    """
    groups: dict[tuple[Any, ...], list[_Call]] = {}
    for c in _calls(trace):
        groups.setdefault((c.collective, c.group, c.group_size, c.msg_bytes, c.source), []).append(
            c
        )
    rows = []
    for (coll, group, size_n, msg, source), calls in groups.items():
        total = sum(c.dur_us for c in calls)
        bw = msg * len(calls) / (total * 1e3) if msg and total else None  # bytes/µs/1e3 = GB/s
        rows.append([coll, group, size_n, msg, len(calls), total / 1e3, total / len(calls), bw,
                     source])  # fmt: skip
    rows.sort(key=lambda r: (-r[5], r[0]))
    cols = ["collective", "process_group", "group_size", "msg_bytes", "calls", "total_ms",
            "mean_us", "algbw_gb_s", "named_by"]  # fmt: skip
    return Table(cols, rows, "Collectives (communication kernels by collective and size)", ())


@dataclass(frozen=True)
class Exposed:
    """Communication no computation hides, from :func:`~tracereader._comm.comm_times`."""

    comm_ms: float
    overlap_ms: float
    exposed_ms: float
    span_ms: float

    @property
    def exposed_pct(self) -> float:
        return 100 * self.exposed_ms / self.span_ms if self.span_ms else 0.0

    @property
    def flagged(self) -> bool:
        return self.exposed_pct > EXPOSED_FLAG_PCT

    def sentence(self) -> str:
        """One line: the numbers, and the suggestion when flagged."""
        head = (f"Exposed communication: {self.exposed_ms:,.1f} ms of {self.comm_ms:,.1f} ms "
                f"of communication ran with no computation kernel beside it, "
                f"{self.exposed_pct:.1f} % of the GPU span ({self.span_ms:,.1f} ms).")  # fmt: skip
        if self.flagged:
            return f"{head} Over {EXPOSED_FLAG_PCT:g} %: {SUGGESTION}."
        return head

    def to_dict(self) -> dict[str, Any]:
        return {**json.loads(json.dumps(self.__dict__)), "exposed_pct": self.exposed_pct,
                "flagged": self.flagged}  # fmt: skip


def exposed_comm(trace: Trace) -> Exposed | None:
    """Exposed communication of ``trace`` (``None`` without communication kernels)."""
    ct = comm_times(trace)
    if not ct.comm_kernels:
        return None
    return Exposed(ct.comm_us / 1e3, ct.overlap_us / 1e3, ct.exposed_comm_us / 1e3,
                   ct.span_us / 1e3)  # fmt: skip
