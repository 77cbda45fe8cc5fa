"""The fast loading path: msgspec decodes the ``traceEvents`` array in pieces.

The file is memory-mapped (or gunzipped), the array is located from the head
and tail of the file, and cut at event boundaries into pieces of about 4 MB.
msgspec decodes each piece into small typed structs declared ``gc=False`` (the
cyclic garbage collector never sees them). The args struct names only the
handful of args the analyses use, so every other key (shapes, call stacks,
kernel files...) is skipped without ever becoming a Python object. Each piece
becomes numpy column chunks at once and its objects are dropped, so memory
stays close to the size of the JSON text. Big files are shared between forked
processes, each decoding a contiguous run of pieces.

The only module that imports msgspec; :func:`tracereader._load.load` imports it
when it loads, so ``import tracereader`` works where msgspec is not installed.
"""

from __future__ import annotations

import contextlib
import decimal
import functools
import os
import pickle
import re
import sys
import threading
import warnings
from collections.abc import Collection
from typing import Any

import msgspec
import numpy as np

from ._columns import (
    Buffer,
    Columns,
    NumOrText,
    TraceError,
    base_ns,
    exact_ns,
    extra_columns,
    needs_exact_ts,
    skip_space,
    to_record,
)
from ._events import Trace
from ._side import ABSENT, MEMORY_ARGS, comm_from_dicts, is_comm_name

__all__ = ["ArgsRecord", "EventRecord", "NotFast", "load_fast"]

#: Bytes of JSON decoded per msgspec call: the Python objects of one piece
#: (about 10k events) live only until the piece is turned into columns. Small
#: pieces reuse the memory the previous piece's objects just freed, where big
#: ones fault in fresh pages for each piece.
PIECE_BYTES = 4 << 20
#: Event arrays at least this big are decoded by several processes.
PARALLEL_BYTES = 64 << 20
#: Most processes :func:`load_fast` uses by default.
MAX_WORKERS = 4
#: Pipe buffer a helper sends its columns through (Linux's default limit).
PIPE_BYTES = 1 << 20

_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")


class NotFast(Exception):
    """msgspec refused the input: try the tolerant path."""


class ArgsRecord(msgspec.Struct, gc=False):
    """The few ``args`` the analyses need; msgspec skips every other key unseen.

    Same fields and defaults as :class:`~tracereader._columns.PlainArgs`. The
    numeric args also accept a string (ROCm writes ``"stream": "0x0"``), so
    that one odd value never stops msgspec: :class:`Columns` reads a string
    that is an integer literal as that integer and any other as absent.
    """

    correlation: NumOrText = -1
    external_id: NumOrText = msgspec.field(default=-1, name="External id")
    bytes: NumOrText = -1
    registers: NumOrText = msgspec.field(default=-1, name="registers per thread")
    shared_mem: NumOrText = msgspec.field(default=-1, name="shared memory")
    occupancy_pct: NumOrText = msgspec.field(default=-1, name="est. achieved occupancy %")
    python_id: NumOrText = msgspec.field(default=-1, name="Python id")
    python_parent_id: NumOrText = msgspec.field(default=-1, name="Python parent id")
    seq: NumOrText = msgspec.field(default=-1, name="Sequence number")
    stream: NumOrText = -1
    grid: Any = None  # kernels: [x, y, z] blocks
    block: Any = None  # kernels: [x, y, z] threads per block
    name: Any = None  # thread_name metadata
    #: cpu_op with record_shapes: kept as raw JSON text, never decoded
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")
    # [memory] instants (tracereader._side.MEMORY_ARGS), in the order Kineto writes them
    total_reserved: Any = msgspec.field(default=ABSENT, name="Total Reserved")
    total_allocated: Any = msgspec.field(default=ABSENT, name="Total Allocated")
    mem_bytes: Any = msgspec.field(default=ABSENT, name="Bytes")
    device_id: Any = msgspec.field(default=ABSENT, name="Device Id")
    device_type: Any = msgspec.field(default=ABSENT, name="Device Type")
    addr: Any = msgspec.field(default=ABSENT, name="Addr")


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


class CommRecord(msgspec.Struct, gc=False):
    """A communication event's name, phase and whole ``args`` (:mod:`tracereader._side`)."""

    ph: str = ""
    name: str = ""
    args: dict[str, Any] | None = None


class TsRecord(msgspec.Struct, gc=False):
    """An event's phase and its ``ts`` as written: a JSON float arrives as a Decimal."""

    ph: str = ""
    ts: Any = None


