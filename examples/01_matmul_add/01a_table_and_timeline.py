"""
The table and the timeline
==========================

The smallest workload worth profiling: ``torch.add(torch.matmul(x, w), b)``.
This experiment profiles it under :mod:`torch.profiler` at two sizes, 64x64 and
4096x4096 in bfloat16, and reads what the profiler leaves behind: its table
(*what* took the time) and its trace (*when*, drawn as a timeline). A third run
batches ``x`` to follow one Python call down to its GPU kernel. The sections
"Is the step waiting for the GPU, or for the CPU?" and "How does a Python call
become a kernel?" of :doc:`/chapters/part1` read these runs.

This file needs only torch, and ``_01_common.py`` beside it: the code the
stories of this set share, which the site's download of this story has pasted
in. On a machine with a CUDA GPU it profiles live; on the CPU it profiles the
same code there (the trace then has no GPU lane, and the 4096 size shrinks to
512 so that it finishes quickly). Run it yourself::

    python 01a_table_and_timeline.py                  # the whole page
    python 01a_table_and_timeline.py 64_bf16_batch8   # one variant, its table printed

Each run writes its trace to ``traces/01_matmul_add/<variant>.json``. With
:mod:`tracereader` installed (and matplotlib), the page also draws one step of
each trace; without it, open the trace at https://ui.perfetto.dev.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore

# From the code the stories of this set share (``_01_common.py``, beside this file): the
# workload ``fn``, the harness ``profile_matmul_add``, and the plumbing of every story
# (``story_run``, ``optional_tracereader``).
from _01_common import optional_tracereader, profile_matmul_add, story_run

# %%
# The workload and how it is profiled
# -----------------------------------
#
# ``fn`` is the code under study: a matrix multiply and an add, the computation
# of an ``nn.Linear`` layer.
#
# .. literalinclude:: ../../../examples/01_matmul_add/_01_common.py
#    :language: python
#    :pyobject: fn
#
# ``profile_matmul_add`` is the profiling harness. It builds three random
# ``size`` x ``size`` matrices, then runs ``wait + warmup_steps + active`` steps
# under the profiler with a ``schedule``: the profiler skips the first ``wait``
# steps, records and throws away the next ``warmup_steps`` (the profiler itself
# warms up), and keeps the last ``active`` ones. Each kept step becomes a
# ``ProfilerStep#N`` span in the trace, and ``record_function("matmul_add")``
# puts our own label around each call. The trace is written from
# ``on_trace_ready``, which the profiler calls when the active window closes.
#
# Its other settings serve the other experiments of this set: ``batch > 0``
# makes ``x`` 3-D (``batch, size, size``); ``op="addmm"`` profiles
# ``torch.addmm(b, x, w)`` instead; ``warmup=True`` runs five untimed calls
# before profiling; ``compile`` names a ``torch.compile`` mode (``"triton-gemm"``
# is max-autotune limited to Inductor's Triton GEMM templates); ``tf32`` lets
# fp32 GEMMs round their inputs to TF32; ``export="after"`` exports after the
# ``with`` block instead of from ``on_trace_ready``. It returns the profiler's
# table, sorted by GPU time when there is a GPU.
#
# .. literalinclude:: ../../../examples/01_matmul_add/_01_common.py
#    :language: python
#    :pyobject: profile_matmul_add

# %%
# The variants
# ------------
#
# Each experiment is one entry of ``VARIANTS``: the harness and its settings.
# The recordings this page shows were made on an NVIDIA H200, each variant
# several times, each repeat in a fresh process.
#
# ===================  ===========================================================
# variant              what it runs
# ===================  ===========================================================
# ``64_bf16``          64x64 bf16, five warm-up calls first, 3 active steps
# ``4096_bf16``        the same at 4096x4096
# ``64_bf16_batch8``   64x64 with ``x`` batched to ``(8, 64, 64)``
# ===================  ===========================================================

VARIANTS = {
    "64_bf16": (profile_matmul_add, {"size": 64, "dtype": "bfloat16", "warmup": True}),
    "4096_bf16": (profile_matmul_add, {"size": 4096, "dtype": "bfloat16", "warmup": True}),
    "64_bf16_batch8": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "batch": 8, "warmup": True},
    ),
}

# %%
# ``run(name)``, from ``story_run``, is the plumbing: it profiles one variant of
# ``VARIANTS`` with its harness, moves the trace to ``traces/01_matmul_add/NAME.json``,
# prints one line saying where it ran (on the CPU, every size above ``CPU_MAX_SIZE``,
# 512, shrinks to it), and returns the run's name, the profiler's table and the trace's
# path. ``python 01a_table_and_timeline.py VARIANT`` profiles one variant and prints its
# table; while the site builds, ``run`` replays the H200's recordings instead.

run = story_run(VARIANTS, __name__)

# %%
# 64x64: the table
# ----------------
#
# With 64x64 matrices in bfloat16 each kernel is tiny, and the GPU works for a
# small fraction of the time the CPU spends preparing and launching them (the
# medians are in :doc:`/chapters/part1`). Compare ``Self CPU time total`` with
# ``Self CUDA time total`` at the bottom.
# (The total CPU time also counts the profiler's closing
# ``cudaDeviceSynchronize``, which is waiting, not work: the ``ProfilerStep*``
# row is the steps' own CPU time.)

small = run("64_bf16")
# sphinx_gallery_start_ignore
small  # on the site: when and where it was recorded, and a link to every repeat
# sphinx_gallery_end_ignore

# %%
# **Self** time leaves out an op's children; **total** time includes them.
# ``aten::matmul`` has little self time but a large total, because it only
# hands over to ``aten::mm``. The first row, ``matmul_add`` with no CPU time, is
# our label's GPU-side span, from the first kernel it launched to the last,
# idle time included.

print(small.table)

# %%
# 64x64: one step on the timeline
# -------------------------------
#
# The last profiled step, drawn by ``tracereader`` (the library this site is
# built on) if it is installed. The CPU thread on top runs the nested ops
# (``ProfilerStep`` > ``matmul_add`` > ``aten::matmul`` > ``aten::mm`` > the
# launch call); the GPU stream below runs two tiny kernels. Arrows join each
# launch call to the kernel it launched; shaded spans are GPU idle time.
#
# When the GPU is idle for most of a step, the step is *CPU-bound*
# (overhead-bound): the CPU takes longer to prepare and launch the work than
# the GPU takes to do it, so a faster GPU would not help.

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    small_trace = tracereader.load(small.trace_path)
    last = small_trace.steps[-1]
    tracereader.timeline(small_trace, step=last.name, width_in=12, fig=plt.figure())
    busy = tracereader.summary(small_trace)["gpu_busy_us"] / len(small_trace.steps)
    print(f"{last.name}: CPU {last.dur_us:.0f} us; GPU busy {busy:.1f} us per step on average")

# %%
# 4096x4096: the table
# --------------------
#
# The same two calls on 4096x4096 matrices: 262,144 times the arithmetic. The
# GEMM kernel now dominates, and the CUDA total climbs to the order of the CPU
# total while the CPU time of the steps changes by less than half.

big = run("4096_bf16")
# sphinx_gallery_start_ignore
big
# sphinx_gallery_end_ignore

# %%

print(big.table)

# %%
# 4096x4096: one step on the timeline
# -----------------------------------
#
# Now the GPU lane is full: the GEMM runs for far longer than the CPU needs to
# launch it. On the H200 the launches got ahead of the GPU and the kernels
# queued (on one H100 repeat the CPU kept just level with it). This
# step is *GPU-bound*: the kernels are the work, and only faster or fewer
# kernels would speed it up.

if tracereader:
    big_trace = tracereader.load(big.trace_path)
    tracereader.timeline(big_trace, step=big_trace.steps[-1].name, width_in=12, fig=plt.figure())
    busy = tracereader.summary(big_trace)["gpu_busy_us"] / len(big_trace.steps)
    print(f"GPU busy {busy:.0f} us per step on average")

# %%
# From a Python call to a kernel: a batched ``x``
# -----------------------------------------------
#
# Follow the GEMM's kernel back up the CPU lane: ``aten::matmul`` is the
# operator Python called, the dispatcher runs its code, which calls ``aten::mm``
# for two 2-D tensors, and ``aten::mm`` asks cuBLAS to launch a kernel. The
# launch call and the kernel share a correlation id, which is how the trace
# joins the two lanes (in Perfetto, click a launch call and follow its arrow).
#
# Batch ``x`` to ``(8, 64, 64)`` and the chain barely changes: there is no
# ``aten::bmm``, because ``matmul`` folds the batch into the rows of one 2-D
# GEMM, so each step still runs two kernels. (``matmul`` calls ``aten::bmm``
# only when the batch cannot be folded, as when ``w`` is batched too.)

batched = run("64_bf16_batch8")
# sphinx_gallery_start_ignore
batched
# sphinx_gallery_end_ignore

# %%

print(batched.table)

# %%
# What the chapter concluded
# --------------------------
#
# On the H200, the GPU worked for a small fraction of the CPU time of the 64x64
# steps (CPU-bound) and for most of it at 4096x4096 (GPU-bound), while
# the CPU time per step hardly changed between the two (the measured shares,
# medians over the recordings, are in :doc:`/chapters/part1`). The rule of thumb:
# read the GPU's idle time inside a step. Mostly idle, launch fewer, larger
# kernels; never idle, study the kernels themselves, as the next experiments of
# this set do; in between, both matter.
