"""
One nn.Linear
=============

The next rung after Part 1's matmul + add: one ``nn.Linear(in_dim, out_dim,
bias=True)``, which computes ``x @ weight.T + bias``. This page profiles it at
the Hugging Face series' small shape (a batch of 1024 rows, 32 features in, 64
out) and at a shape where the GEMM dominates (8192 rows, 4096 in, 4096 out),
eager and compiled, and shows the table and the trace of each. Every variant is
listed in ``VARIANTS`` and read in :doc:`/chapters/part2`.

This file needs only torch. On a machine with a CUDA GPU it profiles live; on
the CPU it profiles the same code there (the trace then has no GPU lane, and the
large shape shrinks so that it finishes quickly). Run it yourself::

    python 02_linear.py                          # the two variants of this page
    python 02_linear.py --list                   # every variant, with its settings
    python 02_linear.py --variant small_compile  # one named variant

Each run writes its trace to ``traces/02_linear/<name>.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import argparse
import sys
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# %%
# The workload and how it is profiled
# -----------------------------------
#
# ``profile_linear`` builds the layer and its input, warms up (and compiles, if
# asked), then profiles ``wait + warmup + active`` forward passes with a
# ``schedule``, recording input shapes so that the trace carries each op's shapes
# and strides. The trace is written from ``on_trace_ready``.

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}


def profile_linear(
    out_dir,
    *,
    batch=1024,
    in_dim=32,
    out_dim=64,
    dtype="bfloat16",
    compile=None,
    active=3,
    device=None,
):
    """Profile ``nn.Linear(in_dim, out_dim)`` on a ``(batch, in_dim)`` input; write ``trace.json``."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    dt = DTYPES[dtype]
    layer = nn.Linear(in_dim, out_dim, bias=True).to(device=device, dtype=dt)
    x = torch.randn(batch, in_dim, device=device, dtype=dt)
    f = layer
    if compile:
        torch._dynamo.reset()
        f = torch.compile(layer, mode=None if compile == "default" else compile)

    def step():
        with torch.no_grad(), record_function("linear_fwd"):
            return f(x)

    for _ in range(5):  # warm up: cuBLAS picks its kernels, compile compiles
        step()
    if device == "cuda":
        torch.cuda.synchronize()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
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

VARIANTS = {
    "small": (profile_linear, {"batch": 1024, "in_dim": 32, "out_dim": 64}),
    "big": (profile_linear, {"batch": 8192, "in_dim": 4096, "out_dim": 4096}),
    "small_compile": (
        profile_linear,
        {"batch": 1024, "in_dim": 32, "out_dim": 64, "compile": "default"},
    ),
    "big_compile": (
        profile_linear,
        {"batch": 8192, "in_dim": 4096, "out_dim": 4096, "compile": "default"},
    ),
}
COLD_VARIANTS = ()

#: On the CPU, dimensions above this shrink to it, so that a run finishes quickly.
CPU_MAX_DIM = 256


class Run:
    """What one profiled run left: its name, the profiler's table and the trace file."""

    def __init__(self, name, table, trace_path, device):
        self.name, self.table, self.trace_path, self.device = name, table, trace_path, device

    def __repr__(self):
        if self.device == "cuda":
            where = f"live on {torch.cuda.get_device_name(0)}"
        else:
            where = (
                "on the CPU: no CUDA device here, so the profiler recorded CPU activity only "
                "and the trace has no GPU lane"
            )
        return f"{self.name}: profiled {where}; trace written to {self.trace_path}"


def run(name, *, out_root=Path("traces") / "02_linear"):
    """Profile one variant of ``VARIANTS`` and return a Run."""
    harness, params = VARIANTS[name]
    params = dict(params)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        for key in ("batch", "in_dim", "out_dim"):
            params[key] = min(params[key], CPU_MAX_DIM)
    out_dir = Path(out_root) / name
    table = harness(out_dir, device=device, **params)
    trace_path = Path(out_root) / f"{name}.json"
    (out_dir / "trace.json").replace(trace_path)
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
    parser = argparse.ArgumentParser(description="Profile one nn.Linear.")
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="run one named variant")
    args = parser.parse_args(argv)
    if args.list:
        for name, (harness, params) in VARIANTS.items():
            print(f"{name:>14}  {harness.__name__}  {params}")
        return 0
    print(run(args.variant or "small").table)
    return 0


# Flags given: profile what they name and stop. (Inside Jupyter, sys.argv holds the
# kernel's own flags, so a notebook always runs the page below.)
if __name__ == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
    sys.exit(main(sys.argv[1:]))

# %%
# The small Linear: the table
# ---------------------------
#
# 1024 rows of 32 features into 64. Look for ``aten::linear``, ``aten::t`` and
# ``aten::addmm``, and for how many GPU kernels one forward pass runs.

small = run("small")
print(small.table)

# %%
# The large Linear: the table
# ---------------------------
#
# 8192 rows of 4096 features into 4096: the GEMM now dominates the GPU time.

big = run("big")
print(big.table)

# %%
# One forward pass on the timeline
# --------------------------------
#
# Drawn by ``tracereader`` if it is installed; otherwise open the trace at
# https://ui.perfetto.dev.

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    for result in (small, big):
        tr = tracereader.load(result.trace_path)
        tracereader.timeline(tr, step=tr.steps[-1].name, width_in=9, fig=plt.figure())

# %%
# Every variant
# -------------

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>14}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")

# sphinx_gallery_start_ignore
sys.modules["tracesite"].all_recordings_html() if "tracesite" in sys.modules else None
# sphinx_gallery_end_ignore
