"""
The MLP under torch.compile: fusion and its launch configuration
================================================================

The eager, that is uncompiled, GeGLU MLP (three Linears without bias, bf16) runs
its gelu and its multiply as two :term:`memory-bound`
:term:`kernels <kernel>` (their time is set by the bytes they move, not by
their arithmetic), with a whole tensor written and read back between them.
``torch.compile`` hands the model to :term:`Inductor <TorchInductor>`, its code
generator, which can fuse the two into one kernel written in :term:`Triton` (a
language for GPU kernels). This page profiles the compiled MLP in three modes:

===================  ==============================  ===============================
variant              batch x seq, dim -> hidden      compile mode
===================  ==============================  ===============================
``compile``          64 x 128 tokens, 768 -> 3072    ``"default"``
``compile_big``      8 x 512 tokens, 4096 -> 11008   ``"default"``
``autotune``         64 x 128 tokens, 768 -> 3072    ``"max-autotune-no-cudagraphs"``
``reduce_overhead``  64 x 128 tokens, 768 -> 3072    ``"reduce-overhead"``
===================  ==============================  ===============================

Compare what you see with the eager story of this set (``03a_eager_mlp.py``),
which profiles the same shapes without compiling. :doc:`Part 2
</chapters/part2>` reads these recordings: what fusion saves, and why the same
fused kernel can run at two speeds. What a compile costs the first
time, from an empty cache, is the next story, ``03d``.

This file needs only torch, and ``_03_common.py`` beside it, the MLP and harness
the stories of this set share (pasted into the site's download). On a machine
with a CUDA GPU it profiles live; on the CPU it profiles a shrunken MLP there,
without a :term:`GPU lane` (Inductor then writes C++ for the CPU instead of
Triton). Run it::

    python 03c_compile_modes.py                   # the whole page
    python 03c_compile_modes.py reduce_overhead   # one named variant, its table

Each run writes its trace to ``traces/03_mlp/<variant>/trace.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore

# From the code the stories of this set share (``_03_common.py``, beside this file;
# story 03a shows it): the MLP, its harness ``profile_mlp``, the shapes, and the
# plumbing of every story (``story_run``, ``optional_tracereader``).
from _03_common import BIG, SMALL, optional_tracereader, profile_mlp, story_run

# %%
# The MLP and its harness
# -----------------------
#
# ``GeGLUMLP`` is the MLP of this set: ``gate_proj`` and ``up_proj`` widen each
# token from ``dim`` to ``hidden`` features, ``gelu(gate, approximate="tanh") *
# up`` gates one with the other, and ``down_proj`` maps back to ``dim``.
# ``profile_mlp`` builds it in bf16 with a seeded input and profiles one forward
# per step. Its ``compile`` switch names a ``torch.compile`` mode;
# :term:`Dynamo <TorchDynamo>` (the part of ``torch.compile`` that captures the
# model) is reset first, so that no earlier compile is reused. Five
# :term:`warm-up` forwards run before the profiler starts. Story ``03a`` shows
# the code and the other switches.

# %%
# The variants
# ------------
#
# The table at the top of the page. Each compiles in the warm-up forwards, so
# the profiled forwards run the finished code. The recorder ran each variant on
# an H200, several times, in one process per repeat that it shared with the
# other warm variants of the ``03_mlp`` set, and with the machine's compile
# cache: which matters below.

VARIANTS = {
    "compile": (profile_mlp, {**SMALL, "compile": "default"}),
    "compile_big": (profile_mlp, {**BIG, "compile": "default"}),
    "autotune": (profile_mlp, {**SMALL, "compile": "max-autotune-no-cudagraphs"}),
    "reduce_overhead": (profile_mlp, {**SMALL, "compile": "reduce-overhead"}),
}

# %%
# ``run(name)`` profiles one variant into ``traces/03_mlp/<name>/`` and says
# where it ran (story ``03a`` has the details).

run = story_run(VARIANTS, __name__)

# %%
# The default mode: the table
# ---------------------------
#
# Look for the kernels between the :term:`GEMMs <GEMM>`. Where eager ran a gelu
# kernel and a multiply kernel, count what runs now.

compiled = run("compile")
print(compiled.table)

# %%
# On the H200 one kernel replaced the pair: ``triton_poi_fused__unsafe_view_gelu_mul_0``.
# Read its name: ``triton`` for a kernel Inductor wrote in Triton, ``poi`` for
# pointwise (element by element), then the operations it fused. The GEMMs are
# still the ``nvjet`` kernels of :term:`cuBLAS` (NVIDIA's GEMM library), name
# for name as in eager:
# Inductor leaves them alone.
#
# The fused kernel reads the gate and up outputs once and writes the product
# once: 3 tensors of 8192 x 3072 bf16 (48 MiB each) instead of eager's 5, that
# is 144 MiB of traffic instead of 240. A memory-bound kernel's time follows
# its traffic, and in every default-mode recording the fused kernel took less
# time than eager's gelu plus multiply (:doc:`/chapters/part2` gives the saving).
#
# The fused kernel's launch configuration
# ---------------------------------------
#
# How much fusion saved depended on how the kernel was launched: its
# :term:`launch configuration`, the *grid* (how many blocks of threads it
# starts) and the *block* (how many threads each block has). The element count
# divided by grid x block is the elements each thread handles. In the default
# mode, for a pointwise kernel like this one, Inductor's source offers two
# candidates: 128-thread blocks of 8 elements per thread, or 256-thread blocks
# of 2. It times both at the first call, keeps
# the faster by its own timing, and saves that choice in its compile cache, a
# folder on disk that later compiles of the same kernel read instead of timing
# again. The cell below prints the grid and block the trace recorded.
#
# On the H200, every recording of ``compile`` ran 128-thread blocks, and every
# recording of ``compile_cold`` (story ``03d``: alone in a fresh process, with
# an empty cache) ran 256-thread blocks and took clearly longer: the same code,
# at two speeds. On the H100 both variants kept 256-thread blocks
# (:doc:`/chapters/part2` has the times on both GPUs). The recordings cannot
# say why a compile kept the slower one. The 128-thread configuration can be
# forced in this mode: with ``torch._inductor.config.triton.autotune_pointwise =
# False`` Inductor's source generates only that one. (The
# :term:`max-autotune modes <max-autotune>` also tune by coordinate descent: the
# ``autotune`` variant below kept another configuration in every repeat, in the
# :doc:`lab notes of Part 2 </chapters/part2-notes>`.) Read grid and block in
# your own trace before you judge a fused kernel: in Perfetto (the trace viewer
# at https://ui.perfetto.dev), click the kernel and its arguments list both.

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    tr = tracereader.load(compiled.trace_path)
    for fused in tr.where(kind=tracereader.Kind.KERNEL, prefix="triton_poi")[:1]:  # none on a CPU
        grid, block = tr.extra["grid"][fused], tr.extra["block"][fused]
        print(f"{tr.name(fused)}: {grid} blocks x {block} threads")
    tracereader.timeline(tr, step=tr.steps[-1].name, width_in=9, fig=plt.figure())

# %%
# The larger shape
# ----------------
#
# 4096 tokens of width 4096 into 11008: half the tokens, but a hidden layer 11008
# wide instead of 3072, so the fused kernel moves about 1.8 times the data it moved
# at the first shape. Does fusion still pay when the GEMMs dominate the step?

compile_big = run("compile_big")
print(compile_big.table)

# %%
# It did on the H200: the fused kernel took less time than eager's gelu plus
# multiply at this shape too (:doc:`Part 2 </chapters/part2>` has the numbers), where the
# hand-written kernel of story ``03e`` only broke even.
#
# max-autotune: racing the GEMMs
# ------------------------------
#
# ``"max-autotune-no-cudagraphs"`` also benchmarks GEMM candidates at compile
# time: cuBLAS against Inductor's own Triton
# :term:`templates <template (Inductor)>`, shape by shape, and keeps the
# fastest. Look for a ``triton_tem`` kernel among the GEMMs.

autotune = run("autotune")
print(autotune.table)

# %%
# On the H200 the warm ``autotune`` variant made the same choice, GEMM by GEMM,
# in every repeat: in the table, count the GEMM kernels of each kind, Inductor's
# ``triton_tem`` templates and cuBLAS's ``nvjet`` kernels. How its
# forward's GPU time compared with the default mode's, and the launch
# configuration its fused kernel ran, are in the :doc:`lab notes of Part 2
# </chapters/part2-notes>`: a race won in the compile's benchmark
# need not make the profiled forward faster. The races themselves, and what
# they cost to run, are in story ``03d``.
#
# reduce-overhead: one CUDA graph a step
# --------------------------------------
#
# ``"reduce-overhead"`` captures the compiled forward into a :term:`CUDA graph` and
# replays it: the CPU launches the whole forward with one call.

reduce_overhead = run("reduce_overhead")
print(reduce_overhead.table)

# %%
# Each step on the H200 was one ``cudaGraphLaunch`` (the table's 15 rows leave
# it out; the cell below counts it in the trace) releasing the forward's GPU
# operations, after a kernel that copies the input (12 MiB) into the
# graph's fixed input buffer: a graph replays the addresses it recorded, so new
# inputs must be copied there. The table has no ``aten::mm`` row any more: the
# graph's GPU time is charged to the
# :term:`compiled region <Torch-Compiled Region>`, not to the ops inside it.
# On the CPU there is no CUDA graph; the mode runs the compiled code as is.

if tracereader:
    tr = tracereader.load(reduce_overhead.trace_path)
    print(len(tr.where(name="cudaGraphLaunch")), "cudaGraphLaunch calls in", len(tr.steps), "steps")
    tracereader.timeline(tr, step=tr.steps[-1].name, width_in=9, fig=plt.figure())

# %%
# What to take away: fusing memory-bound kernels removes whole tensors of
# traffic, and how much time that saves depends on the launch configuration,
# which a compile times once and keeps in its cache. When a compiled pointwise
# kernel looks slow, divide its element count by grid x block (the elements
# each thread handles) before blaming the fusion.
#
# Every variant
# -------------

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
