"""Builders of small synthetic traces, shared by the test modules.

``ev``, ``op``, ``py``, ``step``, ``call`` and ``gpu`` make one Chrome-trace
event each (times in µs), ``launched`` an op with its launch call and GPU op; ``doc``
wraps events in a trace document and ``make`` loads it. ``LAUNCH_PATHS``, ``GAPS`` and
``NESTED`` are event lists for the linker, the gap causes and the op tables; ``make_doc``
builds a small eager trace for the drawing and rendering tests. ``H200_TRACES`` and
``RECORDINGS`` are the real traces the tests read. A plain module: ``tests/conftest.py``
puts this folder on ``sys.path``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tracereader import load
from tracereader._events import Trace

ROOT = Path(__file__).resolve().parents[1]
#: The committed H200 traces, named: a missing one fails ("no such file"), never skips.
H200_TRACES = [
    ROOT / "tests" / "data" / "h200" / f"{name}.json.gz"
    for name in ("compile", "cudagraphs", "sdpa", "train_eager", "train_stack")
]
#: The site's recordings (first repeat of each variant, on the H200 the pages read);
#: test_load checks there are some.
RECORDINGS = sorted((ROOT / "docs" / "recordings" / "h200").glob("*/*/r0/trace.json.gz"))
REAL = H200_TRACES + RECORDINGS

PID = 4242


def ev(name, ts, dur, cat, pid=PID, tid=1, **args):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def op(name, ts, dur, ext=None, tid=1, cat="cpu_op", **args):
    if ext is not None:
        args["External id"] = ext
    return ev(name, ts, dur, cat, tid=tid, **args)


def py(name, ts, dur, tid=1):
    return ev(name, ts, dur, "python_function", tid=tid)


def step(n, ts, dur, tid=1):
    return ev(f"ProfilerStep#{n}", ts, dur, "user_annotation", tid=tid)


def call(name, ts, dur, corr=None, ext=None, tid=1):
    driver = name.startswith("cu") and not name.startswith("cuda")
    args = {"cbid": 1}
    if corr is not None:
        args["correlation"] = corr
    if ext is not None:
        args["External id"] = ext
    return ev(name, ts, dur, "cuda_driver" if driver else "cuda_runtime", tid=tid, **args)


def gpu(name, ts, dur, corr, stream=7, device=0, cat="kernel", ext=None):
    args = {"device": device, "stream": stream, "correlation": corr}
    if ext is not None:
        args["External id"] = ext
    return ev(name, ts, dur, cat, pid=device, tid=stream, **args)


def doc(events):
    return {"schemaVersion": 1, "traceEvents": events, "displayTimeUnit": "ms"}


def make(events) -> Trace:
    return load(json.dumps(doc(events)).encode())


def row(trace, name, nth=0):
    """Row of the nth event called ``name``."""
    return int(trace.where(name=name)[nth])


def launched(name, ts, api, kernel, corr, ext, cat="kernel", at=25, dur=5, **op_args):
    """An op of 40 µs at ``ts`` (External id ``ext``), its launch call ``api`` 10 µs into it
    (10 µs, correlation ``corr``) and the GPU op it launched, ``at`` µs after the op's start
    (``dur`` µs, category ``cat``): three events, as :data:`LAUNCH_PATHS` lays them out."""
    return [
        op(name, ts, 40, ext=ext, **op_args),
        call(api, ts + 10, 10, corr=corr, ext=ext),
        gpu(kernel, ts + at, dur, corr, cat=cat),
    ]


HTOD, DTOH = "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)"
MEMSET, TRITON = "Memset (Device)", "triton_poi_fused_add_0"

# A trace exercising every launch path. Times are µs.
LAUNCH_PATHS = [
    step(1, 0, 2000),
    py("nn.Module: Linear_0", 5, 120),
    op("aten::linear", 10, 100, ext=1),
    op("aten::t", 12, 5, ext=2),
    op("aten::addmm", 20, 80, ext=3),
    call("cudaLaunchKernel", 30, 10, corr=101, ext=3),
    gpu("void gemm_kernel<float>(float*)", 50, 20, 101),
    *launched("aten::add", 110, "cudaLaunchKernelExC", "add_kernel", 102, ext=4),
    *launched("aten::mul", 160, "cuLaunchKernel", "mul_kernel", 103, ext=5),
    *launched("aten::div", 210, "cuLaunchKernelEx", "div_kernel", 104, ext=6),
    *launched("aten::coop", 260, "cudaLaunchCooperativeKernel", "coop_kernel", 105, ext=7),
    *launched("aten::copy_", 310, "cudaMemcpyAsync", HTOD, 106, ext=8, cat="gpu_memcpy"),
    *launched("aten::zero_", 360, "cudaMemsetAsync", MEMSET, 107, ext=9, cat="gpu_memset"),
    *launched("aten::_local_scalar_dense", 410, "cudaMemcpy", DTOH, 108, 10, "gpu_memcpy", 15, 2),
    *launched("aten::fill_", 460, "cudaMemset", MEMSET, 109, ext=11, cat="gpu_memset", dur=2),
    # Inductor: a Triton launch is a cpu_op with args.stream = 0 (a CPU event).
    *launched(
        TRITON, 510, "cuLaunchKernel", TRITON, 110, ext=12, kernel_backend="triton", stream=0
    ),
    # CUDA graph: one call, three kernels sharing its correlation.
    op("CUDAGraph::replay", 560, 100, ext=13),
    call("cudaGraphLaunch", 570, 20, corr=111, ext=13),
    gpu("graph_k0", 630, 5, 111),
    gpu("graph_k1", 636, 5, 111),
    gpu("graph_k2", 642, 5, 111, stream=20),
    # No External id on the call: containment finds aten::nonzero.
    op("aten::nonzero", 700, 40, ext=14),
    call("cudaLaunchKernel", 710, 10, corr=112),
    gpu("nonzero_kernel", 725, 5, 112),
    # External id names an op on another thread: rejected, containment wins.
    op("aten::sum", 760, 40, ext=15),
    op("aten::other_thread", 750, 100, ext=16, tid=2),
    call("cudaLaunchKernel", 770, 10, corr=113, ext=16),
    gpu("sum_kernel", 785, 5, 113),
    # A launch with no op around it at all.
    call("cudaLaunchKernel", 2100, 10, corr=114),
    gpu("lonely_kernel", 2115, 5, 114),
    # A kernel whose launch call was not recorded.
    gpu("orphan_kernel", 2200, 5, 999),
    # Not GPU work: sync span and GPU-side annotation.
    ev("gpu_user_annotation_x", 50, 500, "gpu_user_annotation", pid=0, tid=7),
    ev("Stream Sync", 600, 10, "cuda_sync", pid=0, tid=7, correlation=555),
]


# Idle gaps with one cause each (the gap tests).
GAPS = [
    step(1, 0, 1000),
    # gap 1 [110, 130): the thread sat in cudaStreamSynchronize (.item())
    op("aten::mm", 0, 20, ext=1),
    call("cudaLaunchKernel", 5, 5, corr=1, ext=1),
    gpu("k1", 90, 20, 1),
    op("aten::_local_scalar_dense", 45, 70, ext=2),
    call("cudaStreamSynchronize", 50, 62),
    op("aten::add", 118, 10, ext=3),
    call("cudaLaunchKernel", 120, 5, corr=2, ext=3),
    gpu("k2", 130, 5, 2),
    # gap 2 [135, 195): mostly aten::empty, an op that launches nothing
    op("aten::empty", 136, 40, ext=4),
    op("aten::add", 180, 20, ext=5),
    call("cudaLaunchKernel", 185, 5, corr=3, ext=5),
    gpu("k3", 195, 5, 3),
    # gap 3 [200, 300): a Python frame
    py("model.py(12): forward", 205, 90),
    call("cudaLaunchKernel", 296, 2, corr=4),
    gpu("k4", 300, 5, 4),
    # gap 4 [305, 340): the launch call itself is slow
    call("cuLaunchKernel", 306, 30, corr=5),
    gpu("k5", 340, 5, 5),
    # gap 5 [345, 500): no event on the thread, only the step around it
    call("cudaLaunchKernel", 495, 2, corr=6),
    gpu("k6", 500, 5, 6),
    # 0.5 us: below min_gap_us
    call("cudaLaunchKernel", 497, 2, corr=7),
    gpu("k7", 505.5, 5, 7),
]


# Nested ops, annotations and a Python frame (the op table tests).
NESTED = [
    op("fwd", 0, 200, ext=1, cat="user_annotation"),
    op("aten::linear", 10, 100, ext=2),
    op("aten::t", 12, 8, ext=3),
    op("aten::addmm", 30, 70, ext=4),
    call("cudaLaunchKernel", 40, 10, corr=1, ext=4),
    gpu("gemm", 60, 50, 1),
    py("model.py(3): forward", 120, 60),
    op("aten::relu", 130, 40, ext=5),
    call("cudaLaunchKernel", 140, 10, corr=2, ext=5),
    gpu("relu_kernel", 160, 7, 2),
    op("aten::relu", 300, 20, ext=6),
    call("cudaLaunchKernel", 305, 5, corr=3, ext=6),
    gpu("relu_kernel", 320, 9, 3),
]


# A small eager trace (drawing and rendering tests).
MM_KERNEL = (
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>"
    "(cutlass_80_simt_sgemm_64x64_8x5_tn_align1::Params)"
)
ADD_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)


def x_event(name, cat, ts, dur, pid=1, tid=1, **args):
    """Like :func:`ev`, with the category second and the CPU process 1."""
    return ev(name, ts, dur, cat, pid=pid, tid=tid, **args)


def make_doc(steps: int = 2) -> dict:
    """A small eager trace: per step, matmul + add on the main thread (two
    launches, the second through the driver), a sync, an op on a second
    thread, a Python frame; two kernels with a 50 µs GPU gap between them."""

    def kernel(name, ts, dur, corr, ext):  # on device 0's stream 7
        return x_event(name, "kernel", ts, dur, pid=0, tid=7, correlation=corr, stream=7,
                       device=0, **{"External id": ext})  # fmt: skip

    ev = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "pt_autograd_0"}},
    ]
    for k in range(steps):
        t, c = 1000.0 * k, 10 * k
        ev += [
            x_event(f"ProfilerStep#{k + 1}", "user_annotation", t, 400, **{"External id": c + 1}),
            x_event("model.py(3): forward", "python_function", t + 5, 300, **{"Python id": c + 1}),
            x_event("block", "user_annotation", t + 10, 250, **{"External id": c + 2}),
            x_event("aten::matmul", "cpu_op", t + 20, 60, **{"External id": c + 3}),
            x_event("aten::mm", "cpu_op", t + 25, 50, **{"External id": c + 4}),
            x_event(
                "cudaLaunchKernel",
                "cuda_runtime",
                t + 40,
                10,
                **{"External id": c + 4, "correlation": c + 100},
            ),
            x_event("aten::add", "cpu_op", t + 150, 40, **{"External id": c + 5}),
            x_event(
                "cuLaunchKernel",
                "cuda_driver",
                t + 160,
                10,
                **{"External id": c + 5, "correlation": c + 101},
            ),
            x_event("cudaGetDevice", "cuda_runtime", t + 185, 1, **{"External id": c + 5}),
            x_event("cudaDeviceSynchronize", "cuda_runtime", t + 200, 50, correlation=c + 102),
            x_event("aten::mul", "cpu_op", t + 30, 20, tid=2, **{"External id": c + 6}),
            kernel(MM_KERNEL, t + 60, 100, corr=c + 100, ext=c + 4),
            kernel(ADD_KERNEL, t + 210, 5, corr=c + 101, ext=c + 5),
            x_event(
                "block", "gpu_user_annotation", t + 60, 155, pid=0, tid=7, **{"External id": c + 2}
            ),
        ]
    return {"schemaVersion": 1, "traceEvents": ev}
