"""Symptoms the report lists under "What to look at next", each with what to do.

Every detector reads the trace and the library's measures; none draws or
formats. Each :class:`Symptom` carries the time at stake (``stake_us``: the
GPU idle time it explains, or the time it adds), and :func:`symptoms` ranks
them by it. Advice agrees with the trace: no torch.compile or CUDA graphs
advice where the trace shows them already, and the cold first step is read
apart from the others.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._events import LAUNCH_KINDS, Kind, Trace, kind_mask, name_mask
from ._gaps import CAUSES, gap_columns
from ._intervals import gpu_intervals, union
from ._link import GRAPH_LAUNCH_APIS, link
from ._measure import BALANCED, CPU_BOUND, GPU_BOUND, StepTime, step_times

__all__ = ["PAGES", "SITE", "Symptom", "symptoms"]

#: Calls that make the CPU wait for the GPU; nested ones (``aten::item`` >
#: ``aten::_local_scalar_dense`` > ``cudaStreamSynchronize``) are one sync.
SYNC_NAMES = ("aten::item", "aten::_local_scalar_dense", "cudaStreamSynchronize",
              "cudaDeviceSynchronize")  # fmt: skip
#: A time-weighted median kernel under this (µs), with at least
#: ``TINY_MIN_KERNELS`` kernels: most GPU time goes to tiny kernels.
TINY_KERNEL_US = 10.0
TINY_MIN_KERNELS = 20
#: The first step is "much slower" at this many times the median of the others.
SLOW_FIRST = 2.0
#: A symptom whose time at stake is under this share of the steps' time is "small".
SMALL_SHARE = 0.05
#: The site the symptoms point to, and its pages by part (docs/chapters/partN.md).
SITE = "Reading PyTorch Profiler Traces (the tracereader docs site)"
PAGES = {1: "Part 1: one matmul and one add", 2: "Part 2: from nn.Linear to a fused MLP",
         4: "Part 4: an LLM decoding with transformers", 5: "Part 5: a training step"}  # fmt: skip
_Rows = npt.NDArray[np.int64]
_COMPILED = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")


def _pages(*parts: int) -> str:
    return f"{SITE}, " + "; ".join(f'"{PAGES[p]}" (docs/chapters/part{p}.md)' for p in parts)


@dataclass(frozen=True)
class Symptom:
    """One finding: ``what`` was found, ``todo`` (one line), and the site's ``page``.

    ``stake_us`` is the time at stake (µs; ``None``: not measured), ``share``
    its part of the steps' time (0 to 1), and ``small`` whether that is under
    :data:`SMALL_SHARE`.
    """

    key: str
    what: str
    todo: str
    page: str
    stake_us: float | None = None
    share: float | None = None

    @property
    def small(self) -> bool:
        return self.share is not None and self.share < SMALL_SHARE


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


def _outermost(trace: Trace, rows: _Rows) -> _Rows:
    """The ``rows`` not nested in another of ``rows`` (on the same thread)."""
    parent = link(trace).parent
    mine = set(rows.tolist())
    keep = []
    for r in rows.tolist():
        p = int(parent[r])
        while p >= 0 and p not in mine:
            p = int(parent[p])
        keep.append(p < 0)
    return rows[np.array(keep, dtype=bool)] if len(rows) else rows


def _idle_share(trace: Trace, a: int, b: int) -> float:
    _, s, e, _ = gpu_intervals(trace, link(trace).gpu_ops, (a, b))
    u0, u1 = union(s, e)
    return 1.0 - float((u1 - u0).sum()) / (b - a) if b > a else 0.0


def _idle_by_cause(trace: Trace, steps: list[StepTime]) -> dict[str, float]:
    """µs of GPU idle time per gap cause inside ``steps``' spans (their edges included).

    Without steps, the gaps between the trace's GPU ops.
    """
    out = dict.fromkeys(CAUSES, 0.0)
    found = [gap_columns(trace, st.window, edges=True) for st in steps] or [gap_columns(trace)]
    for g in found:  # each gap's µs added in turn, as the gaps come
        for cause, gap_us in zip(g.cause.tolist(), g.gap_us().tolist(), strict=True):
            out[CAUSES[cause]] += gap_us
    return out


def _ms(us: float) -> str:
    return f"{us / 1e3:,.1f} ms" if us >= 1000 else f"{us:,.0f} µs"


def compiled_and_graphed(trace: Trace) -> tuple[bool, bool]:
    """Whether the trace shows torch.compile'd code, and CUDA graph launches."""
    compiled = any(_COMPILED.match(n) or "CompiledFxGraph" in n for n in trace.names)
    graph = kind_mask(trace, LAUNCH_KINDS) & name_mask(trace, GRAPH_LAUNCH_APIS)
    return compiled, bool(np.any(graph))


