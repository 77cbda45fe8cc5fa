"""Lint a loaded trace: what it contains and what will mislead an analysis.

:func:`validate` turns the silent failures of trace tools into sentences. It
reads only the :class:`~tracereader._events.Trace` columns and metadata, never
prints, and returns a list of :class:`Finding` in a fixed order:

1. ``parser``: which decoder read the file, and every repair it made;
2. ``versions``: CUDA runtime/driver and CUPTI versions (HIP and roctracer or
   rocprofiler-sdk versions on ROCm), the timestamp format;
3. ``options``: the profiler options recorded in the file (``with_stack``...);
4. ``counts``: complete events per kind, flows and instants;
5. ``python``: the share of ``python_function`` events (``with_stack`` makes
   them the majority and the file several times larger);
6. ``gpu``: whether the trace has GPU work at all (MTIA device ops are
   named as such: they are not read as GPU work yet);
7. ``zero_dur``: GPU ops lasting 0 ns (timing lost, or an empty copy);
8. ``overlap``: GPU ops that start before the previous op on the same stream
   ended. A stream runs its work in order, so these are clock artifacts, and
   Perfetto silently drops such slices from its timeline;
9. ``last_step``: whether the last ``ProfilerStep`` was cut off.

Levels: ``"ok"`` (information), ``"warn"`` (the analysis still runs but read
the message), ``"error"`` (GPU numbers from this trace would be wrong).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._events import GPU_OP_KINDS, LAUNCH_KINDS, Kind, Trace, kind_mask, name_mask
from ._link import LAUNCH_APIS

__all__ = ["Finding", "validate"]

#: Profiler options torch writes as top-level keys (value 1) when they were on.
PROFILER_OPTIONS = ("record_shapes", "with_stack", "profile_memory", "with_modules", "with_flops")
#: Share of Python frames above which the ``python`` check warns.
PYTHON_SHARE_WARN = 0.5
#: Meta keys that may carry the torch version (user metadata; Kineto has none).
_TORCH_KEYS = ("torch_version", "pytorch_version", "torch")


@dataclass(frozen=True)
class Finding:
    """One line of a validation report.

    Attributes
    ----------
    level : str
        ``"ok"``, ``"warn"`` or ``"error"``.
    message : str
        One sentence for the user.
    check : str
        Which check produced it (``"parser"``, ``"overlap"``...).
    """

    level: str
    message: str
    check: str = ""


def validate(trace: Trace) -> list[Finding]:
    """Check a loaded trace and explain what it holds.

    Parameters
    ----------
    trace
        A trace from :func:`tracereader.load`.

    Returns
    -------
    list of Finding
        In the order of the checks listed in the module docstring; a check may
        give several findings (one per repair, for instance).
    """
    out: list[Finding] = []
    for check in (_parser, _versions, _options, _counts, _python, _gpu, _zero_dur, _overlap):
        out += check(trace)
    out += _last_step(trace)
    return out


def _n(count: int, noun: str) -> str:
    """``_n(1, "step")`` -> ``"1 step"``, ``_n(2, "step")`` -> ``"2 steps"``."""
    return f"{count:,} {noun}{'s' * (count != 1)}"


def _parser(trace: Trace) -> list[Finding]:
    if not trace.repairs:
        return [
            Finding("ok", f"read by the {trace.parser or 'unknown'} parser, no repairs", "parser")
        ]
    head = Finding("warn", f"read by the {trace.parser} parser after repairs", "parser")
    return [head] + [Finding("warn", f"repaired: {r}", "parser") for r in trace.repairs]


def _version(value: object) -> str:
    """``13000`` -> ``"13.0"`` (CUDA's 1000*major + 10*minor encoding)."""
    if isinstance(value, int) and value >= 1000:
        return f"{value // 1000}.{value % 1000 // 10}"
    return str(value)


def _hip_version(value: object) -> str:
    """``60342134`` -> ``"6.3"`` (HIP's 10**7*major + 10**5*minor + patch encoding)."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int) and value >= 10**7:
        return f"{value // 10**7}.{value % 10**7 // 10**5}"
    return str(value)


#: Version keys of Kineto's ROCm profilers (roctracer, then rocprofiler-sdk).
_ROCM_KEYS = (
    ("hip_runtime_version", "HIP runtime", _hip_version),
    ("hip_driver_version", "HIP driver", _hip_version),
    ("roctracer_version", "roctracer", str),
    ("rocprofiler-sdk_version", "rocprofiler-sdk", str),
)


def _platform(trace: Trace) -> str:
    """``"rocm"``, ``"mtia"`` or ``"cuda"``: the runtime the trace was recorded on."""
    if any(key in trace.meta for key, _, _ in _ROCM_KEYS):
        return "rocm"
    if trace.mtia_device_ops:
        return "mtia"
    calls = np.unique(trace.name_id[kind_mask(trace, LAUNCH_KINDS)])
    if any(trace.names[i].startswith("hip") for i in calls.tolist()):
        return "rocm"
    return "cuda"


def _versions(trace: Trace) -> list[Finding]:
    meta = trace.meta
    parts = [f"{key} {meta[key]}" for key in _TORCH_KEYS if key in meta]
    for key, label in (("cuda_runtime_version", "CUDA runtime"), ("cuda_driver_version", "driver")):
        if key in meta:
            parts.append(f"{label} {_version(meta[key])}")
    if "cupti_version" in meta:
        parts.append(f"CUPTI {meta['cupti_version']}")
    parts += [f"{label} {show(meta[key])}" for key, label, show in _ROCM_KEYS if key in meta]
    layout = (
        "relative timestamps + baseTimeNanoseconds (torch >= 2.4)"
        if "baseTimeNanoseconds" in meta
        else "absolute timestamps, no baseTimeNanoseconds (torch < 2.4 or another tool)"
    )
    if not parts:
        missing = {
            "rocm": "no HIP/ROCm versions in the file (a ROCm trace)",
            "mtia": "no runtime versions in the file (an MTIA trace)",
            "cuda": "no CUDA/CUPTI versions in the file",
        }[_platform(trace)]
        return [Finding("warn", f"{missing}; {layout}", "versions")]
    return [Finding("ok", f"{', '.join(parts)}; {layout}", "versions")]


def _options(trace: Trace) -> list[Finding]:
    on = [opt for opt in PROFILER_OPTIONS if trace.meta.get(opt)]
    text = ", ".join(on) if on else "none of " + ", ".join(PROFILER_OPTIONS)
    message = f"profiler options on: {text}"
    if "with_stack" not in on:
        message += " (no Python frames: op -> nn.Module attribution is unavailable)"
    return [Finding("ok", message, "options")]


def _counts(trace: Trace) -> list[Finding]:
    counts = np.bincount(trace.kind.astype(np.int64), minlength=len(Kind))
    parts = [f"{int(n):,} {Kind(k).name.lower()}" for k, n in enumerate(counts) if n]
    message = (
        f"{len(trace):,} complete events ({', '.join(parts)}), "
        f"{_n(trace.n_flows, 'flow event')}, {_n(trace.n_instants, 'instant')}, "
        f"{_n(len(trace.lanes), 'lane')} ({_n(len(trace.gpu_lanes()), 'GPU stream')})"
    )
    return [Finding("ok", message, "counts")]


def _python(trace: Trace) -> list[Finding]:
    share = float(np.mean(trace.kind == Kind.PYTHON)) if len(trace) else 0.0
    message = f"{share:.0%} of complete events are python_function frames"
    if share > PYTHON_SHARE_WARN:
        message += " (with_stack=True: they dominate the file size and the load time)"
        return [Finding("warn", message, "python")]
    return [Finding("ok", message, "python")]


def _gpu(trace: Trace) -> list[Finding]:
    n_gpu = int(kind_mask(trace, GPU_OP_KINDS).sum())
    if n_gpu:
        return [Finding("ok", f"{_n(n_gpu, 'GPU op')} (kernels, copies, memsets)", "gpu")]
    n_launch = int(_launches(trace).sum())
    if trace.mtia_device_ops:
        message = (
            f"{_n(trace.mtia_device_ops, 'MTIA device op')} (mtia_ccp_events) but MTIA is not "
            "supported yet: GPU figures (busy time, kernels, gaps) leave them out"
        )
        return [Finding("warn", message, "gpu")]
    if n_launch:
        message = (
            f"{_n(n_launch, 'launch call')} but no GPU ops: the GPU activity was not recorded "
            "(CUPTI unavailable, or the trace was exported outside on_trace_ready)"
        )
        return [Finding("error", message, "gpu")]
    message = "no GPU events: a CPU-only trace (was ProfilerActivity.CUDA in activities?)"
    return [Finding("warn", message, "gpu")]


def _launches(trace: Trace) -> npt.NDArray[np.bool_]:
    """Mask of runtime/driver calls that launch GPU work."""
    return name_mask(trace, LAUNCH_APIS) & kind_mask(trace, LAUNCH_KINDS)


def _zero_dur(trace: Trace) -> list[Finding]:
    gpu = kind_mask(trace, GPU_OP_KINDS)
    zero = int((gpu & (trace.dur_ns == 0)).sum())
    if not gpu.any():
        return []
    if zero:
        verb = "lasts" if zero == 1 else "last"
        message = (
            f"{_n(zero, 'GPU op')} {verb} 0 ns: no busy time is counted for them "
            "(the profiler lost their timing, or they did no work)"
        )
        return [Finding("warn", message, "zero_dur")]
    return [Finding("ok", "no GPU op lasts 0 ns", "zero_dur")]


def _overlap(trace: Trace) -> list[Finding]:
    """Count GPU ops starting before an earlier op on the same stream ended."""
    gpu = np.flatnonzero(kind_mask(trace, GPU_OP_KINDS))
    if not len(gpu):
        return []
    by_lane = gpu[np.lexsort((trace.ts_ns[gpu], trace.lane[gpu]))]
    lane, ts, end = trace.lane[by_lane], trace.ts_ns[by_lane], trace.end_ns[by_lane]
    n_overlap = n_streams = 0
    for lane_id in np.unique(lane):
        rows = lane == lane_id
        s, e = ts[rows], end[rows]
        hits = int((s[1:] < np.maximum.accumulate(e)[:-1]).sum())
        n_overlap += hits
        n_streams += hits > 0
    if n_overlap:
        message = (
            f"{_n(n_overlap, 'GPU op')} {'overlaps' if n_overlap == 1 else 'overlap'} an earlier op "
            f"on the same stream ({_n(n_streams, 'stream')}); Perfetto drops such slices"
        )
        return [Finding("warn", message, "overlap")]
    return [Finding("ok", "no overlapping GPU ops on any stream", "overlap")]


def _last_step(trace: Trace) -> list[Finding]:
    """Check whether the last ``ProfilerStep`` is complete.

    It counts as cut off when the profiler stopped while it was open (it ends
    at or after every other recorded event), or when launch calls made inside
    it have no GPU op in the trace (the GPU work was not collected). Analyses
    that average per step should drop such a step.
    """
    steps = trace.steps
    if not steps:
        return [
            Finding("warn", "no ProfilerStep spans: per-step results are unavailable", "last_step")
        ]
    last = steps[-1]
    others = np.ones(len(trace), dtype=bool)
    others[last.event] = False
    others &= trace.kind != Kind.OTHER  # the profiler's own "Trace" span covers everything
    trace_end = int(trace.end_ns[others].max()) if others.any() else last.end_ns
    inside = (trace.ts_ns >= last.start_ns) & (trace.ts_ns < last.end_ns) & _launches(trace)
    gpu_corr = trace.correlation[kind_mask(trace, GPU_OP_KINDS)]
    corr = trace.correlation[inside]
    missing = int((~np.isin(corr, gpu_corr) & (corr >= 0)).sum())
    reasons = []
    # A GPU trace always has the profiler's closing cudaDeviceSynchronize after its last
    # step; a CPU-only trace has nothing there, so ending with the trace proves nothing.
    has_gpu = bool(kind_mask(trace, GPU_OP_KINDS).any())
    if has_gpu and last.end_ns >= trace_end:
        reasons.append("it ends with the trace (the profiler stopped inside it)")
    if missing:
        reasons.append(f"{missing:,} of its {_n(len(corr), 'launch call')} had no GPU op recorded")
    if reasons:
        message = f"last step {last.name} looks cut off: {'; '.join(reasons)}"
        return [Finding("warn", message, "last_step")]
    message = f"{_n(len(steps), 'step')}; the last, {last.name}, looks complete"
    if not has_gpu and trace.mtia_device_ops:
        message += " (MTIA device ops are not read, so a cut-off step cannot show)"
    elif not has_gpu:
        message += " (a CPU-only trace cannot show a cut-off step)"
    return [Finding("ok", message, "last_step")]
