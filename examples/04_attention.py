"""
Attention: naive, compiled, and every SDPA backend
==================================================

Causal self-attention on query, key and value tensors of shape
``(batch, heads, seq, head_dim)``, the Hugging Face series' shape by default
(batch 8, 16 heads, sequence 1024, head_dim 64, bf16). ``naive`` writes it out
in five steps: ``q @ k.transpose``, scale, causal ``masked_fill``, softmax,
``@ v``; ``naive_inplace`` masks the scores in place instead of in a copy.
``sdpa_<backend>`` calls ``torch.nn.functional.scaled_dot_product_attention``
with one backend pinned by ``torch.nn.attention.sdpa_kernel`` (math, efficient,
flash, cudnn); ``sdpa_default`` lets PyTorch choose. ``naive_compile`` compiles
the five-step version. ``interleaved_backends`` times the CPU cost of one
call of each backend, in turn in one process; ``streams_backends`` and
``streams_small`` time streams of calls of one backend, interleaved in one
process, at the series' shape and at a small one. Every variant is listed in ``VARIANTS`` and read in the
Part 3 chapter.

This file needs only torch. On a machine with a CUDA GPU it profiles live; on
the CPU it profiles a shrunken problem there (no GPU lane, and only the math
backend exists). Run it yourself::

    python 04_attention.py                         # the naive version
    python 04_attention.py --list                  # every variant, with its settings
    python 04_attention.py --variant sdpa_flash    # one named variant
    python 04_attention.py --variant sweep         # every version over 10 shapes

Each run writes its trace to ``traces/04_attention/<name>.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import argparse
import contextlib
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# %%
# Attention, two ways
# -------------------


def naive_attention(q, k, v):
    """Causal attention in five steps, each its own operator."""
    scores = q @ k.transpose(-2, -1)
    scores = scores * (1.0 / math.sqrt(q.shape[-1]))
    seq = q.shape[-2]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(causal, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def naive_attention_inplace(q, k, v):
    """The same five steps, with the mask written into the scores themselves (``masked_fill_``).

    No copy of the score matrix. Safe under autograd too: no backward needs the unmasked
    scores (the scaling's backward needs only the scale, the softmax's only its output).
    Where a backward does need a tensor changed in place, autograd's version counter
    makes ``backward()`` raise instead of computing a wrong gradient.
    """
    scores = q @ k.transpose(-2, -1)
    scores = scores * (1.0 / math.sqrt(q.shape[-1]))
    seq = q.shape[-2]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores.masked_fill_(causal, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


IMPLS = {"naive": naive_attention, "naive_inplace": naive_attention_inplace}


def sdpa_attention(q, k, v):
    """The same, by PyTorch's fused scaled_dot_product_attention."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


BACKENDS = {
    "math": SDPBackend.MATH,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}

# %%
# How it is profiled
# ------------------
#
# ``profile_attention`` builds random bf16 ``q``, ``k``, ``v``, warms up (and
# compiles, if asked), then profiles ``wait + warmup + active`` forward passes,
# each inside ``record_function("attention")``, with input shapes recorded and
# the peak GPU memory of one forward measured before profiling.


