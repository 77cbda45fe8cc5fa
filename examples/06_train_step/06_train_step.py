"""
A training step: from eager PyTorch to half the H200's peak
===========================================================

One training step of a Llama-architecture model from Hugging Face ``transformers``,
built from a config with random weights (nothing is downloaded): hidden 2048, 16
layers, 32 query and 8 key/value heads, a vocabulary of 128,256 tied to the
embedding, about 1.24 B parameters, the shape of Llama-3.2-1B. Each step reads a
batch of token sequences of length 2,048 and runs four phases, each a
``record_function`` region in the trace: ``forward`` (the decoder), ``loss`` (the
projection onto the vocabulary and the cross-entropy), ``backward`` and
``optimizer`` (AdamW), after a ``data`` region that fetches the batch.

The variants change one thing at a time, each a setup you could adopt:

* ``eager``, the baseline: fp32 weights under bf16 autocast, fused AdamW, batch 4;
* ``eager_foreach`` and ``eager_forloop``: AdamW's two other implementations, one
  kernel per group of tensors or one per tensor and operation;
* ``eager_bf16``: the weights themselves in bf16, so autocast has nothing to cast;
* ``eager_checkpoint``: activation checkpointing, the forward run again in the backward;
* ``memory``: the baseline with the CUDA memory snapshot and the profiler's memory events;
* ``loader_inline``, ``loader_workers``, ``loader_async``: the batch comes from a
  ``DataLoader`` doing CPU work per sample: in the training process, then in worker
  processes, then pinned and copied without waiting, the loss read only at the end;
* ``compile``: the baseline with the decoder and the loss compiled (``torch.compile``);
* the attempts towards 50 % MFU: ``compile_b8_bf16`` (batch 8, bf16 weights),
  ``causal`` (attention told it is causal), then one lever each on top of
  ``causal``: ``causal_b16`` (batch 16), ``causal_chunked`` (the loss a slice of
  tokens at a time), ``causal_flex`` (PyTorch's flex attention), ``causal_s4096``
  (sequences of 4,096 tokens, batch 4) and ``final`` (sequences of 8,192, batch 2).

Each variant times steps without the profiler first and writes ``results.json``:
tokens per second, ms per step, MFU and peak memory; then it profiles one step.
On the CPU it runs a tiny model of the same architecture, and a compiled variant
compiles with the ``aot_eager`` backend (no generated kernels: their subject is the
GPU). This file needs torch and ``transformers``. Run it yourself::

    python 06_train_step.py                     # the baseline
    python 06_train_step.py --list              # every variant
    python 06_train_step.py --variant final     # one named variant

Each run writes its trace to ``traces/06_train_step/<name>.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import argparse
import gc
import json
import pickle
import random
import statistics
import sys
import time
import zlib
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# The sequence length of every GPU variant, and the H200 SXM's dense bf16 peak from
# its datasheet: the denominator of the MFU.
SEQ = 2048
H200_BF16_FLOPS = 989e12
SHAPES = {
    "1b": {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
           "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256, "tie_word_embeddings": True},
    # On the CPU: the same architecture, small enough to train in seconds.
    "tiny": {"hidden_size": 128, "intermediate_size": 344, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 1024, "tie_word_embeddings": True},
}  # fmt: skip
# The weights' dtype; with fp32 weights the forward runs under bf16 autocast.
WEIGHTS = {"fp32": torch.float32, "bf16": torch.bfloat16}
# AdamW's three implementations: one kernel per tensor and operation (``forloop``),
# one per operation over lists of tensors (``foreach``), the whole update in one
# kernel over lists of tensors (``fused``).
OPTIMIZERS = {
    "fused": {"fused": True},
    "foreach": {"foreach": True},
    "forloop": {"foreach": False, "fused": False},
}


# %%
# Attention told it is causal
# ---------------------------
#
# For a batch without padding, transformers 5.17 passes SDPA no mask and
# ``is_causal=True`` in eager mode, so SDPA's fused kernel (cuDNN's, on this GPU)
# skips the masked half of the scores and shares each key/value head among its 4
# query heads (``enable_gqa``). Under ``torch.compile`` it cannot tell whether a
# padding mask hides something (``is_tracing`` is true), so it builds the causal mask
# as a (batch, 1, seq, seq) tensor, copies every key/value head 4 times
# (``repeat_kv``) and calls SDPA with that mask: the cuDNN kernels then work through
# the whole score matrix, masked, more than twice as long here. ``causal_sdpa`` is SDPA as eager mode calls it, for
# inputs that are never padded (ours); registered under a name of its own, it gets
# no mask from transformers at all.


def causal_sdpa(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Causal attention of unpadded sequences: ``is_causal=True``, key/value heads shared."""
    # Imported here: torch.compile, inlining this from transformers' code, then needs no
    # global of this file (the site's recorder loads it under a name nothing can import).
    from torch.nn.functional import scaled_dot_product_attention

    out = scaled_dot_product_attention(
        query, key, value, dropout_p=dropout, scale=scaling, is_causal=True, enable_gqa=True
    )
    return out.transpose(1, 2).contiguous(), None


