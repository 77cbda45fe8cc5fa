"""The report's opening sentence: step time, GPU busy share, the biggest loss and its fix.

It reads :func:`~tracereader.step_times` (the cold first step left out when
there are more) and :func:`~tracereader._symptoms.symptoms`; the biggest loss
is the symptom with the most time at stake, a specific one (DataLoader, host
syncs, tiny kernels...) before the general "GPU idle" when it holds at least
:data:`SPECIFIC_SHARE` of the steps' time.
"""

from __future__ import annotations

import statistics

from ._events import Trace
from ._measure import GPU_BOUND, NO_GPU_WORK, step_times, step_verdict
from ._regions import region_times
from ._symptoms import Symptom, symptoms

__all__ = ["LABELS", "cpu_headline", "headline"]

#: A specific symptom leads the headline when its stake is at least this share of the steps.
SPECIFIC_SHARE = 0.10
#: The symptoms about the cold first step, which the headline does not call a loss.
COLD = ("slow-first", "cold-first")
#: Each symptom's name in the headline.
LABELS = {"gpu-idle": "GPU idle inside the steps", "dataloader": "waiting for the DataLoader",
          "host-sync": "host syncs (.item(), .cpu(): the CPU waiting for the GPU)",
          "tiny-kernels": "launch overhead of many tiny kernels",
          "slow-first": "the slow first step (a cold start)",
          "cold-first": "GPU idle in the cold first step", "compile": "graph breaks or recompiles",
          "exposed-comm": "communication no computation hides"}  # fmt: skip


def _ms(us: float) -> str:
    return f"{us / 1e3:,.1f} ms" if us >= 1000 else f"{us:,.1f} µs"


def _biggest(found: list[Symptom]) -> Symptom | None:
    staked = [s for s in found if s.stake_us is not None]
    specific = [s for s in staked if s.key != "gpu-idle" and (s.share or 0) >= SPECIFIC_SHARE]
    pick = specific or staked or found
    return pick[0] if pick else None


def headline(trace: Trace, found: list[Symptom] | None = None) -> str:
    """One paragraph: the step time, the GPU's busy share and verdict, the biggest loss."""
    steps = step_times(trace)
    if not steps:
        return "No ProfilerStep#N in this trace (prof.step() marks steps): no per-step verdict."
    warm = steps[1:] if len(steps) > 1 else steps
    which = (f"{steps[0].name}, the only step" if len(steps) == 1
             else f"{warm[0].name}, the first (cold) step left out" if len(warm) == 1
             else f"median of {len(warm)} steps, the first (cold) one left out")  # fmt: skip
    span = sum(s.span_us for s in warm)
    share = sum(s.span_busy_us for s in warm) / span if span else 0.0
    verdict = (NO_GPU_WORK if all(s.verdict == NO_GPU_WORK for s in warm)
               else step_verdict(share))  # fmt: skip
    out = (f"Step time {_ms(statistics.median(s.span_us for s in warm))} ({which}); the GPU "
           f"was busy {100 * share:.1f} % of it: {verdict}.")  # fmt: skip
    top = _biggest(symptoms(trace) if found is None else found)
    pace = (" The GPU sets the pace: the kernel tables show where its time goes."
            if verdict == GPU_BOUND else "")  # fmt: skip
    if top is None:
        return out + " No loss found." + pace
    if top.key in COLD:
        return (out + f" No loss found beyond the cold first step ({steps[0].name}: "
                f"{_ms(top.stake_us or 0.0)}); read the later steps.{pace}")  # fmt: skip
    at = ""
    if top.stake_us is not None:
        small = ", small" if top.small else ""
        at = f", {_ms(top.stake_us)} ({100 * (top.share or 0):.0f} % of the steps' time{small})"
    return out + f" Biggest loss: {LABELS.get(top.key, top.key)}{at}. Fix: {top.todo}." + pace


def cpu_headline(trace: Trace) -> str:
    """The opening sentence of a trace with no GPU activity.

    No GPU verdict; the step's CPU time, and the ``record_function`` region that took the
    largest share of it (the first step left out when there are more), where to start.
    """
    out = "No GPU activity in this trace: no verdict on the GPU."
    steps = list(trace.steps)
    warm = steps[1:] if len(steps) > 1 else steps
    if not warm:
        return out + " No ProfilerStep#N (prof.step() marks steps): read the top ops by CPU time."
    which = ("the only step" if len(steps) == 1
             else f"{warm[0].name}, the first step left out" if len(warm) == 1
             else f"median of {len(warm)} steps, the first left out")  # fmt: skip
    out += f" Step time {_ms(statistics.median(s.dur_us for s in warm))} of CPU ({which})."
    names = {s.name for s in warm}
    per: dict[str, float] = {}
    for r in region_times(trace):
        if r.step in names:
            per[r.name] = per.get(r.name, 0.0) + r.cpu_us
    total = sum(s.dur_us for s in warm)
    if not per or not total:
        return out + " No record_function region: read the top ops by CPU time."
    name, us = max(per.items(), key=lambda kv: kv[1])
    return out + (f" The region {name!r} took {100 * us / total:.0f} % of it: start there, "
                  "then profile on the GPU for a verdict.")  # fmt: skip
