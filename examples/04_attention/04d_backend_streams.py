"""
When the CPU decides: same-backend bursts of SDPA calls
=======================================================

Which backend of ``torch.nn.functional.scaled_dot_product_attention``
(:term:`SDPA`) is fastest? Kernel time answers only half of it. Each call also
costs the CPU some microseconds: checks, the backend's choice, the output's
allocation, the :term:`launch call` that queues the :term:`kernel` on the GPU.
When the kernels are long, the CPU runs ahead of the GPU and that cost hides;
when they are short, the GPU waits for each call and the CPU's cost is the pace.
This story (one of this site's example pages) measures both sides for every
backend, at two workloads: the :term:`Hugging Face series`' shape (batch 8, 16
heads, sequence 1024, head_dim 64, in bf16, a 16-bit floating-point format) and
a small one (batch 1, 8 heads, sequence 128).

A model calls the same backend over and over, so that is what we time: a
*burst*, calls of one backend one after another, without the profiler. (The code
and its files call a burst a *stream*: no relation to a CUDA :term:`GPU stream`.)
The bursts of all backends take turns in one process, because CPU time moves
from process to process more than the differences we are after. (Timing single
calls, one backend after another, shows something else: a call's CPU time
depends on which backend ran just before it. The story on interleaved backends
measured that; bursts make it matter once per burst instead of on every call.)

This file needs only torch, and ``_04_common.py`` beside it (the pins, the
balanced order and the plumbing this set's stories share; the site's download
has it pasted in). On a machine with a CUDA GPU it times the cuDNN, flash,
efficient and math backends and PyTorch's default; on the CPU it times the math
backend and the default, at shrunken sizes (the trace then has no
:term:`GPU lane`). Run it::

    python 04d_backend_streams.py                   # this page: both workloads
    python 04d_backend_streams.py streams_small     # one named variant, and its table

Each run writes its trace to ``traces/04_attention/<variant>.json`` and every
burst's times to ``<variant>.timings.json``.
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
# Causal self-attention (each token looks only at itself and earlier tokens) in one SDPA
# call. Its backends: ``cudnn`` (:term:`cuDNN`'s kernel), ``flash`` (FlashAttention-2,
# from the paper of that name), ``efficient`` (a :term:`CUTLASS` kernel) and ``math``
# (the reference, built from ordinary operators); ``default`` pins nothing and lets
# PyTorch choose. ``_pin`` gives a version's pin, a context manager from
# ``torch.nn.attention.sdpa_kernel`` that allows only that version's backend.


# %%
# The bursts take turns in a balanced order: read as a loop, every version follows
# every other version exactly once per cycle (for five versions, a cycle of 20
# bursts), so no backend always inherits the same predecessor's leftovers in the
# CPU's caches. ``balanced_cycle`` builds that order (the story on interleaved
# backends shows how).


# %%
# Three clocks on every burst
# ---------------------------
#
# ``profile_backend_streams`` warms every version up (a version that refuses the
# shape is left out, with its reason), then runs ``cycles`` cycles of the balanced
# order, ``calls`` calls per burst. Each burst gets three numbers:
#
# - **CPU time per call**: ``time.perf_counter_ns`` around each call, from
#   entering SDPA until it returns with the kernel queued;
# - **wall time**: from the burst's first call until the GPU has finished it
#   (``torch.cuda.synchronize``);
# - **event time**: the time between a pair of :term:`CUDA events <CUDA event>`
#   around the burst, which the GPU stamps with its own clock.
#
# Compare them per call, with one caution: the events' span covers the GPU's
# :term:`idle gaps <idle gap>` too, so it follows whichever side is slower; it is
# not the kernels' own time. That comes from the trace. Set the CPU time per call
# against the kernels' time per call: if the CPU's is below, the CPU keeps ahead
# and the wall time follows the GPU's; if above, the GPU waits and the wall time
# follows the CPU's. Which clock the wall time follows tells you which side to
# make faster.
#
# Nothing here runs under the profiler. Afterwards, the profiler records one short
# burst of ``profiled_calls`` calls of each version, inside a
# :term:`range <record_function range>` named after it, to show what the calls
# ran.


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
# Both run 12 cycles of 16-call bursts, then profile 4 calls per version.

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
# ``clocks`` prints, per version, the medians of ``timings.json`` in µs per call
# (the CPU time with each burst's first call left out, the first call alone, the
# wall time and the event time), then, with ``tracereader`` (this site's library
# for reading traces), the kernels' time per call in the profiled burst and the
# CPU time of each profiled call.

import statistics  # the standard library's median

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")


def clocks(result):
    # Locally the timings lie beside the trace, as ``<variant>.timings.json``; in the
    # site's recordings, as ``timings.json`` in the trace's folder.
    traced_at = Path(result.trace_path)
    paths = [traced_at.with_suffix(".timings.json"), traced_at.parent / "timings.json"]
    timings = next((json.loads(p.read_text()) for p in paths if p.exists()), None)
    traced = tracereader.load(result.trace_path) if tracereader else None
    print("µs per call:  CPU  first   wall  events  kernels  profiled calls (CPU µs)")
    for version in dict.fromkeys(b["version"] for b in timings["streams"]) if timings else ():
        bursts = [b for b in timings["streams"] if b["version"] == version]
        per = timings["calls_per_stream"]
        cpu = statistics.median(us for b in bursts for us in b["cpu_us"][1:])
        first = statistics.median(b["cpu_us"][0] for b in bursts)
        wall = statistics.median(b["wall_us"] / per for b in bursts)
        events = [b["gpu_event_us"] / per for b in bursts if "gpu_event_us" in b]
        events = f"{statistics.median(events):7.1f}" if events else f"{'-':>7}"
        kernels, profiled = "-", ""
        for burst in traced.regions(version)[:1] if traced else ():
            window = (burst.start_ns, burst.end_ns)
            ops = traced.where(name="aten::scaled_dot_product_attention", within=window)
            gpu = tracereader.kernel_table(traced, window=window).to_records()
            kernel_us = sum(r["total_us"] for r in gpu if not r["name"].startswith("Mem"))
            kernels = f"{kernel_us / len(ops):.1f}" if gpu else "-"  # no GPU lane: "-"
            profiled = ", ".join(f"{traced.dur_ns[i] / 1e3:.0f}" for i in ops)
        print(f"{version:>10} {cpu:6.1f} {first:6.1f} {wall:6.1f} {events} {kernels:>8}  {profiled}")  # fmt: skip


# %%
# The series' shape
# -----------------
#
# The profiler's table sums the profiled short bursts, sorted by GPU time. In this
# table math's many kernels and ops fill the rows, with its range twice (on the CPU
# and, as a :term:`gpu_user_annotation`, on the GPU); the fused backends' rows fall
# below its 15. ``clocks`` prints every version.

series = run("streams_backends")
print(series.table)
clocks(series)

# %%
# On both GPUs, in every repeat, every fused version's CPU time per call was below
# its kernels' time per call. So the CPU ran ahead, the kernels ran back to back,
# and the wall time per call followed the GPU: it was nearer the kernels' time than
# the CPU time, for every version. cuDNN's call was the fastest; ``default``, which
# runs the same kernel, came next, the first call of its bursts costing the CPU more
# than cuDNN's (:doc:`/chapters/part3` sets the times side by side).
#
# Open ``streams_backends.json`` in Perfetto (a trace viewer that runs in the browser,
# at ui.perfetto.dev) to see the profiled bursts. After each version's first call,
# efficient's and math's kernels follow one another on the GPU lane with gaps of a few
# µs at most, in every repeat on both GPUs, and so do flash's in all but one H200
# repeat. cuDNN's and ``default``'s do not at first: in every recording their first
# kernel ended before the CPU had launched the second, and the GPU waited, tens of µs or
# more for cuDNN, less for ``default``. The profiler makes calls costlier: in this
# recording every profiled call of every version cost the CPU more than the unprofiled
# median (compare the profiled calls' CPU µs with the ``CPU`` column), and the GPU
# waited between the shortest kernels, cuDNN's and ``default``'s.
# From the third kernel on, ``default``'s kept up in every recording, cuDNN's in some,
# not all. cuDNN's first profiled call is the longest, in every recording: it is the
# first call the profiler records, and during it the trace shows the profiler's own
# :term:`Activity Buffer Request` and a :term:`memset` launch (``cudaMemsetAsync``) that
# took hundreds of µs. Read it as the profiler starting up, not as cuDNN's cost: without
# the profiler, a cuDNN burst's first call took well under a millisecond. So the
# profiled trace cannot show whether the GPU was kept busy without the profiler; the
# unprofiled clocks can, and at this shape they say it was.
#
# A small workload
# ----------------
#
# Now each call's GPU work is tiny beside the series' shape (about a thousandth of
# it): one batch element, 8 heads, 128 tokens, about 17 MFLOP of useful work per
# call (the FLOPs that causal attention needs, the masked half of the products left
# out). The CPU's work per call is the same whatever the size (the
# same checks, choices and launch), so its time per call should barely change. Guess
# before you read: does the ranking hold?

small = run("streams_small")
print(small.table)
clocks(small)

# %%
# In this table the rows ``cudnn``, ``default``, ``flash``, ``efficient`` and the first
# ``math`` are the versions' ranges on the GPU: each spans its first GPU operation to
# its last, idle time included. *Self CUDA %* divides by the summed time of all the
# profile's GPU operations (*Self CUDA time total*), not the range's own, so a range
# longer than that sum reads over 100 % (here cuDNN's and math's); flash's, mostly idle
# too but shorter, reads less. ``aten::_cudnn_attention_forward`` counts cudnn's 4 calls
# and ``default``'s 4 (PyTorch chose cuDNN); ``aten::to``, ``aten::_to_copy`` and
# ``aten::copy_`` are the math backend converting ``q``, ``k`` and ``v`` to fp32 and two
# results back to bf16: the output, and the attention weights (the softmaxed scores),
# which the math backend returns too and SDPA drops.
#
# The CPU time per call barely changed from the series' shape in five of the six
# processes (each ran both workloads); in the third H100 repeat every version's calls
# had cost the CPU more at the series' shape, cuDNN's over 1.5 times as much: CPU time
# moves even within one process. At the small shape the wall time per call followed the
# CPU: it was nearer the CPU time per call than the kernels' time, for every version, in
# every repeat on both GPUs. The GPU sat idle between calls, waiting for the next
# launch. There the order reversed. Of the fused kernels, cuDNN's was still the shortest
# and efficient's the longest, yet efficient's *call* was the fastest, in every process
# (:doc:`/chapters/part3` gives the ratio). "cuDNN is fastest" holds for kernel time,
# and for wall time only while the GPU is busy. The picture shows cuDNN's profiled burst
# from its second call on: each memset, a short wait for the kernel's launch, the short
# kernel, then a longer idle gap while the CPU prepares the next call. Every kernel of
# the burst ends before its range does.

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    traced_small = tracereader.load(small.trace_path)
    for burst in traced_small.regions("cudnn")[:1]:  # no cudnn range on the CPU
        window = (burst.start_ns, burst.end_ns)
        first = traced_small.where(name="aten::scaled_dot_product_attention", within=window)[0]
        tracereader.timeline(traced_small, window=(int(traced_small.end_ns[first]), burst.end_ns),
                             title="cudnn, small shape: calls 2 to 4", width_in=9, fig=plt.figure())  # fmt: skip

# %%
# How to read ``timings.json`` yourself: each entry of ``streams`` is one burst,
# in run order, with ``version``, ``after`` (its predecessor), ``cpu_us`` (one
# value per call), ``wall_us`` and, on a GPU, ``gpu_event_us``. Leave out each
# burst's first call when you take CPU time per call: it follows both a
# synchronize and another version, and costs more for either reason. The wall
# time has no per-call values: divide ``wall_us`` by ``calls_per_stream`` for a
# burst's wall time per call, which includes that first call and anything that
# interrupted the burst, and take the median over the bursts of a version. The
# median drops a few disturbed bursts, not a disturbance in most of them (a busy
# machine): then set it beside the CPU time per call before you trust it. Run the
# whole file again, in a new process, and see what moved.
#
# What to take away: rank attention backends by kernel time only when the GPU is busy.
# At small batches and short sequences, look for idle gaps between short kernels in the
# trace: then the call's CPU cost decides, so time whole calls without the profiler and
# pick the backend by that time (here efficient's); fewer, larger calls, or
# :term:`CUDA graphs <CUDA graph>` (one launch replays many kernels; not measured here),
# cut the CPU's cost itself. :doc:`/chapters/part3` reads both recordings.
