"""
One matmul and one add
======================

The smallest workload worth profiling: ``torch.add(torch.matmul(x, w), b)``.
This page profiles it under :mod:`torch.profiler` at two sizes, 64x64 and
4096x4096, and shows the profiler's table, the timeline of one step and the
trace for each. Every other Part 1 experiment (cold start, the schedule, 20
steps, the batched matmul, fp32, ``torch.compile``) is a named *variant* of the
same function, listed in ``VARIANTS`` and read in :doc:`/chapters/part1`.

This file needs only torch. On a machine with a CUDA GPU it profiles live; on
the CPU it profiles the same code there (the trace then has no GPU lane, and the
4096 sizes shrink to 512 so that it finishes quickly). Run it yourself::

    python 01_matmul_add.py                              # the two variants of this page
    python 01_matmul_add.py --list                       # every variant, with its settings
    python 01_matmul_add.py --variant 64_bf16_compile    # one named variant
    python 01_matmul_add.py --variant interleaved_64     # eager/addmm/compiled, interleaved
    python 01_matmul_add.py --size 256 --dtype float32 --warmup
    python 01_matmul_add.py --size 64 --compile default --active 5

Each run writes its trace to ``traces/01_matmul_add/<name>.json``, where the
name is the variant's or spells out the flags, so no run overwrites another's.
With :mod:`tracereader` installed (and matplotlib), the page also draws each
step's timeline; without it, open the trace at https://ui.perfetto.dev.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import argparse
import json
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# %%
# The workload and how it is profiled
# -----------------------------------
#
# ``fn`` is the code under study. ``profile_matmul_add`` is the profiling
# harness: it builds the inputs, optionally warms up and compiles, and runs
# ``wait + warmup + active`` steps under the profiler with a ``schedule``. The
# trace is written from ``on_trace_ready``, which the profiler calls when the
# active window closes (``export="after"`` exports after the ``with`` block
# instead, to test that alternative).


def fn(x, w, b):
    return torch.add(torch.matmul(x, w), b)


def fn_addmm(x, w, b):
    return torch.addmm(b, x, w)


DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def profile_matmul_add(
    out_dir,
    *,
    size=64,
    dtype="bfloat16",
    batch=0,
    op="matmul_add",
    warmup=False,
    compile=None,
    tf32=False,
    wait=1,
    warmup_steps=1,
    active=3,
    export="on_trace_ready",
    device=None,
):
    """Profile ``fn`` and write ``trace.json`` into ``out_dir``; return the table text.

    ``batch > 0`` makes ``x`` 3-D (``batch, size, size``) so ``matmul`` sees a
    batch. ``op="addmm"`` profiles ``torch.addmm(b, x, w)`` directly.
    ``warmup`` runs five untimed calls before profiling. ``compile`` is a
    ``torch.compile`` mode (``"default"``, ``"reduce-overhead"``, ...) or None;
    ``"triton-gemm"`` is max-autotune limited to Inductor's Triton GEMM templates
    (on a GPU; on the CPU it is plain ``max-autotune-no-cudagraphs``).
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dt = DTYPES[dtype]
    x_shape = (batch, size, size) if batch else (size, size)
    x = torch.randn(x_shape, device=device, dtype=dt)
    w = torch.randn(size, size, device=device, dtype=dt)
    b = torch.randn(size, size, device=device, dtype=dt)
    f = fn_addmm if op == "addmm" else fn
    if compile == "triton-gemm" and device == "cuda":
        # max-autotune, but with only Inductor's own Triton GEMM templates to choose from
        torch._dynamo.reset()
        f = torch.compile(f, options={"max_autotune": True, "max_autotune_gemm_backends": "TRITON"})
    elif compile:
        torch._dynamo.reset()
        mode = {"default": None, "triton-gemm": "max-autotune-no-cudagraphs"}.get(compile, compile)
        f = torch.compile(f, mode=mode)

    def step():
        with record_function("matmul_add"):
            return f(x, w, b)

    if warmup or compile:
        for _ in range(5):
            step()
    if device == "cuda":
        torch.cuda.synchronize()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trace_path = out_dir / "trace.json"
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    on_ready = None
    if export == "on_trace_ready":

        def on_ready(p):
            p.export_chrome_trace(str(trace_path))

    with profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup_steps, active=active, repeat=1),
        on_trace_ready=on_ready,
    ) as prof:
        for _ in range(wait + warmup_steps + active):
            step()
            prof.step()
    if export == "after":
        prof.export_chrome_trace(str(trace_path))
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# Comparing CPU time fairly: interleaved calls
# --------------------------------------------
#
# Whether ``torch.compile`` or ``torch.addmm`` saves CPU time cannot be read
# from two separate 3-step runs: CPU time per step moves by tens of percent
# from one process to the next. ``profile_interleaved`` builds every version
# in one process and runs them in turn, so that they share the process, the
# clocks and the moment. The order is balanced: in each cycle of ``CYCLE``'s
# 12 calls, every version runs right after every other version exactly once, so
# no version always follows the same neighbour (a call can slow the next one).
# Each version is timed twice over: first ``unprofiled_cycles`` cycles with a
# plain ``time.perf_counter_ns`` and no profiler (written to ``timings.json``),
# then ``cycles`` cycles under the profiler, each call labelled with its version.


