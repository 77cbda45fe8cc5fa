"""Code the stories of ``05_llm_decode`` share: the model, the timing, the decode loop, the kernels.

Not a story of its own: each story of this set imports what it needs from here, and
the site's download of a story is one file with this code pasted in where it imports
it, so it runs with only torch and ``transformers``. The recordings' code hash reads a
story the same way, as that one file. The functions that swap module globals for one
run (``profile_loop_further``, ``profile_loop_kernels``) live here, beside the loop
whose globals they swap.
"""

import json
import re
import sys
import time
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

PROMPT = 128  # prompt tokens
NEW_TOKENS = 64  # tokens generated per timed run
LONG_CACHE = 1024  # a static cache sized for a long conversation
SHORT_CACHE = 256  # one sized to this run: PROMPT + NEW_TOKENS, rounded up
# The H200 SXM's datasheet bandwidth, TB/s: the site's recordings of this set, on an H200
# and on an H100 alike, keep it as their ``hbm_fraction_spec``'s denominator (the site's
# pages divide the H100's by its own 3.35). What you run goes through ``run_variant``,
# which replaces it by your GPU's (``DATASHEET_TBS``).
SPEC_HBM_TBS = 4.8
# Memory bandwidth in NVIDIA's datasheets and whitepapers, TB/s, by the device name torch
# reports (upper-cased; the first match wins). tracereader's datasheet table holds the same
# rows, with each figure's source.
DATASHEET_TBS = (
    ("A100 SXM 80GB", r"\bA100\b.*SXM.*80GB", 2.039),
    ("A100 SXM 40GB", r"\bA100\b.*SXM", 1.555),
    ("A100 PCIe 80GB", r"\bA100\b.*(80GB.*PCIE|PCIE.*80GB)", 1.935),
    ("A100 PCIe 40GB", r"\bA100\b.*PCIE", 1.555),
    ("A10", r"\bA10$", 0.6),
    ("H100 SXM", r"\bH100\b.*(SXM|80GB HBM3)", 3.35),
    ("H100 PCIe", r"\bH100\b.*PCIE", 2.0),
    ("H100 NVL", r"\bH100\b.*NVL", 3.9),
    ("H200 SXM", r"\bH200\b(?!.*NVL)", 4.8),
    ("H200 NVL", r"\bH200\b.*NVL", 4.8),
    ("B200", r"\bB200\b", 7.7),
    ("L40S", r"\bL40S\b", 0.864),
    ("L40", r"\bL40\b", 0.864),
    ("L4", r"\bL4\b", 0.3),
    ("GeForce RTX 3090", r"\bRTX 3090$", 0.936),
    ("GeForce RTX 4090", r"\bRTX 4090$", 1.008),
    ("GeForce RTX 5090", r"\bRTX 5090$", 1.792),
)
# The memory bandwidth given by hand (``--peak-tbs``, TB/s), which ``judge_bandwidth``
# then divides by instead of the table's row or the measured copy.
PEAK_BY_HAND = {"tbs": None}
SHAPES = {
    "1b": {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
               "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256, "tie_word_embeddings": True},
    "8b": {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
               "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "tie_word_embeddings": False},
    # On the CPU: the same architecture, small enough to run in seconds.
    "tiny": {"hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "tie_word_embeddings": False},
}  # fmt: skip


def _transformers():
    try:
        import transformers
    except ImportError:
        raise SystemExit(
            "05_llm_decode needs Hugging Face transformers: pip install transformers"
        ) from None
    return transformers


def build_model(shape, device):
    """A Llama model of the named shape with random bf16 weights, on ``device``."""
    tf = _transformers()
    config = tf.LlamaConfig(
        **SHAPES[shape], max_position_embeddings=LONG_CACHE, rope_theta=500000.0
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = tf.LlamaForCausalLM._from_config(
            config, dtype=torch.bfloat16, attn_implementation="sdpa"
        )
    return model.eval().requires_grad_(False)


# %%
# What one token must read
# ------------------------
#
# At batch 1 every weight is read once per token, and each layer reads its keys and
# values so far. Nothing can be faster than those bytes over the memory's bandwidth.


def bytes_per_token(model, position):
    """What one decode step must read at ``position``: every weight it multiplies by (of
    the embedding table, one row) and the KV cache so far."""
    cfg = model.config
    params = {id(p): p for p in model.parameters()}  # a tied table counts once
    table = model.get_input_embeddings().weight
    weights = sum(p.numel() * p.element_size() for p in params.values() if p is not table)
    if cfg.tie_word_embeddings:  # the LM head multiplies by the whole shared table
        weights += table.numel() * table.element_size()
    weights += cfg.hidden_size * table.element_size()  # the one embedding row
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * position * 2
    return {"weights": weights, "kv_cache": kv, "total": weights + kv}


def copy_bandwidth_tbs(device, gib=2, runs=20):
    """Device-to-device copy bandwidth (read + write bytes per second), TB/s: a practical
    reference for a kernel that streams memory, not a bound (a kernel that only reads can
    beat it)."""
    if device != "cuda":
        return None
    src = torch.empty(gib << 30, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        dst.copy_(src)
    end.record()
    torch.cuda.synchronize()
    return round(2 * src.numel() * runs / (start.elapsed_time(end) * 1e-3) / 1e12, 3)


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _median(values):
    return sorted(values)[len(values) // 2]


def _compiled_graphs():
    """How many graphs torch.compile has compiled in this process so far."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def time_decode(generate_n, new_tokens, runs, device):
    """(ms per decoded token, prefill ms) per run: a run producing one token (the prefill
    alone) timed against one producing ``new_tokens``."""
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


def write_timings(out_dir, model, generate_n, *, new_tokens, runs, device, compile_s, extra=None):
    """Time decoding (checking that nothing compiles while it is timed) and write
    ``timings.json`` and ``results.json`` (the headline numbers the site's recorder
    keeps); return the greedy tokens of one run."""
    tokens = generate_n(new_tokens)[0].tolist()
    graphs = _compiled_graphs()
    per_token, prefill_ms = time_decode(generate_n, new_tokens, runs, device)
    recompiles = _compiled_graphs() - graphs
    need = bytes_per_token(model, PROMPT + new_tokens // 2)
    copy_tbs = copy_bandwidth_tbs(device)
    ms = _median(per_token)
    tbs = need["total"] / (ms * 1e-3) / 1e12
    results = {
        "tokens_per_s": round(1e3 / ms, 2),
        "ms_per_token": round(ms, 4),
        "bytes_per_token": need["total"],
        "achieved_tbs": round(tbs, 3),
        "hbm_fraction_spec": round(tbs / SPEC_HBM_TBS, 4),
        "copy_tbs": copy_tbs,
        "hbm_fraction_copy": round(tbs / copy_tbs, 4) if copy_tbs else None,
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results))
    (out_dir / "timings.json").write_text(
        json.dumps(
            {
                "what": "ms per decoded token and prefill ms per run, unprofiled",
                "ms_per_token": per_token,
                "prefill_ms": prefill_ms,
                "new_tokens": new_tokens,
                "bytes_per_token": need,
                "compile_s": compile_s,
                "graphs_compiled_while_timed": recompiles,
                "tokens": tokens,
                **(extra or {}),
            }
        )
    )
    return results


def _profile(out_dir, generate_n, tokens, device, *, with_stack=False):
    """Profile one run of ``tokens`` tokens, one profiler step per token (the run calls
    ``mark_token`` after each); write ``trace.json`` and return the table."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    for attempt in range(2):
        try:
            with profile(
                activities=activities,
                schedule=schedule(wait=0, warmup=0, active=tokens + 2),
                record_shapes=True,
                with_stack=with_stack,
            ) as prof:
                with record_function("generate"):
                    generate_n(tokens, mark_token=prof.step)
                _sync(device)
            break
        except UnicodeDecodeError:  # torch's profiler can garble a Python frame's name: again
            if attempt:
                raise
    prof.export_chrome_trace(str(Path(out_dir) / "trace.json"))
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# A decode loop of our own
# ------------------------
#
# One step feeds the last token and its position, appends to the static cache in
# place and returns the next token and position, all on the GPU: no host sync per
# token, and with ``mode="reduce-overhead"`` the whole step is one CUDA graph.


def decode_step(model, token, position, cache):
    out = model(
        input_ids=token,
        position_ids=position.view(1, 1),
        cache_position=position,
        past_key_values=cache,
        use_cache=True,
    )
    return out.logits[:, -1].argmax(dim=-1, keepdim=True), position + 1


def prefill(model, ids, cache):
    positions = torch.arange(ids.shape[1], device=ids.device)
    out = model(
        input_ids=ids,
        position_ids=positions.view(1, -1),
        cache_position=positions,
        past_key_values=cache,
        use_cache=True,
    )
    return out.logits[:, -1].argmax(dim=-1, keepdim=True)


# %%
# Attention on the key/value heads
# --------------------------------
#
# Llama-3 has 8 key/value heads shared by 32 query heads (grouped-query attention).
# transformers copies each key/value head 4 times before calling SDPA when there is a
# mask, and a static cache always has one. For one query token the 4 query heads of a
# group can instead ride as 4 query rows on their shared key/value head: no copy.


def sdpa_packed_gqa(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' SDPA attention, except that one query token's heads are regrouped
    onto the key/value heads (batch, kv_heads, group, head_dim) instead of copying keys
    and values once per query head."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    batch, heads, q_len, dim = query.shape
    kv_heads = key.shape[1]
    if q_len != 1 or kv_heads == heads:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    packed = query.reshape(batch, kv_heads, heads // kv_heads, dim)
    out = F.scaled_dot_product_attention(
        packed, key, value, attn_mask=attention_mask, scale=scaling
    )
    return out.reshape(batch, heads, 1, dim).transpose(1, 2), None


def use_packed_gqa(model):
    """Register ``sdpa_packed_gqa`` with transformers (with SDPA's masks) and switch to it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register("sdpa_packed_gqa", sdpa_packed_gqa)
    AttentionMaskInterface.register("sdpa_packed_gqa", sdpa_mask)
    model.config._attn_implementation = "sdpa_packed_gqa"


# %%
# Fewer, larger GEMVs
# -------------------
#
# q, k and v multiply the same input, and so do gate and up: one matrix each (the
# weights concatenated) reads the input once, in one GEMV per group. Eager PyTorch would
# otherwise launch three or two; Inductor may already merge them into one reduction
# kernel, and then what changes is one contiguous weight per group. The forwards below
# are transformers' Llama forwards with that one change.


def _fused_attention_forward(
    self,
    hidden_states,
    position_embeddings=None,
    attention_mask=None,
    past_key_values=None,
    cache=None,
    **kwargs,
):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    cache = cache if cache is not None else past_key_values
    shape = (*hidden_states.shape[:-1], -1, self.head_dim)
    q, k, v = self.qkv_proj(hidden_states).split(self.qkv_sizes, dim=-1)
    q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
    cos, sin = position_embeddings
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    if cache is not None:
        k, v = cache.update(k, v, self.layer_idx)
    attend = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
    out, weights = attend(
        self, q, k, v, attention_mask, dropout=0.0, scaling=self.scaling, **kwargs
    )
    return self.o_proj(out.reshape(*hidden_states.shape[:-1], -1).contiguous()), weights


def _fused_mlp_forward(self, x):
    gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
    return self.down_proj(self.act_fn(gate) * up)


def _concat(linears):
    fused = torch.nn.Linear(
        linears[0].in_features,
        sum(m.out_features for m in linears),
        bias=False,
        device=linears[0].weight.device,
        dtype=linears[0].weight.dtype,
    )
    fused.weight.copy_(torch.cat([m.weight for m in linears]))
    return fused.requires_grad_(False)


@torch.no_grad()
def fuse_projections(model):
    """Concatenate each layer's q/k/v and gate/up weights into one matrix each."""
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        attn.qkv_sizes = [
            attn.q_proj.out_features,
            attn.k_proj.out_features,
            attn.v_proj.out_features,
        ]
        attn.qkv_proj = _concat([attn.q_proj, attn.k_proj, attn.v_proj])
        del attn.q_proj, attn.k_proj, attn.v_proj
        attn.forward = types.MethodType(_fused_attention_forward, attn)
        mlp.gate_up_proj = _concat([mlp.gate_proj, mlp.up_proj])
        del mlp.gate_proj, mlp.up_proj
        mlp.forward = types.MethodType(_fused_mlp_forward, mlp)


def profile_loop(
    out_dir,
    *,
    shape="1b",
    mode="reduce-overhead",
    cache_len=LONG_CACHE,
    tune_gemv=False,
    packed_gqa=False,
    fused=False,
    new_tokens=NEW_TOKENS,
    profiled_tokens=6,
    runs=3,
    device=None,
):
    """Time the decode loop, then profile a few of its tokens.

    ``tune_gemv=True`` turns on Inductor's coordinate-descent tuning, under which it
    also rewrites each one-row matrix multiply (a GEMV) as a multiply-and-sum that it
    generates and tunes itself, instead of calling cuBLAS. On the CPU the loop runs
    uncompiled.
    """
    tf = _transformers()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = build_model(shape, device)
    ids = torch.randint(0, model.config.vocab_size, (1, PROMPT), device=device)
    extra = {}
    if fused:
        before = model(ids).logits[0, -1].float()
        fuse_projections(model)
        extra["fused_logits_max_abs_diff"] = (
            (model(ids).logits[0, -1].float() - before).abs().max().item()
        )
    if packed_gqa:
        use_packed_gqa(model)
    cache = tf.StaticCache(config=model.config, max_cache_len=cache_len)
    step = decode_step
    if mode is not None and device == "cuda":
        torch._inductor.config.coordinate_descent_tuning = tune_gemv
        step = torch.compile(decode_step, mode=mode, fullgraph=True)

    def gen(n, mark_token=None):
        cache.reset()
        token = prefill(model, ids, cache)
        position = torch.full((1,), PROMPT, device=device)
        out = [token]
        for _ in range(n - 1):
            if mark_token:
                mark_token()
            token, position = step(model, token, position, cache)
            token, position = token.clone(), position.clone()  # a CUDA graph reuses its outputs
            out.append(token)
        return torch.cat(out, dim=1)

    with torch.no_grad():
        start = time.perf_counter()
        gen(new_tokens)  # warm up: compile, record the CUDA graph
        gen(new_tokens)
        _sync(device)
        compile_s = round(time.perf_counter() - start, 2)
        write_timings(
            out_dir,
            model,
            gen,
            new_tokens=new_tokens,
            runs=runs,
            device=device,
            compile_s=compile_s,
            extra=extra,
        )
        return _profile(out_dir, gen, profiled_tokens, device)


# %%
# Two further changes the fused loop's trace points to
# ----------------------------------------------------
#
# Inductor fuses ``silu(gate) * up`` into the down projection's GEMV, so every block of
# that kernel recomputes the activation it needs; and cuDNN's attention kernel costs
# about as much per layer as a small GEMV. ``materialize_act`` computes the activation
# once, in an op Inductor cannot fuse (a custom op), before the down GEMV;
# ``reduce_attention`` writes one token's attention as multiply-and-sum reductions that
# Inductor generates and tunes itself, like the GEMVs.

_OPS = {}


def silu_mul_op():
    """``silu(gate) * up`` as a custom op: Inductor runs it as it is and fuses nothing into it."""
    if "silu_mul" not in _OPS:

        @torch.library.custom_op("llm_decode::silu_mul", mutates_args=())
        def silu_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
            return F.silu(gate) * up

        @silu_mul.register_fake
        def _(gate, up):
            return torch.empty_like(gate)

        _OPS["silu_mul"] = silu_mul
    return _OPS["silu_mul"]


def _materialized_mlp_forward(self, x):
    gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
    return self.down_proj(silu_mul_op()(gate, up))


def sdpa_reduce_attention(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs
):
    """One query token's attention on the key/value heads as two reductions and a softmax,
    for Inductor to generate (other shapes: ``sdpa_packed_gqa``)."""
    batch, heads, q_len, dim = query.shape
    kv_heads = key.shape[1]
    if q_len != 1 or attention_mask is None:
        packed_gqa = _OPS.get("sdpa_packed_gqa", sdpa_packed_gqa)
        return packed_gqa(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    packed = query.reshape(batch, kv_heads, heads // kv_heads, 1, dim).float()
    scores = (packed * key.unsqueeze(2).float()).sum(-1) * scaling  # (batch, kv_heads, group, keys)
    scores = scores.masked_fill(~attention_mask, float("-inf")).softmax(dim=-1)
    out = (scores.unsqueeze(-1) * value.unsqueeze(2).float()).sum(
        -2
    )  # (batch, kv_heads, group, dim)
    return out.to(value.dtype).reshape(batch, heads, 1, dim).transpose(1, 2), None


def profile_loop_further(out_dir, *, materialize_act=False, reduce_attention=False, **loop):
    """``profile_loop`` (its settings in ``loop``) with one or both further changes. They
    swap the fused MLP's forward and the packed attention function for this process's
    run, which is why each of these variants runs in a fresh process."""
    global _fused_mlp_forward, sdpa_packed_gqa
    if materialize_act:
        _fused_mlp_forward = _materialized_mlp_forward
    if reduce_attention:
        _OPS["sdpa_packed_gqa"] = sdpa_packed_gqa
        sdpa_packed_gqa = sdpa_reduce_attention
    return profile_loop(out_dir, **loop)


# %%
# GEMV kernels of our own, their settings fixed
# ---------------------------------------------
#
# The traces of the loops above show two more things. Inductor tunes each GEMV kernel's
# block sizes afresh in every process, so the same projection runs at different speeds
# from one run to the next; and computing the activation once cost four small kernels
# per layer. ``gemv_kernel`` is one Triton kernel for every GEMV of a decoded token: one
# program per output row reads that row of the weight ``BLOCK_K`` columns at a time. With
# ``SILU_MUL`` it reads the gate and the up row together and writes ``silu(gate) * up``,
# so the activation costs no kernel at all. Its settings are fixed: one row per program,
# 8 warps, 1,024 columns per step (2,048 for gate/up), chosen from a sweep of columns per
# step and warps on the H200 (the variant ``gemv_settings_8b``, below).
# ``torch.library.triton_op`` registers it so that ``torch.compile`` puts the kernel
# itself into the CUDA graph. Two more options serve the last variant: ``NORM`` applies
# an RMSNorm to ``x`` on the way in (the sum of squares accumulates in the same loop, and
# the scale, one number, is applied at the end; the norm's weight is folded into ``w``
# beforehand), ``RESIDUAL`` adds the residual stream on the way out. The kernel assumes
# that ``BLOCK_K`` divides the columns, as it does for these shapes; other shapes need
# masked loads.


tl = None  # triton.language, imported by gemv_op on first use (Triton ships with torch's CUDA builds)


def gemv_kernel(
    w,
    x,
    y,
    residual,
    eps,
    K: "tl.constexpr",
    BLOCK_K: "tl.constexpr",
    SILU_MUL: "tl.constexpr",
    NORM: "tl.constexpr",
    RESIDUAL: "tl.constexpr",
):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_K,), tl.float32)
    acc_up = tl.zeros((BLOCK_K,), tl.float32)
    squares = tl.zeros((BLOCK_K,), tl.float32)
    for start in range(0, K, BLOCK_K):
        cols = start + tl.arange(0, BLOCK_K)
        xk = tl.load(x + cols).to(tl.float32)
        if NORM:
            squares += xk * xk
        acc += tl.load(w + row * K + cols).to(tl.float32) * xk
        if SILU_MUL:  # the up row sits as many rows below the gate row as there are programs
            acc_up += tl.load(w + (row + tl.num_programs(0)) * K + cols).to(tl.float32) * xk
    out = tl.sum(acc, axis=0)
    up = tl.sum(acc_up, axis=0)
    if NORM:  # RMSNorm: x * rsqrt(mean(x * x) + eps), its weight already in w
        scale = tl.rsqrt(tl.sum(squares, axis=0) / K + eps)
        out, up = out * scale, up * scale
    if SILU_MUL:
        out = out * tl.sigmoid(out) * up
    if RESIDUAL:
        out += tl.load(residual + row).to(tl.float32)
    tl.store(y + row, out.to(y.dtype.element_ty))


def gemv_op():
    """``llm_decode::gemv(x, weight, silu_mul, rms_norm, residual, eps)``: one row ``x``
    times ``weight`` transposed, with ``gemv_kernel``. ``silu_mul=True`` takes ``weight``
    as gate rows over up rows and returns ``silu(gate) * up``; ``rms_norm=True`` first
    applies an RMSNorm with ``eps`` (and no weight: fold it into ``weight``) to ``x``; a
    ``residual`` is added to the result."""
    if "gemv" not in _OPS:
        global tl
        import triton
        import triton.language as tl
        from torch.library import triton_op, wrap_triton

        kernel = triton.jit(gemv_kernel)

        @triton_op("llm_decode::gemv", mutates_args=())
        def gemv(
            x: torch.Tensor,
            weight: torch.Tensor,
            silu_mul: bool,
            rms_norm: bool,
            residual: torch.Tensor | None,
            eps: float,
        ) -> torch.Tensor:
            rows = weight.shape[0] // 2 if silu_mul else weight.shape[0]
            y = torch.empty((*x.shape[:-1], rows), device=x.device, dtype=x.dtype)
            res = residual.contiguous() if residual is not None else x  # not read unless RESIDUAL
            wrap_triton(kernel)[(rows,)](
                weight,
                x.contiguous(),
                y,
                res,
                eps,
                K=weight.shape[1],
                BLOCK_K=2048 if silu_mul else 1024,
                SILU_MUL=silu_mul,
                NORM=rms_norm,
                RESIDUAL=residual is not None,
                num_warps=8,
            )
            return y

        _OPS["gemv"] = gemv
    return _OPS["gemv"]


class GemvLinear(torch.nn.Linear):
    """A bias-free ``nn.Linear`` that runs one row on the GPU through ``gemv_op`` (the
    prompt's prefill, many rows, keeps ``F.linear``)."""

    def forward(self, x):
        if x.is_cuda and x.numel() == self.in_features:
            return gemv_op()(x, self.weight, False, False, None, 0.0)
        return F.linear(x, self.weight)


def _kernel_mlp_forward(self, x):
    if x.is_cuda and x.numel() == self.gate_up_proj.in_features:
        return self.down_proj(gemv_op()(x, self.gate_up_proj.weight, True, False, None, 0.0))
    gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
    return self.down_proj(F.silu(gate) * up)


def _kernel_layer_forward(
    self,
    hidden_states,
    attention_mask=None,
    position_ids=None,
    past_key_values=None,
    use_cache=False,
    position_embeddings=None,
    cache=None,
    **kwargs,
):
    """transformers' Llama decoder layer, except that for one token on the GPU each RMSNorm
    runs inside the GEMV after it, and each residual add inside the GEMV before it (the
    norms' weights folded into those GEMVs' weights by ``use_gemv_kernels``)."""
    attn, mlp = self.self_attn, self.mlp
    if not (hidden_states.is_cuda and hidden_states.numel() == attn.qkv_proj.in_features):
        given = (
            {"cache": cache} if cache is not None else {"past_key_values": past_key_values}
        )  # as passed
        return type(self).forward(
            self,
            hidden_states,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=use_cache,
            position_embeddings=position_embeddings,
            **given,
            **kwargs,
        )
    cache = cache if cache is not None else past_key_values
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    gemv, norm1, norm2 = gemv_op(), self.input_layernorm, self.post_attention_layernorm
    qkv = gemv(hidden_states, attn.qkv_proj.weight, False, True, None, norm1.variance_epsilon)
    shape = (*hidden_states.shape[:-1], -1, attn.head_dim)
    q, k, v = (t.view(shape).transpose(1, 2) for t in qkv.split(attn.qkv_sizes, dim=-1))
    q, k = apply_rotary_pos_emb(q, k, *position_embeddings)
    if cache is not None:
        k, v = cache.update(k, v, attn.layer_idx)
    attend = ALL_ATTENTION_FUNCTIONS[attn.config._attn_implementation]
    out, _ = attend(attn, q, k, v, attention_mask, dropout=0.0, scaling=attn.scaling, **kwargs)
    out = out.reshape(*hidden_states.shape[:-1], -1)
    hidden_states = gemv(out, attn.o_proj.weight, False, False, hidden_states, 0.0)
    act = gemv(hidden_states, mlp.gate_up_proj.weight, True, True, None, norm2.variance_epsilon)
    return gemv(act, mlp.down_proj.weight, False, False, hidden_states, 0.0)


@torch.no_grad()
def use_gemv_kernels(model, fold_norms=False):
    """Fuse the projections, then run every GEMV of a decoded token (q/k/v, o, the MLP's
    two, the LM head) with ``gemv_kernel``; ``fold_norms`` also moves each layer's RMSNorms
    and residual adds into its GEMVs: each norm's weight multiplies the columns of the
    projection after it, and becomes ones (so that the prompt's prefill, which keeps
    transformers' norms, computes the same). Returns the largest difference this makes to
    one token's logits."""
    token = torch.zeros((1, 1), dtype=torch.long, device=model.device)
    before = model(token).logits.float()
    for layer in model.model.layers:
        layer.self_attn.qkv_proj.__class__ = GemvLinear
        layer.self_attn.o_proj.__class__ = GemvLinear
        layer.mlp.down_proj.__class__ = GemvLinear
        layer.mlp.forward = types.MethodType(_kernel_mlp_forward, layer.mlp)
        if fold_norms:
            for norm, proj in (
                (layer.input_layernorm, layer.self_attn.qkv_proj),
                (layer.post_attention_layernorm, layer.mlp.gate_up_proj),
            ):
                proj.weight.mul_(norm.weight)
                norm.weight.fill_(1)
            layer.forward = types.MethodType(_kernel_layer_forward, layer)
    model.lm_head.__class__ = GemvLinear
    return (model(token).logits.float() - before).abs().max().item()


# %%
# Attention of our own, its settings fixed
# ----------------------------------------
#
# With every GEMV ours, the attention reductions are the largest part of a token that
# Inductor still tunes afresh in every process, and their time changed from one recording
# to the next. ``attention_kernel`` is one Triton kernel for one query token's attention: one
# program per query head reads its key/value head's cache ``BLOCK_N`` keys at a time and
# keeps a running softmax (the largest score so far, the sum of exponentials and the
# weighted sum of values, each rescaled when a larger score arrives), so the scores
# never leave the chip. Keys the mask hides count as minus infinity, and their rows are
# not read. Its settings are fixed as the GEMV kernel's are: 256 keys per step (the whole
# cache of Part 4's runs in one step) and 8 warps, the fastest in a sweep of keys per step
# and warps on the H200 (the variant ``attention_settings_8b``, below).


def attention_kernel(
    q,
    k,
    v,
    mask,
    out,
    scale,
    KEYS: "tl.constexpr",
    DIM: "tl.constexpr",
    GROUP: "tl.constexpr",
    BLOCK_N: "tl.constexpr",
):
    head = tl.program_id(0)
    cache = (head // GROUP) * KEYS * DIM  # this query head's key/value head
    dims = tl.arange(0, DIM)
    query = (tl.load(q + head * DIM + dims).to(tl.float32) * scale).to(
        tl.float32
    )  # scale may be fp64
    top = tl.full((1,), -1e30, tl.float32)  # the largest score so far
    total = tl.zeros((1,), tl.float32)  # the sum of exp(score - top) so far
    acc = tl.zeros((DIM,), tl.float32)  # the sum of exp(score - top) * value so far
    for start in range(0, KEYS, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        shown = (keys < KEYS) & (tl.load(mask + keys, mask=keys < KEYS, other=0) != 0)
        block = cache + keys[:, None] * DIM + dims[None, :]
        scores = tl.sum(
            tl.load(k + block, mask=shown[:, None], other=0.0).to(tl.float32) * query[None, :],
            axis=1,
        )
        scores = tl.where(shown, scores, float("-inf"))
        new_top = tl.maximum(top, tl.max(scores, axis=0))
        weights = tl.exp(scores - new_top)
        rescale = tl.exp(top - new_top)
        values = tl.load(v + block, mask=shown[:, None], other=0.0).to(tl.float32)
        acc = acc * rescale + tl.sum(weights[:, None] * values, axis=0)
        total = total * rescale + tl.sum(weights, axis=0)
        top = new_top
    tl.store(out + head * DIM + dims, (acc / total).to(out.dtype.element_ty))


def attention_op():
    """``llm_decode::attention(query, key, value, mask, scale)``: one query token's
    attention (``query`` of shape (1, heads, 1, dim), ``key`` and ``value`` the cache of
    shape (1, kv_heads, keys, dim), ``mask`` True where a key is shown) with
    ``attention_kernel``; returns shape (1, 1, heads, dim)."""
    if "attention" not in _OPS:
        gemv_op()  # imports triton.language as tl
        import triton
        from torch.library import triton_op, wrap_triton

        kernel = triton.jit(attention_kernel)

        @triton_op("llm_decode::attention", mutates_args=())
        def attention(
            query: torch.Tensor,
            key: torch.Tensor,
            value: torch.Tensor,
            mask: torch.Tensor,
            scale: float,
        ) -> torch.Tensor:
            _, heads, _, dim = query.shape
            kv_heads, keys = key.shape[1], key.shape[2]
            out = torch.empty((1, 1, heads, dim), device=query.device, dtype=query.dtype)
            wrap_triton(kernel)[(heads,)](
                query.contiguous(),
                key.contiguous(),
                value.contiguous(),
                mask.reshape(-1).contiguous(),
                out,
                scale,
                KEYS=keys,
                DIM=dim,
                GROUP=heads // kv_heads,
                BLOCK_N=256,
                num_warps=8,
            )
            return out

        _OPS["attention"] = attention
    return _OPS["attention"]


def sdpa_kernel_attention(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs
):
    """One query token's attention with ``attention_op`` (other shapes: ``sdpa_packed_gqa``)."""
    if (
        not query.is_cuda
        or query.shape[0] != 1
        or query.shape[2] != 1
        or attention_mask is None
        or attention_mask.dtype != torch.bool
        or attention_mask.numel() != key.shape[2]
    ):
        packed_gqa = _OPS.get("sdpa_packed_gqa", sdpa_packed_gqa)
        return packed_gqa(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    return attention_op()(query, key, value, attention_mask, scaling), None


def profile_loop_kernels(out_dir, *, attention="sdpa", fold_norms=False, **loop):
    """``profile_loop`` with fused projections (its settings in ``loop``) whose GEMVs
    all run ``gemv_kernel``. One token's attention runs as ``attention`` says: ``"sdpa"``
    (``sdpa_packed_gqa``), ``"reductions"`` (``sdpa_reduce_attention``) or ``"kernel"``
    (``sdpa_kernel_attention``); ``fold_norms`` as in ``use_gemv_kernels``. It swaps
    module functions for the run and puts them back after it."""
    global fuse_projections, sdpa_packed_gqa
    fuse, packed, diff = fuse_projections, _OPS.setdefault("sdpa_packed_gqa", sdpa_packed_gqa), {}
    attend = {"sdpa": packed, "reductions": sdpa_reduce_attention, "kernel": sdpa_kernel_attention}

    def fuse_and_use_kernels(model):
        fuse(model)
        diff["kernel_logits_max_abs_diff"] = use_gemv_kernels(model, fold_norms=fold_norms)

    fuse_projections, sdpa_packed_gqa = fuse_and_use_kernels, attend[attention]
    if attention == "kernel" and torch.cuda.is_available():
        attention_op()  # defined before torch.compile traces a call to it (it cannot trace triton.jit)
    try:
        table = profile_loop(out_dir, fused=True, **loop)
    finally:
        fuse_projections, sdpa_packed_gqa = fuse, packed
    timings = Path(out_dir) / "timings.json"
    timings.write_text(json.dumps({**json.loads(timings.read_text()), **diff}))
    return table


# %%
# The kernels' settings swept (the story 05d_kernel_settings runs these)
# -----------------------------------------------------------------------


#: Columns per step and warps ``profile_gemv_settings`` tries; the example runs 1,024
#: (2,048 for gate/up) and 8.
GEMV_SWEEP = {"BLOCK_K": (512, 1024, 2048, 4096), "num_warps": (2, 4, 8, 16)}
#: Keys per step and warps ``profile_attention_settings`` tries; the example runs 256 and 8.
ATTENTION_SWEEP = {"BLOCK_N": (16, 32, 64, 128, 256), "num_warps": (1, 2, 4, 8, 16)}


def _graph_us(launch, per_launch):
    """Median µs per kernel of ``launch`` (which launches ``per_launch`` kernels), replayed
    as a CUDA graph by Triton's timer (it needs a stream other than the default one)."""
    import triton.testing

    with torch.cuda.stream(torch.cuda.Stream()):
        ms = triton.testing.do_bench_cudagraph(launch, rep=20, return_mode="median")
    return ms * 1e3 / per_launch


def _cpu_us(launch, per_launch, runs=5):
    """Median µs per kernel of ``launch`` on the CPU, timed by the wall clock."""
    launch()  # the first call pays one-time costs
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        launch()
        times.append((time.perf_counter() - start) * 1e6 / per_launch)
    return sorted(times)[runs // 2]


def _sweep_table(title, rows):
    """The text a sweep prints: its fastest settings first, per case."""
    lines = [title]
    for case, peers, settings in rows:
        lines.append(f"{case}: " + ", ".join(f"{k} {v:.2f} µs" for k, v in peers.items()))
        for t in sorted(settings, key=lambda t: t["us"])[:5]:
            knobs = "  ".join(f"{k} {v:>5}" for k, v in t.items() if k not in ("us", "max_abs_err"))
            lines.append(f"   {knobs}  {t['us']:7.2f} µs  max error {t['max_abs_err']:.4f}")
    return "\n".join(lines)


def profile_gemv_settings(out_dir, *, shape="8b", lm_head_copies=4, device=None, **_decode):
    """Time ``gemv_kernel`` at every setting of ``GEMV_SWEEP`` on each GEMV of ``shape``
    (q/k/v, output, gate/up with the activation, down: one weight per layer; the LM head:
    ``lm_head_copies`` weights), against cuBLAS (``torch.matmul``; for gate/up ``F.linear``
    and ``silu(gate) * up``). ``_decode``: the decode settings a CPU run passes to every
    variant, unused here."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cfg = SHAPES[shape]
    hidden, layers, inner = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    q_rows = cfg["num_attention_heads"] * cfg["head_dim"]
    kv_rows = cfg["num_key_value_heads"] * cfg["head_dim"]
    # name: (weight rows, columns, computes silu(gate) * up, how many weights)
    gemvs = {
        "qkv": (q_rows + 2 * kv_rows, hidden, False, layers),
        "o": (hidden, q_rows, False, layers),
        "gate_up": (2 * inner, hidden, True, layers),
        "down": (hidden, inner, False, layers),
        "lm_head": (cfg["vocab_size"], hidden, False, lm_head_copies),
    }
    torch.manual_seed(0)
    kernel = None
    if device == "cuda":
        gemv_op()  # binds triton.language as tl, which the kernel's source names
        import triton

        kernel = triton.jit(gemv_kernel)
    timed, passes, rows = {}, [], []
    for name, (n_rows, cols, silu_mul, copies) in gemvs.items():
        weights = [
            torch.randn(n_rows, cols, device=device, dtype=torch.bfloat16) * 0.02
            for _ in range(copies)
        ]
        x = torch.randn(cols, device=device, dtype=torch.bfloat16)
        n_out = n_rows // 2 if silu_mul else n_rows
        ys = [torch.empty(n_out, device=device, dtype=torch.bfloat16) for _ in range(copies)]
        want = F.linear(x.float(), weights[0].float())
        if silu_mul:
            want = F.silu(want[:n_out]) * want[n_out:]

        def cublas(weights=weights, x=x, ys=ys, silu_mul=silu_mul, n_out=n_out):
            for w, y in zip(weights, ys, strict=True):
                if silu_mul:
                    both = F.linear(x, w)
                    torch.mul(F.silu(both[:n_out]), both[n_out:], out=y)
                else:
                    torch.matmul(w, x, out=y)

        def ours(block_k, warps, weights=weights, x=x, ys=ys, silu_mul=silu_mul, cols=cols):
            for w, y in zip(weights, ys, strict=True):
                kernel[(len(y),)](
                    w, x, y, x, 0.0, K=cols, BLOCK_K=block_k, SILU_MUL=silu_mul,
                    NORM=False, RESIDUAL=False, num_warps=warps,
                )  # fmt: skip

        rec = {"rows": n_rows, "cols": cols, "copies": copies, "bytes": n_rows * cols * 2}
        rec["settings"] = []
        if kernel is not None:
            rec["cublas_us"] = _graph_us(cublas, copies)
            for block_k in GEMV_SWEEP["BLOCK_K"]:
                for warps in GEMV_SWEEP["num_warps"]:
                    if cols % block_k:  # the kernel reads whole steps of BLOCK_K columns
                        continue
                    ours(block_k, warps)
                    torch.cuda.synchronize()
                    err = (ys[0].float() - want).abs().max().item()
                    us = _graph_us(lambda b=block_k, w=warps: ours(b, w), copies)
                    rec["settings"].append(
                        {"BLOCK_K": block_k, "num_warps": warps, "us": us, "max_abs_err": err}
                    )
            fixed = 2048 if silu_mul else 1024  # what gemv_op launches
            passes.append((name, cublas, lambda f=fixed, o=ours: o(f, 8)))
        else:
            rec["cublas_us"] = _cpu_us(cublas, copies)
            passes.append((name, cublas, None))
        timed[name] = rec
        rows.append((name, {"cuBLAS": rec["cublas_us"]}, rec["settings"]))
    _profile_passes(out_dir, passes, device)
    Path(out_dir, "timings.json").write_text(
        json.dumps({"what": "gemv_kernel's settings", "gemvs": timed})
    )
    return _sweep_table(f"gemv_kernel's settings on the {shape} shape, µs per launch", rows)


def _profile_passes(out_dir, passes, device):
    """Profile one pass of each peer and of each kernel at the example's settings, each
    inside a label of its own (``gate_up cuBLAS``, ``gate_up ours``), into ``trace.json``."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with profile(activities=activities) as prof:
        for name, peer, ours in passes:
            with record_function(f"{name} peer"):
                peer()
            if ours is not None:
                with record_function(f"{name} ours"):
                    ours()
        _sync(device)
    prof.export_chrome_trace(str(out_dir / "trace.json"))


# %%
# The final loop with its logits (the story 05e_logits_check runs these)
# ---------------------------------------------------------------------


def decode_step_logits(model, token, position, cache):
    """``decode_step``, also returning the logits of the position it decoded."""
    out = model(
        input_ids=token,
        position_ids=position.view(1, 1),
        cache_position=position,
        past_key_values=cache,
        use_cache=True,
    )
    logits = out.logits[:, -1]
    return logits.argmax(dim=-1, keepdim=True), position + 1, logits


def use_kernel_attention(model):
    """What ``profile_loop_kernels(attention="kernel")`` sets up: ``sdpa_kernel_attention``
    registered under the packed attention's name."""
    from transformers import AttentionInterface

    use_packed_gqa(model)
    AttentionInterface.register("sdpa_packed_gqa", sdpa_kernel_attention)
    if torch.cuda.is_available():
        attention_op()  # defined before torch.compile traces a call to it


def compare_logits(logits, reference, tokens):
    """Per row: the largest absolute difference from ``reference``, the relative error
    (the difference's norm over the reference's), whether ``tokens`` is the reference's
    argmax, and the reference's margin of its argmax over ``tokens`` (0 where they agree)."""
    diff = (logits - reference).float()
    picked = reference.gather(1, tokens.view(-1, 1)).squeeze(1)

    def four(t):  # four significant digits
        return [float(f"{x:.4g}") for x in t.tolist()]

    return {
        "max_abs_diff": four(diff.abs().amax(dim=1)),
        "rel_err": four(diff.norm(dim=1) / reference.norm(dim=1)),
        "argmax_agrees": (reference.argmax(dim=1) == tokens).tolist(),
        "ref_gap": four(reference.amax(dim=1) - picked),
    }


# %%
# The plumbing every story of this set shares
# -------------------------------------------
#
# ``run_variant`` profiles one variant of a story's ``VARIANTS``, on the CPU with the
# tiny shape and a few tokens, moves what the run wrote to
# ``traces/05_llm_decode/NAME.*``, says where it ran and how much of the GPU's memory
# bandwidth it reached (``judge_bandwidth``). ``command_line`` is a story's
# ``--variant NAME`` flag, and ``--peak-tbs X`` for a bandwidth you give. ``story_run``
# gives a story both in one line: its ``run(name)``, and its command line when it runs as
# a script with flags.


def judge_bandwidth(results_path, device_name, peak_tbs=None):
    """Rewrite ``results.json`` so that ``hbm_fraction_spec`` divides by this GPU's memory
    bandwidth, and return one line that says which denominators it used. The bandwidth,
    first found of: ``peak_tbs`` (default ``PEAK_BY_HAND``, what ``--peak-tbs`` gave), this
    GPU's row of ``DATASHEET_TBS``, the device-to-device copy bandwidth the run measured
    (``copy_tbs``); None with none. ``results.json`` names it: ``spec_source`` (``"flag"``,
    ``"datasheet"``, ``"measured copy"`` or None), ``spec_gpu``, ``spec_hbm_tbs``."""
    results = json.loads(Path(results_path).read_text())
    tbs = results.get("achieved_tbs")
    if tbs is None:
        return None
    peak_tbs = peak_tbs or PEAK_BY_HAND["tbs"]
    name = device_name.strip().upper()
    row = next((r for r in DATASHEET_TBS if re.search(r[1], name)), None)
    copy = results.get("copy_tbs")
    if peak_tbs:
        source, gpu, spec = "flag", device_name, peak_tbs
        what = f"the {spec} TB/s given by --peak-tbs for {device_name}"
    elif row:
        source, gpu, spec = "datasheet", row[0], row[2]
        what = f"the {spec} TB/s in the {gpu} datasheet"
    elif copy:
        source, gpu, spec = "measured copy", device_name, copy
        what = (
            f"the {spec} TB/s a device-to-device copy reached on {device_name}, measured: "
            "no datasheet figure for it in this script (give one with --peak-tbs)"
        )
    else:
        source = gpu = spec = None
        what = f"no peak bandwidth known for {device_name} (give one with --peak-tbs)"
    results["spec_source"], results["spec_gpu"], results["spec_hbm_tbs"] = source, gpu, spec
    results["hbm_fraction_spec"] = round(tbs / spec, 4) if spec else None
    Path(results_path).write_text(json.dumps(results))
    judged = f"{results['hbm_fraction_spec']:.3f} of {what}" if spec else what
    copied = (
        f", {tbs / copy:.3f} of the {copy} TB/s a copy reached on it"
        if copy and source != "measured copy"
        else ""
    )
    return f"{tbs} TB/s achieved: {judged}{copied}"


def run_variant(variants, name, out_root=Path("traces") / "05_llm_decode"):
    harness, params = variants[name]
    params = dict(params)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        params.update(shape="tiny", new_tokens=8, profiled_tokens=3, runs=1)
        if params.get("with_stack"):  # some CPU builds of torch fail now and then to decode
            params["with_stack"] = False  # the Python frames' names (UnicodeDecodeError)
    out_dir = Path(out_root) / name
    table = harness(out_dir, device=device, **params)
    trace_path = (out_dir / "trace.json").replace(Path(out_root) / f"{name}.json")
    for extra in out_dir.iterdir():  # timings.json, results.json
        extra.replace(Path(out_root) / f"{name}.{extra.name}")
    out_dir.rmdir()
    if device == "cuda":
        where = f"live on {torch.cuda.get_device_name(0)}"
    else:
        where = (
            "on the CPU with the tiny shape, uncompiled: no CUDA device here, so the "
            "profiler recorded CPU activity only and the trace has no GPU lane"
        )
    print(f"{name}: profiled {where}; trace written to {trace_path}")
    results = Path(out_root) / f"{name}.results.json"
    if results.exists():  # on the CPU too: its results.json then names no denominator
        gpu = torch.cuda.get_device_name(0) if device == "cuda" else "the CPU"
        judged = judge_bandwidth(results, gpu)
        if judged:
            print(f"{name}: {judged}")
    return types.SimpleNamespace(name=name, table=table, trace_path=trace_path)


def command_line(variants, run, argv):
    """``--variant NAME [--peak-tbs X]``: profile that variant and print its table.
    ``--peak-tbs``: your GPU's memory bandwidth in TB/s, which ``hbm_fraction_spec`` then
    divides by instead of the table's row (``judge_bandwidth``)."""
    pairs = list(zip(argv[::2], argv[1::2], strict=False))
    flags = dict(pairs)
    try:
        peak = float(flags["--peak-tbs"]) if "--peak-tbs" in flags else None
    except ValueError:
        peak = float("nan")
    if (
        len(argv) % 2
        or len(flags) != len(pairs)
        or not set(flags) <= {"--variant", "--peak-tbs"}
        or flags.get("--variant") not in variants
        or (peak is not None and not 0 < peak < float("inf"))
    ):
        print(
            f"usage: --variant NAME [--peak-tbs X] (NAME one of {', '.join(variants)}; "
            "X your GPU's memory bandwidth in TB/s)",
            file=sys.stderr,
        )
        return 2
    PEAK_BY_HAND["tbs"] = peak
    try:
        print(run(flags["--variant"]).table)
    finally:
        PEAK_BY_HAND["tbs"] = None
    return 0


def story_run(variants, module_name):
    """A story's ``run(name)``: ``run_variant`` on its ``variants``. Run as a script with
    flags (``module_name``, the story's ``__name__``, is ``"__main__"``), the story ends here:
    ``command_line`` profiles the variant the flags name, prints its table and exits."""

    def run(name):
        return run_variant(variants, name)

    if module_name == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
        sys.exit(command_line(variants, run, sys.argv[1:]))
    return run
