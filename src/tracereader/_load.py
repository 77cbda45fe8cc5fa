"""Bytes (.json / .json.gz) -> :class:`~tracereader._events.Trace` columns.

The only module that knows raw Chrome-trace keys. Loading has two paths that
produce identical columns:

* **fast** (``trace.parser == "fast"``): the file is memory-mapped (or
  gunzipped), the ``traceEvents`` array is located from the head and tail of
  the file, and cut at event boundaries into pieces of about 16 MB. msgspec
  decodes each piece into small typed structs declared ``gc=False`` (the
  cyclic garbage collector never sees them). The args struct names only the
  handful of args the analyses use, so every other key (shapes, call stacks,
  kernel files...) is skipped without ever becoming a Python object. Each
  piece becomes numpy column chunks at once and its objects are dropped, so
  memory stays close to the size of the JSON text. Big files are shared
  between forked processes, each decoding a contiguous run of pieces.
* **tolerant** (``trace.parser == "tolerant"``): when msgspec refuses the bytes
  (raw control characters in strings, invalid UTF-8, ``NaN`` tokens, a field of
  an unexpected type) the stdlib ``json`` module, which accepts all of those,
  decodes the text, and every fix is written to ``trace.repairs``.

Both paths feed the same :class:`Columns` builder. Anything that is not a trace
raises :class:`TraceError` with one line naming the file and the reason.
"""

from __future__ import annotations

import gc
import json
import mmap
import os
import pickle
import re
import sys
import threading
import warnings
import zlib
from collections import Counter
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ._events import CATEGORY_KIND, GPU_OP_KINDS, Kind, Lane, Trace

__all__ = ["TraceError", "load"]

Buffer = bytes | bytearray | mmap.mmap  # the JSON text: read, gunzipped or memory-mapped

#: Bytes of JSON decoded per msgspec call: the Python objects of one piece
#: (about 50k events) live only until the piece is turned into columns.
PIECE_BYTES = 16 << 20
#: Event arrays at least this big are decoded by several processes.
PARALLEL_BYTES = 64 << 20
#: Most processes :func:`load` uses by default.
MAX_WORKERS = 4
#: Bytes inflated per zlib call when reading .json.gz.
INFLATE_BYTES = 64 << 20
#: Uncompressed files at least this big are memory-mapped instead of read.
MMAP_BYTES = 1 << 20
#: Events per batch on the tolerant path.
BATCH_EVENTS = 50_000

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")
_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # what "surrogateescape" makes of a bad byte


class TraceError(ValueError):
    """The input is not a readable trace; the message is one line for the user."""


class _NotFast(Exception):
    """msgspec refused the input: try the tolerant path."""


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
_INT_ARGS = {**_ID_ARGS, **EXTRA_ARGS}  # JSON key -> attribute of ArgsRecord
_Num = int | float | None  # None: JSON null; an absent key reads as -1


class ArgsRecord(msgspec.Struct, gc=False):
    """The few ``args`` the analyses need; msgspec skips every other key unseen."""

    correlation: _Num = -1
    external_id: _Num = msgspec.field(default=-1, name="External id")
    bytes: _Num = -1
    registers: _Num = msgspec.field(default=-1, name="registers per thread")
    shared_mem: _Num = msgspec.field(default=-1, name="shared memory")
    occupancy_pct: _Num = msgspec.field(default=-1, name="est. achieved occupancy %")
    python_id: _Num = msgspec.field(default=-1, name="Python id")
    python_parent_id: _Num = msgspec.field(default=-1, name="Python parent id")
    seq: _Num = msgspec.field(default=-1, name="Sequence number")
    stream: _Num = -1
    grid: Any = None  # kernels: [x, y, z] blocks
    block: Any = None  # kernels: [x, y, z] threads per block
    name: Any = None  # thread_name metadata


