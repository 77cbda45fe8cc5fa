"""
The CPU cost of one SDPA call, backend by backend
=================================================

A fused attention kernel is one launch, but the call that launches it is not
free: PyTorch checks the inputs, picks or validates the backend, allocates the
output, and, for some backends, sets up a plan or a workspace. When the kernels
are long, the CPU runs ahead and that cost hides; when they are short, it sets
the pace. So how much CPU time does one call of
``torch.nn.functional.scaled_dot_product_attention`` (SDPA) cost, with each
backend pinned?

Measuring it is harder than it looks. CPU time per call moves from one process
to the next (clocks, caches, where the allocator's blocks landed), so backends
recorded in separate runs cannot be compared. This story
calls every backend in turn *in one process*, in a balanced order, and times
each call with the CPU's clock, without the profiler; then it profiles a few
more rounds to show what each call runs.

This file needs only torch, and ``_04_common.py`` beside it, the code the
stories of this set share (pasted into the site's download). On a machine with a
CUDA GPU it times the cuDNN, flash, efficient and math backends and PyTorch's
default; on the CPU it times the math backend and the default (no GPU lane in
the trace). Run it::

    python 04c_interleaved_backends.py                        # this page
    python 04c_interleaved_backends.py interleaved_backends   # by name: its table only

It writes the trace to ``traces/04_attention/interleaved_backends.json`` and every
unprofiled call's time to ``interleaved_backends.timings.json``.
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

# From the code the stories of this set share (``_04_common.py``, beside this file):
# ``sdpa_attention``, ``_pin`` (a version's backend pin), the balanced order
# (``INTERLEAVED``, ``balanced_cycle``), the series' ``SHAPE``, and the plumbing of
# every story (``story_run``, which makes ``run``).
from _04_common import INTERLEAVED, SHAPE, _pin, balanced_cycle, sdpa_attention, story_run

# %%
# One call, and its backends
# --------------------------
#
# Causal self-attention in one SDPA call. Its backends: ``cudnn`` (NVIDIA's
# kernel), ``flash`` (FlashAttention-2), ``efficient`` (a CUTLASS kernel) and
# ``math`` (the reference, built from ordinary operators). ``sdpa_kernel``
# pins one for the calls inside it; ``_pin`` gives that pin for a version name,
# and a context that does nothing for ``default``, which lets PyTorch choose.


# %%
# A balanced order
# ----------------
#
# If cuDNN always ran right after flash, any cost flash leaves behind (cold
# caches, a different code path just taken) would land on cuDNN's time. So the
# versions run in an order where, read as a loop, every version follows every
# other version exactly once. With five versions that is a cycle of 20 calls
# (5 × 4 ordered pairs). One pair, ``default`` then ``cudnn``, is the cycle's
# wrap-around, which a ``torch.cuda.synchronize`` separates, so its predecessor
# effect cannot be told from the synchronize's. Such an order is an Euler circuit of the complete
# directed graph on the versions: every ordered pair is an edge, walked once.
# ``balanced_cycle`` finds one with Hierholzer's algorithm: walk unused edges
# until stuck, then back up, emitting the nodes in reverse.
#
# .. literalinclude:: ../../../examples/04_attention/_04_common.py
#    :language: python
#    :pyobject: balanced_cycle


# %%
# The measurement
# ---------------
#
# ``profile_backends_interleaved`` builds bf16 ``q``, ``k`` and ``v`` at the
# Hugging Face series' shape, warms up every version (cuDNN builds and caches
# its plan for a shape on first use), then runs ``unprofiled_cycles`` cycles of
# the balanced order. Each call is timed alone with ``time.perf_counter_ns``:
# that is the CPU time of the call, from entering SDPA until it returns, with
# the kernel only queued. The backend's pin is entered outside the timed
# region, so only the call is timed. After each cycle the GPU is synchronized,
# so the launch queue never fills: a full queue would make a call wait for the
# GPU, and its time would no longer be the CPU's.
#
# Only then does the profiler record ``cycles`` more cycles, each call inside a
# ``record_function`` named after its version, to show what each call runs.


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
    # Time one SDPA call of each version in turn, without and with the profiler.
    # Writes ``timings.json`` (the unprofiled calls, in run order) and
    # ``trace.json`` into ``out_dir`` and returns the profiler's table.
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
    # Every unprofiled call, in run order, as [version, µs]: the order is kept
    # so that each call's predecessor can be read back.
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
# The variant
# -----------
#
# One variant, ``interleaved_backends``, at the series' shape: batch 8,
# 16 heads, sequence 1024, head_dim 64, with 40 unprofiled cycles of 20 calls
# and 4 profiled cycles.

VARIANTS = {"interleaved_backends": (profile_backends_interleaved, {**SHAPE})}


# %%
# ``run(name)`` runs it and says where. On the CPU it shrinks batch, heads and
# sequence to at most 128 so the run finishes in well under a minute.

# Run as ``python 04c_interleaved_backends.py VARIANT``, this line runs that one
# variant and stops.
run = story_run(VARIANTS, __name__)

# %%
# The profiled cycles: the table
# ------------------------------
#
# The table sums the profiled calls. Find each backend's own op under
# ``aten::scaled_dot_product_attention``: ``aten::_cudnn_attention_forward``,
# ``aten::_flash_attention_forward``, ``aten::_efficient_attention_forward``,
# and the math backend's chain of ordinary ops. Compare their *self* CPU time
# with their total: a fused op that is mostly self time does its work in C++
# the profiler does not see inside.

interleaved = run("interleaved_backends")
print(interleaved.table)

# %%
# What the H200 showed
# --------------------
#
# Under the profiler, cuDNN's forward op was mostly self time, far more than
# flash's (the :doc:`/cheatsheet` gives both). That self time is the per-call
# work in PyTorch's ``run_cudnn_SDP_fprop`` and cuDNN's frontend: a cache key,
# the lookup of the graph built on the first call, the table of tensor
# addresses, the workspace, ``execute``, none of it recorded as an op of its
# own (a CPU profiler that sees C++ frames, such as ``perf``, can split it).
# Without the profiler, too, a cuDNN call cost the CPU more than a flash
# call. (The first call of each cycle follows a synchronize, and costs more
# for that reason alone; leave it out when you compare.)
#
# The surprise was in the order. Grouped by the version that ran just before
# it, one version's median CPU time moved clearly within a single process (the
# :doc:`lab notes of Part 3 </chapters/part3-notes>` say by how much). A call's
# cost depends on its predecessor: a backend just switched to finds its code
# and data cold. So one call after another version is not a fair measure of
# a backend's cost in a model, where the same backend runs
# call after call. The next story, same-backend streams, times exactly that:
# bursts of calls of one backend, the bursts of all backends interleaved in one
# process.
#
# To read the predecessor effect yourself, load ``timings.json``: its
# ``calls`` list is in run order, so the version before each call is the
# previous entry. Group each version's times by that predecessor and compare
# the medians. The :doc:`lab notes of Part 3 </chapters/part3-notes>` and the
# :doc:`/cheatsheet` read this recording.
