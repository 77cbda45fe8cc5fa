"""
The first step: cold start and warm-up
======================================

The three active steps of a profile run the same code, yet the first is
wider. Is that the :term:`cold start`, the one-time setup of a process's first
call (loading GPU code, allocating memory, :term:`cuBLAS` choosing its
:term:`kernels <kernel>`)? This experiment profiles
``torch.add(torch.matmul(x, w), b)`` in a fresh process without any
:term:`warm-up`, and again after five warm-up calls, with 3 and with 20
active steps, and compares the first step with the rest. The sections "Why is
the first step slow?" and "Is a late kernel the GPU's fault?" of
:doc:`/chapters/part1` (and its lab notes) read these runs.

A cold run means something only as the first thing its process does, so run
each cold variant on its own::

    python 01b_cold_start.py                         # the whole page
    python 01b_cold_start.py 64_bf16_20steps_cold    # one variant in a fresh process

This file needs only torch, and ``_01_common.py`` beside it (the code this set's
stories share; the site's download has it pasted in). On the CPU it profiles the
same code there (the trace has no :term:`GPU lane`, and 4096 shrinks to 512).
Each run writes its trace to ``traces/01_matmul_add/<variant>.json``; with
:mod:`tracereader` installed the page also measures every step.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore

# From the code the stories of this set share (``_01_common.py``, beside this file;
# story 01a shows it): the harness ``profile_matmul_add`` and the plumbing of every
# story (``story_run``, ``optional_tracereader``).
from _01_common import optional_tracereader, profile_matmul_add, story_run

# %%
# The workload and its harness
# ----------------------------
#
# ``fn`` is the code under study, ``torch.add(torch.matmul(x, w), b)``.
# ``profile_matmul_add`` builds the inputs and runs ``wait + warmup_steps +
# active`` steps under the profiler with a ``schedule``: the first ``wait``
# steps are skipped, the next ``warmup_steps`` recorded and thrown away, the
# last ``active`` kept, each as a ``ProfilerStep#N`` span (a :term:`ProfilerStep`).
# Here the setting that matters is ``warmup`` (not the schedule's
# ``warmup_steps``): ``True`` runs five untimed calls (and a
# :term:`synchronize <host sync>`) before the profiler starts; ``False``, the
# default, leaves the process cold. ``active`` sets how many steps are kept.
# (The other settings, ``batch``, ``op``, ``compile``, ``tf32`` and ``export``,
# serve the other experiments of this set.)


# %%
# The variants
# ------------
#
# The ``_cold`` variants must each be the first call of a fresh process: the
# recordings this page shows ran each of them alone in a process of its own,
# several times over, on an NVIDIA H200. The warm ``64_bf16_20steps`` ran in a
# process shared with other warm experiments.
#
# ========================  =====================================================
# variant                   what it runs
# ========================  =====================================================
# ``64_bf16_cold``          64x64 bf16, no warm-up, the default 3 active steps
# ``4096_bf16_cold``        the same at 4096x4096
# ``64_bf16_20steps_cold``  64x64, no warm-up, 20 active steps
# ``64_bf16_20steps``       64x64, five warm-up calls first, 20 active steps
# ========================  =====================================================

VARIANTS = {
    "64_bf16_cold": (profile_matmul_add, {"size": 64, "dtype": "bfloat16"}),
    "4096_bf16_cold": (profile_matmul_add, {"size": 4096, "dtype": "bfloat16"}),
    "64_bf16_20steps": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "warmup": True, "active": 20},
    ),
    "64_bf16_20steps_cold": (profile_matmul_add, {"size": 64, "dtype": "bfloat16", "active": 20}),
}


# ``run(name)`` profiles one variant and returns its name, the profiler's table
# and the trace's path (story 01a has the details).
run = story_run(VARIANTS, __name__)

# %%
# Twenty steps in a cold process
# ------------------------------
#
# The first run of this page is the coldest one it can make: nothing has
# touched the GPU yet in this process. There is no warm-up, so the schedule's
# skipped step (``wait=1``) and discarded step (``warmup=1``) are the process's
# first two calls, and they absorb the one-time setup: loading the :term:`GEMM`
# and add kernels, cuBLAS choosing its kernel, the caching
# allocator's first blocks (the caching allocator is PyTorch's pool of GPU
# memory, kept for reuse). (Run as a whole page, only this first
# run is truly cold; the later ``_cold`` runs inherit a warm process. Run each
# on its own, as above, to see it cold.)

cold20 = run("64_bf16_20steps_cold")
# sphinx_gallery_start_ignore
cold20  # on the site: when and where it was recorded, and a link to every repeat
# sphinx_gallery_end_ignore

# %%
# The table sums the 20 steps, so one slow step hides in it. The trace keeps
# each step apart: with :mod:`tracereader` installed, ``step_times`` gives every
# ``ProfilerStep``'s CPU time, and we compare the first with the median of the
# rest.

tracereader = optional_tracereader()  # None where it is not installed


def first_against_rest(result):
    # The first step's CPU time, the median of the others', and their ratio. A
    # step's CPU time is its ``ProfilerStep`` span: from one ``prof.step()`` to the
    # next, the time the CPU took to run the step's Python, dispatch its ops and
    # launch its kernels (it does not wait for the GPU to finish them).
    cpu = [s.cpu_us for s in tracereader.step_times(tracereader.load(result.trace_path))]
    rest = sorted(cpu[1:])[len(cpu[1:]) // 2]
    print(f"{result.name}: first step {cpu[0]:.0f} us, median of the rest {rest:.0f} us, "
          f"ratio {cpu[0] / rest:.1f}")  # fmt: skip


if tracereader:
    first_against_rest(cold20)

# %%
# Twenty steps after a warm-up
# ----------------------------
#
# If the slow first step were the cold start, five warm-up calls before the
# profiler starts would remove it. They do not: on both GPUs the warm first
# step still took more than twice the median of the rest, though less than in
# the cold process (:doc:`/chapters/part1` gives both ratios; the warm run also
# came after other profiled runs in its process, so the two setups differ in
# more than the warm-up). The schedule's skipped and discarded steps already
# absorb the true first call: no allocation, :term:`occupancy query` or module
# loading appears in the kept steps at all. Nor does one event hold the extra
# time: in the timeline below every part of the first kept step is wider than in
# the step after it, the gap before ``matmul_add`` (the
# :term:`record_function range` around each call), the :term:`aten` operator
# ``aten::mm``, the :term:`launch call` and ``aten::add`` alike. The trace
# cannot say what slowed them; the profiler starts recording the CPU's ops just
# before that step (story ``01c``).

warm20 = run("64_bf16_20steps")
# sphinx_gallery_start_ignore
warm20
# sphinx_gallery_end_ignore

# %%
# The timeline of the warm run's first few steps shows the difference at a
# glance: the first kept step is wider than the four after it.

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    first_against_rest(warm20)
    warm_trace = tracereader.load(warm20.trace_path)
    window = (warm_trace.steps[0].start_ns, warm_trace.steps[4].end_ns)
    tracereader.timeline(warm_trace, window=window, width_in=12, fig=plt.figure())

# %%
# Three cold steps, at two sizes
# ------------------------------
#
# These are the runs the :term:`Hugging Face post <Hugging Face series>`
# "Profiling in PyTorch (Part 1)" made: no warm-up, three active steps. Its A100
# showed a long wait between entering ``matmul_add`` and reaching
# ``aten::matmul`` in the first step, and a gap before the GPU lane started. On
# the H200 that wait was longest in the first step too, and the late GPU lane
# was CPU work before the first launch, not a late GPU: the first kernel started
# soon after its launch call (both times, beside the post's:
# :doc:`lab notes of Part 1 </chapters/part1-notes>`).

cold64 = run("64_bf16_cold")
# sphinx_gallery_start_ignore
cold64
# sphinx_gallery_end_ignore

# %%
# The table sums the three steps and keeps its top 15 rows. The ``matmul_add``
# row with no CPU time is the label's :term:`GPU-side span <gpu_user_annotation>`:
# from the first kernel the label launched to the last, idle time included, so
# its :term:`Self CUDA % <self time>` can pass 100 % (story ``01a`` reads the
# table row by row).

print(cold64.table)

# %%
# At 4096x4096, the closing ``cudaDeviceSynchronize``
# (:term:`the profiler's own <cudaDeviceSynchronize at window end>`, when the
# window of kept steps closes) waits for any GEMMs still queued on the GPU:
# with work queued, it ends only after that work (:doc:`/chapters/part1` measures it).

cold4k = run("4096_bf16_cold")
# sphinx_gallery_start_ignore
cold4k
# sphinx_gallery_end_ignore

# %%

print(cold4k.table)

# %%
# First, the wait between entering ``matmul_add`` and reaching ``aten::matmul``,
# step by step (``where`` finds each in the step's span). Then, to check a late
# kernel yourself, ``tracereader.launches`` lists every GPU op (each kernel,
# memcpy or :term:`memset`) with its launch call and
# :term:`the latency <launch-to-start latency>` between them, measured from the
# start of the call (so a slow call adds its own length). A latency of about the
# call's length means the kernel started as soon as it was launched: if it
# started late, the CPU launched it late. A latency far longer than the call
# means the GPU was busy with earlier work. (On the CPU there are no GPU ops
# to list.)

if tracereader:
    cold_trace = tracereader.load(cold64.trace_path)
    for s in cold_trace.steps:
        span = (s.start_ns, s.end_ns)
        label = cold_trace.where(
            name="matmul_add", kind=tracereader.Kind.USER_ANNOTATION, within=span
        )
        matmul = cold_trace.where(name="aten::matmul", within=span)
        wait_us = (cold_trace.ts_ns[matmul[0]] - cold_trace.ts_ns[label[0]]) / 1e3
        print(f"{s.name}: {wait_us:.1f} us from matmul_add to aten::matmul")
    for row in tracereader.launches(cold_trace).to_records()[:4]:
        print(f"{row['op']} -> {row['api']} -> {row['name'][:40]}: "
              f"started {row['launch_to_start_us']} us after its launch call began, "
              f"which took {row['call_us']} us")  # fmt: skip

# %%
# What the chapter concluded
# --------------------------
#
# Never read the first active step as typical. Warm up before profiling, keep
# a ``warmup`` step in the schedule, record several active steps, and quote the
# median of the steps after the first. Before blaming the GPU for a late
# kernel, compare its start with its launch call.
