"""
The MLP's first forward in a fresh process
==========================================

Profilers are usually told to skip the first steps, and this page shows what
they skip. It profiles the eager, that is uncompiled, GeGLU MLP (three Linears
without bias and a gelu-times-multiply, bf16) with no :term:`warm-up` at all, so
that the process's very first forward is the first step of the trace:

===============  ==============================  ======================================
variant          batch x seq, dim -> hidden      what it shows
===============  ==============================  ======================================
``eager_cold``   64 x 128 tokens, 768 -> 3072    the first forward, then two warm ones
===============  ==============================  ======================================

The question it answers comes from the :term:`Hugging Face series`, which saw a
``cudaOccupancy...`` :term:`query <occupancy query>` (the
:term:`CUDA runtime <runtime API, driver API>`'s "how many blocks of this
:term:`kernel` fit on an :term:`SM <streaming multiprocessor>`?") before every
:term:`GEMM` :term:`launch <launch call>` on its A100 and read it as the mark,
and a cost, of every GEMM. The warm forwards of this set's other stories make
none. Who asks, and when? These recordings answer it for two Hopper GPUs (an
H200 and an H100) with the :term:`cuBLAS` of CUDA 13; an A100's may differ.
:doc:`Part 2 </chapters/part2>` reads these recordings. The recorder ran each repeat of this variant in a process of its
own, so that its first forward really was the process's first.

This file needs only torch, and ``_03_common.py`` beside it (the MLP and harness
this set's stories share; the site's download has it pasted in). On a machine
with a CUDA GPU it profiles live; on the CPU it profiles a shrunken MLP there,
without a :term:`GPU lane` (and without any CUDA runtime calls to find). Run it
in a fresh process::

    python 03b_cold_first_forward.py

It writes its trace to ``traces/03_mlp/eager_cold/trace.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore

# From the code the stories of this set share (``_03_common.py``, beside this file;
# story 03a shows it): the MLP, its harness ``profile_mlp``, the shapes, and the
# plumbing of every story (``story_run``, ``optional_tracereader``).
from _03_common import SMALL, optional_tracereader, profile_mlp, story_run

# %%
# The MLP and its harness
# -----------------------
#
# ``GeGLUMLP`` is the MLP of this set: ``gate_proj`` and ``up_proj`` widen each
# token from ``dim`` to ``hidden`` features, ``gelu(gate, approximate="tanh") *
# up`` gates one with the other, and ``down_proj`` maps back to ``dim``. A
# forward is three GEMMs (matrix multiplications), a gelu and a multiply. ``profile_mlp`` builds it in
# bf16 with a seeded input, runs five warm-up forwards, and profiles one
# forward per step; its helper ``_profile_steps`` first runs ``skip`` steps
# that the profiler's schedule throws away, then the ``active`` steps it
# records. Story ``03a`` shows the code and every switch; this page uses one,
# ``cold=True``.

# %%
# The variant
# -----------
#
# One variant: the small shape, ``cold=True``. ``profile_mlp`` then skips its
# five warm-up forwards, and ``_profile_steps`` gets ``skip=0``, so the
# schedule records from the very first step.

VARIANTS = {
    "eager_cold": (profile_mlp, {**SMALL, "cold": True}),
}

# %%
# ``run(name)`` profiles one variant into ``traces/03_mlp/<name>/`` and says
# where it ran (story ``03a`` has the details).

run = story_run(VARIANTS, __name__)

# %%
# The table
# ---------
#
# Three forwards, the first of them cold. Read the ``aten::mm`` row (an
# :term:`aten` operator), the GEMMs:
# nine calls, three a forward, and a CPU time average of milliseconds, where a
# warm call takes well under a millisecond (story ``03a``'s table). One call,
# the first, pulls the average up; the timeline below shows it. (torch
# warns that the profiler "won't be using warmup" and that this can skew the
# results: here, skewing them is the point.)
#
# The ``mlp_fwd`` row with no CPU time is the label's
# :term:`GPU-side span <gpu_user_annotation>`: it runs from the first kernel the
# label launched to the last, idle time included, so its
# :term:`Self CUDA % <self time>` can pass 100 %. The other ``mlp_fwd`` row is
# :term:`the label on the CPU <record_function range>`.

first = run("eager_cold")
print(first.table)

# %%
# Who asked for occupancy?
# ------------------------
#
# With ``tracereader`` (this site's library for reading traces; :doc:`the quick
# start </quickstart>` installs it): ``link`` connects each runtime call to the
# op it ran under, its ``issuer`` (see :term:`External id`);
# ``where(contains=...)`` finds the events whose name contains a string;
# ``Counter`` counts the pairs. Then each ``aten::mm`` call in turn, with the
# queries inside it, and what the first ``aten::gelu`` and ``aten::mul`` calls
# hold. Last, the first step on the timeline, and the second below it (otherwise
# open the trace at https://ui.perfetto.dev).

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    from collections import Counter

    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    tr = tracereader.load(first.trace_path)
    links = tracereader.link(tr)
    queries = tr.where(contains="Occupancy")
    print(Counter(f"{tr.name(i)} under {tr.name(links.issuer[i])}" for i in queries))
    K = tracereader.Kind
    start = tr.steps[0].start_ns
    for mm in tr.where(name="aten::mm", kind=K.CPU_OP):
        inside = (tr.ts_ns[mm], tr.ts_ns[mm] + tr.dur_ns[mm])
        n = len(tr.where(contains="Occupancy", within=inside))
        print(f"aten::mm at {(tr.ts_ns[mm] - start) / 1e6:6.2f} ms: {n} occupancy queries")
    cpu_side = (K.CPU_OP, K.RUNTIME, K.DRIVER, K.OVERHEAD)  # the calls on the CPU's lane
    for op in ("aten::gelu", "aten::mul"):
        call = tr.where(name=op, kind=K.CPU_OP)[0]
        span = (tr.ts_ns[call], tr.ts_ns[call] + tr.dur_ns[call])
        inside = tr.where(kind=cpu_side, within=span)
        print(f"first {op} holds:", sorted({tr.name(i) for i in inside} - {op}))
    tracereader.timeline(tr, step=tr.steps[0].name, width_in=9, fig=plt.figure())
    tracereader.timeline(tr, step=tr.steps[1].name, width_in=9, fig=plt.figure())

# %%
# What the H200 showed
# --------------------
#
# Every occupancy query came from the process's first GEMM, the gate
# projection's ``aten::mm``. The later GEMMs, the gelu and the multiply asked
# nothing, and no later forward asked again. Together the queries took a
# sliver of that first call's time (:doc:`/chapters/part2` gives both).
#
# The first forward as a whole was slow, and the trace mostly does not say
# why. The gelu's and the multiply's first calls each hold a ``cudaMalloc`` (a
# GPU memory allocation) and a ``Lazy Function Loading`` record (the CUDA
# driver loading the kernel's code on first use), but most of their time, like
# most of the first GEMM's, has no recorded event under it. That is start-up
# work the profiler does not see. The :doc:`lab notes of Part 2
# </chapters/part2-notes>` set the first forward's time beside a later one's.
#
# To see that yourself in the timeline above, look under each op of the first
# step for time that no child event covers: a wide ``aten::mm`` bar over thin
# runtime calls is a call that spent most of its time on work the profiler
# does not record (start-up work of the libraries below it). In the second
# step, drawn below the first, the whole forward takes a small fraction of
# that time (note the time axis).
#
# So: the cost of a first call is not the occupancy queries. Skip the first
# steps when you profile the steady state (``schedule(wait=1, warmup=1, ...)``,
# as the other stories of this set do), and profile a :term:`cold start` on
# purpose, in a fresh process, when start-up is what you care about. Other
# operators can ask for occupancy too: in Part 4's decoding trace (a language
# model generating text one token at a time) the query comes from
# ``aten::cumsum``.
#
# Every variant
# -------------

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