def profile_attention(
    out_dir,
    *,
    batch=8,
    heads=16,
    seq=1024,
    head_dim=64,
    impl="naive",
    backend=None,
    compile=None,
    active=3,
    device=None,
):
    """Profile one attention forward per step; write ``trace.json``, return the table."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and backend not in (None, "math"):
        print(f"the {backend} backend needs a CUDA GPU: profiling the math backend instead")
        backend = "math"
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
        for _ in range(3)
    )
    f = IMPLS.get(impl, sdpa_attention)
    if compile:
        torch._dynamo.reset()
        f = torch.compile(f, mode=None if compile == "default" else compile)
    pin = sdpa_kernel([BACKENDS[backend]]) if backend else contextlib.nullcontext()

    def step():
        with torch.no_grad(), record_function("attention"):
            return f(q, k, v)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with pin:
        for _ in range(5):  # warm up (and compile)
            step()
        peak = None
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            step()
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
        (out_dir / "timings.json").write_text(json.dumps({"peak_extra_bytes": peak}))
        activities = [ProfilerActivity.CPU]
        if device == "cuda":
            activities.append(ProfilerActivity.CUDA)
        with profile(
            activities=activities,
            schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(str(out_dir / "trace.json")),
            record_shapes=True,
        ) as prof:
            for _ in range(2 + active):
                step()
                prof.step()
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# A sweep over shapes
# -------------------
#
# ``profile_sweep`` times every version at each sequence length and head_dim,
# with CUDA events and without the profiler: the FlashAttention papers' setup,
# batch x seq = 16k tokens and heads x head_dim = 2048. Each version runs a few
# warm-up calls, then ``groups`` groups of ``calls`` calls issued back to back
# (so the GPU never waits for the CPU between them) with one pair of events
# around each group; its peak extra memory is taken from one more call. Rates count the useful work only: causal attention needs
# half of the ``4 * batch * heads * seq**2 * head_dim`` FLOPs of the full product
# (the naive version computes all of it). A version that refuses a shape is
# recorded with its one-line reason. Everything goes to ``timings.json``; the
# profiler then records one forward of each version at the last shape.

SWEEP_IMPLS = ("naive", "math", "efficient", "flash", "cudnn", "default")


def _sweep_call(impl, q, k, v):
    return naive_attention(q, k, v) if impl == "naive" else sdpa_attention(q, k, v)


def _pin(impl):
    """The backend pin of a sweep version, entered once around all its calls."""
    return sdpa_kernel([BACKENDS[impl]]) if impl in BACKENDS else contextlib.nullcontext()


def profile_sweep(
    out_dir,
    *,
    seqs=(512, 1024, 2048, 4096, 8192),
    head_dims=(64, 128),
    tokens=16384,
    model_dim=2048,
    calls=10,
    groups=5,
    device=None,
):
    """Time each version at each shape; write ``timings.json`` and ``trace.json``."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    impls = SWEEP_IMPLS
    if device == "cpu":  # a small sweep that finishes quickly; only math exists there
        impls, seqs, head_dims, tokens, model_dim, calls, groups = (
            ("naive", "math"),
            (64, 128),
            (64,),
            256,
            128,
            3,
            2,
        )
    results = []
    for head_dim in head_dims:
        for seq in seqs:
            batch, heads = max(1, tokens // seq), model_dim // head_dim
            torch.manual_seed(0)
            q, k, v = (
                torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
                for _ in range(3)
            )
            flop = 4 * batch * heads * seq * seq * head_dim / 2
            for impl in impls:
                row = {
                    "impl": impl,
                    "seq": seq,
                    "head_dim": head_dim,
                    "batch": batch,
                    "heads": heads,
                    "useful_flop": flop,
                }
                try:
                    with torch.no_grad(), _pin(impl):
                        for _ in range(3):
                            _sweep_call(impl, q, k, v)
                        times_ms = []  # per call, one value per group
                        if device == "cuda":
                            torch.cuda.synchronize()
                            for _ in range(groups):
                                start, end = (
                                    torch.cuda.Event(enable_timing=True) for _ in range(2)
                                )
                                start.record()
                                for _ in range(calls):
                                    _sweep_call(impl, q, k, v)
                                end.record()
                                end.synchronize()
                                times_ms.append(start.elapsed_time(end) / calls)
                            torch.cuda.synchronize()
                            torch.cuda.reset_peak_memory_stats()
                            base = torch.cuda.memory_allocated()
                            _sweep_call(impl, q, k, v)
                            torch.cuda.synchronize()
                            row["peak_extra_bytes"] = torch.cuda.max_memory_allocated() - base
                        else:
                            import time

                            for _ in range(groups):
                                t0 = time.perf_counter()
                                for _ in range(calls):
                                    _sweep_call(impl, q, k, v)
                                times_ms.append((time.perf_counter() - t0) * 1e3 / calls)
                    row["ms"] = times_ms
                except (RuntimeError, torch.OutOfMemoryError) as exc:
                    row["error"] = str(exc).strip().splitlines()[0][:200]
                    if device == "cuda":
                        torch.cuda.empty_cache()
                results.append(row)
            del q, k, v
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "timings.json").write_text(json.dumps({"sweep": results}))
    # One profiled forward of each version at the last shape, for the trace.
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    q = torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
    with torch.no_grad(), profile(activities=activities, record_shapes=True) as prof:
        for impl in impls:
            with record_function(impl), _pin(impl), contextlib.suppress(RuntimeError):
                _sweep_call(impl, q, q, q)
    prof.export_chrome_trace(str(out_dir / "trace.json"))
    lines = [f"{'version':>10} {'head_dim':>8} {'seq':>6} {'median ms':>10} {'TFLOP/s':>8}"]
    for row in results:
        if "ms" in row:
            ms = sorted(row["ms"])[len(row["ms"]) // 2]
            lines.append(
                f"{row['impl']:>10} {row['head_dim']:>8} {row['seq']:>6} {ms:>10.3f} "
                f"{row['useful_flop'] / (ms * 1e-3) / 1e12:>8.1f}"
            )
        else:
            lines.append(
                f"{row['impl']:>10} {row['head_dim']:>8} {row['seq']:>6}  refused: {row['error']}"
            )
    return "\n".join(lines)


# %%
# The CPU cost of each backend
# ----------------------------
#
# CPU time per call moves by tens of percent from one process to the next, so
# comparing backends recorded in separate runs says little. ``profile_backends_interleaved``
# calls every version in turn in one process, in a balanced order (every version
# follows every other exactly once per cycle), with each backend's pin entered
# outside the timed region. It times ``unprofiled_cycles`` cycles with
# ``time.perf_counter_ns`` and no profiler (``timings.json``), synchronizing the
# GPU after each cycle so the launch queue never fills, and then profiles
# ``cycles`` more, each call labelled with its version.

INTERLEAVED = ("cudnn", "flash", "efficient", "math", "default")


def balanced_cycle(n):
    """Indexes 0..n-1 in an order where, read as a loop, every ordered pair of two
    different indexes is neighbours exactly once (an Euler circuit of the complete
    directed graph, found by Hierholzer's algorithm)."""
    unused = {i: [j for j in range(n) if j != i] for i in range(n)}
    stack, circuit = [0], []
    while stack:
        if unused[stack[-1]]:
            stack.append(unused[stack[-1]].pop(0))
        else:
            circuit.append(stack.pop())
    return tuple(circuit[::-1][:-1])  # the circuit returns to its start: drop the repeat


def profile_backends_interleaved(
    out_dir,
    *,
    batch=8,
    heads=16,
    seq=1024,
    head_dim=64,
    unprofiled_cycles=40,
    cycles=4,
    device=None,
):
    """Time one SDPA call of each version in turn, without and with the profiler.

    Writes ``timings.json`` (the unprofiled calls, in run order) and ``trace.json``
    into ``out_dir`` and returns the profiler's table.
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    names = INTERLEAVED if device == "cuda" else ("math", "default")
    cycle = [names[i] for i in balanced_cycle(len(names))]
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
        for _ in range(3)
    )
    calls = []
    with torch.no_grad():
        for name in names:  # warm up each version (cuDNN builds its plan on first use)
            with _pin(name):
                for _ in range(5):
                    sdpa_attention(q, k, v)
        if device == "cuda":
            torch.cuda.synchronize()
        for _ in range(unprofiled_cycles):
            for name in cycle:
                with _pin(name):
                    t0 = time.perf_counter_ns()
                    sdpa_attention(q, k, v)
                    calls.append((name, (time.perf_counter_ns() - t0) / 1e3))
            if device == "cuda":
                torch.cuda.synchronize()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "timings.json").write_text(
        json.dumps(
            {
                "what": "CPU time per SDPA call without the profiler, in run order",
                "unit": "us",
                "calls": [[name, round(us, 1)] for name, us in calls],
            }
        )
    )
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.no_grad(), profile(activities=activities, record_shapes=True) as prof:
        for _ in range(cycles):
            for name in cycle:
                with _pin(name), record_function(name):
                    sdpa_attention(q, k, v)
            if device == "cuda":
                torch.cuda.synchronize()
    prof.export_chrome_trace(str(out_dir / "trace.json"))
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# Same-backend streams, and a small workload
# ------------------------------------------
#
# A call's CPU time depends on what ran just before it: switching backends
# leaves caches cold. ``profile_backend_streams`` therefore calls each version
# ``calls`` times in a row (a *stream*), and interleaves the streams in one
# process over ``cycles`` cycles of the balanced order above, so every version
# follows every other once per cycle. Each call is timed with
# ``time.perf_counter_ns`` (its CPU time); each stream also gets its wall time,
# from its first call until the GPU has finished (``torch.cuda.synchronize``),
# and a pair of CUDA events around it. Nothing here runs under the profiler;
# afterwards one stream of ``profiled_calls`` calls of each version is
# profiled, inside a ``record_function`` named after it. At a small workload
# (batch 1, a few heads, a short sequence) the kernels are short and the
# call's CPU time sets the pace; at the series' shape the GPU does.


def profile_backend_streams(
    out_dir,
    *,
    batch=8,
    heads=16,
    seq=1024,
    head_dim=64,
    calls=16,
    cycles=12,
    profiled_calls=4,
    device=None,
):
    """Time same-backend streams of SDPA calls, interleaved in one process.

    Writes ``timings.json`` (one entry per stream, in run order) and ``trace.json``
    into ``out_dir`` and returns the profiler's table.
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    names = INTERLEAVED if device == "cuda" else ("math", "default")
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
        for _ in range(3)
    )
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    refused = {}
    with torch.no_grad():
        for name in names:  # warm up each version; one that refuses the shape is left out
            try:
                with _pin(name):
                    for _ in range(5):
                        sdpa_attention(q, k, v)
            except RuntimeError as exc:
                refused[name] = str(exc).strip().splitlines()[0][:200]
        names = tuple(n for n in names if n not in refused)
        order = [names[i] for i in balanced_cycle(len(names))] if len(names) > 1 else list(names)
        sync()
        streams, before = [], None
        for _ in range(cycles):
            for name in order:
                with _pin(name):
                    cpu_us = []
                    if device == "cuda":
                        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                        start.record()
                    t_start = time.perf_counter_ns()
                    for _ in range(calls):
                        t0 = time.perf_counter_ns()
                        sdpa_attention(q, k, v)
                        cpu_us.append(round((time.perf_counter_ns() - t0) / 1e3, 2))
                    if device == "cuda":
                        end.record()
                    sync()
                    wall_us = (time.perf_counter_ns() - t_start) / 1e3
                entry = {
                    "version": name,
                    "after": before,
                    "cpu_us": cpu_us,
                    "wall_us": round(wall_us, 1),
                }
                if device == "cuda":
                    entry["gpu_event_us"] = round(start.elapsed_time(end) * 1e3, 1)
                streams.append(entry)
                before = name
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "timings.json").write_text(
        json.dumps(
            {
                "what": "same-backend streams of SDPA calls without the profiler, in run order",
                "unit": "us",
                "calls_per_stream": calls,
                "shape": [batch, heads, seq, head_dim],
                "refused": refused,
                "streams": streams,
            }
        )
    )
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.no_grad(), profile(activities=activities, record_shapes=True) as prof:
        for name in names:
            with _pin(name), record_function(name):
                for _ in range(profiled_calls):
                    sdpa_attention(q, k, v)
            sync()
    prof.export_chrome_trace(str(out_dir / "trace.json"))
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# The variants
# ------------

