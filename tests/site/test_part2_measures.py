"""Part 2's measures module against the real recordings, on every repeat."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "chapters"))

import part2_measures as m  # noqa: E402
from tracesite.recordings import load  # noqa: E402

REPEATS = range(len(load("03_mlp", "eager").repeats))


def tr(example: str, variant: str, k: int = 0):
    return load(example, variant).repeats[k].trace()


def mlp(variant: str, k: int = 0):
    return tr("03_mlp", variant, k)


@pytest.mark.parametrize("k", REPEATS)
def test_linear(k):
    out = m.linear(
        tr("02_linear", "small", k), tr("02_linear", "big", k), tr("01_matmul_add", "64_bf16")
    )
    assert out["k_small"].endswith("bias_TNT`") and out["big_pct"] > 60
    pairs = [
        (tr("02_linear", e, k), tr("02_linear", c, k))
        for e, c in (("small", "small_compile"), ("big", "big_compile"))
    ]
    assert "TorchDynamo" in m.linear_compile(pairs)["compile_frames"]


@pytest.mark.parametrize("k", REPEATS)
def test_mlp_eager_one_name_two_jobs(k):
    out = m.mlp_eager(mlp("eager", k), mlp("eager_big", k))
    assert out["mlp_kernels"] == 5 and out["mlp_memsets"] == 2
    assert out["k_gate"] == out["k_down_big"]
    assert out["same_name_big_us"] > 5 * out["same_name_small_us"]


def test_nvjet_names_all_fit():
    names = {n for v in ("eager", "eager_big") for n in m.kernels(mlp(v)) if n.startswith("nvjet")}
    assert len(m.nvjet_fields(names)) == len(names) == 3
    with pytest.raises(AssertionError):
        m.nvjet_fields(["nvjet_sm90_xyz"])


@pytest.mark.parametrize("k", REPEATS)
def test_first_forward(k):
    out = m.first_forward(mlp("eager_cold", k), [mlp("eager", k), mlp("compile", k)])
    assert out["cold_occ"] > 0 and out["cold_gate_ms"] > out["cold_up_ms"]


def test_occupancy_elsewhere():
    assert m.occupancy_issuers(tr("05_llm_decode", "generate_dynamic_1b")) == {"aten::cumsum"}


def test_config_outcomes_split_cold_and_warm():
    numel = m.SMALL["rows"] * m.SMALL["hidden"]
    runs = {v: [mlp(v, k) for k in REPEATS] for v in ("compile", "compile_cold", "reduce_overhead")}
    rows = m.config_outcomes(runs, numel)
    warm = {(r["block"], r["per_thread"]) for r in rows if r["variant"] != "compile_cold"}
    cold = {(r["block"], r["per_thread"]) for r in rows if r["variant"] == "compile_cold"}
    assert warm == {(128, 8)} and cold == {(256, 2)}
    slow = min(r["us"] for r in rows if r["block"] == 256)
    fast = max(r["us"] for r in rows if r["block"] == 128)
    assert slow > 1.3 * fast


@pytest.mark.parametrize("k", REPEATS)
def test_compile_liger_big(k):
    assert m.mlp_compile(mlp("eager", k), mlp("compile", k), mlp("liger", k))["k_fused"].startswith(
        "`triton_poi"
    )
    out = m.big_shape(
        mlp("eager_big", k),
        mlp("compile_big", k),
        mlp("liger_big", k),
        load("03_mlp", "liger_big").repeats[k].params,
    )
    assert out["liger_block"] == 16384 and out["fused_big_per_thread"] == 8
    assert m.liger(mlp("liger", k), mlp("compile", k))["liger_us"] > 0


def test_a100_and_saving():
    out = m.a100(56.3, 50.4)
    assert 2.5 < out["peak_x"] < 3.5 and 2 < out["bw_x"] < 2.5
    assert m.bw_word(37.4) == "near" and m.bw_word(56.3) == "short of"
    assert round(m.saving(68.0, 37.4)) == 45


@pytest.mark.parametrize("k", REPEATS)
def test_compile_modes(k):
    rec = load("03_mlp", "reduce_overhead").repeats[k]
    assert m.reduce_overhead(rec.trace())["ro_per_graph"] >= 5
    cold = load("03_mlp", "autotune_cold").repeats[k]
    out = m.autotune_cold(
        cold.timings(), load("03_mlp", "compile_cold").repeats[k].timings(), cold.trace()
    )
    assert out["n_races"] == len(out["races"]) and out["autotune_x"] > 2


def test_autotune_warm():
    templates, kept, ratios = m.autotune_warm(
        [(mlp("autotune", k), mlp("compile", k)) for k in REPEATS]
    )
    assert len(ratios) == len(REPEATS) and (templates or kept)


def test_fusion_outcomes():
    runs = {v: [mlp(v, k) for k in REPEATS] for v in m.HOW}
    out = m.fusion_outcomes(
        runs, [mlp("eager", k) for k in REPEATS], [mlp("liger", k) for k in REPEATS]
    )
    assert out["warm_saving"] > out["cold_saving"] > 0
    assert out["liger_vs_warm"] == "slower than" and out["liger_vs_cold"] == "faster than"
    assert out["warm_bw_word"] == "near" and out["cold_bw_word"] == "short of"
    assert out["cold_vs_warm_x"] > 1.3  # the cold compiles kept the slower configuration
