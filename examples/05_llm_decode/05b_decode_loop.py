"""
A decode loop of our own
========================

The second experiment of Part 4: drive the same Llama model with a decode loop of
our own instead of ``generate()``, compile one decoding step into one :term:`CUDA graph`,
then change one thing at a time and read in each trace what it bought. The model is
built from a config with random bf16 weights (``1b``: Llama-3.2-1B's shape, ``8b``:
Llama-3-8B's); greedy decoding, batch 1, a prompt of 128 random tokens, 64 new ones.

Decoding one token at batch 1 reads every weight once, so the time the GPU needs to
read the weights is a floor no loop can beat. Each change aims at it, and each one
shows in the trace: :term:`Inductor's <TorchInductor>` own :term:`GEMV`
:term:`kernels <kernel>` instead of :term:`cuBLAS's <cuBLAS>`, a :term:`cache <KV cache>`
sized to the tokens generated, attention that reads each :term:`key/value head <GQA>` once,
the q/k/v projections and gate/up (the MLP's two input projections) fused into one
matrix each; then two attempts on the fused loop that its trace points to. Not every
change moved tokens/s beyond the spread of the repeats: :doc:`/chapters/part4` says
which did. :doc:`/chapters/part4` reads the recordings.

Each variant first times decoding without the profiler (``timings.json``), then
profiles a few tokens, one :term:`profiler step <ProfilerStep>` per token. On the CPU it
runs the ``tiny`` shape, uncompiled (the compiled loop's subject is the GPU: CUDA
graphs). This file needs torch and ``transformers``; the loop itself and the code the
stories of this set share come from ``_05_common.py`` beside it, and the site's download
of this story has it pasted in. Run it yourself::

    python 05b_decode_loop.py                           # the page below
    python 05b_decode_loop.py --variant loop_fused_1b   # one variant, its table printed

Each run writes its trace to ``traces/05_llm_decode/<name>.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import sys

# From the code this set's stories share: the two harnesses this story runs,
# ``profile_loop`` (shown below) and ``profile_loop_further`` (described below), the settings
# ``SHORT_CACHE`` (a cache of 256 positions: the prompt and the new tokens, rounded
# up), and the plumbing of every story (``story_run``: ``run`` and the command line).
from _05_common import SHORT_CACHE, profile_loop, profile_loop_further, story_run

# %%
# One decoding step
# -----------------
#
# ``decode_step`` feeds the last token and its position to the model, which appends
# to a static cache in place, and returns the next token and position, all on the GPU:
# nothing waits for the host (the CPU) between tokens. Every call has the same shapes, so
# ``torch.compile(decode_step, mode="reduce-overhead")`` can capture the whole step as
# one CUDA graph and replay it with one :term:`launch <launch call>` per token.
#
# .. literalinclude:: ../../../examples/05_llm_decode/_05_common.py
#    :language: python
#    :pyobject: decode_step
#
# The harness
# -----------
#
# ``profile_loop`` builds the model and the static cache (``cache_len`` positions),
# compiles the step when there is a GPU, :term:`prefills <prefill>` the prompt, then
# times and profiles the loop as ``profile_generate`` does ``generate()``. Its settings
# are the levers:
#
# * ``tune_gemv=True`` turns on Inductor's coordinate-descent tuning (it times each
#   kernel it generates at nearby settings, changing one setting at a time, and keeps
#   the fastest), under which it also rewrites each one-row matrix multiply (a GEMV) as
#   a multiply-and-sum that it generates and tunes itself, instead of calling cuBLAS;
# * ``cache_len``: the static cache's length (``LONG_CACHE``, 1,024, or ``SHORT_CACHE``);
#   attention reads the whole cache, masked, so a shorter cache is less to read;
# * ``packed_gqa=True``: attention on the key/value heads as they are, each read once
#   for its group of query heads (``sdpa_packed_gqa``), instead of copies of them;
# * ``fused=True``: the q/k/v projections fused into one matrix, and gate/up into one
#   (``fuse_projections``). Inductor already ran gate and up as one kernel, so what
#   changes is q with k and v: fewer GEMVs, and a new kernel that splits their
#   output and writes the cache.
#
# .. literalinclude:: ../../../examples/05_llm_decode/_05_common.py
#    :language: python
#    :pyobject: profile_loop
#
# Two further attempts
# --------------------
#
# The fused loop's trace points to two more changes, which ``profile_loop_further``
# makes. It swaps module functions for the rest of the process and does not put them
# back, so run each of its variants in a fresh process (the site's recorder does). ``materialize_act`` computes the MLP's activation ``silu(gate) * up`` once,
# in an op Inductor cannot fuse (merge into a kernel it generates), before the down
# projection, instead of letting Inductor recompute it inside every
# :term:`block <launch configuration>` of that GEMV. ``reduce_attention`` writes one token's
# attention as multiply-and-sum reductions that Inductor generates and tunes itself,
# like the GEMVs, instead of calling :term:`cuDNN's <cuDNN>` attention kernel.

# %%
# The variants
# ------------
#
# Each row changes one thing from the row above (the 1B rows repeat two of them at
# the smaller shape):
#
# =====================  =============================================================
# variant                what it runs
# =====================  =============================================================
# ``loop_compiled_8b``   our loop, compiled, a long static cache, cuBLAS's GEMVs
# ``loop_tuned_8b``      Inductor's own GEMV kernels (``tune_gemv``)
# ``loop_short_8b``      a cache of ``SHORT_CACHE`` positions
# ``loop_packed_8b``     attention on the key/value heads (``packed_gqa``)
# ``loop_fused_8b``      fused q/k/v and gate/up projections (``fused``)
# ``loop_act_8b``        the activation computed once (``materialize_act``)
# ``loop_act_attn_8b``   and attention as reductions (``reduce_attention``)
# ``loop_compiled_1b``   the first row at the 1B shape
# ``loop_fused_1b``      the fused row at the 1B shape
# =====================  =============================================================

# Each row's settings are the row above's, and one more:
TUNED = {"shape": "8b", "tune_gemv": True}
SHORT = {**TUNED, "cache_len": SHORT_CACHE}
PACKED = {**SHORT, "packed_gqa": True}
FUSED = {**PACKED, "fused": True}
ACT = {**FUSED, "materialize_act": True}

VARIANTS = {  # the 8B shape first: the recorder starts the longest processes first
    "loop_compiled_8b": (profile_loop, {"shape": "8b"}),
    "loop_tuned_8b": (profile_loop, TUNED),
    "loop_short_8b": (profile_loop, SHORT),
    "loop_packed_8b": (profile_loop, PACKED),
    "loop_fused_8b": (profile_loop, FUSED),
    "loop_act_8b": (profile_loop_further, ACT),
    "loop_act_attn_8b": (profile_loop_further, {**ACT, "reduce_attention": True}),
    "loop_compiled_1b": (profile_loop, {"shape": "1b"}),
    "loop_fused_1b": (profile_loop, {**FUSED, "shape": "1b"}),
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
# The fused loop at 1B: the table
# -------------------------------
#
# Guess first: with the whole step one CUDA graph, what is left in the table? It keeps
# the 15 ops with the most GPU time over the profiled run (the prefill, uncompiled,
# then a few tokens). Look at the kernels: which are GEMVs, and how much of the GPU's
# time the attention and the small pointwise (elementwise) kernels take. The
# :term:`graph launches <cudaGraphLaunch>` themselves (``cudaGraphLaunch``, one per
# token) take CPU time, not GPU time, so the table leaves them out: open the trace in
# Perfetto (https://ui.perfetto.dev) and find them on the :term:`CPU's lane <CPU lane>`,
# one under each token's step.

fused_1b = run("loop_fused_1b")
print(fused_1b.table)

# %%
# What the chapter reads in these recordings
# ------------------------------------------
#
# :doc:`/chapters/part4` sets each row's time per token against the time the H200
# needs to read the weights once, reads in the traces what each change removed (GPU
# :term:`idle time <idle gap>`, cache reads, copies of key/value heads, launches), and
# follows the two further attempts to what they bought and cost. The next story of this
# set replaces the GEMVs and then the attention with :term:`Triton` kernels of our own.
# On the site, the table of every recording of these variants follows, the H200's and,
# where it recorded them, the H100's, with each one's tokens per second (the chapter says
# which differences beat the spread).