SHAPE = {"batch": 8, "heads": 16, "seq": 1024, "head_dim": 64}
VARIANTS = {
    "naive": (profile_attention, {**SHAPE}),
    "naive_inplace": (profile_attention, {**SHAPE, "impl": "naive_inplace"}),
    "naive_compile": (profile_attention, {**SHAPE, "compile": "default"}),
    "sdpa_default": (profile_attention, {**SHAPE, "impl": "sdpa"}),
    "sdpa_math": (profile_attention, {**SHAPE, "impl": "sdpa", "backend": "math"}),
    "sdpa_efficient": (profile_attention, {**SHAPE, "impl": "sdpa", "backend": "efficient"}),
    "sdpa_flash": (profile_attention, {**SHAPE, "impl": "sdpa", "backend": "flash"}),
    "sdpa_cudnn": (profile_attention, {**SHAPE, "impl": "sdpa", "backend": "cudnn"}),
    "interleaved_backends": (profile_backends_interleaved, {**SHAPE}),
    "sweep": (profile_sweep, {}),
    "streams_backends": (profile_backend_streams, {**SHAPE}),
    "streams_small": (
        profile_backend_streams,
        {"batch": 1, "heads": 8, "seq": 128, "head_dim": 64},
    ),
}
COLD_VARIANTS = ()

