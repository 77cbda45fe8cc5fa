"""
The MLP's first forward in a fresh process
==========================================

Profilers are usually told to skip the first steps, and this page shows what
they skip. It profiles the eager GeGLU MLP (three Linears without bias and a
gelu-times-multiply, bf16) with no warm-up at all, so that the process's very
first forward is the first step of the trace:

===============  ==============================  ======================================
variant          batch x seq, dim -> hidden      what it shows
===============  ==============================  ======================================
``eager_cold``   64 x 128 tokens, 768 -> 3072    the first forward, then two warm ones
===============  ==============================  ======================================

The question it answers comes from the Hugging Face series, which saw a
``cudaOccupancy...`` query (the CUDA runtime's "how many blocks of this kernel
fit on an SM?") before every GEMM launch on its A100 and read it as the mark,
and a cost, of every GEMM. The warm forwards of this set's other stories make
none. Who asks, and when? Part 2 (:doc:`/chapters/part2`) reads these
recordings. The recorder ran each repeat of this variant in a process of its
own, so that its first forward really was the process's first.

This file needs only torch. On a machine with a CUDA GPU it profiles live; on
the CPU it profiles a shrunken MLP there, without a GPU lane (and without any
CUDA runtime calls to find). Run it in a fresh process::

    python 03b_cold_first_forward.py

It writes its trace to ``traces/03_mlp/eager_cold/trace.json``.
"""

# sphinx_gallery_start_ignore
import warnings

warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
# sphinx_gallery_end_ignore
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

# %%
# The MLP
# -------
#
# ``GeGLUMLP`` is the MLP block of many transformers: ``gate_proj`` and
# ``up_proj`` widen each token from ``dim`` to ``hidden`` features, ``gelu(gate,
# approximate="tanh") * up`` gates one with the other (GeGLU), and ``down_proj``
# maps back to ``dim``. No biases. Written in PyTorch, a forward is three
# GEMMs, a gelu and a multiply.


class GeGLUMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


# ``LigerGeGLUMLP`` is the same MLP with the gelu-and-multiply done by one
# hand-written Triton kernel from Liger-Kernel (imported only when it is used).
# ``profile_mlp`` can pick it, so it is here; this page does not use it.


class LigerGeGLUMLP(GeGLUMLP):
    def forward(self, x):
        from liger_kernel.ops.geglu import LigerGELUMulFunction

        return self.down_proj(LigerGELUMulFunction.apply(self.gate_proj(x), self.up_proj(x)))


# %%
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
#   Dynamo so that no earlier compile is reused;
# * ``kernel="liger"``: use ``LigerGeGLUMLP`` (a CUDA GPU and
#   ``pip install liger-kernel`` needed; on the CPU it says so and profiles the
#   torch MLP);
# * ``cold=True``: no warm-up at all, so that the process's very first forward
#   is the first step in the trace.
#
# Otherwise five forwards run before the profiler starts: compiling,
# autotuning and recording CUDA graphs all happen there, and the profiled
# steps show the steady state.


def profile_mlp(
    out_dir,
    *,
    batch=64,
    seq=128,
    dim=768,
    hidden=3072,
    compile=None,
    kernel="torch",
    active=3,
    cold=False,
    device=None,
):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    cls = GeGLUMLP
    if kernel == "liger":
        if device != "cuda":
            print("liger's Triton kernels need a CUDA GPU: profiling the torch MLP instead")
        else:
            try:
                import liger_kernel  # noqa: F401
            except ImportError:
                raise SystemExit(
                    "the liger variants need Liger-Kernel: pip install liger-kernel"
                ) from None
            cls = LigerGeGLUMLP
    torch.manual_seed(0)
    mlp = cls(dim, hidden).to(device=device, dtype=torch.bfloat16)
    x = torch.randn(batch, seq, dim, device=device, dtype=torch.bfloat16)
    f = mlp
    if compile:
        torch._dynamo.reset()
        f = torch.compile(mlp, mode=None if compile == "default" else compile)

    def step():
        with torch.no_grad(), record_function("mlp_fwd"):
            return f(x)

    if not cold:
        for _ in range(5):  # warm up: compile, autotune, record CUDA graphs
            step()
    return _profile_steps(step, out_dir, active=active, skip=0 if cold else 2, device=device)


# ``_profile_steps`` runs ``skip`` steps that the profiler's schedule does not
# keep (its wait and warm-up steps), then ``active`` steps that it records, with
# input shapes, so that each op in the trace carries its shapes. It writes
# ``trace.json`` into ``out_dir`` and returns the table, sorted by GPU time
# when there is a GPU.


def _profile_steps(step, out_dir, *, active, skip, device):
    if device == "cuda":
        torch.cuda.synchronize()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities,
        schedule=schedule(wait=skip // 2, warmup=skip - skip // 2, active=active, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(out_dir / "trace.json")),
        record_shapes=True,
    ) as prof:
        for _ in range(skip + active):
            step()
            prof.step()  # one forward is one profiler step
    sort_by = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=15, max_name_column_width=48)


