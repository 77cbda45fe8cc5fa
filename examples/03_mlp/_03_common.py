"""Shared by the ``03_mlp`` stories: the GeGLU MLP, ``profile_mlp``, the plumbing.

A story does ``from _03_common import ...`` after its own imports. Its download from the
site has this file pasted in there, so it runs with torch alone; the recordings' code
hash pastes it in the same way. Its import block repeats every import of every story of
this set, in their order, so that the pasted copy binds each name where the story did.
"""

import json
import os
import re
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# ``GeGLUMLP`` is the MLP block of many transformers: ``gate_proj`` and ``up_proj`` widen
# each token from ``dim`` to ``hidden`` features, ``gelu(gate, approximate="tanh") * up``
# gates one with the other (GeGLU), and ``down_proj`` maps back to ``dim``. No biases.
# Written in PyTorch, a forward is three GEMMs, a gelu and a multiply.


class GeGLUMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


# ``LigerGeGLUMLP`` is the same MLP with the gelu-and-multiply done by one hand-written
# Triton kernel from Liger-Kernel (imported only when it is used); its story is 03e.


class LigerGeGLUMLP(GeGLUMLP):
    def forward(self, x):
        from liger_kernel.ops.geglu import LigerGELUMulFunction

        return self.down_proj(LigerGELUMulFunction.apply(self.gate_proj(x), self.up_proj(x)))


# ``profile_mlp`` profiles one MLP forward per step, writes ``trace.json`` into
# ``out_dir`` and returns the profiler's table. It builds the MLP in bf16 and its
# input, a ``(batch, seq, dim)`` tensor, seeded so that every run sees the same numbers.
# Its switches: ``compile``, a ``torch.compile`` mode (after resetting Dynamo);
# ``kernel="liger"``, ``LigerGeGLUMLP``; ``cold=True``, no warm-up at all. Otherwise
# five forwards run before the profiler starts.


def profile_mlp(
    out_dir,
    *,
    batch=64,
    seq=128,
    dim=768,
    hidden=3072,
    compile=None,
    kernel="torch",
    active=3,
    cold=False,
    device=None,
):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cls = GeGLUMLP
    if kernel == "liger":
        if device != "cuda":
            print("liger's Triton kernels need a CUDA GPU: profiling the torch MLP instead")
        else:
            try:
                import liger_kernel  # noqa: F401
            except ImportError:
                raise SystemExit(
                    "the liger variants need Liger-Kernel: pip install liger-kernel"
                ) from None
            cls = LigerGeGLUMLP
    torch.manual_seed(0)
    mlp = cls(dim, hidden).to(device=device, dtype=torch.bfloat16)
    x = torch.randn(batch, seq, dim, device=device, dtype=torch.bfloat16)
    f = mlp
    if compile:
        torch._dynamo.reset()
        f = torch.compile(mlp, mode=None if compile == "default" else compile)

    def step():
        with torch.no_grad(), record_function("mlp_fwd"):
            return f(x)

    if not cold:
        for _ in range(5):  # warm up: compile, autotune, record CUDA graphs
            step()
    return _profile_steps(step, out_dir, active=active, skip=0 if cold else 2, device=device)


# ``_profile_steps`` runs ``skip`` steps that the profiler's schedule does not keep (its
# wait and warm-up steps), then ``active`` steps that it records, with input shapes, so
# that each op in the trace carries its shapes. It writes ``trace.json`` into
# ``out_dir`` and returns the table, sorted by GPU time when there is a GPU.


def _profile_steps(step, out_dir, *, active, skip, device):
    if device == "cuda":
        torch.cuda.synchronize()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities,
        schedule=schedule(wait=skip // 2, warmup=skip - skip // 2, active=active, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(out_dir / "trace.json")),
        record_shapes=True,
    ) as prof:
        for _ in range(skip + active):
            step()
            prof.step()  # one forward is one profiler step
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# The two shapes of this set: the Hugging Face series' (8192 tokens of width 768), and
# a Llama-7B-sized MLP over 4096 tokens.
SMALL = {"batch": 64, "seq": 128, "dim": 768, "hidden": 3072}
BIG = {"batch": 8, "seq": 512, "dim": 4096, "hidden": 11008}


# The plumbing of every story
# ---------------------------

#: On the CPU, every size above this one shrinks to it (a shrunken MLP, no GPU lane).
CPU_MAX_DIM = 256


# ``run_variant(variants, name)`` is what every story's ``run(name)`` does (``story_run``
# below makes it): it profiles the named variant of the story's ``VARIANTS`` into
# ``traces/03_mlp/<name>/``, says where it ran and what it wrote, and returns the run's
# name, the profiler's table and the trace's path.
def run_variant(variants, name):
    harness, params = variants[name]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":  # no CUDA device: the trace will have no GPU lane
        params = {k: min(v, CPU_MAX_DIM) if type(v) is int else v for k, v in params.items()}
    out_dir = Path("traces") / "03_mlp" / name
    table = harness(out_dir, device=device, **params)
    where = "live on the GPU" if device == "cuda" else "on the CPU, so there is no GPU lane"
    written = ", ".join(sorted(p.name for p in out_dir.iterdir()))
    print(f"{name}: profiled {where}; trace written to {out_dir / 'trace.json'} ({written})")
    return types.SimpleNamespace(name=name, table=table, trace_path=out_dir / "trace.json")


# ``story_run(VARIANTS, __name__)`` is a story's one line of plumbing: it returns the
# story's ``run(name)``, ``run_variant`` on its variants, or, while the site builds, the
# replay of the recordings in its stead. Given the story's ``__name__``, it gives the
# story its command line too: ``python STORY.py VARIANT`` profiles that variant, prints
# its table and exits (inside Jupyter, ``sys.argv`` holds the kernel's own flags, so a
# notebook runs the page). A story run only as a whole leaves ``__name__`` out.
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


def command_line(variants, run, argv):
    """``python STORY.py VARIANT``: profile that variant and print its table (exit status
    0), or say in one line that there is no such variant (exit status 2)."""
    if argv[0] not in variants:
        print("unknown variant; choose one of:", *variants, file=sys.stderr)
        return 2
    print(run(argv[0]).table)
    return 0


# ``optional_tracereader()`` is :mod:`tracereader` where it is installed; elsewhere it
# says in one line where to open the trace instead, and is None, so that a story reads
# and draws its traces only ``if tracereader``.
def optional_tracereader():
    try:
        import tracereader
    except ImportError:  # only torch here: the trace file is still there to open in Perfetto
        print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")
        return None
    return tracereader
