"""docs/chapters/part3_measures.py against the real 04_attention recordings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "chapters"))

import part3_measures as m  # noqa: E402
from tracesite.recordings import load  # noqa: E402


def rep(variant: str, k: int = 0):
    return load("04_attention", variant).repeats[k]


def has(variant: str) -> bool:
    try:
        return bool(load("04_attention", variant).repeats)
    except Exception:
        return False


def test_last_step_ops_of_the_naive_forward():
    ops = m.last_step_ops(rep("naive").trace())
    assert [o.issuer for o in ops][:2] == ["aten::bmm", "aten::bmm"]  # memset, then the GEMM
    assert ops == sorted(ops, key=lambda o: rep("naive").trace().ts_ns[o.row])
    assert m.gpu_us(rep("naive").trace()) == pytest.approx(sum(o.us for o in ops))
    assert sum(m.by_issuer(ops).values()) == pytest.approx(sum(o.us for o in ops))


def test_gpu_window_covers_the_forward():
    tr = rep("naive").trace()
    ops = m.last_step_ops(tr)
    start, end = m.gpu_window(tr, ops, pad_us=5)
    assert start == tr.ts_ns[ops[0].row] - 5000 and end == tr.end_ns[ops[-1].row] + 5000


def test_math_account_adds_up_and_names_every_part():
    tr = rep("sdpa_math").trace()
    acc = m.math_account(tr)
    assert list(acc) == [name for name, _ in m.MATH_PARTS]
    assert sum(acc.values()) == pytest.approx(m.gpu_us(tr))
    assert all(v > 0 for v in acc.values())
    assert m.op_chain(tr, m.last_step_ops(tr)[0].row)[:3] == [
        "aten::copy_",
        "aten::_to_copy",
        "aten::to",
    ]


def test_naive_account_uses_the_math_parts():
    tr = rep("naive").trace()
    acc = m.naive_account(tr)
    assert list(acc) == [name for name, _ in m.MATH_PARTS]
    assert sum(acc.values()) == pytest.approx(m.gpu_us(tr))
    assert acc["dtype conversions"] == 0 and acc["additive mask"] > acc["fp32 GEMMs"]


def test_occupancy_arithmetic_matches_the_trace_below_48_kb():
    for v in ("sdpa_flash", "sdpa_efficient"):
        r = m.kernel_record(rep(v).trace())
        assert abs(m.theoretical_pct(r) - r["occupancy_pct"]) <= 1
    # a made-up kernel: 128 threads x 64 registers = 8,192 per block; 8 blocks fill 65,536
    r = {"registers": 64, "block": 128, "shared_mem": 0}
    assert m.block_regs(r) == 8192 and m.blocks_per_sm(r) == 8 and m.theoretical_pct(r) == 50


def test_sweep_helpers():
    t = m.sweep_table(rep("sweep").timings())
    assert len(t) == 60
    assert m.faster(t, "cudnn", "math", 64, 1024) and not m.faster(t, "math", "cudnn", 64, 1024)
    assert m.tflops(t, "cudnn", 128, 8192) > m.tflops(t, "naive", 128, 8192)
    assert not m.crossings(
        t, ("cudnn", "flash", "efficient", "naive", "math"), [512, 1024, 2048, 4096, 8192]
    )
    table = m.sweep_memory_rows(t)
    assert table.count("\n") == 6 and "| 8192 |" in table


def test_cpu_side_helpers():
    tr = rep("sdpa_flash").trace()
    ops, calls = m.forward_cpu(tr)
    assert ops.count("aten::transpose") == 4 and "cudaFuncSetAttribute" in calls
    assert m.launch_apis(rep("sdpa_cudnn").trace(), lambda n: "cudnn" in n) == {"cuLaunchKernelEx"}
    assert len(m.profiled_forward_us(tr)) == len(tr.steps)


def test_after_effect_groups_by_predecessor():
    calls = [("a", 1.0), ("b", 10.0), ("a", 2.0), ("b", 10.0)] * 3
    out = m.after_effect(calls, cycle=4)
    assert out == {"a": 1.0, "b": 1.0}  # each has one predecessor: nothing to compare
    calls = [("a", 1.0), ("b", 10.0), ("c", 5.0), ("a", 3.0), ("c", 5.0), ("b", 10.0)]
    assert m.after_effect(calls, cycle=100)["a"] == 1.0
    assert m.after_effect(calls + calls, cycle=100)["a"] == pytest.approx(
        3.0
    )  # after c: 3, after b: 1


def test_stream_stats_on_a_synthetic_run():
    timings = {
        "calls_per_stream": 4,
        "streams": [
            {
                "version": "x",
                "after": None,
                "cpu_us": [30, 10, 10, 10],
                "wall_us": 80,
                "gpu_event_us": 60,
            },
            {
                "version": "x",
                "after": "y",
                "cpu_us": [20, 10, 12, 10],
                "wall_us": 40,
                "gpu_event_us": 40,
            },
        ],
    }
    s = m.stream_stats(timings)["x"]
    assert s.cpu_us == 10 and s.first_us == 25 and s.wall_us == 15 and s.event_us == 12.5
    assert s.drift == 1.0 and s.streams == 2
    assert m.first_call_ratio(timings) == {"x": 2.5}


@pytest.mark.skipif(not has("streams_small"), reason="streams_small not recorded yet")
def test_streams_recordings():
    for v in ("streams_small", "streams_backends"):
        r = rep(v)
        stats = m.stream_stats(r.timings())
        assert set(stats) == set(m.STREAM_VERSIONS)
        tr = r.trace()
        for version in m.STREAM_VERSIONS:
            assert m.region_calls(tr, version) >= 1
            assert m.region_kernels_us(tr, version)
        assert m.region_ops(tr, "cudnn", "aten::_scaled_dot_product") == {
            "aten::_scaled_dot_product_cudnn_attention"
        }


SHAPE = (8, 16, 1024, 64)


def peak(variant: str, k: int = 0) -> float:
    return rep(variant, k).timings()["peak_extra_bytes"] / 2**20


@pytest.mark.parametrize("k", [0, 1, 2])
def test_lesson_facts_hold_on_every_repeat(k):
    f = m.naive_facts(
        rep("naive", k).trace(),
        rep("naive_inplace", k).trace(),
        peak("naive", k),
        peak("naive_inplace", k),
        SHAPE,
    )
    assert f["naive_ops"] == 9 and 0 < f["ip_saved_pct"] < 50
    names = ("naive", "sdpa_default", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn")
    b = m.backend_facts(
        {v: rep(v, k).trace() for v in names},
        {v: peak(v, k) for v in names},
        16.0,
        rep("sdpa_default", k).env["cudnn"],
    )
    assert b["cudnn_x"] == 1 and str(b["cudnn_kernel"]).startswith("`cudnn")
    mf = m.math_facts(rep("sdpa_math", k).trace(), rep("naive", k).trace())
    parts = ("gemm", "safe", "mask", "conv", "rest")
    assert sum(float(mf[f"math_{p}_pct"]) for p in parts) == pytest.approx(100)
    assert sum(float(mf[f"math_{p}_diff_us"]) for p in parts) == pytest.approx(
        float(mf["math_gap_us"])
    )
    c = m.compile_facts(
        rep("naive_compile", k).trace(),
        rep("naive", k).trace(),
        rep("sdpa_cudnn", k).trace(),
        peak("naive_compile", k),
        SHAPE,
    )
    assert c["c_vs_naive"] > 1 and c["c_vs_cudnn"] > 1


@pytest.mark.skipif(not has("streams_small"), reason="streams_small not recorded yet")
@pytest.mark.parametrize("k", [0, 1, 2])
def test_stream_facts_hold_on_every_repeat(k):
    kernel_us = {v: m.gpu_us(rep(f"sdpa_{v}", k).trace()) for v in ("cudnn", "flash", "efficient")}
    f = m.stream_facts(
        rep("streams_backends", k).timings(),
        rep("streams_small", k).timings(),
        rep("streams_small", k).trace(),
        kernel_us,
    )
    assert float(f["sm_cudnn_eff_x"]) > 1 and float(f["st_eff_cudnn_x"]) > 1
    assert f["calls_per_stream"] == 16
