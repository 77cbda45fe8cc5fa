"""
Kernels of our own
==================

The third experiment of Part 4. The fused decode loop of the previous story still
runs :term:`GEMV` :term:`kernels <kernel>` that :term:`Inductor <TorchInductor>` tunes
afresh in every process that compiles from an empty cache (as the recorder's do), so on
the H200 the same projection ran at different speeds from one recording to the next; and
each layer's attention takes over two thirds the time of its smallest GEMV, the output
projection. Here every GEMV of a decoded token runs one :term:`Triton` kernel of our own
with fixed settings, then the attention too, and finally Inductor's remaining tuning is
turned off. The model is Llama-3-8B's shape, random bf16 weights; greedy decoding, batch 1.
:doc:`/chapters/part4-kernels` reads the recordings.

Each variant first times decoding without the profiler (``timings.json``), then
profiles a few tokens, one profiler step per token. On the CPU it runs the ``tiny``
shape, uncompiled, and without Triton kernels (they need a GPU). This file needs torch
and ``transformers``; the kernels, the loop and the code the stories of this set share
come from ``_05_common.py`` beside it, and the site's download of this story has it
pasted in. Run it yourself::

    python 05c_kernels.py                             # the page below
    python 05c_kernels.py --variant loop_norms_8b     # one variant, its table printed

Each run writes its trace to ``traces/05_llm_decode/<name>.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import sys

import torch

# From the code this set's stories share: ``profile_loop_kernels`` (below), the
# settings ``SHORT_CACHE``, and the plumbing of every story (``story_run``: ``run``
# and the command line).
from _05_common import SHORT_CACHE, profile_loop_kernels, story_run

# %%
# A GEMV kernel of our own
# ------------------------
#
# ``gemv_kernel`` is one Triton kernel for every GEMV of a decoded token: one program
# (one instance of the kernel, run by one :term:`thread block <launch configuration>`)
# per output row reads that row of the weight ``BLOCK_K`` columns at a time. With
# ``SILU_MUL`` it reads the gate and the up row together and writes
# ``silu(gate) * up``, so the MLP's activation costs no kernel of its own. Its settings
# are fixed (one row per program, 8 :term:`warps <warp>`, 1,024 columns per step, 2,048
# for gate/up) and checked by the sweep of the next story: near the fastest on every
# GEMV, though not the fastest on each. ``torch.library.triton_op`` registers it, so
# that ``torch.compile`` puts the kernel itself into the :term:`CUDA graph`. With ``NORM``
# it also applies the RMSNorm to its input on the way in, and with ``RESIDUAL`` it adds
# the residual stream on the way out.
#
# .. literalinclude:: ../../../examples/05_llm_decode/_05_common.py
#    :language: python
#    :pyobject: gemv_kernel
#
# An attention kernel of our own
# ------------------------------
#
# ``attention_kernel`` computes one query token's attention: one program per query
# head reads its :term:`key/value head's <GQA>` :term:`cache <KV cache>` ``BLOCK_N`` keys
# at a time and keeps a running softmax (the largest score so far, the sum of
# exponentials and the weighted sum of values, each rescaled when a larger score
# arrives), so the scores never leave the chip. Keys the mask hides count as minus
# infinity, and their rows are not read.
#
# The harness
# -----------
#
# ``profile_loop_kernels`` runs the fused loop of the previous story with every GEMV
# in ``gemv_kernel``; ``attention`` picks one token's attention: ``"sdpa"``
# (:term:`SDPA` on the key/value heads; PyTorch picks its backend, :term:`cuDNN's <cuDNN>`
# kernel in the H200 recordings), ``"reductions"`` (written as reductions for Inductor)
# or ``"kernel"`` (``attention_kernel``), and ``fold_norms`` moves the RMSNorms and the
# residual adds into the GEMV kernels. It also writes how far the kernels' logits are
# from the model's own (``kernel_logits_max_abs_diff`` in ``timings.json``).

# %%
# Inductor's tuning off
# ---------------------
#
# With every GEMV and one token's attention in kernels of our own, what Inductor still
# generates is small: the norms, the :term:`rotary embedding`, the cache writes.
# Coordinate-descent tuning (``tune_gemv``) times candidate launches for those too, in
# every process, on each kernel alone, and can pick a launch that runs far slower inside
# the loop. The ``loop_untuned_8b`` variant turns it off (``tune_gemv=False``), and
# ``profile_loop_untuned`` also turns off Inductor's timing of several launches for each
# pointwise (elementwise) kernel (``autotune_pointwise``), so that those kernels launch
# with the settings Inductor's heuristics pick from the shapes. (A reduction whose shape
# leaves the choice open still gets several launches, timed on its first run.)


def profile_loop_untuned(out_dir, **loop):
    with torch._inductor.config.patch({"triton.autotune_pointwise": False}):
        return profile_loop_kernels(out_dir, **loop)


# %%
# The variants
# ------------
#
# Each row changes one thing from an earlier row; all run the fused loop with a short
# cache and attention on the key/value heads:
#
# ========================  ==========================================================
# variant                   what it runs
# ========================  ==========================================================
# ``loop_kernels_8b``       every GEMV ``gemv_kernel``, attention as reductions
# ``loop_kernels_sdpa_8b``  the same with SDPA's attention
# ``loop_norms_8b``         and the RMSNorms and residual adds in the GEMV kernels
# ``loop_attention_8b``     the GEMV kernels with ``attention_kernel``
# ``loop_untuned_8b``       that loop with Inductor's own tuning off
# ========================  ==========================================================

# What every row shares (``profile_loop_kernels`` fuses the projections itself):
LOOP = {"shape": "8b", "tune_gemv": True, "cache_len": SHORT_CACHE, "packed_gqa": True}
VARIANTS = {
    "loop_kernels_8b": (profile_loop_kernels, {**LOOP, "attention": "reductions"}),
    "loop_kernels_sdpa_8b": (profile_loop_kernels, LOOP),
    "loop_norms_8b": (profile_loop_kernels, {**LOOP, "fold_norms": True}),
    "loop_attention_8b": (profile_loop_kernels, {**LOOP, "attention": "kernel"}),
    "loop_untuned_8b": (profile_loop_untuned, {**LOOP, "attention": "kernel", "tune_gemv": False}),
}

# %%
# ``run(name)`` profiles one variant (on the CPU: the tiny shape, a few tokens),
# moves its trace to ``traces/05_llm_decode/NAME.json`` and says where it ran.

run = story_run(VARIANTS, __name__)

# sphinx_gallery_start_ignore
# The site build replays the H200's recordings instead.
run = sys.modules["tracesite"].replayer(run) if "tracesite" in sys.modules else run
# sphinx_gallery_end_ignore

# %%
# The final loop: the table
# -------------------------
#
# Guess first: with every GEMV and the attention in our kernels, which rows lead the
# GPU's time now? Find ``gemv_kernel`` and ``attention_kernel`` by name. The table
# keeps the 15 ops with the most GPU time over the profiled run, and that run starts
# with the :term:`prefill`, uncompiled: the :term:`cuBLAS` ``nvjet`` :term:`GEMMs <GEMM>`
# and :term:`ATen's <aten>` ``elementwise_kernel`` rows are the prefill's, not the
# decoded tokens'. What Inductor still generates around our kernels (its ``triton_``
# kernels) is below those rows, in the trace (open it in Perfetto,
# https://ui.perfetto.dev).

final = run("loop_untuned_8b")
print(final.table)

# %%
# What the chapter reads in these recordings
# ------------------------------------------
#
# :doc:`/chapters/part4-kernels` sets each row's time per token against the time the
# H200 needs to read the weights once, reads in each trace which kernels changed and
# by how much, and follows the spread from one recording to the next. The next
# stories of this set show where the kernels' fixed settings come from, and check
# the final loop's logits. On the site, the table of every recording of these
# variants follows, the H200's and, where it recorded them, the H100's, with each
# one's tokens per second.
