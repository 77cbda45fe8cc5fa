"""Decoded trace events -> the numpy columns of a :class:`~tracereader._events.Trace`.

Both loading paths (:mod:`tracereader._fast` with msgspec, and
:mod:`tracereader._tolerant` with the stdlib ``json`` module) hand batches of
event records to the same :class:`Columns` builder, so they produce identical
columns. A record is anything with the attributes of :class:`PlainEvent`
(``args``: of :class:`PlainArgs`); msgspec's structs in ``_fast`` mirror them.
This module never imports msgspec.
"""

from __future__ import annotations

import json
import mmap
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from ._events import CATEGORY_KIND, GPU_OP_KINDS, Kind, Lane, Trace
from ._extra import ArgColumns, Group

__all__ = [
    "EXTRA_ARGS",
    "INT_ARGS",
    "Buffer",
    "Columns",
    "PlainArgs",
    "PlainEvent",
    "TraceError",
    "base_ns",
    "skip_space",
]

Buffer = bytes | bytearray | mmap.mmap  # the JSON text: read, gunzipped or memory-mapped


class TraceError(ValueError):
    """The input is not a readable trace; the message is one line for the user."""


_SPACE = re.compile(rb"[ \t\r\n]*")


def skip_space(data: Buffer) -> int:
    """Position of the first byte of ``data`` that is not JSON whitespace."""
    space = _SPACE.match(data)
    return space.end() if space else 0


# --------------------------------------------------------------------------- records
#: args kept as int64 columns in ``Trace.extra``: JSON key -> column name.
EXTRA_ARGS = {
    "bytes": "bytes",
    "registers per thread": "registers",
    "shared memory": "shared_mem",
    "est. achieved occupancy %": "occupancy_pct",
    "Python id": "python_id",
    "Python parent id": "python_parent_id",
    "Sequence number": "seq",
    "stream": "stream",
}
_ID_ARGS = {"correlation": "correlation", "External id": "external_id"}
INT_ARGS = {**_ID_ARGS, **EXTRA_ARGS}  # JSON key -> attribute of an args record
Num = int | float | None  # None: JSON null; an absent key reads as -1


@dataclass(slots=True)
class PlainArgs:
    """The few ``args`` the analyses need (attribute names: values of ``INT_ARGS``).

    The stdlib stand-in for ``_fast.ArgsRecord``: same fields, same defaults.
    """

    correlation: Num = -1
    external_id: Num = -1
    bytes: Num = -1
    registers: Num = -1
    shared_mem: Num = -1
    occupancy_pct: Num = -1
    python_id: Num = -1
    python_parent_id: Num = -1
    seq: Num = -1
    stream: Num = -1
    grid: Any = None  # kernels: [x, y, z] blocks
    block: Any = None  # kernels: [x, y, z] threads per block
    name: Any = None  # thread_name metadata


