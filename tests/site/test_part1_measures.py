"""Part 1's measures module (docs/chapters/part1_measures.py), and the functions only one page's
facts use (docs/facts/part1.py, part1_notes.py), against every recorded repeat."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tracesite.recordings import load

DOCS = Path(__file__).resolve().parents[2] / "docs"
sys.path[:0] = [str(DOCS / "chapters"), str(DOCS / "facts")]
import part1 as part1_facts  # noqa: E402  (the functions only one page's facts use)
import part1_measures as m  # noqa: E402
import part1_notes as notes_facts  # noqa: E402

EXAMPLE = "01_matmul_add"
N = len(load(EXAMPLE, "64_bf16").repeats)


def getter(k: int):
    """The traces of repeat ``k``, by variant name."""
    return lambda name: load(EXAMPLE, name).repeats[k].trace()


def totals(name: str, k: int) -> dict[str, float]:
    return load(EXAMPLE, name).repeats[k].table_totals_us()


@pytest.fixture(params=range(N), ids=lambda k: f"r{k}")
def k(request):
    return request.param


def test_three_repeats():
    assert N >= 3


def test_export(k):
    t = getter(k)
    assert m.export_facts(t("64_bf16"), t("64_bf16_export_after"))["n_ready"] > 0


def test_table(k):
    t = getter(k)
    f = m.table_facts(t("64_bf16"), t("4096_bf16"), totals("64_bf16", k), totals("4096_bf16", k))
    assert f["pct64"] < 5 < f["gpu_growth"]
    part1_facts.check_op_table(
        t("64_bf16"), load(EXAMPLE, "64_bf16").repeats[k].table_rows(), totals("64_bf16", k)
    )


def test_speed(k):
    t = getter(k)
    f = m.speed_facts(t("peaks"), t("64_bf16"), t("4096_bf16_20steps"), t("4096_bf16"))
    assert f["r4k_pct"] > 70 and f["r64_pct"] < 0.1
    assert 0.9 < f["add_tbs"] / f["peak_tbs"] < 1.15 and f["sm_bound"] > 1


def test_lanes_and_chain(k):
    t = getter(k)
    assert m.lane_facts(t("64_bf16"))["step_pct"] < 10
    f = m.chain_facts(t("64_bf16"), t("64_bf16_batch8"))
    assert "`aten::mm`" in f["chain"] and f["batch_kernels"] == 2


def test_first_step(k):
    t = getter(k)
    meta = load(EXAMPLE, "64_bf16_20steps").repeats[k].meta
    f = m.first_step_facts(t("64_bf16_20steps_cold"), t("64_bf16_20steps"), t("64_bf16_cold"), meta)
    assert f["cold_ratio"] > 2 and f["warm_ratio"] > 2
    assert f["warm_ratio"] < f["cold_ratio"]
    assert m.unscheduled_facts(t("64_bf16_nowait"))["n_clusters"] > 0
    warm = [t(n) for n in ("64_bf16", "64_bf16_20steps", "4096_bf16")]
    assert m.warm_step_facts(t("64_bf16"), warm)["slow_max"] > 1.5


def test_offset(k):
    t = getter(k)
    f = m.offset_facts(
        t("64_bf16"), t("64_bf16_cold"), t("64_bf16_nowait"), t("64_bf16_20steps_cold")
    )
    assert f["n_abr"] == 1 and f["n_abr_20"] == 0


def test_variants_listed():
    from tracesite.recordings import PRIMARY_GPU, recordings_root

    folder = recordings_root() / PRIMARY_GPU / EXAMPLE
    assert set(m.VARIANTS) == {p.name for p in folder.iterdir() if (p / "r0").is_dir()}


def test_window(k):
    recs = [load(EXAMPLE, n).repeats[k] for n in m.VARIANTS]
    f = m.window_facts([(r.trace(), r.meta) for r in recs])
    assert 0 < f["idle_sync_min"] < f["idle_sync_max"] < 100


def test_warm_runs_follow_other_runs_in_their_process():
    """The notes say every warm 20-step repeat came after other profiled runs."""
    for r in load(EXAMPLE, "64_bf16_20steps").repeats:
        assert r.meta["process"]["variants_in_it"][0] != "64_bf16_20steps"


def test_launch_calls_and_sync(k):
    t = getter(k)
    others = [t(n) for n in ("4096_fp32_tf32", "4096_bf16_compile", "peaks")]
    f = m.launch_call_facts(
        t("64_bf16"), t("4096_bf16"), t("4096_fp32"), t("4096_fp32_tf32"), others
    )
    assert f["c64"] == "`cuLaunchKernelEx`"
    s = m.sync_facts(t("64_bf16"), t("4096_bf16"), t("4096_fp32"), t("64_bf16_cold"))
    assert s["s64_busy"] == 0 and s["s32_pct"] > s["s64_pct"]
    assert s["l2s32_ms"] > 1


def test_kernels(k):
    t = getter(k)
    assert m.distribution_facts(t("4096_bf16_20steps"))["k20_n"] == 20
    assert m.dtype_facts(t("4096_bf16"), t("4096_fp32"), t("4096_fp32_tf32"))["fp32_x"] > 5


def test_compile(k):
    t = getter(k)
    f = m.compile_facts(
        t("64_bf16"),
        t("64_bf16_compile"),
        t("64_bf16_addmm"),
        t("64_bf16_reduce_overhead"),
        t("4096_bf16_compile"),
    )
    assert f["c_ops"] == f["e_ops"] == 2 and f["r_ops"] == 3
    metas = [load(EXAMPLE, n).repeats[k].meta for n in ("64_bf16", "64_bf16_compile")]
    m.same_process(metas, "64_bf16", "64_bf16_compile")
    g = m.fused_facts(
        t("4096_bf16"), t("4096_bf16_compile"), t("4096_bf16_triton_gemm"), t("4096_bf16_autotune")
    )
    assert g["fused_vs_gemm"] > 1.03


def test_interleaved(k):
    r = load(EXAMPLE, "interleaved_64").repeats[k]
    bare = [(str(n), float(us)) for n, us in r.timings()["calls"]]
    f = m.interleaved_facts(r.trace(), bare)
    assert f["u_c_over_e"] > 1.5 and f["prof_cost"] > 1


def test_cold_table(k):
    f = m.cold_table_facts(getter(k)("64_bf16_cold"), totals("64_bf16_cold", k))
    assert f["cold_pct"] < 5 and f["cold_pct_work"] < f["a100_pct_work"]


def test_verdicts():
    assert notes_facts.verdict([1.2, 1.3], "more", "less", "same") == "more"
    assert notes_facts.verdict([0.8, 0.9], "more", "less", "same") == "less"
    assert notes_facts.verdict([0.98, 1.2], "more", "less", "same") == "same"
    assert (
        notes_facts.autotune_text([True, True]) == "picked the fused Triton kernel in all 2 repeats"
    )
    assert notes_facts.autotune_text([False]) == "kept cuBLAS and the copy in all 1 repeats"
    assert "1 of 3" in notes_facts.autotune_text([True, False, False])


def test_covered_ns():
    assert m._covered_ns([(0, 10), (5, 20), (30, 40)]) == 30
    assert m._covered_ns([]) == 0
