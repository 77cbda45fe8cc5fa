"""
Attention by hand against SDPA and each of its backends
=======================================================

Causal self-attention on query, key and value tensors of shape
``(batch, heads, seq, head_dim)``: the :term:`Hugging Face series`' shape, batch 8,
16 heads, sequence 1024, head_dim 64, in bf16. We profile it twice over: written
out in five steps, as most people first write it, and as one call of PyTorch's
``torch.nn.functional.scaled_dot_product_attention`` (:term:`SDPA`), whose backends we
pin one at a time. The question for each trace: how many GPU operations does
one forward run, how long does each take, and which one wrote the score matrix
to memory?

This file needs only torch, and ``_04_common.py`` beside it for the plumbing the
stories of this set share (the site's download of this story has it pasted in).
On a machine with a CUDA GPU it profiles live; on the CPU it profiles a shrunken
problem there (no :term:`GPU lane`; a variant that pins a GPU-only backend profiles the
math backend instead). Run it yourself::

    python 04a_naive_and_sdpa.py                 # this page: naive, then SDPA's choice
    python 04a_naive_and_sdpa.py sdpa_flash      # one named variant

Each run writes its trace to ``traces/04_attention/<variant>.json``, and the
extra GPU memory of one unprofiled forward to ``<variant>.timings.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import contextlib
import json
import math
from pathlib import Path

import torch
from torch.nn.attention import sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# From the code the stories of this set share (``_04_common.py``, beside this file):
# the two versions of attention this page shows below (``naive_attention`` and
# ``sdpa_attention`` with its ``BACKENDS``), the series' shape ``SHAPE``, and the
# plumbing (``story_run``, which makes ``run``, and ``print_variants``).
from _04_common import BACKENDS, SHAPE, naive_attention, print_variants, sdpa_attention, story_run

# %%
# Attention written out
# ---------------------
#
# Attention compares every query with every key: ``q @ kᵀ`` gives one score
# per (query, key) pair, per head and per batch element, the *score matrix* of
# shape ``(batch, heads, seq, seq)``. At our shape that is 8 × 16 × 1024 × 1024
# bf16 values, 256 MiB, against 16 MiB for each of ``q``, ``k`` and ``v``.
# Scale it, mask the future (a query may not look at later keys, so their
# scores become ``-inf``), softmax each row, and multiply by ``v``.
#
# Each line below is its own :term:`PyTorch operator <aten>`, so expect at least one
# :term:`kernel` per line, each reading and writing the whole score matrix. Guess before
# you look at the table: which of the five takes longest?
#
# .. literalinclude:: ../../../examples/04_attention/_04_common.py
#    :language: python
#    :pyobject: naive_attention
#
# ``masked_fill`` returns a new tensor: it clones the scores, then fills the
# clone. The trace shows that clone as a ``Memcpy DtoD``
# (a :term:`device-to-device copy <Memcpy DtoD>`) of the whole score matrix.
# ``naive_attention_inplace`` changes that one line to ``masked_fill_``, which writes the
# mask into the scores themselves.


def naive_attention_inplace(q, k, v):
    # The same five steps, with the mask written into the scores themselves
    # (``masked_fill_``). No copy of the score matrix. Safe under autograd too: no
    # backward needs the unmasked scores (the scaling's backward needs only the
    # scale, the softmax's only its output). Where a backward does need a tensor
    # changed in place, autograd's version counter makes ``backward()`` raise
    # instead of computing a wrong gradient.
    scores = q @ k.transpose(-2, -1)
    scores = scores * (1.0 / math.sqrt(q.shape[-1]))
    seq = q.shape[-2]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores.masked_fill_(causal, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


IMPLS = {"naive": naive_attention, "naive_inplace": naive_attention_inplace}

# %%
# Attention in one call
# ---------------------
#
# SDPA computes the same thing. It has several implementations, called
# *backends*: ``math`` (the reference, built from ordinary operators), and three
# fused ones (fused: doing several steps in one kernel) that never write the score
# matrix to memory: ``efficient`` (a :term:`CUTLASS` kernel), ``flash``
# (FlashAttention-2) and ``cudnn`` (NVIDIA's :term:`cuDNN`).
# ``torch.nn.attention.sdpa_kernel`` pins one; left alone, PyTorch picks. In
# the trace, the op under ``aten::scaled_dot_product_attention`` names the one
# that ran: ``aten::_scaled_dot_product_cudnn_attention``,
# ``..._flash_attention``, ``..._efficient_attention``, or
# ``aten::_scaled_dot_product_attention_math``. (``F`` is
# ``torch.nn.functional`` and ``SDPBackend`` comes from ``torch.nn.attention``:
# ``_04_common.py`` imports both.)
#
# .. literalinclude:: ../../../examples/04_attention/_04_common.py
#    :language: python
#    :start-at: def sdpa_attention
#    :end-at: }

# %%
# How one version is profiled
# ---------------------------
#
# ``profile_attention`` builds random bf16 ``q``, ``k`` and ``v``,
# :term:`warms up <warm-up>` five calls (compiling first, if asked: ``compile="default"``
# hands the five steps to ``torch.compile``), then measures the peak extra GPU memory of
# one forward with ``torch.cuda.max_memory_allocated``: the trace does not record
# memory. Only then does the profiler start. Its schedule skips one
# :term:`step <ProfilerStep>` (``wait``), records one and throws it away (``warmup``),
# and keeps ``active`` steps of one forward each, every forward inside
# ``record_function("attention")`` so it shows as one
# :term:`named range <record_function range>` on the :term:`CPU lane`.
# ``record_shapes=True`` keeps each op's input shapes in the trace.


def profile_attention(
    out_dir,
    *,
    batch=8,
    heads=16,
    seq=1024,
    head_dim=64,
    impl="naive",
    backend=None,
    compile=None,
    active=3,
    device=None,
):
    # Profile one attention forward per step; write ``trace.json`` (and the peak
    # memory in ``timings.json``) into ``out_dir``; return the profiler's table.
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and backend not in (None, "math"):
        print(f"the {backend} backend needs a CUDA GPU: profiling the math backend instead")
        backend = "math"
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(batch, heads, seq, head_dim, device=device, dtype=torch.bfloat16)
        for _ in range(3)
    )
    f = IMPLS.get(impl, sdpa_attention)  # any impl not written out by hand is SDPA
    if compile:
        torch._dynamo.reset()
        f = torch.compile(f, mode=None if compile == "default" else compile)
    pin = sdpa_kernel([BACKENDS[backend]]) if backend else contextlib.nullcontext()

    def step():
        with torch.no_grad(), record_function("attention"):
            return f(q, k, v)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with pin:
        for _ in range(5):  # warm up (and compile)
            step()
        peak = None
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            step()
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
        (out_dir / "timings.json").write_text(json.dumps({"peak_extra_bytes": peak}))
        activities = [ProfilerActivity.CPU]
        if device == "cuda":
            activities.append(ProfilerActivity.CUDA)
        with profile(
            activities=activities,
            schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(str(out_dir / "trace.json")),
            record_shapes=True,
        ) as prof:
            for _ in range(2 + active):
                step()
                prof.step()
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# The variants
# ------------
#
# Eight versions, all at the series' shape:
#
# ==================  ==========================================================
# ``naive``           the five steps above
# ``naive_inplace``   the same with ``masked_fill_``: no copy of the scores
# ``naive_compile``   the five steps through ``torch.compile``
# ``sdpa_default``    one SDPA call; PyTorch picks the backend
# ``sdpa_math``       SDPA with the math backend pinned
# ``sdpa_efficient``  ... the efficient (CUTLASS) backend pinned
# ``sdpa_flash``      ... the flash (FlashAttention-2) backend pinned
# ``sdpa_cudnn``      ... the cuDNN backend pinned
# ==================  ==========================================================

VARIANTS = {
    "naive": (profile_attention, {**SHAPE}),
    "naive_inplace": (profile_attention, {**SHAPE, "impl": "naive_inplace"}),
    "naive_compile": (profile_attention, {**SHAPE, "compile": "default"}),
    "sdpa_default": (profile_attention, {**SHAPE, "impl": "sdpa"}),
    "sdpa_math": (profile_attention, {**SHAPE, "impl": "sdpa", "backend": "math"}),
    "sdpa_efficient": (profile_attention, {**SHAPE, "impl": "sdpa", "backend": "efficient"}),
    "sdpa_flash": (profile_attention, {**SHAPE, "impl": "sdpa", "backend": "flash"}),
    "sdpa_cudnn": (profile_attention, {**SHAPE, "impl": "sdpa", "backend": "cudnn"}),
}


# %%
# ``run(name)`` profiles one variant and says where. On the CPU it shrinks
# batch, heads and sequence to at most 128 so the run finishes quickly; the
# trace then has no GPU lane, and the table is sorted by CPU time instead.
# The trace lands in ``traces/04_attention/<name>.json``: open it in Perfetto
# (ui.perfetto.dev) or ``chrome://tracing``, or load it with ``tracereader`` (this site's
# library for reading traces).

# Run as ``python 04a_naive_and_sdpa.py VARIANT``, this line profiles that one variant
# and stops.
run = story_run(VARIANTS, __name__)

# %%
# Naive attention: the table
# --------------------------
#
# Sorted by GPU time, summed over the three profiled steps, and cut to its top
# 15 rows. A kernel :term:`launched <launch call>` in the step before them can run inside
# the profiled window, so a kernel's row may count one call more than its op's (on
# the H200, the softmax kernel's 4 against ``aten::_softmax``'s 3). The
# ``attention`` row with no CPU time is the label's
# :term:`GPU-side span <gpu_user_annotation>`, from its first kernel to its last, idle
# time included, so its :term:`Self <self time>` CUDA % can pass 100 %.

naive = run("naive")
print(naive.table)

# %%
# The table cannot list one forward whole. The trace can: below, every GPU
# operation (kernel, copy or :term:`memset`) that the last step launched, in order,
# with its time. Count them, and find the slowest.

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    tr = tracereader.load(naive.trace_path)
    step = tracereader.link(tr).step  # the profiler step that launched each GPU operation
    gpu = tr.where(kind=(tracereader.Kind.KERNEL, tracereader.Kind.MEMCPY, tracereader.Kind.MEMSET))
    for i in gpu[step[gpu] == len(tr.steps) - 1]:
        print(f"{tr.dur_ns[i] / 1e3:8.1f} µs  {tr.name(i)[:90]}")

# %%
# On the H200, and on the H100, one forward ran nine GPU operations: seven
# kernels, a memset and a copy. The two :term:`GEMMs <GEMM>` (the matrix multiplications,
# the ``nvjet`` kernels) were a small share of the time (the times are in
# :doc:`/chapters/part3`). The rest is elementwise work on the score matrix,
# and the slowest step was the mask: ``masked_fill`` runs PyTorch's general
# ``elementwise_kernel``, because the ``(seq, seq)`` mask broadcast over batch
# and heads is not contiguous, after a ``Memcpy DtoD`` that clones the
# scores. This page runs two of its eight variants; what follows of the
# others comes from their recordings, which :doc:`Part 3 </chapters/part3>`
# reads in full (run one with ``python 04a_naive_and_sdpa.py NAME``).
# ``naive_inplace`` drops that copy (less GPU time) but not the peak memory: two score matrices are still alive
# at once in the last matmul. Compiled (``naive_compile``), the three steps
# between the GEMMs become one :term:`Triton` kernel that builds the mask itself, yet
# the scores still go to memory and back.
#
# SDPA, PyTorch's choice: the table
# ---------------------------------
#
# Now one call. Look for the ``aten::_scaled_dot_product_…`` row: its name is
# the backend PyTorch chose (on the CPU it is
# ``_scaled_dot_product_flash_attention_for_cpu``, PyTorch's CPU kernel).

sdpa = run("sdpa_default")
print(sdpa.table)

# %%
# On the H200 with PyTorch 2.11 the choice was cuDNN, by a fixed preference
# for it on Hopper, not by a measurement; its one kernel (after a short memset)
# was the fastest of the backends, with the output's 16 MiB as nearly all its
# extra memory, where the five steps needed hundreds of MiB. The math backend
# was slower than the five steps: it multiplies in fp32 without :term:`Tensor Cores`
# and runs a "safe" softmax that checks every row for being fully masked. Run
# ``sdpa_flash``, ``sdpa_efficient`` and ``sdpa_cudnn`` on your GPU to rank them
# there, and compare their ``.timings.json`` files for memory.
# :doc:`/chapters/part3` reads every one of these traces step by step, with
# the measured times and memory.
#
# What to take away: a large ``Memcpy DtoD`` under ``aten::masked_fill`` is an
# out-of-place fill (use ``masked_fill_`` when nothing else needs the
# original); the backend SDPA chose is the name of its
# ``aten::_scaled_dot_product_…`` op; and to *compare* backends, profile each
# to see its kernels but time them without the profiler, as the other stories
# of this set do.
#
# Every variant of this story and its settings (on the guide's site, a table
# of the H200's recorded traces follows):

print_variants(VARIANTS)
