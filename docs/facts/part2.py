"""Part 2's facts (``chapters/part2.md``): from ``nn.Linear`` to a fused MLP.

Every number the page quotes and every claim it makes about the recordings of
``02_linear`` and ``03_mlp``, computed by :mod:`part2_measures` (which raises on a false
claim) and checked on every repeat. Numbers are medians over the repeats.
"""

from __future__ import annotations

import part2_measures as m
from tracesite.facts import Facts

EXAMPLE = "02_linear"


def facts(f: Facts) -> None:
    rec, recs, trace, variant, num, md = f.rec, f.recs, f.trace, f.variant, f.num, f.md

    def setup(example: str) -> None:  # as the page's setup(): the example read from here on
        f.example = example

    setup("02_linear")
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

    setup("03_mlp")

    # What does an MLP run, and what does a kernel name tell you?
    def mlp_eager() -> None:
        e = m.mlp_eager(trace("eager"), trace("eager_big"))
        md("k_gate", e["k_gate"])
        md("k_down", e["k_down"])
        md("k_down_big", e["k_down_big"])
        md("views", e["views"])
        num("gemm_gflop", e["gemm_gflop"])
        num("gate_us", e["gate_us"])
        num("down_us", e["down_us"])
        num("pair_us", e["pair_us"])
        num("t_mib", e["t_mib"])
        num("same_name_small_us", e["same_name_small_us"])
        num("same_name_big_us", e["same_name_big_us"])
        num("same_name_small_grid", e["same_name_small_grid"])
        num("same_name_block", e["same_name_block"])

    f.repeats(mlp_eager)

    # Who asks for occupancy, and when?
    def first_forward() -> None:
        cold = m.first_forward(
            trace("eager_cold"), [trace(v) for v in ("eager", "eager_big", "compile", "liger")]
        )
        num("cold_occ", cold["cold_occ"])
        num("cold_gate_ms", cold["cold_gate_ms"])
        num("cold_occ_us", cold["cold_occ_us"])

    f.repeats(first_forward)

    # What does fusion save, and why did it vary?
    def mlp_compile() -> None:
        c = m.mlp_compile(trace("eager"), trace("compile"), trace("liger"))
        md("k_fused", c["k_fused"])
        num("bytes_eager", c["bytes_eager"])
        num("bytes_fused", c["bytes_fused"])

    f.repeats(mlp_compile)

    runs = {v: [r.trace() for r in recs(v)] for v in m.HOW}
    out = m.fusion_outcomes(
        runs, [r.trace() for r in recs("eager")], [r.trace() for r in recs("liger")]
    )
    num("a100_fused_us", out["a100_fused_us"])
    num("bw_x", out["bw_x"])
    num("cold_vs_warm_x", out["cold_vs_warm_x"])
    num("warm_of", out["warm_of"])
    num("warm_us", out["warm_us"])
    num("warm_block", out["warm_block"])
    num("warm_saving", out["warm_saving"])
    num("warm_a100_x", out["warm_a100_x"])
    md("warm_bw_word", out["warm_bw_word"])
    md("liger_vs_warm", out["liger_vs_warm"])
    num("cold_of", out["cold_of"])
    num("cold_us", out["cold_us"])
    num("cold_block", out["cold_block"])
    num("cold_saving", out["cold_saving"])
    num("cold_a100_x", out["cold_a100_x"])
    md("cold_bw_word", out["cold_bw_word"])
    md("liger_vs_cold", out["liger_vs_cold"])

    # Is a hand-written kernel better?
    def liger() -> None:
        lg = m.liger(trace("liger"), trace("compile"))
        md("k_liger", lg["k_liger"])
        num("liger_us", lg["liger_us"])
        big = m.big_shape(
            trace("eager_big"),
            trace("compile_big"),
            trace("liger_big"),
            rec("liger_big").params,
        )
        num("pair_big_us", big["pair_big_us"])
        num("fused_big_us", big["fused_big_us"])
        num("liger_big_vs_pair", big["liger_big_vs_pair"])

    f.repeats(liger)
