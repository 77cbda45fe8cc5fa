"""Trimming a recorded trace to the profiler steps its pages read (R5: recordings stay small).

An example may name, per variant, the steps to keep (``KEEP_STEPS``) and the steps whose
Python frames to keep (``KEEP_PYTHON_STEPS``; ``with_stack`` traces are mostly frames)::

    KEEP_STEPS = {"loop_8b": [1, 2, 3, 4]}          # drop the prefill's step 0
    KEEP_PYTHON_STEPS = {"generate_1b": [2]}        # frames of one token only

A CPU event lying wholly inside a dropped step's window goes, with the GPU work it
launched (kernels, copies and sets sharing its correlation id) and the flow arrows
between them; events spanning several steps stay. The trace stays a valid
``torch.profiler`` trace that ``tracereader`` and Perfetto read. Works on the JSON
dict, without torch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["trim_steps"]

_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
_LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}


def _windows(events: list[dict[str, Any]]) -> dict[int, tuple[float, float]]:
    out = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") == "user_annotation" and name.startswith("ProfilerStep#"):
            out[int(name.split("#")[1])] = (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
    return out


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

    gone_corr: set[Any] = set()
    kept: list[Any] = []
    dropped: dict[str, int] = {}
    for e in events:
        cat = e.get("cat")
        if cat in _GPU_CATS or cat in ("ac2g", "gpu_user_annotation") or e.get("ph") != "X":
            kept.append(e)
            continue
        spans = drop_py if cat == "python_function" else drop_all
        if spans and inside(e, spans):
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
    data["traceEvents"] = final
    return dropped