class EventRecord(msgspec.Struct, gc=False):
    """One trace event's envelope. ``gc=False``: never tracked by the cyclic GC."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = ""
    tid: int | str = ""
    ts: float | None = None  # µs
    dur: float | None = None  # µs
    args: ArgsRecord | None = None


_NO_ARGS = ArgsRecord()
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[EventRecord])
_PH, _NAME, _CAT, _PID, _TID, _TS, _DUR = (
    attrgetter(a) for a in ("ph", "name", "cat", "pid", "tid", "ts", "dur")
)
_ATTR_GETTERS = {attr: attrgetter(attr) for attr in _INT_ARGS.values()}
_RAW_KEY = {attr: raw for raw, attr in _INT_ARGS.items()}
_GPU_ARGS = ("correlation", "external_id", "stream")
#: Which args each kind carries in Kineto's output; other kinds are read for all.
_KIND_ARGS = {
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


class _Interner(dict):
    """``interner[value]`` -> a dense id, assigned in order of first sight."""

    def __missing__(self, key: Any) -> int:
        self[key] = len(self)
        return self[key]


class Columns:
    """Accumulates batches of :class:`EventRecord` into numpy column chunks."""

    def __init__(self, label: str, base_ns: int) -> None:
        self.label, self.base_ns = label, base_ns
        self.names, self.cats, self.lanes = _Interner(), _Interner(), _Interner()
        self.cat_kind: list[int] = []
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.chunks: dict[str, list[np.ndarray]] = {}
        self.notes: dict[str, int] = {}
        self.n_flows = self.n_instants = 0

    def note(self, template: str, n: int = 1) -> None:
        """Count one kind of repair; ``template`` has ``{n}`` and plural ``{s}`` slots."""
        self.notes[template] = self.notes.get(template, 0) + n

    def _chunk(self, key: str, values: np.ndarray) -> None:
        self.chunks.setdefault(key, []).append(values)

    def add(self, events: list[EventRecord]) -> None:
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
        self._chunk("ts_us", np.array(list(map(_TS, xs)), dtype=np.float64))
        self._chunk("dur_us", np.array(list(map(_DUR, xs)), dtype=np.float64))
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
        ints = {attr: np.full(n, -1, np.int64) for attr in (*_ATTR_GETTERS, "grid", "block")}
        by_kind = np.argsort(kind, kind="stable")
        bounds = np.searchsorted(kind[by_kind], np.arange(len(Kind) + 1)).tolist()
        for k in range(len(Kind)):
            rows = by_kind[bounds[k] : bounds[k + 1]]
            if not len(rows):
                continue
            some = [args[rows[0]]] if len(rows) == 1 else itemgetter(*rows.tolist())(args)
            for attr in _KIND_ARGS.get(k, _ATTR_GETTERS):
                ints[attr][rows] = self._ints(list(map(_ATTR_GETTERS[attr], some)), attr)
            if k == Kind.KERNEL:
                ints["grid"][rows] = _volumes([a.grid for a in some])
                ints["block"][rows] = _volumes([a.block for a in some])
        for attr, values in ints.items():
            self._chunk(attr, values)

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
        self.thread_names.update(other.thread_names)  # the later record wins
        for template, n in other.notes.items():
            self.note(template, n)
        self.n_flows += other.n_flows
        self.n_instants += other.n_instants

    def _ints(self, values: list[Any], attr: str) -> np.ndarray:
        """int64 column; -1 for null or unusable values (wide ints are reported)."""
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
        if not ok.all():
            self.note("skipped {n} complete event{s} without a usable ts/dur", int((~ok).sum()))
            ts_us, dur_us = ts_us[ok], dur_us[ok]
            col = {key: values[ok] for key, values in col.items()}
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
        return Trace(
            ts_ns=ts_ns[order],
            dur_ns=dur_ns[order],
            kind=col.pop("kind"),
            name_id=col.pop("name_id"),
            cat_id=col.pop("cat_id"),
            lane=col.pop("lane"),
            correlation=col.pop("correlation"),
            external_id=col.pop("external_id"),
            names=list(self.names),
            cats=list(self.cats),
            lanes=lanes,
            extra=col,
            meta=meta,
            repairs=repairs + [t.format(n=n, s="s" * (n != 1)) for t, n in self.notes.items()],
            source=self.label,
            parser=parser,
            n_flows=self.n_flows,
            n_instants=self.n_instants,
        )


def _kind_of(cat: str) -> Kind:
    """Category -> Kind; torch 1.x capitalised some (``Operator``, ``Runtime``)."""
    return CATEGORY_KIND.get(cat, CATEGORY_KIND.get(cat.lower(), Kind.OTHER))


def _time_order(ts_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
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


def _volumes(dims: list[Any]) -> np.ndarray | list[int]:
    """``[[x, y, z], ...]`` -> ``x*y*z`` each (blocks per grid, threads per block)."""
    try:
        xyz = np.array(dims, dtype=np.int64)
        if xyz.ndim == 2 and xyz.shape[1] == 3 and (xyz >= 0).all() and (xyz < 2**21).all():
            return xyz.prod(axis=1)
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


def _us_to_ns(us: np.ndarray) -> np.ndarray:
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


# --------------------------------------------------------------------------- bytes
def _read_bytes(source: str | os.PathLike[str] | bytes) -> tuple[Buffer, str]:
    """Return the (gunzipped) JSON bytes and a label naming the input.

    Big uncompressed files are memory-mapped rather than read: the decoder
    then works on the page cache directly, with no copy of the file.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, label = bytes(source), "<bytes>"
    else:
        label = str(source)
        try:
            data = _map_or_read(Path(source))
        except FileNotFoundError:
            raise TraceError(f"{label}: no such file") from None
        except IsADirectoryError:
            raise TraceError(f"{label}: is a directory, not a trace file") from None
        except OSError as exc:
            raise TraceError(f"{label}: cannot read ({exc.strerror or exc})") from None
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, label)
    if data[:3] == _BOM:
        data = data[3:]
    start = _LEADING_SPACE.match(data).end()
    if start == len(data):
        raise TraceError(f"{label}: empty file")
    if data[start : start + 1] not in (b"{", b"["):
        raise TraceError(f"{label}: not a JSON trace (starts with {data[start : start + 8]!r})")
    return data, label


