"""``tracereader summary`` of one trace: the facts, the steps table, and the help's epilog.

The command line's body for one trace, and for several that are repeats of one run
rather than ranks of one job (ranks go to :func:`tracereader._ranks.rank_summary`);
:mod:`tracereader.cli` dispatches here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from ._errors import UserError
from ._events import Trace
from ._load import load

__all__ = ["summary_epilog", "summary_one", "summary_repeats"]


def summary_one(args: argparse.Namespace) -> int:
    """Print the summary of the one trace in ``args.file``; the exit status."""
    from ._measure import summary

    if args.drop_last_step:
        raise UserError("--drop-last-step applies to several ranks (a directory or several files)")
    args.file = args.file[0]
    _check_bytes(args)
    s = summary(load(args.file, extra_args=False))  # the summary reads no other arg
    if args.format == "json":
        print(json.dumps(_with_bytes(s, args), indent=2))
        return 0
    _print(_with_bytes(s, args), args.format)
    return 0


def summary_repeats(args: argparse.Namespace, traces: Mapping[str, Trace], why: str) -> int:
    """Print the summary of each of ``traces`` (path -> trace), repeats rather than ranks."""
    from ._measure import summary

    if args.drop_last_step:
        raise UserError(f"--drop-last-step applies to several ranks, and these are not: {why}")
    _check_bytes(args)
    each = {path: _with_bytes(summary(trace), args) for path, trace in traces.items()}
    if args.format == "json":
        print(json.dumps({"ranks": False, "why": why, "traces": list(each.values())}, indent=2))
        return 0
    print(f"{why[0].upper()}{why[1:]}. Each trace is summarised on its own.")
    for path, s in each.items():
        print()
        print(f"**{path}**" if args.format == "markdown" else f"== {path} ==")
        print()
        _print(s, args.format)
    return 0


def _check_bytes(args: argparse.Namespace) -> None:
    per_step = args.bytes_per_step
    if per_step is not None and per_step <= 0:
        raise UserError("--bytes-per-step must be a positive number of bytes")
    if args.peak_tbs is not None and (args.peak_tbs <= 0 or per_step is None):
        raise UserError("--peak-tbs needs --bytes-per-step and must be positive")


def _with_bytes(s: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """``s`` with each step's bandwidth when ``--bytes-per-step`` is given."""
    per_step = args.bytes_per_step
    if per_step is not None:  # each step read `per_step` bytes while its GPU ops ran
        for d in s["step_times"]:
            busy_s = d["gpu_busy_us"] * 1e-6
            d["busy_tb_per_s"] = round(per_step / busy_s / 1e12, 3) if busy_s > 0 else None
            if args.peak_tbs is not None and d["busy_tb_per_s"] is not None:
                d["peak_fraction"] = round(d["busy_tb_per_s"] / args.peak_tbs, 3)
    return s


