"""
Comparing CPU time fairly: interleaved calls
============================================

Does ``torch.compile`` or ``torch.addmm`` save CPU time on
``torch.add(torch.matmul(x, w), b)``? Two separate profiling runs cannot say:
at 64x64 the CPU time per step moves from one profiling run to the next,
even within one process, by more than some of the differences we are after. This
experiment builds four versions of the call in one process (eager,
``torch.addmm``, compiled, and compiled with ``mode="reduce-overhead"``) and
runs them in turn, timed without the profiler and then under it. The section
"What does ``torch.compile`` change, and what does it not?" of
:doc:`/chapters/part1` and its lab notes discuss this run.

Run it yourself::

    python 01g_cpu_time.py                   # the whole page
    python 01g_cpu_time.py interleaved_64    # the same run, its table printed

This file needs only torch (and, for ``torch.compile`` on the CPU, a C++
compiler), with ``_01_common.py`` beside it for the workload and plumbing this
set's pages share (the site's download has it pasted in). On the CPU it times
the same code there, and the trace has no :term:`GPU lane`; ``reduce-overhead`` then
has no :term:`CUDA graph` to replay (CUDA graphs are a GPU feature), so the ratios a
CPU prints do not show what this page reads on the GPU. The run writes its trace to
``traces/01_matmul_add/interleaved_64.json`` and the unprofiled timings beside
it, in ``interleaved_64.timings.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import json
import statistics
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# From the code the stories of this set share (``_01_common.py``, beside this file;
# story 01a shows it): ``fn``, ``fn_addmm`` and ``DTYPES``, and the plumbing of every
# story (``story_run``, ``optional_tracereader``).
from _01_common import DTYPES, fn, fn_addmm, optional_tracereader, story_run

# %%
# The four versions
# -----------------
#
# All four compute the same ``x @ w + b`` and, on the GPU, run the same kind of
# :term:`GEMM` (matrix multiply): what differs is the CPU work around it. Eager runs
# two :term:`aten` ops (PyTorch's operators), ``aten::matmul`` (which calls
# ``aten::mm``) and ``aten::add``, and two :term:`launch calls <launch call>`, each
# queuing one kernel on the GPU.
# ``torch.addmm`` is one op, ``aten::addmm``, with two GPU operations: a copy of ``b``
# into the output (``Memcpy DtoD``, :term:`Memcpy DtoD`) and a GEMM that adds its
# product onto it (``badd`` in its :term:`nvjet` name). The compiled versions wrap
# that same ``addmm`` in ``torch.compile``'s own work on every call: checking
# :term:`guards` (the conditions under which the compiled code is valid) and calling
# the code :term:`TorchInductor` generated. ``reduce-overhead`` also records the copy
# and the GEMM once as a CUDA graph; each call then copies its inputs into the
# memory the graph was recorded with (one small kernel) and replays the graph with one
# launch call, :term:`cudaGraphLaunch`.
#
# ``fn`` is the code under study and ``fn_addmm`` the same computation as one
# ``torch.addmm`` call. ``fn_compiled`` and ``fn_reduce_overhead`` repeat ``fn``'s
# body as functions of their own: Dynamo (:term:`TorchDynamo`, the part of
# ``torch.compile`` that captures the function) keeps its compiled code per function
# body (per *code object*), so each compiled version gets its own, and neither is
# compiled again (recompiled) because of the other.


def fn_compiled(x, w, b):  # the same body as fn, with its own code object:
    return torch.add(torch.matmul(x, w), b)


def fn_reduce_overhead(x, w, b):  # each compiled version gets its own Dynamo cache
    return torch.add(torch.matmul(x, w), b)


# %%
# The order of the calls
# ----------------------
#
# A call can slow the one after it (through the CPU's caches, PyTorch's GPU memory
# allocator, or work still queued on the GPU), so no version may always follow the
# same neighbour. ``CYCLE`` is a balanced order: in each cycle of its 12 calls, every
# version runs right after every other version exactly once.

VERSIONS = ("eager", "addmm", "compiled", "reduce-overhead")


#: Indexes into VERSIONS. Read as a loop (the last call is followed by the first),
#: the 12 neighbour pairs are all 12 ordered pairs of two different versions.
CYCLE = (0, 1, 0, 2, 0, 3, 1, 2, 1, 3, 2, 3)


# %%
# The harness
# -----------
#
# ``profile_interleaved`` builds the inputs and the four versions, and calls each
# five times so that compiling and CUDA graph recording are done before any timing.
# Then it times every version twice over: first ``unprofiled_cycles`` cycles with a
# plain ``time.perf_counter_ns`` and no profiler (the elapsed time from the call to
# its return, on the calling thread: what this page calls a call's CPU time; written
# to ``timings.json``, one entry per call, in run order), then ``cycles`` cycles
# under the profiler, each call labelled with its version by
# ``record_function``. It writes ``trace.json`` and returns the profiler's table.
# Every call in the profiled part is one profiler step, so the schedule's
# ``wait=1, warmup=4`` skips and discards the first five calls, and the active
# window holds ``cycles`` whole cycles.


def profile_interleaved(
    out_dir, *, size=64, dtype="bfloat16", cycles=8, unprofiled_cycles=64, device=None
):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    dt = DTYPES[dtype]
    x = torch.randn(size, size, device=device, dtype=dt)
    w = torch.randn(size, size, device=device, dtype=dt)
    b = torch.randn(size, size, device=device, dtype=dt)
    torch._dynamo.reset()
    # The four versions, built once; each compiled one has its own code object.
    funcs = {
        "eager": fn,
        "addmm": fn_addmm,
        "compiled": torch.compile(fn_compiled),
        "reduce-overhead": torch.compile(fn_reduce_overhead, mode="reduce-overhead"),
    }
    for f in funcs.values():  # compile, and let CUDA graphs record, before any timing
        for _ in range(5):
            f(x, w, b)
    if device == "cuda":
        torch.cuda.synchronize()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Unprofiled: time each call alone, from its start to its return.
    calls = []
    for name in [VERSIONS[i] for _ in range(unprofiled_cycles) for i in CYCLE]:
        t0 = time.perf_counter_ns()
        funcs[name](x, w, b)
        calls.append((name, (time.perf_counter_ns() - t0) / 1e3))
    if device == "cuda":
        torch.cuda.synchronize()
    # One [version, microseconds] pair per call, in run order, for the page to read.
    timings = {
        "what": "CPU time per call without the profiler, in run order",
        "unit": "us",
        "calls": [[name, round(us, 1)] for name, us in calls],
    }
    (out_dir / "timings.json").write_text(json.dumps(timings))

    # The five calls before the active window end the cycle, so the first profiled
    # call ("eager") follows "reduce-overhead", as it does inside the loop.
    order = [VERSIONS[i] for i in CYCLE[-5:] + CYCLE * cycles]
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities,
        schedule=schedule(wait=1, warmup=4, active=len(order) - 5, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(out_dir / "trace.json")),
    ) as prof:
        for name in order:  # one call per profiler step, labelled with its version
            with record_function(name):
                funcs[name](x, w, b)
            prof.step()
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# The variant
# -----------
#
# One variant, recorded three times on an NVIDIA H200 and three times on an NVIDIA
# H100, each repeat in a fresh process that it shared with the set's other variants,
# near the end of it. This page prints the H200's first repeat (``r0`` in the
# recordings' file names).
#
# ==================  ============================================================
# variant             what it runs
# ==================  ============================================================
# ``interleaved_64``  64x64 bf16; 64 cycles unprofiled, then 8 cycles profiled
# ==================  ============================================================

VARIANTS = {
    "interleaved_64": (profile_interleaved, {"size": 64, "dtype": "bfloat16", "cycles": 8}),
}


# ``run(name)`` profiles one variant of ``VARIANTS``, moves its files to
# ``traces/01_matmul_add/NAME.json`` and ``NAME.timings.json``, prints one line
# saying where it ran, and returns the run's name, table and trace path.
# ``python 01g_cpu_time.py VARIANT`` profiles one variant and prints its table. On this
# website ``run`` does not profile: it replays the H200's recording ``r0`` instead.
run = story_run(VARIANTS, __name__)

# %%
# Under the profiler
# ------------------
#
# The profiler's table has two rows per version label. One is the label's CPU span
# (``Self CPU`` and ``CPU total``): its ``CPU total`` is the CPU time of that
# version's calls, summed over the profiled cycles, and every version ran the same
# number of times (``# of Calls``). The other, at the top, is the label's GPU-side
# span (:term:`gpu_user_annotation`), from the start of the first GPU operation the
# label launched to the end of the last, idle time between them included: a label,
# not GPU work, so ``Self CUDA time total`` leaves it out and its ``Self CUDA %`` can
# pass 100 %. Below them, the compiled versions' ``Torch-Compiled Region`` and
# ``## Call CompiledFxGraph <hash> ##`` rows are the frames ``torch.compile`` adds
# around the same ``aten::addmm`` (for ``reduce-overhead``, around the replay of the
# CUDA graph that holds its copy and GEMM; :term:`torch.compile runtime frames`: the
# numbers ``0/0`` and ``1/0`` tell the two compiled functions apart, the hash names
# Inductor's generated code). In this table the ``reduce-overhead`` version's
# ``CompiledFxGraph`` row has ``Self CUDA`` time: it launched the CUDA graph itself,
# so the graph's copy and GEMM count as its own GPU time.
#
# This table stops at 15 rows (``row_limit=15`` in the harness), so it leaves out,
# among others, eager's own ``aten::mm`` and ``aten::add`` and their kernels, the
# copies, and the ``TorchDynamo Cache Lookup`` rows (where the guards are checked);
# the trace holds them all.

interleaved = run("interleaved_64")
# sphinx_gallery_start_ignore
interleaved  # on the site: when and where it was recorded, and a link to every repeat
# sphinx_gallery_end_ignore

# %%

print(interleaved.table)

# %%
# Without the profiler
# --------------------
#
# The profiler is not free: the same eager call takes longer under it, because it
# records every op and launch call as they happen. The unprofiled timings are the
# fairer measure. Each is the wall-clock time of one call on the calling thread, from
# the call to its return (what this page calls a call's CPU time): the call returns
# once its work is queued on the GPU, and the harness does not synchronize between
# calls, so the GPU's own time is not in these numbers. Medians, not means: a
# call interrupted by the operating system or by Python's garbage collector is rare
# and long, and a median ignores it. The lines below are this recording's (the H200's
# first repeat); the :doc:`lab notes of Part 1 </chapters/part1-notes>` give the
# medians over all of them.

# Locally the timings lie beside the trace, as ``interleaved_64.timings.json``; in
# the site's recordings, as ``timings.json`` in the trace's folder.
traced_at = Path(interleaved.trace_path)
for timings_path in (traced_at.with_suffix(".timings.json"), traced_at.parent / "timings.json"):
    if timings_path.exists():
        bare = json.loads(timings_path.read_text())["calls"]
        break
else:
    bare = []
if bare:
    print("without the profiler (timings.json):")
    eager_us = statistics.median(us for v, us in bare if v == "eager")
    for version in VERSIONS:
        med = statistics.median(us for v, us in bare if v == version)
        print(f"{version:>16}: median {med:6.1f} us per call, {med / eager_us:.2f} x eager")

# %%
# With :mod:`tracereader` installed, the same medians under the profiler come
# from the trace: each call is a ``record_function`` region named after its
# version.

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    traced = tracereader.load(interleaved.trace_path)
    print("under the profiler (the trace's record_function regions):")
    eager_us = statistics.median(r.dur_us for r in traced.regions("eager"))
    for version in VERSIONS:
        med = statistics.median(r.dur_us for r in traced.regions(version))
        print(f"{version:>16}: median {med:6.1f} us per call, {med / eager_us:.2f} x eager")

# %%
# What the chapter concluded
# --------------------------
#
# A difference was claimed only when every recorded process, on both GPUs, put the
# ratio to eager more than 5 % from 1 on the same side, timed without the profiler;
# the lab notes give every ratio.
#
# ``torch.compile`` did not save CPU time here: without the profiler, a compiled call
# took at least twice the CPU time of an eager one, in every repeat on both the H200
# and the H100, and ``reduce-overhead`` took more than plain ``compile`` in every
# repeat on both GPUs. A CUDA graph saves launch calls when it holds many GPU
# operations; here it holds two (the copy of ``b`` and the GEMM), so it turns two
# launch calls into one ``cudaGraphLaunch``, and the input copy before it adds one
# back: the launch calls break even. What reduce-overhead adds on the CPU shows in the
# table above: its ``## Call CompiledFxGraph`` row (the one with ``Self CUDA`` time)
# has more than twice the ``Self CPU`` of plain compile's, over the same number of
# calls, in every repeat on both GPUs. A row's :term:`self time` is its time outside
# every op and call the profiler recorded inside it: work the trace does not break
# down. By PyTorch's source, reduce-overhead does its CUDA graph's
# bookkeeping there, in Python, on every replay (checking that the recorded graph
# still fits the inputs, rebuilding its outputs).
#
# ``torch.addmm`` is no claimed saving either. Its line above (this recording's)
# reads below 1, but most other recorded processes put the ratio within 5 % of 1, and
# one of them, on the H100, above 1; under the profiler it was above 1 here. Compare
# CPU time only between versions interleaved in one process, and only trust a
# difference that every repeat shows.