# %%
# The model
# ---------
#
# Random weights train exactly as fast as trained ones: the kernels, their shapes
# and their number do not depend on the values. The model is built on the device
# itself (``torch.device``), so that its 1.24 B parameters are initialised there,
# not on the CPU and then copied. The KV cache is off (``use_cache=False``): a
# training step never reuses keys and values.


def build_model(shape, device, weights, attention="sdpa", seq=SEQ):
    """A Llama of the named shape with random weights in ``weights``, on ``device``, in
    training mode. ``attention``: ``"sdpa"`` (transformers' own SDPA call), ``"causal"``
    (``causal_sdpa``) or ``"flex"`` (transformers' flex attention, compiled by PyTorch)."""
    try:
        import transformers as tf
    except ImportError:
        raise SystemExit(
            "06_train_step needs Hugging Face transformers: pip install transformers"
        ) from None
    if attention == "causal":
        tf.AttentionInterface.register("causal_sdpa", causal_sdpa)
    config = tf.LlamaConfig(**SHAPES[shape], max_position_embeddings=max(seq, SEQ), use_cache=False)
    implementation = {"sdpa": "sdpa", "causal": "causal_sdpa", "flex": "flex_attention"}[attention]
    torch.manual_seed(0)
    with torch.device(device):
        model = tf.LlamaForCausalLM._from_config(
            config, dtype=WEIGHTS[weights], attn_implementation=implementation
        )
    return model.train()


# %%
# What the MFU counts
# -------------------
#
# Model FLOPs utilisation: 6 FLOPs per parameter per token (2 in the forward, 4 in
# the backward) for every parameter but the embedding table, plus 12 x layers x
# hidden x sequence for attention's two products, over the GPU's dense bf16 peak.
# That is stricter than the MFU of MosaicML's llm-foundry benchmarks, which counts
# every parameter: tied, as here, the table is also the output projection, and its
# work is real: 6 x all parameters + the same attention term.


def flops_per_token(model, seq):
    """(FLOPs per token without the embedding table, all parameters, embedding parameters).

    llm-foundry's count of a tied model uses all parameters: ``6 * params + 12 * layers * hidden * seq``."""
    cfg = model.config
    params = sum(p.numel() for p in model.parameters())  # a tied table counts once
    embedding = model.get_input_embeddings().weight.numel()
    return (
        6 * (params - embedding) + 12 * cfg.num_hidden_layers * cfg.hidden_size * seq,
        params,
        embedding,
    )


# %%
# The loss over 128,256 words
# ---------------------------
#
# The output projection makes a score per vocabulary word for every token: at batch
# 4 that is half a billion numbers, and transformers, as most code, upcasts them to
# fp32 for the cross-entropy. ``chunked_cross_entropy`` never holds them whole: it
# computes the loss a slice of tokens at a time and recomputes each slice's scores
# in the backward (``torch.utils.checkpoint``), trading a third more work in the
# projection for memory.


def full_cross_entropy(hidden, head, labels):
    """The loss as transformers computes it: every token's scores at once, in fp32."""
    logits = head(hidden)
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def chunked_cross_entropy(hidden, head, labels, tokens=8192):
    """The same loss, ``tokens`` tokens at a time, each slice's scores recomputed in the backward."""

    def piece(h, y):
        return F.cross_entropy(head(h).float(), y, reduction="sum")

    hidden, labels = hidden.flatten(0, 1), labels.flatten()
    total = sum(
        torch.utils.checkpoint.checkpoint(piece, h, y, use_reentrant=False)
        for h, y in zip(hidden.split(tokens), labels.split(tokens), strict=True)
    )
    return total / labels.numel()


