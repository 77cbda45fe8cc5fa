"""Linker: GPU op -> launch call -> issuing op -> stack, on tiny synthetic traces.

The builders (``op``, ``call``, ``gpu``...) live in ``tests/_builders.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _builders import LAUNCH_PATHS, call, gpu, make, op, row, step

from tracereader import Kind, load
from tracereader._events import Lane, Trace
from tracereader._link import link

H200 = Path(__file__).resolve().parent / "data" / "h200"


@pytest.fixture(scope="module")
def paths():
    return make(LAUNCH_PATHS)


def test_gpu_ops_are_kernels_memcpys_memsets(paths):
    ln = link(paths)
    kinds = paths.kind[ln.gpu_ops]
    assert len(ln.gpu_ops) == 17
    assert np.count_nonzero(kinds == Kind.KERNEL) == 13
    assert np.count_nonzero(kinds == Kind.MEMCPY) == 2
    assert np.count_nonzero(kinds == Kind.MEMSET) == 2
    assert ln.linked_gpu_ops == 16
    assert paths.kind[row(paths, "triton_poi_fused_add_0", 0)] == Kind.CPU_OP


@pytest.mark.parametrize(
    ("gpu_name", "api", "issuer"),
    [
        ("void gemm_kernel<float>(float*)", "cudaLaunchKernel", "aten::addmm"),
        ("add_kernel", "cudaLaunchKernelExC", "aten::add"),
        ("mul_kernel", "cuLaunchKernel", "aten::mul"),
        ("div_kernel", "cuLaunchKernelEx", "aten::div"),
        ("coop_kernel", "cudaLaunchCooperativeKernel", "aten::coop"),
        ("Memcpy HtoD (Pageable -> Device)", "cudaMemcpyAsync", "aten::copy_"),
        ("Memset (Device)", "cudaMemsetAsync", "aten::zero_"),
        ("Memcpy DtoH (Device -> Pageable)", "cudaMemcpy", "aten::_local_scalar_dense"),
        ("graph_k1", "cudaGraphLaunch", "CUDAGraph::replay"),
        ("nonzero_kernel", "cudaLaunchKernel", "aten::nonzero"),
        ("sum_kernel", "cudaLaunchKernel", "aten::sum"),
    ],
)
def test_every_launch_api(paths, gpu_name, api, issuer):
    ln = link(paths)
    i = row(paths, gpu_name)
    assert ln.launch_api(i) == api
    assert paths.name(ln.issuing_op(i)) == issuer


def test_triton_cpu_op_launches_its_kernel(paths):
    ln = link(paths)
    k = paths.where(name="triton_poi_fused_add_0", kind=Kind.KERNEL)
    assert len(k) == 1
    assert ln.launch_api(k[0]) == "cuLaunchKernel"
    assert paths.kind[ln.issuing_op(k[0])] == Kind.CPU_OP


def test_graph_launch_one_call_many_ops(paths):
    ln = link(paths)
    g = row(paths, "cudaGraphLaunch")
    ops = ln.gpu_ops_of_call(g)
    assert [paths.name(i) for i in ops] == ["graph_k0", "graph_k1", "graph_k2"]
    assert all(ln.launch[i] == g for i in ops)


def test_issuer_methods(paths):
    ln = link(paths)
    # 14 calls launched GPU ops: 11 issuers by External id, 2 by containment, 1 none.
    assert ln.method == {"external_id": 11, "containment": 2, "none": 1}
    assert ln.issuer[row(paths, "cudaLaunchKernel", 3)] == -1
    assert ln.issuer_method[row(paths, "cudaLaunchKernel", 1)] == 2  # no External id
    assert ln.issuer_method[row(paths, "cudaLaunchKernel", 2)] == 2  # wrong thread


def test_unlinked_kernel(paths):
    ln = link(paths)
    i = row(paths, "orphan_kernel")
    assert ln.launch[i] == -1 and ln.launch_api(i) == "" and ln.issuing_op(i) == -1
    assert ln.step_of(i) is None


def test_parent_and_stack(paths):
    ln = link(paths)
    names = [paths.name(i) for i in ln.stack(row(paths, "void gemm_kernel<float>(float*)"))]
    assert names == [
        "ProfilerStep#1",
        "nn.Module: Linear_0",
        "aten::linear",
        "aten::addmm",
        "cudaLaunchKernel",
    ]
    assert paths.name(ln.parent[row(paths, "aten::t")]) == "aten::linear"
    assert ln.parent[row(paths, "ProfilerStep#1")] == -1
    assert ln.parent[row(paths, "aten::other_thread")] == -1
    assert ln.parent[row(paths, "add_kernel")] == -1  # GPU events have no CPU parent


def test_step_by_launch_time(paths):
    ln = link(paths)
    assert ln.step_of(row(paths, "sum_kernel")).name == "ProfilerStep#1"
    assert ln.step_of(row(paths, "lonely_kernel")) is None


def test_gpu_ops_of_recurses(paths):
    ln = link(paths)
    inside = [paths.name(i) for i in ln.gpu_ops_of(row(paths, "aten::linear"))]
    assert inside == ["void gemm_kernel<float>(float*)"]
    assert len(ln.gpu_ops_of(row(paths, "ProfilerStep#1"))) == 15
    assert len(ln.gpu_ops_of(row(paths, "aten::t"))) == 0
    assert ln.gpu_ops_inside[row(paths, "nn.Module: Linear_0")] == 1
    assert ln.gpu_ops_inside[row(paths, "ProfilerStep#1")] == 15


def test_link_is_cached(paths):
    assert link(paths) is link(paths)


def test_kernel_spills_into_next_step():
    t = make(
        [
            step(1, 0, 100),
            step(2, 100, 100),
            op("aten::mm", 80, 15, ext=1),
            call("cudaLaunchKernel", 85, 5, corr=1, ext=1),
            gpu("mm_kernel", 150, 30, 1),  # runs during step 2, launched in step 1
        ]
    )
    assert link(t).step_of(row(t, "mm_kernel")).name == "ProfilerStep#1"


def test_old_trace_external_id_equals_correlation():
    """torch 1.x: the call's External id is its own correlation and names no op."""
    t = make(
        [
            op("aten::mm", 0, 50, ext=7),
            call("cudaLaunchKernel", 10, 5, corr=3, ext=3),
            gpu("mm_kernel", 20, 10, 3),
        ]
    )
    ln = link(t)
    assert ln.method == {"external_id": 0, "containment": 1, "none": 0}
    assert t.name(ln.issuing_op(row(t, "mm_kernel"))) == "aten::mm"


