"""Part 2's facts (``chapters/part2.md``): from ``nn.Linear`` to a fused MLP.

Every number the page quotes and every claim it makes about the recordings of
``02_linear`` and ``03_mlp``, computed by :mod:`part2_measures` (which raises on a false
claim) and checked on every repeat. Numbers are medians over the repeats. The measures
its notes read too are read here, by :func:`big_shape`, :func:`cold_first_forward` and
:func:`fusion_outcomes`, and the notes switch examples with its :func:`setup`.
"""

from __future__ import annotations

import part2_measures as m
from tracesite.facts import Facts, claim
from tracesite.words import about, beyond_spread, no_outlier

from tracereader import Trace

EXAMPLE = "02_linear"
GPUS = ("h200", "h100")


def setup(f: Facts, example: str) -> None:
    """As the page's ``setup()``: the example ``f`` reads from here on (the page and its notes
    read ``02_linear`` and ``03_mlp``)."""
    f.example = example


def big_shape(f: Facts, h200_says: str, h100_says: str) -> m.Values:
    """:func:`part2_measures.big_shape` on this repeat's ``*_big`` recordings of ``03_mlp``,
    with the GPU's claim about Liger's kernel against the eager pair (in the page's words):
    on the H200 about the pair's time, on the H100 more than a tenth less."""
    big = m.big_shape(
        f.trace("eager_big"),
        f.trace("compile_big"),
        f.trace("liger_big"),
        f.rec("liger_big").params,
    )
    if f.gpu == "h200":
        claim(about(big["liger_big_us"], big["pair_big_us"]), h200_says)
    if f.gpu == "h100":
        claim(big["liger_big_us"] < 0.9 * big["pair_big_us"], h100_says)
    return big


def cold_first_forward(f: Facts) -> m.Values:
    """The cold process's first forward against this repeat's warm ones (``first_forward``)."""
    warm = [f.trace(v) for v in ("eager", "eager_big", "compile", "liger")]
    return m.first_forward(f.trace("eager_cold"), warm)


def fusion_outcomes(f: Facts) -> m.Values:
    """What each way of fusing made of the MLP, over every repeat (``fusion_outcomes``)."""

    def every(variant: str) -> list[Trace]:
        return [r.trace() for r in f.recs(variant)]

    return m.fusion_outcomes({v: every(v) for v in m.HOW}, every("eager"), every("liger"))