@dataclass(slots=True)
class PlainEvent:
    """One trace event's envelope; the stdlib stand-in for ``_fast.EventRecord``."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = ""
    tid: int | str = ""
    ts: float | None = None  # µs
    dur: float | None = None  # µs
    args: Any = None  # PlainArgs, ArgsRecord or None


_NO_ARGS = PlainArgs()
_PH, _NAME, _CAT, _PID, _TID, _TS, _DUR = (
    attrgetter(a) for a in ("ph", "name", "cat", "pid", "tid", "ts", "dur")
)
_ATTR_GETTERS = {attr: attrgetter(attr) for attr in INT_ARGS.values()}
_ALL_ARGS = tuple(_ATTR_GETTERS)
_RAW_KEY = {attr: raw for raw, attr in INT_ARGS.items()}
_GPU_ARGS = ("correlation", "external_id", "stream")
#: Which args each kind carries in Kineto's output; other kinds are read for all.
_KIND_ARGS: dict[int, tuple[str, ...]] = {
    Kind.CPU_OP: ("external_id", "seq", "stream"),
    Kind.USER_ANNOTATION: ("external_id", "seq"),
    Kind.PYTHON: ("python_id", "python_parent_id"),
    Kind.RUNTIME: ("correlation", "external_id"),
    Kind.DRIVER: ("correlation", "external_id"),
    Kind.KERNEL: (*_GPU_ARGS, "registers", "shared_mem", "occupancy_pct"),
    Kind.MEMCPY: (*_GPU_ARGS, "bytes"),
    Kind.MEMSET: (*_GPU_ARGS, "bytes"),
    Kind.GPU_ANNOTATION: _GPU_ARGS,
    Kind.SYNC: _GPU_ARGS,
}
_GPU_LANE = np.zeros(len(Kind), dtype=bool)  # Kind -> lives on a (device, stream) lane
_GPU_LANE[[int(k) for k in (*GPU_OP_KINDS, Kind.GPU_ANNOTATION, Kind.SYNC)]] = True
#: |ts| above this many µs would overflow int64 nanoseconds.
_MAX_US = 9.0e15


class _Interner(dict[Any, int]):
    """``interner[value]`` -> a dense id, assigned in order of first sight."""

    def __missing__(self, key: Any) -> int:
        self[key] = len(self)
        return self[key]


#: ``Trace.extra``'s columns, in order: the args other than the two ids, then volumes.
_EXTRA_COLUMNS = (*EXTRA_ARGS.values(), "grid", "block")
_IdColumns = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]  # correlation, External id


class Columns:
    """Accumulates batches of event records into numpy column chunks.

    Envelope columns (times, name, category, lane, kind) are kept as one
    chunk per batch. Args are sparse: each batch keeps, per kind, the rows of
    that kind and the values of the args that kind carries. Most events carry
    two or three of the twelve args, so the sparse form is a fraction of the
    dense one to build and to send between processes. :meth:`finish` writes
    the two ids into full columns and leaves the rest sparse, in
    :class:`~tracereader._extra.ArgColumns`, until they are read.
    """

    def __init__(self, label: str, base_ns: int) -> None:
        self.label, self.base_ns = label, base_ns
        self.names, self.cats, self.lanes = _Interner(), _Interner(), _Interner()
        self.cat_kind: list[int] = []
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.chunks: dict[str, list[npt.NDArray[Any]]] = {}
        #: ``(rows, {arg: values})``, rows numbering this builder's events in file order.
        self.args: list[Group] = []
        self.n_rows = 0
        self.notes: dict[str, int] = {}
        self.n_flows = self.n_instants = 0

    def note(self, template: str, n: int = 1) -> None:
        """Count one kind of repair; ``template`` has ``{n}`` and plural ``{s}`` slots."""
        self.notes[template] = self.notes.get(template, 0) + n

    def _chunk(self, key: str, values: npt.NDArray[Any]) -> None:
        self.chunks.setdefault(key, []).append(values)

    def add(self, events: list[Any]) -> None:
        """Turn one batch into column chunks; metadata and counts on the way."""
        phases = Counter(map(_PH, events))
        self.n_flows += phases["s"] + phases["f"] + phases["t"]
        self.n_instants += phases["i"] + phases["I"]
        if phases["M"]:
            for ev in events:
                if ev.ph == "M" and ev.name == "thread_name" and ev.args is not None:
                    name = ev.args.name
                    text = name if isinstance(name, str) else json.dumps(name)
                    self.thread_names[(ev.pid, ev.tid)] = "" if name is None else text
        xs = events if phases["X"] == len(events) else [ev for ev in events if ev.ph == "X"]
        n = len(xs)
        if not n:
            return
        self._chunk("ts_us", np.fromiter(map(_TS, xs), np.float64, n))  # None: NaN
        self._chunk("dur_us", np.fromiter(map(_DUR, xs), np.float64, n))
        self._chunk(
            "name_id", np.fromiter(map(self.names.__getitem__, map(_NAME, xs)), np.int32, n)
        )
        cat_id = np.fromiter(map(self.cats.__getitem__, map(_CAT, xs)), np.int32, n)
        self.cat_kind += [int(_kind_of(c)) for c in list(self.cats)[len(self.cat_kind) :]]
        kind = np.asarray(self.cat_kind, dtype=np.int8)[cat_id]
        keys = zip(map(_PID, xs), map(_TID, xs), _GPU_LANE[kind].tolist(), strict=True)
        self._chunk("lane", np.fromiter(map(self.lanes.__getitem__, keys), np.int32, n))
        self._chunk("cat_id", cat_id)
        self._chunk("kind", kind)
        args = [ev.args or _NO_ARGS for ev in xs]
        by_kind = np.argsort(kind, kind="stable")
        bounds = np.searchsorted(kind[by_kind], np.arange(len(Kind) + 1)).tolist()
        for k in range(len(Kind)):
            rows = by_kind[bounds[k] : bounds[k + 1]]
            if not len(rows):
                continue
            some = [args[rows[0]]] if len(rows) == 1 else itemgetter(*rows.tolist())(args)
            values = {attr: self._ints(some, attr) for attr in _KIND_ARGS.get(k, _ALL_ARGS)}
            if k == Kind.KERNEL:
                values["grid"] = np.asarray(_volumes([a.grid for a in some]), np.int64)
                values["block"] = np.asarray(_volumes([a.block for a in some]), np.int64)
            self.args.append((rows.astype(np.int64) + self.n_rows, values))
        self.n_rows += n

    def merge(self, other: Columns) -> None:
        """Append the columns of the events that follow ours in the file."""
        names = np.fromiter(map(self.names.__getitem__, other.names), np.int32, len(other.names))
        cats = np.fromiter(map(self.cats.__getitem__, other.cats), np.int32, len(other.cats))
        lanes = np.fromiter(map(self.lanes.__getitem__, other.lanes), np.int32, len(other.lanes))
        self.cat_kind += [int(_kind_of(c)) for c in list(self.cats)[len(self.cat_kind) :]]
        for key, chunks in other.chunks.items():
            table = {"name_id": names, "cat_id": cats, "lane": lanes}.get(key)
            self.chunks.setdefault(key, []).extend(
                chunks if table is None else [table[c] for c in chunks]
            )
        self.args += [(rows + self.n_rows, values) for rows, values in other.args]
        self.n_rows += other.n_rows
        self.thread_names.update(other.thread_names)  # the later record wins
        for template, n in other.notes.items():
            self.note(template, n)
        self.n_flows += other.n_flows
        self.n_instants += other.n_instants

    def _ints(self, args: Sequence[Any], attr: str) -> npt.NDArray[np.int64]:
        """int64 column of one arg; -1 for null or unusable values (wide ints are reported)."""
        get = _ATTR_GETTERS[attr]
        try:
            return np.fromiter(map(get, args), np.int64, len(args))
        except (TypeError, ValueError, OverflowError):
            pass
        values = list(map(get, args))
        try:
            return np.fromiter(values, np.int64, len(values))
        except TypeError:  # JSON null somewhere
            values = [-1 if v is None else v for v in values]
            try:
                return np.fromiter(values, np.int64, len(values))
            except (TypeError, ValueError, OverflowError):
                pass
        except (ValueError, OverflowError):
            pass
        out = np.full(len(values), -1, np.int64)
        for i, v in enumerate(values):
            if isinstance(v, int) and -(2**63) <= v < 2**63:
                out[i] = v
            elif isinstance(v, int):
                width = "wider than 64 bits" if abs(v) >= 2**64 else "outside the int64 range"
                self.note(
                    f"{{n}} integer{{s}} {width} in args.{_RAW_KEY[attr]} kept out of columns"
                )
            elif isinstance(v, float) and abs(v) < 2**63:
                out[i] = int(v)
        return out

    def finish(self, meta: dict[str, Any], parser: str, repairs: list[str]) -> Trace:
        """Concatenate, drop unusable rows, convert to ns, sort and build the Trace."""
        if not self.chunks:
            raise TraceError(f"{self.label}: a trace with no complete events")
        col = {key: np.concatenate(self.chunks.pop(key)) for key in list(self.chunks)}
        ts_us, dur_us = col.pop("ts_us"), col.pop("dur_us")
        dur_us[np.isnan(dur_us)] = 0.0  # "dur" missing: an instant-like complete event
        ok = np.isfinite(ts_us) & np.isfinite(dur_us) & (np.abs(ts_us) < _MAX_US)
        ok &= np.abs(dur_us) < _MAX_US
        kept: npt.NDArray[np.int64] | None = None  # file rows left, when some are dropped
        if not ok.all():
            self.note("skipped {n} complete event{s} without a usable ts/dur", int((~ok).sum()))
            kept = np.flatnonzero(ok)
            ts_us, dur_us = ts_us[kept], dur_us[kept]
            col = {key: values[kept] for key, values in col.items()}
        if not len(ts_us):
            raise TraceError(f"{self.label}: a trace with no complete events")
        ts_ns = _us_to_ns(ts_us) + self.base_ns
        dur_ns = _us_to_ns(dur_us)
        if (dur_ns < 0).any():
            self.note("clamped {n} negative duration{s} to 0", int((dur_ns < 0).sum()))
            np.maximum(dur_ns, 0, out=dur_ns)
        del ts_us, dur_us
        keys = list(self.lanes)
        used = np.zeros(len(keys), dtype=bool)
        used[col["lane"]] = True
        new_id = np.cumsum(used, dtype=np.int32) - 1  # hide lanes whose events were all dropped
        col["lane"] = new_id[col["lane"]]
        lanes = [
            Lane(int(new_id[i]), pid, tid, is_gpu, self.thread_names.get((pid, tid), "").strip())
            for i, (pid, tid, is_gpu) in enumerate(keys)
            if used[i]
        ]
        order = _time_order(ts_ns, dur_ns)
        col = {key: values[order] for key, values in col.items()}
        (correlation, external_id), extra = self._args_columns(
            order if kept is None else kept[order]
        )
        return Trace(
            ts_ns=ts_ns[order],
            dur_ns=dur_ns[order],
            kind=col.pop("kind"),
            name_id=col.pop("name_id"),
            cat_id=col.pop("cat_id"),
            lane=col.pop("lane"),
            correlation=correlation,
            external_id=external_id,
            names=list(self.names),
            cats=list(self.cats),
            lanes=lanes,
            extra=extra,
            meta=meta,
            repairs=repairs + [t.format(n=n, s="s" * (n != 1)) for t, n in self.notes.items()],
            source=self.label,
            parser=parser,
            n_flows=self.n_flows,
            n_instants=self.n_instants,
        )

    def _args_columns(self, rows: npt.NDArray[np.int64]) -> tuple[_IdColumns, ArgColumns]:
        """The two id columns and ``Trace.extra``; trace row ``i`` is file row ``rows[i]``."""
        where = np.full(self.n_rows, -1, dtype=np.int64)  # file row -> trace row (-1: dropped)
        where[rows] = np.arange(len(rows), dtype=np.int64)
        ids = {attr: np.full(len(rows), -1, dtype=np.int64) for attr in _ID_ARGS.values()}
        groups: list[Group] = []
        for file_rows, values in self.args:
            at = where[file_rows]
            if len(rows) < self.n_rows:  # some rows were dropped
                keep = at >= 0
                at, values = at[keep], {attr: v[keep] for attr, v in values.items()}
            for attr in _ID_ARGS.values():
                if attr in values:
                    ids[attr][at] = values.pop(attr)
            if values:
                groups.append((at, values))
        self.args.clear()
        return (ids["correlation"], ids["external_id"]), ArgColumns(
            _EXTRA_COLUMNS, groups, len(rows)
        )


def _kind_of(cat: str) -> Kind:
    """Category -> Kind; torch 1.x capitalised some (``Operator``, ``Runtime``)."""
    return CATEGORY_KIND.get(cat, CATEGORY_KIND.get(cat.lower(), Kind.OTHER))


def _time_order(
    ts_ns: npt.NDArray[np.int64], dur_ns: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Row order by start, longer first on ties: ``lexsort((-dur, ts))``, faster.

    A stable argsort of ``ts`` is quick on the long sorted runs a trace holds;
    only the rows that share a start time are then ordered by duration.
    """
    order = np.argsort(ts_ns, kind="stable")
    ts_sorted = ts_ns[order]
    tie = ts_sorted[1:] == ts_sorted[:-1]
    if tie.any():
        rows = np.flatnonzero(np.concatenate(([False], tie)) | np.concatenate((tie, [False])))
        tied = order[rows]
        order[rows] = tied[np.lexsort((-dur_ns[tied], ts_ns[tied]))]
    return order


