"""For the ``04_attention`` stories: attention written out and by SDPA, the backend
pins, the balanced order of versions, the series' shape, and the plumbing.

Each story imports from here by name. The site offers a story as one file, this module
pasted over its import, and the code hash of a recording reads it the same way; the
imports below are therefore all of the stories' imports, in order, so that nothing a
harness reaches moves.
"""

import contextlib
import json
import math
import sys
import time
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# Attention written out in five steps: ``q @ kᵀ`` gives the score matrix of shape
# ``(batch, heads, seq, seq)``; scale it, mask each query's future keys with ``-inf``,
# softmax each row, multiply by ``v``. Each step is its own operator (story 04a reads
# its trace).


def naive_attention(q, k, v):
    # Causal attention in five steps, each its own operator.
    scores = q @ k.transpose(-2, -1)
    scores = scores * (1.0 / math.sqrt(q.shape[-1]))
    seq = q.shape[-2]
    causal = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(causal, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


# The same in one call of SDPA, PyTorch's ``scaled_dot_product_attention``, and its
# backends: ``math`` (the reference, ordinary operators), ``efficient`` (a CUTLASS
# kernel), ``flash`` (FlashAttention-2) and ``cudnn`` (NVIDIA's). ``_pin`` gives a
# version's pin, a context manager from ``torch.nn.attention.sdpa_kernel`` that allows
# only the backend named; a version with no backend to pin (``naive``, ``default``)
# gets a context that does nothing.


def sdpa_attention(q, k, v):
    # Causal attention by PyTorch's fused scaled_dot_product_attention.
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


BACKENDS = {
    "math": SDPBackend.MATH,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
}


def _pin(impl):
    # The backend pin of a version, entered outside the timed region.
    return sdpa_kernel([BACKENDS[impl]]) if impl in BACKENDS else contextlib.nullcontext()


# A balanced order of versions: read as a loop, every version follows every other
# version exactly once. ``balanced_cycle`` finds one, an Euler circuit of the complete
# directed graph on the versions, with Hierholzer's algorithm: walk unused edges until
# stuck, then back up, emitting the nodes in reverse.

INTERLEAVED = ("cudnn", "flash", "efficient", "math", "default")


def balanced_cycle(n):
    # Indexes 0..n-1 in an order where, read as a loop, every ordered pair of two
    # different indexes is neighbours exactly once.
    unused = {i: [j for j in range(n) if j != i] for i in range(n)}
    stack, circuit = [0], []
    while stack:
        if unused[stack[-1]]:
            stack.append(unused[stack[-1]].pop(0))
        else:
            circuit.append(stack.pop())
    return tuple(circuit[::-1][:-1])  # the circuit returns to its start: drop the repeat


#: The Hugging Face series' shape: batch 8, 16 heads, sequence 1024, head_dim 64.
SHAPE = {"batch": 8, "heads": 16, "seq": 1024, "head_dim": 64}


# The plumbing of every story
# ---------------------------


# ``run_variant(variants, name)`` is every story's ``run(name)``: it runs the named
# variant of the story's ``VARIANTS`` and says where. On the CPU it shrinks batch, heads
# and sequence to at most 128 so the run finishes sooner; the trace then has no GPU
# lane. The trace lands in ``traces/04_attention/<name>.json``, the harness's
# ``timings.json`` beside it as ``<name>.timings.json``.
def run_variant(variants, name):
    harness, params = variants[name]
    cuda = torch.cuda.is_available()
    if not cuda:
        params = {
            k: min(v, 128) if k in ("batch", "heads", "seq") else v for k, v in params.items()
        }
    out = Path("traces") / "04_attention" / name
    table = harness(out, device="cuda" if cuda else "cpu", **params)
    trace = (out / "trace.json").replace(out.with_suffix(".json"))
    (out / "timings.json").replace(out.with_suffix(".timings.json"))
    out.rmdir()
    where = f"live on {torch.cuda.get_device_name(0)}" if cuda else "on the CPU: no GPU lane"
    print(f"{name}: profiled {where}; trace written to {trace}")
    return types.SimpleNamespace(name=name, table=table, trace_path=trace)


def command_line(variants, run, argv):
    """``python STORY.py VARIANT``: run that variant and print its table (exit status 0),
    or say in one line, with no traceback, that there is no such variant (exit status 2)."""
    if argv[0] not in variants:
        print(f"no variant {argv[0]!r}; choose one of {', '.join(variants)}", file=sys.stderr)
        return 2
    print(run(argv[0]).table)
    return 0


# ``story_run(VARIANTS, __name__)`` is the line that gives a story its ``run(name)``:
# ``run_variant`` on the story's ``VARIANTS``, or, while the site builds, the replay of
# the recordings instead. Called from a story run as ``python STORY.py VARIANT`` (the
# story's ``__name__`` is then ``"__main__"``), it runs that one variant by
# ``command_line`` and exits with its status.
def story_run(variants, module_name=None):
    def run(name):
        return run_variant(variants, name)

    # sphinx_gallery_start_ignore
    if "tracesite" in sys.modules:  # the site build replays the recordings instead
        run = sys.modules["tracesite"].replayer(run)
    # sphinx_gallery_end_ignore
    if module_name == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
        sys.exit(command_line(variants, run, sys.argv[1:]))
    return run


# ``print_variants(variants)`` prints one line per variant of a story: its name, then its
# harness called with the variant's settings.
def print_variants(variants):
    for name, (harness, params) in variants.items():
        settings = ", ".join(f"{k}={v!r}" for k, v in params.items())
        print(f"{name:>16}  {harness.__name__}({settings})")