# %%
# An input pipeline that costs CPU time
# -------------------------------------
#
# Each sample is synthetic text "tokenised" in Python (one id per word, by hash),
# then ``cpu_ms`` of further CPU work: a stand-in for what real pipelines do per
# sample (read, decompress, tokenise, filter, pack), kept as time so that it costs
# the same on every machine. Batch 4 at 40 ms a sample is 160 ms of CPU per step,
# close to an eager step's GPU time: with ``workers=0`` the training process does
# it between steps, and the GPU waits. Worker processes (``workers``) prepare
# batches ahead, in parallel. ``pin`` makes the DataLoader return batches in
# page-locked memory, which the GPU can copy from while the CPU goes on; only then
# does ``non_blocking=True`` let the copy return at once. A copy made with
# ``non_blocking=False`` waits for the GPU to finish all the work queued before it,
# pinned memory or not (PyTorch's ``copy_kernel_cuda`` follows the copy with a
# ``cudaStreamSynchronize``): in the trace, that sync after the copy.

WORDS = (
    "the",
    "a",
    "of",
    "to",
    "in",
    "training",
    "step",
    "trace",
    "kernel",
    "memory",
    "gradient",
    "token",
    "loss",
)


class SyntheticText(torch.utils.data.Dataset):
    """Random text of ``seq + 1`` words per sample, tokenised, plus ``cpu_ms`` of CPU work."""

    def __init__(self, seq, vocab, cpu_ms):
        self.seq, self.vocab, self.cpu_ms = seq, vocab, cpu_ms

    def __len__(self):
        return 1 << 20

    def __getitem__(self, index):
        rng = random.Random(index)
        ids = [
            zlib.crc32(rng.choice(WORDS).encode() + bytes([i % 7])) % self.vocab
            for i in range(self.seq + 1)
        ]
        deadline = time.perf_counter() + self.cpu_ms / 1e3
        while time.perf_counter() < deadline:
            zlib.crc32(bytes(64))
        return torch.tensor(ids)


def batches(
    loader, *, batch, seq, vocab, device, pin=False, non_blocking=False, cpu_ms=40.0, workers=0
):
    """An endless iterator of (batch, seq + 1) token tensors on ``device``: random tokens made
    once on the device when ``loader`` is false, else a DataLoader's batches copied over."""
    # Without a loader the input costs nothing: one batch of random tokens, made on
    # the GPU once and fed to every step, so that the step alone is measured.
    if not loader:
        tokens = torch.randint(0, vocab, (batch, seq + 1), device=device)
        while True:
            yield tokens
    data = torch.utils.data.DataLoader(
        SyntheticText(seq, vocab, cpu_ms),
        batch_size=batch,
        num_workers=workers,
        pin_memory=pin and device == "cuda",
        persistent_workers=workers > 0,
    )
    for tokens in data:
        yield tokens.to(device, non_blocking=non_blocking)


# %%
# The step
# --------
#
# Four regions the trace shows. The forward and the loss run under bf16 autocast
# when the weights are fp32: each matrix multiplication casts its fp32 weight to
# bf16 first, a copy you will find in the forward as ``aten::_to_copy``. The
# backward runs on a thread of its own, the autograd engine's: its ops are named
# after the forward ops they differentiate (``MmBackward0`` for an ``aten::mm``),
# and each carries the forward op's sequence number. With ``compile``, the decoder
# and the loss are compiled each on its own, since ``torch.compile`` keeps no
# ``record_function`` inside a compiled graph, and the backward follows through
# AOTAutograd as one compiled backward per graph.


