"""
A GeGLU MLP, eager, compiled and hand-fused
===========================================

Three Linears make the MLP block of many transformers: ``gate_proj`` and
``up_proj`` map ``dim`` features to ``hidden``, ``down_proj`` maps back, and
between them ``gelu(gate, approximate="tanh") * up`` (GeGLU). No biases. This
page profiles it at the Hugging Face series' shape (batch 64, sequence 128,
dim 768, hidden 3072) and at a larger one (batch 8, sequence 512, dim 4096,
hidden 11008): eager, under ``torch.compile`` in three modes, and with the
gelu-and-multiply replaced by the hand-written Triton kernel of Liger-Kernel.
Every variant is listed in ``VARIANTS`` and read in :doc:`/chapters/part2`.

This file needs only torch (the ``liger`` variants also need
``pip install liger-kernel`` and a CUDA GPU). On a machine with a CUDA GPU it
profiles live; on the CPU it profiles a shrunken MLP there, without a GPU lane.
Run it yourself::

    python 03_mlp.py                          # the eager MLP
    python 03_mlp.py --list                   # every variant, with its settings
    python 03_mlp.py --variant compile        # one named variant

Each run writes its trace to ``traces/03_mlp/<name>.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# %%
# The MLP
# -------


class GeGLUMLP(nn.Module):
    """``down_proj(gelu(gate_proj(x), approximate="tanh") * up_proj(x))``, no biases."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class LigerGeGLUMLP(GeGLUMLP):
    """The same MLP with gelu-and-multiply done by Liger-Kernel's fused Triton kernel."""

    def forward(self, x):
        from liger_kernel.ops.geglu import LigerGELUMulFunction

        return self.down_proj(LigerGELUMulFunction.apply(self.gate_proj(x), self.up_proj(x)))


# %%
# How it is profiled
# ------------------
#
# ``profile_mlp`` builds the MLP in bf16 with its input, warms up (compiling
# first, if asked), then profiles ``wait + warmup + active`` forward passes,
# each inside ``record_function("mlp_fwd")``, with input shapes recorded.


def profile_mlp(
    out_dir, *, batch=64, seq=128, dim=768, hidden=3072, compile=None, kernel="torch", active=3,
    device=None,
):
    """Profile one GeGLU MLP forward per step; write ``trace.json``, return the table."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cls = GeGLUMLP
    if kernel == "liger":
        if device != "cuda":
            print("liger's Triton kernels need a CUDA GPU: profiling the torch MLP instead")
        else:
            try:
                import liger_kernel  # noqa: F401
            except ImportError:
                raise SystemExit("the liger variants need Liger-Kernel: pip install liger-kernel") from None
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

    for _ in range(5):  # warm up: compile, autotune, record CUDA graphs
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

SMALL = {"batch": 64, "seq": 128, "dim": 768, "hidden": 3072}
BIG = {"batch": 8, "seq": 512, "dim": 4096, "hidden": 11008}
VARIANTS = {
    "eager": (profile_mlp, {**SMALL}),
    "eager_big": (profile_mlp, {**BIG}),
    "compile": (profile_mlp, {**SMALL, "compile": "default"}),
    "compile_big": (profile_mlp, {**BIG, "compile": "default"}),
    "autotune": (profile_mlp, {**SMALL, "compile": "max-autotune-no-cudagraphs"}),
    "reduce_overhead": (profile_mlp, {**SMALL, "compile": "reduce-overhead"}),
    "liger": (profile_mlp, {**SMALL, "kernel": "liger"}),
    "liger_big": (profile_mlp, {**BIG, "kernel": "liger"}),
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


def run(name, *, out_root=Path("traces") / "03_mlp"):
    """Profile one variant of ``VARIANTS`` and return a Run."""
    harness, params = VARIANTS[name]
    params = dict(params)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        for key in ("batch", "seq", "dim", "hidden"):
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
    parser = argparse.ArgumentParser(description="Profile a GeGLU MLP.")
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
# Eager: the table
# ----------------
#
# Guess first: how many GPU kernels does one forward pass run? Three GEMMs, a
# gelu and a multiply.

eager = run("eager")
print(eager.table)

# %%
# Compiled: the table
# -------------------
#
# ``torch.compile`` fuses the gelu and the multiply into one Triton kernel.

compiled = run("compile")
print(compiled.table)

# %%
# One forward pass on the timeline
# --------------------------------

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    for result in (eager, compiled):
        tr = tracereader.load(result.trace_path)
        tracereader.timeline(tr, step=tr.steps[-1].name, width_in=9, fig=plt.figure())

# %%
# Every variant
# -------------

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")

# sphinx_gallery_start_ignore
sys.modules["tracesite"].all_recordings_html() if "tracesite" in sys.modules else None
# sphinx_gallery_end_ignore
