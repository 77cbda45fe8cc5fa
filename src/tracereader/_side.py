"""What the loader keeps besides the columns: ``[memory]`` instants and communication args.

The columns hold complete events and a dozen numeric args. Two views need
more, and the loader keeps it in its one pass over the file, so nothing reads
the file again:

* the ``[memory]`` instant events of a trace recorded with
  ``profile_memory=True`` (:mod:`tracereader._memory`): their ``ts``, ``pid``,
  ``tid`` and the args of :data:`MEMORY_ARGS`, as written, in file order
  (``Trace.memory_events``, one :data:`MemoryEvent` each). The args records
  of both loading paths (``_fast.ArgsRecord``, ``_columns.PlainArgs``) carry
  these args as fields whose default is :data:`ABSENT`;
* the args of communication kernels and ``record_param_comms`` ops
  (``Collective name``, ``In msg nelems``, ``dtype``, ``Process Group
  Name``...; :mod:`tracereader._collectives`): for each complete event whose
  name :func:`is_comm_name`, its name and its whole ``args`` dict, in file
  order (``Trace.comm_args``). They are few, so rather than widen every
  event's args record (and slow every decode), the decoders take them from
  the JSON of just those events (:func:`comm_from_dicts`, and
  ``_fast._comm_args``), in the batches :class:`~tracereader._columns.Columns`
  found them in.

This module never imports msgspec.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

__all__ = [
    "ABSENT",
    "MEMORY_ARGS",
    "MemoryEvent",
    "comm_from_dicts",
    "is_comm_name",
    "memory_events",
]


class _Absent:
    """The default of a kept arg the event does not carry (unlike JSON ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"  # one object, through pickling too


ABSENT: Any = _Absent()

#: ``[memory]`` args: JSON key -> attribute of an args record.
MEMORY_ARGS = {
    "Total Reserved": "total_reserved",
    "Total Allocated": "total_allocated",
    "Bytes": "mem_bytes",
    "Device Id": "device_id",
    "Device Type": "device_type",
    "Addr": "addr",
}
#: ``(ts_us, pid, tid, *MEMORY_ARGS values)``, each as written (:data:`ABSENT`: no such arg).
MemoryEvent = tuple[Any, ...]
_PARAM_OP = "record_param_comms"

_MEMORY_VALUES = attrgetter(*MEMORY_ARGS.values())


class _NoArgs:
    """Stands in for a missing ``args``: every kept arg absent."""

    def __getattr__(self, name: str) -> Any:
        return ABSENT


_NO_ARGS = _NoArgs()


def memory_events(instants: Sequence[Any]) -> list[MemoryEvent]:
    """The ``[memory]`` events among instant event records, in order."""
    return [
        (ev.ts, ev.pid, ev.tid, *_MEMORY_VALUES(ev.args or _NO_ARGS))
        for ev in instants
        if ev.name == "[memory]"
    ]


def is_comm_name(name: str) -> bool:
    """A complete event whose args :mod:`tracereader._collectives` reads."""
    return name == _PARAM_OP or name.lower().startswith(("nccl", "rccl"))


def comm_from_dicts(events: Sequence[Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(name, args)`` of the communication events among decoded JSON ``events``, in order."""
    return [
        (ev["name"], ev["args"])
        for ev in events
        if isinstance(ev, dict)
        and ev.get("ph") == "X"
        and isinstance(ev.get("name"), str)
        and is_comm_name(ev["name"])
        and isinstance(ev.get("args"), dict)
    ]