#: On the CPU, batch, heads and sequence shrink to at most this, so that a run finishes quickly.
CPU_MAX_DIM = 128


class Run:
    """What one profiled run left: its name, the profiler's table and the trace file."""

    def __init__(self, name, table, trace_path, device):
        self.name, self.table, self.trace_path, self.device = name, table, trace_path, device

    def __repr__(self):
        if self.device == "cuda":
            where = f"live on {torch.cuda.get_device_name(0)}"
        else:
            where = (
                "on the CPU: no CUDA device here, so the profiler recorded CPU activity only "
                "and the trace has no GPU lane"
            )
        return f"{self.name}: profiled {where}; trace written to {self.trace_path}"


def run(name, *, out_root=Path("traces") / "04_attention"):
    """Profile one variant of ``VARIANTS`` and return a Run."""
    harness, params = VARIANTS[name]
    params = dict(params)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        for key in ("batch", "heads", "seq"):
            if key in params:
                params[key] = min(params[key], CPU_MAX_DIM)
    out_dir = Path(out_root) / name
    table = harness(out_dir, device=device, **params)
    trace_path = Path(out_root) / f"{name}.json"
    (out_dir / "trace.json").replace(trace_path)
    for extra in out_dir.iterdir():  # timings.json: the peak memory of one forward
        extra.replace(Path(out_root) / f"{name}.{extra.name}")
    out_dir.rmdir()
    result = Run(name, table, trace_path, device)
    print(result)
    return result


