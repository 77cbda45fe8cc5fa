"""The tolerant loading path: the stdlib ``json`` module decodes the text.

Used when msgspec refuses the bytes (raw control characters in strings,
invalid UTF-8, ``NaN`` tokens, a field of an unexpected type), since ``json``
accepts all of those; every fix is written to ``trace.repairs``. Also the only
path where msgspec is not installed. Events reach the same
:class:`~tracereader._columns.Columns` builder as on the fast path.
"""

from __future__ import annotations

import contextlib
import decimal
import gc
import json
import re
from collections.abc import Collection, Iterator
from typing import Any

from ._columns import (
    Buffer,
    Columns,
    PlainArgs,
    PlainEvent,
    TraceError,
    base_ns,
    exact_ns,
    needs_exact_ts,
    to_record,
)
from ._events import Trace
from ._side import comm_from_dicts

__all__ = ["load_tolerant", "record_types"]

#: Events per batch on the tolerant path.
BATCH_EVENTS = 50_000

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # what "surrogateescape" makes of a bad byte


def load_tolerant(
    data: Buffer, label: str, parser: str = "tolerant", extra_args: bool | Collection[str] = True
) -> Trace:
    """Decode with stdlib ``json`` (slow, forgiving) and report what it forgave.

    ``parser`` names the path in ``trace.parser``: ``"tolerant"`` after msgspec
    refused the bytes, ``"stdlib"`` where msgspec is not installed.
    ``extra_args``: as for :func:`tracereader.load` (the args are all decoded
    here; :class:`Columns` keeps the columns asked for).
    """
    repairs: list[str] = []
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError:
        text = str(data, "utf-8", "surrogateescape")
        text, n_bad = _ESCAPED_BYTE.subn("\ufffd", text)
        repairs.append(f"replaced {n_bad} invalid UTF-8 byte{'s' * (n_bad != 1)}")
    del data
    constants: dict[str, int] = {}
    strict = True

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
            strict = False
            doc = json.loads(text, parse_constant=constant, strict=strict)
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
    columns = Columns(label, base_ns(meta), extra_args)
    make = record_types()
    for start in range(0, len(events), BATCH_EVENTS):
        batch = [to_record(ev, columns, *make) for ev in events[start : start + BATCH_EVENTS]]
        columns.add([ev for ev in batch if ev is not None])
        if columns.comm_rows:  # the args of its communication events, whole
            columns.comm_args += comm_from_dicts(events[start : start + BATCH_EVENTS])
    del doc, events
    ts_ns = None
    if needs_exact_ts(columns, text):  # absolute µs with a ns fraction: read the ts again, exactly
        with _gc_off():
            doc = json.loads(text, parse_float=decimal.Decimal, parse_constant=float, strict=strict)
        events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
        ts_ns = exact_ns([ev.get("ts") for ev in events if _is_complete(ev)])
        del doc, events
    del text
    return columns.finish(meta, parser=parser, repairs=repairs, ts_ns=ts_ns)


def _is_complete(ev: Any) -> bool:
    """What :meth:`Columns.add` counts as a complete event."""
    return isinstance(ev, dict) and ev.get("ph") == "X"


@contextlib.contextmanager
def _gc_off() -> Iterator[None]:
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc_was_on:
            gc.enable()


def record_types() -> tuple[type, type]:
    """The args and event record types: msgspec's gc-free structs if installed."""
    try:
        from ._fast import ArgsRecord, EventRecord
    except ModuleNotFoundError as exc:
        if exc.name != "msgspec":
            raise
        return PlainArgs, PlainEvent
    return ArgsRecord, EventRecord
