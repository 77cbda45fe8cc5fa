"""
An LLM decoding with transformers: from generate() to the bandwidth limit
=========================================================================

DRAFT for Part 4 (issue 13), not yet recorded, so not yet in the gallery: move it
to ``examples/`` when its recordings exist. Tested on the CPU with the ``tiny``
shape only.

A Llama-architecture model from Hugging Face ``transformers``, built from a
config with random bf16 weights (nothing is downloaded): ``1b`` has the shape of
Llama-3.2-1B, ``8b`` that of Llama-3-8B. Greedy decoding, batch 1, a prompt of
``PROMPT`` random tokens. Variants:

* ``generate_*``: ``model.generate()`` with a dynamic or a static KV cache, with
  and without the compile that ``generate()`` applies by itself to a static cache;
* ``loop_*``: the same model driven by a hand-written decode loop over a static
  cache, one compiled step per token (CUDA graphs with ``reduce-overhead``), so
  that nothing of ``generate()`` runs between tokens.

Each variant times decoding without the profiler (``timings.json``: ms per
token of several runs, prefill apart) and then profiles a few tokens. This file
needs torch and ``transformers``. Run it yourself::

    python 05_llm_decode.py --list                      # every variant
    python 05_llm_decode.py --variant loop_compiled_1b  # one named variant

Each run writes its trace to ``traces/05_llm_decode/<name>.json``.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

PROMPT = 128  # prompt tokens
MAX_CACHE = 1024  # static cache length: prompt + every token generated
SHAPES = {
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True),
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False),
    # On the CPU: the same architecture, small enough to run in seconds.
    "tiny": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=64, vocab_size=1024, tie_word_embeddings=False),
}  # fmt: skip


def _transformers():
    try:
        import transformers
    except ImportError:
        raise SystemExit("this example needs Hugging Face transformers: pip install transformers") from None
    return transformers


def build_model(shape, device):
    """A Llama model of the named shape with random bf16 weights, on ``device``."""
    tf = _transformers()
    config = tf.LlamaConfig(**SHAPES[shape], max_position_embeddings=MAX_CACHE, rope_theta=500000.0)
    torch.manual_seed(0)
    with torch.device(device):
        model = tf.LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    return model.eval().requires_grad_(False)


def bytes_per_token(model, position):
    """What one decode step must read from memory at ``position``: every weight it
    multiplies by (the embedding table only for one row) and the KV cache so far."""
    cfg = model.config
    weights = sum(p.numel() * p.element_size() for n, p in model.named_parameters() if "embed_tokens" not in n)
    if cfg.tie_word_embeddings:  # the LM head reads the whole (shared) table
        weights += model.get_input_embeddings().weight.numel() * 2
    weights += cfg.hidden_size * 2  # one embedding row
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * position * 2
    return {"weights": weights, "kv_cache": kv, "total": weights + kv}


SPEC_HBM_TBS = 4.8  # H200 SXM datasheet


def write_results(out_dir, per_token_ms, bytes_per_tok):
    """``results.json``: the headline numbers the recorder keeps in ``meta.json`` under
    ``results`` (median over this repeat's timed runs)."""
    ms = sorted(per_token_ms)[len(per_token_ms) // 2]
    tbs = bytes_per_tok / (ms * 1e-3) / 1e12
    (Path(out_dir) / "results.json").write_text(json.dumps({
        "tokens_per_s": round(1e3 / ms, 2), "ms_per_token": round(ms, 4),
        "bytes_per_token": bytes_per_tok, "achieved_tbs": round(tbs, 3),
        "hbm_fraction_spec": round(tbs / SPEC_HBM_TBS, 4)}))


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def time_decode(generate_n, new_tokens, runs, device):
    """(ms per decoded token, prefill ms), one pair per run: a run producing one token
    (prefill only) timed against one producing ``new_tokens``."""
    per_token, prefill_ms = [], []
    for _ in range(runs):
        _sync(device)
        t0 = time.perf_counter()
        generate_n(1)
        _sync(device)
        t1 = time.perf_counter()
        generate_n(new_tokens)
        _sync(device)
        t2 = time.perf_counter()
        prefill_ms.append((t1 - t0) * 1e3)
        per_token.append(((t2 - t1) - (t1 - t0)) * 1e3 / (new_tokens - 1))
    return per_token, prefill_ms


# %%
# generate(), as most code calls it
# ---------------------------------


def profile_generate(out_dir, *, shape="1b", cache="dynamic", compile=False, new_tokens=64,
                     profiled_tokens=8, runs=3, device=None):
    """Time ``generate()`` (ms per decoded token, prefill apart), then profile one short call."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = build_model(shape, device)
    ids = torch.randint(0, model.config.vocab_size, (1, PROMPT), device=device)
    kw = {"do_sample": False, "pad_token_id": 0}
    if cache == "static":
        kw["cache_implementation"] = "static"
        if not compile:
            kw["disable_compile"] = True

    def gen(n):
        return model.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw)

    for _ in range(2):  # warm up (and compile: generate() compiles a static-cache forward itself)
        tokens = gen(new_tokens)[0, PROMPT:].tolist()
    per_token, prefill_ms = time_decode(gen, new_tokens, runs, device)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "timings.json").write_text(json.dumps({
        "what": "generate(): ms per decoded token and prefill ms, unprofiled", "ms_per_token": per_token,
        "prefill_ms": prefill_ms, "bytes_per_token": bytes_per_token(model, PROMPT + new_tokens // 2),
        "tokens": tokens}))  # greedy: every variant of one shape must produce these
    write_results(out_dir, per_token, bytes_per_token(model, PROMPT + new_tokens // 2)["total"])
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities, record_shapes=True) as prof:
        with record_function("generate"):
            gen(profiled_tokens)
        _sync(device)
    prof.export_chrome_trace(str(out_dir / "trace.json"))
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# A decode loop of our own
# ------------------------
#
# One step feeds the last token and its position, appends to the static cache in
# place and returns the next token, all on the GPU: no host sync per token, and
# with ``mode="reduce-overhead"`` the whole step is one CUDA graph.


def decode_step(model, token, position, cache):
    out = model(input_ids=token, position_ids=position.view(1, 1), cache_position=position,
                past_key_values=cache, use_cache=True)
    return out.logits[:, -1].argmax(dim=-1, keepdim=True)


def prefill(model, ids, cache):
    positions = torch.arange(ids.shape[1], device=ids.device)
    out = model(input_ids=ids, position_ids=positions.view(1, -1), cache_position=positions,
                past_key_values=cache, use_cache=True)
    return out.logits[:, -1].argmax(dim=-1, keepdim=True)


def profile_loop(out_dir, *, shape="1b", mode="reduce-overhead", new_tokens=64, profiled_tokens=8,
                 runs=3, tune_gemv=False, device=None):
    """Time a hand-written static-cache decode loop, then profile a few of its tokens.

    ``tune_gemv=True`` turns on Inductor's coordinate-descent tuning, under which it also
    rewrites each one-row matrix multiply (a GEMV) as a multiply-and-sum that it generates
    and tunes itself instead of calling cuBLAS.
    """
    tf = _transformers()
    if tune_gemv:
        torch._inductor.config.coordinate_descent_tuning = True
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = build_model(shape, device)
    ids = torch.randint(0, model.config.vocab_size, (1, PROMPT), device=device)
    cache = tf.StaticCache(config=model.config, max_cache_len=MAX_CACHE)
    step = decode_step
    if mode is not None:
        torch._dynamo.reset()
        step = torch.compile(decode_step, mode=None if mode == "default" else mode, fullgraph=True)

    def run(n):
        cache.reset()
        token = prefill(model, ids, cache)
        out = [token]
        for i in range(n - 1):
            position = torch.tensor([PROMPT + i], device=device)
            token = step(model, token, position, cache).clone()
            out.append(token)
        return torch.cat(out, dim=1)

    with torch.no_grad():
        for _ in range(2):  # warm up: compile, record the CUDA graph
            tokens = run(new_tokens)[0].tolist()
        per_token, prefill_ms = time_decode(run, new_tokens, runs, device)
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "timings.json").write_text(json.dumps({
            "what": "hand-written loop: ms per decoded token and prefill ms, unprofiled",
            "ms_per_token": per_token, "prefill_ms": prefill_ms,
            "bytes_per_token": bytes_per_token(model, PROMPT + new_tokens // 2), "tokens": tokens}))
        write_results(out_dir, per_token, bytes_per_token(model, PROMPT + new_tokens // 2)["total"])
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
        with profile(activities=activities, record_shapes=True) as prof:
            with record_function("decode"):
                run(profiled_tokens)
            _sync(device)
    prof.export_chrome_trace(str(out_dir / "trace.json"))
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# The variants
# ------------

VARIANTS = {
    "generate_dynamic_1b": (profile_generate, {"shape": "1b"}),
    "generate_static_1b": (profile_generate, {"shape": "1b", "cache": "static"}),
    "generate_static_compiled_1b": (profile_generate, {"shape": "1b", "cache": "static", "compile": True}),
    "loop_eager_1b": (profile_loop, {"shape": "1b", "mode": None}),
    "loop_compiled_1b": (profile_loop, {"shape": "1b"}),
    "generate_static_compiled_8b": (profile_generate, {"shape": "8b", "cache": "static", "compile": True}),
    "loop_compiled_8b": (profile_loop, {"shape": "8b"}),
    "loop_tuned_8b": (profile_loop, {"shape": "8b", "tune_gemv": True}),
}
COLD_VARIANTS = ()


def run(name, *, out_root=Path("traces") / "05_llm_decode"):
    """Profile one variant (on the CPU: the ``tiny`` shape, fewer tokens)."""
    harness, params = VARIANTS[name]
    params = dict(params)
    if not torch.cuda.is_available():
        params.update(shape="tiny", new_tokens=8, profiled_tokens=3, runs=1)
    out_dir = Path(out_root) / name
    table = harness(out_dir, **params)
    trace_path = Path(out_root) / f"{name}.json"
    (out_dir / "trace.json").replace(trace_path)
    for extra in out_dir.iterdir():
        extra.replace(Path(out_root) / f"{name}.{extra.name}")
    out_dir.rmdir()
    print(f"{name}: trace written to {trace_path}")
    return table


def main(argv):
    parser = argparse.ArgumentParser(description="Profile LLM decoding with transformers.")
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="run one named variant")
    args = parser.parse_args(argv)
    if args.list:
        for name, (harness, params) in VARIANTS.items():
            print(f"{name:>28}  {harness.__name__}  {params}")
        return 0
    print(run(args.variant or "generate_dynamic_1b"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
