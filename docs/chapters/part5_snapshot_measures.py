"""Part 5's memory snapshot (``memory_snapshot.pickle`` of the ``memory`` recording of
``06_train_step``, which ``torch.cuda.memory._snapshot`` wrote): what is alive at the step's
peak and who allocated it, and the memory over the step by group. The snapshot is plain
dicts and lists: torch is not needed."""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt


def snapshot_at_peak(path: str) -> tuple[float, list[tuple[str, float]]]:
    """The memory snapshot's peak over the recorded step (GiB allocated during the step,
    on top of what was allocated before it), and what is alive then, in GiB, by the
    innermost Python frame that asked for it ("no Python frame": C++ code, such as the
    autograd thread's)."""
    with open(path, "rb") as f:
        snapshot = pickle.load(f)  # plain dicts and lists: torch is not needed to read it
    peak, alive = _alive_at_peak(snapshot)
    by: Counter[str] = Counter()
    for e in alive:
        by[_label(e)] += e["size"]
    return peak / 2**30, [(k, v / 2**30) for k, v in by.most_common()]


def snapshot_timeline(
    path: str, labels: Sequence[str]
) -> tuple[npt.NDArray[np.float64], dict[str, npt.NDArray[np.float64]]]:
    """The snapshot's memory over the recorded step: ms since its first event, and the GiB
    allocated during the step, alive after each event, per group (``labels``, as
    ``snapshot_at_peak`` names them, and "other")."""
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    events = snapshot["device_traces"][0]
    groups = {label: k for k, label in enumerate(labels)}
    size = np.zeros((len(events), len(labels) + 1))
    live: dict[int, tuple[int, int]] = {}
    for n, e in enumerate(events):
        if e["action"] == "alloc":
            live[e["addr"]] = (groups.get(_label(e), len(labels)), e["size"])
            size[n, live[e["addr"]][0]] += e["size"]
        elif e["action"] == "free_completed" and e["addr"] in live:
            group, bytes_ = live.pop(e["addr"])
            size[n, group] -= bytes_
    curves = np.cumsum(size, axis=0) / 2**30
    t0 = events[0]["time_us"]
    ms = np.array([(e["time_us"] - t0) / 1e3 for e in events])
    return ms, {label: curves[:, k] for k, label in enumerate([*labels, "other"])}


def _label(e: dict[str, Any]) -> str:
    """A block's group: the innermost Python frame that allocated it."""
    frame = e["frames"][0] if e["frames"] else None
    if frame is None:
        return "no Python frame"
    return f"`{frame['name']}` ({Path(frame['filename']).name}:{frame['line']})"


def _alive_at_peak(snapshot: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    """(peak bytes allocated during the step, the blocks alive then) of a snapshot's trace."""
    live: dict[int, dict[str, Any]] = {}
    current = peak = 0
    at_peak: dict[int, dict[str, Any]] = {}
    for e in snapshot["device_traces"][0]:
        if e["action"] == "alloc":
            live[e["addr"]] = e
            current += e["size"]
        elif e["action"] == "free_completed" and e["addr"] in live:
            current -= live.pop(e["addr"])["size"]
        if current > peak:
            peak, at_peak = current, dict(live)
    return peak, list(at_peak.values())


def snapshot_table(rows: Sequence[tuple[str, float]], top: int = 5) -> str:
    """Markdown: the ``top`` largest groups alive at the snapshot's peak."""
    lines = ["| allocated in | GiB alive at the peak |", "|---|--:|"]
    lines += [f"| {label} | {gib:.2f} |" for label, gib in rows[:top]]
    return "\n".join(lines)
