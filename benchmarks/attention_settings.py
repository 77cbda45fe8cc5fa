"""Sweep the launch settings of 05_llm_decode's ``attention_kernel`` on the 8B shape.

Part 4's final decode loop runs one token's attention with one Triton kernel whose
settings are fixed (``BLOCK_N`` keys per step, ``num_warps``), instead of attention
reductions that Inductor tunes afresh in each process. This script is where those fixed
settings come from. It times the kernel at every setting as a decode step runs it, for
the Llama-3-8B shape (32 query heads on 8 key/value heads of 128 dimensions) with a
static cache of 256 keys, with the keys up to position 128 (the first Part 4 decodes) or
191 (one past its last) shown: 128 launches back to back on 128 different caches,
captured in one CUDA graph (68 MB or more of keys and values per pass, against the
H200's 60 MiB of L2 as the device reports it, ``torch.cuda.get_device_properties(0).L2_cache_size``), so that little of a cache is still in L2 when its kernel starts.
The peers, timed the same way, are PyTorch's ``scaled_dot_product_attention`` on the
same packed query (the backend it picks for a boolean mask) and the example's
``sdpa_reduce_attention`` compiled by Inductor (default settings, no coordinate-descent
tuning); each peer's time includes a copy of its output into place, which the kernel
does not need (it writes there directly). Needs a
CUDA GPU and Triton (both come with torch's CUDA builds)::

    python benchmarks/attention_settings.py                  # prints a table per position
    python benchmarks/attention_settings.py --json out.json  # and writes every timing

``benchmarks/attention_settings_h200.json`` holds the run on the H200 that chose the
example's settings.
"""

from __future__ import annotations

import itertools
import json
import math
import sys

from _example_kernel import example_kernel, graph_us, json_arg, stamp

HEADS, KV_HEADS, DIM, KEYS, COPIES = 32, 8, 128, 256, 128
POSITIONS = (128, 191)  # Part 4 decodes positions 128 to 190 of a 256-key cache
BLOCK_N = (16, 32, 64, 128, 256)
WARPS = (1, 2, 4, 8, 16)


def sweep(torch, ns, kernel, position):
    """Every setting's µs per launch, and the peers', with keys 0..position shown."""
    import torch.nn.functional as F

    def rand(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)

    caches = [(rand(1, KV_HEADS, KEYS, DIM), rand(1, KV_HEADS, KEYS, DIM)) for _ in range(COPIES)]
    query = rand(1, HEADS, 1, DIM)
    mask = (torch.arange(KEYS, device="cuda") <= position).view(1, 1, 1, KEYS)
    outs = [
        torch.empty(1, 1, HEADS, DIM, device="cuda", dtype=torch.bfloat16) for _ in range(COPIES)
    ]
    scale = 1 / math.sqrt(DIM)
    key, value = (c.float().repeat_interleave(HEADS // KV_HEADS, 1) for c in caches[0])
    want = F.scaled_dot_product_attention(query.float(), key, value, attn_mask=mask).transpose(1, 2)
    packed = query.view(1, KV_HEADS, HEADS // KV_HEADS, DIM)

    def sdpa():
        for (k, v), out in zip(caches, outs, strict=True):
            out.copy_(
                F.scaled_dot_product_attention(packed, k, v, attn_mask=mask).view(1, 1, HEADS, DIM)
            )

    reduce = torch.compile(ns["sdpa_reduce_attention"], fullgraph=True)

    def reductions():
        for (k, v), out in zip(caches, outs, strict=True):
            out.copy_(reduce(None, query, k, v, mask, scaling=scale)[0])

    rec = {
        "position": position,
        "bytes": (position + 1) * DIM * 2 * KV_HEADS * 2,  # the shown keys and values, bf16
        "sdpa_us": graph_us(torch, sdpa, COPIES),
        "inductor_reductions_us": graph_us(torch, reductions, COPIES),
        "settings": [],
    }
    for block_n, warps in itertools.product(BLOCK_N, WARPS):

        def ours(block_n=block_n, warps=warps):
            for (k, v), out in zip(caches, outs, strict=True):
                kernel[(HEADS,)](
                    query, k, v, mask, out, scale, KEYS=KEYS, DIM=DIM,
                    GROUP=HEADS // KV_HEADS, BLOCK_N=block_n, num_warps=warps,
                )  # fmt: skip

        ours()
        torch.cuda.synchronize()
        err = (outs[0].float() - want).abs().max().item()
        rec["settings"].append(
            {
                "BLOCK_N": block_n,
                "num_warps": warps,
                "us": graph_us(torch, ours, COPIES),
                "max_abs_err": err,
            }
        )
    return rec


def main(argv: list[str] | None = None) -> int:
    json_path = json_arg(__doc__, argv)
    loaded = example_kernel("attention_settings", "attention_kernel")
    if loaded is None:
        return 1
    torch, triton, kernel, ns = loaded
    torch.manual_seed(0)
    out = {
        **stamp(torch, triton),
        "shape": {"heads": HEADS, "kv_heads": KV_HEADS, "dim": DIM, "keys": KEYS, "copies": COPIES},
        "positions": [],
    }
    for position in POSITIONS:
        rec = sweep(torch, ns, kernel, position)
        out["positions"].append(rec)
        nbytes, best = rec["bytes"], min(rec["settings"], key=lambda s: s["us"])
        print(
            f"position {position}: {nbytes / 1e3:,.0f} kB of keys and values; "
            f"SDPA {rec['sdpa_us']:.2f} µs, Inductor's reductions {rec['inductor_reductions_us']:.2f} µs"
        )
        for s in sorted(rec["settings"], key=lambda s: s["us"])[:6]:
            mark = " (fastest)" if s is best else ""
            print(
                f"   BLOCK_N {s['BLOCK_N']:>4}  warps {s['num_warps']}  {s['us']:6.2f} µs  "
                f"{nbytes / s['us'] / 1e6:.2f} TB/s  {rec['sdpa_us'] / s['us']:.2f}x SDPA  "
                f"max error {s['max_abs_err']:.4f}{mark}"
            )
        torch.cuda.empty_cache()
    if json_path:
        json_path.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
