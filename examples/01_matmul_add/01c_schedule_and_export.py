"""
The schedule and the export
===========================

A profile of ``torch.add(torch.matmul(x, w), b)`` usually runs under a
``schedule(wait=1, warmup=1, active=3)`` and writes its trace from
``on_trace_ready``. This experiment changes one of those choices at a time: a
schedule that skips and discards nothing, so the profiler records the process's
very first call; and a trace exported after the ``with`` block instead of from
``on_trace_ready``. The section "How do you profile one line of code?" of
:doc:`/chapters/part1` and its lab notes read these runs.

``64_bf16_nowait`` is about the first call of a process, so run it alone::

    python 01c_schedule_and_export.py                    # the whole page
    python 01c_schedule_and_export.py 64_bf16_nowait     # one variant in a fresh process

This file needs only torch, and ``_01_common.py`` beside it, the harness and
plumbing the stories of this set share (pasted into the site's download). On the
CPU it profiles the same code there, and the trace has no :term:`GPU lane`. Each run
writes its trace to ``traces/01_matmul_add/<variant>.json``; with
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
# ``profile_matmul_add`` runs ``wait + warmup_steps + active`` steps under the
# profiler. The schedule skips the first ``wait`` steps, records and throws
# away the next ``warmup_steps`` (the profiler :term:`warms up <warm-up>` on
# them), and keeps the last ``active`` ones. Its ``export`` setting picks when
# the trace is written: ``"on_trace_ready"`` from the callback the profiler
# calls when the active window closes, ``"after"`` from
# ``prof.export_chrome_trace`` once the ``with`` block has ended.
# (``warmup=True``, a different thing, runs five untimed calls before the
# profiler starts; ``batch``, ``op``, ``compile`` and ``tf32`` serve the other
# experiments of this set.)


# %%
# The variants
# ------------
#
# The recordings this page shows were made on an NVIDIA H200, each variant
# several times; ``64_bf16_nowait`` each time alone in a fresh process.
#
# ========================  =====================================================
# variant                   what it runs
# ========================  =====================================================
# ``64_bf16_nowait``        64x64 bf16, no warm-up, ``wait=0, warmup=0, active=3``
# ``64_bf16_export_after``  64x64 bf16, warm, the trace exported after ``with``
# ========================  =====================================================

VARIANTS = {
    "64_bf16_nowait": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "wait": 0, "warmup_steps": 0},
    ),
    "64_bf16_export_after": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "warmup": True, "export": "after"},
    ),
}


# ``run(name)`` profiles one variant and returns its name, the profiler's table
# and the trace's path (story 01a has the details).
run = story_run(VARIANTS, __name__)

# %%
# What the schedule hides
# -----------------------
#
# With ``wait=0, warmup=0`` the first profiled step is the process's first call
# of the workload. (torch warns that the profiler "won't be using warmup", and
# it is right to: its own start-up lands in the first step too.) A schedule's
# ``wait`` steps run with the profiler off. Its ``warmup`` steps run with the
# profiler prepared (its buffers allocated, :term:`CUPTI` enabled) but keeping
# nothing, so those start-up costs fall on steps it then throws away; recording
# the CPU's ops starts only with the first kept step, and that start-up stays in
# it. Skipping both puts all of the start-up, and the process's first
# :term:`GEMM`, into the first kept step.

nowait = run("64_bf16_nowait")
# sphinx_gallery_start_ignore
nowait  # on the site: when and where it was recorded, and a link to every repeat
# sphinx_gallery_end_ignore

# %%
# On the H200 that first step took far longer than the third, and most of it
# was the first ``aten::mm``, the :term:`aten` matrix multiply (times:
# :doc:`lab notes of Part 1 </chapters/part1-notes>`): :term:`cuBLAS` gets
# ready for its first GEMM there. Inside it the trace shows attribute calls
# (queries of the GPU's properties), :term:`occupancy queries <occupancy query>`,
# ``cudaMalloc`` calls and module loading (GPU code being loaded), and a long
# stretch with no recorded call at all.
# The first ``aten::add`` pays its own loading cost. The table sums the three
# steps, so the first dominates it. (The ``matmul_add`` row with no CPU time is
# the label's :term:`GPU-side span <gpu_user_annotation>`, from its first
# :term:`kernel` to its last, idle time included: its
# :term:`Self CUDA % <self time>` can pass 100 %.)

print(nowait.table)

# %%
# With :mod:`tracereader` installed, ``step_times`` gives each step's CPU time, a
# count lists the calls recorded inside the first ``aten::mm`` (the few
# ``INVALID`` are calls the profiler recorded without a name), and the timeline
# of the first step shows where the time went. Expect the first
# step to dwarf the third on a GPU; on the CPU the gap is smaller, since there
# is no CUDA context (the state a process sets up on its first use of the GPU),
# no cuBLAS and no GPU code to load, but the first call
# still pays for the CPU's own one-time setup.

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    from collections import Counter

    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    nowait_trace = tracereader.load(nowait.trace_path)
    for st in tracereader.step_times(nowait_trace):
        print(f"{st.name}: CPU {st.cpu_us:,.0f} us")
    K = tracereader.Kind
    mm = nowait_trace.where(name="aten::mm", kind=K.CPU_OP)[0]
    span = (nowait_trace.ts_ns[mm], nowait_trace.ts_ns[mm] + nowait_trace.dur_ns[mm])
    calls = nowait_trace.where(kind=(K.RUNTIME, K.DRIVER, K.OVERHEAD), within=span)
    print("inside the first aten::mm:", Counter(nowait_trace.name(i) for i in calls).most_common())
    tracereader.timeline(nowait_trace, step=nowait_trace.steps[0].name, fig=plt.figure())

# %%
# A recording profiled from its first step holds the profiler's
# :term:`Activity Buffer Request`: this one, or story ``01d``'s ``peaks``,
# profiled without a schedule in a warm process. The
# :term:`Hugging Face post <Hugging Face series>` blamed that request for a
# gap of milliseconds before the GPU lane starts. On the H200 it appeared once,
# inside the first ``aten::mm``, and ended before the first CUDA call; in every
# recording whose schedule skipped or discarded a step first it did not appear
# at all. Its presence follows the schedule, not a cold process.

if tracereader:
    abr = nowait_trace.where(name="Activity Buffer Request")
    print(f"Activity Buffer Request: {len(abr)} in this trace")

# %%
# When to export
# --------------
#
# A schedule's *cycle* is its ``wait``, ``warmup`` and ``active`` steps, once;
# ``repeat`` says how many cycles it runs. ``on_trace_ready`` is called once per
# cycle, with the profiler
# holding that cycle's events; ``prof.export_chrome_trace`` after the ``with``
# block exports whatever the profiler still holds when the block ends. With a
# schedule, the profiler clears its events at the end of each active cycle, so
# a trace exported after the ``with`` block keeps at most the last cycle. With
# one cycle (``repeat=1``, as here) that makes no difference: on the H200 the
# late export held as many events as the ``on_trace_ready`` one of the
# ``64_bf16`` run (in the table-and-timeline experiment of this set). The
# ``key_averages()`` table has the same limit: it sums the last cycle only.

after = run("64_bf16_export_after")
# sphinx_gallery_start_ignore
after
# sphinx_gallery_end_ignore

# %%

print(after.table)

# %%
# The trace holds the three active steps (their names below: the skipped and
# discarded steps, ``#0`` and ``#1``, are absent), exactly as an
# ``on_trace_ready`` export would; on the H200 it held as many events as story
# ``01a``'s ``64_bf16`` trace, which ``on_trace_ready`` exported:

if tracereader:
    after_trace = tracereader.load(after.trace_path)
    print([st.name for st in after_trace.steps], f"{len(after_trace)} events")

# %%
# What the chapter concluded
# --------------------------
#
# Profile with a schedule that has at least one ``warmup`` step, so that the
# profiler's start-up and the process's first call stay out of the kept steps,
# and export the trace from ``on_trace_ready``. With several cycles, export from
# ``on_trace_ready`` (one file per ``prof.step_num``), or pass
# ``acc_events=True`` to keep every cycle for ``key_averages()``.
