"""Code the stories of ``06_train_step`` share: the model, its loss, the data, the step,
the story's plumbing.

Not a story of its own: ``06_train_step.py`` imports what it needs from here, and the
site's download of that story is one file with this code pasted in where it imports it,
so it runs with only torch and ``transformers``. The recordings' code hash reads the
story the same way, as that one file.
"""

import gc
import json
import pickle
import random
import re
import statistics
import sys
import time
import types
import zlib
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# The sequence length of every GPU variant, and the H200 SXM's dense bf16 peak from
# its datasheet: the denominator of the MFU in the site's recordings, which ran on an
# H200. What you run goes through ``judge_flops``, which divides by your GPU's instead.
SEQ = 2048
H200_BF16_FLOPS = 989e12
# Dense bf16 Tensor Core peaks (FP32 accumulate) in NVIDIA's datasheets and whitepapers,
# TFLOP/s, by the device name torch reports (upper-cased; the first match wins).
# tracereader's datasheet table holds the same rows, with each figure's source.
DATASHEET_TFLOPS = (
    ("A100 SXM 80GB", r"\bA100\b.*SXM.*80GB", 312),
    ("A100 SXM 40GB", r"\bA100\b.*SXM", 312),
    ("A100 PCIe 80GB", r"\bA100\b.*(80GB.*PCIE|PCIE.*80GB)", 312),
    ("A100 PCIe 40GB", r"\bA100\b.*PCIE", 312),
    ("A10", r"\bA10$", 125),
    ("H100 SXM", r"\bH100\b.*(SXM|80GB HBM3)", 989),
    ("H100 PCIe", r"\bH100\b.*PCIE", 756),
    ("H100 NVL", r"\bH100\b.*NVL", 835),
    ("H200 SXM", r"\bH200\b(?!.*NVL)", 989),
    ("H200 NVL", r"\bH200\b.*NVL", 835),
    ("B200", r"\bB200\b", 2250),
    ("L40S", r"\bL40S\b", 362),
    ("L40", r"\bL40\b", 181),
    ("L4", r"\bL4\b", 121),
    ("GeForce RTX 3090", r"\bRTX 3090$", 71),
    ("GeForce RTX 4090", r"\bRTX 4090$", 165.2),
    ("GeForce RTX 5090", r"\bRTX 5090$", 209.5),
)
# The dense bf16 peak given by hand (``--peak-tflops``, TFLOP/s), which ``judge_flops``
# then divides by instead of the table's row or a measured GEMM.
PEAK_BY_HAND = {"tflops": None}


def gemm_tflops(n=8192, runs=20):
    """TFLOP/s that ``n`` x ``n`` x ``n`` bf16 matrix products reach on this GPU, timed with
    CUDA events after a warm-up: the reference an MFU divides by on a GPU that
    ``DATASHEET_TFLOPS`` does not know. It runs after a variant, never inside one."""
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    out = torch.empty_like(a)
    for _ in range(3):  # cuBLAS picks its kernel, the clocks come up
        torch.matmul(a, b, out=out)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        torch.matmul(a, b, out=out)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) * 1e-3
    a = b = out = None
    torch.cuda.empty_cache()
    return round(2 * n**3 * runs / seconds / 1e12, 1)


def judge_flops(results_path, timings_path, device_name, peak_tflops=None, measure=gemm_tflops):
    """Rewrite ``results.json`` so that ``mfu_spec`` divides by this GPU's dense bf16 peak,
    and return one line that says which one. The peak, first found of: ``peak_tflops``
    (default ``PEAK_BY_HAND``, what ``--peak-tflops`` gave), this GPU's row of
    ``DATASHEET_TFLOPS``, what ``measure()`` returns (a large GEMM's TFLOP/s, measured
    now); None with none. ``results.json`` names it: ``spec_source`` (``"flag"``,
    ``"datasheet"``, ``"measured GEMM"`` or None), ``spec_gpu``, ``spec_tflops``."""
    results = json.loads(Path(results_path).read_text())
    flops = json.loads(Path(timings_path).read_text())["flops_per_token"]
    achieved = results["tokens_per_s"] * flops / 1e12
    peak_tflops = peak_tflops or PEAK_BY_HAND["tflops"]
    row = next((r for r in DATASHEET_TFLOPS if re.search(r[1], device_name.strip().upper())), None)
    measured = measure() if measure and not peak_tflops and row is None else None
    if peak_tflops:
        source, gpu, spec = "flag", device_name, peak_tflops
        what = f"the {spec} TFLOP/s given by --peak-tflops for {device_name}"
    elif row:
        source, gpu, spec = "datasheet", row[0], row[2]
        what = f"the {spec} TFLOP/s dense bf16 in the {gpu} datasheet"
    elif measured:
        source, gpu, spec = "measured GEMM", device_name, measured
        what = (
            f"the {spec} TFLOP/s a bf16 GEMM reached on {device_name}, measured: no "
            "datasheet peak for it in this script (give one with --peak-tflops)"
        )
    else:
        source = gpu = spec = None
    results["spec_source"], results["spec_gpu"], results["spec_tflops"] = source, gpu, spec
    results["mfu_spec"] = round(achieved / spec, 4) if spec else None
    Path(results_path).write_text(json.dumps(results))
    if spec is None:
        return (
            f"{achieved:.0f} TFLOP/s by the MFU's count; no peak known for {device_name} "
            "(give one with --peak-tflops)"
        )
    return f"{achieved:.0f} TFLOP/s by the MFU's count: MFU {results['mfu_spec']:.3f} of {what}"