def symptoms(trace: Trace) -> list[Symptom]:
    """Every symptom found in ``trace``, the most time at stake first."""
    steps = step_times(trace)
    warm = steps[1:] if len(steps) > 1 else steps  # the cold first step read apart
    total_us = sum(s.span_us for s in steps)
    compiled, graphs = compiled_and_graphed(trace)
    by_cause = _idle_by_cause(trace, warm)
    out: list[Symptom] = []
    syncs = _outermost(trace, _in_steps(trace, _named(trace, SYNC_NAMES), steps))
    waited = float(trace.dur_ns[syncs].sum()) / 1e3
    out += _idle(warm, steps, by_cause, compiled, graphs, waited)
    out += _first(steps)
    out += _syncs(trace, steps, syncs, by_cause)
    out += _tiny(trace, warm, by_cause, graphs)
    out += _loader(trace)
    out += _compile(trace, steps)
    out += _exposed(trace)
    if len(out) > 1 and out[0].key == "gpu-idle":
        g = out[0]
        out[0] = Symptom(g.key, g.what + "; the other items explain parts of it", g.todo, g.page,
                         g.stake_us)  # fmt: skip
    shared = [Symptom(s.key, s.what, s.todo, s.page, s.stake_us,
                      s.stake_us / total_us if s.stake_us is not None and total_us else None)
              for s in out]  # fmt: skip
    return sorted(shared, key=lambda s: -1.0 if s.stake_us is None else -s.stake_us)


def _idle(
    warm: list[StepTime],
    steps: list[StepTime],
    by_cause: dict[str, float],
    compiled: bool,
    graphs: bool,
    sync_wait_us: float,
) -> list[Symptom]:
    slow = [s for s in warm if s.verdict in (CPU_BOUND, BALANCED)]
    if not slow:
        return []
    idle = sum(s.gpu_idle_us for s in slow)
    n_cpu = sum(s.verdict == CPU_BOUND for s in slow)
    causes = sorted(((v, c) for c, v in by_cause.items() if v > 0), reverse=True)
    total = sum(v for v, _ in causes) or 1.0
    mostly = ", ".join(f"{c} {100 * v / total:.0f} %" for v, c in causes[:3])
    first = " (the first step, a cold start, left out)" if warm is not steps else ""
    todo = "find what the CPU did in the largest gaps (the gaps table)"
    if sync_wait_us > idle:
        todo += (f"; the CPU was ahead (it waited {_ms(sync_wait_us)} in host syncs): the "
                 "idle follows the syncs, which drain the GPU's queue, so remove them first")  # fmt: skip
    elif causes and causes[0][1] in ("launch", "nothing recorded") and not graphs:
        todo += ("; CUDA graphs (torch.compile(mode=\"reduce-overhead\")) cut launch overhead"
                 if compiled else "; fewer, larger kernels (torch.compile, CUDA graphs) cut "
                 "launch overhead")  # fmt: skip
    what = (f"the GPU sat idle {_ms(idle)} inside {len(slow)} of {len(warm)} step(s){first}: "
            f"{n_cpu} CPU-bound, {len(slow) - n_cpu} balanced; by what the CPU did: {mostly}")  # fmt: skip
    return [Symptom("gpu-idle", what, todo, _pages(1, 4), idle)]


def _first(steps: list[StepTime]) -> list[Symptom]:
    """The cold first step: much slower than the others, or the only one with idle time."""
    if len(steps) < 2:
        return []
    first, rest = steps[0], statistics.median(s.span_us for s in steps[1:])
    todo = ("warm up before profiling (schedule(wait=1, warmup=1, ...)); read the later "
            "steps")  # fmt: skip
    if len(steps) >= 3 and rest > 0 and first.span_us > SLOW_FIRST * rest:
        what = (f"the first step took {_ms(first.span_us)}, {first.span_us / rest:.1f}x the "
                "median of the others: a cold start (allocations, autotuning, compilation)")  # fmt: skip
        return [Symptom("slow-first", what, todo, _pages(1), first.span_us - rest)]
    if first.verdict in (CPU_BOUND, BALANCED) and all(s.verdict == GPU_BOUND for s in steps[1:]):
        what = (f"the GPU sat idle {_ms(first.gpu_idle_us)} in the first step only "
                f"({first.name}, a cold start); the later steps are {steps[1].verdict}")  # fmt: skip
        return [Symptom("cold-first", what, todo, _pages(1), first.gpu_idle_us)]
    return []