def _reference_parents(trace):
    """Plain per-lane stack, the obvious O(n) loop."""
    out = np.full(len(trace), -1)
    stacks = {}
    for i in range(len(trace)):
        if trace.lanes[trace.lane[i]].is_gpu:
            continue
        st = stacks.setdefault(int(trace.lane[i]), [])
        end = trace.ts_ns[i] + trace.dur_ns[i]
        while st and trace.ts_ns[st[-1]] + trace.dur_ns[st[-1]] + 1 < end:
            st.pop()
        out[i] = st[-1] if st else -1
        st.append(i)
    return out


def test_parents_match_a_stack_on_random_nesting():
    rng = np.random.default_rng(0)
    ts, dur, lane = [], [], []
    for ln in range(3):
        t = 0
        for _ in range(3000):  # random forest: nested children inside random spans
            d = int(rng.integers(1, 200))
            ts.append(t)
            dur.append(d)
            lane.append(ln)
            for _ in range(int(rng.integers(0, 4))):
                s = t + int(rng.integers(0, d))
                ts.append(s)
                dur.append(int(rng.integers(0, d - (s - t) + 2)))  # sometimes overhangs
                lane.append(ln)
            t += d + int(rng.integers(0, 3))
    ts, dur, lane = np.array(ts), np.array(dur), np.array(lane, dtype=np.int32)
    order = np.lexsort((-dur, ts))
    n = len(ts)
    trace = Trace(
        ts_ns=ts[order],
        dur_ns=dur[order],
        kind=np.full(n, int(Kind.CPU_OP), np.int8),
        name_id=np.zeros(n, np.int32),
        cat_id=np.zeros(n, np.int32),
        lane=lane[order],
        correlation=np.full(n, -1),
        external_id=np.full(n, -1),
        names=["op"],
        cats=["cpu_op"],
        lanes=[Lane(i, 1, i, False, "") for i in range(3)],
    )
    assert np.array_equal(link(trace).parent, _reference_parents(trace))


def test_parents_and_issuers_wait_until_read():
    """Linking a torch 2 trace, where every launch names its op by External id, needs
    neither parents nor every call's issuer; both are worked out when first read."""
    trace = load(H200 / "train_eager.json.gz")
    ln = link(trace)
    assert ln.method["containment"] == ln.method["none"] == 0
    assert not {"parents", "issuers", "gpu_ops_inside"} & trace._cache.keys()
    issuer = ln.issuer
    assert ln.issuer is issuer and "issuers" in trace._cache
    calls = ln.launch[ln.gpu_ops]
    assert (issuer[calls] >= 0).all() and (ln.issuer_method[calls] == 1).all()
    step = trace.steps[0].event
    assert ln.gpu_ops_inside[step] == len(ln.gpu_ops_of(step)) > 0  # its thread's launches
    assert "parents" in trace._cache
