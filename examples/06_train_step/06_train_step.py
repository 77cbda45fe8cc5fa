"""
A training step: from eager PyTorch to compiled causal attention
================================================================

One training step of a Llama-architecture model from Hugging Face ``transformers``,
built from a config with random weights (nothing is downloaded): hidden 2048, 16 layers,
32 query and 8 key/value heads, a vocabulary of 128,256 whose output projection is tied
to the embedding (one matrix serves both), about 1.24 B parameters, the shape of
Llama-3.2-1B. Each step reads a batch of token sequences of length 2,048 and runs four
phases, each a :term:`record_function range` (a named span in the trace): ``forward``
(the decoder's layers), ``loss`` (the projection onto the vocabulary and the
cross-entropy), ``backward`` and ``optimizer`` (AdamW, which updates the weights), after
a ``data`` region that fetches the batch. Most variants change one setting of the
baseline or of the variant they build on, each a setup you could adopt; the list of what
each changes, and what to look for in its trace, is at "The variants" below.

Each variant times steps without the profiler, runs three under it (the trace keeps the
third) and writes ``results.json``: tokens per second, ms per step, :term:`MFU` (model
FLOPs utilization: the model's arithmetic per second over the GPU's peak), peak memory.
The model, the loss, the data and the step come from ``_06_common.py`` beside this
file (the site's downloads have it pasted in). Run it yourself::

    python 06_train_step.py                    # the baseline and the causal variant
    python 06_train_step.py --variant causal   # one named variant, its table printed
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import gc
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# From the code this set's pages share (``_06_common.py``): ``build_model`` (the
# Llama, random weights), ``OPTIMIZERS`` (AdamW's three implementations), ``make_step``
# (one step, its phases ``record_function`` regions, compiled when asked), ``batches``
# (the input), ``time_steps`` (steps timed without the profiler), ``flops_per_token``
# (for the MFU, against ``H200_BF16_FLOPS``), ``write_memory_snapshot`` (the
# allocator's history, slimmed), ``SEQ`` (2,048 tokens), ``_sync`` (wait for the GPU)
# and ``story_run`` (the page's ``run`` and its ``--variant`` flag).
from _06_common import (
    H200_BF16_FLOPS,
    OPTIMIZERS,
    SEQ,
    _sync,
    batches,
    build_model,
    flops_per_token,
    make_step,
    story_run,
    time_steps,
    write_memory_snapshot,
)

# %%
# How a variant is measured
# -------------------------
#
# ``profile_train_step`` builds the model, its AdamW and its input, runs
# ``warmup_steps`` steps (the first one compiles, when asked), then times
# ``timed_steps`` steps without the profiler. Like many training loops, each step reads
# its loss (``loss.item()``), which waits for the GPU to finish the step, unless
# ``read_loss=False``. It then profiles with ``profile_steps`` (below) and writes
# ``timings.json`` (each timed step's ms) and ``results.json``: ``step_ms`` (the median
# step, its fastest and slowest), ``tokens_per_s``, ``peak_gib`` (peak memory),
# ``first_step_s`` (the first step, in seconds) and ``mfu_spec``: tokens per second
# times a token's FLOPs, 6 × (P − E) + 12 × L × H × S (P parameters, E of them the
# embedding table, L layers, H hidden, S tokens a sequence: ``flops_per_token``), over
# the H200's dense bf16 peak, 989 TFLOP/s. :doc:`/chapters/part5` also counts the tied
# table (the output projection is real matrix work), so its MFU is higher.
#
# Its settings, one lever each:
#
# * ``batch``, ``seq``: sequences per step, and tokens per sequence.
# * ``weights``: ``"fp32"`` (fp32 weights, the forward and loss under bf16 autocast,
#   which runs each op in bf16 where that is safe) or ``"bf16"`` (no fp32 copy).
# * ``optimizer``: AdamW ``"fused"`` (a kernel does the whole update of many
#   parameters), ``"foreach"`` (a kernel per operation of the update, over many
#   parameters) or ``"forloop"`` (each operation on one parameter at a time).
# * ``compile``: ``None`` (eager) or a ``torch.compile`` mode, such as ``"default"``.
# * ``attention``: ``"sdpa"`` (transformers' own :term:`SDPA` call), ``"causal"`` (SDPA
#   told the mask is causal: each token attends to earlier ones only) or ``"flex"``
#   (PyTorch's ``flex_attention``, compiled from a mask function).
# * ``loss``: ``"full"`` or ``"chunked"`` cross-entropy (a slice of tokens at a time).
# * ``checkpointing``: activation checkpointing of every decoder layer (the backward
#   recomputes a layer's forward instead of keeping its activations).
# * ``loader``, ``workers``, ``pin``, ``non_blocking``, ``cpu_ms``: the input, random
#   tokens already on the GPU or a ``DataLoader`` doing ``cpu_ms`` of CPU work per
#   sample (:term:`pinned memory` with ``pin``), as ``batches`` builds it.
# * ``read_loss``: read the loss every step, or keep it on the GPU until the end.
# * ``record_shapes``, ``memory``: record input shapes; record the memory snapshot of
#   one step (the caching allocator's history of allocations and frees) and profile
#   with ``profile_memory=True`` (the trace then marks each allocation and free).
# * ``timed_steps``, ``warmup_steps``: steps timed without the profiler; steps before.
#
# On the CPU it runs the tiny model, a small batch and a few steps (SDPA for flex
# attention, which has no backward there; a compiled variant uses the ``aot_eager``
# backend, no generated kernels) in seconds, with no memory snapshot, peak memory or
# MFU: its trace holds the CPU's side only, a quick check before a GPU run.


def profile_train_step(
    out_dir, *, device=None, batch=4, seq=SEQ, weights="fp32", optimizer="fused", compile=None,
    attention="sdpa", loss="full", checkpointing=False, loader=False, workers=0, pin=False,
    non_blocking=False, cpu_ms=40.0, read_loss=True, record_shapes=False, memory=False,
    timed_steps=8, warmup_steps=3,
):  # fmt: skip
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    shape = "1b" if device == "cuda" else "tiny"
    if device != "cuda":
        attention = "causal" if attention == "flex" else attention
        batch, seq, cpu_ms, timed_steps, warmup_steps = (
            min(batch, 2), min(seq, 64), min(cpu_ms, 1.0), 2, 1
        )  # fmt: skip
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch._dynamo.reset()
    model = build_model(shape, device, weights, attention, seq)
    # transformers' name for it until 5.17; later ones call it activation checkpointing
    if checkpointing:
        getattr(model, "activation_checkpointing_enable", model.gradient_checkpointing_enable)()
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4, **OPTIMIZERS[optimizer])
    step = make_step(
        model, optim, autocast=weights == "fp32", compile=compile, loss=loss, device=device
    )
    data = batches(
        loader, batch=batch, seq=seq, vocab=model.config.vocab_size, device=device, pin=pin,
        non_blocking=non_blocking, cpu_ms=cpu_ms, workers=workers,
    )  # fmt: skip
    losses = []

    # One step of a training loop: fetch a batch, step, read (or keep) the loss.
    def train():
        with record_function("data"):
            tokens = next(data)
        value = step(tokens)
        losses.append(value.item() if read_loss else value.detach())

    # The first step compiles (when asked), and AdamW allocates its two moments per
    # parameter in it (running averages of the gradient and of its square); the next
    # ones let cuBLAS and the caching allocator settle.
    start = time.perf_counter()
    train()
    _sync(device)
    first_step_s = time.perf_counter() - start
    for _ in range(warmup_steps - 1):
        train()
    _sync(device)
    # The peak of the steady steps that follow: weights, gradients, AdamW's state and
    # the activations of one step, at their highest.
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    step_ms = time_steps(train, timed_steps, device)
    peak_gib = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
    # One more step with the allocator's history on, for the memory snapshot. A reader
    # would call torch.cuda.memory._dump_snapshot("snapshot.pickle") after it.
    if memory and device == "cuda":
        torch.cuda.memory._record_memory_history(
            max_entries=100_000, context="alloc", stacks="python"
        )
        train()
        _sync(device)
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        write_memory_snapshot(out_dir, snapshot)
    table = profile_steps(
        out_dir, train, device, record_shapes=record_shapes, profile_memory=memory
    )
    # The headline numbers (``results.json``, which the site keeps with the recording)
    # and every step's time (``timings.json``), as the median and its spread.
    flops, params, embedding = flops_per_token(model, seq)
    median = statistics.median(step_ms)
    tokens_per_s = batch * seq / (median / 1e3)
    (out_dir / "results.json").write_text(json.dumps({
        "tokens_per_s": round(tokens_per_s),
        "step_ms": round(median, 2),
        "step_ms_min": round(min(step_ms), 2),
        "step_ms_max": round(max(step_ms), 2),
        "peak_gib": round(peak_gib, 2) if peak_gib else None,
        "mfu_spec": round(tokens_per_s * flops / H200_BF16_FLOPS, 4) if device == "cuda" else None,
        "first_step_s": round(first_step_s, 2),
    }))  # fmt: skip
    (out_dir / "timings.json").write_text(json.dumps({
        "what": "ms per training step without the profiler, end to end",
        "step_ms": step_ms, "batch": batch, "seq": seq, "flops_per_token": flops,
        "params": params, "embedding_params": embedding, "losses": [float(v) for v in losses],
    }))  # fmt: skip
    # Free everything before the next variant in this process: the DataLoader's
    # workers, the model, its optimizer, and what torch.compile keeps of them.
    data.close()
    step = optim = model = None
    gc.collect()
    torch._dynamo.reset()
    if device == "cuda":
        torch.cuda.empty_cache()
    return table


# %%
# The profiled step
# -----------------
#
# The schedule skips one step (``wait``), records one and discards it (``warmup``: the
# profiler's own start-up costs fall there), and keeps the third (``active``): one
# step keeps the trace small, and the table counts calls per step. Before it ends we
# wait for the GPU, so every kernel it launched is inside the trace. A CPU that runs
# ahead waits sooner: ``loader_async``'s main thread waits tens of milliseconds early
# in ``forward``, in an ``aten::item`` of the model's code, in every repeat on both
# GPUs. ``profile_steps`` writes ``trace.json`` and returns the profiler's table.


def profile_steps(out_dir, train, device, **options):
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    trace = str(Path(out_dir) / "trace.json")
    with profile(
        activities=activities,
        schedule=schedule(wait=1, warmup=1, active=1, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(trace),
        **options,
    ) as prof:
        for i in range(3):
            train()
            if i == 2:
                _sync(device)
            prof.step()
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# The variants
# ------------
#
# What each one is for, and where to look in its trace:
#
# * ``eager``, the baseline (fp32 weights under bf16 autocast, fused AdamW, batch 4):
#   one step lane by lane (drawn below its table). The CPU's main thread launches the
#   forward, the loss and the backward's first kernel, waits in ``backward`` while the
#   autograd thread launches the rest, then launches the optimizer; the GPU runs behind
#   it. Input shapes are recorded: each matrix multiplication's FLOPs can be counted.
# * ``eager_foreach``, ``eager_forloop``: AdamW's two other implementations. The
#   ``optimizer`` region alone changes: how many kernels it launches, and how long the
#   CPU takes to launch them against how long the GPU takes to run them.
# * ``eager_bf16``: the weights in bf16. Autocast's casts are gone from the forward; weights,
#   gradients and AdamW's moments take half the memory (a precision trade, unmeasured).
# * ``eager_checkpoint``: activation checkpointing; peak memory against time per step.
# * ``memory``: when in the step the peak is reached, in the snapshot's timeline and
#   in the profiler's memory events (each with the total allocated after it).
# * ``loader_inline``, ``loader_workers``, ``loader_async``: the batch comes from a
#   ``DataLoader`` doing CPU work per sample, in the training process, then in worker
#   processes, then pinned and copied without waiting, the loss read only at the end.
#   Look at the ``data`` region, the gaps it leaves in the GPU lane, and the waits.
# * ``compile``: the baseline with the decoder and the loss compiled. The step runs
#   fewer, fused kernels (Part 5 counts them); ``first_step_s`` includes compiling.
# * ``compile_b8_bf16`` (batch 8, bf16 weights), ``causal`` (attention told it is
#   causal), then one lever each on top of ``causal``: ``causal_b16`` (batch 16),
#   ``causal_chunked`` (the chunked loss), ``causal_flex`` (flex attention),
#   ``causal_s4096`` (sequences of 4,096, batch 4) and ``final`` (sequences of 8,192,
#   batch 2, the same 16,384 tokens per step: the highest ``mfu_spec``, which counts
#   attention's masked half as work too, yet slower in tokens per second than
#   ``causal``). ``causal`` is the result at batch 8: batch 16 trains slightly more
#   tokens per second (more in every repeat on both GPUs, by under a tenth), at over 1.7
#   times causal's peak memory. From ``compile_b8_bf16`` on, the weights are bf16, no fp32 copy.
#
# A further lever, for a variant of your own: ``compile="max-autotune-no-cudagraphs"``
# (:term:`max-autotune` without CUDA graphs: it compiles for many minutes).

CAUSAL = {"compile": "default", "batch": 8, "weights": "bf16", "attention": "causal"}
VARIANTS = {
    "eager": (profile_train_step, {"record_shapes": True}),
    "eager_foreach": (profile_train_step, {"optimizer": "foreach"}),
    "eager_forloop": (profile_train_step, {"optimizer": "forloop"}),
    "eager_bf16": (profile_train_step, {"weights": "bf16"}),
    "eager_checkpoint": (profile_train_step, {"checkpointing": True}),
    "memory": (profile_train_step, {"memory": True}),
    "loader_inline": (profile_train_step, {"loader": True}),
    "loader_workers": (profile_train_step, {"loader": True, "workers": 4}),
    "loader_async": (profile_train_step, {"loader": True, "workers": 4, "pin": True, "non_blocking": True,
                                          "read_loss": False}),
    "compile": (profile_train_step, {"compile": "default"}),
    "compile_b8_bf16": (profile_train_step, {"compile": "default", "batch": 8, "weights": "bf16"}),
    "causal": (profile_train_step, {**CAUSAL, "record_shapes": True}),
    "causal_b16": (profile_train_step, {**CAUSAL, "batch": 16}),
    "causal_chunked": (profile_train_step, {**CAUSAL, "loss": "chunked"}),
    "causal_flex": (profile_train_step, {**CAUSAL, "attention": "flex"}),
    "causal_s4096": (profile_train_step, {**CAUSAL, "batch": 4, "seq": 4096}),
    "final": (profile_train_step, {**CAUSAL, "batch": 2, "seq": 8192, "record_shapes": True}),
}  # fmt: skip

# %%
# ``run(name)`` profiles one variant, moves what it wrote to ``traces/06_train_step/``
# and says where it ran; on a GPU it redoes the MFU against that GPU's peak
# (``--peak-tflops X``, else its datasheet row, else a measured large matrix multiply).
# ``python 06_train_step.py --variant NAME`` profiles one variant and prints its table.

run = story_run(VARIANTS, __name__)

# sphinx_gallery_start_ignore
# The site build replays the H200's recordings instead.
run = sys.modules["tracesite"].replayer(run) if "tracesite" in sys.modules else run
# sphinx_gallery_end_ignore

# %%
# The baseline: the table
# -----------------------
#
# Guess first: in an eager training step at batch 4, which kernels take the GPU's time,
# and how much of it goes to the optimizer? The table sums the profiled step by name and
# keeps the 15 rows with the most GPU time. ``Self CUDA`` (:term:`self time`) is the
# time of the kernels a row launched itself, ``CUDA total`` adds what the ops inside it
# launched; ``Self CUDA %`` is a share of ``Self CUDA time total``, all the kernels
# together. Of the two ``forward`` rows, the one with CPU time counts the kernels
# launched inside it; the one with only ``Self CUDA`` is its GPU-side span, idle time
# included (:term:`gpu_user_annotation`). All the backward's kernels but the first (a
# fill of ones) come from the autograd thread, not the main thread's ``backward``: see
# the ``autograd::engine::evaluate_function: ...`` rows, one per backward op. The line
# above the table is the first repeat's ``results.json``; Part 5 quotes the medians.

baseline = run("eager")
print(baseline.table)

# %%
# Two rows mislead. Ignore ``Command Buffer Full`` and the ``CUDA total`` of the rows
# above it: the optimizer's GPU time is ``aten::_fused_adamw_``'s ``Self CUDA``.
# :term:`Command Buffer Full` is no GPU work but a record of :term:`CUPTI`, the
# profiler's GPU library (category ``overhead`` in the trace, on a lane of its own): a
# launch call waited because the GPU's queue of launched work was full, the CPU that far
# ahead. This table counts the records' length as CPU time, but their ``Self CUDA``
# (over 100 %) is no length: one copy of ``aten::_fused_adamw_``'s ``Self CUDA`` per
# record inside that operator, added again to the ``CUDA total`` of the rows they sit
# in, the five above. Most records, in every repeat that has any, fell in the backward,
# on the autograd engine's thread, and add no CUDA time: two of the six repeats have
# none in the optimizer, and no such row. ``aten::linear`` counts each linear layer
# twice (``MmBackward0`` once): autocast runs it again inside, on bf16 inputs.
#
# ``tracereader`` (this site's library for reading traces) reads each region's GPU time
# from the trace: every GPU op launched while it was open, from any thread, so
# ``backward`` gets the autograd thread's kernels (``gpu_busy_us``: the time they kept
# the GPU busy). In every repeat on both GPUs the backward takes over half the GPU's
# time, the optimizer under a tenth. The picture draws the step lane by lane: the main
# thread, the autograd thread, the GPU. After the optimizer (too short a range to label,
# just before ``aten::item``), the main thread waits in ``cudaStreamSynchronize`` (red)
# to read the loss while the GPU finishes the step.

try:
    import tracereader
except ImportError:  # only torch here: open the trace at https://ui.perfetto.dev instead
    tracereader = None

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    base_trace = tracereader.load(baseline.trace_path)
    phases = ["data", "forward", "loss", "backward", "optimizer"]
    print(tracereader.region_table(base_trace, phases))
    last = base_trace.steps[-1].name
    tracereader.timeline(base_trace, step=last, arrows=False, gaps=False, fig=plt.figure())

# %%
# The result, ``causal``: the table
# ---------------------------------
#
# Compiled, bf16 weights, attention told it is causal, 8 sequences of 2,048 tokens: the
# step that trains the most tokens per second here at batch 8. At a cost this example
# does not measure: AdamW's moments are bf16 too and there is no fp32 copy of the
# weights, so an update under half the gap between neighbouring bf16 values rounds away
# (every update of the norm weights, which start at 1.0, where that gap is far wider
# than the learning rate). No fp32 ``causal`` was recorded; with fp32 weights,
# ``compile`` is the fastest, in every repeat on both GPUs. Compiled code has rows of
# its own (:term:`CompiledFxGraph`, :term:`Torch-Compiled Region`); ``CompiledFunction``
# and ``CompiledFunctionBackward`` are the compiled forward and backward as autograd
# runs them. Here ``ProfilerStep*``'s ``CUDA total`` counts the main thread's kernels,
# not the autograd thread's (the backward's but its first). The attention kernels fall below
# the 15 rows; ``tracereader`` lists the ten kernels with the most time: attention's are
# :term:`cuDNN`'s (``..._sdpa_..._fprop_...`` forward, ``..._bprop_...`` backward).

result = run("causal")
print(result.table)
if tracereader:
    print(tracereader.kernel_table(tracereader.load(result.trace_path), top=10))

# %%
# Every variant
# -------------
#
# Their settings, as ``profile_train_step`` takes them. At the end of the page, a list
# of their recordings on both GPUs: a link to each repeat's trace (each repeat a fresh
# process running the variants in turn) and each variant's tokens per second, median
# and range. :doc:`/chapters/part5` compares them and opens the traces to see why.

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
