"""MFU exploration for a Llama ~1.24B training step on one H200 (not for the site)."""
import json, os, sys, time, math
import torch, torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

CFG = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
           num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True,
           max_position_embeddings=8192)
PEAK = 989e12

def flops_per_token(model, seq):
    n = sum(p.numel() for p in model.parameters())
    emb = model.model.embed_tokens.weight.numel()
    L, H = CFG["num_hidden_layers"], CFG["hidden_size"]
    return 6 * (n - emb) + 12 * L * H * seq, n, emb

def chunked_ce(hidden, weight, labels, chunk=8192):
    # hidden (N, H) bf16, weight (V, H); sum of CE over chunks, logits never whole
    total = hidden.new_zeros((), dtype=torch.float32)
    for i in range(0, hidden.shape[0], chunk):
        logits = hidden[i:i + chunk] @ weight.t()
        total = total + F.cross_entropy(logits.float(), labels[i:i + chunk], reduction="sum")
    return total / hidden.shape[0]

def run(name, batch, seq, bf16_weights, compile_mode, loss="hf", steps=8, warm=3, ckpt=False):
    torch.manual_seed(0)
    torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
    cfg = LlamaConfig(**CFG)
    cfg._attn_implementation = "sdpa"
    model = LlamaForCausalLM(cfg).cuda()
    if bf16_weights:
        model = model.to(torch.bfloat16)
    if ckpt:
        model.gradient_checkpointing_enable()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    fpt, n, emb = flops_per_token(model, seq)

    def fwd_loss(ids):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=not bf16_weights):
            if loss == "hf":
                return model(input_ids=ids, labels=ids).loss
            h = model.model(input_ids=ids).last_hidden_state
            h = h[:, :-1].reshape(-1, h.shape[-1])
            lab = ids[:, 1:].reshape(-1)
            return chunked_ce(h, model.lm_head.weight, lab)
    step_fn = fwd_loss
    if compile_mode:
        step_fn = torch.compile(fwd_loss, mode=None if compile_mode == "default" else compile_mode)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    t0 = time.perf_counter()
    for i in range(warm):
        l = step_fn(ids); l.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(steps):
        start.record()
        l = step_fn(ids); l.backward(); opt.step(); opt.zero_grad(set_to_none=True)
        end.record(); torch.cuda.synchronize(); times.append(start.elapsed_time(end))
    ms = sorted(times)[len(times) // 2]
    tok_s = batch * seq / (ms / 1e3)
    res = dict(name=name, batch=batch, seq=seq, step_ms=round(ms, 1), min_ms=round(min(times), 1),
               max_ms=round(max(times), 1), tok_s=round(tok_s), mfu=round(tok_s * fpt / PEAK, 4),
               peak_gib=round(torch.cuda.max_memory_allocated() / 2**30, 1), warm_s=round(warm_s, 1),
               params=n, emb=emb)
    print(json.dumps(res), flush=True)
    del model, opt, step_fn
    torch.cuda.empty_cache()
    return res

if __name__ == "__main__":
    plans = {
        "c8_bf16": dict(batch=8, seq=2048, bf16_weights=True, compile_mode="default"),
        "c8_bf16_chunk": dict(batch=8, seq=2048, bf16_weights=True, compile_mode="default", loss="chunk"),
        "c16_bf16_chunk": dict(batch=16, seq=2048, bf16_weights=True, compile_mode="default", loss="chunk"),
        "c4_s4096_bf16_chunk": dict(batch=4, seq=4096, bf16_weights=True, compile_mode="default", loss="chunk"),
        "c2_s8192_bf16_chunk": dict(batch=2, seq=8192, bf16_weights=True, compile_mode="default", loss="chunk"),
        "c16_bf16_chunk_mac": dict(batch=16, seq=2048, bf16_weights=True, compile_mode="max-autotune-no-cudagraphs", loss="chunk"),
        "c8_fp32_chunk": dict(batch=8, seq=2048, bf16_weights=False, compile_mode="default", loss="chunk"),
    }
    names = sys.argv[1:] or list(plans)
    out = []
    for nm in names:
        try:
            out.append(run(nm, **plans[nm]))
        except Exception as e:
            print(json.dumps(dict(name=nm, error=repr(e)[:300])), flush=True)
            torch.cuda.empty_cache()
    json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "mfu.json"), "w"), indent=1)
