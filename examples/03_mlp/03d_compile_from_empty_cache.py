"""
What a first compile costs, from an empty cache
===============================================

``torch.compile`` is paid for at the first call. :term:`Inductor <TorchInductor>`, its
code generator, keeps what it compiles in a cache on disk (``TORCHINDUCTOR_CACHE_DIR``,
with the :term:`Triton` kernels it wrote and :term:`max-autotune`'s timing results), so
that a later run can read it back, and a *warm* profile (of the forwards after the first
call) never shows the first call. This page points the cache at an empty folder, as on
a fresh machine, times the first call of the compiled GeGLU MLP of page 03a (three
Linears without bias, bf16; compiled, its gelu and multiply become one fused Triton
kernel, and its :term:`GEMMs <GEMM>`, the matrix multiplies, go to :term:`cuBLAS` or
to whichever candidate wins), then profiles warm forwards as usual:

=================  ==============================  ===============================
variant            batch x seq, dim -> hidden      compile mode
=================  ==============================  ===============================
``compile_cold``   64 x 128 tokens, 768 -> 3072    ``"default"``
``autotune_cold``  64 x 128 tokens, 768 -> 3072    ``"max-autotune-no-cudagraphs"``
=================  ==============================  ===============================

``"max-autotune-no-cudagraphs"`` is max-autotune without replaying the forward as a
:term:`CUDA graph`. The first call includes :term:`TorchDynamo`'s capture of the
Python code, Inductor's code generation, Triton's compiler, timing the fused kernel's
candidate :term:`launch configurations <launch configuration>` and, under max-autotune,
timing every candidate kernel for each GEMM and searching further configurations. It
also holds one-time costs of a fresh process that are not compiling, such as its first
GEMM (:doc:`page 03b </auto_examples/03_mlp/03b_cold_first_forward>`).
:doc:`Part 2 </chapters/part2>` and its lab notes read these recordings; the warm
compiles are page :doc:`03c </auto_examples/03_mlp/03c_compile_modes>`.

This file needs only torch, and ``_03_common.py`` beside it (pasted into the site's
download). With a CUDA GPU it profiles live; on the CPU it compiles and profiles a
shrunken MLP, without a :term:`GPU lane`. Each run writes ``trace.json`` and
``timings.json`` (the first call's time) to ``traces/03_mlp/<variant>/``. Time one
variant per process, as this site's recordings were (run whole, the page compiles both
in one process, the second in a process the first has warmed up)::

    python 03d_compile_from_empty_cache.py compile_cold    # one variant, its table
    python 03d_compile_from_empty_cache.py autotune_cold
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import record_function

# From the code the pages of this set share (``_03_common.py``, beside this file; page
# 03a shows it): the MLP, ``_profile_steps`` (profiles ``active`` steps after ``skip``
# unkept ones, with input shapes, into ``trace.json``), the shape, the plumbing.
from _03_common import SMALL, GeGLUMLP, _profile_steps, optional_tracereader, story_run

# %%
# Reading max-autotune's report
# -----------------------------
#
# Under max-autotune Inductor prints an ``AUTOTUNE`` report to stderr, one block
# per race: three per compile here, one per GEMM (gate and up share a shape, yet each
# got its own). A block names the op and its input sizes, then the fastest
# candidates with their times (cuBLAS as ``mm``, Inductor's Triton :term:`templates
# <template (Inductor)>` as ``triton_mm_N`` with their :term:`tile` settings), then
# how long benchmarking and precompiling (compiling the candidates) took.
# ``parse_autotune_report`` turns each block into a dict, with the failures and the
# statistics printed before it. It and ``_time_first_call`` are plumbing: skim them.

# A block's header: the op and its input sizes, ``AUTOTUNE mm(8192x768, 768x3072)``.
AUTOTUNE_HEADER = r"^AUTOTUNE (\w+)\((.*)\)$"
# One candidate: its name, its time, its speed relative to the fastest, settings.
AUTOTUNE_CHOICE = r"^\s+(\S+) ([0-9.]+) ms ([0-9.]+)%\s*(.*)$"
# The block's last line: time spent benchmarking, precompiling, and on how many.
AUTOTUNE_TOOK = (
    r"AUTOTUNE benchmarking takes ([0-9.]+) seconds and ([0-9.]+) seconds "
    r"precompiling for (\d+) choices"
)


def parse_autotune_report(text):
    blocks, stats, failed = [], None, []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        # The stats come as a title line, then one line of JSON; they describe the
        # block that follows, as do the failures collected before its header.
        if line.startswith("Autotune Choices Stats:") and i + 1 < len(lines):
            try:
                stats = json.loads(lines[i + 1])
            except ValueError:
                stats = None
        elif "RuntimeError: No valid triton configs" in line:  # a candidate that failed
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


# %%
# The harness
# -----------
#
# ``profile_compile_cold`` compiles the MLP with an empty Inductor cache, times the
# first call and keeps the autotuning report (in ``timings.json``), then profiles
# warm forwards into ``trace.json``. The ``finally`` block removes the temporary
# cache and restores the environment, so the rest of the process compiles as usual.


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
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    # Both caches are chosen by environment variables, read when a compile starts:
    # save them, point Inductor's at a new empty folder, and unset Triton's, so
    # that Triton falls back to a folder inside Inductor's.
    saved = {key: os.environ.get(key) for key in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    cache = tempfile.mkdtemp(prefix="inductor-cold-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache  # Triton's cache lives inside it
    os.environ.pop("TRITON_CACHE_DIR", None)
    try:
        torch.manual_seed(0)
        mlp = GeGLUMLP(dim, hidden).to(device=device, dtype=torch.bfloat16)
        x = torch.randn(batch, seq, dim, device=device, dtype=torch.bfloat16)
        torch._dynamo.reset()  # forget what Dynamo compiled before in this process
        f = torch.compile(mlp, mode=None if mode == "default" else mode)
        # torch.compile only wraps: the compile happens inside this first call.
        report, first_s = _time_first_call(lambda: f(x), device)
        # The second call, timed the same way, is the yardstick: compiled code,
        # no compiling.
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

        for _ in range(3):  # a few more warm calls, then profile as the warm stories do
            step()
        return _profile_steps(step, out_dir, active=active, skip=2, device=device)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# ``_time_first_call`` runs ``call`` once with stderr (file descriptor 2, so that
# what C code and subprocesses print is caught too) going to a file. It returns what
# was printed there, echoed afterwards, and the call's wall time, GPU work included.


def _time_first_call(call, device):
    # Replacing ``sys.stderr`` would miss text written to the descriptor directly,
    # by C++ code or by compile workers: so redirect descriptor 2 itself.
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
#
# The table at the top of the page, each variant recorded three times (repeats r0, r1,
# r2) on an H200 and an H100, each in a fresh process; the site shows the H200's r0.

VARIANTS = {
    "compile_cold": (profile_compile_cold, {**SMALL, "mode": "default"}),
    "autotune_cold": (profile_compile_cold, {**SMALL, "mode": "max-autotune-no-cudagraphs"}),
}

# %%
# ``run(name)`` profiles one variant into ``traces/03_mlp/<name>/`` (shrunken on a CPU).

run = story_run(VARIANTS, __name__)

# %%
# The default mode, from nothing
# ------------------------------
#
# First the warm forwards after the first call. Rows that eager mode lacks:
# ``TorchDynamo Cache Lookup``, ``Torch-Compiled Region``, ``Pregraph bytecode``,
# ``AOTDispatcher Runtime Wrapper Prologue`` and the second ``## Call
# CompiledFxGraph`` are the compiled code's wrappers, CPU work
# (:term:`torch.compile runtime frames`); the first ``## Call CompiledFxGraph`` is
# that call's span on the GPU (:term:`gpu_user_annotation`), idle time included, so
# its Self CUDA % can pass 100 %. The fused kernel (``triton_poi_...``, ``poi`` for
# pointwise) has a row for its launch on the CPU, named after it, and one on the GPU.
compile_cold = run("compile_cold")
print(compile_cold.table)

# %%
# A table sorted by time cannot show where the fused kernel runs; the last step's
# timeline can: in every repeat on both GPUs, after the gate and up GEMMs, before
# down. Below it, the fused kernel's launch configuration (in Perfetto, click
# the kernel): its grid (how many thread blocks it starts), its block (threads per
# block), and the elements each thread handles, 8192 x 3072 over grid x block.

tracereader = optional_tracereader()  # None where it is not installed

if tracereader:
    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    elements = SMALL["batch"] * SMALL["seq"] * SMALL["hidden"]
    tr = tracereader.load(compile_cold.trace_path)
    tracereader.timeline(tr, step=tr.steps[-1].name, width_in=12, fig=plt.figure())
    for fused in tr.where(kind=tracereader.Kind.KERNEL, prefix="triton_poi")[:1]:  # none on a CPU
        grid, block = tr.extra["grid"][fused], tr.extra["block"][fused]
        print(f"{tr.name(fused)}: {grid} blocks x {block} threads, "
              f"{elements // (grid * block)} elements per thread")  # fmt: skip

# %%
# Here is a twist that :doc:`Part 2 </chapters/part2>` follows up. Inductor's source
# offers this kernel two configurations, 128-thread blocks of 8 elements per thread
# or 256-thread blocks of 2, times both at the first call and keeps the faster by its
# own timing. On the H200 every ``compile_cold`` repeat kept the 256-thread one, and
# every repeat of the warm ``compile`` of page 03c the 128-thread one, which ran
# faster, beyond the spread (Part 2 has both times). The recordings do not show why
# a compile kept the slower one (the warm repeats shared one cache: maybe one stored
# choice, read back). On the H100 both kept 256-thread blocks and ran alike. By
# Inductor's source, ``torch._inductor.config.triton.autotune_pointwise = False`` leaves
# only the 128-thread configuration in the default mode (max-autotune ignores it).
#
# max-autotune, from nothing
# --------------------------
#
# Now the mode that races GEMM candidates. Its report scrolls by on stderr
# while the first call runs, and is kept in ``timings.json``. Its layout, from
# one H200 recording (abridged: a format to read, not a result; each block lists
# up to ten candidates, each Triton one with all its settings)::
#
#     AUTOTUNE mm(8192x768, 768x3072)
#       mm 0.0676 ms 100.0%
#       triton_mm_17 0.0679 ms 99.6% ACC_TYPE='tl.float32', ..., BLOCK_K=64,
#           BLOCK_M=128, BLOCK_N=128, ..., num_stages=3, num_warps=4
#       ...
#     SingleProcess AUTOTUNE benchmarking takes 0.5275 seconds and 2.8899
#       seconds precompiling for 20 choices
#
# Each percentage is the fastest candidate's time over this one's. The ``BLOCK_*``
# settings are the output tile one Triton program (a thread block) computes and the
# slice of the inner dimension it loads per step; ``num_stages`` is how many loads are
# in flight, ``num_warps`` the threads per program over 32.
autotune_cold = run("autotune_cold")
print(autotune_cold.table)

# %%
# In this table one GEMM ran a ``triton_tem`` kernel, a template that won its race.
# Its CPU row's input shapes (below; ``Input Dims`` in Perfetto) are the product
# gelu(gate) * up, down's weight and a buffer shaped like the output: the down GEMM.
# Its name also lists ``gelu`` and ``mul``, yet it reads the product the fused kernel
# wrote before it: Inductor names a kernel after the graph ops it came from, and the GEMM
# took in those of its input, gelu(gate) * up, not yet computed when Inductor built it.

if tracereader:
    tr = tracereader.load(autotune_cold.trace_path)
    for tem in tr.where(kind=tracereader.Kind.CPU_OP, prefix="triton_tem")[:1]:  # none on a CPU
        print(tr.name(tem), tr.texts[tr.extra["input_dims"][tem]])

# %%
# What the first calls cost
# -------------------------
#
# The harness wrote the first and the second call's wall time next to each trace, and
# for each race its sizes, its three fastest candidates, cuBLAS's time where it is not
# among them, the candidates that failed to compile, and its benchmarking and
# precompiling times. On the CPU the compile builds C++ code instead of Triton kernels,
# and max-autotune may race nothing.
for result in (compile_cold, autotune_cold):
    timings = json.loads((result.trace_path.parent / "timings.json").read_text())
    print(f"{result.name}: {timings['first_call_s']} s, then {timings['second_call_s']} s")
    for race in timings["autotune"]:
        best = ", ".join(f"{c['name']} {c['ms']} ms" for c in race["choices"][:3])
        slower = [c for c in race["choices"][3:] if c["name"] == "mm"]  # cuBLAS, not in the 3
        best += "".join(f"; cuBLAS {c['ms']} ms" for c in slower)
        took = f"benchmarking {race.get('bench_s')} s, precompiling {race.get('precompile_s')} s"
        print(f"  {race['op']}({race['sizes']}): {best}\n    {took}")
        for failure in race["failed"]:
            print(f"    failed: {failure}")

# %%
# On both GPUs, in every repeat, max-autotune's first call took at least three times as
# long as the default mode's, which races nothing; the races' own times account for only
# part of the difference. In every max-autotune compile on both GPUs, a Triton candidate
# that asked for more :term:`shared memory` than a block may use failed in the first and
# last races (the printed sizes, in bytes, are 256 KiB and 227 KiB, what a block may
# take of an SM's 228 KiB); the second, of the first's shape, printed none (the report
# does not say why). In every repeat the forwards then ran the races' winners (the
# :doc:`lab notes of Part 2 </chapters/part2-notes>` list every race): ``triton_tem``
# among the GEMMs where a template won, ``nvjet`` where cuBLAS did.
#
# After the first call
# --------------------
#
# Per variant: GPU busy and CPU time per step, each step's verdict (:term:`GPU-bound`).

if tracereader:
    for result in (compile_cold, autotune_cold):
        steps = tracereader.step_times(tracereader.load(result.trace_path))
        busy = sum(st.gpu_busy_us for st in steps) / len(steps)
        cpu = sum(st.cpu_us for st in steps) / len(steps)
        verdicts = ", ".join(st.verdict for st in steps)
        print(f"{result.name}: per step, GPU busy {busy:.0f} us, CPU {cpu:.0f} us ({verdicts})")

# %%
# In both modes, in every repeat on both GPUs, the CPU spent longer per step than the
# GPU was busy (the picture's GPU lane is empty while the wrappers run; its hatching
# marks only gaps between GPU ops). A verdict is the GPU's busy share of the step: under
# half ``CPU-bound``, from half to 95 % ``balanced``. Every ``balanced`` step's GPU work
# ran on past its CPU time: faster kernels would shorten those steps, not the others.
#
# Under max-autotune, Inductor also times further launch configurations of the fused
# kernel (coordinate descent, which this mode turns on). Each ``autotune_cold`` repeat
# ended with its own, on both GPUs (the lab notes list them): in the two tables the
# fused kernel ran slower than the default mode's, in most other repeats faster. Each
# template that won a race, on either GPU, then ran longer in the forwards than cuBLAS's
# kernel for the same GEMM in any default-mode repeat: the race had timed cuBLAS slower
# than the forwards ran it, the template about as fast. A race's times are not the
# forward's.
#
# What to take away
# -----------------
#
# A first compile is slow, and max-autotune's slower still. A warm profile shows none of
# it, nor would a later run that reads the cache (these recordings time only first calls
# from an empty cache). Time the first call yourself, one variant per fresh process with
# an empty cache, when a cold start is what you care about. Before you keep a mode,
# compare it with eager (page :doc:`03a </auto_examples/03_mlp/03a_eager_mlp>`) by the
# GPU time per step and by the step time measured :doc:`without the profiler </timing>`:
# a profile's CPU times include the profiler's own cost, and these were still falling
# (the first recorded step was the longest in every repeat). What a compile decides by
# timing (a launch configuration, a GEMM's winner) can differ from one process and cache
# to the next: read it in the trace, not in the code.
#
# Every variant
# -------------
#
# Each variant's harness and settings as written (``run`` shrinks them on the CPU).

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
