"""A real trainer beside ours: torchtitan's recorded runs (``docs/peers/<gpu>/torchtitan/``).

The runs are filed by session, ``<session>/<run>/``, a session named by its first run's
UTC start (``2026-12-06T18-49``). Each run folder holds torchtitan's log (one
``step: N ... tps: X`` line per step, X its tokens per second), the machine's line
(``env.txt``) and, for a profiled run, the profiled step's trace. A run's tokens/s are its
steps :data:`STEPS` (after compilation, before the profiler's warm-up steps of the
profiled runs); the runs are named by their settings' letter and a number (``A1``, ``B2``),
the letters explained in ``runs.json`` and in ``peers/torchtitan/README.md``. A session
that also recorded our own step in the same call holds it as a recording,
``<session>/<variant>/r<k>/`` (:func:`ours`).
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import part5_measures as m
from tracesite.facts import claim

import tracereader

PEERS = Path(__file__).resolve().parents[1] / "peers"
#: The steps read of every run: after torch.compile's first steps, before step 27, where the
#: profiled runs' profiler starts its warm-up (profile_freq 30: steps 27-29, step 30 kept).
STEPS = range(6, 27)
_STEP = re.compile(r"step:\s*(\d+)\s.*?tps:\s*([\d,]+)")
_RUN = re.compile(r"[A-Z]\d+")


def sessions(gpu: str = "h100", trainer: str = "torchtitan") -> list[str]:
    """The recorded sessions' names, oldest first."""
    root = PEERS / gpu / trainer
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def runs(session: str, gpu: str = "h100", trainer: str = "torchtitan") -> dict[str, dict[str, Any]]:
    """Every run of a session: its letter's settings, its steps' tokens/s, and its trace's
    path if it has one."""
    root = PEERS / gpu / trainer
    settings = json.loads((root / "runs.json").read_text(encoding="utf-8"))
    out = {}
    for folder in sorted(p for p in (root / session).iterdir() if _RUN.fullmatch(p.name)):
        log = (folder / "log.txt").read_text(encoding="utf-8")
        steps = {int(s): float(t.replace(",", "")) for s, t in _STEP.findall(log)}
        claim(
            set(STEPS) <= set(steps),
            f"{folder}: its tokens/s are its log's, steps {STEPS} of each run",
        )
        trace = folder / "trace.json.gz"
        out[folder.name] = {
            **settings[folder.name[0]],
            "letter": folder.name[0],
            "tps": [steps[s] for s in STEPS],
            "trace": trace if trace.exists() else None,
            "env": (folder / "env.txt").read_text(encoding="utf-8").splitlines()[0],
        }
    return out


def ours(
    session: str, variant: str, gpu: str = "h100", trainer: str = "torchtitan"
) -> list[dict[str, Any]]:
    """Our ``variant``'s repeats recorded in the session's own call, if it recorded them:
    each repeat's ``meta.json`` with its ``timings.json`` as ``timings``."""
    out = []
    for rep in sorted((PEERS / gpu / trainer / session / variant).glob("r*")):
        meta: dict[str, Any] = json.loads((rep / "meta.json").read_text(encoding="utf-8"))
        meta["timings"] = json.loads((rep / "timings.json").read_text(encoding="utf-8"))
        out.append(meta)
    return out


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def kernel_class(name: str) -> str:
    """Part 5's kernel class, with ``multi_tensor_apply`` split into AdamW's (``FusedAdam``)
    and the rest (gradient clipping's norm and scaling)."""
    c = m.kernel_class(name)
    return "clipping" if c == "AdamW" and "FusedAdam" not in name else c


def kernel_ms(tr: tracereader.Trace) -> dict[str, float]:
    """GPU time of a trace's kernels, ms, by :func:`kernel_class` (clipping at 0 if none)."""
    ns = {"clipping": 0.0, **m.class_ns(tr, kernel_class)}
    return {c: v / 1e6 for c, v in ns.items()}
