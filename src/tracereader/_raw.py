"""Events the column loader leaves out, read again from the trace file on demand.

:func:`~tracereader.load` keeps complete events (``ph: "X"``) and a dozen
numeric args. Two views need more: the ``[memory]`` instant events of a trace
recorded with ``profile_memory=True`` (:mod:`tracereader._memory`), and the
text args of communication kernels and ``record_param_comms`` ops
(``Collective name``, ``In msg nelems``, ``dtype``, ``Process Group Name``;
:mod:`tracereader._collectives`). :func:`raw_events` decodes the file a second
time and returns, as plain dicts, only the events a filter keeps.

It reads ``trace.source``; a trace loaded from bytes has no file to read
again, and then nothing is returned. msgspec decodes when installed (only
``name``, ``ph``, ``cat``, ``ts``, ``pid``, ``tid`` and, for kept events, ``args``), else the
stdlib ``json`` module does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._columns import base_ns
from ._events import Trace
from ._load import _read_bytes

__all__ = ["raw_events", "ts_ns_of"]

#: ``(name, ph, cat) -> keep?``
Keep = Callable[[str, str, str], bool]


def _decode_msgspec(data: Any, keep: Keep) -> list[dict[str, Any]]:
    import msgspec

    class Ev(msgspec.Struct):
        name: Any = None
        ph: Any = None
        cat: Any = None
        ts: Any = None
        pid: Any = None
        tid: Any = None
        args: msgspec.Raw | None = None

    class Doc(msgspec.Struct):
        traceEvents: list[Ev] = []  # noqa: N815 (the file's key)

    out = []
    for e in msgspec.json.decode(data, type=Doc).traceEvents:
        if isinstance(e.name, str) and keep(e.name, str(e.ph), str(e.cat)):
            args = msgspec.json.decode(e.args) if e.args is not None else {}
            out.append({"name": e.name, "ph": e.ph, "cat": e.cat, "ts": e.ts, "pid": e.pid,
                        "tid": e.tid, "args": args})  # fmt: skip
    return out


def _decode_json(data: Any, keep: Keep) -> list[dict[str, Any]]:
    doc = json.loads(bytes(data).decode("utf-8", "replace"), strict=False)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return [e for e in events if isinstance(e, dict) and isinstance(e.get("name"), str)
            and keep(e["name"], str(e.get("ph")), str(e.get("cat")))]  # fmt: skip


def raw_events(trace: Trace, keep: Keep, marker: bytes) -> list[dict[str, Any]]:
    """The events of ``trace``'s file that ``keep(name, ph, cat)`` accepts, in file order.

    ``marker`` is a byte string every wanted event contains (``b"[memory]"``):
    a file without it is not decoded. Returns ``[]`` when the trace was not
    loaded from a file, the file is gone, neither decoder reads it (the loader
    may have repaired it), or nothing matches.
    """
    path = Path(trace.source)
    if not trace.source or not path.is_file():
        return []
    data, _ = _read_bytes(path)
    if marker not in data:
        return []
    try:
        return _decode_msgspec(data, keep)
    except Exception:  # msgspec missing, or bytes it refuses: the tolerant decoder
        pass
    try:
        return _decode_json(data, keep)
    except ValueError:  # the loader repaired what json refuses: these views go without
        return []


def ts_ns_of(trace: Trace, ts_us: Any) -> int | None:
    """A raw event's ``ts`` (µs) on the trace's ns clock (``trace.ts_ns``), or ``None``."""
    if isinstance(ts_us, bool) or not isinstance(ts_us, (int, float)):
        return None
    base = base_ns(trace.meta)
    if any("ignored baseTimeNanoseconds" in r for r in trace.repairs):
        base = 0
    return round(ts_us * 1000) + base
