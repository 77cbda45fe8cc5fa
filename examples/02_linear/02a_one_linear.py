"""
One nn.Linear, eager and compiled
=================================

The next rung after Part 1's matmul + add: one ``nn.Linear(in_dim, out_dim,
bias=True)``, which computes ``x @ weight.T + bias``. Written out like that it
looks like three operations (a transpose, a matrix multiply, an add), so a fair
first guess is three GPU :term:`kernels <kernel>` per forward pass. This page
profiles the layer and shows that there is one :term:`GEMM` kernel (at the large
shape a tiny :term:`memset` runs before it).

It runs the layer at two shapes and two ways:

=================  ==========================  =========  ==================
variant            rows x in -> out            compiled   what it shows
=================  ==========================  =========  ==================
``small``          1024 x 32 -> 64             no         the ops and the one kernel
``big``            8192 x 4096 -> 4096         no         a GEMM that dominates
``small_compile``  1024 x 32 -> 64             yes        what compile changes
``big_compile``    8192 x 4096 -> 4096         yes        ... when the GEMM is big
=================  ==========================  =========  ==================

The small shape is :term:`the Hugging Face series' <Hugging Face series>` (a
batch of 1024 rows, 32 features in, 64 out); at the big one the GEMM's time is
no longer lost in :term:`launch <launch call>` costs.
Everything runs in bf16. :doc:`/chapters/part2` reads these recordings.

This file needs only torch. On a machine with a CUDA GPU it profiles live; on
the CPU it profiles the same code there (the trace then has no :term:`GPU lane`,
and the large shape shrinks so that it finishes quickly). Run it yourself::

    python 02a_one_linear.py                 # the whole page
    python 02a_one_linear.py small_compile   # one named variant, its table

Each run writes its trace to ``traces/02_linear/<variant>/trace.json``; open it
at https://ui.perfetto.dev or with ``tracereader``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import sys
import types
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# %%
# The workload and how it is profiled
# -----------------------------------
#
# ``profile_linear`` profiles ``nn.Linear(in_dim, out_dim)`` on a ``(batch,
# in_dim)`` input, writes ``trace.json`` into ``out_dir`` and returns the
# profiler's table. It builds the layer and its input (seeded, so every run sees
# the same numbers), warms up (and compiles, if asked), then profiles ``wait +
# warmup + active`` forward passes with a ``schedule``.
#
# Three choices matter when you read the result:
#
# * every forward runs inside ``record_function("linear_fwd")``, so each step
#   has a :term:`labelled range <record_function range>` on the
#   :term:`CPU lane`, and (:term:`mirrored by the profiler <gpu_user_annotation>`)
#   on the GPU lane around the kernels it launched;
# * ``record_shapes=True`` makes the trace carry each op's input shapes and
#   strides, which is how you tell a transposed weight from a copied one;
# * the five :term:`warm-up` calls happen before the profiler starts:
#   :term:`cuBLAS` picks its kernels and ``torch.compile`` compiles there, so the
#   profiled steps show the steady state, not the first call (Part 2 profiles a
#   first call on purpose, in the MLP's :term:`cold-start <cold start>` story).

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}


def profile_linear(
    out_dir,
    *,
    batch=1024,
    in_dim=32,
    out_dim=64,
    dtype="bfloat16",
    compile=None,
    active=3,
    device=None,
):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    dt = DTYPES[dtype]
    layer = nn.Linear(in_dim, out_dim, bias=True).to(device=device, dtype=dt)
    x = torch.randn(batch, in_dim, device=device, dtype=dt)
    f = layer
    if compile:
        # A fresh Dynamo state, so that this compile does not reuse another one's.
        torch._dynamo.reset()
        f = torch.compile(layer, mode=None if compile == "default" else compile)

    def step():
        with torch.no_grad(), record_function("linear_fwd"):
            return f(x)

    for _ in range(5):  # warm up: cuBLAS picks its kernels, compile compiles
        step()
    if device == "cuda":
        torch.cuda.synchronize()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    # One step skipped, one warm-up step (recorded, then dropped), ``active`` kept.
    with profile(
        activities=activities,
        schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(out_dir / "trace.json")),
        record_shapes=True,
    ) as prof:
        for _ in range(2 + active):
            step()
            prof.step()  # tells the schedule that one step has ended
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# The variants
# ------------
#
# Each entry names a harness and its settings (the table at the top of this
# page). The recorder ran every one of them on an H200, several times.

VARIANTS = {
    "small": (profile_linear, {"batch": 1024, "in_dim": 32, "out_dim": 64}),
    "big": (profile_linear, {"batch": 8192, "in_dim": 4096, "out_dim": 4096}),
    "small_compile": (
        profile_linear,
        {"batch": 1024, "in_dim": 32, "out_dim": 64, "compile": "default"},
    ),
    "big_compile": (
        profile_linear,
        {"batch": 8192, "in_dim": 4096, "out_dim": 4096, "compile": "default"},
    ),
}

# %%
# ``run(name)`` profiles one variant into ``traces/02_linear/<name>/`` and says
# where it ran. On the CPU, dimensions above ``CPU_MAX_DIM`` shrink to it.

CPU_MAX_DIM = 256
SIZES = ("batch", "in_dim", "out_dim")


def run(name):
    harness, params = VARIANTS[name]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        params = {k: min(v, CPU_MAX_DIM) if k in SIZES else v for k, v in params.items()}
        where = "on the CPU: no CUDA device, so the trace has no GPU lane"
    else:
        where = f"live on {torch.cuda.get_device_name(0)}"
    out_dir = Path("traces") / "02_linear" / name
    table = harness(out_dir, device=device, **params)
    print(f"{name}: profiled {where}; trace written to {out_dir / 'trace.json'}")
    return types.SimpleNamespace(name=name, table=table, trace_path=out_dir / "trace.json")


# sphinx_gallery_start_ignore
if "tracesite" in sys.modules:  # the site build replays the H200's recordings instead
    run = sys.modules["tracesite"].replayer(run)
# sphinx_gallery_end_ignore

# ``python 02a_one_linear.py VARIANT`` profiles that variant and stops (inside
# Jupyter, ``sys.argv`` holds the kernel's own flags, so a notebook runs the page).
if __name__ == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
    if sys.argv[1] not in VARIANTS:
        sys.exit(print("unknown variant; choose one of:", *VARIANTS, file=sys.stderr) or 2)
    sys.exit(print(run(sys.argv[1]).table))

# %%
# The small Linear: the table
# ---------------------------
#
# 1024 rows of 32 features into 64. Guess first: how many GPU kernels does one
# forward pass run? Then look for ``aten::linear`` (an :term:`aten` operator)
# and what it calls.

small = run("small")
print(small.table)

# %%
# On the H200, ``aten::linear`` calls two ops. ``aten::t`` (which calls
# ``aten::transpose``, which calls ``aten::as_strided``) has no CUDA time at
# all: it returns a :term:`view`, the same memory with swapped strides, and
# launches nothing. ``aten::addmm`` launches the one kernel of the step, an
# ``nvjet`` GEMM (see :term:`nvjet`) whose name ends in ``bias_TNT``. As Part 2
# reads cuBLAS's undocumented names, ``T`` says the weight is read transposed,
# as stored, and ``bias`` says the bias is added in the GEMM's :term:`epilogue`,
# the last step before each output :term:`tile` is written. So the transpose
# and the add cost no kernel: three operations on paper, one on the GPU.
#
# The same view, on any machine:

w = torch.empty(64, 32)  # the shape of nn.Linear(32, 64).weight
print(w.stride(), w.t().stride(), w.t().data_ptr() == w.data_ptr())

# %%
# The large Linear: the table
# ---------------------------
#
# 8192 rows of 4096 features into 4096: about 275 GFLOP (billion floating-point
# operations) per forward. The GEMM now dominates the GPU time, and the same
# ops call the same kinds of kernel, with one more GPU operation per step: a
# tiny ``Memset (Device)`` before the GEMM. The small GEMM above is too little
# work per :term:`block <launch configuration>` to keep the GPU busy for longer
# than a kernel takes to start and finish; this one ran at about four fifths
# of the H200's datasheet dense bf16 peak, 989 TFLOP/s (the
# :doc:`lab notes of Part 2 </chapters/part2-notes>` give its measured rate).

big = run("big")
print(big.table)

# %%
# One forward pass on the timeline
# --------------------------------
#
# The last profiled step of each, drawn by ``tracereader`` if it is installed;
# otherwise open the trace at https://ui.perfetto.dev. Follow the
# :term:`arrow <correlation id>` from ``aten::addmm`` on the CPU lane to its
# kernel on the GPU lane: ``aten::t`` has none.

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    for result in (small, big):
        tr = tracereader.load(result.trace_path)
        tracereader.timeline(tr, step=tr.steps[-1].name, width_in=9, fig=plt.figure())

# %%
# At the large shape the GPU runs behind the CPU. The first GEMM on its lane is
# an earlier step's (one or two steps back), still running when this step begins;
# this step's GEMM, where the arrow ends, starts when the one before it finishes.
# The red bar after the step is
# :term:`the profiler's own <cudaDeviceSynchronize at window end>`
# ``cudaDeviceSynchronize`` as it stops: the CPU waiting for the GPU to finish.

# %%
# Can ``torch.compile`` help one Linear?
# --------------------------------------
#
# Compile the same layer and profile it again. Compare the kernel's name with
# the eager (uncompiled) table above before you compare anything else.

small_compile = run("small_compile")
print(small_compile.table)

# %%
# The kernel is the same, name for name: in its default mode
# :term:`Inductor <TorchInductor>` calls cuBLAS for every GEMM (only the
# :term:`max-autotune` modes race its own :term:`Triton`
# :term:`templates <template (Inductor)>` against it), and a lone Linear has
# nothing around it to fuse (to merge with it into one kernel). What changed
# is the CPU side: the views are gone, ``aten::addmm`` is called directly with
# strides worked out at compile time, and the compiled-code runtime's
# :term:`frames <torch.compile runtime frames>` take their place (the
# :term:`guards` that check that the inputs still match, and the
# wrappers around the compiled code). At the big shape, where the GEMM is not
# lost in launch costs, the compiled GEMM took about as long as the eager one
# on the H200 (:doc:`/chapters/part2` gives the ratio).

big_compile = run("big_compile")
print(big_compile.table)

# %%
# What to take away: compare kernel names between an eager and a compiled trace
# first. Identical names mean compile changed only the CPU side; do not expect
# ``torch.compile`` to speed up a lone GEMM. The next set, ``03_mlp``, gives
# the compiler something to fuse.
#
# Every variant
# -------------
#
# Their harness and settings are the ``VARIANTS`` above; on the site, the table of
# every recording of them follows, with each one's traces.
