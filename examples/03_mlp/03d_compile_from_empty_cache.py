"""
What a first compile costs, from an empty cache
===============================================

``torch.compile`` is paid for at the first call. Inductor keeps what it compiles in a
cache on disk (``TORCHINDUCTOR_CACHE_DIR``; Triton's compiled kernels and max-autotune's
timing results included), so the second run of a script compiles much faster than the
first, and a warm profile never shows the first one. This page points that cache at an
empty folder, as on a fresh machine, times the first call of the compiled GeGLU MLP
(three Linears without bias, bf16), then profiles warm forwards as usual:

=================  ==============================  ===============================
variant            batch x seq, dim -> hidden      compile mode
=================  ==============================  ===============================
``compile_cold``   64 x 128 tokens, 768 -> 3072    ``"default"``
``autotune_cold``  64 x 128 tokens, 768 -> 3072    ``"max-autotune-no-cudagraphs"``
=================  ==============================  ===============================

The first call includes Dynamo's tracing, Inductor's code generation, Triton's
compiler and, under max-autotune, the benchmarking of every GEMM candidate.
:doc:`Part 2 </chapters/part2>` and its lab notes read these recordings; the
warm compiles of the same MLP are story ``03c`` of this set.

This file needs only torch, and ``_03_common.py`` beside it for the MLP and
plumbing the stories of this set share (the site's download has it pasted in).
On a machine with a CUDA GPU it profiles live; on the CPU it compiles and
profiles a shrunken MLP there, without a GPU lane. Run it in a fresh process::

    python 03d_compile_from_empty_cache.py

Each run writes ``trace.json`` and ``timings.json`` to ``traces/03_mlp/<variant>/``.
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

# From the code the stories of this set share (``_03_common.py``, beside this file;
# story 03a shows it): the MLP ``GeGLUMLP``, ``_profile_steps`` (profiles ``active``
# steps after ``skip`` unkept ones, with input shapes, and writes ``trace.json``), the
# small shape, and the plumbing of every story.
from _03_common import SMALL, GeGLUMLP, _profile_steps, story_run

# %%
# The MLP
# -------
#
# ``GeGLUMLP`` is the MLP block of many transformers: ``gate_proj`` and
# ``up_proj`` widen each token from ``dim`` to ``hidden`` features, ``gelu(gate,
# approximate="tanh") * up`` gates one with the other (GeGLU), and ``down_proj``
# maps back to ``dim``. No biases. Compiled, Inductor fuses the gelu and the
# multiply into one Triton kernel and leaves the three GEMMs to cuBLAS, or,
# under max-autotune, to whichever candidate wins its race.

# %%
# Reading max-autotune's report
# -----------------------------
#
# Under max-autotune Inductor prints an ``AUTOTUNE`` report to stderr, one
# block per GEMM shape: a header naming the op and its input sizes, then the
# fastest candidates with their times (cuBLAS appears as ``mm``, Inductor's
# Triton templates as ``triton_mm_N`` with their tile settings), then how long
# benchmarking and precompiling took. ``parse_autotune_report`` turns that text
# into one dict per block: op, sizes, choices (name, ms, description; the
# fastest first, as many as it prints), seconds spent benchmarking and
# precompiling, how many choices were timed, the ``Autotune Choices Stats``
# line printed before it (if any), and the candidates that failed to compile
# before it, one line each.

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
# ``profile_compile_cold`` compiles the MLP with an empty Inductor cache, times
# the first call and keeps the autotuning report, all written to
# ``timings.json``; then it profiles warm forwards into ``trace.json``. The
# ``finally`` block removes the temporary cache and puts the environment back
# as it was, so that the rest of the process compiles as usual.


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


# ``_time_first_call`` runs ``call`` once with stderr (file descriptor 2, so
# that what C code and subprocesses print is caught too) going to a file. It
# returns what was printed there, echoed afterwards so that you still see it,
# and the call's wall time in seconds, the GPU's work included.


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
# The table at the top of the page. The recorder ran each repeat of these
# variants in a process of its own, so that nothing compiled earlier in the
# process could help (this page runs both in one: the second may profit).

VARIANTS = {
    "compile_cold": (profile_compile_cold, {**SMALL, "mode": "default"}),
    "autotune_cold": (profile_compile_cold, {**SMALL, "mode": "max-autotune-no-cudagraphs"}),
}

# %%
# ``run(name)`` profiles one variant into ``traces/03_mlp/<name>/`` and says
# where it ran. On the CPU, every size above ``CPU_MAX_DIM`` shrinks to it.

run = story_run(VARIANTS)

# %%
# The default mode, from nothing
# ------------------------------
#
# First the profile of the warm forwards that follow the first call. Look for
# the fused gelu-and-multiply kernel between the GEMMs. (The first call's
# cost comes further down, once both variants have run.)
compile_cold = run("compile_cold")
print(compile_cold.table)

# %%
# Here is a twist that Part 2 follows up. In every ``compile_cold`` repeat on
# the H200 that fused kernel ran 256-thread blocks and took clearly longer
# than the 128-thread blocks that the warm ``compile`` variant of story
# ``03c`` ran, in every repeat. Inductor times both of its launch
# configurations at the first call and keeps the one its own timing found
# faster; these recordings do not show why it kept the slower one here (the
# warm repeats shared one cache, so they may have read one stored choice back,
# and on the H100 both variants kept 256-thread blocks and ran alike). Compare the two kernels' grid
# and block in the traces (in Perfetto, click the kernel): the same name and
# the same work, but twice the blocks, twice the threads per block, a quarter
# of the elements per thread, and a slower kernel. Nothing in the Python code
# says which one you will get.
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
# Each percentage is the fastest candidate's time over this one's. The
# ``BLOCK_*`` settings are the output tile one Triton program computes and the
# slice of the inner dimension it loads per step; ``num_stages`` is how many
# loads are in flight, ``num_warps`` the threads per program over 32. The
# fastest candidate of each block is what the compiled forward then runs.
autotune_cold = run("autotune_cold")
print(autotune_cold.table)

# %%
# What the first calls cost
# -------------------------
#
# The harness wrote the numbers next to each trace: the first call's and the
# second call's wall time, and for each race of the autotuning report, its
# sizes and its three fastest candidates (none for the default mode, which
# races nothing). On the CPU the times are the CPU's own compile: Inductor
# writes and builds C++ code there instead of Triton kernels.
for result in (compile_cold, autotune_cold):
    timings = json.loads((result.trace_path.parent / "timings.json").read_text())
    print(f"{result.name}: {timings['first_call_s']} s, then {timings['second_call_s']} s")
    for race in timings["autotune"]:
        best = ", ".join(f"{c['name']} {c['ms']} ms" for c in race["choices"][:3])
        print(f"  {race['op']}({race['sizes']}): {best}")

# %%
# On the H200 max-autotune's first call took far longer than the default
# mode's, which compiles too but races nothing; the second call of either ran
# the finished code alone. The :doc:`lab notes of Part 2 </chapters/part2-notes>`
# give the first calls' times; ``timings.json`` holds both calls' for your run.
#
# The report held races on the MLP's two GEMM shapes (gate and up share one,
# down has the other), each with cuBLAS (``mm``) among the candidates beside
# Inductor's Triton templates. One Triton configuration asked for more shared
# memory than a block may use on the H200 (227 KiB, Hopper's hardware limit)
# and failed to compile ("out of resource"). The lab notes count the races
# and their candidates, give what racing and precompiling cost per compile,
# and list every race of every repeat: cuBLAS's time, the best Triton
# template's, and the winner. Who won is a measurement, one per race and
# repeat, so read it there. In every repeat the forwards then ran the races'
# winners, which is what to check in your own trace: ``triton_tem`` kernels
# among the GEMMs where a template won, ``nvjet`` where cuBLAS did, for each
# GEMM shape.
#
# What to take away
# -----------------
#
# A first compile is slow, and max-autotune's far slower. A warm
# profile shows none of it, and neither does a second run of the same script
# on the same machine, which reads the cache (these recordings time only
# first calls from an empty cache, not from a warm one). Time the
# first call yourself, in a fresh process with an empty cache, when the cost of
# a cold start is what you care about. And what a compile decides by timing
# (a launch configuration, a GEMM's winner) can come out differently from one
# process and cache to the next: read it in the trace, not in the code.
#
# Every variant
# -------------

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")
