"""What the stories of ``01_matmul_add`` share: ``fn`` and its harness, the plumbing.

No story of its own (the gallery neither runs nor lists it): a story imports the names
it needs from here, and both its download from the site and its recordings' code hash
read it as one file, with this module pasted in where the import stands. That is why
the imports below are the whole union of the stories' own, in the stories' order:
pasted in, each rebinds a name exactly where the story bound it, and every recording
stays fresh.
"""

import json
import statistics
import sys
import time
import types
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# ``fn`` is the code under study: a matrix multiply and an add, the computation of an
# ``nn.Linear`` layer. ``fn_addmm`` is the same computation as one ``torch.addmm`` call,
# and ``DTYPES`` names the dtypes a variant may ask for.


def fn(x, w, b):
    return torch.add(torch.matmul(x, w), b)


def fn_addmm(x, w, b):
    return torch.addmm(b, x, w)


DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


# ``profile_matmul_add`` is the profiling harness of every story of this set but the
# peaks (01d) and the CPU time (01g). It builds three random ``size`` x ``size``
# matrices, then runs ``wait + warmup_steps + active`` steps under the profiler with a
# ``schedule``: the profiler skips the first ``wait`` steps, records and throws away the
# next ``warmup_steps`` (the profiler itself warms up), and keeps the last ``active``
# ones. Each kept step becomes a ``ProfilerStep#N`` span in the trace, and
# ``record_function("matmul_add")`` puts our own label around each call. The trace is
# written from ``on_trace_ready``, which the profiler calls when the active window
# closes.
#
# Its other settings: ``batch > 0`` makes ``x`` 3-D (``batch, size, size``);
# ``op="addmm"`` profiles ``torch.addmm(b, x, w)`` instead; ``warmup=True`` runs five
# untimed calls before profiling; ``compile`` names a ``torch.compile`` mode
# (``"triton-gemm"`` is max-autotune limited to Inductor's Triton GEMM templates);
# ``tf32`` lets fp32 GEMMs round their inputs to TF32; ``export="after"`` exports after
# the ``with`` block instead of from ``on_trace_ready``. It returns the profiler's
# table, sorted by GPU time when there is a GPU.


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
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)  # every run multiplies the same numbers
    # TF32 lets float32 GEMMs (and convolutions) round their inputs for the Tensor
    # Cores. Set it either way, so that no earlier run's choice leaks into this one.
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dt = DTYPES[dtype]
    # batch > 0 makes x 3-D; matmul then folds the batch into the rows of one GEMM.
    x_shape = (batch, size, size) if batch else (size, size)
    x = torch.randn(x_shape, device=device, dtype=dt)
    w = torch.randn(size, size, device=device, dtype=dt)
    b = torch.randn(size, size, device=device, dtype=dt)
    f = fn_addmm if op == "addmm" else fn
    # Each compile starts from a clean Dynamo cache, so no earlier run's graph is reused.
    if compile == "triton-gemm" and device == "cuda":
        # max-autotune, but with only Inductor's own Triton GEMM templates to choose from
        torch._dynamo.reset()
        f = torch.compile(f, options={"max_autotune": True, "max_autotune_gemm_backends": "TRITON"})
    elif compile:  # "default" is torch.compile's own default mode (mode=None)
        torch._dynamo.reset()
        mode = {"default": None, "triton-gemm": "max-autotune-no-cudagraphs"}.get(compile, compile)
        f = torch.compile(f, mode=mode)

    # One step: the call under study, inside our own label (a span in the trace).
    def step():
        with record_function("matmul_add"):
            return f(x, w, b)

    # Warm-up: the first calls pay one-time costs (loading GPU code, cuBLAS picking
    # its kernel, compiling). A compiled function is always warmed up, so that the
    # compile itself stays out of the profile.
    if warmup or compile:
        for _ in range(5):
            step()
    if device == "cuda":
        torch.cuda.synchronize()  # and the GPU finishes it before profiling starts

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trace_path = out_dir / "trace.json"
    # CPU activity always; on a GPU, CUDA activity too (kernels, copies, through CUPTI).
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    # The profiler calls on_trace_ready when the active window closes.
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
            prof.step()  # tells the schedule that one step ended
    if export == "after":  # the alternative: export once the with block has ended
        prof.export_chrome_trace(str(trace_path))
    # The table sums each op over the kept steps; with a GPU, sort by GPU time.
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# The plumbing of every story
# ---------------------------

#: A CPU has no GPU lane to show, and a 4096 bf16 GEMM takes seconds there, so on
#: the CPU every size above this one shrinks to it.
CPU_MAX_SIZE = 512


# ``run_variant(variants, name)`` is every story's ``run(name)``: it profiles the named
# variant of the story's ``VARIANTS`` with its harness (with any setting changed by
# ``overrides``, which then name the trace), moves the trace to
# ``traces/01_matmul_add/NAME.json`` (and a ``timings.json`` beside it to
# ``NAME.timings.json``), prints one line saying where it ran, and returns the run's
# name, the profiler's table and the trace's path.
def run_variant(variants, name, **overrides):
    harness, params = variants[name]
    params = dict(params, **overrides)
    name = "_".join([name, *(f"{k}{v}" for k, v in overrides.items())])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        params["size"] = min(params["size"], CPU_MAX_SIZE)
    out = Path("traces") / "01_matmul_add"
    table = harness(out / name, device=device, **params)
    trace_path = (out / name / "trace.json").replace(out / f"{name}.json")
    for extra in (out / name).iterdir():  # timings.json
        extra.replace(out / f"{name}.{extra.name}")
    (out / name).rmdir()
    if device == "cuda":
        where = f"live on {torch.cuda.get_device_name(0)}"
    else:
        where = f"on the CPU at size {params['size']} (no CUDA device), so no GPU lane"
    print(f"{name}: profiled {where}; trace written to {trace_path}")
    return types.SimpleNamespace(name=name, table=table, trace_path=trace_path)


# ``story_run(VARIANTS, __name__)`` is a story's one line of plumbing. It returns the
# story's ``run(name)``, ``run_variant`` on its variants (or the ``run`` it is given), or,
# while the site builds, the replay of the H200's recordings in its stead. Given the
# story's ``__name__``, it gives the story its command line too: ``python STORY.py
# VARIANT`` profiles that variant, prints its table and exits (exit status 0), or says in
# one line that there is no such variant (exit status 2). Inside Jupyter, ``sys.argv``
# holds the kernel's own flags, so a notebook runs the whole page.
def story_run(variants, module_name, run=None):
    if run is None:

        def run(name):
            return run_variant(variants, name)

    # sphinx_gallery_start_ignore
    if "tracesite" in sys.modules:  # the site build replays the H200's recordings instead
        run = sys.modules["tracesite"].replayer(run)
    # sphinx_gallery_end_ignore
    argv = sys.argv[1:] if module_name == "__main__" and "ipykernel" not in sys.modules else []
    if argv and argv[0] not in variants:
        print(f"no variant {argv[0]!r} here; try one of {list(variants)}", file=sys.stderr)
        sys.exit(2)
    if argv:
        print(run(argv[0]).table)
        sys.exit(0)
    return run


# ``optional_tracereader()`` is :mod:`tracereader` where it is installed; elsewhere it
# says in one line where to open the trace instead, and is None, so that a story reads
# and draws its traces only ``if tracereader``.
def optional_tracereader():
    try:
        import tracereader
    except ImportError:  # only torch here: the trace file is still there to open in Perfetto
        print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")
        return None
    return tracereader