_TOP: msgspec.json.Decoder[dict[str, msgspec.Raw]] = msgspec.json.Decoder(dict[str, msgspec.Raw])
_EVENTS: msgspec.json.Decoder[list[EventRecord]] = msgspec.json.Decoder(list[EventRecord])
_ANY_EVENTS: msgspec.json.Decoder[list[Any]] = msgspec.json.Decoder(list[Any])
_COMM_EVENT: msgspec.json.Decoder[CommRecord] = msgspec.json.Decoder(CommRecord)
#: Where a communication event's name starts (``_side.is_comm_name``; checked again once decoded).
_COMM_NAME = re.compile(rb'"name"[ \t\r\n]*:[ \t\r\n]*"(?:record_param_comms|[nNrR][cC][cC][lL])')
_TS: msgspec.json.Decoder[list[TsRecord]] = msgspec.json.Decoder(
    list[TsRecord], float_hook=decimal.Decimal
)


def _cut_events(keep: Collection[str]) -> msgspec.json.Decoder[Any]:
    """The decoder of a piece whose args are :class:`ArgsRecord` cut to ``keep``'s fields.

    msgspec skips every other arg unseen.
    """
    fields = [(f.name, f.type, msgspec.field(default=f.default, name=f.encode_name))
              for f in msgspec.structs.fields(ArgsRecord) if f.name in keep]  # fmt: skip
    args = msgspec.defstruct("SomeArgsRecord", fields, gc=False)
    envelope = [(f.name, (args | None) if f.name == "args" else f.type, f.default)
                for f in msgspec.structs.fields(EventRecord)]  # fmt: skip
    event = msgspec.defstruct("SomeArgsEventRecord", envelope, gc=False)
    return msgspec.json.Decoder(list[event])  # type: ignore[valid-type]


#: The two ids and thread names alone (``extra_args=False``).
_IDS_EVENTS = _cut_events({"correlation", "external_id", "name"})


@functools.lru_cache(maxsize=8)
def _events_decoder(extra_args: bool | frozenset[str]) -> msgspec.json.Decoder[Any]:
    """The decoder of a piece for a load with ``extra_args`` (as :class:`Columns` keeps it).

    For some columns, :class:`ArgsRecord` cut to their args, the ids, thread
    names and the ``[memory]`` args.
    """
    if isinstance(extra_args, bool):
        return _EVENTS if extra_args else _IDS_EVENTS
    return _cut_events(
        {"correlation", "external_id", "name", *MEMORY_ARGS.values(), *extra_columns(extra_args)}
    )


def load_fast(
    holder: list[Buffer], label: str, workers: int | None, extra_args: bool | Collection[str] = True
) -> Trace:
    """Decode with msgspec piece by piece; ``holder[0]`` is released once decoded.

    ``workers``, ``extra_args``: as for :func:`tracereader.load`. Raises
    :class:`NotFast` when msgspec refuses the bytes, and :class:`TraceError`
    when they are no trace.
    """
    data, workers = holder[0], _workers(workers)
    try:
        meta, buffer, start, stop = _locate(data, label, quick=True)
        columns = Columns(label, base_ns(meta), extra_args)
        spans = _spans(buffer, start, stop)
        try:
            _decode_spans(buffer, spans, columns, workers)
        except msgspec.DecodeError:
            # A cut fell inside a string, or the quick look at head and tail
            # was fooled (or the JSON is bad): scan it all, decode in one go.
            meta, buffer, start, stop = _locate(data, label, quick=False)
            columns = Columns(label, base_ns(meta), extra_args)
            spans = [(start + 1, stop)]
            _decode_into(buffer, spans, columns)
        ts_ns = _exact_ts(buffer, spans) if needs_exact_ts(columns, buffer) else None
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise TraceError(f"{label}: JSON ends early (the file was cut off)") from None
        raise NotFast from None
    except msgspec.ValidationError:
        raise NotFast from None
    except RecursionError:
        raise TraceError(f"{label}: JSON nested too deeply to be a trace") from None
    del buffer, data
    holder.clear()  # the JSON bytes go now, before the columns are sorted
    return columns.finish(meta, parser="fast", repairs=[], ts_ns=ts_ns)


def _locate(data: Buffer, label: str, quick: bool) -> tuple[dict[str, Any], Buffer, int, int]:
    """Find the ``traceEvents`` array: ``(meta, buffer, start, stop)``.

    ``buffer[start]`` is its ``[`` and ``buffer[stop]`` its ``]``. The quick
    way reads only the head and tail of the file (Kineto writes a little
    metadata, the array, then ``traceName``); decoding the pieces then
    proves it right. The general way scans the whole document with msgspec.
    """
    first = skip_space(data)
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
                part = Columns(columns.label, columns.base_ns, columns.extra_args)
                _decode_into(buffer, [spans[i] for i in share], part)
            columns.merge(part)
    except BaseException:
        for helper, _ in pending:
            helper.abandon()
        raise


