"""
A GeGLU MLP, eager, compiled and hand-fused
===========================================

Three Linears make the MLP block of many transformers: ``gate_proj`` and
``up_proj`` map ``dim`` features to ``hidden``, ``down_proj`` maps back, and
between them ``gelu(gate, approximate="tanh") * up`` (GeGLU). No biases. This
page profiles it at the Hugging Face series' shape (batch 64, sequence 128,
dim 768, hidden 3072) and at a larger one (batch 8, sequence 512, dim 4096,
hidden 11008): eager, under ``torch.compile`` in three modes (and, from an empty compile cache, the
time each mode takes to compile), and with the
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
import json
import os
import re
import shutil
import sys
import tempfile
import time
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
    """Profile one GeGLU MLP forward per step; write ``trace.json``, return the table.

    ``cold=True`` skips the warm-up and the schedule's wait and warmup steps, so that
    the process's very first forward is in the trace.
    """
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


def _profile_steps(step, out_dir, *, active, skip, device):
    """Profile ``skip`` unrecorded steps (the schedule's wait and warmup) and ``active``
    recorded ones; write ``trace.json`` into ``out_dir`` and return the table."""
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
            prof.step()
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# What a first compile costs
# --------------------------
#
# Inductor keeps what it compiles in a cache on disk (``TORCHINDUCTOR_CACHE_DIR``,
# Triton's compiled kernels and max-autotune's timing results included), so the
# second run of a script compiles much faster than the first. ``profile_compile_cold``
# points that cache at an empty folder, as on a fresh machine, and times the first
# call: Dynamo's tracing, Inductor's code generation, Triton's compiler and, under
# max-autotune, the benchmarking of every GEMM candidate. Under max-autotune Inductor
# prints an ``AUTOTUNE`` report to stderr, one block per GEMM shape with the fastest
# candidates and their times; the harness keeps it (and still prints it), writes
# both to ``timings.json``, then profiles warm forwards as ``profile_mlp`` does.

AUTOTUNE_HEADER = r"^AUTOTUNE (\w+)\((.*)\)$"
AUTOTUNE_CHOICE = r"^\s+(\S+) ([0-9.]+) ms ([0-9.]+)%\s*(.*)$"
AUTOTUNE_TOOK = (
    r"AUTOTUNE benchmarking takes ([0-9.]+) seconds and ([0-9.]+) seconds "
    r"precompiling for (\d+) choices"
)


def parse_autotune_report(text):
    """The ``AUTOTUNE`` blocks Inductor prints, as dicts: op, sizes, choices (name, ms,
    description; the fastest first, as many as it prints), seconds spent benchmarking
    and precompiling, how many choices were timed, its ``Autotune Choices Stats`` line
    (when printed) and the candidates that failed to compile before it (one line each)."""
    blocks, stats, failed = [], None, []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Autotune Choices Stats:") and i + 1 < len(lines):
            try:
                stats = json.loads(lines[i + 1])
            except ValueError:
                stats = None
        elif "RuntimeError: No valid triton configs" in line:
            failed.append(line.split("No valid triton configs.", 1)[-1].strip())
        elif m := re.match(AUTOTUNE_HEADER, line):
            blocks.append(
                {"op": m[1], "sizes": m[2], "choices": [], "stats": stats, "failed": failed}
            )
            stats, failed = None, []
        elif blocks and (m := re.match(AUTOTUNE_CHOICE, line)):
            blocks[-1]["choices"].append({"name": m[1], "ms": float(m[2]), "description": m[4]})
        elif blocks and (m := re.search(AUTOTUNE_TOOK, line)):
            blocks[-1].update(bench_s=float(m[1]), precompile_s=float(m[2]), n_choices=int(m[3]))
    return blocks


def profile_compile_cold(
    out_dir,
    *,
    mode="default",
    batch=64,
    seq=128,
    dim=768,
    hidden=3072,
    active=3,
    device=None,
):
    """Compile the MLP with an empty Inductor cache, time the first call and keep the
    autotuning report (``timings.json``); then profile warm forwards (``trace.json``)."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    saved = {key: os.environ.get(key) for key in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    cache = tempfile.mkdtemp(prefix="inductor-cold-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # Triton's cache lives inside it
    os.environ.pop("TRITON_CACHE_DIR", None)
    try:
        torch.manual_seed(0)
        mlp = GeGLUMLP(dim, hidden).to(device=device, dtype=torch.bfloat16)
        x = torch.randn(batch, seq, dim, device=device, dtype=torch.bfloat16)
        torch._dynamo.reset()
        f = torch.compile(mlp, mode=None if mode == "default" else mode)
        report, first_s = _time_first_call(lambda: f(x), device)
        t0 = time.perf_counter()
        with torch.no_grad():
            f(x)
        if device == "cuda":
            torch.cuda.synchronize()
        second_s = time.perf_counter() - t0
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "timings.json").write_text(
            json.dumps(
                {
                    "what": "wall time of the first call (compile included) with an empty Inductor "
                    "cache, of the second call, and Inductor's AUTOTUNE report",
                    "mode": mode,
                    "first_call_s": round(first_s, 3),
                    "second_call_s": round(second_s, 5),
                    "autotune": parse_autotune_report(report),
                }
            )
        )

        def step():
            with torch.no_grad(), record_function("mlp_fwd"):
                return f(x)

        for _ in range(3):
            step()
        return _profile_steps(step, out_dir, active=active, skip=2, device=device)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _time_first_call(call, device):
    """Run ``call`` once with stderr (file descriptor 2) going to a file; return what it
    printed there (echoed afterwards) and the call's wall time in seconds."""
    sys.stderr.flush()
    saved_fd = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 2)
        try:
            t0 = time.perf_counter()
            with torch.no_grad():
                call()
            if device == "cuda":
                torch.cuda.synchronize()
            took = time.perf_counter() - t0
        finally:
            sys.stderr.flush()
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
        log.seek(0)
        text = log.read()
    sys.stderr.write(text)
    return text, took


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
    "eager_cold": (profile_mlp, {**SMALL, "cold": True}),
    "compile_cold": (profile_compile_cold, {**SMALL, "mode": "default"}),
    "autotune_cold": (profile_compile_cold, {**SMALL, "mode": "max-autotune-no-cudagraphs"}),
}
#: Variants whose subject is what a process does first: each repeat gets a fresh process.
COLD_VARIANTS = ("eager_cold", "compile_cold", "autotune_cold")

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
    for extra in out_dir.iterdir():  # timings.json: compile times and the autotuning report
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
