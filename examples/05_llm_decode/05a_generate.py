"""
generate(), as most code calls it
=================================

The first experiment of Part 4: decode with ``model.generate()`` and read the trace.
The model is a Llama-architecture model from Hugging Face ``transformers``, built
from a config with random weights in bf16 (a 16-bit float, 2 bytes a weight; nothing
is downloaded): ``1b`` has the shape of Llama-3.2-1B, ``8b`` that of Llama-3-8B.
Greedy decoding (each new token is the most likely one), batch 1, a prompt of
``PROMPT`` (128) random tokens, then ``NEW_TOKENS`` (64) new ones. The first new token
comes from the :term:`prefill`, one forward over the whole prompt; each later one from
a decode step, one forward over the newest token alone.

Decoding one token at batch 1 reads every weight once and does little arithmetic on
it (:term:`memory-bound`), so the question this experiment asks is how close
``generate()`` comes to the time the GPU needs just to read those weights at its
memory bandwidth, and where the rest goes: with the default dynamic :term:`KV cache`
(each layer's attention keys and values for the earlier tokens, grown by one position a
token), with a static cache, and with the static cache compiled by ``torch.compile``
(which ``generate()`` does by itself unless told not to). :doc:`/chapters/part4` reads
the recordings.

Each variant first times decoding without the profiler (``timings.json``: ms per
token over several runs, the prefill taken out), then profiles a few tokens, one
profiler step per token. On the CPU it runs the ``tiny`` shape, uncompiled. This file
needs torch and ``transformers``; the code that Part 4's pages share (the model, the
timing, the profiling) comes from ``_05_common.py`` beside it, and the site's download
of this page has it pasted in. Run it yourself::

    python 05a_generate.py                                 # the page below
    python 05a_generate.py --variant generate_static_1b    # one variant, its table printed

Each run writes its trace to ``traces/05_llm_decode/<name>.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import sys
import time

import torch

# From the code this set's stories share: ``build_model`` (the Llama of a named shape,
# random bf16 weights), ``_transformers`` (imports transformers, or says to install
# it), ``write_timings`` (times ``runs`` decodes without the profiler, takes the
# prefill out, writes ``timings.json``), ``_profile`` (profiles a few tokens, one
# profiler step each, writes ``trace.json``, returns the table), ``PROMPT`` and
# ``NEW_TOKENS``, ``_sync`` (wait for the GPU), and the plumbing of every page
# (``story_run``: ``run`` and the command line).
from _05_common import (
    NEW_TOKENS,
    PROMPT,
    _profile,
    _sync,
    _transformers,
    build_model,
    story_run,
    write_timings,
)

# %%
# The harness
# -----------
#
# ``profile_generate`` builds the model and a random prompt, and sets ``generate()``
# up for greedy decoding of exactly ``n`` tokens. ``cache="static"`` asks for a static
# KV cache (preallocated to its full length, so that every decoded token has the same
# shapes); ``compile`` then lets ``generate()`` compile its forward, which it does by
# itself for a static cache (``disable_compile=False``).
#
# To see each token in the trace we need a hook that runs once per token.
# ``generate()`` calls its stopping criteria after every token, so ``MarkToken`` is a
# stopping criterion that never stops anything: it only calls ``mark``, which the
# profiling code sets to ``prof.step``, so each new token closes one profiler step, a
# ``ProfilerStep#N`` span (:term:`ProfilerStep`), and opens the next.
#
# The first call warms up (and compiles, when asked); its time is kept in
# ``timings.json`` as ``compile_s``. Then ``write_timings`` times the decodes without
# the profiler, and ``_profile`` profiles ``profiled_tokens`` tokens of one short call,
# with Python stacks when ``with_stack`` is set (the trace then also records each
# Python function call, so it can name the line that launched a kernel).


def profile_generate(
    out_dir, *, shape="1b", cache="dynamic", compile=False, new_tokens=NEW_TOKENS,
    profiled_tokens=6, runs=3, with_stack=False, device=None,
):  # fmt: skip
    tf = _transformers()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = build_model(shape, device)
    ids = torch.randint(0, model.config.vocab_size, (1, PROMPT), device=device)
    kw = {"do_sample": False, "pad_token_id": 0}
    if cache == "static":
        kw["cache_implementation"] = "static"
        kw["disable_compile"] = not compile

    class MarkToken(tf.StoppingCriteria):
        def __init__(self, mark):
            self.mark = mark

        def __call__(self, input_ids, scores, **kwargs):
            self.mark()
            return torch.zeros((), dtype=torch.bool)  # never stop

    def gen(n, mark_token=None):
        extra = (
            {"stopping_criteria": tf.StoppingCriteriaList([MarkToken(mark_token)])}
            if mark_token
            else {}
        )
        return model.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw, **extra)[:, PROMPT:]

    start = time.perf_counter()
    gen(new_tokens)  # warm up (and compile: generate() compiles a static-cache forward itself)
    _sync(device)
    compile_s = round(time.perf_counter() - start, 2)
    write_timings(
        out_dir, model, gen, new_tokens=new_tokens, runs=runs, device=device, compile_s=compile_s
    )
    return _profile(out_dir, gen, profiled_tokens, device, with_stack=with_stack)


# %%
# The variants
# ------------
#
# ===============================  =========================================================
# variant                          what it runs
# ===============================  =========================================================
# ``generate_dynamic_1b``          1B, the default dynamic cache; 4 new tokens profiled
#                                  (the prefill, then 3 decode steps), with Python stacks
# ``generate_static_1b``           1B, a static cache, not compiled
# ``generate_static_compiled_1b``  1B, a static cache, compiled by ``generate()`` itself
# ``generate_static_compiled_8b``  the same at the 8B shape
# ===============================  =========================================================

VARIANTS = {  # the 8B shape first: the recorder starts the longest processes first
    "generate_static_compiled_8b": (profile_generate, {"shape": "8b", "cache": "static", "compile": True}),
    "generate_dynamic_1b": (profile_generate, {"shape": "1b", "with_stack": True, "profiled_tokens": 4}),
    "generate_static_1b": (profile_generate, {"shape": "1b", "cache": "static"}),
    "generate_static_compiled_1b": (profile_generate, {"shape": "1b", "cache": "static", "compile": True}),
}  # fmt: skip

# %%
# ``run(name)`` profiles one variant (on the CPU: the tiny shape, a few tokens),
# moves its trace to ``traces/05_llm_decode/NAME.json`` and says where it ran.
# ``python 05a_generate.py --variant NAME`` profiles one variant and prints its table.

run = story_run(VARIANTS, __name__)

# sphinx_gallery_start_ignore
# The site build replays the H200's recordings instead.
run = sys.modules["tracesite"].replayer(run) if "tracesite" in sys.modules else run
# sphinx_gallery_end_ignore

# %%
# generate() with a dynamic cache: the table
# ------------------------------------------
#
# Guess first: at batch 1, which kernels take the GPU's time while decoding? The
# table sums the profiled run (the prefill, then three decode steps: four new tokens)
# by name and keeps the 15 rows with the most GPU time. How to read it:
#
# * ``Self CUDA`` is the GPU time of the kernels a row launched itself (a kernel's own
#   row: its running time); ``CUDA total`` adds what the ops inside it launched
#   (:term:`self time`). ``Self CUDA %`` is a share of ``Self CUDA time total`` at the
#   bottom: all the kernels' time together.
# * ``generate`` and ``ProfilerStep*`` appear twice. The row with CPU time is the range
#   on the CPU; the row with only ``Self CUDA`` is its GPU-side span
#   (:term:`gpu_user_annotation`): a label, not GPU work, so its ``Self CUDA %`` can
#   pass 100 %. In this trace the GPU-side spans do not overlap: each runs from the
#   first to the last GPU op launched while its range was the innermost one open, idle
#   time included.
# * ``ProfilerStep*`` stands for every :term:`ProfilerStep`. The CPU has five: one per
#   new token, then one from the last token to the profiler's end, in which
#   ``generate()`` still launched GPU work as it finished (its GPU-side span under a
#   tenth as long as a decode step's). The GPU-side row counts four, ``#1`` to ``#4``: in ``#0``
#   the innermost range was ``generate`` (opened inside it), so the GPU-side
#   ``generate`` covers only the prefill's step, ``#0``, and each decode step's
#   kernels fall under their own ``ProfilerStep#N``.
# * ``aten::`` rows are PyTorch's operators (:term:`aten`); the others are kernels.
#   ``nvjet_sm90_...`` are :term:`cuBLAS`'s matrix multiplies (:term:`nvjet`). In a
#   decode step each multiplies one row of activations by a weight matrix (the trace's
#   input shapes say so): these are the :term:`GEMV` kernels, each reading a whole
#   weight matrix, and their names show a :term:`tile` with a side of 8 (``64x8``).
#   ``elementwise_kernel`` is PyTorch's kernel for element-by-element ops.
#
# Then look at ``# of Calls``: every small op of every layer is a kernel of its own,
# which the CPU must launch (:term:`launch call`), so the counts run high.

dynamic = run("generate_dynamic_1b")
print(dynamic.table)

# %%
# The line above the table is the recording's ``results.json``, measured without the
# profiler: ``ms_per_token`` (the median of the timed runs) and ``tokens_per_s``;
# ``bytes_per_token``, what one decode step must read (every weight, and the KV cache
# halfway through the decode); ``achieved_tbs``, those bytes over the time per token;
# ``hbm_fraction_spec``, that rate over the H200's datasheet bandwidth for its main
# memory (HBM), in the H100's recordings too (a live run divides by its own GPU's figure
# and says which); ``copy_tbs``, the rate a large device-to-device copy reached on the
# GPU, and ``hbm_fraction_copy``, the achieved rate over that. Both fractions are under
# a tenth, in every repeat on both GPUs (the H100's also against its own datasheet's
# figure): ``generate()`` decodes far slower than reading the weights allows. Where
# does the time go?
#
# With ``tracereader`` (this site's library for reading traces) installed, each kept
# step's launch calls and kernels, and the time the GPU was busy in it (the site keeps
# two steps of the trace: the prefill's, ``#0``, and a decode step, ``#2``). The
# decode step lasts at least twice ``ms_per_token``, in every repeat on both GPUs:
# profiling (here with Python stacks) slows the CPU. Yet even against
# ``ms_per_token``, the decode step's kernels keep the GPU busy under a quarter of the
# time, in every repeat on both GPUs. Otherwise open the trace in Perfetto
# (https://ui.perfetto.dev).

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    read_trace = tracereader.load(dynamic.trace_path)
    for kept in tracereader.step_times(read_trace):
        busy, span = kept.gpu_busy_us / 1e3, kept.span_us / 1e3
        print(f"{kept.name}: {kept.launches} launch calls, {kept.kernels} kernels; "
              f"the GPU busy {busy:.2f} ms of the step's {span:.2f} ms")  # fmt: skip

# %%
# One millisecond of a decode step
# --------------------------------
#
# The middle millisecond of ``ProfilerStep#2``. The CPU thread on top runs nested ops
# down to the launch calls (orange); the :term:`GPU stream` below runs each kernel
# (green), an arrow joining it to its launch. Between kernels the GPU waits for the
# next launch: the hatched spans are :term:`idle gaps <idle gap>`, most of this
# millisecond in every repeat on both GPUs. So on both GPUs the step is
# :term:`CPU-bound`: a faster GPU would not help, less CPU work per token would. The
# H100's recordings show it: its memory is slower and this step's kernels keep it busy
# longer, in every repeat, yet it decodes about as fast as the H200 (the tokens per
# second listed at the end of the page).

if tracereader:
    token_step = read_trace.step("ProfilerStep#2")
    middle = (token_step.start_ns + token_step.end_ns) // 2
    window = (middle - 500_000, middle + 500_000)  # ns
    tracereader.timeline(read_trace, window=window, width_in=9, fig=plt.figure())

# %%
# What the chapter reads in these recordings
# ------------------------------------------
#
# :doc:`/chapters/part4` sets each variant's time per token against the time the
# H200 needs to read the weights once, and follows the dynamic cache's token from
# ``generate()`` down to its kernels. It then reads what a static cache changes, and
# what compiling it changes: ``generate()`` replays each token's forward as one
# :term:`CUDA graph` (one launch for all the forward's kernels), yet each token still
# makes dozens of other launch calls, and the GPU still idles while ``generate()`` does
# its bookkeeping between tokens (on the H100, the 8B recordings' ``ProfilerStep#1``
# also records a graph, ``CUDAGraphNode.record`` in the trace: a far slower step). The
# next page of this set, a decode loop of our own, starts from there.
#
# At the end of the page, a list of every recording of these variants, on both GPUs:
# a link to each repeat's trace, and each variant's tokens per second, the static and
# compiled ones included. To profile your own model's ``generate()`` a token at a
# time, pass it a stopping criterion such as ``MarkToken`` that calls ``prof.step``. A
# range of your own around the call (``generate`` here) then takes step ``#0``'s GPU
# work from ``ProfilerStep#0``'s GPU-side row, and what ``generate()`` launches after a
# stopping check falls in the next step.
