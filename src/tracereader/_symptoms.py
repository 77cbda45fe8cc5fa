"""Symptoms the report lists under "What to look at next", each with what to do.

Every detector reads the trace and the library's measures; none draws or
formats. A :class:`Symptom` names the site's page about it by name only.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._events import Kind, Trace
from ._intervals import gpu_intervals, union
from ._link import link
from ._measure import BALANCED, CPU_BOUND, StepTime, step_times

__all__ = ["Symptom", "symptoms"]

#: Calls that make the CPU wait for the GPU.
SYNC_NAMES = ("aten::item", "aten::_local_scalar_dense", "cudaStreamSynchronize",
              "cudaDeviceSynchronize")  # fmt: skip
#: A kernel median under this (µs) with at least ``TINY_MIN_KERNELS`` kernels: many tiny kernels.
TINY_KERNEL_US = 10.0
TINY_MIN_KERNELS = 20
#: The first step is "much slower" at this many times the median of the others.
SLOW_FIRST = 2.0
_Rows = npt.NDArray[np.int64]
_COMPILED = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")


@dataclass(frozen=True)
class Symptom:
    """One finding: ``what`` was found, ``todo`` (one line), and the site's ``page``."""

    key: str
    what: str
    todo: str
    page: str


def _in_steps(trace: Trace, rows: _Rows, steps: list[StepTime]) -> _Rows:
    """The ``rows`` that start inside some step's CPU range."""
    keep = np.zeros(len(rows), dtype=bool)
    for st in steps:
        keep |= (trace.ts_ns[rows] >= st.start_ns) & (trace.ts_ns[rows] < st.end_ns)
    return rows[keep]


def _step_of(steps: list[StepTime], ts_ns: int) -> str:
    return next(st.name for st in steps if st.start_ns <= ts_ns < st.end_ns)


def _named(trace: Trace, names: tuple[str, ...]) -> _Rows:
    ids = [i for i, n in enumerate(trace.names) if n in names]
    return np.flatnonzero(np.isin(trace.name_id, ids))


def _idle_share(trace: Trace, a: int, b: int) -> float:
    _, s, e, _ = gpu_intervals(trace, link(trace).gpu_ops, (a, b))
    u0, u1 = union(s, e)
    return 1.0 - float((u1 - u0).sum()) / (b - a) if b > a else 0.0


def symptoms(trace: Trace) -> list[Symptom]:
    """Every symptom found in ``trace``, most telling first."""
    steps = step_times(trace)
    out: list[Symptom] = []
    slow = [s for s in steps if s.verdict in (CPU_BOUND, BALANCED)]
    if slow:
        idle = sum(s.gpu_idle_us for s in slow)
        n_cpu = sum(s.verdict == CPU_BOUND for s in slow)
        out.append(Symptom("gpu-idle", f"the GPU sat idle inside {len(slow)} of {len(steps)} "
                           f"step(s): {n_cpu} CPU-bound, {len(slow) - n_cpu} balanced, "
                           f"{idle:,.0f} µs idle in all",
                           "find what the CPU did in the gaps (the gaps table); fewer, larger "
                           "kernels (torch.compile, CUDA graphs) cut launch overhead",
                           "the site's Part 1 and Part 4"))  # fmt: skip
    sync_rows = _in_steps(trace, _named(trace, SYNC_NAMES), steps)
    if len(sync_rows):
        names = sorted({trace.names[int(trace.name_id[i])] for i in sync_rows})
        n_steps = len({_step_of(steps, int(trace.ts_ns[i])) for i in sync_rows})
        out.append(Symptom("host-sync", f"host syncs inside steps ({', '.join(names)}): "
                           f"{len(sync_rows)} in {n_steps} step(s)",
                           "keep values on the GPU (no .item(), .cpu(), print of a tensor) "
                           "until the step ends, or log them every N steps",
                           "the site's Part 5"))  # fmt: skip
    if len(steps) >= 3:
        rest = statistics.median(s.span_us for s in steps[1:])
        if rest > 0 and steps[0].span_us > SLOW_FIRST * rest:
            out.append(Symptom("slow-first", f"the first step took {steps[0].span_us:,.0f} µs, "
                               f"{steps[0].span_us / rest:.1f}x the median of the others",
                               "warm up before profiling (schedule(wait=1, warmup=1, ...)); "
                               "read the later steps", "the site's Part 1"))  # fmt: skip
    kernels = np.flatnonzero(trace.kind == Kind.KERNEL)
    if len(kernels) >= TINY_MIN_KERNELS:
        med = float(np.median(trace.dur_ns[kernels])) / 1e3
        if med < TINY_KERNEL_US:
            out.append(Symptom("tiny-kernels", f"{len(kernels):,} kernels with a median of "
                               f"{med:.1f} µs: launch overhead likely dominates",
                               "fuse them: torch.compile, fused ops (e.g. fused optimizers), "
                               "CUDA graphs", "the site's Part 2"))  # fmt: skip
    loader = [i for i in np.flatnonzero(trace.kind == Kind.USER_ANNOTATION)
              if trace.names[int(trace.name_id[i])].startswith("enumerate(DataLoader)")]  # fmt: skip
    waits = [(int(trace.ts_ns[i]), int(trace.end_ns[i])) for i in loader]
    waited = [(b - a) / 1e3 for a, b in waits if _idle_share(trace, a, b) > 0.5]
    if waited and sum(waited) >= 1.0:
        out.append(Symptom("dataloader", f"{len(waited)} DataLoader wait(s) with the GPU idle "
                           f"({sum(waited):,.0f} µs in all)",
                           "load data ahead: DataLoader(num_workers>0, pin_memory=True), "
                           "prefetch to the GPU", "the site's Part 5"))  # fmt: skip
    out += _compile(trace, steps)
    return out


def _compile(trace: Trace, steps: list[StepTime]) -> list[Symptom]:
    """Several compiled regions (Dynamo frames) in one step, and recompiled regions.

    A region is ``Torch-Compiled Region: F/R`` (frame ``F``, recompile
    ``R``). Without region events (older torch), several distinct
    ``CompiledFxGraph`` calls in a step count, beyond one forward and one
    backward graph.
    """
    cpu = np.flatnonzero(np.isin(trace.kind, (Kind.CPU_OP, Kind.USER_ANNOTATION)))
    several, recompiled = [], set()
    for st in steps:
        inside = cpu[(trace.ts_ns[cpu] >= st.start_ns) & (trace.ts_ns[cpu] < st.end_ns)]
        names = {trace.names[int(k)] for k in np.unique(trace.name_id[inside])}
        frames = set()
        for name in names:
            m = _COMPILED.match(name)
            if m:
                frames.add(m.group(1))
                if int(m.group(2)) > 0:
                    recompiled.add(name)
        graphs = {n for n in names if "CompiledFxGraph" in n}
        allowed = 2 if "CompiledFunctionBackward" in names else 1
        if len(frames) > 1 or (not frames and len(graphs) > allowed):
            several.append(st.name)
    what = []
    if several:
        what.append(f"{len(several)} step(s) ran several compiled regions: graph breaks, or "
                    "functions compiled separately")  # fmt: skip
    if recompiled:
        what.append(f"recompiled region(s): {', '.join(sorted(recompiled))}")
    if not what:
        return []
    return [Symptom("compile", "; ".join(what),
                    "find the breaks with TORCH_LOGS=graph_breaks (or torch._dynamo.explain) "
                    "and the recompiles with TORCH_LOGS=recompiles", "the site's Part 2")]  # fmt: skip
