"""Decoded trace events -> the numpy columns of a :class:`~tracereader._events.Trace`.

Both loading paths (:mod:`tracereader._fast` with msgspec, and
:mod:`tracereader._tolerant` with the stdlib ``json`` module) hand batches of
event records to the same :class:`Columns` builder, so they produce identical
columns. A record is anything with the attributes of :class:`PlainEvent`
(``args``: of :class:`PlainArgs`); msgspec's structs in ``_fast`` mirror them.
This module never imports msgspec.
"""

from __future__ import annotations

import decimal
import itertools
import json
import mmap
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from ._events import CATEGORY_KIND, GPU_OP_KINDS, Kind, Lane, Trace
from ._extra import ArgColumns, Group
from ._side import ABSENT, MEMORY_ARGS, MemoryEvent, is_comm_name, memory_events

__all__ = [
    "EXTRA_ARGS",
    "EXTRA_COLUMNS",
    "INT_ARGS",
    "Buffer",
    "Columns",
    "PlainArgs",
    "PlainEvent",
    "NumOrText",
    "TraceError",
    "base_ns",
    "exact_ns",
    "extra_columns",
    "needs_exact_ts",
    "skip_space",
    "to_record",
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
#: What a numeric arg may hold as decoded: a string is read as the integer it
#: spells (``"1"``), any other string as absent (ROCm's ``"stream": "0x0"``).
NumOrText = int | float | str | None


@dataclass(slots=True)
class PlainArgs:
    """The few ``args`` the analyses need (attribute names: values of ``INT_ARGS``).

    The stdlib stand-in for ``_fast.ArgsRecord``: same fields, same defaults.
    """

    correlation: NumOrText = -1
    external_id: NumOrText = -1
    bytes: NumOrText = -1
    registers: NumOrText = -1
    shared_mem: NumOrText = -1
    occupancy_pct: NumOrText = -1
    python_id: NumOrText = -1
    python_parent_id: NumOrText = -1
    seq: NumOrText = -1
    stream: NumOrText = -1
    grid: Any = None  # kernels: [x, y, z] blocks
    block: Any = None  # kernels: [x, y, z] threads per block
    name: Any = None  # thread_name metadata
    input_dims: Any = None  # cpu_op with record_shapes: one shape per input
    # [memory] instants (tracereader._side.MEMORY_ARGS)
    total_reserved: Any = ABSENT
    total_allocated: Any = ABSENT
    mem_bytes: Any = ABSENT
    device_id: Any = ABSENT
    device_type: Any = ABSENT
    addr: Any = ABSENT


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
_ID_ATTRS = tuple(_ID_ARGS.values())
_GPU_LANE = np.zeros(len(Kind), dtype=bool)  # Kind -> lives on a (device, stream) lane
_GPU_LANE[[int(k) for k in (*GPU_OP_KINDS, Kind.GPU_ANNOTATION, Kind.SYNC)]] = True
#: |ts| above this many µs would overflow int64 nanoseconds.
_MAX_US = 9.0e15
#: |ts| from this many µs on, a float64 holds µs to less than 1 ns (2**53 ns).
_EXACT_US = 2**53 / 1000
#: A GPU event's pid is its device number: an int in this range.
_MAX_DEVICE = 2**31
_BIG_FRACTION = re.compile(rb'"ts"[ \t\r\n]*:[ \t\r\n]*-?[0-9]{13,}\.[0-9]*[1-9]')
_SURROGATE = re.compile("[\ud800-\udfff]")  # lone surrogates: "\\ud800" in the JSON


class _Interner(dict[Any, int]):
    """``interner[value]`` -> a dense id, assigned in order of first sight."""

    def __missing__(self, key: Any) -> int:
        self[key] = len(self)
        return self[key]


#: ``Trace.extra``'s columns, in order: the args other than the two ids, volumes,
#: packed 3-D sizes (:func:`pack_xyz`) and the ``Input Dims`` text id.
EXTRA_COLUMNS = (*EXTRA_ARGS.values(), "grid", "block", "grid_xyz", "block_xyz", "input_dims")
#: Columns read from one arg together: a kernel's grid gives its volume and its packed size.
_TOGETHER = {"grid_xyz": "grid", "block_xyz": "block"}
_IdColumns = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]  # correlation, External id


