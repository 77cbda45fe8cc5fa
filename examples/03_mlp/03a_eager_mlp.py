"""
The eager MLP: what runs, and what a kernel name tells you
==========================================================

A GeGLU MLP, the block that follows attention in many transformers, run eagerly
in bf16: three Linears without bias and a gelu-times-multiply between them.
Guess first: how many GPU kernels does one forward pass run? This page
profiles it at two shapes and reads the answer off the table and the timeline:

==============  =====================================  ==========================
variant         batch x seq, dim -> hidden             what it shows
==============  =====================================  ==========================
``eager``       64 x 128 tokens, 768 -> 3072           five kernels, two GEMM names
``eager_big``   8 x 512 tokens, 4096 -> 11008          one name, a different job
==============  =====================================  ==========================

The small shape is the Hugging Face series' (8192 tokens of width 768); the
large one is a Llama-7B-sized MLP over 4096 tokens. :doc:`Part 2 of the
chapters </chapters/part2>` reads these recordings; the other stories of this
set compile the same MLP, profile a cold first forward, and swap in a
hand-written kernel.

This file needs only torch, and ``_03_common.py`` beside it: the code the
stories of this set share, which the site's download of this story has pasted
in. On a machine with a CUDA GPU it profiles live; on the CPU it profiles a
shrunken MLP there, without a GPU lane. Run it::

    python 03a_eager_mlp.py             # the whole page
    python 03a_eager_mlp.py eager_big   # one named variant, its table

Each run writes its trace to ``traces/03_mlp/<variant>/trace.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore

# From the code the stories of this set share (``_03_common.py``, beside this file): the
# MLP, its harness ``profile_mlp``, the two shapes, and the plumbing of every story
# (``story_run``, ``optional_tracereader``).
from _03_common import BIG, SMALL, optional_tracereader, profile_mlp, story_run

# %%
# The MLP
# -------
#
# ``GeGLUMLP`` is the MLP block of many transformers: ``gate_proj`` and
# ``up_proj`` widen each token from ``dim`` to ``hidden`` features, ``gelu(gate,
# approximate="tanh") * up`` gates one with the other (GeGLU), and ``down_proj``
# maps back to ``dim``. No biases. Written in PyTorch, a forward is three
# GEMMs, a gelu and a multiply.
#
# .. literalinclude:: ../../../examples/03_mlp/_03_common.py
#    :language: python
#    :pyobject: GeGLUMLP
#
# ``LigerGeGLUMLP`` is the same MLP with the gelu-and-multiply done by one
# hand-written Triton kernel from Liger-Kernel (imported only when it is used).
# ``profile_mlp`` can pick it; its own story is 03e.
#
# How it is profiled
# ------------------
#
# ``profile_mlp`` profiles one MLP forward per step, writes ``trace.json`` into
# ``out_dir`` and returns the profiler's table. It builds the MLP in bf16 and
# its input, a ``(batch, seq, dim)`` tensor, seeded so that every run sees the
# same numbers. Its switches:
#
# * ``compile``: compile the MLP in that ``torch.compile`` mode (``"default"``,
#   ``"reduce-overhead"``, ``"max-autotune-no-cudagraphs"``), after resetting
#   Dynamo so that no earlier compile is reused;
# * ``kernel="liger"``: use ``LigerGeGLUMLP`` (a CUDA GPU and
#   ``pip install liger-kernel`` needed; on the CPU it says so and profiles the
#   torch MLP);
# * ``cold=True``: no warm-up at all, so that the process's very first forward
#   is the first step in the trace.
#
# Otherwise five forwards run before the profiler starts: compiling,
# autotuning and recording CUDA graphs all happen there, and the profiled
# steps show the steady state.
#
# .. literalinclude:: ../../../examples/03_mlp/_03_common.py
#    :language: python
#    :pyobject: profile_mlp
#
# ``_profile_steps`` runs ``skip`` steps that the profiler's schedule does not
# keep (its wait and warm-up steps), then ``active`` steps that it records, with
# input shapes, so that each op in the trace carries its shapes. It writes
# ``trace.json`` into ``out_dir`` and returns the table, sorted by GPU time
# when there is a GPU.
#
# .. literalinclude:: ../../../examples/03_mlp/_03_common.py
#    :language: python
#    :pyobject: _profile_steps

# %%
# The variants
# ------------
#
# The two shapes, eager (the table at the top of the page). The recorder ran
# each on an H200, several times.

VARIANTS = {
    "eager": (profile_mlp, {**SMALL}),
    "eager_big": (profile_mlp, {**BIG}),
}

# %%
# ``run(name)`` profiles one variant into ``traces/03_mlp/<name>/`` and says
# where it ran. On the CPU, every size above ``CPU_MAX_DIM`` shrinks to it.
# ``python 03a_eager_mlp.py VARIANT`` profiles that variant and stops (inside
# Jupyter, ``sys.argv`` holds the kernel's own flags, so a notebook runs the page).

run = story_run(VARIANTS, __name__)

# %%
# The table
# ---------
#
# Guess first, then look at the rows with CUDA time. Three GEMMs (``aten::mm``,
# each under an ``aten::linear``), a gelu and a multiply.

eager = run("eager")
print(eager.table)

# %%
# On the H200 the answer was five kernels per forward: three ``nvjet`` GEMMs
# from cuBLAS, the gelu and the multiply, in Python's order (gate GEMM, gelu,
# up GEMM, multiply, down GEMM). ``aten::mm`` also issued two memsets of a few
# bytes. The many view ops of three Linears (``aten::t``, ``aten::reshape``,
# ``aten::view``, ...) launch nothing.
#
# Look at the gelu's and the multiply's rows. Both are memory-bound: each does
# a few operations per element and moves whole tensors. The gelu writes its
# output (48 MiB at this shape) and the multiply reads it back with up's
# output: that round trip is what a fused kernel removes (the compile story of
# this set). The data is bf16, yet the multiply's name says
# ``MulFunctor<float>``: it computes each product in float and rounds back.
#
# And look at the GEMMs: the three do the same number of FLOPs, but gate and up
# ran one kernel and down another. cuBLAS picks a kernel per problem shape, and
# down's output (8192 x 768) is narrower than gate's (8192 x 3072).
#
# One forward pass on the timeline
# --------------------------------
#
# The last profiled step, drawn by ``tracereader`` if it is installed;
# otherwise open the trace at https://ui.perfetto.dev.

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    tr = tracereader.load(eager.trace_path)
    tracereader.timeline(tr, step=tr.steps[-1].name, width_in=9, fig=plt.figure())

# %%
# The larger shape: one name, another job
# ---------------------------------------
#
# Now 4096 tokens of width 4096 into 11008. Compare the down GEMM's kernel name
# here with the gate GEMM's name in the first table.

eager_big = run("eager_big")
print(eager_big.table)

# %%
# On the H200 the down GEMM here ran the very kernel that gate and up ran at
# the small shape, with the same launch, grid and block alike. It took many
# times as long (:doc:`/chapters/part2` has both times and the launch). These
# GEMMs are persistent kernels: they launch about one block per SM and loop
# over output tiles, so even grid and block are the same for both jobs. The
# work shows only in the op's input shapes (which ``record_shapes=True`` put
# in the trace) and in the duration.
#
# So read a kernel's name as *which code ran*, and its shapes, grid, block and
# duration as *how much work it did*. Equal names at different times can mean
# different inputs, not a slower GPU. With ``tracereader``, every kernel of the
# profiled steps and its times (on the CPU the list is empty: no GPU lane):

if tracereader:
    tr = tracereader.load(eager_big.trace_path)
    print(tracereader.kernel_table(tr))

# %%
# Every variant
# -------------
#
# The harness and settings of each variant on this page.

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
