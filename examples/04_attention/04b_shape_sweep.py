"""
Every attention version over ten shapes
=======================================

One shape says little about a ranking. This story times causal self-attention,
written out by hand and through each backend of PyTorch's
``scaled_dot_product_attention`` (SDPA), at ten shapes: sequences from 512 to 8192
tokens, each with head dimension 64 and 128. It follows the FlashAttention papers'
setup, so every call holds the same work per token: batch × sequence = 16,384
tokens, and heads × head dimension = 2048, the model's width.

The timing is done without the profiler, with CUDA events around groups of calls:
the profiler's own cost would blur differences of a few percent. The profiler
records only one forward of each version at the last shape, to show which
kernels ran.

This file needs only torch, and ``_04_common.py`` beside it: the versions and
plumbing this set's stories share, which the site's download has pasted in. On a
machine with a CUDA GPU it runs the full sweep of every version at every shape;
on the CPU it runs a tiny sweep of the written-out version and the math backend,
timed with ``time.perf_counter``. Run it::

    python 04b_shape_sweep.py           # this page
    python 04b_shape_sweep.py sweep     # the one variant by name: its table only

It writes the trace to ``traces/04_attention/sweep.json`` and every measured
time to ``traces/04_attention/sweep.timings.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import contextlib
import json
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

# From the code the stories of this set share (``_04_common.py``, beside this file;
# story 04a shows the versions): ``naive_attention``, ``sdpa_attention``, ``_pin`` (a
# version's backend pin), and the plumbing of every story (``story_run``, which makes
# ``run``).
from _04_common import _pin, naive_attention, sdpa_attention, story_run

# %%
# The versions
# ------------
#
# Attention written out in five steps: ``q @ kᵀ`` gives the score matrix of
# shape ``(batch, heads, seq, seq)``; scale it, mask each query's future keys
# with ``-inf``, softmax each row, multiply by ``v``. Each step is its own
# kernel and reads and writes the whole score matrix, which grows with the
# square of the sequence.
#
# The same in one SDPA call. Its backends: ``math`` (the reference, ordinary
# operators in fp32), ``efficient`` (a CUTLASS kernel), ``flash``
# (FlashAttention-2) and ``cudnn``. The three fused ones keep the scores on
# chip, a tile at a time, and never write the score matrix to memory.


# %%
# The sweep
# ---------
#
# Six versions, in ``SWEEP_IMPLS``:
#
# =============  ==========================================================
# ``naive``      the five steps above
# ``math``       SDPA, math backend pinned (fp32 products, no Tensor Cores)
# ``efficient``  SDPA, the CUTLASS kernel pinned
# ``flash``      SDPA, FlashAttention-2 pinned
# ``cudnn``      SDPA, cuDNN's kernel pinned
# ``default``    SDPA with nothing pinned: PyTorch chooses
# =============  ==========================================================
#
# ``_sweep_call`` calls one; ``_pin`` is the backend pin of a version, entered
# once around all its calls so that entering it is never timed: a context manager
# from ``torch.nn.attention.sdpa_kernel`` that allows only the backend named, or,
# for a version with no backend to pin (``naive``, ``default``), a context that
# does nothing.

SWEEP_IMPLS = ("naive", "math", "efficient", "flash", "cudnn", "default")


def _sweep_call(impl, q, k, v):
    return naive_attention(q, k, v) if impl == "naive" else sdpa_attention(q, k, v)


# %%
# ``profile_sweep`` loops over head dimensions and sequence lengths. At each
# shape it sets batch = 16,384 ÷ seq and heads = 2048 ÷ head_dim, builds random
# bf16 inputs, and counts the *useful* work: causal attention needs half of the
# ``4 · batch · heads · seq² · head_dim`` FLOPs of the two full products, since
# the mask makes the other half unnecessary (the naive version computes all of
# it anyway, so its rate is flattered by nothing).
#
# Then, for each version, with its backend pinned: three warm-up calls (cuDNN
# builds and caches its plan for a new shape on the first), then ``groups``
# groups of ``calls`` calls issued back to back, so the GPU never waits for the
# CPU between them, with one pair of CUDA events around each group. Its time at
# that shape is one value per group, per call; the table takes the median
# group. One more call measures its peak extra memory with
# ``torch.cuda.max_memory_allocated``. A version that refuses a shape (a backend
# that does not support it, or memory running out) is recorded with the first
# line of its error, and the sweep goes on.


def profile_sweep(
    out_dir,
    *,
    seqs=(512, 1024, 2048, 4096, 8192),
    head_dims=(64, 128),
    tokens=16384,
    model_dim=2048,
    calls=10,
    groups=5,
    device=None,
):
    # Time each version at each shape; write ``timings.json`` and ``trace.json``.
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    impls = SWEEP_IMPLS
    # On the CPU the GPU backends do not exist: a tiny sweep of two versions.
    if device == "cpu":  # a sweep that finishes in seconds
        impls, seqs, head_dims, tokens, model_dim, calls, groups = (
            ("naive", "math"),
            (64, 128),
            (64,),
            256,
            128,
            3,
            2,
        )
    results = []
    for head_dim in head_dims:
        for seq in seqs:
            # The same tokens per call and the same model width at every shape.
            batch, heads = max(1, tokens // seq), model_dim // head_dim
            torch.manual_seed(0)
            q, k, v = (
                torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
                for _ in range(3)
            )
            flop = 4 * batch * heads * seq * seq * head_dim / 2
            for impl in impls:
                row = {
                    "impl": impl,
                    "seq": seq,
                    "head_dim": head_dim,
                    "batch": batch,
                    "heads": heads,
                    "useful_flop": flop,
                }
                try:
                    with torch.no_grad(), _pin(impl):
                        # Warm-up, untimed: first-call costs (cuDNN's plan for this
                        # shape, the caching allocator's first blocks) are paid here.
                        for _ in range(3):
                            _sweep_call(impl, q, k, v)
                        times_ms = []  # per call, one value per group
                        if device == "cuda":
                            # Start from an idle GPU: nothing queued before the first event.
                            torch.cuda.synchronize()
                            for _ in range(groups):
                                start, end = (
                                    torch.cuda.Event(enable_timing=True) for _ in range(2)
                                )
                                # The events are stamped on the GPU, between the kernels:
                                # their difference is GPU time, whatever the CPU did.
                                start.record()
                                # No synchronize inside the group: the CPU queues the
                                # calls ahead of the GPU, which runs them back to back.
                                for _ in range(calls):
                                    _sweep_call(impl, q, k, v)
                                end.record()
                                # Wait for the end event itself: only then is the
                                # elapsed time between the two known.
                                end.synchronize()
                                times_ms.append(start.elapsed_time(end) / calls)
                            # Peak memory of one more call, beyond what was already held.
                            torch.cuda.synchronize()
                            torch.cuda.reset_peak_memory_stats()
                            base = torch.cuda.memory_allocated()
                            _sweep_call(impl, q, k, v)
                            torch.cuda.synchronize()
                            row["peak_extra_bytes"] = torch.cuda.max_memory_allocated() - base
                        else:
                            # No GPU: time the calls on the CPU's clock instead.
                            import time

                            for _ in range(groups):
                                t0 = time.perf_counter()
                                for _ in range(calls):
                                    _sweep_call(impl, q, k, v)
                                times_ms.append((time.perf_counter() - t0) * 1e3 / calls)
                    row["ms"] = times_ms
                # A pinned backend that cannot run this shape raises: keep its reason.
                except (RuntimeError, torch.OutOfMemoryError) as exc:
                    row["error"] = str(exc).strip().splitlines()[0][:200]
                    if device == "cuda":
                        # Hand the failed call's cached blocks back before the next version.
                        torch.cuda.empty_cache()
                results.append(row)
            # Free this shape's inputs before the next (at 8192, the naive
            # version's score matrix alone is 8 GiB at head_dim 64).
            del q, k, v
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "timings.json").write_text(json.dumps({"sweep": results}))
    # One profiled forward of each version at the last shape, for the trace.
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    # One tensor serves as query, key and value: the trace needs shapes, not values.
    q = torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
    with torch.no_grad(), profile(activities=activities, record_shapes=True) as prof:
        for impl in impls:
            # Each version in a range named after it; one that refuses is skipped.
            with record_function(impl), _pin(impl), contextlib.suppress(RuntimeError):
                _sweep_call(impl, q, q, q)
    prof.export_chrome_trace(str(out_dir / "trace.json"))
    # The table: the median group's time per call, and the useful rate it gives.
    lines = [f"{'version':>10} {'head_dim':>8} {'seq':>6} {'median ms':>10} {'TFLOP/s':>8}"]
    for row in results:
        if "ms" in row:
            ms = sorted(row["ms"])[len(row["ms"]) // 2]
            lines.append(
                f"{row['impl']:>10} {row['head_dim']:>8} {row['seq']:>6} {ms:>10.3f} "
                f"{row['useful_flop'] / (ms * 1e-3) / 1e12:>8.1f}"
            )
        else:
            lines.append(
                f"{row['impl']:>10} {row['head_dim']:>8} {row['seq']:>6}  refused: {row['error']}"
            )
    return "\n".join(lines)


# %%
# The variant
# -----------
#
# One variant, ``sweep``, with the defaults above: five sequence lengths
# (512 to 8192) × two head dimensions (64, 128), 16,384 tokens per call, model
# width 2048, five groups of ten calls per version and shape.

VARIANTS = {"sweep": (profile_sweep, {})}


# %%
# ``run(name)`` runs the variant and says where. The trace lands in
# ``traces/04_attention/sweep.json`` (open it in Perfetto, ui.perfetto.dev),
# every time and memory figure in ``sweep.timings.json``. There is nothing to
# shrink here on the CPU: ``profile_sweep`` picks its own tiny sweep there.
#
# ``sweep.timings.json`` holds one row per version and shape: ``impl``,
# ``seq``, ``head_dim``, ``batch``, ``heads``, ``useful_flop``, and either
# ``ms`` (milliseconds per call, one value per group) with
# ``peak_extra_bytes``, or ``error`` (why the version refused the shape). A
# rate is ``useful_flop / (ms / 1000)``. To say "a beats b" at a shape, ask
# more than the medians: a's *slowest* group should beat b's *fastest*, in
# every run you make, before you call the difference real.

# Run as ``python 04b_shape_sweep.py VARIANT``, this line runs that one variant and stops.
run = story_run(VARIANTS, __name__)

# %%
# The sweep's table
# -----------------
#
# One row per version and shape: the median group's milliseconds per call and
# the useful TFLOP/s. Before reading it, guess: does the ranking at sequence
# 1024 hold at 8192? Which rates grow with the sequence, and which fall?

sweep = run("sweep")
print(sweep.table)

# %%
# On the H200 (PyTorch 2.11) the order was the same at every shape, and each
# version's slowest group beat the next one's fastest: cuDNN, flash, efficient,
# the five steps, math. cuDNN's kernel is the one written for Hopper (``sm90``
# and ``wgmma`` in its name); flash and efficient were written for the A100,
# where the Hugging Face series found flash the fastest. The fused backends'
# rates mostly grow with the sequence and with head dimension 128; the naive
# version's rate falls from sequence 1024 on, as its score matrix, written and
# read at every step, grows with the square of the sequence. ``default`` ran
# cuDNN's op at the profiled shape (PyTorch prefers cuDNN on Hopper) and
# matched pinned cuDNN's time up to sequence 2048, but on the H200 it was
# slower than pinned cuDNN at the longest shapes, in every repeat. The peak memory in ``sweep.timings.json`` tells the
# same story: the fused backends hold the output and a few MiB more, while the
# naive and math versions grow with the sequence.
#
# The trace holds one forward of each version at the last shape (sequence
# 8192, head_dim 128), each inside a range named after the version. Open it
# and find, under ``default``, the ``aten::_scaled_dot_product_…`` op that
# names the backend PyTorch chose; under ``naive``, the five steps' GPU
# operations (twelve at this shape: nine kernels, a copy and two memsets);
# under each fused backend, its one attention kernel. Its times are one
# profiled call each: read them for what ran, and the table for how long.
#
# These are GPU times at workloads large enough to keep the GPU busy. At small
# ones the CPU cost of each call can decide instead: the stories on interleaved
# backends and same-backend streams measure that. :doc:`/chapters/part3` and
# its lab notes read this sweep: rates, ratios and memory per shape.
#
# On your own GPU, run the sweep and read it the same way. If a backend
# refuses a shape, its row says why. If your ranking differs from the H200's,
# look at the kernel names in the trace: a kernel written for your
# architecture tends to win. And before you choose a backend for a model,
# sweep at *its* shapes: tokens per call and head dimension are the two
# settings to change.