def extra_columns(extra_args: bool | Collection[str]) -> tuple[str, ...]:
    """The ``Trace.extra`` columns a load with ``extra_args`` keeps, in order.

    ``True``: all of :data:`EXTRA_COLUMNS`; ``False``: none; else the names
    given (a string is one name), with the column read from the same arg:
    ``grid`` with ``grid_xyz``, ``block`` with ``block_xyz``.
    """
    if isinstance(extra_args, bool):
        return EXTRA_COLUMNS if extra_args else ()
    names = {extra_args} if isinstance(extra_args, str) else set(extra_args)
    unknown = sorted(names - set(EXTRA_COLUMNS))
    if unknown:
        raise ValueError(f"extra_args: no such column {', '.join(map(repr, unknown))} "
                         f"(the columns: {', '.join(EXTRA_COLUMNS)})")  # fmt: skip
    names |= {_TOGETHER.get(n, n) for n in names}
    names |= {n for n, arg in _TOGETHER.items() if arg in names}
    return tuple(n for n in EXTRA_COLUMNS if n in names)


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

    def __init__(self, label: str, base_ns: int, extra_args: bool | Collection[str] = True) -> None:
        self.label, self.base_ns = label, base_ns
        #: The ``Trace.extra`` columns kept (:func:`extra_columns`).
        self.kept = extra_columns(extra_args)
        #: As :func:`tracereader.load` takes it: ``True``, ``False`` (the two ids of
        #: the args only) or the columns to keep, as a frozenset.
        self.extra_args = extra_args if isinstance(extra_args, bool) else frozenset(self.kept)
        #: Keep the ``[memory]`` events and the communication events' args.
        self.side = extra_args is not False
        kept_attrs = {*_ID_ATTRS, *self.kept}
        self._attrs = {k: tuple(a for a in _KIND_ARGS.get(k, _ALL_ARGS) if a in kept_attrs)
                       for k in range(len(Kind))}  # fmt: skip
        self.names, self.cats, self.lanes = _Interner(), _Interner(), _Interner()
        self.texts = _Interner()  # args.Input Dims, whitespace dropped
        self._raw_ids: dict[bytes, int] = {}  # Input Dims as written -> id in texts
        self.cat_kind: list[int] = []
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.chunks: dict[str, list[npt.NDArray[Any]]] = {}
        #: ``(rows, {arg: values})``, rows numbering this builder's events in file order.
        self.args: list[Group] = []
        self.n_rows = 0
        self.notes: dict[str, int] = {}
        self.n_flows = self.n_instants = 0
        #: What :mod:`tracereader._side` keeps: [memory] instants, communication args.
        self.memory_events: list[MemoryEvent] = []
        self.comm_args: list[tuple[str, dict[str, Any]]] = []
        self._comm_ids: list[int] = []  # name ids that is_comm_name accepts
        #: Communication events in the last batch: the decoder adds their args.
        self.comm_rows = 0
        self._names_seen = 0  # names checked by is_comm_name so far

    def note(self, template: str, n: int = 1) -> None:
        """Count one kind of repair; ``template`` has ``{n}`` and plural ``{s}`` slots."""
        self.notes[template] = self.notes.get(template, 0) + n

    def _chunk(self, key: str, values: npt.NDArray[Any]) -> None:
        self.chunks.setdefault(key, []).append(values)

    def add(self, events: list[Any]) -> None:
        """Turn one batch into column chunks; metadata and counts on the way."""
        self.comm_rows = 0
        phases, xs, instants = _by_phase(events)
        self.n_flows += phases["s"] + phases["f"] + phases["t"]
        self.n_instants += len(instants)
        if instants and self.side:
            self.memory_events += memory_events(instants)
        if phases["M"]:
            for ev in events:
                if ev.ph == "M" and ev.name == "thread_name" and ev.args is not None:
                    name = ev.args.name
                    text = name if isinstance(name, str) else json.dumps(name)
                    self.thread_names[(ev.pid, ev.tid)] = "" if name is None else text
        n = len(xs)
        if not n:
            return
        self._chunk("ts_us", np.fromiter(map(_TS, xs), np.float64, n))  # None: NaN
        self._chunk("dur_us", np.fromiter(map(_DUR, xs), np.float64, n))
        name_id = np.fromiter(map(self.names.__getitem__, map(_NAME, xs)), np.int32, n)
        self._chunk("name_id", name_id)
        if len(self.names) > self._names_seen and self.side:
            new = itertools.islice(self.names.items(), self._names_seen, None)
            self._comm_ids += [i for name, i in new if is_comm_name(name)]
            self._names_seen = len(self.names)
        self.comm_rows = int(np.isin(name_id, self._comm_ids).sum()) if self._comm_ids else 0
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
            attrs = self._attrs[k]
            if not len(rows) or not attrs:
                continue
            some = [args[rows[0]]] if len(rows) == 1 else itemgetter(*rows.tolist())(args)
            values = {attr: self._ints(some, attr) for attr in attrs}
            if k == Kind.KERNEL:
                if "grid" in self.kept:
                    values["grid"], values["grid_xyz"] = _sizes([a.grid for a in some])
                if "block" in self.kept:
                    values["block"], values["block_xyz"] = _sizes([a.block for a in some])
            elif k == Kind.CPU_OP and "input_dims" in self.kept:
                dims = self._text_ids([a.input_dims for a in some])
                if any(d >= 0 for d in dims):
                    values["input_dims"] = np.asarray(dims, np.int64)
            self.args.append((rows.astype(np.int64) + self.n_rows, values))
        self.n_rows += n

    def compact(self) -> None:
        """Join each column's chunks into one (the same values, in the same order)."""
        for key, chunks in self.chunks.items():
            if len(chunks) > 1:
                self.chunks[key] = [np.concatenate(chunks)]

    def merge(self, other: Columns) -> None:
        """Append the columns of the events that follow ours in the file."""
        names = np.fromiter(map(self.names.__getitem__, other.names), np.int32, len(other.names))
        cats = np.fromiter(map(self.cats.__getitem__, other.cats), np.int32, len(other.cats))
        lanes = np.fromiter(map(self.lanes.__getitem__, other.lanes), np.int32, len(other.lanes))
        texts = np.fromiter(map(self.texts.__getitem__, other.texts), np.int64, len(other.texts))
        for _, values in other.args:
            if "input_dims" in values:
                dims = values["input_dims"]
                values["input_dims"] = np.where(dims >= 0, texts[np.maximum(dims, 0)], -1)
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
        self.memory_events += other.memory_events
        self.comm_args += other.comm_args

    def _text_ids(self, values: list[Any]) -> list[int]:
        """:meth:`_text` of each value; the Input Dims of a batch of ops."""
        kinds = set(map(type, values))
        if len(kinds) != 1 or kinds & {list, tuple, dict, str, int, float, type(None)}:
            return [self._text(v) for v in values]
        # msgspec's Raw, as written: look the bytes up at once, each new text once
        ids = list(map(self._raw_ids.get, map(bytes, values)))
        return [self._text(values[i]) if d is None else d for i, d in enumerate(ids)]

    def _text(self, value: Any) -> int:
        """Id of a JSON value in :attr:`texts`, whitespace dropped (-1: absent).

        ``value`` is the raw JSON (msgspec's ``Raw``) or, on the tolerant
        path, the decoded value; both give the same text.
        """
        if value is None:
            return -1
        if isinstance(value, (list, tuple, dict, str, int, float)):
            text = json.dumps(value, separators=(",", ":"))
        else:
            raw = bytes(value)
            known = self._raw_ids.get(raw)
            if known is not None:
                return known
            if not raw:
                self._raw_ids[raw] = -1
                return -1
            text = raw.translate(None, b" \t\r\n").decode("utf-8", "replace")
            self._raw_ids[raw] = self.texts[text]
        return self.texts[text]

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
            elif isinstance(v, str):  # as numpy reads it: int(v), else absent
                try:
                    number = int(v)
                except ValueError:
                    number = None
                if number is not None and -(2**63) <= number < 2**63:
                    out[i] = number
                else:
                    self.note(
                        f"treated {{n}} non-numeric value{{s}} in args.{_RAW_KEY[attr]} as absent"
                    )
        return out

    def finish(
        self,
        meta: dict[str, Any],
        parser: str,
        repairs: list[str],
        ts_ns: npt.NDArray[np.int64] | None = None,
    ) -> Trace:
        """Concatenate, drop unusable rows, convert to ns, sort and build the Trace.

        ``ts_ns``: the start of every complete event in file order, read
        exactly from the text (see :func:`needs_exact_ts`); by default the
        float ``ts`` are converted.
        """
        if not self.chunks:
            raise TraceError(f"{self.label}: a trace with no complete events")
        col = {key: np.concatenate(self.chunks.pop(key)) for key in list(self.chunks)}
        ts_us, dur_us = col.pop("ts_us"), col.pop("dur_us")
        dur_us[np.isnan(dur_us)] = 0.0  # "dur" missing: an instant-like complete event
        ok = np.isfinite(ts_us) & np.isfinite(dur_us) & (np.abs(ts_us) < _MAX_US)
        ok &= np.abs(dur_us) < _MAX_US
        if not ok.all():
            self.note("skipped {n} complete event{s} without a usable ts/dur", int((~ok).sum()))
        keys = list(self.lanes)
        no_device = np.array([is_gpu and not _is_device(pid) for pid, _, is_gpu in keys], bool)
        if no_device.any():
            bad = ok & no_device[col["lane"]]
            if bad.any():
                self.note(
                    "skipped {n} GPU event{s} whose pid is not a device number", int(bad.sum())
                )
                ok &= ~bad
        kept: npt.NDArray[np.int64] | None = None  # file rows left, when some are dropped
        if not ok.all():
            kept = np.flatnonzero(ok)
            ts_us, dur_us = ts_us[kept], dur_us[kept]
            col = {key: values[kept] for key, values in col.items()}
            if ts_ns is not None:
                ts_ns = ts_ns[kept]
        if not len(ts_us):
            raise TraceError(f"{self.label}: a trace with no complete events")
        if ts_ns is None:
            ts_ns = _us_to_ns(ts_us)
        if self.base_ns and int(ts_ns.max()) > 2**63 - 1 - self.base_ns:
            self.note("ignored baseTimeNanoseconds: added to these ts (absolute already) "
                      "it would pass the int64 range")  # fmt: skip
        else:
            ts_ns = ts_ns + self.base_ns
        dur_ns = _us_to_ns(dur_us)
        if (dur_ns < 0).any():
            self.note("clamped {n} negative duration{s} to 0", int((dur_ns < 0).sum()))
            np.maximum(dur_ns, 0, out=dur_ns)
        del ts_us, dur_us
        used = np.zeros(len(keys), dtype=bool)
        used[col["lane"]] = True
        new_id = np.cumsum(used, dtype=np.int32) - 1  # hide lanes whose events were all dropped
        col["lane"] = new_id[col["lane"]]
        lanes = [
            Lane(int(new_id[i]), pid, tid, is_gpu, self.thread_names.get((pid, tid), "").strip())
            for i, (pid, tid, is_gpu) in enumerate(keys)
            if used[i]
        ]
        names, cats, lanes = self._printable(list(self.names), list(self.cats), lanes)
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
            names=names,
            cats=cats,
            lanes=lanes,
            extra=extra,
            meta=meta,
            texts=list(self.texts),
            repairs=repairs + [t.format(n=n, s="s" * (n != 1)) for t, n in self.notes.items()],
            source=self.label,
            parser=parser,
            n_flows=self.n_flows,
            n_instants=self.n_instants,
            memory_events=self.memory_events,
            comm_args=self.comm_args,
        )

    def _printable(
        self, names: list[str], cats: list[str], lanes: list[Lane]
    ) -> tuple[list[str], list[str], list[Lane]]:
        """Names, categories and lane labels with every lone surrogate made U+FFFD.

        JSON may escape half of a surrogate pair alone (``"op"`` followed by the
        escape of U+D800); Python then holds a string that cannot be encoded as
        UTF-8, and printing it would fail.
        """
        texts = [*names, *cats, *(str(v) for ln in lanes for v in (ln.pid, ln.tid, ln.name))]
        if "".join(texts).isascii() or not _SURROGATE.search("".join(texts)):
            return names, cats, lanes
        n_bad = len(_SURROGATE.findall("".join(texts)))
        self.note("replaced {n} lone surrogate escape{s} in names with U+FFFD", n_bad)

        def fix(v: Any) -> Any:
            return _SURROGATE.sub("\ufffd", v) if isinstance(v, str) else v

        lanes = [Lane(ln.index, fix(ln.pid), fix(ln.tid), ln.is_gpu, fix(ln.name)) for ln in lanes]
        return [fix(n) for n in names], [fix(c) for c in cats], lanes

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
        names = self.kept  # the others are not read: no column at all
        return (ids["correlation"], ids["external_id"]), ArgColumns(names, groups, len(rows))


