"""The tolerant loading path: the stdlib ``json`` module decodes the text.

Used when msgspec refuses the bytes (raw control characters in strings,
invalid UTF-8, ``NaN`` tokens, a field of an unexpected type), since ``json``
accepts all of those; every fix is written to ``trace.repairs``. Also the only
path where msgspec is not installed. Events reach the same
:class:`~tracereader._columns.Columns` builder as on the fast path.
"""

from __future__ import annotations

import gc
import json
import re
from typing import Any

from ._columns import INT_ARGS, Buffer, Columns, PlainArgs, PlainEvent, TraceError, base_ns
from ._events import Trace

__all__ = ["load_tolerant"]

#: Events per batch on the tolerant path.
BATCH_EVENTS = 50_000

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # what "surrogateescape" makes of a bad byte


def load_tolerant(data: Buffer, label: str, parser: str = "tolerant") -> Trace:
    """Decode with stdlib ``json`` (slow, forgiving) and report what it forgave.

    ``parser`` names the path in ``trace.parser``: ``"tolerant"`` after msgspec
    refused the bytes, ``"stdlib"`` where msgspec is not installed.
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
    columns = Columns(label, base_ns(meta))
    make = _record_types()
    for start in range(0, len(events), BATCH_EVENTS):
        batch = [_record(ev, columns, *make) for ev in events[start : start + BATCH_EVENTS]]
        columns.add([ev for ev in batch if ev is not None])
    return columns.finish(meta, parser=parser, repairs=repairs)


_ENVELOPE_STR = ("ph", "name", "cat")


def _record_types() -> tuple[type, type]:
    """The args and event record types: msgspec's gc-free structs if installed."""
    try:
        from ._fast import ArgsRecord, EventRecord
    except ModuleNotFoundError as exc:
        if exc.name != "msgspec":
            raise
        return PlainArgs, PlainEvent
    return ArgsRecord, EventRecord


def _record(ev: Any, columns: Columns, args_type: type, event_type: type) -> Any:
    """One decoded JSON event -> the record the fast path would have made.

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
        for raw, attr in INT_ARGS.items():
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
        fields["args"] = args_type(**kept)
    return event_type(**fields)