# %%
# The variant
# -----------
#
# One variant: the small shape, ``cold=True``. ``profile_mlp`` then skips its
# five warm-up forwards, and ``_profile_steps`` gets ``skip=0``, so the
# schedule records from the very first step.

SMALL = {"batch": 64, "seq": 128, "dim": 768, "hidden": 3072}
BIG = {"batch": 8, "seq": 512, "dim": 4096, "hidden": 11008}
VARIANTS = {
    "eager_cold": (profile_mlp, {**SMALL, "cold": True}),
}

# %%
# ``run(name)`` profiles one variant into ``traces/03_mlp/<name>/`` and says
# where it ran. On the CPU, every size above ``CPU_MAX_DIM`` shrinks to it.

CPU_MAX_DIM = 256


def run(name):
    harness, params = VARIANTS[name]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":  # no CUDA device: the trace will have no GPU lane
        params = {k: min(v, CPU_MAX_DIM) if type(v) is int else v for k, v in params.items()}
    out_dir = Path("traces") / "03_mlp" / name
    table = harness(out_dir, device=device, **params)
    where = "live on the GPU" if device == "cuda" else "on the CPU, so there is no GPU lane"
    print(f"{name}: profiled {where}; trace written to {out_dir / 'trace.json'}")
    return types.SimpleNamespace(name=name, table=table, trace_path=out_dir / "trace.json")


# sphinx_gallery_start_ignore
if "tracesite" in sys.modules:  # the site build replays the H200's recordings instead
    run = sys.modules["tracesite"].replayer(run)
# sphinx_gallery_end_ignore

# ``python 03b_cold_first_forward.py VARIANT`` profiles that variant and stops (inside Jupyter,
# ``sys.argv`` holds the kernel's own flags, so a notebook runs the page).
if __name__ == "__main__" and sys.argv[1:] and "ipykernel" not in sys.modules:
    if sys.argv[1] not in VARIANTS:
        sys.exit(print("unknown variant; choose one of:", *VARIANTS, file=sys.stderr) or 2)
    sys.exit(print(run(sys.argv[1]).table))

# %%
# The table
# ---------
#
# Three forwards, the first of them cold. Compare each op's total time with its
# call count: one slow call among fast ones shows up as a large average. (torch
# warns that the profiler "won't be using warmup" and that this can skew the
# results: here, skewing them is the point.)

first = run("eager_cold")
print(first.table)

# %%
# Who asked for occupancy?
# ------------------------
#
# With ``tracereader``: ``link`` connects each runtime call to the op it ran
# under, its ``issuer``; ``where(contains=...)`` finds the events whose name
# contains a string; ``Counter`` counts the pairs. Then the first step on the
# timeline (otherwise open the trace at https://ui.perfetto.dev).

try:
    import tracereader
except ImportError:  # only torch here: the trace file is still there to open in Perfetto
    tracereader = None
    print("tracereader is not installed: open the trace at https://ui.perfetto.dev instead")

if tracereader:
    from collections import Counter

    import matplotlib.pyplot as plt  # a pyplot figure, so that notebooks and the site show it

    tr = tracereader.load(first.trace_path)
    links = tracereader.link(tr)
    queries = tr.where(contains="Occupancy")
    print(Counter(f"{tr.name(i)} under {tr.name(links.issuer[i])}" for i in queries))
    tracereader.timeline(tr, step=tr.steps[0].name, width_in=9, fig=plt.figure())

# %%
# What the H200 showed
# --------------------
#
# Every occupancy query came from the process's first GEMM, the gate
# projection's ``aten::mm``. The later GEMMs, the gelu and the multiply asked
# nothing, and no later forward asked again. Together the queries took a
# sliver of that first call's time (:doc:`/chapters/part2` gives both).
#
# The first forward as a whole was slow, and the trace mostly does not say
# why. The gelu's and the multiply's first calls each hold a ``cudaMalloc`` and
# a ``Lazy Function Loading`` record (the CUDA driver loading the kernel's code
# on first use), but most of their time, like most of the first GEMM's, has no
# recorded event under it. That is start-up work the profiler does not see.
# The :doc:`lab notes of Part 2 </chapters/part2-notes>` set the first
# forward's time beside a later one's.
#
# To see that yourself in the timeline above, look under each op of the first
# step for time that no child event covers: a wide ``aten::mm`` bar over a few
# thin runtime calls is a call that spent most of its time on work the profiler
# does not record (start-up work of the libraries below it). In the second and
# third steps the same bars shrink to little more than their launch calls.
#
# So: the cost of a first call is not the occupancy queries. Skip the first
# steps when you profile the steady state (``schedule(wait=1, warmup=1, ...)``,
# as the other stories of this set do), and profile a cold start on purpose,
# in a fresh process, when start-up is what you care about. Other operators can
# ask for occupancy too: in Part 4's decoding trace the query comes from
# ``aten::cumsum``.
#
# Every variant
# -------------

for name, (harness, params) in VARIANTS.items():
    print(f"{name:>16}  {harness.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})")

# sphinx_gallery_start_ignore
sys.modules["tracesite"].all_recordings_html() if "tracesite" in sys.modules else None
# sphinx_gallery_end_ignore
