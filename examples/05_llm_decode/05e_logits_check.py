"""
Checking the final loop: its logits, and what a host read costs
===============================================================

The last experiment of Part 4. The final loop of the kernels story computes in bf16
through :term:`kernels <kernel>` of our own, with settings and fusions no library
tested. Before its speed counts for anything, its output must be right: this story keeps
the logits of every decoded position and compares them with an fp32 copy of the same
random weights fed the same tokens. It also measures what most decode loops do without
thinking: :term:`read each new token on the host <host sync>` (``token.item()``), which
makes the CPU wait for the GPU once per token. The model is Llama-3-8B's shape with
random bf16 weights. :doc:`/chapters/part4-kernels` reads the recording.

On the CPU it runs the ``tiny`` shape, uncompiled, without :term:`Triton` kernels. This file
needs torch and ``transformers``; the kernels, the loop and the code the stories of
this set share come from ``_05_common.py`` beside it, and the site's download of this
story has it pasted in. Run it yourself::

    python 05e_logits_check.py                             # the page below
    python 05e_logits_check.py --variant logits_check_8b   # the same, its table printed

Each run writes its trace to ``traces/05_llm_decode/<name>.json`` and the comparison
to ``traces/05_llm_decode/<name>.results.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import json
import sys
import time
from pathlib import Path

import torch

# From the code this set's stories share: the model (``build_model``,
# ``_transformers``), the loop's parts (``prefill``, ``fuse_projections``), the kernels
# (``use_gemv_kernels``, and ``use_kernel_attention``, which registers the attention
# kernel for the model), the step that also returns its logits (``decode_step_logits``),
# the comparison (``compare_logits``), the timing (``time_decode``, ``_median``,
# ``_compiled_graphs``, ``_profile``, ``_sync``), the settings (``PROMPT``,
# ``NEW_TOKENS``, ``SHORT_CACHE``), and the plumbing of every story.
from _05_common import (
    NEW_TOKENS,
    PROMPT,
    SHORT_CACHE,
    _compiled_graphs,
    _median,
    _profile,
    _sync,
    _transformers,
    build_model,
    compare_logits,
    decode_step_logits,
    fuse_projections,
    prefill,
    story_run,
    time_decode,
    use_gemv_kernels,
    use_kernel_attention,
)

# %%
# Checking the final loop: its logits, and what a host read costs
# ---------------------------------------------------------------
#
# The final loop computes in bf16 through kernels of our own. ``check_loop_logits``
# builds that loop (the settings ``loop_untuned_8b`` runs with) around a step that also
# returns the logits it picks each token from, keeps the logits of every decoded
# position, and compares them with an fp32 copy of the same random weights fed the same
# tokens (teacher-forced: one forward over the prompt and the loop's tokens). For scale,
# it measures how far transformers' own bf16 forward over those tokens is from the same
# fp32 reference. It also times the loop with and without reading each new token on the
# host (``token.item()``), the two interleaved, and profiles a few tokens of the loop that
# reads them.

# %%
# The harness, step by step
# -------------------------
#
# ``check_loop_logits`` is long because it does four things with one loop, in order:
#
# 1. **Build the final loop.** The model's projections are fused (``fuse_projections``),
#    its GEMVs run ``gemv_kernel`` (``use_gemv_kernels``) and one token's attention runs
#    ``attention_kernel`` (``use_kernel_attention``), over a static cache of
#    ``SHORT_CACHE`` positions, with Inductor's own tuning off, as ``loop_untuned_8b``
#    runs it. The step is ``decode_step_logits`` (``decode_step`` that also returns the
#    logits it picked the token from), compiled into one CUDA graph on a GPU.
# 2. **Define one decode, three ways.** ``gen(n)`` prefills the prompt and decodes
#    ``n`` tokens. With ``read=True`` it calls ``token.item()`` after every step: the
#    host reads the token, so the CPU waits for the GPU to finish that step before it
#    may launch the next one, as a loop that checks for an end-of-text token does. With
#    ``kept`` it keeps a copy of every step's logits. A CUDA graph writes its outputs
#    into the same memory on every replay, so the token, the position and the logits
#    are copied before the next step overwrites them.
# 3. **Time it.** Two warm-up decodes (one of each kind) compile and record the graph.
#    Then ``runs`` rounds each time one decode without the host read and one with it,
#    interleaved, so that both see the same state of the GPU (clocks, temperature).
#    ``recompiles`` counts graphs compiled during the timing: none is expected.
# 4. **Check it.** One more decode keeps the logits of every position, and the profiler
#    records a few tokens of the decode that reads each token. Then the reference: the
#    same random weights (``build_model`` seeds them) in fp32, fed the prompt and the
#    loop's own tokens in one forward (teacher-forced), gives the logits each position
#    should have had; the same forward in bf16 shows how far plain bf16 is from fp32, for
#    scale. ``compare_logits`` reports, per position, the largest difference, the
#    relative error and whether the loop's token is the reference's choice.
#
# Everything lands in ``results.json`` beside the trace, and the harness asserts that
# the loop really picked the argmax of its own logits at every step. The timings of
# both kinds of decode land in ``timings.json``.


def check_loop_logits(
    out_dir, *, shape="8b", new_tokens=NEW_TOKENS, profiled_tokens=4, runs=5, device=None
):
    tf = _transformers()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = build_model(shape, device)
    ids = torch.randint(0, model.config.vocab_size, (1, PROMPT), device=device)
    fuse_projections(model)
    use_gemv_kernels(model)
    use_kernel_attention(model)
    cache = tf.StaticCache(config=model.config, max_cache_len=SHORT_CACHE)
    tuning_off = {"coordinate_descent_tuning": False, "triton.autotune_pointwise": False}
    with torch._inductor.config.patch(tuning_off), torch.no_grad():
        step = decode_step_logits
        if device == "cuda":
            step = torch.compile(decode_step_logits, mode="reduce-overhead", fullgraph=True)

        def gen(n, mark_token=None, read=False, kept=None):
            cache.reset()
            token = prefill(model, ids, cache)
            position = torch.full((1,), PROMPT, device=device)
            out = [token]
            for _ in range(n - 1):
                if mark_token:
                    mark_token()
                token, position, logits = step(model, token, position, cache)
                token, position = token.clone(), position.clone()  # a CUDA graph reuses its outputs
                if kept is not None:
                    kept.append(logits.float())  # a copy, for the same reason
                if read:
                    token.item()  # the host reads the token: it waits for the GPU
                out.append(token)
            return torch.cat(out, dim=1)

        start = time.perf_counter()
        gen(new_tokens)  # warm up: compile, record the CUDA graph
        gen(new_tokens, read=True)
        _sync(device)
        compile_s = round(time.perf_counter() - start, 2)
        graphs = _compiled_graphs()
        plain, read = [], []
        for _ in range(runs):  # interleaved: one run without the host read, one with it
            plain += time_decode(gen, new_tokens, 1, device)[0]
            read += time_decode(lambda n: gen(n, read=True), new_tokens, 1, device)[0]
        recompiles = _compiled_graphs() - graphs
        kept = []
        tokens = gen(new_tokens, kept=kept)[0]
        loop_logits = torch.cat(kept)
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        table = _profile(out_dir, lambda n, mark_token=None: gen(n, mark_token, read=True),
                         profiled_tokens, device)  # fmt: skip
        ref = build_model(shape, device).float()
        weights_match = torch.equal(ref.lm_head.weight, model.lm_head.weight.float())
        seq = torch.cat([ids[0], tokens[:-1]]).view(1, -1)
        fp32 = ref(seq).logits[0, PROMPT - 1 :].float()  # row i predicts tokens[i]
        bf16 = ref.to(torch.bfloat16)(seq).logits[0, PROMPT - 1 :].float()
    assert bool((loop_logits.argmax(dim=1) == tokens[1:]).all())  # the loop picked its argmax
    ms, ms_read = _median(plain), _median(read)
    results = {
        "positions": [PROMPT + i for i in range(new_tokens - 1)],
        **compare_logits(loop_logits, fp32[1:], tokens[1:]),
        **{f"bf16_{k}": v for k, v in compare_logits(bf16[1:], fp32[1:], tokens[1:]).items()},
        "prefill_agrees": bool(fp32[0].argmax() == tokens[0]),
        "weights_match": weights_match,
        "ms_per_token": round(ms, 4),
        "tokens_per_s": round(1e3 / ms, 2),
        "ms_per_token_item": round(ms_read, 4),
        "item_us_per_token": round((ms_read - ms) * 1e3, 2),
        "graphs_compiled_while_timed": recompiles,
        "l2_cache_bytes": torch.cuda.get_device_properties(0).L2_cache_size if device == "cuda" else None,
    }  # fmt: skip
    (out_dir / "results.json").write_text(json.dumps(results))
    (out_dir / "timings.json").write_text(json.dumps({
        "what": "ms per decoded token per run, unprofiled, interleaved: without and with a per-token .item()",
        "ms_per_token": plain, "ms_per_token_item": read, "new_tokens": new_tokens,
        "compile_s": compile_s, "tokens": tokens.tolist(),
    }))  # fmt: skip
    return table


# %%
# The variant
# -----------
#
# One variant, ``logits_check_8b``: the final loop's settings at the 8B shape. What its
# ``results.json`` holds, per decoded position where it is a list:
#
# * ``max_abs_diff``, ``rel_err``: how far the loop's logits are from the fp32
#   reference's (the largest difference, and the difference's norm over the
#   reference's). The ``bf16_`` fields are no fair yardstick beside them: the bf16
#   forward they read casts the whole fp32 model back to bf16, the
#   :term:`rotary <rotary embedding>` frequencies too (which the loop keeps in fp32),
#   and ``bf16_argmax_agrees`` and ``bf16_ref_gap`` compare fp32's token with the
#   loop's, as the fields below do;
# * ``argmax_agrees``: whether the loop's token is the reference's choice, and
#   ``ref_gap``: where it is not, by how much the reference preferred its own;
# * ``prefill_agrees``: the first new token (the :term:`prefill` picks it) is the
#   reference's choice too; ``weights_match``: the reference's :term:`LM head` equals
#   the loop's;
# * ``ms_per_token`` and ``ms_per_token_item``: the median time per token without and
#   with the host read, and ``item_us_per_token``, their difference in µs;
# * ``graphs_compiled_while_timed``: graphs compiled during the timing (0 expected),
#   and ``l2_cache_bytes``, the GPU's :term:`L2 cache` size, for the record.

VARIANTS = {"logits_check_8b": (check_loop_logits, {"shape": "8b"})}


# %%
# ``run(name)`` profiles one variant (on the CPU: the tiny shape), moves its trace to
# ``traces/05_llm_decode/NAME.json`` and says where it ran.

run = story_run(VARIANTS, __name__)

# sphinx_gallery_start_ignore
# The site build replays the H200's recordings instead.
run = sys.modules["tracesite"].replayer(run) if "tracesite" in sys.modules else run
# sphinx_gallery_end_ignore

# %%
# The final loop, reading each token: the table
# ---------------------------------------------
#
# Guess first: with ``token.item()`` after every step, where does the CPU wait? The
# table keeps the 15 ops with the most GPU time over the profiled run (the prefill,
# then a few tokens), so the waits themselves hardly show in it: find each token's
# :term:`device-to-host copy <Memcpy DtoD>` and the CPU's wait beside it in the trace,
# one per decoded step.
# Without ``read``, the loop never asks the host for a value while decoding.

logits_run = run("logits_check_8b")
print(logits_run.table)

# %%
# The trace has them. With ``tracereader`` (this site's library for reading traces)
# installed, each :term:`kept step's <ProfilerStep>` device-to-host copy
# (``Memcpy DtoH``) and the time the CPU waited in ``cudaStreamSynchronize`` for it;
# otherwise open the trace in Perfetto (https://ui.perfetto.dev) and find both under
# each step.

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    read_trace = tracereader.load(logits_run.trace_path)
    for kept in read_trace.steps:
        inside = (kept.start_ns, kept.end_ns)
        copies = read_trace.where(kind=tracereader.Kind.MEMCPY, contains="DtoH", within=inside)
        waits = read_trace.where(name="cudaStreamSynchronize", within=inside)
        print(f"{kept.name}: {[read_trace.name(i) for i in copies]}, the CPU waited "
              f"{read_trace.dur_ns[waits].sum() / 1e3:,.0f} us in cudaStreamSynchronize")  # fmt: skip

# %%
# What the chapter reads in these recordings
# ------------------------------------------
#
# :doc:`/chapters/part4-kernels` reads the comparison (the largest difference from the
# fp32 reference at each position, and whether each token is the reference's choice)
# and sets the loop's time per token with the host read against its time without.
# The trace shows where that cost comes from: once the CPU waits for each token,
# the GPU in turn waits, after each wait, for the CPU to :term:`launch <launch call>` the
# next token's :term:`graph <CUDA graph>` (``cudaGraphLaunch``, hundreds of µs of CPU
# time), which without the host read runs while the GPU works. On the site, the table of
# this variant's recordings follows, on both GPUs, with its tokens per second.