def fn_compiled(x, w, b):  # the same body as fn, with its own code object:
    return torch.add(torch.matmul(x, w), b)


def fn_reduce_overhead(x, w, b):  # each compiled version gets its own Dynamo cache
    return torch.add(torch.matmul(x, w), b)


VERSIONS = ("eager", "addmm", "compiled", "reduce-overhead")


#: Indexes into VERSIONS. Read as a loop (the last call is followed by the first),
#: the 12 neighbour pairs are all 12 ordered pairs of two different versions.
CYCLE = (0, 1, 0, 2, 0, 3, 1, 2, 1, 3, 2, 3)


def profile_interleaved(
    out_dir, *, size=64, dtype="bfloat16", cycles=8, unprofiled_cycles=64, device=None
):
    """Time every entry of ``VERSIONS`` in turn in one process, without and with the profiler.

    Writes ``timings.json`` (the unprofiled calls) and ``trace.json`` into
    ``out_dir`` and returns the profiler's table.
    """
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    dt = DTYPES[dtype]
    x = torch.randn(size, size, device=device, dtype=dt)
    w = torch.randn(size, size, device=device, dtype=dt)
    b = torch.randn(size, size, device=device, dtype=dt)
    torch._dynamo.reset()
    funcs = {
        "eager": fn,
        "addmm": fn_addmm,
        "compiled": torch.compile(fn_compiled),
        "reduce-overhead": torch.compile(fn_reduce_overhead, mode="reduce-overhead"),
    }
    for f in funcs.values():  # compile, and let CUDA graphs record, before any timing
        for _ in range(5):
            f(x, w, b)
    if device == "cuda":
        torch.cuda.synchronize()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    calls = []
    for name in [VERSIONS[i] for _ in range(unprofiled_cycles) for i in CYCLE]:
        t0 = time.perf_counter_ns()
        funcs[name](x, w, b)
        calls.append((name, (time.perf_counter_ns() - t0) / 1e3))
    if device == "cuda":
        torch.cuda.synchronize()
    timings = {
        "what": "CPU time per call without the profiler, in run order",
        "unit": "us",
        "calls": [[name, round(us, 1)] for name, us in calls],
    }
    (out_dir / "timings.json").write_text(json.dumps(timings))

    # The five calls before the active window end the cycle, so the first profiled
    # call ("eager") follows "reduce-overhead", as it does inside the loop.
    order = [VERSIONS[i] for i in CYCLE[-5:] + CYCLE * cycles]
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities,
        schedule=schedule(wait=1, warmup=4, active=len(order) - 5, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(out_dir / "trace.json")),
    ) as prof:
        for name in order:
            with record_function(name):
                funcs[name](x, w, b)
            prof.step()
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# How fast can this GPU go?
# -------------------------
#
# A kernel's achieved rate means little without the hardware's limit beside it.
# The vendor's spec sheet gives one limit; ``profile_peaks`` measures another on
# this machine: a large bf16 GEMM (``size`` cubed, the kind of work the tensor
# cores are built for) and a large device-to-device copy (``copy_mib`` MiB read
# and as much written), ``calls`` of each, under the profiler. The kernels'
# durations in the trace give the achieved TFLOP/s and GB/s.