def _map_or_read(path: Path) -> Buffer:
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size < max(MMAP_BYTES, 1) or fh.read(2) == _GZIP_MAGIC:
            fh.seek(0)
            return fh.read()
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_SEQUENTIAL)
    return mapped


def _gunzip(data: bytes, label: str) -> bytearray:
    """Decompress every gzip member; a cut-off stream is an error, not a partial trace.

    The output grows in one ``bytearray`` (extended in place), so the peak is
    the JSON text once, not the twice a one-shot ``zlib.decompress`` needs to
    join its blocks.
    """
    out, rest = bytearray(), data
    try:
        while rest:
            inflater = zlib.decompressobj(wbits=31)
            while not inflater.eof:
                piece = inflater.decompress(rest, INFLATE_BYTES)
                rest = inflater.unconsumed_tail
                if not piece and not rest and not inflater.eof:
                    raise TraceError(f"{label}: truncated gzip data (the file was cut off)")
                out += piece
            rest = inflater.unused_data.lstrip(b"\x00")
    except zlib.error as exc:
        raise TraceError(f"{label}: corrupt gzip data ({exc})") from None
    return out


# --------------------------------------------------------------------------- entry point
def load(source: str | os.PathLike[str] | bytes, *, workers: int | None = None) -> Trace:
    """Load a torch.profiler (Kineto) Chrome trace into columns.

    Parameters
    ----------
    source
        A path to a ``.json`` or ``.json.gz`` file (gzip is detected from the
        first two bytes, not the name), or the raw bytes of one.
    workers
        Processes that decode a big file (over ``PARALLEL_BYTES``) in parallel:
        each forked worker takes a contiguous share of the event array and
        sends its columns back. ``None``: one per CPU, at most
        ``MAX_WORKERS``; ``1``: decode in this process only. Forking is used
        on Linux, from a process with a single Python thread (not in Jupyter);
        elsewhere, and whenever a worker fails, the parent decodes everything
        itself, with the same result.

    Returns
    -------
    Trace
        One row per complete (``ph: "X"``) event, sorted by start time.
        ``trace.parser`` says which path decoded it (``"fast"`` or
        ``"tolerant"``) and ``trace.repairs`` lists every fix that was needed.

    Raises
    ------
    TraceError
        With a one-line reason naming the input when it is not a trace: a
        missing file, a directory, an empty or cut-off file, JSON without
        ``traceEvents``, or a trace without a single complete event.

    Examples
    --------
    >>> trace = load("tests/data/h200/train_eager.json.gz")  # doctest: +SKIP
    >>> trace.parser, len(trace), trace.repairs  # doctest: +SKIP
    ('fast', 5012, [])
    """
    data, label = _read_bytes(source)
    holder = [data]
    del data
    try:
        return _load_fast(holder, label, _workers(workers))
    except _NotFast:
        return _load_tolerant(holder[0], label)


