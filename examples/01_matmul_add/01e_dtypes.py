"""
One GEMM in three dtypes
========================

How long does the 4096x4096 :term:`GEMM` (general matrix multiply, here
``torch.matmul``) of ``torch.add(torch.matmul(x, w), b)`` take, how much does that
vary from run to run, and what does the dtype change? This experiment times the GEMM
twenty times in bfloat16, then three times in float32 with :term:`TF32` off (torch's
default) and three times with it on, and reads each kernel's name and
:term:`achieved rate` from the trace. The section "Is the kernel fast?" of
:doc:`/chapters/part1` and the lab notes' "One GEMM twenty times, and three dtypes"
discuss these runs.

Run it yourself::

    python 01e_dtypes.py                  # the whole page
    python 01e_dtypes.py 4096_fp32_tf32   # one variant, its table printed

To try another size or dtype, call ``run`` with the settings to change, e.g.
``run("4096_fp32", size=2048)`` or ``run("4096_fp32", dtype="float16")``: the
trace's name then spells them out (``4096_fp32_size2048.json``), so no run
overwrites another's. For another size, set ``N``, the size the rates below assume,
to match. Smaller GEMMs run further from the peak; float16 takes the same
:term:`Tensor Cores` path as bfloat16, with more mantissa bits (the bits that hold a
number's significant digits) and less range.

This file needs only torch, and ``_01_common.py`` beside it, where the harness
of this set lives (the site's download has it pasted in). On the CPU it profiles
the same code there (the trace has no GPU lane and no kernels to time, and the
sizes shrink to 512). Each run writes its trace to
``traces/01_matmul_add/<variant>.json``. With ``tracereader`` (this site's library
for reading traces; :doc:`the quick start </quickstart>` installs it) the page also
computes each kernel's rate.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore

# From the code the stories of this set share (``_01_common.py``, beside this file;
# story 01a shows it): the harness ``profile_matmul_add`` and the plumbing of every
# story (``run_variant``, ``story_run``, ``optional_tracereader``).
from _01_common import optional_tracereader, profile_matmul_add, run_variant, story_run

# %%
# The workload and its harness
# ----------------------------
#
# ``fn`` is the code under study. ``profile_matmul_add`` builds the inputs in
# ``dtype`` (a key of ``DTYPES``), runs five untimed calls when ``warmup`` is
# set, then ``wait + warmup_steps + active`` steps under the profiler's
# schedule, keeping the last ``active``. ``tf32=True`` sets
# ``torch.backends.cuda.matmul.allow_tf32``, which lets float32 GEMMs round their
# inputs to TF32 for the Tensor Cores. ``torch.set_float32_matmul_precision("high")``
# does the same, and torch 2.9 and later prefer
# ``torch.backends.cuda.matmul.fp32_precision = "tf32"``. (``fn_addmm``, ``batch``,
# ``op``, ``compile`` and ``export`` serve the other experiments of this set.)


# %%
# The variants
# ------------
#
# Every variant was recorded three times on an NVIDIA H200 and three times on an
# NVIDIA H100, each repeat in a fresh process. This page prints the H200's first
# repeat, ``r0`` in the recordings' file names.
#
# =====================  ========================================================
# variant                what it runs
# =====================  ========================================================
# ``4096_bf16_20steps``  4096x4096 bf16, warm, 20 active steps
# ``4096_fp32``          4096x4096 float32, warm, TF32 off (torch's default)
# ``4096_fp32_tf32``     4096x4096 float32, warm, TF32 on
# =====================  ========================================================

VARIANTS = {
    "4096_bf16_20steps": (
        profile_matmul_add,
        {"size": 4096, "dtype": "bfloat16", "warmup": True, "active": 20},
    ),
    "4096_fp32": (profile_matmul_add, {"size": 4096, "dtype": "float32", "warmup": True}),
    "4096_fp32_tf32": (
        profile_matmul_add,
        {"size": 4096, "dtype": "float32", "warmup": True, "tf32": True},
    ),
}


# ``run(name)`` profiles one variant of ``VARIANTS`` (with any setting changed by
# ``overrides``, which then name the trace), prints one line saying where it ran,
# and returns the run's name, the profiler's table and the trace's path.
def run(name, **overrides):
    return run_variant(VARIANTS, name, **overrides)


# ``python 01e_dtypes.py VARIANT`` profiles one variant and prints its table. On this
# website ``run`` does not profile: it replays the H200's recording ``r0`` instead.
run = story_run(VARIANTS, __name__, run)

# %%
# The yardstick
# -------------
#
# A GEMM of an M x K matrix by a K x N one does 2 M N K floating-point operations (a
# multiply and an add for each of the K terms of each of the M N outputs): 2 n\ :sup:`3`
# for two n x n matrices. For an ``nn.Linear`` layer, M is the number of rows of the
# input (tokens times batch), K ``in_features`` and N ``out_features``. The achieved
# rate is those operations divided by the kernel's time: ``2 * n**3 / seconds``
# here. ``gemm_rate`` reads the GEMM's kernel from a trace (the GPU op that is
# neither a copy nor a :term:`memset` and took the most time) and prints its median
# duration and that rate, to hold against the datasheet (989 TFLOP/s of dense bf16 on
# an H200) and against the rate of a large GEMM measured on the same machine (the
# :doc:`peaks experiment </auto_examples/01_matmul_add/01d_peaks>` of this set prints
# it).

tracereader = optional_tracereader()  # None where it is not installed
N = 4096  # the matrices' size, n: change it to match a run with another ``size``


def gemm_rate(result, n):
    rows = tracereader.kernel_table(tracereader.load(result.trace_path)).to_records()
    gemms = [r for r in rows if not r["name"].startswith(("Memcpy", "Memset"))]
    if not gemms:  # a CPU trace: no GPU kernels to time
        return print(f"{result.name}: no GPU kernels in this trace")
    top = gemms[0]
    tflops = 2 * n**3 / (top["median_us"] * 1e-6) / 1e12
    print(f"{result.name}: {top['name']}")
    print(f"    {top['calls']} calls, median {top['median_us']:.0f} us, {tflops:.0f} TFLOP/s")
    return gemms


# %%
# One GEMM, twenty times
# ----------------------
#
# The Hugging Face post this site follows, `Profiling in PyTorch (Part 1)
# <https://huggingface.co/blog/torch-profiler>`__ (see :term:`Hugging Face series`),
# saw one A100 GEMM run far longer than the others, so its mean misled. Twenty active
# steps give twenty runs of the 4096 bf16 GEMM: ``kernel_table`` prints, per kernel
# name, the number of calls, the total and mean time, and the min, median and max:
# read the median for the typical run and min and max for the spread. It shortens
# kernel names: ``vectorized_elementwise_kernel<CUDAFunctor_add<BFloat16>>`` is the
# add's kernel, whose full name starts
# ``void at::native::vectorized_elementwise_kernel`` (the profiler's tables cut names
# at 48 characters). On the H200 the slowest run stayed close to the median, with no
# outlier, and the GEMM ran at about the rate of the large GEMM of the peaks
# experiment: it is not slow (:doc:`/chapters/part1` gives the spread). Quote the
# median and look at the spread.

warm_bf16 = run("4096_bf16_20steps")
# sphinx_gallery_start_ignore
warm_bf16
# sphinx_gallery_end_ignore

# %%

bf16_gemms = tracereader and gemm_rate(warm_bf16, N)
if bf16_gemms:
    print(tracereader.kernel_table(tracereader.load(warm_bf16.trace_path)))

# %%
# Float32, TF32 off and on
# ------------------------
#
# The same GEMM in float32: four bytes per element instead of two. The Tensor Cores
# (the GPU's matrix units) do not take float32 numbers as they are, and by default
# torch does not let :term:`cuBLAS` round them to TF32, so the GEMM runs on the
# ordinary fused multiply-add (FMA) units, which compute ``a * b + c`` one number at a
# time: its kernel's name says ``ffma``. With TF32 on, cuBLAS rounds the inputs to
# TF32, which the Tensor Cores take: the name says ``tf32``. The last cell of this
# section prints, for each dtype, how its GEMM's median time compares with bf16's and
# what share of its units' datasheet peak it reached (989 TFLOP/s for bf16 on the
# Tensor Cores, 67 for plain fp32 on the FMA units, 494.7 for TF32: NVIDIA's dense
# figures, the same for the H200 and for the H100 SXM recorded here). In every repeat
# on both GPUs, plain fp32 took over 15 times as long as bf16 and TF32 about twice as
# long, yet no kernel is slow: each reached over three quarters of its own peak.

fp32_off = run("4096_fp32")
# sphinx_gallery_start_ignore
fp32_off
# sphinx_gallery_end_ignore

# %%

fp32_on = run("4096_fp32_tf32")
# sphinx_gallery_start_ignore
fp32_on
# sphinx_gallery_end_ignore

# %%

if tracereader:
    off_gemms, on_gemms = gemm_rate(fp32_off, N), gemm_rate(fp32_on, N)
    if bf16_gemms and off_gemms and on_gemms:
        bf16_us = bf16_gemms[0]["median_us"]
        for label, gemms, peak in [
            ("bf16", bf16_gemms, 989),
            ("fp32, TF32 off", off_gemms, 67),
            ("fp32, TF32 on", on_gemms, 494.7),
        ]:
            us = gemms[0]["median_us"]
            share = 2 * N**3 / (us * 1e-6) / 1e12 / peak
            print(f"{label:>14}: {us / bf16_us:4.1f} x bf16's time, {share:.0%} of {peak} TFLOP/s")

# %%
# Read the kernel names from left to right: ``sm80`` or ``sm90`` is the GPU
# generation the kernel was designed for (``sm80`` the A100's Ampere, ``sm90`` Hopper:
# cuBLAS still serves Hopper an fp32 FMA kernel of Ampere's design), ``xmma_gemm`` a
# cuBLAS GEMM, then the types of the inputs, of the arithmetic and of the output
# (``f32f32_tf32f32``: float32 data, TF32 arithmetic), then the :term:`tile` sizes:
# the rows and columns of the block of the output that one thread block (a group of
# GPU threads) computes at a time, then how many of the K terms it takes per step. The
# rest (``nn_n``, ``warpgroupsize``, ``segment_k_off``) is cuBLAS's own configuration,
# which nothing here depends on. The bf16 GEMM is an :term:`nvjet` kernel, cuBLAS's
# newer GEMM for Hopper.
#
# The fp32 run also shows a queue, in the table below: the add kernel
# (``void at::native::vectorized_elementwise_kerne...``) has 4 calls but
# ``aten::add`` only 3. The extra add is that of ``ProfilerStep#1``, the profiler's
# warm-up step (recorded, then thrown away), still waiting on the GPU when the kept
# steps began: its kernel ran inside the recorded window, its launch call before it.
# Ahead of it, the warm-up step's GEMM was running; it started before the window and
# is not in the trace at all. So the first kept step's GEMM started milliseconds after
# its launch call, and each later one waited longer (the lines under the table print
# it): a long :term:`launch-to-start latency` means a kernel waited its turn. The same
# wait ends the table: the profiler's closing ``cudaDeviceSynchronize``
# (:term:`cudaDeviceSynchronize at window end`) takes most of ``Self CPU time total``,
# the CPU waiting for the queued GEMMs. ``cudaLaunchKernelExC`` is the runtime's
# :term:`launch call` that cuBLAS used for this GEMM, and ``cudaFuncGetAttributes``
# asks the runtime about a kernel before it is launched.

print(fp32_off.table)
if tracereader:
    for gpu_op in tracereader.launches(tracereader.load(fp32_off.trace_path)).to_records():
        if gpu_op["step"] and "gemm" in gpu_op["name"]:
            wait_ms = gpu_op["launch_to_start_us"] / 1000
            print(f"{gpu_op['step']}: its GEMM started {wait_ms:.1f} ms after its launch call")

# %%
# What the chapter concluded
# --------------------------
#
# Divide a kernel's work by its median time and compare with the GPU's datasheet for
# the units the kernel ran on: near the limit, only less work helps, or a dtype the
# faster units take; far below it, look at the kernel's name and its launch grid, the
# number of thread blocks it ran (``args.grid`` of the kernel's event in the trace; see
# :term:`launch configuration`): a grid of fewer blocks than the GPU has
# :term:`multiprocessors <streaming multiprocessor>` (132 on the H200) leaves some of
# them idle. For float32 models on Hopper, enabling TF32 is the cheap step: the inputs
# lose mantissa bits (10 instead of 23) but keep float32's range, and the GEMM ran
# about 8 times as fast here, in every repeat on both GPUs. (The A100's datasheet
# promises a similar gain; GeForce cards, whose dense TF32 rate is close to their
# plain fp32 rate, should expect little.) bf16 halved its time again (about twice as
# fast as TF32), but only for a model that runs in bf16, with 7 mantissa bits.
