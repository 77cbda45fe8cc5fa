"""
The table and the timeline
==========================

The smallest workload worth profiling: ``torch.add(torch.matmul(x, w), b)``.
This experiment profiles it under :mod:`torch.profiler` at two sizes, 64x64 and
4096x4096 in bfloat16, and reads what the profiler leaves behind: its table
(*what* took the time) and its trace (*when*, drawn as a timeline). A third run
batches ``x`` to follow one Python call down to its GPU kernel. The sections
"Is the step waiting for the GPU, or for the CPU?" and "How does a Python call
become a kernel?" of :doc:`/chapters/part1` discuss these runs.

This file needs only torch, and ``_01_common.py`` beside it: the code that the
pages ("stories") of this set share, which the site's download of this page has
pasted in. On a machine with a CUDA GPU it profiles live; on the CPU it profiles
the same code there (the trace then has no :term:`GPU lane`, the timeline's row of
GPU work, and the 4096 size shrinks to 512 so that it finishes quickly). Run it
yourself::

    python 01a_table_and_timeline.py                  # the whole page
    python 01a_table_and_timeline.py 64_bf16_batch8   # one variant, its table printed

Each run writes its trace to ``traces/01_matmul_add/<variant>.json``. With
``tracereader`` (this site's library for reading traces; :doc:`the quick start
</quickstart>` installs it) and matplotlib, the page also draws one step of each
trace; without them, open the trace at https://ui.perfetto.dev.
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
# ``on_trace_ready``, which the profiler calls when the active window closes. The
# profiler records the GPU's side through :term:`CUPTI`, NVIDIA's profiling library.
#
# Its other settings serve the other experiments of this set, each explained on its
# own page: ``batch > 0`` makes ``x`` 3-D (``batch, size, size``); ``op="addmm"``
# profiles ``torch.addmm(b, x, w)`` instead; ``warmup=True`` runs five untimed calls
# before profiling; ``compile`` names a ``torch.compile`` mode (``"triton-gemm"`` is
# :term:`max-autotune` limited to Inductor's Triton matrix-multiply
# :term:`templates <template (Inductor)>`); ``tf32`` lets float32
# :term:`GEMMs <GEMM>` (matrix multiplies) round their inputs to :term:`TF32`;
# ``export="after"`` exports after the ``with`` block instead of from
# ``on_trace_ready``. It returns the profiler's table, sorted by GPU time when there
# is a GPU.
#
# .. literalinclude:: ../../../examples/01_matmul_add/_01_common.py
#    :language: python
#    :pyobject: profile_matmul_add

# %%
# The variants
# ------------
#
# Each experiment is one entry of ``VARIANTS``: the harness and its settings.
# Every variant was recorded three times on an NVIDIA H200 and three times on an
# NVIDIA H100, each repeat in a fresh process (shared with the set's other variants).
# This page prints and draws the H200's first repeat, which the recordings' file
# names call ``r0`` (then ``r1``, ``r2``); the text names the H100 where it differs.
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
# table. On this website ``run`` does not profile: it replays the H200's recording
# ``r0`` of the variant instead.

run = story_run(VARIANTS, __name__)

# %%
# 64x64: the table
# ----------------
#
# With 64x64 matrices in bfloat16 each :term:`kernel` (a function that runs on the GPU)
# takes a few µs, and the GPU works for a small fraction of the time the CPU spends
# preparing and launching them (the medians are in :doc:`/chapters/part1`). The table
# sums each op over the profiled window, the three kept steps. An op's :term:`self time`
# leaves out its children (the ops recorded inside it); its **total** time includes them.
# Compare ``Self CPU time total`` with ``Self CUDA time total`` at the bottom: the
# CPU's time against the GPU's. (The CPU total also counts the profiler's closing
# ``cudaDeviceSynchronize`` (:term:`cudaDeviceSynchronize at window end`), which is
# waiting, not work: the ``ProfilerStep*`` row is the steps' own CPU time.)

small = run("64_bf16")
# sphinx_gallery_start_ignore
small  # on the site: when and where it was recorded, and a link to every repeat
# sphinx_gallery_end_ignore

# %%
# The ``aten::`` rows are PyTorch's operators (:term:`aten`). ``aten::matmul`` has
# little self time but a large total, because it only hands over to ``aten::mm``.
# ``nvjet_...`` is the matrix multiply's kernel, from NVIDIA's :term:`cuBLAS` library
# (:term:`nvjet`), and ``vectorized_elementwise_kernel`` the add's.
# ``cuLaunchKernelEx`` and ``cudaLaunchKernel`` are the CPU calls that queued them
# (:term:`launch calls <launch call>`): here cuBLAS launched its GEMM through CUDA's
# driver API and PyTorch its add through the runtime API
# (:term:`runtime API, driver API`). cuBLAS launches some other GEMMs through the
# runtime (:doc:`story 01e </auto_examples/01_matmul_add/01e_dtypes>`).
#
# ``matmul_add`` appears twice. The row with CPU time is our label on the CPU. The
# first row, with no CPU time, is the same label's GPU-side span
# (:term:`gpu_user_annotation`): from the first kernel it launched to the last, idle
# time between them included. It is a label, not GPU work: ``Self CUDA time total``
# leaves it out, and its ``Self CUDA %`` can pass 100 %.
#
# ``ProfilerStep*`` stands for the three kept steps, ``ProfilerStep#2`` to ``#4``. Its
# ``CPU time avg`` is above the last step, which the next section draws, because the
# first kept step took longest in every repeat, on both GPUs (read the first kept step
# with suspicion: :term:`warm-up`).

print(small.table)

# %%
# 64x64: one step on the timeline
# -------------------------------
#
# The last kept step, ``ProfilerStep#4``, drawn by ``tracereader`` if it is installed.
# The CPU thread on top runs the nested ops: ``ProfilerStep`` > ``matmul_add`` >
# ``aten::matmul`` > ``aten::mm`` > its launch call ``cuLaunchKernelEx``, then
# ``aten::add`` > ``cudaLaunchKernel`` (the two launch boxes are too short for their
# names). The :term:`GPU stream` below runs two kernels of a few µs; ``GPU 0 stream 7``
# is GPU 0's queue of work, which it runs in order. Arrows join each launch call to the
# kernel it launched. The hatched span marks an :term:`idle gap` between two kernels;
# the GPU was just as idle before the first kernel and after the last, which the
# picture leaves blank.
#
# When the GPU is idle for most of a step, the step is :term:`CPU-bound`
# (overhead-bound): the CPU takes longer to prepare and launch the work than the GPU
# takes to do it, so a faster GPU would not help. ``tracereader.step_times`` measures
# it, printed below the picture for each kept step: the GPU's busy time, and its idle
# share of the step (from the step's start on the CPU, or the end of the previous
# step's GPU work if that is later, to the step's end on the CPU or the end of the
# last GPU op it launched, whichever is later). Over half idle is CPU-bound.

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    def show_last_step(result):
        """Draw the last kept step of ``result``'s trace, print every kept step's verdict,
        and return the trace and that step."""
        trace = tracereader.load(result.trace_path)
        last = trace.steps[-1]
        title = f"{result.name}: {last.name}, the last kept step"
        tracereader.timeline(trace, step=last.name, width_in=12, fig=plt.figure(), title=title)
        for kept in tracereader.step_times(trace):
            idle = 100 * (1 - kept.busy_share)
            print(
                f"{kept.name}: CPU {kept.cpu_us:.0f} us, GPU busy {kept.gpu_busy_us:.1f} us,"
                f" GPU idle {idle:.0f} % of the step: {kept.verdict}"
            )
        return trace, last

    show_last_step(small)

# %%
# 4096x4096: the table
# --------------------
#
# The same two calls on 4096x4096 matrices: 262,144 times the GEMM's arithmetic (and
# 4,096 times the add's elements). The GEMM kernel now takes most of the GPU time. In
# this table ``Self CUDA time total`` is larger than the steps' own CPU time (the
# ``ProfilerStep*`` row's ``CPU total``); on one H100 repeat the two were about equal.
# The steps' CPU time changed by less than half from 64x64, in every repeat on both
# GPUs. In every repeat but one, the row with the most ``Self CPU`` is the closing
# ``cudaDeviceSynchronize``: the CPU waiting until the GPU has run the kernels it queued.
# So its length is how far the CPU was ahead of the GPU when the window closed, which
# changes from run to run: over a quarter of ``Self CPU time total`` in those repeats,
# under a fifth on the H100 repeat where the CPU kept just level with the GPU (next
# section).
# Two rows are new: ``cudaMemsetAsync`` and ``Memset (Device)``, a :term:`memset` of a
# few bytes, issued inside ``aten::mm`` before each GEMM. It goes with the GEMM kernel
# cuBLAS picked, not with the size: at this size, the plain float32 GEMM (TF32 off) of
# :doc:`story 01e </auto_examples/01_matmul_add/01e_dtypes>` has none.

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
# The last kept step again, on a longer time scale: the CPU's boxes, nested as at
# 64x64, are now too narrow for their names. The GPU lane is full: the GEMM runs for
# far longer than the CPU needs to launch it. Follow the arrows: this step's launch
# calls, at the left, point far to the right, to its memset, GEMM and add. The bars
# before them on the GPU lane are GPU ops that earlier steps launched, still queued or
# running when this step began. On the H200 the launches got ahead of the GPU and the
# kernels queued (on one H100 repeat the CPU kept just level with it): the last lines
# printed under the picture give the :term:`launch-to-start latency` of each of this
# step's GPU ops, from the start of its launch call to its start on the GPU. The long
# red bar is the profiler's closing ``cudaDeviceSynchronize``: after the last step,
# the CPU waits there until the queued kernels have run. It is waiting, not this
# step's work.
#
# This step is :term:`GPU-bound`: the GPU was busy for nearly all of it, the kernels
# are the work, and only faster or fewer kernels would speed it up. The first kept
# step is only *balanced* (between the two). In every repeat, on both GPUs, its GPU
# lane is empty until the step's first GPU op (the profiler's switch from warm-up to
# recording comes just before the step, and a trace keeps no GPU op that started before
# it), and the step's CPU time was the longest of the three: read it with the same
# suspicion as the first step at 64x64.

if tracereader:
    big_trace, last = show_last_step(big)
    for gpu_op in tracereader.launches(big_trace).to_records():
        if gpu_op["step"] == last.name and gpu_op["launch_to_start_us"] is not None:
            print(
                f"{last.name} launched {tracereader.shorten_kernel_name(gpu_op['name'])};"
                f" it started {gpu_op['launch_to_start_us']:.0f} us after its launch call"
            )

# %%
# From a Python call to a kernel: a batched ``x``
# -----------------------------------------------
#
# Follow the GEMM's kernel back up the :term:`CPU lane`: ``aten::matmul`` is the
# operator Python called; the :term:`dispatcher` (the part of PyTorch that picks an
# operator's implementation for its inputs' device and dtype) runs its code, which
# calls ``aten::mm`` for two 2-D tensors, and ``aten::mm`` asks cuBLAS to launch a
# kernel.
# The launch call and the kernel share a :term:`correlation id`, which is how the trace
# joins the two lanes (in Perfetto, click a launch call and follow its arrow).
#
# Batch ``x`` to ``(8, 64, 64)`` and the chain stays the same: there is no
# ``aten::bmm``, because ``matmul`` folds the batch into the rows of one 2-D GEMM, so
# each step still runs two kernels. (``matmul`` calls ``aten::bmm`` only when the
# batch cannot be folded, as when ``w`` is batched too.) The new rows do the folding:
# ``aten::reshape`` and ``aten::view`` turn ``x`` into 512 rows of 64, and
# ``aten::_unsafe_view`` gives the product its batch back; all three make
# :term:`views <view>`, which launch no GPU work. The add's kernel changed: ``b``
# (64x64) is now broadcast over the batch of 8, so the add runs PyTorch's general
# ``elementwise_kernel``, which works out each element's position, instead of the
# vectorized kernel, which needs every input laid out like the output. It also adds 8
# times as many elements as at 64x64, so this run cannot tell what the kernel change
# itself costs. In this table the add took longer than the GEMM (on one H100 repeat
# slightly shorter).

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
# On the H200, the GPU sat idle for most of every 64x64 step (CPU-bound) and was busy
# for nearly all of each 4096x4096 step after the first (GPU-bound; on one H100 repeat
# the second kept step was only balanced), while the steps' CPU time changed by less
# than half between the two sizes (the measured shares, medians over the recordings,
# are in :doc:`/chapters/part1`). The rule of thumb: read the GPU's idle time inside a
# step (``tracereader.step_times``, or by eye on the GPU lane in Perfetto). Mostly
# idle: launch fewer, larger kernels, by batching the work, fusing ops
# (``torch.compile``) or replaying them as one :term:`CUDA graph`. Which pays depends
# on the step. The batch of 8 above ran 8 times the GEMM's rows with the same two
# launches per step. For this two-op step, compiling left two GPU operations per step
# (:doc:`story 01f </auto_examples/01_matmul_add/01f_compile>`), and compiled calls,
# with or without a CUDA graph, took at least twice eager's CPU time without the
# profiler (:doc:`story 01g </auto_examples/01_matmul_add/01g_cpu_time>`): fusion and
# graphs pay where there are many small kernels. Never idle: study the kernels
# themselves, as other experiments of this set do. In between, both matter.