def profile_peaks(out_dir, *, size=8192, copy_mib=2048, calls=10, device=None):
    """Profile ``calls`` large GEMMs and ``calls`` large copies; write ``trace.json``."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        copy_mib = min(copy_mib, 64)
    torch.manual_seed(0)
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    c = torch.empty(size, size, device=device, dtype=torch.bfloat16)
    src = torch.empty(copy_mib * 2**20, device=device, dtype=torch.uint8)
    dst = torch.empty_like(src)
    for _ in range(3):  # warm up: cuBLAS picks its kernel, the clocks rise
        torch.matmul(a, b, out=c)
        dst.copy_(src)
    if device == "cuda":
        torch.cuda.synchronize()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        for _ in range(calls):
            with record_function("gemm"):
                torch.matmul(a, b, out=c)
        for _ in range(calls):
            with record_function("copy"):
                dst.copy_(src)
        if device == "cuda":
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(out_dir / "trace.json"))
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# The variants
# ------------
#
# Every experiment of Part 1 is one entry here: a harness and its settings.
# ``COLD_VARIANTS`` are the ones whose subject is the first call of a process;
# each of their runs needs a fresh Python process.

VARIANTS = {
    "64_bf16": (profile_matmul_add, {"size": 64, "dtype": "bfloat16", "warmup": True}),
    "4096_bf16": (profile_matmul_add, {"size": 4096, "dtype": "bfloat16", "warmup": True}),
    "64_bf16_cold": (profile_matmul_add, {"size": 64, "dtype": "bfloat16"}),
    "4096_bf16_cold": (profile_matmul_add, {"size": 4096, "dtype": "bfloat16"}),
    "64_bf16_nowait": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "wait": 0, "warmup_steps": 0},
    ),
    "64_bf16_20steps": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "warmup": True, "active": 20},
    ),
    "64_bf16_20steps_cold": (profile_matmul_add, {"size": 64, "dtype": "bfloat16", "active": 20}),
    "64_bf16_export_after": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "warmup": True, "export": "after"},
    ),
    "64_bf16_batch8": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "batch": 8, "warmup": True},
    ),
    "4096_bf16_20steps": (
        profile_matmul_add,
        {"size": 4096, "dtype": "bfloat16", "warmup": True, "active": 20},
    ),
    "4096_fp32": (profile_matmul_add, {"size": 4096, "dtype": "float32", "warmup": True}),
    "4096_fp32_tf32": (
        profile_matmul_add,
        {"size": 4096, "dtype": "float32", "warmup": True, "tf32": True},
    ),
    "64_bf16_addmm": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "op": "addmm", "warmup": True},
    ),
    "64_bf16_compile": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "compile": "default"},
    ),
    "4096_bf16_compile": (
        profile_matmul_add,
        {"size": 4096, "dtype": "bfloat16", "compile": "default"},
    ),
    "64_bf16_reduce_overhead": (
        profile_matmul_add,
        {"size": 64, "dtype": "bfloat16", "compile": "reduce-overhead"},
    ),
    "4096_bf16_autotune": (
        profile_matmul_add,
        {"size": 4096, "dtype": "bfloat16", "compile": "max-autotune-no-cudagraphs"},
    ),
    "4096_bf16_triton_gemm": (
        profile_matmul_add,
        {"size": 4096, "dtype": "bfloat16", "compile": "triton-gemm"},
    ),
    "peaks": (profile_peaks, {"size": 8192, "copy_mib": 2048, "calls": 10}),
    "interleaved_64": (profile_interleaved, {"size": 64, "dtype": "bfloat16", "cycles": 8}),
}
COLD_VARIANTS = ("64_bf16_cold", "4096_bf16_cold", "64_bf16_nowait", "64_bf16_20steps_cold")

#: On the CPU, sizes above this shrink to it: a 4096 bf16 GEMM takes seconds there.
CPU_MAX_SIZE = 512


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


def run(name, *, out_root=Path("traces") / "01_matmul_add", **overrides):
    """Profile one variant of ``VARIANTS`` (settings changed by ``overrides``) and return a Run."""
    harness, params = VARIANTS[name]
    params = dict(params, **overrides)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and params.get("size", 64) > CPU_MAX_SIZE:
        print(f"{name}: no CUDA device, so size {params['size']} runs at {CPU_MAX_SIZE} on the CPU")
        params["size"] = CPU_MAX_SIZE
    out_dir = Path(out_root) / name
    table = harness(out_dir, device=device, **params)
    trace_path = Path(out_root) / f"{name}.json"
    (out_dir / "trace.json").replace(trace_path)
    for extra in out_dir.iterdir():  # timings.json, from profile_interleaved
        extra.replace(Path(out_root) / f"{name}.{extra.name}")
    out_dir.rmdir()
    result = Run(name, table, trace_path, device)
    print(result)
    return result


# sphinx_gallery_start_ignore
# When this site is built, ``run`` replays what the H200 recorded by running this
# very file (the build machine may have no GPU). The module below exists only inside
# the site's build; a downloaded copy of this file never takes this branch.
if "tracesite" in sys.modules:
    run = sys.modules["tracesite"].replayer(run)
# sphinx_gallery_end_ignore


def main(argv):
    """Profile one variant, or one set of flags, from the command line."""
    parser = argparse.ArgumentParser(description="Profile torch.add(torch.matmul(x, w), b).")
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="run one named variant")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bfloat16")
    parser.add_argument("--batch", type=int, default=0, help="make x 3-D: (batch, size, size)")
    parser.add_argument("--addmm", action="store_true", help="profile torch.addmm instead")
    parser.add_argument("--warmup", action="store_true", help="5 untimed calls first")
    parser.add_argument("--compile", default=None, help="a torch.compile mode, e.g. default")
    parser.add_argument("--tf32", action="store_true")
    parser.add_argument("--active", type=int, default=3)
    args = parser.parse_args(argv)
    if args.list:
        for name, (harness, params) in VARIANTS.items():
            print(f"{name:>24}  {harness.__name__}  {params}")
        return 0
    if args.variant:
        result = run(args.variant)
    else:
        flags = {
            "size": args.size,
            "dtype": args.dtype,
            "batch": args.batch,
            "op": "addmm" if args.addmm else "matmul_add",
            "warmup": args.warmup,
            "compile": args.compile,
            "tf32": args.tf32,
            "active": args.active,
        }
        name = "_".join(
            [f"{args.size}", args.dtype]
            + ([f"batch{args.batch}"] if args.batch else [])
            + (["addmm"] if args.addmm else [])
            + (["warm"] if args.warmup else [])
            + ([f"compile-{args.compile}"] if args.compile else [])
            + (["tf32"] if args.tf32 else [])
            + ([f"active{args.active}"] if args.active != 3 else [])
        )
        VARIANTS[name] = (profile_matmul_add, flags)
        result = run(name)
    print(result.table)
    return 0


# Flags given: profile what they name and stop. (Inside Jupyter, sys.argv holds the
# kernel's own flags, so a notebook always runs the page below.)
if __name__ == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
    sys.exit(main(sys.argv[1:]))

# %%
# 64x64: the table
# ----------------
#
# With 64x64 matrices in bfloat16 the GPU finishes each kernel in a couple of
# microseconds, while the CPU spends far longer preparing and launching them.
# Compare ``Self CPU time total`` with ``Self CUDA time total`` at the bottom.

small = run("64_bf16")
small

# %%

print(small.table)

# %%
# 64x64: one step on the timeline
# -------------------------------
#
# The last profiled step, drawn by ``tracereader`` (the library this site is
# built on) if it is installed. The CPU thread on top runs the nested ops
# (``ProfilerStep`` > ``matmul_add`` > ``aten::matmul`` > ``aten::mm`` > the
# launch call); the GPU stream below runs two tiny kernels. Arrows join each
# launch call to the kernel it launched; shaded spans are GPU idle time.

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    small_trace = tracereader.load(small.trace_path)
    last = small_trace.steps[-1]
    tracereader.timeline(small_trace, step=last.name, width_in=12, fig=plt.figure())
    busy = tracereader.summary(small_trace)["gpu_busy_us"] / len(small_trace.steps)
    print(f"{last.name}: CPU {last.dur_us:.0f} us; GPU busy {busy:.1f} us per step on average")

# %%
# 4096x4096: the table
# --------------------
#
# The same two calls on 4096x4096 matrices. The GEMM kernel now dominates and
# the CUDA total climbs to the same order as the CPU total.

big = run("4096_bf16")
big

# %%

print(big.table)

# %%
# 4096x4096: one step on the timeline
# -----------------------------------
#
# Now the GPU lane is full: the GEMM runs for far longer than the CPU needs to
# launch it, so the launches get ahead of the GPU and the kernels queue.

if tracereader:
    big_trace = tracereader.load(big.trace_path)
    tracereader.timeline(big_trace, step=big_trace.steps[-1].name, width_in=12, fig=plt.figure())
    busy = tracereader.summary(big_trace)["gpu_busy_us"] / len(big_trace.steps)
    print(f"GPU busy {busy:.0f} us per step on average")

# %%
# Every other Part 1 experiment
# -----------------------------
#
# Each variant below is one experiment the Part 1 chapter reads. Run any of
# them with ``python 01_matmul_add.py --variant NAME``.

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>24}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")

# sphinx_gallery_start_ignore
# On the site: every recording of every variant, to download or open in Perfetto.
sys.modules["tracesite"].all_recordings_html() if "tracesite" in sys.modules else None
# sphinx_gallery_end_ignore
