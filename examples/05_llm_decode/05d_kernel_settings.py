"""
Where the kernels' fixed settings come from
===========================================

The fourth experiment of Part 4. The :term:`kernels <kernel>` of our own in the previous
story :term:`launch <launch call>` with fixed settings: ``gemv_kernel`` with 1,024
columns per step (2,048 for gate/up, the MLP's two input projections in one matrix) and
8 :term:`warps <warp>`, ``attention_kernel`` with 256 keys per step and 8 warps. This
story times each kernel at every setting of a sweep, as a decode step of Llama-3-8B's
shape runs it, next to peers: :term:`cuBLAS` for the :term:`GEMVs <GEMV>`; PyTorch's
:term:`SDPA` (:term:`cuDNN's <cuDNN>` kernel in the H200 recordings) and the attention
as reductions compiled by :term:`Inductor <TorchInductor>`. It profiles one pass of our
kernel at its fixed settings and one of cuBLAS or SDPA.
:doc:`/chapters/part4-kernels` reads the recordings.

On the CPU there is no :term:`Triton` kernel to time: the sweep times and profiles the
peers alone, on the tiny shape. This file needs torch (and Triton, which torch's CUDA
builds ship, on a GPU); the kernels and the code the stories of this set share come
from ``_05_common.py`` beside it, and the site's download of this story has it pasted
in. Run it yourself::

    python 05d_kernel_settings.py                                 # the page below
    python 05d_kernel_settings.py --variant attention_settings_8b  # one sweep, its table

Each run writes its trace to ``traces/05_llm_decode/<name>.json``, and every timing
of the sweep to ``traces/05_llm_decode/<name>.timings.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

# From the code this set's stories share: the GEMV sweep's harness
# (``profile_gemv_settings``), the attention kernel (``attention_kernel``) and the GEMV
# kernel's registered op (``gemv_op``, which compiles both kernels on first use), the
# attention as reductions (``sdpa_reduce_attention``), the sweep's settings and shapes
# (``ATTENTION_SWEEP``, ``SHAPES``, ``SHORT_CACHE``), its timers (``_graph_us`` on the
# GPU, ``_cpu_us`` on the CPU), ``_profile_passes`` (profiles one pass of each kind),
# ``_sweep_table`` (the table a sweep prints), and the plumbing of every story
# (``story_run``: ``run`` and the command line).
from _05_common import (
    ATTENTION_SWEEP,
    SHAPES,
    SHORT_CACHE,
    _cpu_us,
    _graph_us,
    _profile_passes,
    _sweep_table,
    attention_kernel,
    gemv_op,
    profile_gemv_settings,
    sdpa_reduce_attention,
    story_run,
)

# %%
# How a setting is timed
# ----------------------
#
# ``gemv_kernel`` and ``attention_kernel`` launch with fixed settings. The two sweep
# variants below check those settings (the sweeps ran after the loops were first
# recorded with these settings, so they test the choice, not make it): each times its
# kernel at every setting as a decode step runs it, next to the peers a decode step would
# otherwise run, and writes every timing to ``timings.json``. A decode step reads every
# weight once, so no weight may still sit in the GPU's :term:`L2 cache` when its kernel
# starts: each setting runs its launches back to back on different weight matrices or
# :term:`caches <KV cache>` (one per layer for the layers' GEMVs, 4 copies of the
# :term:`LM head`, 128 attention caches), and Triton's own timer
# (``triton.testing.do_bench_cudagraph``) replays those launches as one
# :term:`CUDA graph`. The profiled trace holds one pass at the example's settings and
# one of cuBLAS or SDPA (the reductions are timed, not traced). On the CPU there is no
# Triton kernel to time: the sweep times and profiles the peers alone, on the tiny
# shape.
#
# Why time on different weights each launch? A GEMV of a decoded token reads its weight
# matrix once, from the GPU's memory. Timed in a loop on one matrix, the kernel would
# find the matrix already in the L2 cache after the first launch (the H200's L2 cache
# is large enough to hold a whole weight matrix of one 8B layer, such as the output
# projection's), and look faster than it can ever be in the decode loop. Launches on
# enough different matrices read each from memory, as the loop does. One layer's cache
# is small, so the attention sweep uses more caches than there are layers.
#
# The GEMV sweep
# --------------
#
# ``profile_gemv_settings`` (in the shared code) runs ``gemv_kernel`` at every
# combination of ``GEMV_SWEEP`` (columns per step ``BLOCK_K``, and ``num_warps``) whose
# ``BLOCK_K`` divides the GEMV's columns, on each GEMV of a decode step: q/k/v, the
# output projection, gate/up with the activation, down, and the LM head, against
# cuBLAS (``torch.matmul``; for gate/up, ``F.linear`` then ``silu(gate) * up``). Each
# timing also records its largest error against an fp32 reference.
#
# The attention sweep
# -------------------


# Time ``attention_kernel`` at every setting of ``ATTENTION_SWEEP`` for one query
# token of ``shape`` over a static cache of ``keys`` keys with the keys up to each of
# ``positions`` shown, on ``copies`` different caches, against PyTorch's
# ``scaled_dot_product_attention`` on the packed query and ``sdpa_reduce_attention``
# compiled by Inductor (each peer's time includes copying its output into place).
# ``_decode``: the decode settings a CPU run passes to every variant, unused here.
def profile_attention_settings(
    out_dir, *, shape="8b", keys=SHORT_CACHE, positions=(128, 191), copies=128, device=None,
    **_decode,
):  # fmt: skip
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cfg = SHAPES[shape]
    heads, kv_heads, dim = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    if device != "cuda":
        copies, positions = 2, tuple(min(p, keys - 1) for p in positions)
    torch.manual_seed(0)

    def rand(*size):
        return torch.randn(*size, device=device, dtype=torch.bfloat16)

    caches = [(rand(1, kv_heads, keys, dim), rand(1, kv_heads, keys, dim)) for _ in range(copies)]
    query = rand(1, heads, 1, dim)
    outs = [torch.empty(1, 1, heads, dim, device=device, dtype=torch.bfloat16) for _ in caches]
    packed = query.view(1, kv_heads, heads // kv_heads, dim)
    scale = dim**-0.5
    kernel, reduce = None, sdpa_reduce_attention
    if device == "cuda":
        gemv_op()  # binds triton.language as tl, which the kernel's source names
        import triton

        kernel = triton.jit(attention_kernel)
        reduce = torch.compile(sdpa_reduce_attention, fullgraph=True)
    timed, passes, rows = [], [], []
    for position in positions:
        mask = (torch.arange(keys, device=device) <= position).view(1, 1, 1, keys)
        k0, v0 = (c.float().repeat_interleave(heads // kv_heads, 1) for c in caches[0])
        want = F.scaled_dot_product_attention(query.float(), k0, v0, attn_mask=mask)
        want = want.transpose(1, 2)

        def sdpa(mask=mask):
            for (k, v), out in zip(caches, outs, strict=True):
                att = F.scaled_dot_product_attention(packed, k, v, attn_mask=mask)
                out.view(att.shape).copy_(att)  # att may not be contiguous

        def reductions(mask=mask):
            for (k, v), out in zip(caches, outs, strict=True):
                out.copy_(reduce(None, query, k, v, mask, scaling=scale)[0])

        def ours(block_n, warps, mask=mask):
            for (k, v), out in zip(caches, outs, strict=True):
                kernel[(heads,)](
                    query, k, v, mask, out, scale, KEYS=keys, DIM=dim,
                    GROUP=heads // kv_heads, BLOCK_N=block_n, num_warps=warps,
                )  # fmt: skip

        rec = {"position": position, "bytes": (position + 1) * dim * 2 * kv_heads * 2}
        rec["settings"] = []
        if kernel is not None:
            rec["sdpa_us"] = _graph_us(sdpa, copies)
            rec["inductor_reductions_us"] = _graph_us(reductions, copies)
            for block_n in ATTENTION_SWEEP["BLOCK_N"]:
                for warps in ATTENTION_SWEEP["num_warps"]:
                    ours(block_n, warps)
                    torch.cuda.synchronize()
                    err = (outs[0].float() - want).abs().max().item()
                    us = _graph_us(lambda b=block_n, w=warps: ours(b, w), copies)
                    rec["settings"].append(
                        {"BLOCK_N": block_n, "num_warps": warps, "us": us, "max_abs_err": err}
                    )
            passes.append((f"position {position}", sdpa, lambda o=ours: o(256, 8)))
        else:
            rec["sdpa_us"] = _cpu_us(sdpa, copies)
            rec["inductor_reductions_us"] = _cpu_us(reductions, copies)  # here not compiled
            passes.append((f"position {position}", sdpa, None))
        timed.append(rec)
        peers = {k: rec[f"{k}_us"] for k in ("sdpa", "inductor_reductions")}
        rows.append((f"position {position}", peers, rec["settings"]))
    _profile_passes(out_dir, passes, device)
    shape_info = {"heads": heads, "kv_heads": kv_heads, "dim": dim, "keys": keys, "copies": copies}
    Path(out_dir, "timings.json").write_text(
        json.dumps({"what": "attention_kernel's settings", "shape": shape_info, "positions": timed})
    )
    return _sweep_table(f"attention_kernel's settings on the {shape} shape, µs per launch", rows)


# %%
# The variants
# ------------
#
# ==========================  ===========================================================
# variant                     what it runs
# ==========================  ===========================================================
# ``gemv_settings_8b``        ``gemv_kernel`` at every setting of ``GEMV_SWEEP`` on each
#                             GEMV of the 8B shape, against cuBLAS
# ``attention_settings_8b``   ``attention_kernel`` at every setting of
#                             ``ATTENTION_SWEEP``, against a whole SDPA call
#                             (cuDNN's kernel with the fills and copies around
#                             it) and the reductions
# ==========================  ===========================================================

VARIANTS = {
    "gemv_settings_8b": (profile_gemv_settings, {"shape": "8b"}),
    "attention_settings_8b": (profile_attention_settings, {"shape": "8b"}),
}


# %%
# ``run(name)`` profiles one variant (on the CPU: the tiny shape), moves its trace to
# ``traces/05_llm_decode/NAME.json`` and says where it ran.

run = story_run(VARIANTS, __name__)

# sphinx_gallery_start_ignore
# The site build replays the H200's recordings instead.
run = sys.modules["tracesite"].replayer(run) if "tracesite" in sys.modules else run
# sphinx_gallery_end_ignore

# %%
# The GEMV sweep: its table
# -------------------------
#
# The table is the sweep's own, not the profiler's: per GEMV of a decode step, the peers'
# times, then the five fastest settings of ours with their largest error against fp32.
# Guess first: is one setting fastest for every GEMV? And does any setting of ours beat
# cuBLAS on every GEMV, or only on some shapes? Compare within one GEMV's lines first,
# then across GEMVs: they differ in shape (rows by columns), and so may their best
# settings.

gemv_sweep = run("gemv_settings_8b")
print(gemv_sweep.table)

# %%
# What the chapter reads in these recordings
# ------------------------------------------
#
# :doc:`/chapters/part4-kernels` reads the timings of both sweeps beside the traces of
# the loops that run the kernels: which setting was fastest for each case, by how much,
# and whether the fixed settings the loop uses are among the fastest. On the site, the
# table of these variants' recordings follows: the H200's (the H100 ran no sweep).