def command_line(variants, run, argv):
    """``--variant NAME [--peak-tflops X]``: profile that variant and print its table.
    ``--peak-tflops``: your GPU's dense bf16 peak in TFLOP/s, which the MFU then divides
    by instead of the table's row (``judge_flops``)."""
    pairs = list(zip(argv[::2], argv[1::2], strict=False))
    flags = dict(pairs)
    try:
        peak = float(flags["--peak-tflops"]) if "--peak-tflops" in flags else None
    except ValueError:
        peak = float("nan")
    if (
        len(argv) % 2
        or len(flags) != len(pairs)
        or not set(flags) <= {"--variant", "--peak-tflops"}
        or flags.get("--variant") not in variants
        or (peak is not None and not 0 < peak < float("inf"))
    ):
        print(
            f"usage: 06_train_step.py --variant NAME [--peak-tflops X], NAME one of "
            f"{list(variants)}, X your GPU's dense bf16 peak in TFLOP/s",
            file=sys.stderr,
        )
        return 2
    PEAK_BY_HAND["tflops"] = peak
    try:
        print(run(flags["--variant"]).table)
    finally:
        PEAK_BY_HAND["tflops"] = None
    return 0


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
# That undercounts: tied, as here, the table is also the output projection, a real
# matrix product. nanoGPT and MosaicML's llm-foundry count every parameter,
# 6 x all parameters + the same attention term, and so does the site's Part 5;
# Megatron-LM also counts causal attention half.


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
# The plumbing of the story
# -------------------------
#
# ``story_run`` gives the story its ``run(name)`` and, when it runs as a script with
# flags, its command line (``command_line``), in one line of the story.


def story_run(variants, module_name):
    """The story's ``run(name)``: it profiles one variant of ``variants``, moves what the run
    wrote to ``traces/06_train_step/NAME.*``, says where it ran, and on a GPU redoes the MFU
    against that GPU's peak (``judge_flops``). Run as a script with flags (``module_name``,
    the story's ``__name__``, is ``"__main__"``), the story ends here: ``command_line``
    profiles the variant the flags name, prints its table and exits."""

    def run(name):
        harness, params = variants[name]
        device = "cuda" if torch.cuda.is_available() else "cpu"
        out = Path("traces") / "06_train_step"
        table = harness(out / name, device=device, **params)
        trace_path = (out / name / "trace.json").replace(out / f"{name}.json")
        for made in (out / name).iterdir():  # timings.json, results.json, the memory snapshot
            made.replace(out / f"{name}.{made.name}")
        (out / name).rmdir()
        where = f"live on {torch.cuda.get_device_name(0)}" if device == "cuda" else (
            "on the CPU with the tiny model: no CUDA device here, so no GPU lane")  # fmt: skip
        print(f"{name}: profiled {where}; trace written to {trace_path}")
        if device == "cuda":  # the MFU against this GPU's peak, not the H200's
            results, timings = (out / f"{name}.{f}.json" for f in ("results", "timings"))
            print(f"{name}: {judge_flops(results, timings, torch.cuda.get_device_name(0))}")
        return types.SimpleNamespace(name=name, table=table, trace_path=trace_path)

    if module_name == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
        sys.exit(command_line(variants, run, sys.argv[1:]))
    return run