def _print(s: dict[str, Any], fmt: str) -> None:
    """The summary ``s`` as text or Markdown: the facts, then the steps table."""
    from ._tables import Table

    apis = [f"{k}: {v} GPU op(s)" for k, v in s["launch_apis"].items()] or ["none"]
    how = ", ".join(f"{k} {v}" for k, v in s["issuer_methods"].items())
    busy_pct = 100 * s["gpu_busy_us"] / s["duration_us"] if s["duration_us"] else 0.0
    med = s["launch_to_start_us_median"]
    facts = [
        ("trace", [s["source"]]),
        ("repairs", s["repairs"] or ["none"]),
        ("events", [f"{s['events']:,} complete events over {s['duration_us']:,.2f} us"]),
        ("lanes", [f"{s['cpu_threads']} CPU thread(s), {s['gpu_streams']} GPU stream(s) "
                   f"on device(s) {', '.join(map(str, s['devices'])) or 'none'}"]),
        ("GPU ops", [f"{s['gpu_ops']} ({s['kernels']} kernels, {s['memcpys']} memcpys, "
                     f"{s['memsets']} memsets)", f"{s['linked_gpu_ops']} linked to a launch call"]
                    + [f"{s['mtia_device_ops']} MTIA device ops not read (MTIA is not supported yet)"]
                    * bool(s["mtia_device_ops"])),
        ("launch APIs", apis),
        ("graph launches", [f"{s['graph_launches']} graph-launch call(s)"]),
        ("issuing op found by", [how]),
        ("GPU busy", [f"{s['gpu_busy_us']:,.2f} us ({busy_pct:.1f}% of the trace)"]),
        ("launch-to-start", [f"median {med:,.2f} us" if med is not None else "n/a"]),
    ] + [("steps", ["none: no ProfilerStep#N range (prof.step() marks one per step), "
                    "so no per-step verdict"])] * (not s["step_times"])  # fmt: skip
    if fmt == "markdown":
        facts_text = Table(["what", "value"], [[k, "; ".join(v)] for k, v in facts], "Summary",
                           name_columns=()).to_markdown()  # fmt: skip
    else:
        width = max(len(k) for k, _ in facts) + 2
        facts_text = "\n".join(
            (k if n == 0 else "").ljust(width) + line
            for k, lines in facts
            for n, line in enumerate(lines)
        )
    cols = ["step", "cpu_us", "gpu_busy_us", "gpu_ops", "kernels", "launches", "span_us",
            "gpu_idle_us", "busy_pct", "verdict"]  # fmt: skip
    extra = [
        c for c in ("busy_tb_per_s", "peak_fraction") if s["step_times"] and c in s["step_times"][0]
    ]
    steps = Table(
        cols + extra,
        [[d["name"], d["cpu_us"], d["gpu_busy_us"], d["gpu_ops"], d["kernels"], d["launches"],
          d["span_us"], d["gpu_idle_us"], round(100 * d["busy_share"], 2), d["verdict"],
          *(d[c] for c in extra)] for d in s["step_times"]],
        "Steps (GPU ops belong to the step that launched them; verdict: GPU idle in the span)",
        name_columns=(),
    )  # fmt: skip
    print(facts_text)
    if len(steps):
        print()
        print(steps.to_markdown() if fmt == "markdown" else steps.to_text())
    if not s["gpu_ops"]:
        from ._measure import NO_GPU_ACTIVITY

        print()
        print(NO_GPU_ACTIVITY[0].upper() + NO_GPU_ACTIVITY[1:] + ".")


def summary_epilog() -> str:
    """The ``summary --help`` epilog: what each line and column means."""
    from ._measure import CPU_BOUND_BUSY, GPU_BOUND_BUSY

    gpu, cpu = f"{100 * GPU_BOUND_BUSY:.0f} %", f"{100 * CPU_BOUND_BUSY:.0f} %"
    return f"""\
lines:
  repairs              what the loader forgave to read a malformed file: invalid
                       UTF-8 bytes replaced, raw control characters in strings,
                       NaN/Infinity tokens, a lone surrogate in a name, GPU
                       events whose pid is not a device skipped, ... ("none":
                       valid JSON, read as written; a cut-off file is an error)
  issuing op found by  how each launch call was tied to the CPU op that made it,
                       with a count per way: external_id (the call's External id
                       names an op on its thread that contains it), containment
                       (the innermost op around the call, where External ids
                       cannot be trusted), none (no op around the call)

steps (one row per ProfilerStep#N):
  cpu_us               the step's range on the CPU
  gpu_busy_us          busy time of the GPU ops launched in the step, wherever
                       they ran (what --bytes-per-step divides by)
  span_us              from the step's CPU start (or the end of the previous
                       step's span, if later: the CPU ran ahead) to the later of
                       its CPU end and the end of the last GPU op it launched;
                       spans never overlap, so no GPU time counts twice
  gpu_idle_us          time in the span when no GPU ran anything (any GPU op
                       running in the span counts as busy)
  busy_pct             100 * (span_us - gpu_idle_us) / span_us
  verdict              GPU-bound: busy >= {gpu} of the span; the GPU never waits,
                         so speed up the GPU work (the trace cannot tell whether
                         arithmetic or memory limits it)
                       CPU-bound (also called overhead-bound): busy < {cpu}; the
                         GPU waits for the CPU: launch overhead, host syncs,
                         data loading
                       balanced: in between; both matter, read gpu_idle_us
                       no GPU work: the step ran no GPU op
"""