def facts(f: Facts) -> None:
    rec, recs, trace, variant, num, md = f.rec, f.recs, f.trace, f.variant, f.num, f.md
    setup(f, "02_linear")
    num("n_repeats", len(recs("small")))
    md("stamp", rec("small").stamp_line().split(" (repeat")[0])
    part1 = variant("64_bf16", "01_matmul_add").repeats[0].trace()

    # Where did the Linear's transpose and bias go?
    def one_linear() -> None:
        lin = m.linear(trace("small"), trace("big"), part1)
        md("k_small", lin["k_small"])

    f.repeats(one_linear)

    # Can torch.compile help one Linear?
    def linear_compiled() -> None:
        comp = m.linear_compile(
            [(trace("small"), trace("small_compile")), (trace("big"), trace("big_compile"))]
        )
        num("big_comp_ratio", comp["big_comp_ratio"])

    f.repeats(linear_compiled)

    setup(f, "03_mlp")

    # What does an MLP run, and what does a kernel name tell you?
    def mlp_eager() -> None:
        e = m.mlp_eager(trace("eager"), trace("eager_big"), m.HBM_TBS[f.gpu])
        f.md_from(e, "k_gate k_down k_down_big views")
        f.num_from(
            e,
            "gemm_gflop gate_us down_us pair_us t_mib same_name_small_us same_name_big_us "
            "same_name_small_grid same_name_block mul_us mul_tbs mul_pct",
        )

    f.repeats(mlp_eager)

    # Who asks for occupancy, and when?
    def first_forward() -> None:
        cold = cold_first_forward(f)
        f.num_from(cold, "cold_occ cold_gate_ms cold_occ_us")

    f.repeats(first_forward)

    # What does fusion save, and why did it vary?
    def mlp_compile() -> None:
        c = m.mlp_compile(trace("eager"), trace("compile"), trace("liger"))
        md("k_fused", c["k_fused"])
        f.num_from(c, "bytes_eager bytes_fused")

    f.repeats(mlp_compile)

    out = fusion_outcomes(f)
    for key in ("warm", "cold"):
        num(f"{key}_of", out[f"{key}_of"])
        num(f"{key}_n", out[f"{key}_n"])
        num(f"{key}_us", out[f"{key}_us"])
        num(f"{key}_block", out[f"{key}_block"])
        num(f"{key}_per_thread", out[f"{key}_per_thread"])
        num(f"{key}_saving", out[f"{key}_saving"])
        fused_tbs = m.tbs(3 * 8192 * 3072 * 2, out[f"{key}_us"])  # reads gate, up; writes h
        num(f"{key}_pct", 100 * fused_tbs / m.HBM_TBS[f.gpu])
        md(f"liger_vs_{key}", out[f"liger_vs_{key}"])
    groups, fused = out["groups"], out["fused"]
    claim(
        sum(g["variant"] == "autotune_cold" for g in groups) > 1,
        "under max-autotune the configurations varied from process to process",
    )
    cfg = {(g["variant"], g["block"], g["per_thread"]) for g in groups}
    if f.gpu == "h200":
        claim(
            {("compile", 128, 8), ("compile_cold", 256, 2), ("reduce_overhead", 128, 8)} <= cfg,
            "on the H200 the warm compiles kept 128-thread blocks, the cold ones 256",
        )
        claim(
            beyond_spread(fused["compile_cold"], fused["compile"]),
            "on the H200 the 256-thread configuration ran slower in every repeat",
        )
        num("cold_vs_warm_x", out["cold_vs_warm_x"])
    if f.gpu == "h100":
        default = {(b, p) for v, b, p in cfg if v in ("compile", "compile_cold", "reduce_overhead")}
        claim(
            default == {(256, 2)},
            "on the H100 every default-mode compile kept 256-thread blocks of 2 elements",
        )
        claim(
            no_outlier(fused["compile"] + fused["compile_cold"]),
            "on the H100 warm and cold compiles ran the fused kernel at the same speed",
        )

    # Is a hand-written kernel better?
    def liger() -> None:
        lg = m.liger(trace("liger"), trace("compile"))
        md("k_liger", lg["k_liger"])
        num("liger_us", lg["liger_us"])
        big = big_shape(
            f,
            h200_says="on the H200 Liger's big kernel took about the pair's time",
            h100_says="on the H100 Liger's big kernel saved more than a tenth of the pair's time",
        )
        f.num_from(big, "pair_big_us fused_big_us liger_big_vs_pair")

    f.repeats(liger)

    # The two GPUs side by side (checked once, in the H200's run, on every repeat of both)
    if f.gpu == "h200":
        per_gpu = {}
        for gpu in m.HBM_TBS:
            g = f.on(gpu, "03_mlp")
            per_gpu[gpu] = [
                m.mlp_eager(
                    r.trace(), g.variant("eager_big").repeats[r.repeat].trace(), m.HBM_TBS[gpu]
                )
                for r in g.variant("eager").repeats
            ]
        claim(
            len({(e["k_gate"], e["k_down"]) for es in per_gpu.values() for e in es}) == 1,
            "both GPUs ran the MLP's GEMMs with the same kernels",
        )
        gate = [e["gate_us"] for es in per_gpu.values() for e in es]
        claim(no_outlier(gate), "the gate GEMM took the same time on both GPUs, in every repeat")
        mul200 = [e["mul_us"] for e in per_gpu["h200"]]
        mul100 = [e["mul_us"] for e in per_gpu["h100"]]
        claim(beyond_spread(mul100, mul200), "the multiply was slower on the H100 in every repeat")
        bw_ratio = m.HBM_TBS["h200"] / m.HBM_TBS["h100"]
        mul_ratio = m.median(mul100) / m.median(mul200)
        claim(about(mul_ratio, bw_ratio), "by about the ratio of the datasheet bandwidths")
        claim(
            all(e["mul_pct"] > 80 for es in per_gpu.values() for e in es),
            "on both GPUs the multiply's effective rate was above 80 % of the datasheet's",
        )
        num("mul_ratio", mul_ratio)
        num("bw_ratio", bw_ratio)
        num("hbm_h200", m.HBM_TBS["h200"])
        num("hbm_h100", m.HBM_TBS["h100"])