# sphinx_gallery_start_ignore
# When this site is built, ``run`` replays what the H200 recorded (the build
# machine may have no GPU). A downloaded copy of this file never takes this branch.
if "tracesite" in sys.modules:
    run = sys.modules["tracesite"].replayer(run)
# sphinx_gallery_end_ignore


def main(argv):
    """Profile one variant from the command line."""
    parser = argparse.ArgumentParser(description="Profile causal attention.")
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="run one named variant")
    args = parser.parse_args(argv)
    if args.list:
        for name, (harness, params) in VARIANTS.items():
            print(f"{name:>16}  {harness.__name__}  {params}")
        return 0
    print(run(args.variant or "naive").table)
    return 0


# Flags given: profile what they name and stop. (Inside Jupyter, sys.argv holds the
# kernel's own flags, so a notebook always runs the page below.)
if __name__ == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
    sys.exit(main(sys.argv[1:]))

# %%
# Naive attention: the table
# --------------------------
#
# Guess first: how many kernels do the five steps launch?

naive = run("naive")
print(naive.table)

# %%
# SDPA, PyTorch's choice: the table
# ---------------------------------

sdpa = run("sdpa_default")
print(sdpa.table)

# %%
# Every variant
# -------------

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")

# sphinx_gallery_start_ignore
sys.modules["tracesite"].all_recordings_html() if "tracesite" in sys.modules else None
# sphinx_gallery_end_ignore