_ENVELOPE_STR = ("ph", "name", "cat")


def to_record(ev: Any, columns: Columns, args_type: type, event_type: type) -> Any:
    """One decoded JSON event -> the record the fast path would have made.

    Values of the wrong type are replaced by what the fast path treats as
    absent, and counted in ``columns.notes`` so that the repair is reported.
    A string in a numeric arg is kept: :class:`Columns` reads it as the
    integer it spells, or as absent (and notes it), on both paths. The fast
    path also uses this for a piece of the file msgspec's types refused.
    """
    if not isinstance(ev, dict):
        columns.note("skipped {n} trace event{s} that are not JSON objects")
        return None
    fields: dict[str, Any] = {}
    for key in _ENVELOPE_STR:
        value = ev.get(key, "")
        if not isinstance(value, str):
            value = "" if value is None else json.dumps(value)
            if key != "name":
                columns.note(f"read {{n}} non-string '{key}' value{{s}} as text")
        fields[key] = value
    for key in ("pid", "tid"):
        value = ev.get(key, "")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        elif isinstance(value, bool) or not isinstance(value, (int, str)):
            value = json.dumps(value)
        fields[key] = value
    for key in ("ts", "dur"):
        value = ev.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            columns.note(f"treated {{n}} non-numeric '{key}' value{{s}} as missing")
            value = None
        fields[key] = value
    args = ev.get("args")
    if isinstance(args, dict):
        kept = {}
        for raw, attr in INT_ARGS.items():
            value = args.get(raw)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                columns.note(f"treated {{n}} non-numeric value{{s}} in args.{raw} as absent")
                continue
            kept[attr] = value
        for key in ("grid", "block", "name"):
            if key in args:
                kept[key] = args[key]
        if "Input Dims" in args:
            kept["input_dims"] = args["Input Dims"]
        for raw, attr in MEMORY_ARGS.items():
            if raw in args:
                kept[attr] = args[raw]
        fields["args"] = args_type(**kept)
    return event_type(**fields)


