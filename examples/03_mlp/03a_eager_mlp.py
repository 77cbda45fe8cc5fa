"""
The eager MLP: what runs, and what a kernel name tells you
==========================================================

The MLP block that follows attention in many transformers (a GeGLU MLP: three
Linears without bias and a gelu-times-multiply between them, shown below), run
*eagerly*, that is op by op as Python calls them, without ``torch.compile``, in bf16
(bfloat16, 16-bit floats). Guess first: how many GPU :term:`kernels <kernel>` (functions
that run on the GPU) does one forward pass run? This page profiles it at two shapes and
reads the answer off the table and the timeline:

==============  =====================================  ==========================
variant         batch x seq, dim -> hidden             what it shows
==============  =====================================  ==========================
``eager``       64 x 128 tokens, 768 -> 3072           five kernels, two GEMM names
``eager_big``   8 x 512 tokens, 4096 -> 11008          one name, a different job
==============  =====================================  ==========================

A :term:`GEMM` is a matrix multiply, the work of each Linear. The small shape is the
:term:`Hugging Face series`' (8192 tokens of width 768); the large one is a
Llama-7B-sized MLP over 4096 tokens. :doc:`Part 2 of the chapters </chapters/part2>`
reads these recordings; the other pages of this set (``03_mlp``) compile the same MLP
(:doc:`03c </auto_examples/03_mlp/03c_compile_modes>`), profile a cold first forward,
and swap in a hand-written kernel.

This file needs only torch, and ``_03_common.py`` beside it: the code the pages of
this set share, which the site's download of this page has pasted in. On a machine
with a CUDA GPU it profiles live; on the CPU it profiles a shrunken MLP there, and the
trace has no :term:`GPU lane` (the row of GPU work on the timeline). Run it::

    python 03a_eager_mlp.py             # the whole page
    python 03a_eager_mlp.py eager_big   # one named variant, its table

Each run writes its trace to ``traces/03_mlp/<variant>/trace.json``. With
:mod:`tracereader` (the library this site is built on: ``pip install .[draw]`` in a
checkout of its repository) the page also measures and draws the traces; without it,
open them at https://ui.perfetto.dev.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore

# From the code the stories of this set share (``_03_common.py``, beside this file): the
# MLP, its harness ``profile_mlp``, the two shapes, and the plumbing of every story
# (``story_run``, ``optional_tracereader``).
from _03_common import BIG, SMALL, optional_tracereader, profile_mlp, story_run

# %%
# The MLP
# -------
#
# ``GeGLUMLP`` is the MLP block of many transformers: ``gate_proj`` and
# ``up_proj`` widen each token from ``dim`` to ``hidden`` features, ``gelu(gate,
# approximate="tanh") * up`` gates one with the other (GeGLU), and ``down_proj``
# maps back to ``dim``. No biases. Written in PyTorch, a forward is three
# GEMMs, a gelu and a multiply. This listing and the two below are quoted from
# ``_03_common.py``, which imports what they use (``torch``; ``nn`` and ``F`` from it;
# ``profile``, ``schedule``, ``ProfilerActivity`` and ``record_function`` from
# ``torch.profiler``; ``Path``). The page calls them through ``run``, further down.
#
# .. literalinclude:: ../../../examples/03_mlp/_03_common.py
#    :language: python
#    :pyobject: GeGLUMLP
#
# ``LigerGeGLUMLP`` is the same MLP with the gelu-and-multiply done by one
# hand-written :term:`Triton` kernel from Liger-Kernel, a library of such kernels
# (imported only when it is used). ``profile_mlp`` can pick it; its own page is 03e.
#
# How it is profiled
# ------------------
#
# ``profile_mlp`` profiles one MLP forward per step, writes ``trace.json`` into
# ``out_dir`` and returns the profiler's table. It builds the MLP in bf16 and
# its input, a ``(batch, seq, dim)`` tensor, seeded so that every run sees the
# same numbers. Its switches:
#
# * ``compile``: compile the MLP in that ``torch.compile`` mode (``"default"``,
#   ``"reduce-overhead"``, ``"max-autotune-no-cudagraphs"``), after resetting
#   :term:`TorchDynamo` (the part of ``torch.compile`` that captures the model) so
#   that no earlier compile is reused;
# * ``kernel="liger"``: use ``LigerGeGLUMLP`` (a CUDA GPU and
#   ``pip install liger-kernel`` needed; on the CPU it says so and profiles the
#   torch MLP);
# * ``cold=True``: no warm-up at all, so that the process's very first forward
#   is the first step in the trace.
#
# Otherwise five forwards run before the profiler starts, a :term:`warm-up`: in the
# compiled variants of page 03c, compiling, timing candidate kernels and recording
# :term:`CUDA graphs <CUDA graph>` all happen there, and the profiled steps show
# the steady state.
#
# .. literalinclude:: ../../../examples/03_mlp/_03_common.py
#    :language: python
#    :pyobject: profile_mlp
#
# ``_profile_steps`` runs ``skip`` steps (2 here) that the profiler's schedule does
# not keep: a ``wait`` step, in which it records nothing, and a ``warmup`` step, which
# it records and throws away. Then it runs ``active`` steps (3 here) that it keeps,
# with input shapes, so that each op in the trace carries its shapes. Each step is
# one forward, so the tables below sum three forwards. It writes ``trace.json`` into
# ``out_dir`` and returns the table, sorted by GPU time when there is a GPU.
#
# .. literalinclude:: ../../../examples/03_mlp/_03_common.py
#    :language: python
#    :pyobject: _profile_steps

# %%
# The variants
# ------------
#
# The two variants of the table at the top of the page, ``eager`` and ``eager_big``:
# each name maps to its harness and settings. The site's recorder (the script that
# ran every variant on our GPUs) ran each three times (repeats r0, r1 and r2) on an
# H200 and on an H100. This site's tables and picture are the H200's first repeat, r0.

VARIANTS = {
    "eager": (profile_mlp, {**SMALL}),
    "eager_big": (profile_mlp, {**BIG}),
}

# %%
# ``run(name)`` profiles one variant into ``traces/03_mlp/<name>/`` and says
# where it ran. On the CPU, every size above ``CPU_MAX_DIM`` (256) shrinks to it.
# ``python 03a_eager_mlp.py VARIANT`` profiles that variant and stops (inside
# Jupyter, ``sys.argv`` holds the Jupyter kernel's own flags, so a notebook runs
# the page).

run = story_run(VARIANTS, __name__)

# %%
# The table
# ---------
#
# Guess first, then look at the rows with CUDA time. Three GEMMs (``aten::mm``,
# each under an ``aten::linear``), a gelu and a multiply. A key to the table:
#
# * each row is one name, summed over the three profiled steps: ``# of Calls``
#   counts three forwards, so divide it by 3 for one;
# * *CPU* columns are time on the CPU, *CUDA* columns GPU time; a *total* includes
#   the events recorded inside the row's event, *self* leaves them out
#   (:term:`self time`);
# * the kernel rows (``nvjet_...``, ``void at::native::...``, ``Memset``) have no CPU
#   time: the GPU ran them, and the op that launched each shows the same time in its
#   CUDA columns;
# * ``ProfilerStep*`` is the profiler's step (:term:`ProfilerStep`), and ``mlp_fwd``
#   is our ``record_function`` label (:term:`record_function range`). It has two
#   rows: on the CPU, and on the GPU (the first row, a :term:`gpu_user_annotation`),
#   from the start of its first kernel to the end of its last, idle time included.
#   That is why its Self CUDA % can pass 100 %.

eager = run("eager")
print(eager.table)

# %%
# In every repeat on both GPUs the answer was five kernels per forward (this table's
# 6 + 3 + 3 + 3 kernel calls, over three steps): three :term:`nvjet` GEMMs from
# :term:`cuBLAS`, NVIDIA's library of GEMM kernels, the gelu and the multiply, in
# Python's order (gate GEMM, gelu, up GEMM, multiply, down GEMM). ``aten::mm`` also
# issued two :term:`memsets <memset>` of a few bytes per forward. The table cuts the two
# elementwise kernels' names; ``tracereader``'s list of the kernels shortens them to what
# tells them apart, with their calls and times in µs. The trace, and Perfetto, hold the
# full names; the cell prints the multiply's, up to its parameter list:

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    tr = tracereader.load(eager.trace_path)
    kernel_list = tracereader.kernel_table(tr)
    print(kernel_list)
    kernel_rows = kernel_list.to_records()
    for k in kernel_rows:
        if "MulFunctor" in k["name"]:
            print("the multiply in full:", k["name"].split("(")[0])

# %%
# The ops that only reshape a tensor (``aten::t``, ``aten::transpose``,
# ``aten::reshape``, ``aten::view``, ...; :term:`views <view>`) launch nothing:
# ``aten::t`` and ``aten::transpose`` are at the bottom of the table with no CUDA
# time, and ``aten::reshape`` and ``aten::view``, with none either, fell below its
# 15 rows.
#
# Look at the gelu's and the multiply's rows. Each works element by element and moves
# whole tensors. The gelu reads gate's output and writes its own (48 MiB each
# at this shape: 8192 x 3072 bf16 values), and the multiply reads that back with up's
# output and writes the product: that round trip through memory is what a fused kernel,
# one kernel doing both, removes (page 03c). The multiply's full name shows bf16 in and
# out (``BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, ...>``) and
# ``MulFunctor<float>``: it computes each product in float and rounds back.
#
# Is each kernel slow, or does it just have a lot to do? The cell below divides each
# one's work by its median time, an :term:`achieved rate`, and sets it against the
# GPU's datasheet: FLOP/s for the GEMMs (2 x 8192 x 768 x 3072 each), bytes per second
# for the other two (2 tensors moved by the gelu, 3 by the multiply). Those are
# *effective* rates: some of the bytes may come from the :term:`L2 cache` rather than
# from memory, which the trace cannot tell. In every repeat on both GPUs each of these
# kernels reached more than half of its peak, and the gelu and the multiply together
# took over a quarter of the GPU time: that share is what fusing them goes after.

if tracereader and tr.device_properties:  # a GPU trace
    sheet = tracereader.datasheet(tr.device_properties[0]["name"])
    tensor_bytes = SMALL["batch"] * SMALL["seq"] * SMALL["hidden"] * 2  # 48 MiB
    gemm_flops = 2 * SMALL["batch"] * SMALL["seq"] * SMALL["dim"] * SMALL["hidden"]
    for k in kernel_rows if sheet else []:  # no datasheet row for this GPU: no rates
        name, us = tracereader.shorten_kernel_name(k["name"])[:50], k["median_us"]
        if "Gelu" in name or "Mul" in name:  # reads 1 or 2 tensors, writes 1
            rate = (2 if "Gelu" in name else 3) * tensor_bytes / us / 1e6
            print(f"{name:50} {rate:6.2f} TB/s     {100 * rate / sheet.hbm_tbs:3.0f} % of peak")
        elif "gemm" in name or name.startswith("nvjet"):
            rate = gemm_flops / us / 1e6
            print(f"{name:50} {rate:6.0f} TFLOP/s  {100 * rate / sheet.bf16_tflops:3.0f} % of peak")
    pair = sum(k["total_us"] for k in kernel_rows if "elementwise" in k["name"])
    whole = sum(k["total_us"] for k in kernel_rows)
    print(f"gelu + multiply: {100 * pair / whole:.0f} % of GPU time")

# %%
# The multiply is :term:`memory-bound` (its time is set by the bytes it moves) on both
# GPUs: on the H100, whose memory bandwidth is lower (3.35 TB/s against the H200's 4.8,
# per the datasheets), it took longer by about the ratio of the two, in every repeat.
# The gelu's time grew much less there, so on the H200 something besides memory holds it
# back, perhaps its arithmetic (a tanh in float for each element); the trace cannot tell.
#
# And look at the GEMMs: the three do the same number of FLOPs, but gate and up
# ran one kernel and down another. cuBLAS picks a kernel per problem shape, and
# down's output (8192 x 768) is narrower than gate's (8192 x 3072).
#
# One forward pass on the timeline
# --------------------------------
#
# The last profiled step, drawn by ``tracereader``. Time runs left to right. The top
# rows are the :term:`CPU lane`: the step, our ``mlp_fwd`` label, the aten ops nested in
# it (the three wide blue groups are the Linears, ``aten::linear`` over ``aten::matmul``
# over ``aten::mm``; the narrow ones between them the gelu and the multiply; Perfetto
# shows each bar's full name), and the orange :term:`launch calls <launch call>`. The
# green row is the GPU lane, each arrow joins a launch call to the kernel it queued, and
# hatched strips are the GPU's idle gaps. A launch call returns as soon as its kernel is
# queued, so the GPU can run behind the CPU. In this picture the first kernels on the
# GPU lane, which no arrow reaches, are the previous step's (the end of its up GEMM, its
# multiply and its down GEMM); this step's five kernels follow, in Python's order (its
# memsets are too short to see at this scale), and the CPU finished ``mlp_fwd`` long
# before the GPU finished them. The red ``cudaDeviceSynchronize`` after the step is the
# profiler's own: it waits for the GPU as its window closes
# (:term:`cudaDeviceSynchronize at window end`); the model does not synchronize.
#
# The lines below the picture measure each profiled step (the picture is the last): its
# CPU time, and the GPU's busy and idle time over the step's *span*. The span starts at
# the step's start or, if the GPU is still running the previous step's kernels then, as
# in this picture, where they end; it ends with the step's last kernel (or its CPU time,
# if that ends later). Busy for at least 95 % of its span, a step is :term:`GPU-bound`:
# the GPU sets the pace, and only faster or fewer kernels would speed it up.

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    tracereader.timeline(tr, step=tr.steps[-1].name, width_in=12, fig=plt.figure())
    for st in tracereader.step_times(tr):
        print(f"{st.name}: CPU {st.cpu_us:.0f} us; GPU busy {st.span_busy_us:.0f} us, idle "
              f"{st.gpu_idle_us:.1f} us, of {st.span_us:.0f} us: {st.verdict}")  # fmt: skip

# %%
# At this shape the verdict varies: on both GPUs the recorded steps range from CPU-bound
# to GPU-bound. The GPU's busy time was about the same in every step of every repeat;
# the CPU's time is what changed, longest in the first recorded step of every repeat,
# and it includes the profiler's own cost of recording each op. So here the verdict
# follows the CPU side of a profiled run more than the MLP.

# %%
# The larger shape: one name, another job
# ---------------------------------------
#
# Now 4096 tokens of width 4096 into 11008. Compare the down GEMM's kernel name
# here with the gate GEMM's name in the first table.

eager_big = run("eager_big")
print(eager_big.table)

# %%
# First, this table's counts: 7 + 4 GEMM kernels for 9 ``aten::mm``, 4 multiply
# kernels for 3 ``aten::mul``, 11 memsets, and more kernel time than ``aten::mm``'s
# CUDA total. At this shape a step's kernels take several times longer than the CPU
# needs to launch them, so when the profiler's window opened, the last kernels of the
# forward before it were still queued. They ran inside the window, so the trace has
# them, but their launch calls came before it: they belong to no op of the table. In
# every repeat on both GPUs these were that forward's multiply and down GEMM, in
# some also its up GEMM, with their memsets; at the small shape there were none. The
# last cell of this section lists them. A kernel that had already started when the
# window opened is not in the trace at all: the profiler keeps only GPU work that starts
# inside its window. So where the up GEMM is missing, it was still running then, and the
# GPU looks idle at the start of the first step although it was busy.
#
# Now the names. Here gate and up ran a ``192x192`` kernel, and down ran the
# ``256x128`` one that gate and up ran at the small shape. The cell below lists each
# GEMM of both shapes: the input shapes of the ``aten::mm`` that launched it (which
# ``record_shapes=True`` put in the trace), its kernel, its
# :term:`launch configuration` (the grid, how many thread blocks it starts, and the
# block, threads per block) and its mean time. In every repeat on both GPUs the ``256x128`` kernel
# ran the same grid and block for both jobs, and took many times as long on the
# larger. These GEMMs are :term:`persistent kernels <persistent kernel>`: each starts
# one thread block per :term:`streaming multiprocessor` (SM; these GPUs have 132),
# and each block loops over output :term:`tiles <tile>`, so the grid follows the GPU,
# not the work.

if tracereader:
    for result in (eager, eager_big):
        t = tracereader.load(result.trace_path)
        links = tracereader.link(t)
        jobs = {}  # (the aten::mm's input shapes, kernel name) -> grid, block, times
        for k in t.where(kind=tracereader.Kind.KERNEL):
            op = links.issuer[links.launch[k]] if links.launch[k] >= 0 else -1
            if op >= 0 and t.name(op) == "aten::mm":
                job = jobs.setdefault((t.texts[t.extra["input_dims"][op]], t.name(k)), [])
                job.append((t.extra["grid"][k], t.extra["block"][k], t.dur_ns[k] / 1e3))
        for (shapes, name), runs in jobs.items():
            mean = sum(us for _, _, us in runs) / len(runs)
            print(f"{result.name:9} aten::mm{shapes}  {name[:46]}  grid {runs[0][0]} x "
                  f"block {runs[0][1]}, {mean:.1f} us")  # fmt: skip

# %%
# So read a kernel's name as *which code ran*, the op's input shapes as *how much work
# it was given*, and the kernel's duration as *how long that took*. The grid and block
# say how it was launched: for these persistent kernels they follow the GPU, not the
# work (a GEMM kernel that is not persistent starts a block per output tile, so its
# grid grows with the work). In Perfetto, click an op to read its ``Input Dims``, and a
# kernel to read its ``grid`` and ``block``, three numbers each: their product is what
# the cell above prints (these GEMMs' grid is 2 x 66 x 1, 132 blocks).
# ``prof.key_averages(group_by_input_shape=True)`` gives a table with shapes. Equal
# names at different times can mean different inputs, not a slower GPU. With
# ``tracereader``, every kernel that ran while the profiler recorded, and its times
# (on the CPU the list is empty: no GPU lane), then the GPU ops whose launch call is
# not in the trace:

if tracereader:
    tr = tracereader.load(eager_big.trace_path)
    print(tracereader.kernel_table(tr))
    links = tracereader.link(tr)
    early = [tr.name(i) for i in links.gpu_ops if links.launch[i] < 0]
    print(f"{len(early)} GPU ops with no launch call in the trace:")
    for name in early:
        print("   ", tracereader.shorten_kernel_name(name))

# %%
# Every variant
# -------------
#
# The harness and settings of each variant on this page, as written (on the CPU,
# ``run`` shrinks every size above ``CPU_MAX_DIM``, 256).

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
