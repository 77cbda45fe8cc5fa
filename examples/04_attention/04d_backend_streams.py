"""
When the CPU decides: same-backend streams of SDPA calls
========================================================

Which backend of ``torch.nn.functional.scaled_dot_product_attention`` (SDPA) is
fastest? Kernel time answers only half of it. Each call also costs the CPU some
microseconds: checks, the backend's choice, the output's allocation, the launch.
When the kernels are long, the CPU runs ahead of the GPU and that cost hides;
when they are short, the GPU waits for each call and the CPU's cost is the
pace. This story measures both sides for every backend, at two workloads: the
Hugging Face series' shape (batch 8, 16 heads, sequence 1024, head_dim 64, bf16)
and a small one (batch 1, 8 heads, sequence 128).

A model calls the same backend over and over, so that is what we time: a
*stream* (a burst) of calls of one backend, without the profiler. The streams of
all backends take turns in one process, because CPU time moves from process to
process more than the differences we are after. (Timing single calls, one
backend after another, shows something else: a call's CPU time depends on which
backend ran just before it. The story on interleaved backends measured that;
streams make it matter once per stream instead of on every call.)

This file needs only torch, and ``_04_common.py`` beside it (the pins, the
balanced order and the plumbing this set's stories share; the site's download
has it pasted in). On a machine with a CUDA GPU it times the cuDNN, flash,
efficient and math backends and PyTorch's default; on the CPU it times the math
backend and the default, at shrunken sizes (no GPU lane in the trace). Run it::

    python 04d_backend_streams.py                   # this page: both workloads
    python 04d_backend_streams.py streams_small     # one named variant, and its table

Each run writes its trace to ``traces/04_attention/<variant>.json`` and every
stream's times to ``<variant>.timings.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import json
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

# From the code the stories of this set share (``_04_common.py``, beside this file;
# story 04c shows the balanced order): ``sdpa_attention``, ``_pin`` (a version's
# backend pin), ``INTERLEAVED`` and ``balanced_cycle``, the series' ``SHAPE``, and the
# plumbing of every story (``story_run``, which makes ``run``).
from _04_common import INTERLEAVED, SHAPE, _pin, balanced_cycle, sdpa_attention, story_run

# %%
# One call, and its backends
# --------------------------
#
# Causal self-attention in one SDPA call. Its backends: ``cudnn`` (NVIDIA's
# kernel), ``flash`` (FlashAttention-2), ``efficient`` (a CUTLASS kernel) and
# ``math`` (the reference, built from ordinary operators); ``default`` pins
# nothing and lets PyTorch choose. ``_pin`` gives a version's pin, a context
# manager from ``torch.nn.attention.sdpa_kernel``.


# %%
# The streams take turns in a balanced order: read as a loop, every version
# follows every other version exactly once per cycle (for five versions, a
# cycle of 20 streams), so no backend always inherits the same predecessor's
# cold caches. ``balanced_cycle`` builds that order as an Euler circuit of the
# complete directed graph on the versions, by Hierholzer's algorithm.


# %%
# Three clocks on every stream
# ----------------------------
#
# ``profile_backend_streams`` warms every version up (a version that refuses
# the shape is left out, with its reason), then runs ``cycles`` cycles of the
# balanced order, ``calls`` calls per stream. Each stream gets three numbers:
#
# - **CPU time per call**: ``time.perf_counter_ns`` around each call, from
#   entering SDPA until it returns with the kernel queued;
# - **wall time**: from the stream's first call until the GPU has finished
#   it (``torch.cuda.synchronize``);
# - **GPU time**: a pair of CUDA events around the stream, stamped on the GPU.
#
# Compare them per call, with one caution: the events' span covers the GPU's
# idle gaps too, so it follows whichever side is slower. Set the CPU time per
# call against the kernel's own time per call, read in the trace: if the CPU's
# is below, the CPU keeps ahead and the wall time follows the GPU's; if above,
# the GPU waits and the wall time follows the CPU's. Which clock the wall time
# follows tells you which side to make faster.
#
# Nothing here runs under the profiler. Afterwards, the profiler records one
# short stream of ``profiled_calls`` calls of each version, inside a
# ``record_function`` named after it, to show what the calls ran.


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
    # Time same-backend streams of SDPA calls, interleaved in one process.
    # Writes ``timings.json`` (one entry per stream, in run order) and
    # ``trace.json`` into ``out_dir`` and returns the profiler's table.
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    names = INTERLEAVED if device == "cuda" else ("math", "default")
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
        for _ in range(3)
    )
    # Wait for the GPU to finish; on the CPU every call has finished on return.
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    refused = {}
    with torch.no_grad():
        for name in names:  # warm up each version; one that refuses the shape is left out
            try:
                with _pin(name):
                    for _ in range(5):
                        sdpa_attention(q, k, v)
            # A pinned backend that cannot run this shape (or this GPU) raises;
            # keep the first line of its reason, which timings.json reports.
            except RuntimeError as exc:
                refused[name] = str(exc).strip().splitlines()[0][:200]
        # The balanced order over the versions that are left.
        names = tuple(n for n in names if n not in refused)
        order = [names[i] for i in balanced_cycle(len(names))] if len(names) > 1 else list(names)
        # Start from an idle GPU, with no warm-up kernels still queued.
        sync()
        streams, before = [], None
        for _ in range(cycles):
            for name in order:
                with _pin(name):
                    cpu_us = []
                    # The GPU's clock: an event queued before the stream's first kernel.
                    if device == "cuda":
                        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                        start.record()
                    # The wall clock starts here, and each call gets its own CPU time.
                    t_start = time.perf_counter_ns()
                    for _ in range(calls):
                        t0 = time.perf_counter_ns()
                        sdpa_attention(q, k, v)
                        cpu_us.append(round((time.perf_counter_ns() - t0) / 1e3, 2))
                    if device == "cuda":
                        end.record()
                    # The stream's wall time ends when the GPU has run its last kernel.
                    sync()
                    wall_us = (time.perf_counter_ns() - t_start) / 1e3
                # One entry per stream; "after" names the version that ran just before.
                entry = {
                    "version": name,
                    "after": before,
                    "cpu_us": cpu_us,
                    "wall_us": round(wall_us, 1),
                }
                # The events' difference: the GPU time of the whole stream, in µs.
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
    # Only now the profiler: one short stream per version, each under its name,
    # so the trace shows each backend's ops, launches and kernels side by side.
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
#
# ====================  ===================================================
# ``streams_backends``  the series' shape: batch 8, 16 heads, seq 1024, d 64
# ``streams_small``     a small workload: batch 1, 8 heads, seq 128, d 64
# ====================  ===================================================
#
# Both run 12 cycles of 16-call streams, then profile 4 calls per version.

VARIANTS = {
    "streams_backends": (profile_backend_streams, {**SHAPE}),
    "streams_small": (
        profile_backend_streams,
        {"batch": 1, "heads": 8, "seq": 128, "head_dim": 64},
    ),
}


# %%
# ``run(name)`` runs one variant and says where. On the CPU it shrinks batch,
# heads and sequence to at most 128 so the run finishes sooner.

# Run as ``python 04d_backend_streams.py VARIANT``, this line runs that one variant
# and stops.
run = story_run(VARIANTS, __name__)

# %%
# The series' shape
# -----------------
#
# The table is the profiled short streams, by GPU time: one kernel per fused
# call, many for math. The unprofiled times are in ``timings.json``.

series = run("streams_backends")
print(series.table)

# %%
# On the H200 every fused call cost the CPU less than its kernel cost the
# GPU. So the CPU ran ahead, the kernels ran back to back, and the wall time
# per call was about the kernel's time: cuDNN's call was the fastest (the
# times are in the table of :doc:`/chapters/part3`).
#
# Open ``streams_backends.json`` in Perfetto (ui.perfetto.dev) to see it. In
# each version's range on the CPU lane the four calls are short; on the GPU
# lane, after the first call, the flash, efficient and math kernels follow one
# another with almost no gap between them. cuDNN's profiled calls can leave
# gaps: the profiler more than doubles their CPU cost. The unprofiled timings,
# not the trace, are the evidence of a busy GPU: there a cheaper call would
# change nothing.
#
# A small workload
# ----------------
#
# Now the kernels are tiny: one batch element, 8 heads, 128 tokens, about
# 17 MFLOP of useful work per call. The CPU's cost per call should barely change, since the same
# checks, choices and launch happen whatever the size. Guess before you read:
# does the ranking hold?

small = run("streams_small")
print(small.table)

# %%
# At the small shape the kernels were short, and the wall time per call was
# about the CPU time: the GPU sat idle between calls, waiting for the next
# launch. There the order reversed. cuDNN's kernel was still the shortest and
# efficient's the longest, yet efficient's *call* was the fastest, in every
# process (:doc:`/chapters/part3` gives the wall times and their ratio).
# "cuDNN is fastest" holds for kernel time, and for wall time only while the
# GPU is busy. In ``streams_small.json`` the GPU lane shows it: each short
# kernel, then an idle gap while the CPU prepares the next call, and every
# kernel ends before its range does.
#
# How to read ``timings.json`` yourself: each entry of ``streams`` is one
# stream, in run order, with ``version``, ``after`` (its predecessor),
# ``cpu_us`` (one value per call), ``wall_us`` and, on a GPU, ``gpu_event_us``.
# Leave out each stream's first call when you take CPU time per call: it
# follows both a synchronize and another version, and costs more for either
# reason. Divide ``wall_us`` by ``calls_per_stream`` for the wall time per
# call, and take medians over the streams of a version; then run the whole
# file again, in a new process, and see what moved.
#
# What to take away: rank attention backends by kernel time only when the GPU
# is busy. At small batches and short sequences, look for idle gaps between
# short kernels in the trace: then the call's CPU cost decides, so time whole
# calls without the profiler, and reach for fewer, larger calls or CUDA graphs
# rather than a faster kernel. :doc:`/chapters/part3` reads both recordings.
