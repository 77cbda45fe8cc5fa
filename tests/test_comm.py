"""Communication against computation on one trace: kernel classes, unions, overlap, idle per stream."""

from __future__ import annotations

import pytest
from _builders import call, gpu, make, step

from tracereader._comm import COMM, COMP, MEMORY, comm_times, op_classes, stream_idle

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

# Device 0: a GEMM on stream 7 [0, 100) and a second one [300, 350); an all-reduce on
# stream 20 [50, 200), so 50 us of it runs under the first GEMM; a copy [250, 260).
TWO_STREAMS = [
    step(1, 0, 400),
    call("cudaLaunchKernel", 1, 2, corr=1),
    call("cudaLaunchKernel", 3, 2, corr=2),
    call("cudaMemcpyAsync", 5, 2, corr=3),
    call("cudaLaunchKernel", 7, 2, corr=4),
    gpu("sm90_gemm", 0, 100, corr=1, stream=7),
    gpu(ALLREDUCE, 50, 150, corr=2, stream=20),
    gpu("Memcpy HtoD (Pageable -> Device)", 250, 10, corr=3, stream=7, cat="gpu_memcpy"),
    gpu("sm90_gemm", 300, 50, corr=4, stream=7),
]


def test_classes_by_name_any_case_and_by_category():
    events = [
        gpu(ALLREDUCE, 0, 1, corr=1),
        gpu("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8", 2, 1, corr=2),
        gpu("void RCCL_AllGather_kernel", 4, 1, corr=3),
        gpu("Memset (Device)", 6, 1, corr=4, cat="gpu_memset"),
        gpu("void at::native::vectorized_elementwise_kernel", 8, 1, corr=5),
    ]
    t = make(events)
    rows = t.where()
    assert op_classes(t, rows).tolist() == [COMM, COMM, COMM, MEMORY, COMP]


def test_union_times_and_overlap_on_two_streams():
    ct = comm_times(make(TWO_STREAMS))
    assert (ct.gpu_ops, ct.comm_kernels) == (4, 1)
    assert ct.span_us == 350.0
    assert ct.busy_us == 100 + 100 + 10 + 50  # [0, 200), the copy, the second GEMM
    assert ct.idle_us == 90.0
    assert (ct.comp_us, ct.comm_us, ct.memory_us) == (150.0, 150.0, 10.0)
    assert ct.overlap_us == 50.0
    assert ct.exposed_comm_us == 100.0
    assert ct.overlap_pct == pytest.approx(100 / 3)
    assert ct.to_dict()["overlap_pct"] == ct.overlap_pct


def test_overlap_counts_within_a_device_only():
    # The same all-reduce on device 1 while device 0 computes: no overlap on either.
    events = [
        gpu("sm90_gemm", 0, 100, corr=1, device=0),
        gpu(ALLREDUCE, 0, 100, corr=2, device=1, stream=20),
    ]
    ct = comm_times(make(events))
    assert ct.overlap_us == 0.0
    assert ct.busy_us == 200.0  # summed over devices
    assert ct.span_us == 200.0


def test_no_communication_gives_no_overlap_share():
    ct = comm_times(make([gpu("sm90_gemm", 0, 10, corr=1)]))
    assert ct.comm_us == 0.0 and ct.overlap_pct is None


def test_rows_restrict_what_counts():
    t = make(TWO_STREAMS)
    first_two = t.where(name="sm90_gemm")[:1]
    ct = comm_times(t, first_two)
    assert (ct.gpu_ops, ct.busy_us, ct.comm_us) == (1, 100.0, 0.0)


def test_idle_per_stream_is_the_gaps_between_its_ops():
    rows = stream_idle(make(TWO_STREAMS))
    assert [(r["stream"], r["gpu_ops"], r["comm_kernels"]) for r in rows] == [(7, 3, 0), (20, 1, 1)]
    s7 = rows[0]
    assert (s7["busy_us"], s7["span_us"], s7["idle_us"]) == (160.0, 350.0, 190.0)
    assert s7["idle_pct"] == pytest.approx(100 * 190 / 350)
    assert rows[1]["idle_us"] == 0.0
