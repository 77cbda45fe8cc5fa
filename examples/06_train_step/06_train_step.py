"""
A training step: from eager PyTorch to compiled causal attention
================================================================

One training step of a Llama-architecture model from Hugging Face ``transformers``,
built from a config with random weights (nothing is downloaded): hidden 2048, 16
layers, 32 query and 8 key/value heads, a vocabulary of 128,256 tied to the
embedding, about 1.24 B parameters, the shape of Llama-3.2-1B. Each step reads a
batch of token sequences of length 2,048 and runs four phases, each a
``record_function`` region in the trace: ``forward`` (the decoder), ``loss`` (the
projection onto the vocabulary and the cross-entropy), ``backward`` and
``optimizer`` (AdamW), after a ``data`` region that fetches the batch. The
variants change one thing at a time, each a setup you could adopt; the list with
what to look for in each trace is at "The variants" below.

Each variant times steps without the profiler first, then profiles three steps
(the trace keeps one), then writes ``results.json``: tokens per second, ms per step,
MFU and peak memory.
On the CPU it runs a tiny model of the same architecture, and a compiled variant
compiles with the ``aot_eager`` backend (no generated kernels: their subject is the
GPU). The model, the loss, the data and the step itself come from
``_06_common.py`` beside this file; the downloads on the site have it pasted in,
so one file runs with torch and ``transformers`` alone. Run it yourself::

    python 06_train_step.py                    # the baseline and the causal variant
    python 06_train_step.py --variant causal   # one named variant, its table printed

Each run writes its trace to ``traces/06_train_step/<name>.json``.
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

# From the code this set's stories share (``_06_common.py``): ``build_model`` (the
# Llama from its config, random weights), ``OPTIMIZERS`` (AdamW's three
# implementations), ``make_step`` (one step: forward, loss, backward and optimizer,
# each a ``record_function`` region, compiled when asked), ``batches`` (the input:
# random tokens on the GPU, or a ``DataLoader``), ``time_steps`` (steps timed without
# the profiler), ``flops_per_token`` (the model's FLOPs for the MFU, against the
# H200's peak ``H200_BF16_FLOPS``), ``write_memory_snapshot`` (the allocator's
# history, slimmed), ``SEQ`` (2,048 tokens), ``_sync`` (wait for the GPU) and
# ``story_run`` (the story's ``run``, which redoes the MFU against your GPU's peak, and
# its ``--variant NAME`` and ``--peak-tflops X`` flags).
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
# ``timed_steps`` steps without the profiler. Like many training loops, each step
# reads its loss (``loss.item()``), which waits for the GPU to finish the step,
# unless ``read_loss=False``. It then profiles three steps, of which the trace keeps
# the third (``wait=1, warmup=1, active=1``), and waits for the GPU before that step
# ends so that every kernel the step launched is in it. Last it writes
# ``timings.json`` (each timed step's ms) and ``results.json`` (the median step,
# tokens per second, MFU, peak memory), and returns the profiler's table.
#
# Its settings, one lever each:
#
# * ``batch``, ``seq``: sequences per step, and tokens per sequence.
# * ``weights``: ``"fp32"`` (the forward under bf16 autocast) or ``"bf16"``.
# * ``optimizer``: ``"fused"``, ``"foreach"`` or ``"forloop"`` AdamW.
# * ``compile``: ``None`` (eager) or a ``torch.compile`` mode, such as ``"default"``.
# * ``attention``: ``"sdpa"`` (transformers' own SDPA call), ``"causal"`` (SDPA told
#   the mask is causal) or ``"flex"`` (flex attention), as ``build_model`` takes it.
# * ``loss``: ``"full"`` or ``"chunked"`` cross-entropy (a slice of tokens at a time).
# * ``checkpointing``: activation checkpointing of every decoder layer.
# * ``loader``, ``workers``, ``pin``, ``non_blocking``, ``cpu_ms``: the input, random
#   tokens already on the GPU or a ``DataLoader`` doing ``cpu_ms`` of CPU work per
#   sample, as ``batches`` builds it.
# * ``read_loss``: read the loss every step, or keep it on the GPU until the end.
# * ``record_shapes``, ``memory``: record input shapes; record the memory snapshot
#   of one step (``write_memory_snapshot``) and profile with ``profile_memory=True``.
# * ``timed_steps``, ``warmup_steps``: steps timed without the profiler, and steps
#   run before them.
#
# On the CPU it runs the tiny model, a small batch and a few steps, with SDPA for
# flex attention, which has no backward on the CPU: the run then finishes in
# seconds, and its trace holds the CPU's side of the step only. A compiled variant
# compiles with the ``aot_eager`` backend (no generated kernels), and there is no
# memory snapshot, peak memory or MFU. Its numbers say nothing about a GPU; the
# regions and the trace and results files are the same, so a CPU run is a quick check
# that the example works before a GPU run.


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
    # parameter in it; the next ones let cuBLAS and the caching allocator settle.
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
# The profiler's schedule skips one step (``wait``), runs one with the profiler on
# but discarding what it records (``warmup``: its own start-up costs fall there),
# and records the third (``active``), one profiler step per training step. One
# step keeps the trace small, and the table then counts calls per step. Before
# that step ends we wait for the GPU, so every kernel it launched finishes inside
# the trace: when the CPU runs ahead of the GPU (``loader_async``), the wait shows
# as a ``cudaDeviceSynchronize`` at the step's end. ``profile_steps`` writes
# ``trace.json`` and returns the profiler's table.


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
#   one step lane by lane. The CPU's main thread launches the forward and the loss,
#   waits in ``backward`` while the autograd engine's thread launches the backward,
#   then launches the optimizer; the GPU runs behind it. Input shapes are recorded
#   (``record_shapes``), so each matrix multiplication's FLOPs can be counted.
# * ``eager_foreach``, ``eager_forloop``: AdamW's two other implementations. The
#   ``optimizer`` region alone changes: how many kernels it launches per step, and
#   how long the CPU takes to launch them against how long the GPU takes to run them.
# * ``eager_bf16``: the weights themselves in bf16. The casts leave the forward, and
#   the weights, gradients and AdamW's two moments take half the memory (AdamW then
#   keeps its moments in bf16 too, a precision trade this example does not measure).
# * ``eager_checkpoint``: the backward runs each layer's forward again before
#   differentiating it; peak memory against time per step.
# * ``memory``: when in the step the peak is reached, in the snapshot's timeline and
#   in the profiler's memory events (an instant event per allocation and free, with
#   the total allocated after it).
# * ``loader_inline``, ``loader_workers``, ``loader_async``: the batch comes from a
#   ``DataLoader`` doing CPU work per sample, in the training process, then in worker
#   processes, then pinned and copied without waiting, the loss read only at the end.
#   Look at the ``data`` region, the gaps it leaves in the GPU lane, and the waits.
# * ``compile``: the baseline with the decoder and the loss compiled. The step runs
#   fewer, fused kernels; the first step's time (``first_step_s``) includes compiling.
# * ``compile_b8_bf16`` (batch 8, bf16 weights), ``causal`` (attention told it is
#   causal), then one lever each on top of ``causal``: ``causal_b16`` (batch 16),
#   ``causal_chunked`` (the chunked loss), ``causal_flex`` (flex attention),
#   ``causal_s4096`` (sequences of 4,096, batch 4) and ``final`` (sequences of 8,192,
#   batch 2, the same 16,384 tokens per step: the highest MFU by a count that credits
#   attention in full, yet slower in tokens per second than ``causal``). ``causal`` is
#   the result at batch 8 (batch 16 trains a little more per second, in every repeat,
#   at much more peak memory: Part 5 gives both); it and ``final`` record shapes too, for
#   the account of where their time goes. From ``compile_b8_bf16`` on, the weights and
#   AdamW's moments are bf16 with no fp32 copy: near the initial weights, neighbouring
#   bf16 values lie further apart than the learning rate, so small updates round away.
#
# A further lever, for a variant of your own: ``compile="max-autotune-no-cudagraphs"``
# (Inductor times candidate kernels for each matrix multiplication: many minutes).

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
# How the site records these variants (which share a process, which compile cache,
# what of each trace it keeps) is its own business: ``docs/recordings/plan.json``.

# %%
# ``run(name)`` is the plumbing: it profiles one variant with its harness, moves what
# the run wrote (the trace, ``timings.json``, ``results.json``, the memory snapshot)
# to ``traces/06_train_step/NAME.*``, says where it ran, and on a GPU redoes the MFU
# against that GPU's peak (``--peak-tflops``, its datasheet row, or else a large GEMM
# measured on it), saying which one.
# ``python 06_train_step.py --variant NAME`` profiles one variant and prints its table;
# add ``--peak-tflops X`` to divide the MFU by a peak you give (TFLOP/s) instead of your
# GPU's datasheet row, or, for a GPU without one, a large GEMM's measured rate.
# Without flags the script runs the page below, the baseline and then the causal variant.

run = story_run(VARIANTS, __name__)

# sphinx_gallery_start_ignore
# The site build replays the H200's recordings instead.
run = sys.modules["tracesite"].replayer(run) if "tracesite" in sys.modules else run
# sphinx_gallery_end_ignore

# %%
# The baseline: the table
# -----------------------
#
# Guess first: in an eager training step at batch 4, which kernels take the GPU's
# time, and how much of it goes to the optimizer? The table sums the profiled step
# by operator and keeps the 15 rows with the most GPU time. A region row (``forward``,
# ``loss``, ``optimizer``) counts the GPU time of the kernels launched inside it on
# the main thread. The backward's kernels are launched by the autograd engine's own
# thread, not inside the main thread's ``backward`` range: look for them under rows
# such as ``autograd::engine::evaluate_function: ...``.

baseline = run("eager")
print(baseline.table)

# %%
# The result, ``causal``: the table
# ---------------------------------
#
# Compiled, bf16 weights, attention told it is causal, 8 sequences of 2,048 tokens:
# the step that trains the most tokens per second here at batch 8 (batch 16 trains a
# little more, at much more peak memory).
# Compare the kernels at the top with the baseline's, and find the attention kernels
# by name.

result = run("causal")
print(result.table)

# %%
# Every variant
# -------------
#
# Their settings, as ``profile_train_step`` takes them; on the site, the table of
# their recordings on both GPUs (three repeats each; each repeat a fresh process that
# runs the variants one after another) follows, with each variant's tokens per
# second. Each run also left ``traces/06_train_step/NAME.results.json`` beside its
# trace: tokens per second, ms per step, MFU and peak memory, measured without the
# profiler. Compare those across variants to see what each lever bought, and open
# the traces to see why: :doc:`/chapters/part5` does both over every recording.

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