def needs_exact_ts(columns: Columns, text: Buffer | str) -> bool:
    """Whether the float ``ts`` lost precision: absolute µs with a fraction.

    True for traces without ``baseTimeNanoseconds`` whose ``ts`` are epoch
    µs (about 1.7e15) written with a ns fraction (torch about 2.2-2.3): a
    float64 holds those only to 0.25 µs, so the loader reads them again
    exactly (:func:`exact_ns`). Most such files show it at once as
    non-integer floats; where every float is whole (integer µs, as torch 1.x
    writes, or fractions that all rounded away), ``text``, the JSON, is
    searched for a big ``ts`` with a fraction. Relative ``ts`` are exact as
    floats.
    """
    if columns.base_ns:
        return False
    big_ts = False
    for ts in columns.chunks.get("ts_us", []):
        big = np.abs(ts) >= _EXACT_US
        if big.any():
            if (ts[big] != np.floor(ts[big])).any():
                return True
            big_ts = True
    if not big_ts:
        return False
    if isinstance(text, str):
        return re.search(_BIG_FRACTION.pattern.decode(), text) is not None
    return _BIG_FRACTION.search(text) is not None


def exact_ns(values: list[Any]) -> npt.NDArray[np.int64]:
    """``ts`` as written (Decimal for JSON floats, int) -> int64 ns, rounded half to even.

    Anything else (null, a string, a value out of range) gives 0: the float
    column marks those rows unusable and they are dropped.
    """
    out = np.zeros(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if isinstance(v, decimal.Decimal) and v.is_finite():
            ns = int((v * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))
        elif isinstance(v, int) and not isinstance(v, bool):
            ns = v * 1000
        elif isinstance(v, float) and abs(v) < _MAX_US:
            ns = round(v * 1000)
        else:
            continue
        if -(2**63) <= ns < 2**63:
            out[i] = ns
    return out


def _by_phase(events: list[Any]) -> tuple[Counter[str], list[Any], list[Any]]:
    """Events per phase (``ph``), and the complete (``"X"``) and instant events, in order.

    Where every phase is one ASCII letter (always, in Kineto's traces), numpy
    counts their codes and picks the events out; else a Counter does.
    """
    phs = list(map(_PH, events))
    joined = "".join(phs)
    if len(joined) != len(phs) or not joined.isascii():
        phases = Counter(phs)
        xs = events if phases["X"] == len(events) else [ev for ev in events if ev.ph == "X"]
        return phases, xs, [ev for ev in events if ev.ph in ("i", "I")]
    codes = np.frombuffer(joined.encode(), dtype=np.uint8)
    counts = np.bincount(codes, minlength=128)
    phases = Counter({chr(c): int(counts[c]) for c in np.flatnonzero(counts).tolist()})
    xs = events
    if phases["X"] != len(events):
        xs = list(itertools.compress(events, (codes == ord("X")).tolist()))
    instants: list[Any] = []
    if phases["i"] or phases["I"]:
        instants = list(itertools.compress(events, np.isin(codes, _INSTANT_CODES).tolist()))
    return phases, xs, instants


_INSTANT_CODES = np.array([ord("i"), ord("I")], dtype=np.uint8)


def _sizes(dims: list[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`_volumes` and :func:`_packed` of the same ``[x, y, z]`` lists, read once."""
    try:
        xyz = np.array(dims, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        xyz = None
    if xyz is not None and xyz.ndim == 2 and xyz.shape[1] == 3 and (xyz >= 0).all():
        volumes = xyz.prod(axis=1) if (xyz < 2**21).all() else _volumes(dims)
        fits = (xyz[:, 0] < 2**31).all() and (xyz[:, 1:] < 2**16).all()
        packed = xyz[:, 0] << 32 | xyz[:, 1] << 16 | xyz[:, 2] if fits else _packed(dims)
        return np.asarray(volumes, np.int64), np.asarray(packed, np.int64)
    return np.asarray(_volumes(dims), np.int64), _packed(dims)


def _is_device(pid: Any) -> bool:
    """A GPU event's pid must be a device number (not ``"GPU 0"``, 1.5 or 2**64 - 1)."""
    return isinstance(pid, int) and not isinstance(pid, bool) and 0 <= pid < _MAX_DEVICE


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


def pack_xyz(xyz: Any) -> int:
    """``[x, y, z]`` -> ``x << 32 | y << 16 | z`` (-1 if not that, or out of range).

    CUDA caps a grid's y and z (and a block's every size) below 2**16 and a
    grid's x below 2**31, so the three sizes fit one int64 exactly.
    """
    if not isinstance(xyz, list) or len(xyz) != 3:
        return -1
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in xyz):
        return -1
    x, y, z = xyz
    return x << 32 | y << 16 | z if x < 2**31 and y < 2**16 and z < 2**16 else -1


def _packed(dims: list[Any]) -> npt.NDArray[np.int64]:
    """:func:`pack_xyz` of each ``[x, y, z]``; at once where all are plain sizes."""
    try:
        xyz = np.array(dims, dtype=np.int64)
        fits = xyz.ndim == 2 and xyz.shape[1] == 3 and (xyz >= 0).all()
        if fits and (xyz[:, 0] < 2**31).all() and (xyz[:, 1:] < 2**16).all():
            packed: npt.NDArray[np.int64] = xyz[:, 0] << 32 | xyz[:, 1] << 16 | xyz[:, 2]
            return packed
    except (TypeError, ValueError, OverflowError):
        pass
    return np.asarray([pack_xyz(v) for v in dims], np.int64)


def unpack_xyz(packed: int) -> tuple[int, int, int] | None:
    """The ``(x, y, z)`` :func:`pack_xyz` packed, or ``None`` for -1."""
    if packed < 0:
        return None
    return packed >> 32, (packed >> 16) & 0xFFFF, packed & 0xFFFF


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