def make_step(model, optimizer, *, autocast, compile, loss, device):
    """One training step as a function of a (batch, seq + 1) token tensor; returns the loss."""
    decoder, head = model.model, model.lm_head
    loss_fn = chunked_cross_entropy if loss == "chunked" else full_cross_entropy
    if compile:
        options = (
            {"backend": "aot_eager"}
            if device == "cpu"
            else {"mode": None if compile == "default" else compile}
        )
        decoder, loss_fn = (
            torch.compile(decoder, dynamic=False, **options),
            torch.compile(loss_fn, dynamic=False, **options),
        )

    def step(tokens):
        inputs, labels = tokens[:, :-1], tokens[:, 1:]
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            with record_function("forward"):
                hidden = decoder(input_ids=inputs).last_hidden_state
            with record_function("loss"):
                value = loss_fn(hidden, head, labels)
        with record_function("backward"):
            value.backward()
        with record_function("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return value

    return step


def time_steps(train, steps, device):
    """Milliseconds per step, from one step's end to the next's (so a wait for data
    counts): CUDA events on the GPU, the wall clock on the CPU."""
    cuda = device == "cuda"
    marks = []
    for i in range(steps + 1):
        if i:
            train()
        marks.append(torch.cuda.Event(enable_timing=True) if cuda else time.perf_counter())
        if cuda:
            marks[-1].record()
    _sync(device)
    return [
        a.elapsed_time(b) if cuda else (b - a) * 1e3 for a, b in zip(marks, marks[1:], strict=False)
    ]


def _sync(device):
    """Wait for the GPU to finish what was launched (nothing to wait for on the CPU)."""
    if device == "cuda":
        torch.cuda.synchronize()


# %%
# The memory snapshot
# -------------------
#
# ``torch.cuda.memory._record_memory_history`` makes the caching allocator keep
# every allocation and free with the Python stack that asked for it;
# ``torch.cuda.memory._snapshot()`` returns them with the memory in use at the end
# (``_dump_snapshot(path)`` pickles the same to a file that
# https://pytorch.org/memory_viz opens). We record one step, keep each stack's few
# innermost frames outside PyTorch's and transformers' plumbing, store each distinct
# string, frame and stack once (pickle then writes a repeat as a reference), and
# write the pickle. To browse it offline, ``python -m torch.cuda._memory_viz
# trace_plot memory_snapshot.pickle -o memory_viz.html`` writes a page with the
# snapshot inside (the viewer's script loads from the web when opened).

PLUMBING = (
    "torch/nn/modules/module.py",
    "contextlib.py",
    "transformers/utils/",
    "torch/utils/_",
    "torch/_dynamo/",
)


def write_memory_snapshot(out_dir, snapshot, frames=4):
    """Write ``memory_snapshot.pickle``, a slimmed copy of ``snapshot``."""
    shared = {}

    def stack(entries):
        kept = [f for f in entries if not any(p in f["filename"] for p in PLUMBING)][:frames]
        kept = [
            shared.setdefault(
                (f["filename"], f["line"], f["name"]),
                {"filename": f["filename"], "line": f["line"], "name": f["name"]},
            )
            for f in kept
        ]
        return shared.setdefault(("stack", *map(id, kept)), kept)

    def slim(entry):
        return {
            shared.setdefault(k, k): stack(v)
            if k == "frames"
            else shared.setdefault(v, v)
            if isinstance(v, str)
            else v
            for k, v in entry.items()
        }

    snapshot["device_traces"] = [[slim(e) for e in trace] for trace in snapshot["device_traces"]]
    for segment in snapshot["segments"]:
        segment["blocks"] = [slim(b) for b in segment["blocks"]]
        segment["frames"] = stack(segment.get("frames", []))
    (Path(out_dir) / "memory_snapshot.pickle").write_bytes(pickle.dumps(snapshot))


# %%
# How a variant is measured
# -------------------------
#
# ``profile_train_step`` builds the model, its AdamW and its input, runs
# ``warmup_steps`` steps (the first one compiles, when asked), then times
# ``timed_steps`` steps without the profiler and writes ``timings.json`` (each
# step's ms) and ``results.json`` (the median step, tokens per second, MFU, peak
# memory). Like many training loops, each step reads its loss (``loss.item()``),
# which waits for the GPU to finish the step, unless ``read_loss=False``. It then
# profiles three steps, of which the trace keeps the third (``wait=1, warmup=1,
# active=1``), and waits for the GPU before that step ends so that every kernel
# the step launched is in it. ``memory=True`` also records the memory snapshot
# of one step and profiles with ``profile_memory=True``.


def profile_train_step(
    out_dir,
    *,
    device=None,
    batch=4,
    seq=SEQ,
    weights="fp32",
    optimizer="fused",
    compile=None,
    attention="sdpa",
    loss="full",
    checkpointing=False,
    loader=False,
    workers=0,
    pin=False,
    non_blocking=False,
    cpu_ms=40.0,
    read_loss=True,
    record_shapes=False,
    memory=False,
    timed_steps=8,
    warmup_steps=3,
):
    """Time, then profile, training steps of one setup; write ``trace.json``, return the table.

    Parameters
    ----------
    batch, seq
        Sequences per step and tokens per sequence.
    weights
        ``"fp32"`` (under bf16 autocast) or ``"bf16"``.
    optimizer
        ``"fused"``, ``"foreach"`` or ``"forloop"`` AdamW.
    compile
        ``None`` (eager) or a ``torch.compile`` mode: ``"default"``, ``"max-autotune-no-cudagraphs"``...
    attention
        As ``build_model`` takes it.
    loss
        ``"full"`` or ``"chunked"`` cross-entropy.
    checkpointing
        Activation checkpointing of every decoder layer.
    loader, workers, pin, non_blocking, cpu_ms
        The input: random tokens on the GPU, or a DataLoader as ``batches`` builds it.
    read_loss
        Read the loss every step (``loss.item()``: the CPU waits for the GPU), or once at the end.
    record_shapes, memory
        Record input shapes; record the memory snapshot and the profiler's memory events.
    timed_steps, warmup_steps
        Steps timed without the profiler, and steps run before them.
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    shape = "1b" if device == "cuda" else "tiny"
    # On the CPU: the tiny model, a small batch, a few steps (and SDPA for flex
    # attention, which has no backward on the CPU).
    if device != "cuda":
        attention = "causal" if attention == "flex" else attention
        batch, seq, cpu_ms, timed_steps, warmup_steps = (
            min(batch, 2),
            min(seq, 64),
            min(cpu_ms, 1.0),
            2,
            1,
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch._dynamo.reset()
    model = build_model(shape, device, weights, attention, seq)
    if (
        checkpointing
    ):  # transformers' name for it until 5.17; later ones call it activation checkpointing
        getattr(model, "activation_checkpointing_enable", model.gradient_checkpointing_enable)()
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4, **OPTIMIZERS[optimizer])
    step = make_step(
        model,
        optim,
        autocast=weights == "fp32",
        compile=compile,
        loss=loss,
        device=device,
    )
    data = batches(
        loader,
        batch=batch,
        seq=seq,
        vocab=model.config.vocab_size,
        device=device,
        pin=pin,
        non_blocking=non_blocking,
        cpu_ms=cpu_ms,
        workers=workers,
    )
    losses = []

    def train():
        """One step of a training loop: fetch a batch, step, read (or keep) the loss."""
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
    (out_dir / "results.json").write_text(
        json.dumps(
            {
                "tokens_per_s": round(tokens_per_s),
                "step_ms": round(median, 2),
                "step_ms_min": round(min(step_ms), 2),
                "step_ms_max": round(max(step_ms), 2),
                "peak_gib": round(peak_gib, 2) if peak_gib else None,
                "mfu_spec": round(tokens_per_s * flops / H200_BF16_FLOPS, 4)
                if device == "cuda"
                else None,
                "first_step_s": round(first_step_s, 2),
            }
        )
    )
    (out_dir / "timings.json").write_text(
        json.dumps(
            {
                "what": "ms per training step without the profiler, end to end",
                "step_ms": step_ms,
                "batch": batch,
                "seq": seq,
                "flops_per_token": flops,
                "params": params,
                "embedding_params": embedding,
                "losses": [float(v) for v in losses],
            }
        )
    )
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
# as a ``cudaDeviceSynchronize`` at the step's end.


def profile_steps(out_dir, train, device, **options):
    """Profile three steps, record the third, write ``trace.json``; return the table."""
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
# * ``eager``: one step lane by lane. The CPU's main thread launches the forward
#   and the loss, waits in ``backward`` while the autograd engine's thread launches
#   the backward, then launches the optimizer; the GPU runs behind it. Input shapes
#   are recorded (``record_shapes``), so each matrix multiplication's FLOPs can be
#   counted from the trace.
# * ``eager_foreach``, ``eager_forloop``: the ``optimizer`` region alone changes:
#   how many kernels AdamW launches per step, and how long the CPU takes to launch
#   them against how long the GPU takes to run them.
# * ``eager_bf16``: the casts leave the forward, and the weights, gradients and
#   AdamW's two moments take half the memory (AdamW then keeps its moments in bf16
#   too, a precision trade this example does not measure).
# * ``eager_checkpoint``: the backward runs each layer's forward again before
#   differentiating it; peak memory against time per step.
# * ``memory``: when in the step the peak is reached, in the snapshot's timeline and
#   in the profiler's memory events (an instant event per allocation and free, with
#   the total allocated after it).
# * ``loader_*``: the ``data`` region, the gaps in the GPU lane it causes, and the
#   copy and the waits after it.
# * ``compile``: the baseline compiled. The step runs fewer, fused kernels in
#   forward and backward; the first step's time (``first_step_s``) includes the
#   compilation.
# * ``compile_b8_bf16``, ``causal`` and the ``causal_*`` variants: the attempts,
#   each one lever. ``final``: the best MFU found, with longer sequences, at the
#   same 16,384 tokens per step. ``causal`` and ``final`` record shapes too, for
#   the account of where their time goes per kernel class.

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
# A further lever, as a setting of ``profile_train_step`` for a variant of your own:
# ``compile="max-autotune-no-cudagraphs"`` (Inductor times candidate kernels for each
# matrix multiplication: many minutes of compiling).

# How the site records these variants (which share a process, which compile cache,
# what of each trace it keeps) is its own business: ``docs/recordings/plan.json``.


class Run:
    """What one profiled run left: its name, the profiler's table and the trace file."""

    def __init__(self, name, table, trace_path, device):
        self.name, self.table, self.trace_path, self.device = name, table, trace_path, device

    def __repr__(self):
        if self.device == "cuda":
            where = f"live on {torch.cuda.get_device_name(0)}"
        else:
            where = (
                "on the CPU with the tiny model: no CUDA device here, so the profiler "
                "recorded CPU activity only and the trace has no GPU lane"
            )
        return f"{self.name}: profiled {where}; trace written to {self.trace_path}"


def run(name, *, out_root=Path("traces") / "06_train_step"):
    """Profile one variant of ``VARIANTS`` and return a Run."""
    harness, params = VARIANTS[name]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    out_dir = Path(out_root) / name
    table = harness(out_dir, device=device, **params)
    trace_path = Path(out_root) / f"{name}.json"
    (out_dir / "trace.json").replace(trace_path)
    for extra in out_dir.iterdir():  # timings.json, results.json, the memory snapshot
        extra.replace(Path(out_root) / f"{name}.{extra.name}")
    out_dir.rmdir()
    result = Run(name, table, trace_path, device)
    print(result)
    return result


# sphinx_gallery_start_ignore
# When this site is built, ``run`` replays what the H200 recorded (the build
# machine may have no GPU). A downloaded copy of this file never takes this branch.
if "tracesite" in sys.modules:
    run = sys.modules["tracesite"].replayer(run)
# sphinx_gallery_end_ignore


def main(argv):
    """Profile one variant from the command line."""
    parser = argparse.ArgumentParser(description="Profile a training step of a Llama model.")
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="run one named variant")
    args = parser.parse_args(argv)
    if args.list:
        for name, (harness, params) in VARIANTS.items():
            print(f"{name:>16}  {harness.__name__}  {params}")
        return 0
    print(run(args.variant or "eager").table)
    return 0


# Flags given: profile what they name and stop. (Inside Jupyter, sys.argv holds the
# kernel's own flags, so a notebook always runs the page below.)
if __name__ == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
    sys.exit(main(sys.argv[1:]))

# %%
# The baseline: the table
# -----------------------
#
# Guess first: in an eager training step at batch 4, which kernels take the GPU's
# time, and how much of it goes to the optimizer? The table sums the profiled step
# by operator; the region rows (``forward``, ``loss``, ``backward``, ``optimizer``)
# give each phase's total.

baseline = run("eager")
print(baseline.table)

# %%
# The final variant: the table
# ----------------------------
#
# Compiled, bf16 weights, attention causal, 2 sequences of 8,192 tokens: compare
# the kernels at the top with the baseline's, and find the attention kernels by name.

final = run("final")
print(final.table)

# %%
# Every variant
# -------------
#
# Their settings, as ``profile_train_step`` takes them; on the site, the table of
# their recordings (three repeats each, each in a fresh process) follows.

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")

# sphinx_gallery_start_ignore
sys.modules["tracesite"].all_recordings_html() if "tracesite" in sys.modules else None
# sphinx_gallery_end_ignore
