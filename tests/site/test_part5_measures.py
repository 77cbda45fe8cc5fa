"""Part 5's measures module (docs/chapters/part5_measures.py) against every recorded repeat."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest
from tracesite.recordings import load

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "chapters"))
import part5_measures as m  # noqa: E402

EXAMPLE = "06_train_step"
N = len(load(EXAMPLE, "eager").repeats)


@cache
def recs(name: str):
    return load(EXAMPLE, name).repeats


@pytest.fixture(params=range(N), ids=lambda k: f"r{k}")
def k(request):
    return request.param


def test_three_repeats():
    assert N >= 3
    assert all(len(recs(v)) == N for v in m.ATTEMPTS)


def test_step_per_repeat(k):
    tr = recs("eager")[k].trace()
    f = m.step_facts(tr)
    assert f["main_lane"] != f["auto_lane"]
    assert f["backward_kernels"] > f["forward_kernels"] > f["optimizer_kernels"] > 0
    assert f["step_kernels"] >= sum(f[f"{p}_kernels"] for p in m.PHASES)
    assert 0 < f["first_kernel_ms"] < f["launch_done_ms"]
    assert f["longest_gap_ms"] < f["tail_ms"] < 3  # one longer idle stretch, after the last kernel
    fwd, bwd, seq = m.seq_pair(tr, 20)
    assert tr.name(fwd) == "aten::mm" and "MmBackward0" in tr.name(bwd)
    assert tr.ts_ns[fwd] < tr.ts_ns[bwd] and tr.extra["seq"][fwd] == seq


def test_optimizers_per_repeat(k):
    fused, foreach, loop = (
        m.optimizer_facts(recs(v)[k].trace()) for v in ("eager", "eager_foreach", "eager_forloop")
    )
    assert fused["kernels"] < foreach["kernels"] < loop["kernels"]
    assert fused["cpu_ms"] < foreach["cpu_ms"] < loop["cpu_ms"]
    assert fused["gpu_ms"] < min(foreach["gpu_ms"], loop["gpu_ms"])


def test_casts_per_repeat(k):
    c32, c16 = (m.cast_facts(recs(v)[k].trace()) for v in ("eager", "eager_bf16"))
    assert c16["casts"] < c32["casts"] and c32["cast_ms"] < 0.2 * c32["fwd_gpu_ms"]
    assert c16["linear_casts"] == 0 < c32["linear_casts"]
    assert c32["weight_casts"] > c32["input_casts"] > 0 and c32["other_casts"] > 0
    # outside aten::linear: autocast's casts for SDPA, the model's own .to(), one in cumsum
    assert c32["sdpa_casts"] + c32["own_casts"] + c32["internal_casts"] == c32["other_casts"]
    assert c16["sdpa_casts"] == 0 and c16["own_casts"] == c16["casts"] - 1
    assert c16["internal_ops"] == "aten::cumsum"
    assert recs("eager_bf16")[k].results["peak_gib"] < recs("eager")[k].results["peak_gib"]
    tr = recs("eager")[k].trace()
    assert tr.name(m.first_cast(tr)) == "aten::_to_copy"


def test_memory_per_repeat(k):
    r = recs("memory")[k]
    f = m.memory_facts(str(r.trace_path), r.results["peak_gib"], r.timings()["params"])
    assert f["peak_phase"] == "backward"
    assert f["start_gib"] < f["after_fwd_gib"] < f["peak_gib"]
    assert abs(f["end_gib"] - f["start_gib"]) < 0.1
    assert (
        f["state_saved_gib"]
        < recs("eager")[k].results["peak_gib"] - recs("eager_bf16")[k].results["peak_gib"]
    )
    assert f["lin_weight_gib"] + f["lin_input_gib"] == pytest.approx(f["lin_copies_gib"])
    assert f["lin_output_gib"] > max(f["lin_weight_gib"], f["lin_input_gib"]) > 2
    ck = recs("eager_checkpoint")[k].results
    assert (
        ck["peak_gib"] < r.results["peak_gib"]
        and ck["step_ms"] > recs("eager")[k].results["step_ms"]
    )


def test_loader_per_repeat(k):
    inline, workers, fast = (m.loader_facts(recs(v)[k].trace()) for v in ("loader_inline", "loader_workers",
                                                                          "loader_async"))  # fmt: skip
    assert inline["gpu_busy_in_data_ms"] < 0.01 * inline["data_ms"]
    assert workers["data_ms"] < 0.05 * inline["data_ms"]
    assert inline["syncs"] == workers["syncs"] == 1 and fast["syncs"] == 0
    assert fast["pinned"] == 1 and not inline["pinned"]
    assert fast["step_kernels"] > workers["step_kernels"]


def test_compile_per_repeat(k):
    eager = m.step_facts(recs("eager")[k].trace())
    cc, c8, causal, b16, final = (
        m.compile_facts(recs(v)[k].trace())
        for v in ("compile", "compile_b8_bf16", "causal", "causal_b16", "final")
    )
    assert causal["kernels"] == b16["kernels"] == final["kernels"] < cc["kernels"]
    assert cc["kernels"] < eager["step_kernels"] / 2 and 0 < cc["triton"] < cc["kernels"]
    assert cc["grad_casts"] == 7 * 16 + 1 and causal["grad_casts"] == 0
    assert cc["weight_casts"] == 2 * cc["grad_casts"]  # each weight: forward, backward
    t = recs("compile")[k].trace()
    lo, hi, cast = m.grad_cast_window(t, 1500)
    assert hi - lo == 1_500_000 and lo < t.ts_ns[cast] < hi
    assert causal["attn_ms"] < 0.5 * c8["attn_ms"]
    extra = set(causal["attn_names"]) - set(c8["attn_names"])
    assert extra and all("fmha_reduce_head" in n for n in extra)
    flex = m.attention_facts(recs("causal_flex")[k].trace())  # asserts flex's kernels only
    assert flex["attn_ms"] > causal["attn_ms"]


def test_account_per_repeat(k):
    r, f = recs("causal")[k], recs("final")[k]
    a = m.account(r.trace(), str(r.trace_path), r.timings()["seq"])
    b = m.account(f.trace(), str(f.trace_path), f.timings()["seq"])
    for x in (a, b):
        assert sum(x[f"pct_{c}"] for c in m.KERNEL_CLASSES) == pytest.approx(100)
        assert x["idle_pct"] < 2.5 and 15 < x["head_pct"] < 25
        assert 500 < x["gemm_tflops"] < 989 and 100 < x["attn_tflops"] < x["gemm_tflops"]
    assert a["pct_GEMM"] > 70 and b["pct_attention"] > 2 * a["pct_attention"]


def test_kernel_classes():
    assert m.kernel_class("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN") == "GEMM"
    assert m.kernel_class("cudnn_generated_fort_native_sdpa_sm90_flash_bprop") == "attention"
    assert m.kernel_class("triton_poi_fused_add_0") == "Triton"
    assert m.kernel_class("void at::native::multi_tensor_apply_kernel<x>") == "AdamW"


def test_results_table():
    rows = {
        v: m.results_row([r.results for r in recs(v)], [r.timings() for r in recs(v)])
        for v in m.ATTEMPTS
    }
    assert m.results_table(rows).count("\n") == len(m.ATTEMPTS) + 1
    m.check_attempts(rows)  # the page's claims on these rows
    assert (
        rows["final"]["mfu"]
        > rows["causal"]["mfu"]
        > rows["compile_b8_bf16"]["mfu"]
        > rows["compile"]["mfu"]
        > rows["eager"]["mfu"]
    )
    assert (
        rows["final"]["mfu_min"] >= 0.5 > max(r["mfu_max"] for v, r in rows.items() if v != "final")
    )
    assert rows["final"]["mfu_done_max"] < rows["causal"]["mfu_done_min"]
    assert all(r["mfu_foundry"] > r["mfu"] for r in rows.values())


def test_snapshot_per_repeat(k):
    r = recs("memory")[k]
    peak, alive = m.snapshot_at_peak(str(r.trace_path.parent / "memory_snapshot.pickle"))
    assert sum(g for _, g in alive) == pytest.approx(peak)
    assert peak + 12 * r.timings()["params"] / 2**30 == pytest.approx(
        r.results["peak_gib"], rel=0.01
    )
    assert m.snapshot_table(alive, top=3).count("\n") == 4