# --------------------------------------------------------------------------- fast path
def _load_fast(holder: list[Buffer], label: str, workers: int) -> Trace:
    """Decode with msgspec piece by piece; ``holder[0]`` is released once decoded."""
    data = holder[0]
    try:
        meta, buffer, start, stop = _locate(data, label, quick=True)
        columns = Columns(label, _base_ns(meta))
        try:
            _decode_spans(buffer, _spans(buffer, start, stop), columns, workers)
        except msgspec.DecodeError:
            # A cut fell inside a string, or the quick look at head and tail
            # was fooled (or the JSON is bad): scan it all, decode in one go.
            meta, buffer, start, stop = _locate(data, label, quick=False)
            columns = Columns(label, _base_ns(meta))
            columns.add(_EVENTS.decode(memoryview(buffer)[start : stop + 1]))
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise TraceError(f"{label}: JSON ends early (the file was cut off)") from None
        raise _NotFast from None
    except msgspec.ValidationError:
        raise _NotFast from None
    del buffer, data
    holder.clear()  # the JSON bytes go now, before the columns are sorted
    return columns.finish(meta, parser="fast", repairs=[])


def _locate(data: Buffer, label: str, quick: bool) -> tuple[dict[str, Any], Buffer, int, int]:
    """Find the ``traceEvents`` array: ``(meta, buffer, start, stop)``.

    ``buffer[start]`` is its ``[`` and ``buffer[stop]`` its ``]``. The quick
    way reads only the head and tail of the file (Kineto writes a little
    metadata, the array, then ``traceName``); decoding the pieces then
    proves it right. The general way scans the whole document with msgspec.
    """
    first = _LEADING_SPACE.match(data).end()
    if data[first] == ord("["):  # a bare event array (generic Chrome trace)
        stop = len(data) - 1
        while data[stop] in b" \t\r\n":
            stop -= 1
        if data[stop] != ord("]"):
            raise TraceError(f"{label}: JSON ends early (the file was cut off)")
        return {}, data, first, stop
    found = _split_top(data) if quick else None
    if found is not None:
        return found[0], data, found[1], found[2]
    top = _TOP.decode(data)
    if "traceEvents" not in top:
        raise TraceError(f"{label}: JSON but not a trace (no traceEvents list)")
    events = top.pop("traceEvents")
    if memoryview(events)[0] != ord("["):
        raise TraceError(f"{label}: JSON but not a trace (traceEvents is not a list)")
    meta = {k: msgspec.json.decode(v) for k, v in top.items()}
    start = _address(events) - _address(data)
    size = len(memoryview(events))
    if start >= 0 and start + size <= len(data):  # a view into data (msgspec does not copy)
        return meta, data, start, start + size - 1
    return meta, events, 0, size - 1


