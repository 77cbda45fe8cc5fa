"""
How fast can this GPU go?
=========================

A :term:`kernel`'s time means little without a yardstick beside it. The
vendor's datasheet gives one: for an H200, 989 TFLOP/s (trillions of
floating-point operations a second) of dense bf16 arithmetic on the
:term:`Tensor Cores` and 4.8 TB/s of memory bandwidth. This experiment measures
another, on the machine at hand: the rate of a large bf16 :term:`GEMM` and of a
large :term:`device-to-device copy <Memcpy DtoD>`, each timed by the profiler.
The section "Is the kernel fast?" of :doc:`/chapters/part1` compares the GEMM
and the add of ``torch.add(torch.matmul(x, w), b)`` with these two numbers.

Run it yourself::

    python 01d_peaks.py              # the whole page
    python 01d_peaks.py peaks        # the same run, its table printed

This file needs only torch, and ``_01_common.py`` beside it for the plumbing the
stories of this set share (the site's download has it pasted in). On the CPU it
runs the same code there, smaller (an 8192 GEMM shrinks to 512 and the copy to
64 MiB); the trace then has no :term:`GPU lane` and no kernels to time. The run
writes its trace to ``traces/01_matmul_add/peaks.json``; with :mod:`tracereader`
installed the page also computes the two rates.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

# The plumbing of every story of this set (``story_run``, ``optional_tracereader``), from
# the code they share (``_01_common.py``, beside this file).
from _01_common import optional_tracereader, story_run

# %%
# The harness
# -----------
#
# ``profile_peaks`` builds two ``size`` x ``size`` bf16 matrices and an output
# for the GEMM (``size`` cubed multiply-adds, the kind of work the Tensor Cores
# are built for), and two buffers of ``copy_mib`` MiB for the copy, which reads
# one and writes the other. Three untimed rounds of each come first:
# :term:`cuBLAS` picks its kernel on the first GEMM, and the GPU's clocks rise
# under load.
# Then it profiles ``calls`` GEMMs and ``calls`` copies, each labelled with
# ``record_function`` (a :term:`record_function range`), with no schedule:
# every call is kept. Writing into
# preallocated outputs (``out=c``, ``dst.copy_``) keeps the memory allocator
# out of the measurement.


def profile_peaks(out_dir, *, size=8192, copy_mib=2048, calls=10, device=None):
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
# The variant
# -----------
#
# One variant, recorded on an NVIDIA H200 several times.
#
# =========  ====================================================================
# variant    what it runs
# =========  ====================================================================
# ``peaks``  10 GEMMs of 8192x8192 bf16, then 10 device-to-device copies of 2 GiB
# =========  ====================================================================

VARIANTS = {
    "peaks": (profile_peaks, {"size": 8192, "copy_mib": 2048, "calls": 10}),
}


# ``run(name)`` profiles one variant and returns its name, the profiler's table
# and the trace's path (story 01a has the details).
run = story_run(VARIANTS, __name__)

# %%
# The table
# ---------
#
# The profiler's table lists the GEMM kernel (an ``nvjet`` kernel, cuBLAS's
# GEMM for Hopper, the generation of the H100 and H200), the ``Memcpy DtoD``
# and a tiny :term:`memset`, each with its number
# of calls and its total and average GPU time.

peaks = run("peaks")
# sphinx_gallery_start_ignore
peaks  # on the site: when and where it was recorded, and a link to every repeat
# sphinx_gallery_end_ignore

# %%
# The ``gemm`` and ``copy`` rows with no CPU time are the labels'
# :term:`GPU-side spans <gpu_user_annotation>`: from the first kernel a label
# launched to the last, idle time included, so their
# :term:`Self CUDA % <self time>` can pass 100 %. The ``cudaDeviceSynchronize``
# row is :term:`the CPU waiting for the GPU <host sync>`, not work (story
# ``01a`` reads the table row by row).

print(peaks.table)

# %%
# The two rates
# -------------
#
# A GEMM of two n x n matrices does 2 n\ :sup:`3` floating-point operations (a
# multiply and an add per term), so its :term:`achieved rate` is
# ``2 * n**3 / seconds``. A copy's rate counts the bytes read and the bytes
# written. ``kernel_table`` gives each GPU operation's median duration over its
# calls, which is what we divide by: one slow call cannot move a median.

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    rows = tracereader.kernel_table(tracereader.load(peaks.trace_path)).to_records()
    for row in rows:
        print(f"{row['name'][:60]:60}  {row['calls']:3} calls  median {row['median_us']:8.1f} us")
    gemm = next((r for r in rows if not r["name"].startswith(("Memcpy", "Memset"))), None)
    copy = next((r for r in rows if r["name"].startswith("Memcpy")), None)
    if gemm and copy:  # a GPU trace (a CPU trace has no kernels)
        print(f"GEMM: {2 * 8192**3 / (gemm['median_us'] * 1e-6) / 1e12:.0f} TFLOP/s")
        print(f"copy: {2 * 2048 * 2**20 / (copy['median_us'] * 1e-6) / 1e12:.2f} TB/s")

# %%
# What the chapter concluded
# --------------------------
#
# On the H200 the 8192 GEMM and the 2 GiB copy each set a measured rate, which
# :doc:`/chapters/part1` shows beside the datasheet's 989 TFLOP/s. Those are
# the yardsticks the chapter holds its kernels against: measured references,
# not limits (a kernel can pass them, as the add below does):
#
# * the 4096x4096 GEMM of the matmul-add step ran about as fast as the 8192
#   one, our largest: at about four fifths of the datasheet's peak, a faster
#   GEMM kernel would gain little here, less work would gain more;
# * the 64x64 GEMM used a tiny fraction of the GPU: its
#   :term:`grid <launch configuration>` had too few thread blocks to fill the
#   H200's 132 :term:`streaming multiprocessors <streaming multiprocessor>`,
#   and a kernel that short is in large part the fixed cost of starting and
#   finishing (the 64x64 add, with almost nothing to do, took over 40 % of the
#   GEMM's time);
# * the 4096x4096 add, which reads two matrices and writes one, is
#   :term:`memory-bound`: it ran at the speed of the GPU's memory, so only less
#   traffic would speed it up. It even moved its bytes faster than the copy, by
#   under 15 %, probably because part of its traffic hits the :term:`L2 cache`.
#
# Divide a kernel's work by its median time and compare with a yardstick: near
# it, a faster kernel gains little and less work helps most; far below it, look
# at the launch grid and the kernel's name.
