"""
One matmul and one add
======================

The smallest workload worth profiling: ``torch.add(torch.matmul(x, w), b)``.
This page runs it under :mod:`torch.profiler` at two sizes, 64x64 and
4096x4096, and shows the profiler's own table for each.

On a machine with a CUDA GPU the script profiles live. Everywhere else, including
the build of this site, it replays the recording our H200 made by running this
very file; the line above each table says which. Every other Part 1 experiment
(cold start, the schedule, 20 steps, the batched matmul, fp32, ``torch.compile``)
is a named variant of the same function, recorded at the bottom of this page and
read in :doc:`/chapters/part1`.

Run one variant yourself on a GPU::

    python 01_matmul_add.py --size 4096 --dtype bfloat16 --warmup
    python 01_matmul_add.py --size 64 --compile default

Each run writes ``traces/01_matmul_add/<name>.json`` and prints the table.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import argparse
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from tracereader.record import run_or_replay

# %%
# The workload and how it is profiled
# -----------------------------------
#
# ``fn`` is the code under study. ``profile_matmul_add`` is the profiling
# harness: it builds the inputs, optionally warms up and compiles, and runs
# ``wait + warmup + active`` steps under the profiler with a ``schedule``. The
# trace is written from ``on_trace_ready``: with a schedule, calling
# ``export_chrome_trace`` after the ``with`` block exports an almost empty
# window (``export="after"`` reproduces that trap on purpose).


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

    ``batch > 0`` makes ``x`` 3-D (``batch, size, size``) so ``matmul`` becomes a
    batched GEMM. ``op="addmm"`` profiles ``torch.addmm(b, x, w)`` directly.
    ``warmup`` runs five untimed calls before profiling. ``compile`` is a
    ``torch.compile`` mode (``"default"``, ``"reduce-overhead"``, ...) or None.
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
    if compile:
        torch._dynamo.reset()
        f = torch.compile(f, mode=None if compile == "default" else compile)

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


def main(argv):
    """Profile one variant from the command line (``--help`` lists the flags)."""
    parser = argparse.ArgumentParser(description="Profile torch.add(torch.matmul(x, w), b).")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bfloat16")
    parser.add_argument("--batch", type=int, default=0, help="make x 3-D: (batch, size, size)")
    parser.add_argument("--addmm", action="store_true", help="profile torch.addmm instead")
    parser.add_argument("--warmup", action="store_true", help="5 untimed calls first")
    parser.add_argument("--compile", default=None, help="a torch.compile mode, e.g. default")
    parser.add_argument("--tf32", action="store_true")
    parser.add_argument("--active", type=int, default=3)
    args = parser.parse_args(argv)
    name = f"{args.size}_{args.dtype}" + ("_warm" if args.warmup else "")
    out = Path("traces") / "01_matmul_add" / name
    table = profile_matmul_add(
        out,
        size=args.size,
        dtype=args.dtype,
        batch=args.batch,
        op="addmm" if args.addmm else "matmul_add",
        warmup=args.warmup,
        compile=args.compile,
        tf32=args.tf32,
        active=args.active,
    )
    print(table)
    print(f"trace: {out / 'trace.json'} (open it at https://ui.perfetto.dev)")
    return 0


if __name__ == "__main__" and len(sys.argv) > 1:
    sys.exit(main(sys.argv[1:]))

# %%
# 64x64: the table
# ----------------
#
# With 64x64 matrices in bfloat16 the GPU finishes each kernel in a couple of
# microseconds, while the CPU spends far longer preparing and launching them.
# Compare ``Self CPU time total`` with ``Self CUDA time total`` at the bottom.
# (The table is the profiler's own ``key_averages().table()``; five of its ten
# columns are shown here; ``small.table`` holds all ten.)

small = run_or_replay(profile_matmul_add, "64_bf16", size=64, dtype="bfloat16", warmup=True)
print(small.stamp_line())
print(small.table_view())

# %%
# The trace of this run, to download or to open in Perfetto in your browser:

small.links()

# %%
# 64x64: one step on the timeline
# -------------------------------
#
# The last profiled step. The CPU thread on top runs the nested ops
# (``ProfilerStep`` > ``matmul_add`` > ``aten::matmul`` > ``aten::mm`` > the
# launch call); the GPU stream below runs two tiny kernels. Arrows join each
# launch call to the kernel it launched; shaded spans are GPU idle time.

import matplotlib.pyplot as plt

from tracereader import summary, timeline

small_trace = small.trace()
last = small_trace.steps[-1]
timeline(small_trace, step=last.name, fig=plt.figure(figsize=(12, 3.4)))
busy = summary(small_trace)["gpu_busy_us"] / len(small_trace.steps)
print(f"{last.name}: CPU {last.dur_us:.0f} us; GPU busy {busy:.1f} us per step on average")

# %%
# 4096x4096: the table
# --------------------
#
# The same two calls on 4096x4096 matrices. The GEMM kernel now dominates and
# the CUDA total climbs to the same order as the CPU total.

big = run_or_replay(profile_matmul_add, "4096_bf16", size=4096, dtype="bfloat16", warmup=True)
print(big.stamp_line())
print(big.table_view())

# %%

big.links()

# %%
# 4096x4096: one step on the timeline
# -----------------------------------
#
# Now the GPU lane is full: the GEMM runs for hundreds of microseconds, so the
# CPU's launches get ahead of the GPU and the kernels queue.

big_trace = big.trace()
timeline(big_trace, step=big_trace.steps[-1].name, fig=plt.figure(figsize=(12, 3.4)))
busy = summary(big_trace)["gpu_busy_us"] / len(big_trace.steps)
print(f"GPU busy {busy:.0f} us per step on average")

# %%
# Every other Part 1 experiment
# -----------------------------
#
# Each line below is one recording the Part 1 chapter reads. They are the same
# function with different flags, so a re-record refreshes all of them together.

experiments = {
    "64_bf16_cold": dict(size=64, dtype="bfloat16"),
    "4096_bf16_cold": dict(size=4096, dtype="bfloat16"),
    "64_bf16_nowait": dict(size=64, dtype="bfloat16", wait=0, warmup_steps=0),
    "64_bf16_20steps": dict(size=64, dtype="bfloat16", warmup=True, active=20),
    "64_bf16_20steps_cold": dict(size=64, dtype="bfloat16", active=20),
    "64_bf16_export_after": dict(size=64, dtype="bfloat16", warmup=True, export="after"),
    "64_bf16_batch8": dict(size=64, dtype="bfloat16", batch=8, warmup=True),
    "4096_bf16_20steps": dict(size=4096, dtype="bfloat16", warmup=True, active=20),
    "4096_fp32": dict(size=4096, dtype="float32", warmup=True),
    "4096_fp32_tf32": dict(size=4096, dtype="float32", warmup=True, tf32=True),
    "64_bf16_addmm": dict(size=64, dtype="bfloat16", op="addmm", warmup=True),
    "64_bf16_compile": dict(size=64, dtype="bfloat16", compile="default"),
    "4096_bf16_compile": dict(size=4096, dtype="bfloat16", compile="default"),
    "64_bf16_reduce_overhead": dict(size=64, dtype="bfloat16", compile="reduce-overhead"),
}
for exp_name, exp_params in experiments.items():
    rec = run_or_replay(profile_matmul_add, exp_name, **exp_params)
    print(f"{exp_name:>26}: {rec.trace_bytes / 1024:6.1f} KiB trace, params {exp_params}")