def _decode_into(buffer: Buffer, spans: list[tuple[int, int]], columns: Columns) -> None:
    # Every piece is copied into the same scratch buffer: no fresh pages per piece.
    scratch = bytearray(max(end - begin for begin, end in spans) + 2)
    decoder = _events_decoder(columns.extra_args)
    for begin, end in spans:
        piece = _piece(buffer, begin, end, scratch)
        dicts = None
        try:
            events = decoder.decode(piece)
        except msgspec.ValidationError:
            # A value of an unexpected type (a float pid, a non-string name):
            # only this piece is read the tolerant way, each odd value costing
            # its field or its event, with the repair noted.
            dicts = _ANY_EVENTS.decode(piece)
            events = [to_record(ev, columns, ArgsRecord, EventRecord) for ev in dicts]
        columns.add([ev for ev in events if ev is not None])
        if columns.comm_rows:
            columns.comm_args += (
                comm_from_dicts(dicts)
                if dicts is not None
                else _comm_args(piece, columns.comm_rows)
            )
        del events, dicts, piece  # this piece's records go before the next is decoded


def _comm_args(piece: Any, n: int) -> list[tuple[str, dict[str, Any]]]:
    """``(name, args)`` of the ``n`` communication events of a piece, in order.

    Each is decoded alone, from the ``{`` before its ``"name"`` to the next
    event boundary; if that finds other than ``n`` of them (a cut fooled by
    the text), the whole piece is decoded again as plain dicts.
    """
    data = bytes(piece) if isinstance(piece, memoryview) else piece
    found = []
    try:
        for match in _COMM_NAME.finditer(data):
            begin = data.rfind(b"{", 0, match.start())
            cut = _BOUNDARY.search(data, match.end())
            ev = _COMM_EVENT.decode(data[begin : cut.start() + 1 if cut else len(data) - 1])
            if ev.ph == "X" and is_comm_name(ev.name) and ev.args is not None:
                found.append((ev.name, ev.args))
    except (msgspec.DecodeError, msgspec.ValidationError):
        found = []
    return found if len(found) == n else comm_from_dicts(_ANY_EVENTS.decode(data))


def _exact_ts(buffer: Buffer, spans: list[tuple[int, int]]) -> Any:
    """``ts`` of every complete event in ns, read exactly from the JSON text.

    Needed for absolute µs with a ns fraction (``1700000000000000.123``, torch
    about 2.2-2.3): a float64 holds them only to 0.25 µs. A second, light pass
    decodes each ``ts`` as a Decimal; any other file never pays for it.
    """
    values = []
    for begin, end in spans:
        values += [ev.ts for ev in _TS.decode(_piece(buffer, begin, end)) if ev.ph == "X"]
    return exact_ns(values)


def _piece(buffer: Buffer, begin: int, end: int, scratch: bytearray | None = None) -> Any:
    """The events ``buffer[begin:end]`` as a JSON array (the whole array: a view, no copy).

    A piece is copied into ``scratch`` when given (it must be long enough),
    else into new bytes.
    """
    view = memoryview(buffer)
    if buffer[begin - 1] == ord("[") and buffer[end] == ord("]"):
        return view[begin - 1 : end + 1]
    if scratch is None:
        return b"".join((b"[", view[begin:end], b"]"))
    size = end - begin
    scratch[0], scratch[1 : size + 1], scratch[size + 1] = ord("["), view[begin:end], ord("]")
    return memoryview(scratch)[: size + 2]


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
    import fcntl  # only here: helpers are forked on Linux only (_workers)

    read_fd, write_fd = os.pipe()
    # A bigger pipe: fewer round trips for the helper's columns (tens of MB);
    # refused above /proc/sys/fs/pipe-max-size.
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
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
            columns = Columns(parent.label, parent.base_ns, parent.extra_args)
            _decode_into(buffer, spans, columns)
            columns.compact()  # one chunk per column: less to pickle and to join
            message: tuple[str, Columns | Exception | None] = ("ok", columns)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            message = ("error", exc)
        except RecursionError:
            message = ("failed", None)  # the parent meets it again and reports it
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
    return int(np.frombuffer(buffer, dtype=np.uint8).__array_interface__["data"][0])