def _volumes(dims: list[Any]) -> npt.NDArray[np.int64] | list[int]:
    """``[[x, y, z], ...]`` -> ``x*y*z`` each (blocks per grid, threads per block)."""
    try:
        xyz = np.array(dims, dtype=np.int64)
        if xyz.ndim == 2 and xyz.shape[1] == 3 and (xyz >= 0).all() and (xyz < 2**21).all():
            volumes: npt.NDArray[np.int64] = xyz.prod(axis=1)
            return volumes
    except (TypeError, ValueError, OverflowError):
        pass
    return [_volume(v) for v in dims]


def _volume(xyz: Any) -> int:
    """``[x, y, z]`` -> ``x*y*z`` (blocks in a grid, threads in a block); -1 if not that."""
    if not isinstance(xyz, list) or not xyz or len(xyz) > 3:
        return -1
    total = 1
    for v in xyz:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            return -1
        total *= v
    return total if total < 2**63 else -1


def _us_to_ns(us: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """µs floats -> int64 ns, ``round(us * 1000)`` exactly as Python would.

    Kineto prints ``"{us}.{ns:03}"``, so ``rint(us * 1000)`` recovers the printed
    integer. Old traces carry absolute integer µs (~1.7e15) whose product with
    1000 exceeds 2**53; those are multiplied as integers to stay exact.
    """
    ns = np.rint(us * 1000.0).astype(np.int64)
    wide = (np.abs(us) >= 2**53 / 1000) & (us == np.floor(us))
    if wide.any():
        ns[wide] = us[wide].astype(np.int64) * 1000
    return ns


def base_ns(meta: dict[str, Any]) -> int:
    """``baseTimeNanoseconds`` (torch >= 2.4 traces use relative ``ts``), else 0."""
    base = meta.get("baseTimeNanoseconds")
    if isinstance(base, bool) or not isinstance(base, (int, float)) or base != base:
        return 0
    return int(base) if 0 < base < 2**62 else 0