def _syncs(
    trace: Trace, steps: list[StepTime], rows: _Rows, by_cause: dict[str, float]
) -> list[Symptom]:
    """Host syncs inside steps, one per outermost sync call (``rows``)."""
    if not len(rows):
        return []
    names = sorted({trace.names[int(trace.name_id[i])] for i in rows})
    n_steps = len({_step_of(steps, int(trace.ts_ns[i])) for i in rows})
    waited = float(trace.dur_ns[rows].sum()) / 1e3
    idle = by_cause["sync"]
    what = (f"{len(rows)} host sync(s) in {n_steps} step(s) ({', '.join(names)}; nested calls "
            f"count once): the CPU waited {_ms(waited)} for the GPU, and the GPU then sat idle "
            f"{_ms(idle)} while the CPU refilled its queue")  # fmt: skip
    if waited > 10 * max(idle, 1.0):
        what += "; the GPU stayed busy while the CPU waited: the CPU was ahead"
    return [Symptom("host-sync", what, "keep values on the GPU (no .item(), .cpu(), print of a "
                    "tensor) until the step ends, or log them every N steps", _pages(5), idle)]  # fmt: skip


def _tiny(
    trace: Trace, warm: list[StepTime], by_cause: dict[str, float], graphs: bool
) -> list[Symptom]:
    """Most GPU time in tiny kernels (time-weighted), where launches can still cost."""
    if graphs or (warm and all(s.verdict not in (CPU_BOUND, BALANCED) for s in warm)):
        return []  # graph replays launch no kernel one by one; GPU-bound steps never wait
    kernels = np.flatnonzero(trace.kind == Kind.KERNEL)
    if len(kernels) < TINY_MIN_KERNELS:
        return []
    dur = np.sort(trace.dur_ns[kernels]) / 1e3
    cum = np.cumsum(dur)
    med = float(dur[np.searchsorted(cum, cum[-1] / 2)])  # half the GPU time is in shorter ones
    if med >= TINY_KERNEL_US:
        return []
    stake = by_cause["launch"] + by_cause["nothing recorded"]
    what = (f"{len(kernels):,} kernels, half the kernel time in kernels under {med:.1f} µs: "
            f"launch overhead likely dominates (GPU idle while launching: {_ms(stake)})")  # fmt: skip
    return [Symptom("tiny-kernels", what, "fuse them: torch.compile, fused ops (e.g. fused "
                    "optimizers), CUDA graphs", _pages(2), stake)]  # fmt: skip


def _exposed(trace: Trace) -> list[Symptom]:
    """Communication that no computation hides, over the flag's share of the GPU span."""
    from ._collectives import SUGGESTION, exposed_comm

    found = exposed_comm(trace)
    if found is None or not found.flagged:
        return []
    what = (f"{_ms(found.exposed_ms * 1e3)} of communication ran with no computation beside "
            f"it, {found.exposed_pct:.1f} % of the GPU span")  # fmt: skip
    return [Symptom("exposed-comm", what, SUGGESTION, SITE, found.exposed_ms * 1e3)]


def _loader(trace: Trace) -> list[Symptom]:
    loader = [i for i in np.flatnonzero(trace.kind == Kind.USER_ANNOTATION)
              if trace.names[int(trace.name_id[i])].startswith("enumerate(DataLoader)")]  # fmt: skip
    waits = [(int(trace.ts_ns[i]), int(trace.end_ns[i])) for i in loader]
    waited = [(b - a) / 1e3 for a, b in waits if _idle_share(trace, a, b) > 0.5]
    if not waited or sum(waited) < 1.0:
        return []
    return [Symptom("dataloader", f"{len(waited)} DataLoader wait(s) with the GPU idle "
                    f"({_ms(sum(waited))} in all)", "load data ahead: DataLoader(num_workers>0, "
                    "pin_memory=True), prefetch to the GPU", _pages(5), sum(waited))]  # fmt: skip


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
                    "and the recompiles with TORCH_LOGS=recompiles", _pages(2))]  # fmt: skip