def _split_top(data: Buffer) -> tuple[dict[str, Any], int, int] | None:
    """Metadata and the array's span from the file's head and tail, or None.

    The key must appear in the first 16 MB; the array's closing bracket is
    searched backwards from the end of the file: the first candidate for which
    the document, with the array replaced by ``null``, decodes to an object
    whose ``traceEvents`` is ``null``. A bracket that closes a later list
    passes this test, but then the array's last piece ends in that list's
    content and fails to decode, which sends the caller to the full scan.
    """
    key = _EVENTS_KEY.search(data, 0, 1 << 24)
    if key is None:
        return None
    start, view = key.end() - 1, memoryview(data)
    stop = len(data)
    for _ in range(64):
        stop = data.rfind(b"]", max(start + 1, len(data) - (1 << 20)), stop)
        if stop < 0:
            return None
        try:
            doc = msgspec.json.decode(b"".join((view[:start], b"null", view[stop + 1 :])))
        except msgspec.DecodeError:
            continue
        if isinstance(doc, dict) and "traceEvents" in doc and doc["traceEvents"] is None:
            del doc["traceEvents"]
            return doc, start, stop
        return None
    return None


def _spans(buffer: Buffer, start: int, stop: int) -> list[tuple[int, int]]:
    """Cut the array ``buffer[start:stop + 1]`` into spans of about ``PIECE_BYTES``.

    From ``PIECE_BYTES`` on, the next ``},{`` ends a span. A cut is right when
    it falls between two events; one that falls inside a string or a nested
    value leaves that piece unbalanced, so decoding it fails and the caller
    decodes the array whole.
    """
    spans, pos = [], start + 1
    while pos + PIECE_BYTES < stop:
        cut = _BOUNDARY.search(buffer, pos + PIECE_BYTES, stop)
        if cut is None:
            break
        spans.append((pos, cut.start() + 1))
        pos = cut.end() - 1
    spans.append((pos, stop))
    return spans


def _decode_spans(
    buffer: Buffer, spans: list[tuple[int, int]], columns: Columns, workers: int
) -> None:
    """Decode every span into ``columns``, forking ``workers - 1`` helpers for big inputs."""
    shares = [
        list(part) for part in np.array_split(np.arange(len(spans)), min(workers, len(spans)))
    ]
    if len(shares) < 2 or spans[-1][1] - spans[0][0] < PARALLEL_BYTES:
        shares = [list(range(len(spans)))]
    pending = [(_fork(buffer, [spans[i] for i in share], columns), share) for share in shares[1:]]
    try:
        _decode_into(buffer, [spans[i] for i in shares[0]], columns)
        while pending:
            helper, share = pending.pop(0)
            part = helper.result()
            if part is None:  # the helper failed: do its share here
                part = Columns(columns.label, columns.base_ns)
                _decode_into(buffer, [spans[i] for i in share], part)
            columns.merge(part)
    except BaseException:
        for helper, _ in pending:
            helper.abandon()
        raise


def _decode_into(buffer: Buffer, spans: list[tuple[int, int]], columns: Columns) -> None:
    view = memoryview(buffer)
    for begin, end in spans:
        columns.add(_EVENTS.decode(b"".join((b"[", view[begin:end], b"]"))))


class _Helper:
    """A forked process decoding some spans; its columns come back through a pipe."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd

    def result(self) -> Columns | None:
        """The helper's columns; None if it failed (the caller redoes its share).

        A msgspec error in the helper is raised here, as if the parent had
        met it.
        """
        try:
            with os.fdopen(self.fd, "rb") as pipe:
                status, value = pickle.load(pipe)
        except Exception:
            status, value = "failed", None
        os.waitpid(self.pid, 0)
        if status == "error":
            raise value
        return value if status == "ok" else None

    def abandon(self) -> None:
        os.close(self.fd)  # the helper's write fails, and it exits
        os.waitpid(self.pid, 0)


def _fork(buffer: Buffer, spans: list[tuple[int, int]], parent: Columns) -> _Helper:
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        # Python >= 3.12 warns when forking a process that has native threads
        # (torch's pool, for one). The helper only decodes bytes with msgspec
        # and numpy, writes to a pipe and calls os._exit: it takes no lock
        # another thread could hold. Python threads rule forking out (_workers).
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        os.close(write_fd)
        return _Helper(pid, read_fd)
    try:  # the helper process: decode, send, and leave without any cleanup
        os.close(read_fd)
        try:
            columns = Columns(parent.label, parent.base_ns)
            _decode_into(buffer, spans, columns)
            message = ("ok", columns)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            message = ("error", exc)
        with os.fdopen(write_fd, "wb") as pipe:
            pickle.dump(message, pipe, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        os._exit(0)


def _workers(requested: int | None) -> int:
    """How many processes decode: ``requested``, or one per CPU up to ``MAX_WORKERS``."""
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return 1  # fork only where it is cheap and safe: Linux, one Python thread
    if requested is not None:
        return max(1, int(requested))
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def _address(buffer: Any) -> int:
    """Memory address of a buffer's first byte."""
    return np.frombuffer(buffer, dtype=np.uint8).__array_interface__["data"][0]


