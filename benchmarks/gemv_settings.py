"""Sweep the launch settings of 05_llm_decode's ``gemv_kernel`` on the 8B shape's GEMVs.

Part 4's final decode loop runs every GEMV of a token with one Triton kernel whose
settings are fixed (``BLOCK_K`` columns per step, ``num_warps``), instead of tuned in
each process. This script is where those fixed settings come from. For each GEMV of the
Llama-3-8B shape (q/k/v, output, gate/up with the activation, down, LM head) it times
the kernel at every setting as a decode step runs it: 32 launches back to back on 32
different weight matrices (4 for the LM head), captured in one CUDA graph, so no weight
is still in L2 when its kernel starts. The peer is cuBLAS (``torch.matmul``; for gate/up
``F.linear`` followed by ``silu(gate) * up``) timed the same way. Needs a CUDA GPU and
Triton (both come with torch's CUDA builds)::

    python benchmarks/gemv_settings.py                  # prints a table per GEMV
    python benchmarks/gemv_settings.py --json out.json  # and writes every timing

``benchmarks/gemv_settings_h200.json`` holds the run on the H200 that chose the
example's settings.
"""

from __future__ import annotations

import itertools
import json
import sys

from _example_kernel import example_kernel, graph_us, json_arg, stamp

# name: (weight rows, columns, the kernel computes silu(gate) * up, weight copies)
GEMVS = {
    "qkv": (6144, 4096, False, 32),
    "o": (4096, 4096, False, 32),
    "gate_up": (2 * 14336, 4096, True, 32),
    "down": (4096, 14336, False, 32),
    "lm_head": (128256, 4096, False, 4),
}
BLOCK_K = (512, 1024, 2048, 4096)
WARPS = (2, 4, 8, 16)


def sweep(torch, kernel, rows, cols, silu_mul, copies):
    """Every setting's µs per launch, and cuBLAS's, on one GEMV shape."""
    import torch.nn.functional as F

    weights = [
        torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)
    ]
    x = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    n_out = rows // 2 if silu_mul else rows
    ys = [torch.empty(n_out, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
    want = F.linear(x.float(), weights[0].float())
    if silu_mul:
        want = F.silu(want[:n_out]) * want[n_out:]

    def cublas():
        for w, y in zip(weights, ys, strict=True):
            if silu_mul:
                both = F.linear(x, w)
                torch.mul(F.silu(both[:n_out]), both[n_out:], out=y)
            else:
                torch.matmul(w, x, out=y)

    rec = {"bytes": rows * cols * 2, "cublas_us": graph_us(torch, cublas, copies), "settings": []}
    for block_k, warps in itertools.product(BLOCK_K, WARPS):
        if cols % block_k:
            continue

        def ours(block_k=block_k, warps=warps):
            for w, y in zip(weights, ys, strict=True):
                kernel[(n_out,)](
                    w, x, y, x, 0.0, K=cols, BLOCK_K=block_k, SILU_MUL=silu_mul,
                    NORM=False, RESIDUAL=False, num_warps=warps,
                )  # fmt: skip

        ours()
        torch.cuda.synchronize()
        err = (ys[0].float() - want).abs().max().item()
        rec["settings"].append(
            {
                "BLOCK_K": block_k,
                "num_warps": warps,
                "us": graph_us(torch, ours, copies),
                "max_abs_err": err,
            }
        )
    return rec


def main(argv: list[str] | None = None) -> int:
    json_path = json_arg(__doc__, argv)
    loaded = example_kernel("gemv_settings", "gemv_kernel")
    if loaded is None:
        return 1
    torch, triton, kernel, _ = loaded
    torch.manual_seed(0)
    out = {
        **stamp(torch, triton),
        "gemvs": {},
    }
    for name, shape in GEMVS.items():
        rec = out["gemvs"][name] = sweep(torch, kernel, *shape)
        nbytes, peer = rec["bytes"], rec["cublas_us"]
        best = min(rec["settings"], key=lambda s: s["us"])
        print(
            f"{name}: {nbytes / 1e6:,.0f} MB per matrix; cuBLAS {peer:.2f} µs ({nbytes / peer / 1e6:.2f} TB/s)"
        )
        for s in sorted(rec["settings"], key=lambda s: s["us"])[:5]:
            mark = " (fastest)" if s is best else ""
            print(
                f"   BLOCK_K {s['BLOCK_K']:>5}  warps {s['num_warps']:>2}  {s['us']:7.2f} µs  "
                f"{nbytes / s['us'] / 1e6:.2f} TB/s  {peer / s['us']:.2f}x cuBLAS{mark}"
            )
        torch.cuda.empty_cache()
    if json_path:
        json_path.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
