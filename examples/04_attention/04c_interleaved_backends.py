"""
The CPU cost of one SDPA call, backend by backend
=================================================

A fused attention kernel does all of attention in one GPU :term:`kernel`, queued
by one :term:`launch call`, but the Python call that launches it is not free:
PyTorch checks the inputs, picks or validates the backend, allocates the output,
and, for some backends, prepares more (cuDNN looks up the execution plan it built
for this shape, and scratch GPU memory, its workspace). When the kernels are long,
the CPU runs ahead and that cost hides; when they are short, it sets the pace. So
how much CPU time does one call of
``torch.nn.functional.scaled_dot_product_attention`` (:term:`SDPA`) cost, with
each backend pinned (made the only one SDPA may use)?

Measuring it is harder than it looks. CPU time per call moves from one process
to the next, for reasons a trace does not show (the CPU's clock speed, what its
caches hold, where PyTorch's memory allocator placed its blocks), so backends
recorded in separate runs cannot be compared. This story (one of this site's
example pages) calls every backend in turn *in one process*, in a balanced order
(explained below), and times each call with the CPU's clock, without the
profiler; then it profiles a few more rounds to show what each call runs.

This file needs only torch, and ``_04_common.py`` beside it, the code the
stories of this set share (pasted into the site's download). On a machine with a
CUDA GPU it times the cuDNN, flash, efficient and math backends and PyTorch's
default; on the CPU it times the math backend and the default (the trace then
has no :term:`GPU lane`). Run it::

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
# Causal self-attention (each token looks only at itself and earlier tokens) in one SDPA
# call. Its backends: ``cudnn`` (:term:`cuDNN`'s kernel), ``flash`` (FlashAttention-2, a
# fused kernel from the paper of that name), ``efficient`` (a :term:`CUTLASS` kernel)
# and ``math`` (the reference, built from ordinary operators). ``sdpa_kernel`` pins one
# for the calls inside it; ``_pin`` gives that pin for a version name, and a context
# that does nothing for ``default``, which lets PyTorch choose.


# %%
# A balanced order
# ----------------
#
# If cuDNN always ran right after flash, any cost flash leaves behind would land on
# cuDNN's time: the CPU's caches would hold flash's code and data, not cuDNN's, which
# must then be fetched again ("cold" caches). So the versions run in an order where,
# read as a loop, every version follows every other version exactly once. With five
# versions that is a cycle of 20 calls (5 × 4 ordered pairs). One pair, ``default`` then
# ``cudnn``, is the cycle's wrap-around, which a ``torch.cuda.synchronize`` separates,
# so its predecessor effect cannot be told from the synchronize's. Such an order is an
# Euler circuit of the complete directed graph on the versions: every ordered pair is an
# edge, walked once. ``balanced_cycle`` finds one with Hierholzer's algorithm: walk
# unused edges until stuck, then back up, emitting the nodes in reverse.
#
# .. literalinclude:: ../../../examples/04_attention/_04_common.py
#    :language: python
#    :pyobject: balanced_cycle


# %%
# The measurement
# ---------------
#
# ``profile_backends_interleaved`` builds ``q``, ``k`` and ``v`` in bf16 (a 16-bit
# floating-point format) at the :term:`Hugging Face series`' shape (batch 8, 16 heads,
# sequence 1024, head dimension 64), warms up every version (cuDNN builds and caches its
# plan for a shape on first use), then runs ``unprofiled_cycles`` cycles of the balanced
# order. Each call is timed alone with ``time.perf_counter_ns``: that is the CPU time of
# the call, from entering SDPA until it returns, with the kernel only queued. The
# backend's pin is entered outside the timed region, so only the call is timed. After
# each cycle the GPU is synchronized, so the GPU's queue of launched work never fills: a
# full queue would make a call wait for the GPU, and its time would no longer be the
# CPU's.
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
# The table sums the profiled calls of all five versions, sorted by GPU time
# (``CUDA total``), 15 rows. Its *Self* columns count an op's own time, its *total*
# columns include the ops inside it (:term:`self time`); the CPU columns are time on the
# CPU, the CUDA ones the time of the GPU work the op launched. Guess before you look:
# which backend fills it?

interleaved = run("interleaved_backends")
print(interleaved.table)

# %%
# In this table the math backend fills the rows: its ops and kernels take most of the
# GPU time, and every row but the first is its op, its range or its kernels. Its GEMM
# kernels, ``sm80_xmma_gemm_f32f32…``, are :term:`cuBLAS`'s fp32 kernels built for the
# A100's architecture (``sm80``), which Hopper GPUs run too; in fp32 they use ordinary
# multiply-add units, not the :term:`Tensor Cores`. ``math`` has two rows: the version's
# :term:`record_function range` on the CPU, whose CUDA total is the GPU work launched
# inside it, and its :term:`gpu_user_annotation`, the same range's span on the GPU, with
# no CPU time. The first row, ``aten::scaled_dot_product_attention``, averages the 80
# profiled calls of all five versions, math's included, under the profiler: it is not
# the cost of one call of any backend.
#
# Each backend's own op sits under ``aten::scaled_dot_product_attention``. With
# ``tracereader`` (this site's library for reading traces) the cell below prints them:
# ``aten::_cudnn_attention_forward`` (its calls are cudnn's and ``default``'s: PyTorch
# chose cuDNN), ``aten::_flash_attention_forward``,
# ``aten::_efficient_attention_forward``, and the math backend's op. Compare each one's
# self time with its total: a fused op that is mostly self time does its work in C++
# that the profiler does not see inside.

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    traced = tracereader.load(interleaved.trace_path)
    forwards = ("aten::_cudnn_attention_forward", "aten::_flash_attention_forward",
                "aten::_efficient_attention_forward", "aten::_scaled_dot_product_attention_math")  # fmt: skip
    print(f"{'op':<40} {'calls':>5} {'self CPU us/call':>17} {'CPU total us/call':>18} {'self':>5}")
    for row in tracereader.op_table(traced).to_records():  # one row per op name
        if row["name"] in forwards:
            n = row["calls"]
            print(f"{row['name']:<40} {n:>5} {row['self_cpu_us'] / n:>17.1f} "
                  f"{row['total_cpu_us'] / n:>18.1f} {row['self_cpu_us'] / row['total_cpu_us']:>5.0%}")  # fmt: skip

# %%
# Without the profiler
# --------------------
#
# Now the unprofiled calls, from ``timings.json``: its ``calls`` list is in run order,
# so the version before each call is the previous entry. The cell below prints each
# version's median CPU time per call, then its medians grouped by the version that ran
# just before it. It leaves out each cycle's first call (cuDNN's, on a GPU), which
# follows a synchronize; so ``-`` marks cuDNN after ``default``, that wrap-around.

import statistics  # the standard library's median

# Locally the timings lie beside the trace, as ``interleaved_backends.timings.json``;
# in the site's recordings, as ``timings.json`` in the trace's folder.
traced_at = Path(interleaved.trace_path)
timed_calls = []
for timings_path in (traced_at.with_suffix(".timings.json"), traced_at.parent / "timings.json"):
    if timings_path.exists():
        timed_calls = json.loads(timings_path.read_text())["calls"]
        break
versions = list(dict.fromkeys(version for version, _ in timed_calls))
per_cycle = len(versions) * (len(versions) - 1)  # calls in one cycle of the balanced order
after = {}  # (version, the version just before it): its CPU times, µs
for at in range(1, len(timed_calls)):
    if at % per_cycle:  # not a cycle's first call
        pair = (timed_calls[at][0], timed_calls[at - 1][0])
        after.setdefault(pair, []).append(timed_calls[at][1])
print(f"{'version':>10} {'median us':>10}  after: " + "".join(f"{v:>10}" for v in versions))
for version in versions:
    mine = [us for (this, _), times in after.items() if this == version for us in times]
    cells = [f"{statistics.median(after[version, prev]):10.1f}" if (version, prev) in after
             else f"{'-':>10}" for prev in versions]  # fmt: skip
    overall = f"{statistics.median(mine):10.1f}" if mine else f"{'-':>10}"  # none: all first
    print(f"{version:>10} {overall}         " + "".join(cells))

# %%
# What the recordings showed
# --------------------------
#
# On the H200 and the H100, in every repeat: under the profiler, cuDNN's forward op was
# mostly self time, over half of its total, and its self time per call was over twice
# flash's; flash's was about a third of its total. That self time is C++ work in PyTorch
# and in cuDNN's *frontend* (the C++ layer that builds and runs cuDNN's plans) that the
# profiler records as no op of its own: looking up the plan built on the first call,
# filling in the tensors' addresses, getting the workspace, and the frontend's work
# around running the plan. The launches that running the plan makes are not in it: each
# call's :term:`memset` (``cudaMemsetAsync``, which flash's op does not make) and kernel
# launch (:term:`cuLaunchKernelEx`) are recorded as calls of their own
# (:term:`CUDA runtime <runtime API, driver API>` and driver calls), which self time
# leaves out. A profiler of C++ functions, such as Linux's ``perf``, can split the rest.
# Without the profiler, too, a cuDNN call cost the CPU more than a flash call after the
# same predecessor: compare their medians after efficient and after math.
#
# The surprise was in the order. In every repeat on both GPUs, flash, efficient and math
# were each slowest right after cuDNN, while ``default``, which runs cuDNN's code, was
# fastest there. Flash's median moved the most with its predecessor: over 1.5 times as
# long after cuDNN as after efficient. A call's cost depends on its predecessor. A
# likely reason, which the timings cannot confirm: cuDNN's call, the costliest on the
# CPU of the fused backends, fills the CPU's caches with its own code and data, so the
# next backend finds its own cold, while ``default`` finds cuDNN's still there. So one
# call after another version is not a fair measure of a backend's cost in a model, where
# the same backend runs call after call. The next story, on same-backend bursts, times
# exactly that: bursts of calls of one backend, the bursts of all backends interleaved
# in one process. The medians also moved from one repeat (one process) to the next, on
# both GPUs: compare backends only within one process. The
# :doc:`lab notes of Part 3 </chapters/part3-notes>` and the :doc:`/cheatsheet` read
# this recording.
