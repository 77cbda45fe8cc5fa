"""
generate(), as most code calls it
=================================

The first experiment of Part 4: decode with ``model.generate()`` and read the trace.
The model is a Llama-architecture model from Hugging Face ``transformers``, built
from a config with random bf16 weights (nothing is downloaded): ``1b`` has the shape
of Llama-3.2-1B, ``8b`` that of Llama-3-8B. Greedy decoding, batch 1, a prompt of
``PROMPT`` (128) random tokens, then ``NEW_TOKENS`` (64) new ones.

Decoding one token at batch 1 reads every weight once and does little arithmetic on
it, so the question this experiment asks is how close ``generate()`` comes to the
time the GPU needs just to read those weights, and where the rest goes: with the
default dynamic cache, with a static cache, and with the static cache compiled (which
``generate()`` does by itself unless told not to). :doc:`/chapters/part4` reads the
recordings.

Each variant first times decoding without the profiler (``timings.json``: ms per
token over several runs, the prefill taken out), then profiles a few tokens, one
profiler step per token. On the CPU it runs the ``tiny`` shape, uncompiled. This file
needs torch and ``transformers``; the code the stories of this set share (the model,
the timing, the profiling) comes from ``_05_common.py`` beside it, and the site's
download of this story has it pasted in. Run it yourself::

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
# ``NEW_TOKENS``, ``_sync`` (wait for the GPU), and the plumbing of every story
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
# profiling code sets to ``prof.step``, so each decoded token becomes one
# ``ProfilerStep#N`` span.
#
# The first call warms up (and compiles, when asked); its time is kept as
# ``compile_s``. Then ``write_timings`` times the decodes without the profiler, and
# ``_profile`` profiles ``profiled_tokens`` tokens of one short call, with Python
# stacks when ``with_stack`` is set.


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
# ``generate_dynamic_1b``          1B, the default dynamic cache; 4 tokens profiled, with
#                                  Python stacks (the trace then names the Python lines)
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
# table sums the profiled run (the prompt's prefill, then a few tokens) by operator
# and keeps the 15 with the most GPU time. Look for the GEMV kernels (a matrix times
# one vector: each reads a whole weight matrix), then at the ``# of Calls`` column:
# every small op of every layer is a launch of its own, so the counts run high.

dynamic = run("generate_dynamic_1b")
print(dynamic.table)

# %%
# What the chapter reads in these recordings
# ------------------------------------------
#
# :doc:`/chapters/part4` sets each variant's time per token against the time the
# H200 needs to read the weights once (its memory bandwidth), and follows the trace
# of the dynamic cache's token from ``generate()`` down to its kernels: the GPU sits
# idle between small kernels while the CPU launches them. It then reads what a static
# cache changes, and what compiling it changes: ``generate()`` replays each token's
# forward as one CUDA graph, and the GPU still idles while ``generate()`` does its
# bookkeeping between tokens. The next story of this set, a decode loop of our own,
# starts from there.
# On the site, the table of every recording of these variants follows, on both GPUs,
# with each variant's tokens per second.
