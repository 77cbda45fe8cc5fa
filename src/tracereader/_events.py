"""Typed columns and the :class:`Trace` container.

A trace is held as numpy columns, one row per complete (``ph: "X"``) event,
sorted by start time (longer events first on ties, so parents precede their
children). Raw Chrome-trace keys never appear here: the loader
(:mod:`tracereader._load`, with ``_columns``, ``_fast`` and ``_tolerant``)
translates them into these columns.

Times are integer nanoseconds (``ts_ns``, ``dur_ns``); the first event of the
trace defines ``t0_ns`` so that ``(ts_ns - t0_ns) / 1e3`` is microseconds into
the trace.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast, overload

import numpy as np
import numpy.typing as npt

__all__ = [
    "CPU_OP_KINDS",
    "GPU_OP_KINDS",
    "LAUNCH_KINDS",
    "MTIA_DEVICE_CATS",
    "STEP_KINDS",
    "Kind",
    "Lane",
    "Region",
    "Trace",
    "cached",
    "kind_mask",
    "name_mask",
]


class Kind(enum.IntEnum):
    """What an event is, decided from its category (never from ``args.stream``)."""

    CPU_OP = 0  # cpu_op: aten ops, and Inductor's Triton launches (args.stream = 0)
    USER_ANNOTATION = 1  # record_function, ProfilerStep#N, CompiledFxGraph calls
    PYTHON = 2  # python_function (with_stack=True)
    RUNTIME = 3  # cuda_runtime: cudaLaunchKernel, cudaMemcpyAsync, cudaDeviceSynchronize...
    DRIVER = 4  # cuda_driver: cuLaunchKernel, cuLaunchKernelEx...
    KERNEL = 5
    MEMCPY = 6
    MEMSET = 7
    GPU_ANNOTATION = 8  # gpu_user_annotation: the GPU-side span of a record_function
    SYNC = 9  # cuda_sync (opt-in): not GPU work
    OVERHEAD = 10  # profiler's own: Activity Buffer Request
    OTHER = 11


#: GPU work: what counts toward busy time and what the linker links.
GPU_OP_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
#: CPU-side calls that can launch GPU work.
LAUNCH_KINDS = (Kind.RUNTIME, Kind.DRIVER)
#: CPU events that issue launches (the innermost one owns the launch).
CPU_OP_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION)

CATEGORY_KIND = {
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,  # torch 1.x
    "user_annotation": Kind.USER_ANNOTATION,
    "python_function": Kind.PYTHON,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "runtime": Kind.RUNTIME,  # torch 1.x
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_ANNOTATION,
    "cuda_sync": Kind.SYNC,
    "overhead": Kind.OVERHEAD,
    "Kernel": Kind.KERNEL,  # torch 1.x capitalisation
    "Memcpy": Kind.MEMCPY,
    "Memset": Kind.MEMSET,
}

#: Categories of MTIA device work. Not read as GPU ops yet: they mix
#: kernels, DMA transfers and event waits, on lanes whose tid is not the stream.
MTIA_DEVICE_CATS = ("mtia_ccp_events",)

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_STREAM = re.compile(r"(?:stream )?(\d{1,18})")
#: Kinds a ``ProfilerStep#N`` span may have: torch 1.8/1.9 wrote it as an
#: ``Operator`` (a CPU op), later versions as a ``user_annotation``.
STEP_KINDS = (Kind.USER_ANNOTATION, Kind.CPU_OP)


@dataclass(frozen=True)
class Lane:
    """One row of the timeline: a CPU thread or a GPU stream."""

    index: int
    pid: int | str
    tid: int | str
    is_gpu: bool
    name: str

    @property
    def device(self) -> int:
        """The GPU's number (a GPU lane's pid, an int: the loader drops others); -1 on CPU."""
        return int(self.pid) if self.is_gpu and isinstance(self.pid, int) else -1

    @property
    def stream(self) -> int:
        """The stream's number (its tid; torch 1.x writes ``"stream 7"``); -1 if none."""
        if not self.is_gpu:
            return -1
        if isinstance(self.tid, int):
            return self.tid
        digits = _STREAM.fullmatch(self.tid)
        return int(digits.group(1)) if digits else -1

    @property
    def label(self) -> str:
        if self.is_gpu:
            return f"GPU {self.pid} stream {self.tid}"
        return self.name or f"thread {self.tid}"


