"""
Every attention version over ten shapes
=======================================

One shape says little about a ranking. This story (one of this site's example pages: a
script that profiles, and text that reads what it recorded) times causal self-attention,
in which each token looks only at itself and the tokens before it. It times it written
out by hand and through each backend of PyTorch's ``scaled_dot_product_attention``
(:term:`SDPA`), at ten shapes: sequences from 512 to 8192 tokens, each with head
dimension 64 and 128. Like the FlashAttention-2 paper's benchmarks, every call holds the
same number of tokens, batch × sequence = 16,384, and the same model width, heads × head
dimension = 2048. The inputs are bf16 (bfloat16, a 16-bit floating-point format).

The timing is done without the profiler, with :term:`CUDA events <CUDA event>` (markers
the GPU stamps with its own clock when it reaches them) around groups of calls: the
profiler's own cost would blur differences of a few percent. The profiler records only
one forward of each version at the last shape, to show which :term:`kernels <kernel>` ran.

This file needs only torch, and ``_04_common.py`` beside it: the versions and plumbing
that this set's stories share, which the site's download has pasted in. On a machine
with a CUDA GPU it runs the full sweep of every version at every shape; on the CPU it
runs a tiny sweep of the written-out version and the math backend, timed with
``time.perf_counter``. Run it::

    python 04b_shape_sweep.py           # this page
    python 04b_shape_sweep.py sweep     # the one variant by name: its table only

It writes the trace to ``traces/04_attention/sweep.json`` and every measured time to
``traces/04_attention/sweep.timings.json``.
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
# Attention written out in five steps: ``q @ kᵀ`` gives the score matrix of shape
# ``(batch, heads, seq, seq)``; scale it, mask each query's future keys with ``-inf``,
# softmax each row, multiply by ``v``. Each step is its own
# :term:`PyTorch operator <aten>`, with one or more GPU operations of its own, and each
# step writes or reads the whole score matrix, which grows with the square of the
# sequence.
#
# The same in one SDPA call, which runs one of several *backends*: ``math`` (the
# reference, ordinary operators in fp32), ``efficient`` (a :term:`CUTLASS` kernel),
# ``flash`` (FlashAttention-2, from the paper of that name) and ``cudnn``
# (:term:`cuDNN`'s kernel). These last three are *fused*: one kernel does all five
# steps, a :term:`tile` of scores at a time in the GPU's on-chip :term:`shared memory`,
# and never writes the score matrix to the GPU's main memory. Left alone, PyTorch picks
# the backend; to *pin* one is to allow only it, with the context manager
# ``torch.nn.attention.sdpa_kernel``.

# %%
# The sweep
# ---------
#
# Six versions, in ``SWEEP_IMPLS``, which each shape runs in this order:
#
# =============  ==========================================================
# ``naive``      the five steps above
# ``math``       SDPA, math backend pinned (fp32 products, no :term:`Tensor Cores`)
# ``efficient``  SDPA, the CUTLASS kernel pinned
# ``flash``      SDPA, FlashAttention-2 pinned
# ``cudnn``      SDPA, cuDNN's kernel pinned
# ``default``    SDPA with nothing pinned: PyTorch chooses
# =============  ==========================================================
#
# ``_sweep_call`` calls one; ``_pin`` gives its pin, entered once around all its calls
# so that entering it is never timed (``naive`` and ``default`` pin nothing).

SWEEP_IMPLS = ("naive", "math", "efficient", "flash", "cudnn", "default")


def _sweep_call(impl, q, k, v):
    return naive_attention(q, k, v) if impl == "naive" else sdpa_attention(q, k, v)


# %%
# ``profile_sweep`` loops over head dimensions and sequence lengths. At each shape it
# sets batch = 16,384 ÷ seq and heads = 2048 ÷ head_dim, builds random bf16 inputs, and
# counts the *useful* work: causal attention needs half of the
# ``4 · batch · heads · seq² · head_dim`` FLOPs of the two full products, since the mask
# makes the other half unnecessary. Every rate on this page divides that useful work by
# the time. The naive and math versions multiply the full matrices anyway, so their
# rates count only half of the products they run.
#
# Then, for each version, with its backend pinned: three :term:`warm-up` calls (on the
# first, cuDNN builds and caches its execution plan for the new shape, and PyTorch's
# caching allocator, which keeps freed GPU memory for reuse, gets its first blocks),
# then groups of calls (``groups`` = 5 groups of ``calls`` = 10 calls) issued back to
# back, so the GPU never waits for the CPU between them, with one pair of CUDA events
# around each group. Its time at that shape is one value per group, per call; the table
# takes the median group. One more call measures its peak extra memory with
# ``torch.cuda.max_memory_allocated``. A version that refuses a shape (a backend that
# does not support it, or memory running out) is recorded with the first line of its
# error, and the sweep goes on.


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
# One variant, ``sweep``, with the defaults above: 10 shapes, 5 groups of 10 calls each.
# ``run(name)`` runs it and says where: the trace lands in
# ``traces/04_attention/sweep.json``, every time and memory figure in
# ``sweep.timings.json`` (on the CPU, ``profile_sweep`` picks its own tiny sweep).
#
# ``sweep.timings.json`` holds one row per version and shape: ``impl``, ``seq``,
# ``head_dim``, ``batch``, ``heads``, ``useful_flop``, and either ``ms`` (milliseconds
# per call, one value per group) with ``peak_extra_bytes``, or ``error`` (why the
# version refused the shape). A rate is ``useful_flop / (ms / 1000)``. To say "a beats
# b" at a shape, ask more than the medians: a's *slowest* group should beat b's
# *fastest*, in every run you make and with their order swapped too (this sweep never
# swaps it), before you call the difference real.

VARIANTS = {"sweep": (profile_sweep, {})}

# Run as ``python 04b_shape_sweep.py VARIANT``, this line runs that one variant and stops.
run = story_run(VARIANTS, __name__)

# %%
# The sweep's table
# -----------------
#
# One row per version and shape: the median group's milliseconds per call and the useful
# TFLOP/s. Before reading it, guess: does the ranking at sequence 1024 hold at 8192?
# Which rates grow with the sequence, and which fall?

sweep = run("sweep")
print(sweep.table)

# %%
# In this table the order is the same at every shape: cuDNN, flash, efficient, the five
# steps, math. The fused backends' rates mostly grow with the sequence and with head
# dimension 128; the naive version's rate falls from sequence 1024 on, though with the
# tokens per call fixed its score matrix grows only as fast as its work (both in
# proportion to the sequence): so its kernels spend longer on each score (the trace,
# below, points at its softmax). A median hides the spread, so the cell below reads
# ``sweep.timings.json`` and prints, per shape: whether each version in that order had
# its slowest group faster than the next one's fastest (``ranking held``); ``default``'s
# median time over pinned cuDNN's, and whether every ``default`` group was slower than
# every cuDNN group; the peak extra memory of one call of the naive, math and cuDNN
# versions, in MiB; then cuDNN's and ``default``'s groups at the last shape, in the
# order they ran.

# Locally the timings lie beside the trace, as ``sweep.timings.json``; in the site's
# recordings, as ``timings.json`` in the trace's folder.
traced_at = Path(sweep.trace_path)
sweep_rows = []
for timings_path in (traced_at.with_suffix(".timings.json"), traced_at.parent / "timings.json"):
    if timings_path.exists():
        sweep_rows = json.loads(timings_path.read_text())["sweep"]
        break
timed = {(r["impl"], r["head_dim"], r["seq"]): r for r in sweep_rows if "ms" in r}
print("head_dim   seq  ranking held  default/cudnn  default slower   MiB: naive    math   cudnn")
for dim, length in sorted({(d, s) for _, d, s in timed}):
    at = {impl: row for (impl, d, s), row in timed.items() if (d, s) == (dim, length)}
    ranked = [at[i]["ms"] for i in ("cudnn", "flash", "efficient", "naive", "math") if i in at]
    held = "yes" if all(max(a) < min(b) for a, b in zip(ranked, ranked[1:], strict=False)) else "no"
    d, c = (at[i]["ms"] if i in at else None for i in ("default", "cudnn"))
    ratio = f"{sorted(d)[len(d) // 2] / sorted(c)[len(c) // 2]:.2f}" if d and c else "-"
    slower = ("yes" if min(d) > max(c) else "no") if d and c else "-"
    mib = [f"{at[i]['peak_extra_bytes'] / 2**20:,.0f}" if "peak_extra_bytes" in at.get(i, {}) else "-"
           for i in ("naive", "math", "cudnn")]  # fmt: skip
    print(f"{dim:>8} {length:>5} {held:>13} {ratio:>14} {slower:>15} {'':>5}"
          + "".join(f"{m:>8}" for m in mib))  # fmt: skip
for impl in ("cudnn", "default") if timed else ():  # at the last shape, in the order they ran
    key = (impl, *max((d, s) for _, d, s in timed))
    if key in timed:
        print(f"{impl} at head_dim {key[1]}, seq {key[2]}, ms per call by group:",
              " ".join(f"{ms:.3f}" for ms in timed[key]["ms"]))  # fmt: skip

# %%
# On the H200 and on the H100 (PyTorch 2.11), in every repeat, the ranking held at every
# shape. cuDNN's kernel is the one written for Hopper, the architecture of both GPUs:
# ``sm90`` in its name is Hopper's architecture number (the A100's is ``sm80``), and
# ``wgmma`` is a Tensor Core instruction that only Hopper has. Flash and efficient were
# written for the A100 (efficient's kernel name carries ``sm80``), where the
# :term:`Hugging Face series` found flash the fastest. How near the GPU's limit is the
# best? With ``tracereader`` (this site's library for reading traces), the GPU's name
# comes from the trace, and its datasheet's dense bf16 peak from
# ``tracereader.datasheet``:

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    traced = tracereader.load(sweep.trace_path)
    gpu = next((props["name"] for props in traced.device_properties if props.get("name")), "")
    sheet = tracereader.datasheet(gpu) if gpu and timed else None  # None on the CPU
    if sheet:  # the highest useful rate of any version at any shape, in TFLOP/s
        best = max((r["useful_flop"] / sorted(r["ms"])[len(r["ms"]) // 2] / 1e9, r["impl"],
                    r["seq"], r["head_dim"]) for r in timed.values())  # fmt: skip
        print(f"best: {best[1]} at seq {best[2]}, head_dim {best[3]}: {best[0]:.0f} TFLOP/s, "
              f"{best[0] / sheet.bf16_tflops:.0%} of the {sheet.gpu}'s {sheet.bf16_tflops:.0f}")  # fmt: skip

# %%
# On both GPUs, in every repeat, the best rate was cuDNN's at sequence 8192 and head
# dimension 128, at about 60 % of that peak.
#
# ``default`` ran cuDNN's op at the profiled shape (PyTorch 2.11 puts cuDNN first on
# Hopper and data-centre Blackwell GPUs when its cuDNN is 9.15.1 or newer, here 9.19;
# flash otherwise), and its median time was about pinned cuDNN's up to sequence 2048 on
# both GPUs. On the H200, in every repeat, every ``default`` group was slower than every
# cuDNN group at three shapes: head dimension 64 at sequence 8192, and 128 at 4096 and
# 8192 (not 64 at 4096); on the H100, at some of those shapes, not in every repeat. But
# ``default`` always ran right after cuDNN, and in the groups printed above cuDNN's own
# climbed from first to last, and ``default``'s went on climbing: the sweep cannot tell
# "default" from "later". Nor can the trace: its one profiled call of each ran the same
# cuDNN op with the same arguments, and the same kernel for about the same time (with
# one tensor as ``q``, ``k`` and ``v``; the timed calls pass three). The peak memory is
# plainer: cuDNN's extra memory is the same at every shape, the output and little more,
# while the naive and math versions' grows with the sequence.
#
# The trace holds one forward of each version at the last shape, each inside a
# :term:`range <record_function range>` named after the version. Open it in Perfetto (a
# trace viewer in the browser, ui.perfetto.dev), or read the GPU operations launched in
# three of those ranges, as ``tracereader.kernel_table`` lists them below. Under
# ``default``, find the ``aten::_scaled_dot_product_…`` op that names the backend
# PyTorch chose. Under each fused backend, find its one attention kernel (cuDNN's, and
# so ``default``'s, comes after a :term:`memset`). Under ``naive``, find the five steps'
# twelve GPU operations: for ``q @ kᵀ``, a memset and a :term:`GEMM`; for the scale, two
# elementwise kernels (``MulFunctor``); for the mask, a fill and a ``triu`` kernel that
# build it, a copy of the scores (:term:`Memcpy DtoD`) and two elementwise kernels that
# write ``-inf`` (``masked_fill_kernel``); for the softmax, one kernel; for ``@ v``, a
# memset and a GEMM. The scale and the ``-inf`` writes are one op each, in two kernels:
# the scores' 2³¹ elements are one too many for the 32-bit indexing of PyTorch's
# elementwise kernels (story 04a's trace, at sequence 1024, has one of each). The
# softmax, naive's longest kernel (over a third of its GPU time), is
# ``cunn_SoftMaxForwardReg`` at rows this long, one block of threads per row: per score
# it takes over twice as long as the ``softmax_warp_forward`` (one :term:`warp` per row)
# of story 04a's trace, at rows of 1024. The trace's times are one profiled call each:
# read them for what ran, and the table for how long.

if tracereader:
    for version in ("naive", "cudnn", "default"):  # on the CPU, only naive's range
        for span in traced.regions(version)[:1]:  # the range around the version's call
            window = (span.start_ns, span.end_ns)  # the GPU ops launched inside it
            print(f"{version}:", tracereader.kernel_table(traced, window=window), "", sep="\n")

# %%
# These are GPU times at workloads large enough to keep the GPU busy. At small ones the
# CPU cost of each call can decide instead: the stories on interleaved backends and on
# same-backend bursts measure that. :doc:`/chapters/part3` and its lab notes read this
# sweep: rates, ratios and memory per shape.
#
# On your own GPU, run the sweep and read it the same way; a backend that refuses a
# shape says why in its row. If your ranking differs, look at the kernel names: the
# number after ``sm`` is the architecture a kernel was built for.
# ``torch.cuda.get_device_capability()`` gives your GPU's (``(9, 0)`` on Hopper) and
# ``torch.backends.cudnn.version()`` your cuDNN's (here 91900): together they decide
# whether ``default`` picks cuDNN. Before you choose a backend for a model, sweep at
# *its* shapes: tokens per call and head dimension are the two settings to change.
