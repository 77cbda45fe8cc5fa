"""
Comparing CPU time fairly: interleaved calls
============================================

Does ``torch.compile`` or ``torch.addmm`` save CPU time on
``torch.add(torch.matmul(x, w), b)``? Two separate profiling runs cannot say:
at 64x64 the CPU time per step moves from one profiling run to the next,
even within one process, by more than the differences we are after. This
experiment builds four versions of the call in one process (eager,
``torch.addmm``, compiled, and compiled with ``mode="reduce-overhead"``) and
runs them in turn, timed without the profiler and then under it. The section
"What does ``torch.compile`` change, and what does it not?" of
:doc:`/chapters/part1` and its lab notes read this run.

Run it yourself::

    python 01g_cpu_time.py                   # the whole page
    python 01g_cpu_time.py interleaved_64    # the same run, its table printed

This file needs only torch (and, for ``torch.compile`` on the CPU, a C++
compiler), with ``_01_common.py`` beside it for the workload and plumbing this
set's stories share (the site's download has it pasted in). On the CPU it times
the same code there, and the trace has no GPU lane. The run writes its trace to
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
# All four compute the same ``x @ w + b`` and, on the GPU, run the same kind
# of GEMM: what differs is the CPU work around it. Eager runs two ops and two
# launches; ``torch.addmm`` one op, in which ATen copies ``b`` into the output and
# cuBLAS runs a GEMM that adds onto it; the
# compiled versions add Dynamo's guards and Inductor's generated code around
# that same ``addmm``, and ``reduce-overhead`` replays it as a CUDA graph.
#
# ``fn`` is the code under study and ``fn_addmm`` the same computation as one
# ``torch.addmm`` call. ``fn_compiled`` and ``fn_reduce_overhead`` repeat
# ``fn``'s body with code objects of their own, so that each compiled version
# gets its own Dynamo cache and neither is a recompile of the other.


def fn_compiled(x, w, b):  # the same body as fn, with its own code object:
    return torch.add(torch.matmul(x, w), b)


def fn_reduce_overhead(x, w, b):  # each compiled version gets its own Dynamo cache
    return torch.add(torch.matmul(x, w), b)


# %%
# The order of the calls
# ----------------------
#
# A call can slow the one after it (caches, the allocator, the GPU's queue), so
# no version may always follow the same neighbour. ``CYCLE`` is a balanced
# order: in each cycle of its 12 calls, every version runs right after every
# other version exactly once.

VERSIONS = ("eager", "addmm", "compiled", "reduce-overhead")


#: Indexes into VERSIONS. Read as a loop (the last call is followed by the first),
#: the 12 neighbour pairs are all 12 ordered pairs of two different versions.
CYCLE = (0, 1, 0, 2, 0, 3, 1, 2, 1, 3, 2, 3)


# %%
# The harness
# -----------
#
# ``profile_interleaved`` builds the inputs and the four versions, and calls
# each five times so that compiling and CUDA graph recording are done before any
# timing. Then it times every version twice over: first ``unprofiled_cycles``
# cycles with a plain ``time.perf_counter_ns`` and no profiler (written to
# ``timings.json``, one entry per call, in run order), then ``cycles`` cycles
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
# One variant, recorded on an NVIDIA H200 several times, each repeat in a fresh
# process that it shared with the set's other variants, near the end of it.
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
# ``python 01g_cpu_time.py VARIANT`` profiles one variant and prints its table; while
# the site builds, ``run`` replays the H200's recordings instead.
run = story_run(VARIANTS, __name__)

# %%
# Under the profiler
# ------------------
#
# The profiler's table has one row per version label: its ``CPU total`` is the
# CPU time of that version's calls, summed over the profiled cycles, and every
# version ran the same number of times. Each label appears twice: once as a
# CPU span (``Self CPU`` and ``CPU total``) and once as its GPU-side span
# (``Self CUDA``), from the first kernel the label launched to the last. Below
# them, the compiled versions' ``Torch-Compiled Region`` and ``CompiledFxGraph``
# rows are the frames ``torch.compile`` adds around the same ``aten::addmm``.

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
# The profiler is not free: the same eager call takes longer under it, because
# it records every op and launch call as they happen. The unprofiled timings
# are the fairer measure. Each is the CPU time of one call, from Python's side:
# the call returns once its work is queued on the GPU, and the harness does not
# synchronize between calls, so the GPU's own time is not in these numbers.
# Medians, not means: a call interrupted by the operating system or by Python's
# garbage collector is rare and long, and a median ignores it.

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
    eager_us = statistics.median(r.dur_us for r in traced.regions("eager"))
    for version in VERSIONS:
        med = statistics.median(r.dur_us for r in traced.regions(version))
        print(f"{version:>16}: median {med:6.1f} us per call, {med / eager_us:.2f} x eager")

# %%
# What the chapter concluded
# --------------------------
#
# On the H200, without the profiler, a compiled call took clearly more CPU time
# than an eager one, and ``reduce-overhead`` was slower still, above plain
# ``compile`` in every repeat, on both GPUs: a CUDA graph
# saves the launches of many kernels, and here there are only two, plus an
# input copy. A difference was claimed only when every recorded process put the
# ratio more than 5 % from 1 on the same side; the :doc:`lab notes of Part 1
# </chapters/part1-notes>` give every ratio. Compare CPU time only between
# versions interleaved in one process.