def _base_ns(meta: dict[str, Any]) -> int:
    """``baseTimeNanoseconds`` (torch >= 2.4 traces use relative ``ts``), else 0."""
    base = meta.get("baseTimeNanoseconds")
    if isinstance(base, bool) or not isinstance(base, (int, float)) or base != base:
        return 0
    return int(base) if 0 < base < 2**62 else 0


# --------------------------------------------------------------------------- tolerant path
def _load_tolerant(data: Buffer, label: str) -> Trace:
    """Decode with stdlib ``json`` (slow, forgiving) and report what it forgave."""
    repairs: list[str] = []
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError:
        text = str(data, "utf-8", "surrogateescape")
        text, n_bad = _ESCAPED_BYTE.subn("\ufffd", text)
        repairs.append(f"replaced {n_bad} invalid UTF-8 byte{'s' * (n_bad != 1)}")
    del data
    constants: dict[str, int] = {}

    def constant(token: str) -> float:
        constants[token] = constants.get(token, 0) + 1
        return float(token)

    gc_was_on = gc.isenabled()
    gc.disable()  # millions of small dicts: the cyclic GC would dominate the time
    try:
        try:
            doc = json.loads(text, parse_constant=constant)
        except json.JSONDecodeError as exc:
            if not exc.msg.startswith("Invalid control character"):
                raise
            constants.clear()
            doc = json.loads(text, parse_constant=constant, strict=False)
            repairs.append("accepted raw control characters in strings")
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            raise TraceError(f"{label}: JSON ends early (the file was cut off)") from None
        where = f"line {exc.lineno} column {exc.colno}"
        raise TraceError(f"{label}: not valid JSON ({exc.msg} at {where})") from None
    except RecursionError:
        raise TraceError(f"{label}: JSON nested too deeply to be a trace") from None
    finally:
        if gc_was_on:
            gc.enable()
    del text
    if constants:
        tokens = "/".join(sorted(constants))
        repairs.append(f"accepted {sum(constants.values())} {tokens} tokens (not valid JSON)")

    if isinstance(doc, list):
        events, meta = doc, {}
    elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events = doc.pop("traceEvents")
        meta = doc
    elif isinstance(doc, dict) and "traceEvents" in doc:
        raise TraceError(f"{label}: JSON but not a trace (traceEvents is not a list)")
    else:
        raise TraceError(f"{label}: JSON but not a trace (no traceEvents list)")
    columns = Columns(label, _base_ns(meta))
    for start in range(0, len(events), BATCH_EVENTS):
        batch = [_record(ev, columns) for ev in events[start : start + BATCH_EVENTS]]
        columns.add([ev for ev in batch if ev is not None])
    return columns.finish(meta, parser="tolerant", repairs=repairs)


_ENVELOPE_STR = ("ph", "name", "cat")


def _record(ev: Any, columns: Columns) -> EventRecord | None:
    """One decoded JSON event -> the struct the fast path would have made.

    Values of the wrong type are replaced by what the fast path treats as
    absent, and counted in ``columns.notes`` so that the repair is reported.
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
        for raw, attr in _INT_ARGS.items():
            value = args.get(raw)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                columns.note(f"treated {{n}} non-numeric value{{s}} in args.{raw} as absent")
                continue
            kept[attr] = value
        for key in ("grid", "block", "name"):
            if key in args:
                kept[key] = args[key]
        fields["args"] = ArgsRecord(**kept)
    return EventRecord(**fields)
