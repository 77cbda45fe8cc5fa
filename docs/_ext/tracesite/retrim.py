"""Applying an example's trimming settings to trace files (:mod:`tracesite.trim` trims
the JSON): to a freshly exported trace as it is recorded, and to the recordings already
kept, in place (``scripts/record.py --retrim``, no GPU needed: trimming only drops
events, so a trimmed trace trims to itself)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from .recordings import META, TRACE, iter_recordings, plan_settings
from .trim import trim_regions, trim_steps

__all__ = [
    "Keep",
    "gzip_trace",
    "keep_of",
    "retrim",
    "retrim_repeat",
    "session_keep",
    "trim_trace",
    "trimmed",
    "write_gz",
]

#: What the plan keeps of a variant's trace: (keep_steps, keep_python_steps, keep_regions).
Keep = tuple[list[int] | None, list[int] | None, list[str] | None]


def trim_trace(data: dict[str, Any], keep: Keep) -> dict[str, int]:
    """Apply an example's trimming settings to one trace, in place (:mod:`tracesite.trim`)."""
    dropped = trim_steps(data, keep[0], keep[1]) if keep[:2] != (None, None) else {}
    if keep[2] is not None:
        for cat, n in trim_regions(data, keep[2]).items():
            dropped[cat] = dropped.get(cat, 0) + n
    return dropped


def write_gz(data: dict[str, Any], dst: Path) -> None:
    raw = json.dumps(data, separators=(",", ":")).encode()
    with gzip.GzipFile(dst, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(raw)


def gzip_trace(src: Path, dst: Path, keep: Keep = (None, None, None)) -> dict[str, int]:
    """Gzip the exported trace, dropping the ``traceName`` path it leaks and what the
    example does not keep (:mod:`tracesite.trim`); return what was trimmed."""
    data = json.loads(src.read_text(encoding="utf-8", errors="replace"), strict=False)
    data.pop("traceName", None)
    dropped = trim_trace(data, keep)
    write_gz(data, dst)
    return dropped


def keep_of(settings: dict[str, Any], variant: str) -> Keep:
    return (
        settings["keep_steps"].get(variant),
        settings["keep_python_steps"].get(variant),
        settings["keep_regions"].get(variant),
    )


def retrim(sources: list[Path], root: Path | None = None, gpu: str | None = None) -> dict[str, int]:
    """Apply each example's current trimming settings to its recordings in place (of every
    GPU, or of ``gpu`` alone), without a GPU (trimming only drops events, so a trimmed
    trace trims to itself), its variants' earlier sessions included (``keep_sessions``);
    return the bytes each example's traces take now."""
    out: dict[str, int] = {}
    for source in sources:
        settings = plan_settings(Path(source).stem, root)
        for rec in iter_recordings(root, sessions=True, gpu=gpu):
            if rec.example != Path(source).stem:
                continue
            keep = keep_of(settings, rec.variant)
            if rec.session is not None:
                keep = session_keep(settings, rec.variant, rec.meta)
            if keep != (None, None, None):
                retrim_repeat(rec.trace_path.parent, keep)
            out[rec.example] = out.get(rec.example, 0) + rec.trace_path.stat().st_size
    return out


def session_keep(settings: dict[str, Any], variant: str, meta: dict[str, Any]) -> Keep:
    """What an earlier session's repeat keeps: the steps the plan keeps of the variant's
    sessions (``keep_sessions``) among those it kept when recorded, and its recorded
    trimming of Python frames and regions."""
    was = meta.get("trimmed", {})
    steps = settings["keep_sessions"].get(variant)
    if steps is not None and was.get("keep_steps") is not None:
        steps = [k for k in steps if k in was["keep_steps"]]
    return (
        steps if steps is not None else was.get("keep_steps"),
        was.get("keep_python_steps"),
        was.get("keep_regions"),
    )


def retrim_repeat(folder: Path, keep: Keep) -> None:
    """Trim one recorded repeat's trace in place to ``keep`` and add what went to the
    trimming its ``meta.json`` records."""
    path = folder / TRACE
    data = json.loads(gzip.decompress(path.read_bytes()))
    dropped = trim_trace(data, keep)
    if dropped:
        write_gz(data, path)
        meta_path = folder / META
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        before = meta.get("trimmed", {}).get("dropped", {})
        for cat, n in before.items():
            dropped[cat] = dropped.get(cat, 0) + n
        meta["trimmed"] = trimmed(keep, dropped)
        meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")


def trimmed(keep: Keep, dropped: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {"keep_steps": keep[0], "keep_python_steps": keep[1], "dropped": dropped}
    if keep[2] is not None:
        out["keep_regions"] = keep[2]
    return out
