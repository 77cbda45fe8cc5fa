"""
One GEMM in three dtypes
========================

How long does the 4096x4096 GEMM of ``torch.add(torch.matmul(x, w), b)``
take, how much does that vary from run to run, and what does the dtype
change? This experiment times the GEMM twenty times in bfloat16, then in
float32 with TF32 off (torch's default) and on, and reads each kernel's name
and achieved rate from the trace. The section "Is the kernel fast?" of
:doc:`/chapters/part1` and the lab notes' "One GEMM twenty times, and three
dtypes" read these runs.

Run it yourself::

    python 01e_dtypes.py                  # the whole page
    python 01e_dtypes.py 4096_fp32_tf32   # one variant, its table printed

To try another size or dtype, call ``run`` with the settings to change, e.g.
``run("4096_fp32", size=2048)`` or ``run("4096_fp32", dtype="float16")``: the
trace's name then spells them out (``4096_fp32_size2048.json``), so no run
overwrites another's. Smaller GEMMs run further from the peak; float16 takes
the same Tensor Core path as bfloat16, with more mantissa and less range.

This file needs only torch, and ``_01_common.py`` beside it, where the harness
of this set lives (the site's download has it pasted in). On the CPU it profiles
the same code there (the trace has no GPU lane and no kernels to time, and the
sizes shrink to 512). Each run writes its trace to
``traces/01_matmul_add/<variant>.json``; with :mod:`tracereader` installed the
page also computes each kernel's rate.
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
# ``torch.backends.cuda.matmul.allow_tf32``, which lets float32 GEMMs round
# their inputs to TF32 for the Tensor Cores; newer torch also spells it
# ``torch.set_float32_matmul_precision("high")``. (``fn_addmm``, ``batch``,
# ``op``, ``compile`` and ``export`` serve the other experiments of this set.)


# %%
# The variants
# ------------
#
# The recordings this page shows were made on an NVIDIA H200, each variant
# several times.
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


# ``python 01e_dtypes.py VARIANT`` profiles one variant and prints its table; while the
# site builds, ``run`` replays the H200's recordings instead.
run = story_run(VARIANTS, __name__, run)

# %%
# The yardstick
# -------------
#
# A GEMM of two n x n matrices does 2 n\ :sup:`3` floating-point operations, so
# its achieved rate is ``2 * n**3 / seconds``. ``gemm_rate`` reads the GEMM's
# kernel from a trace (the GPU op that is neither a copy nor a memset and took
# the most time) and prints its median duration and that rate, to hold against
# the datasheet (989 TFLOP/s of dense bf16 on an H200) and against the rate of
# a large GEMM measured on the same machine (the ``peaks`` experiment of this
# set; :doc:`/chapters/part1` shows the rate it reached).

tracereader = optional_tracereader()  # None where it is not installed


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
# The Hugging Face post saw one A100 GEMM run far longer than the others, so
# its mean misled. Twenty active steps give twenty runs of the 4096 bf16 GEMM:
# ``kernel_table`` prints, per kernel name, the number of calls, the total and
# mean time, and the min, median and max: read the median for the typical run
# and min and max for the spread. On the H200 the slowest run stayed close
# to the median, with no outlier, and the GEMM ran at about the rate of the
# large GEMM of ``peaks``: it is not slow (:doc:`/chapters/part1` gives the
# spread). Quote the median and look at the spread.

warm_bf16 = run("4096_bf16_20steps")
# sphinx_gallery_start_ignore
warm_bf16
# sphinx_gallery_end_ignore

# %%

if tracereader and gemm_rate(warm_bf16, 4096):
    print(tracereader.kernel_table(tracereader.load(warm_bf16.trace_path)))

# %%
# Float32, TF32 off and on
# ------------------------
#
# The same GEMM in float32: four bytes per element instead of two, and no
# Tensor Core format for it. By default torch does not let cuBLAS use TF32, so
# the GEMM runs on the fused multiply-add units: its kernel's name says
# ``ffma``. With TF32 on, the name says ``tf32`` and the Tensor Cores do the
# work. On the H200 plain fp32 took many times as long as bf16, and TF32 more
# than bf16 but far less than plain fp32, yet neither is a slow kernel: each ran
# at over half of its own datasheet peak (67 TFLOP/s for fp32 on the FMA units,
# 494.7 for TF32). The times: :doc:`lab notes of Part 1 </chapters/part1-notes>`.

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
    gemm_rate(fp32_off, 4096)
    gemm_rate(fp32_on, 4096)

# %%
# Read the kernel names from left to right: ``sm80`` or ``sm90`` is the GPU
# architecture the kernel was built for (an fp32 FMA kernel from the Ampere
# generation still serves Hopper), ``xmma_gemm`` a cuBLAS GEMM, then the
# types of the inputs, of the arithmetic and of the output (``f32f32_tf32f32``:
# float32 data, TF32 arithmetic), then the tile sizes. The bf16 GEMM is an
# ``nvjet`` kernel, cuBLAS's newer GEMM for Hopper.
#
# The fp32 run also shows a queue: its first active step's GEMM started long
# after its launch call: GEMMs launched before the profiled window were still
# running (the trace does not hold them, only the wait). A long launch-to-start
# latency means a kernel waited its turn.

print(fp32_off.table)

# %%
# What the chapter concluded
# --------------------------
#
# Divide a kernel's work by its median time and compare with the GPU's
# datasheet for the units the kernel ran on: near the limit, only less work
# helps, or a dtype the faster units take; far below it, look at the launch
# grid and the kernel's name. For float32 models on Hopper, enabling TF32 is
# the cheap step: the inputs lose mantissa bits (10 instead of 23) but keep
# float32's range, and the GEMM ran several times as fast here.
