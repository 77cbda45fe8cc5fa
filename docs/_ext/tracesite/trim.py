"""Trimming a recorded trace to the profiler steps its pages read (R5: recordings stay small).

The recordings' plan (``docs/recordings/plan.json``) may name, per example and variant, the
steps to keep (``keep_steps``) and the steps whose Python frames to keep
(``keep_python_steps``; ``with_stack`` traces are mostly frames)::

    "keep_steps": {"loop_8b": [1, 2, 3, 4]}            # drop the prefill's step 0
    "keep_python_steps": {"generate_1b": [2]}          # frames of one token only
    "keep_regions": {"eager_foreach": ["optimizer"]}   # the CPU side of one region only

``keep_regions`` keeps the CPU events inside the named ``record_function`` regions
(and the regions, the profiler steps and the memory events themselves); the other CPU
events go with what they launched. An empty list keeps only the regions and the
memory events.

A CPU event lying wholly inside a dropped step's window goes, with the GPU work it
launched (kernels, copies and sets sharing its correlation id) and the flow arrows
between them; events spanning several steps stay. The trace stays a valid
``torch.profiler`` trace that ``tracereader`` and Perfetto read. Works on the JSON
dict, without torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["trim_regions", "trim_steps"]

_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
_LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}


def _windows(events: list[dict[str, Any]]) -> dict[int, tuple[float, float]]:
    out = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") == "user_annotation" and name.startswith("ProfilerStep#"):
            out[int(name.split("#")[1])] = (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
    return out


def _drop(events: list[dict[str, Any]], gone: Any, dropped: dict[str, int]) -> list[dict[str, Any]]:
    """``events`` without ``gone`` CPU events and the GPU work and arrows of their launches."""
    gone_corr: set[Any] = set()
    kept: list[Any] = []
    for e in events:
        if gone(e):
            cat = str(e.get("cat"))
            dropped[cat] = dropped.get(cat, 0) + 1
            if cat in _LAUNCH_CATS and "correlation" in e.get("args", {}):
                gone_corr.add(e["args"]["correlation"])
            continue
        kept.append(e)
    final = []
    for e in kept:
        cat = e.get("cat")
        corr = (
            e.get("args", {}).get("correlation")
            if cat in _GPU_CATS
            else e.get("id")
            if cat == "ac2g"
            else None
        )
        if corr is not None and corr in gone_corr:
            dropped[cat] = dropped.get(cat, 0) + 1
            continue
        final.append(e)
    return final


def trim_regions(data: dict[str, Any], keep: Iterable[str]) -> dict[str, int]:
    """Drop, in place, every CPU event outside the ``record_function`` regions named in
    ``keep``, with what it launched; the regions (every ``user_annotation``), the memory
    and other instant events stay. Return how many events went, by category."""
    events = data.get("traceEvents", [])
    names = set(keep)
    spans = [
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
        for e in events
        if e.get("cat") == "user_annotation" and e.get("name") in names
    ]

    def outside(e: dict[str, Any]) -> bool:
        start = float(e.get("ts", 0))
        end = start + float(e.get("dur", 0))
        return not any(lo <= start and end <= hi for lo, hi in spans)

    # A forward-backward arrow goes when either of its ends does.
    cut_arrows = {e.get("id") for e in events if e.get("cat") == "fwdbwd" and outside(e)}

    def gone(e: dict[str, Any]) -> bool:
        cat = e.get("cat")
        if cat == "fwdbwd":
            return e.get("id") in cut_arrows
        if (
            e.get("ph") != "X"
            or cat in _GPU_CATS
            or cat in ("gpu_user_annotation", "user_annotation")
        ):
            return False
        return outside(e)

    dropped: dict[str, int] = {}
    data["traceEvents"] = _drop(events, gone, dropped)
    return dropped


def trim_steps(
    data: dict[str, Any],
    keep: Iterable[int] | None = None,
    keep_python: Iterable[int] | None = None,
) -> dict[str, int]:
    """Drop, in place, the CPU events of every profiler step not in ``keep`` (and the Python
    frames of every step not in ``keep_python``), with what they launched; ``None`` keeps
    all. Return how many events went, by category."""
    events = data.get("traceEvents", [])
    windows = _windows(events)
    drop_all = [w for n, w in windows.items() if keep is not None and n not in set(keep)]
    drop_py = [
        w for n, w in windows.items() if keep_python is not None and n not in set(keep_python)
    ]
    drop_py += drop_all

    def inside(e: dict[str, Any], spans: list[tuple[float, float]]) -> bool:
        start = float(e.get("ts", 0))
        end = start + float(e.get("dur", 0))
        return any(lo <= start and end <= hi for lo, hi in spans)

    def gone(e: dict[str, Any]) -> bool:
        cat = e.get("cat")
        if cat in _GPU_CATS or cat in ("ac2g", "gpu_user_annotation") or e.get("ph") != "X":
            return False
        spans = drop_py if cat == "python_function" else drop_all
        return bool(spans) and inside(e, spans)

    dropped: dict[str, int] = {}
    data["traceEvents"] = _drop(events, gone, dropped)
    return dropped
