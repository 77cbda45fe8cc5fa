"""
A hand-written kernel: Liger's fused GeGLU
==========================================

``torch.compile`` fuses the GeGLU MLP's gelu and multiply into one
:term:`kernel` that :term:`Inductor <TorchInductor>` writes. Liger-Kernel
(https://github.com/linkedin/Liger-Kernel) offers the same fusion by hand,
without compiling: its ``LigerGELUMulFunction`` replaces
``gelu(gate, approximate="tanh") * up`` with one :term:`Triton` kernel. Is a
hand-written kernel better? This page profiles the MLP (three Linears without
bias, bf16) with Liger's kernel at two shapes:

===============  ==============================  =========================================
variant          batch x seq, dim -> hidden      compare with
===============  ==============================  =========================================
``liger``        64 x 128 tokens, 768 -> 3072    ``eager`` (03a), ``compile`` (03c)
``liger_big``    8 x 512 tokens, 4096 -> 11008   ``eager_big`` (03a), ``compile_big`` (03c)
===============  ==============================  =========================================

:doc:`Part 2 </chapters/part2>` reads these recordings beside the eager and
compiled ones of this set.

This file needs torch and ``_03_common.py`` beside it (the MLP and harness this
set's stories share, pasted into the site's download), and for Liger's kernel
``pip install liger-kernel`` and a CUDA GPU. On the CPU it says so and profiles
the plain torch MLP, shrunken, without a :term:`GPU lane` (so the page still
runs). Run it::

    python 03e_liger_kernel.py             # the whole page
    python 03e_liger_kernel.py liger_big   # one named variant, its table

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
# ``LigerGeGLUMLP`` is the same MLP with the gelu and the multiply done by
# Liger's one Triton kernel. ``profile_mlp`` builds the MLP in bf16 with a
# seeded input, runs five :term:`warm-up` forwards, then profiles one forward
# per step; its ``kernel="liger"`` switch picks Liger's MLP (on the CPU it says
# so and profiles the torch MLP). Story ``03a`` shows the code and the other
# switches.

# %%
# The variants
# ------------
#
# The table at the top of the page: the two shapes of this set, each with
# ``kernel="liger"``. The recorder ran each on an H200, several times.

VARIANTS = {
    "liger": (profile_mlp, {**SMALL, "kernel": "liger"}),
    "liger_big": (profile_mlp, {**BIG, "kernel": "liger"}),
}

# %%
# ``run(name)`` profiles one variant into ``traces/03_mlp/<name>/`` and says
# where it ran (story ``03a`` has the details).

run = story_run(VARIANTS, __name__)

# %%
# The small shape: the table
# --------------------------
#
# Three :term:`GEMMs <GEMM>` as in eager, and between them, where eager ran a
# gelu and a multiply, one kernel. Look for its name. How it was launched, the
# :term:`runtime call <runtime API, driver API>` under it, is not in the table:
# a cell below asks the trace.

liger = run("liger")
print(liger.table)

# %%
# On the H200 the kernel was ``_geglu_tanh_forward_kernel``, launched by
# Triton itself through the :term:`launch call` ``cuLaunchKernelEx``. PyTorch's
# eager kernels go through ``cudaLaunchKernel`` and Inductor's Triton kernels
# through ``cuLaunchKernel``, but ``cuLaunchKernelEx`` is not Triton's alone:
# :term:`cuBLAS` launches its ``nvjet`` GEMMs with it too, in this very trace.
# The launch call narrows down which library launched a kernel; the kernel's
# name decides.
#
# Is it better? Its median time was below that of eager's gelu plus multiply,
# in every repeat: the same fusion, done by hand. Against Inductor's fused
# kernel the verdict depends on which :term:`launch configuration` Inductor
# kept (story ``03c``): on the H200, Liger's kernel was faster than the
# 256-thread one that a compile from an empty cache kept (story ``03d``; the
# cache is the folder on disk where Inductor keeps earlier compiles and their
# choices) and slower than the 128-thread one; on the H100, where the warm and
# the empty-cache compile both kept 256-thread blocks, it was faster.
# :doc:`Part 2 </chapters/part2>` gives the times. Eager's gelu and multiply
# kernels are in story ``03a``'s table.
#
# Liger gives each row of the input one block, covering the row's length
# rounded up to a power of two: 4096 elements for a hidden size of 3072, so a
# quarter of each block's element slots are masked off and do nothing. In the
# trace that shows as a grid of 8192 blocks, one per token (the cell below
# prints it).

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    tr = tracereader.load(liger.trace_path)
    print(tracereader.kernel_table(tr))
    links = tracereader.link(tr)  # joins each kernel to the runtime call that launched it
    for k in tr.where(kind=tracereader.Kind.KERNEL, contains="geglu")[:1]:  # none on a CPU
        print(tr.name(k), "was launched by", tr.name(links.launch[k]))
        print(f"grid {tr.extra['grid'][k]} blocks x {tr.extra['block'][k]} threads")
    tracereader.timeline(tr, step=tr.steps[-1].name, width_in=9, fig=plt.figure())

# %%
# The larger shape
# ----------------
#
# 4096 tokens, hidden size 11008. Does the hand-written kernel still pay?

liger_big = run("liger_big")
print(liger_big.table)

# %%
# Not on the H200. Liger's kernel took about as long as eager's gelu plus
# multiply here: it saved under 1 % (on the H100 it still saved time). Inductor's
# fused kernel took less time than the pair at this shape, on both GPUs
# (:doc:`Part 2 </chapters/part2>` has the times). The rounding does not
# explain it alone: 11008 rounds up to 16384, a third of the element slots
# masked, but at the small shape a quarter were masked and the kernel still
# beat eager's pair.
#
# How the kernel was launched points at a likelier cause. The cell below prints
# each shape's launch record: at the larger shape the blocks are twice as large
# and each thread uses more registers (the fastest on-chip storage, of which
# each multiprocessor has a fixed supply), so fewer blocks fit on an
# :term:`SM <streaming multiprocessor>` at once. :term:`CUPTI`'s *estimated
# occupancy*, the share of an SM's thread slots the kernel can keep busy, falls
# well below the small shape's (Inductor's fused kernel reaches 100 % at both
# shapes). Fewer threads in flight hide less of the
# memory's latency. The trace records the launch, not what happened inside the
# kernel: a kernel profiler (Nsight Compute) would confirm the cause.

if tracereader:
    big = tracereader.load(liger_big.trace_path)
    for trace, shape in ((tr, "small"), (big, "large")):
        for k in trace.where(kind=tracereader.Kind.KERNEL, contains="geglu")[:1]:  # none on a CPU
            x = trace.extra
            print(
                f"{shape} shape: {x['grid'][k]} blocks of {x['block'][k]} threads, "
                f"{x['registers'][k]} registers a thread, "
                f"estimated occupancy {x['occupancy_pct'][k]:.0f} %"
            )

# %%
#
# Nor is the hand-written kernel free of compile time: Triton compiles it the
# first time it is called for each hidden size (read from Triton's and Liger's
# source), which a warm profile like this one does not show.
#
# What to take away: compare a hand-written kernel with the compiler's on your
# shapes and with the launch configuration your compile actually kept (read
# grid and block in the trace, and the occupancy they allow). On the H200
# Liger's kernel beat eager's pair at one size and broke even at the other,
# where Inductor's still saved; on the H100 it saved time at both.
#
# Every variant
# -------------

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
