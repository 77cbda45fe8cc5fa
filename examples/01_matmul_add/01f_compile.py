"""
What torch.compile changes
==========================

``torch.compile`` fuses operations. Will it turn the matmul and the add of
``torch.add(torch.matmul(x, w), b)`` into one :term:`kernel`? This experiment
profiles the compiled function in its default mode, in ``reduce-overhead`` mode
(:term:`CUDA graphs <CUDA graph>`) and with :term:`max-autotune`, and beside it
``torch.addmm(b, x, w)`` called directly, which is what the compiler turns the
pair into. The section "What does ``torch.compile`` change, and what does it
not?" of :doc:`/chapters/part1` and its lab notes read these runs.

Run it yourself::

    python 01f_compile.py                            # the whole page
    python 01f_compile.py 4096_bf16_triton_gemm      # one variant, its table printed

This file needs only torch (and, for ``torch.compile`` on the CPU, a C++
compiler), with ``_01_common.py`` beside it: the harness the stories of this set
share, pasted into the site's download of this story. On the CPU it profiles the
same code there (the trace has no :term:`GPU lane`, and 4096 shrinks to 512).
Each run writes its trace to ``traces/01_matmul_add/<variant>.json``; with
:mod:`tracereader` installed the page also counts each step's GPU operations.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore

# From the code the stories of this set share (``_01_common.py``, beside this file;
# story 01a shows it): the harness ``profile_matmul_add`` and the plumbing of every
# story (``story_run``, ``optional_tracereader``).
from _01_common import optional_tracereader, profile_matmul_add, story_run

# %%
# The workload and its harness
# ----------------------------
#
# ``fn`` is the code under study; ``fn_addmm`` is the same computation as one
# ``torch.addmm`` call, which adds ``b`` onto the product inside the
# :term:`GEMM`.
#
# ``profile_matmul_add`` builds the inputs, picks ``fn`` or (``op="addmm"``)
# ``fn_addmm``, and compiles it when ``compile`` names a mode: ``"default"``,
# ``"reduce-overhead"``, ``"max-autotune-no-cudagraphs"``, or ``"triton-gemm"``,
# which is max-autotune limited to :term:`Inductor <TorchInductor>`'s own
# :term:`Triton` GEMM :term:`templates <template (Inductor)>` (on a GPU; on the
# CPU it is plain ``max-autotune-no-cudagraphs``). Each compile starts from
# ``torch._dynamo.reset()``, and a compiled function always gets five untimed
# calls first, so compiling (and CUDA graph recording) happens before the
# profiler starts. Then ``wait + warmup_steps + active`` steps run
# under the profiler's schedule and the last ``active`` are kept. (``batch``,
# ``tf32`` and ``export`` serve the other experiments of this set.)


# %%
# The variants
# ------------
#
# The recordings this page shows were made on an NVIDIA H200, each variant
# several times.
#
# ===========================  ==================================================
# variant                      what it runs
# ===========================  ==================================================
# ``64_bf16_compile``          64x64 bf16, ``torch.compile`` default mode
# ``64_bf16_addmm``            64x64 bf16, ``torch.addmm(b, x, w)``, eager, warm
# ``64_bf16_reduce_overhead``  64x64 bf16, ``mode="reduce-overhead"``
# ``4096_bf16_compile``        4096x4096 bf16, default mode
# ``4096_bf16_autotune``       4096x4096 bf16, ``max-autotune-no-cudagraphs``
# ``4096_bf16_triton_gemm``    4096x4096 bf16, Inductor's Triton GEMM only
# ===========================  ==================================================

# The two sizes, both in bf16.
SMALL = {"size": 64, "dtype": "bfloat16"}
BIG = {"size": 4096, "dtype": "bfloat16"}

VARIANTS = {
    "64_bf16_addmm": (profile_matmul_add, {**SMALL, "op": "addmm", "warmup": True}),
    "64_bf16_compile": (profile_matmul_add, {**SMALL, "compile": "default"}),
    "4096_bf16_compile": (profile_matmul_add, {**BIG, "compile": "default"}),
    "64_bf16_reduce_overhead": (profile_matmul_add, {**SMALL, "compile": "reduce-overhead"}),
    "4096_bf16_autotune": (profile_matmul_add, {**BIG, "compile": "max-autotune-no-cudagraphs"}),
    "4096_bf16_triton_gemm": (profile_matmul_add, {**BIG, "compile": "triton-gemm"}),
}


# ``run(name)`` profiles one variant and returns its name, the profiler's table
# and the trace's path (story 01a has the details).
run = story_run(VARIANTS, __name__)

# %%
# The compiled step
# -----------------
#
# In eager mode (plain PyTorch, not compiled) each step runs two kernels: the
# GEMM, then the add. Compiled, the step still runs two GPU operations.
# :term:`TorchDynamo` captured the Python function (matmul, then add) as a
# graph, and TorchInductor turned the pair into one ``aten::addmm`` (an
# :term:`aten` operator). That is still a :term:`cuBLAS` GEMM: a
# ``Memcpy DtoD`` (a :term:`device-to-device copy <Memcpy DtoD>`) first seeds
# the output with ``b``, and the GEMM (``badd`` in its name) adds its product
# onto it. What did change is on the CPU:
# :term:`new frames <torch.compile runtime frames>` around the call, among them
# :term:`guards`, checks run on every call that the compiled code still fits
# the inputs.

compiled = run("64_bf16_compile")
# sphinx_gallery_start_ignore
compiled  # on the site: when and where it was recorded, and a link to every repeat
# sphinx_gallery_end_ignore

# %%
# The ``matmul_add`` row with no CPU time is the label's
# :term:`GPU-side span <gpu_user_annotation>`: from the first kernel the label
# launched to the last, idle time included, so its
# :term:`Self CUDA % <self time>` can pass 100 % (story ``01a`` reads the table
# row by row).

print(compiled.table)

# %%
# With :mod:`tracereader` installed, ``step_times`` counts each step's GPU
# operations, and the timeline shows the new frames on the :term:`CPU lane`:
# ``Torch-Compiled Region`` around the call, the guard checks, and a
# ``CompiledFxGraph`` call that runs Inductor's generated code, which in turn
# calls ``aten::addmm``. A step's :term:`GPU busy time` is the union of the GPU
# operations it launched, so it counts the copy and the GEMM once each.

tracereader = optional_tracereader()  # None where it is not installed


def last_step(result):
    # The last kept step: its CPU time, its GPU operations, the GPU's busy time.
    st = tracereader.step_times(tracereader.load(result.trace_path))[-1]
    print(f"{result.name}: {st.name}: CPU {st.cpu_us:.0f} us, "
          f"{st.gpu_ops} GPU ops, GPU busy {st.gpu_busy_us:.1f} us")  # fmt: skip


if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    last_step(compiled)
    compiled_trace = tracereader.load(compiled.trace_path)
    tracereader.timeline(compiled_trace, step=compiled_trace.steps[-1].name, fig=plt.figure())

# %%
# ``torch.addmm`` by hand
# -----------------------
#
# The :term:`Hugging Face post <Hugging Face series>`'s homework: trace
# ``torch.addmm(b, x, w)`` directly. It gives the compiled program without the
# compile frames: the same copy, the same ``badd`` GEMM, and a shorter CPU
# stack.

addmm = run("64_bf16_addmm")
# sphinx_gallery_start_ignore
addmm
# sphinx_gallery_end_ignore

# %%

print(addmm.table)
if tracereader:
    last_step(addmm)

# %%
# CUDA graphs: ``reduce-overhead``
# --------------------------------
#
# ``mode="reduce-overhead"`` replays the step as a CUDA graph: one
# ``cudaGraphLaunch`` per step releases the copy and the GEMM. A graph replays
# its kernels on the memory addresses it recorded, so each call first copies
# your inputs into the graph's own buffers: one more small kernel, three GPU
# operations per step. A graph saves the :term:`launches <launch call>` of many
# kernels, and here there are only two, so it does not save CPU time either.

graphed = run("64_bf16_reduce_overhead")
# sphinx_gallery_start_ignore
graphed
# sphinx_gallery_end_ignore

# %%

print(graphed.table)
if tracereader:
    last_step(graphed)

# %%
# At 4096x4096: the copy costs GPU time
# -------------------------------------
#
# At this size the ``Memcpy DtoD`` that seeds the output moves a 32 MiB matrix,
# and it shows on the GPU lane next to the GEMM. ``kernel_table`` lists both,
# with a tiny :term:`memset` that cuBLAS queues before every GEMM this large. The
# Hugging Face post timed the same copy on its A100 (32 MB in about 33 µs); on
# the H200 it was quicker than that. Its time and rate, beside the GEMM's, are
# in the :doc:`lab notes of Part 1 </chapters/part1-notes>`.

big = run("4096_bf16_compile")
# sphinx_gallery_start_ignore
big
# sphinx_gallery_end_ignore

if tracereader:
    print(tracereader.kernel_table(tracereader.load(big.trace_path)))

# %%
# A truly fused kernel would read ``b`` inside the GEMM and need no copy.
# Limited to Inductor's own Triton GEMM templates, the compiler writes one: a
# single ``triton_tem_fused_addmm`` kernel per step. On the H200 it took about
# as long as cuBLAS's GEMM and the copy together, so per step eager, compiled
# and fused kept the GPU busy for about the same time; on the H100 it took longer
# than the two together, by under a fifth, and the fused kernel kept the GPU busy
# longest per step (the H200's ratios are in the
# :doc:`lab notes of Part 1 </chapters/part1-notes>`). Fusing saved a copy, not time.

fused = run("4096_bf16_triton_gemm")
# sphinx_gallery_start_ignore
fused
# sphinx_gallery_end_ignore

if tracereader:
    print(tracereader.kernel_table(tracereader.load(fused.trace_path)))

# %%
# ``max-autotune-no-cudagraphs`` times the candidates (cuBLAS and Triton
# templates) at compile time and keeps the fastest. Compiling takes longer in
# this mode, since every candidate is built and run (read from Inductor's
# source); the harness's five untimed calls keep that out of the profile, as
# for every compiled variant. The choice comes from timings taken at compile
# time, so another process or machine may keep another. Our repeats shared one
# compile cache (the folder on disk where Inductor keeps what it compiled and
# chose, for later compiles to reuse), so they are not independent draws: the
# :doc:`lab notes of Part 1 </chapters/part1-notes>` say what each recorded
# repeat ran.

tuned = run("4096_bf16_autotune")
# sphinx_gallery_start_ignore
tuned
# sphinx_gallery_end_ignore

if tracereader:
    print(tracereader.kernel_table(tracereader.load(tuned.trace_path)))

# %%
# What the chapter concluded
# --------------------------
#
# ``torch.compile`` did not fuse the matmul and the add into one kernel: it
# rewrote them as ``addmm``, which ATen runs as a copy of ``b`` into the output
# and a cuBLAS GEMM that adds onto it, as many GPU operations per step as eager
# ran. Count the GPU operations per step before and after compiling: a drop is
# the sign of a fusion; then compare the steps' GPU time, which decides. Here
# the count did not drop, and the compiled call
# cost more CPU time than the eager one. How much more cannot be read from runs
# profiled one after the other, since CPU time moves between runs; the next
# experiment of this set times the versions interleaved in one process.
