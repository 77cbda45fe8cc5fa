"""Bytes (.json / .json.gz) -> :class:`~tracereader._events.Trace` columns.

The only module that knows raw Chrome-trace keys. (First version: stdlib json;
the fast typed path replaces the decoding step.)
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ._events import CATEGORY_KIND, GPU_OP_KINDS, Kind, Lane, Trace

__all__ = ["TraceError", "load"]


class TraceError(ValueError):
    """The input is not a readable trace; the message is one line for the user."""


def _read_bytes(source: str | os.PathLike[str] | bytes) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, label = bytes(source), "<bytes>"
    else:
        path = Path(source)
        label = str(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise TraceError(f"{label}: no such file") from None
        except IsADirectoryError:
            raise TraceError(f"{label}: is a directory, not a trace file") from None
        except OSError as exc:
            raise TraceError(f"{label}: cannot read ({exc.strerror})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            raise TraceError(f"{label}: truncated or corrupt gzip data") from None
    if not data.strip():
        raise TraceError(f"{label}: empty file")
    return data, label


def load(source: str | os.PathLike[str] | bytes) -> Trace:
    """Load a torch.profiler (Kineto) Chrome trace.

    Parameters
    ----------
    source
        A path to ``.json`` or ``.json.gz`` (gzip is detected by content), or
        the raw bytes.

    Raises
    ------
    TraceError
        With a one-line reason when the input is not a trace.
    """
    data, label = _read_bytes(source)
    repairs: list[str] = []
    try:
        doc = json.loads(data)
        parser = "json"
    except (UnicodeDecodeError, ValueError):
        text = data.decode("utf-8", errors="replace")
        if "\ufffd" in text:
            repairs.append("replaced invalid UTF-8 bytes")
        try:
            doc = json.loads(text, strict=False)
        except ValueError as exc:
            raise TraceError(f"{label}: not valid JSON ({exc.msg} at byte {exc.pos})") from None
        repairs.append("accepted raw control characters or non-standard tokens")
        parser = "tolerant"
    return build_trace(doc, label, parser, repairs)


def _int(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        return -1
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else -1
    if isinstance(value, float) and value == value:
        return int(value)
    return -1


EXTRA_ARGS = {
    "bytes": "bytes",
    "registers per thread": "registers",
    "shared memory": "shared_mem",
    "est. achieved occupancy %": "occupancy_pct",
    "Python id": "python_id",
    "Python parent id": "python_parent_id",
    "Sequence number": "seq",
}


def build_trace(doc: Any, label: str, parser: str, repairs: list[str]) -> Trace:
    """Turn a decoded JSON document into a :class:`Trace`."""
    if isinstance(doc, list):
        events, meta = doc, {}
    elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events = doc["traceEvents"]
        meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    else:
        raise TraceError(f"{label}: JSON but not a trace (no traceEvents list)")
    base_ns = _int(meta.get("baseTimeNanoseconds"))
    base_ns = max(base_ns, 0)

    names: dict[str, int] = {}
    cats: dict[str, int] = {}
    lane_ids: dict[tuple[Any, Any, bool], int] = {}
    thread_names: dict[tuple[Any, Any], str] = {}
    cols: dict[str, list[int]] = {
        k: []
        for k in ("ts", "dur", "kind", "name", "cat", "lane", "corr", "ext", "grid", "block")
    }
    extra: dict[str, list[int]] = {v: [] for v in EXTRA_ARGS.values()}
    n_flows = n_instants = 0
    for ev in events:
        if not isinstance(ev, dict):
            continue
        ph = ev.get("ph")
        if ph == "M":
            if ev.get("name") == "thread_name":
                thread_names[(ev.get("pid"), ev.get("tid"))] = str(
                    (ev.get("args") or {}).get("name", "")
                )
            continue
        if ph in ("s", "f", "t"):
            n_flows += 1
            continue
        if ph != "X":
            n_instants += ph in ("i", "I")
            continue
        ts, dur = ev.get("ts"), ev.get("dur", 0)
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
            continue
        cat = str(ev.get("cat", ""))
        kind = CATEGORY_KIND.get(cat, Kind.OTHER)
        args = ev.get("args") or {}
        pid, tid = ev.get("pid", ""), ev.get("tid", "")
        is_gpu = kind in GPU_OP_KINDS or kind in (Kind.GPU_ANNOTATION, Kind.SYNC)
        key = (pid, tid, is_gpu)
        if key not in lane_ids:
            lane_ids[key] = len(lane_ids)
        name = ev.get("name", "")
        name = name if isinstance(name, str) else json.dumps(name)
        cols["ts"].append(round(ts * 1000) + base_ns)
        cols["dur"].append(max(round(dur * 1000), 0))
        cols["kind"].append(int(kind))
        cols["name"].append(names.setdefault(name, len(names)))
        cols["cat"].append(cats.setdefault(cat, len(cats)))
        cols["lane"].append(lane_ids[key])
        cols["corr"].append(_int(args.get("correlation")))
        cols["ext"].append(_int(args.get("External id")))
        for raw, col in EXTRA_ARGS.items():
            extra[col].append(_int(args.get(raw)))
    if not cols["ts"]:
        raise TraceError(f"{label}: a trace with no complete events")

    ts = np.asarray(cols["ts"], dtype=np.int64)
    dur = np.asarray(cols["dur"], dtype=np.int64)
    order = np.lexsort((-dur, ts))
    lanes = [
        Lane(i, pid, tid, is_gpu, thread_names.get((pid, tid), "").strip())
        for (pid, tid, is_gpu), i in sorted(lane_ids.items(), key=lambda kv: kv[1])
    ]
    return Trace(
        ts_ns=ts[order],
        dur_ns=dur[order],
        kind=np.asarray(cols["kind"], dtype=np.int8)[order],
        name_id=np.asarray(cols["name"], dtype=np.int32)[order],
        cat_id=np.asarray(cols["cat"], dtype=np.int32)[order],
        lane=np.asarray(cols["lane"], dtype=np.int32)[order],
        correlation=np.asarray(cols["corr"], dtype=np.int64)[order],
        external_id=np.asarray(cols["ext"], dtype=np.int64)[order],
        names=list(names),
        cats=list(cats),
        lanes=lanes,
        extra={k: np.asarray(v, dtype=np.int64)[order] for k, v in extra.items()},
        meta=meta,
        repairs=repairs,
        source=label,
        parser=parser,
        n_flows=n_flows,
        n_instants=n_instants,
    )