@dataclass(frozen=True)
class Region:
    """A named span of time: a profiler step or a ``record_function`` range."""

    name: str
    start_ns: int
    end_ns: int
    event: int  # row index in Trace.events; -1 when synthesised

    @property
    def dur_us(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3


@dataclass
class Trace:
    """A loaded trace: event columns plus lanes and file-level metadata.

    Attributes
    ----------
    ts_ns, dur_ns : int64 arrays
        Start and duration of each complete event, in ns.
    kind : int8 array
        :class:`Kind` of each event.
    name_id, cat_id : int32 arrays
        Indices into :attr:`names` and :attr:`cats`.
    lane : int32 array
        Index into :attr:`lanes`.
    correlation, external_id : int64 arrays
        ``args.correlation`` and ``args["External id"]``; -1 when absent.
    extra : mapping of int64 arrays
        Further per-event args (``bytes``, ``registers``, ``shared_mem``,
        ``occupancy_pct``, ``python_id``, ``python_parent_id``, ``seq``,
        ``stream``; ``grid`` and ``block``: blocks per grid and threads per
        block; ``grid_xyz`` and ``block_xyz``: the same as ``[x, y, z]``
        packed by :func:`~tracereader._columns.pack_xyz`; ``input_dims``: an
        op's ``Input Dims`` (``record_shapes``) as an index into
        :attr:`texts`); -1 when absent. A loaded trace builds each column the first
        time it is read.
    texts : list of str
        JSON texts that ``extra["input_dims"]`` indexes (``[[8192,2048],[]]``).
    meta : dict
        Top-level keys other than ``traceEvents`` (``deviceProperties``,
        ``baseTimeNanoseconds``, versions, user metadata).
    repairs : list of str
        What the tolerant loader had to fix (empty for clean files).
    """

    ts_ns: npt.NDArray[np.int64]
    dur_ns: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int8]
    name_id: npt.NDArray[np.int32]
    cat_id: npt.NDArray[np.int32]
    lane: npt.NDArray[np.int32]
    correlation: npt.NDArray[np.int64]
    external_id: npt.NDArray[np.int64]
    names: list[str]
    cats: list[str]
    lanes: list[Lane]
    extra: Mapping[str, npt.NDArray[np.int64]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    source: str = ""
    parser: str = ""
    n_flows: int = 0
    n_instants: int = 0
    #: ``[memory]`` instants and communication args (:mod:`tracereader._side`).
    memory_events: list[tuple[Any, ...]] = field(default_factory=list, repr=False)
    comm_args: list[tuple[str, dict[str, Any]]] = field(default_factory=list, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return int(self.ts_ns.shape[0])

    @property
    def end_ns(self) -> npt.NDArray[np.int64]:
        """End of each event, ``ts_ns + dur_ns`` (computed once, read-only)."""
        return cached(self, "end_ns", self._end_ns)

    def _end_ns(self) -> npt.NDArray[np.int64]:
        end = self.ts_ns + self.dur_ns
        end.flags.writeable = False
        return end

    @property
    def t0_ns(self) -> int:
        """The start of the earliest event, which is the origin of relative times."""
        return int(self.ts_ns[0]) if len(self) else 0

    def name(self, i: int) -> str:
        return self.names[int(self.name_id[i])]

    def cat(self, i: int) -> str:
        return self.cats[int(self.cat_id[i])]

    @overload
    def rel_us(self, ts_ns: int) -> float: ...
    @overload
    def rel_us(self, ts_ns: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]: ...
    def rel_us(self, ts_ns: int | npt.NDArray[np.int64]) -> float | npt.NDArray[np.float64]:
        """Microseconds since :attr:`t0_ns`."""
        return (ts_ns - self.t0_ns) / 1e3

    def describe(self, i: int) -> dict[str, Any]:
        """One event as a plain dict (for reading, not for bulk work)."""
        out = {
            "index": int(i),
            "name": self.name(i),
            "cat": self.cat(i),
            "kind": Kind(int(self.kind[i])).name.lower(),
            "lane": self.lanes[int(self.lane[i])].label,
            "start_us": float(self.rel_us(int(self.ts_ns[i]))),
            "dur_us": float(self.dur_ns[i]) / 1e3,
        }
        for key, col in (("correlation", self.correlation), ("external_id", self.external_id)):
            if col[i] >= 0:
                out[key] = int(col[i])
        for key, col in self.extra.items():
            if col[i] >= 0:
                out[key] = col[i].item()
        return out

    # ------------------------------------------------------------------ selection
    def where(
        self,
        *,
        kind: Kind | tuple[Kind, ...] | None = None,
        name: str | None = None,
        prefix: str | None = None,
        contains: str | None = None,
        lane: int | None = None,
        within: tuple[int, int] | None = None,
    ) -> npt.NDArray[np.int64]:
        """Indices of events matching every given filter, in time order.

        ``within=(start_ns, end_ns)`` keeps events that *start* inside the window.
        """
        mask = np.ones(len(self), dtype=bool)
        if kind is not None:
            mask &= kind_mask(self, (kind,) if isinstance(kind, Kind) else kind)
        if name is not None or prefix is not None or contains is not None:
            ok = np.array(
                [
                    (name is None or n == name)
                    and (prefix is None or n.startswith(prefix))
                    and (contains is None or contains in n)
                    for n in self.names
                ],
                dtype=bool,
            )
            mask &= ok[self.name_id] if len(ok) else False
        if lane is not None:
            mask &= self.lane == lane
        if within is not None:
            mask &= (self.ts_ns >= within[0]) & (self.ts_ns < within[1])
        return np.flatnonzero(mask)

    def gpu_lanes(self) -> list[Lane]:
        return [ln for ln in self.lanes if ln.is_gpu]

    # ------------------------------------------------------------------ regions
    @property
    def steps(self) -> list[Region]:
        """``ProfilerStep#N`` spans in order (CPU side).

        Found by name among user annotations and, for torch 1.8/1.9 traces
        (category ``Operator``), CPU ops.
        """
        return cached(self, "steps", self._steps)

    def _steps(self) -> list[Region]:
        idx = self.where(kind=STEP_KINDS, prefix="ProfilerStep#")
        end = self.end_ns
        return [
            Region(self.name(i), int(self.ts_ns[i]), int(end[i]), int(i))
            for i in idx
            if _STEP.match(self.name(i))
        ]

    def step(self, which: int | str) -> Region:
        """A step by its number (``2`` for ``ProfilerStep#2``) or full name."""
        target = which if isinstance(which, str) else f"ProfilerStep#{which}"
        for s in self.steps:
            if s.name == target:
                return s
        names = ", ".join(s.name for s in self.steps) or "none"
        raise KeyError(f"no step {target!r} in this trace (steps: {names})")

    def regions(self, name: str) -> list[Region]:
        """CPU-side ``record_function`` spans called ``name``, in time order."""
        idx = self.where(kind=Kind.USER_ANNOTATION, name=name)
        end = self.end_ns
        return [Region(name, int(self.ts_ns[i]), int(end[i]), int(i)) for i in idx]

    @property
    def mtia_device_ops(self) -> int:
        """How many MTIA device ops the trace holds (not read as GPU work yet)."""
        wanted = [i for i, c in enumerate(self.cats) if c in MTIA_DEVICE_CATS]
        return int(np.isin(self.cat_id, wanted).sum()) if wanted else 0

    @property
    def device_properties(self) -> list[dict[str, Any]]:
        return list(self.meta.get("deviceProperties") or [])


# ---------------------------------------------------------------------- helpers
def arg_column(trace: Trace, name: str) -> npt.NDArray[np.int64]:
    """``trace.extra[name]``, or all -1 where the trace has no such column."""
    column = trace.extra.get(name)
    return column if column is not None else np.full(len(trace), -1, dtype=np.int64)


def kind_mask(trace: Trace, kinds: Iterable[Kind]) -> npt.NDArray[np.bool_]:
    """Per-event bool: the event's :class:`Kind` is one of ``kinds``."""
    wanted = np.array([int(k) for k in kinds], dtype=trace.kind.dtype)
    return np.isin(trace.kind, wanted)


def name_mask(trace: Trace, prefixes: tuple[str, ...]) -> npt.NDArray[np.bool_]:
    """Per-event bool: the event's name starts with one of ``prefixes``."""
    ok = np.array([n.startswith(prefixes) for n in trace.names], dtype=bool)
    return ok[trace.name_id] if len(ok) else np.zeros(len(trace), dtype=bool)


_T = TypeVar("_T")


def cached(trace: Trace, key: str, make: Callable[[], _T]) -> _T:
    """``make()``, computed once per trace and kept with it under ``key``."""
    if key not in trace._cache:
        trace._cache[key] = make()
    return cast(_T, trace._cache[key])
