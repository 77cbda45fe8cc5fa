"""Part 2's lab notes' facts (``chapters/part2-notes.md``): the evidence behind Part 2.

Every number the notes quote and every claim they make about the recordings of
``02_linear`` and ``03_mlp`` (and one of ``05_llm_decode``), computed by
:mod:`part2_measures` (which raises on a false claim) and checked on every repeat.
"""

from __future__ import annotations

import part2
import part2_measures as m
from _paste import paste_each_repeat
from tracesite import words
from tracesite.facts import Facts, claim

EXAMPLE = "03_mlp"
GPUS = ("h200", "h100")


def facts(f: Facts) -> None:
    rec, recs, trace, variant, num, md = f.rec, f.recs, f.trace, f.variant, f.num, f.md

    part2.setup(f, "03_mlp")
    num("n_repeats", len(recs("eager")))

    # The Linear, in numbers
    part2.setup(f, "02_linear")

    paste_each_repeat(
        f,
        lambda: m.linear(
            trace("small"),
            trace("big"),
            variant("64_bf16", "01_matmul_add").repeats[0].trace(),
        ),
        md="k_small k_big",
        num="small_us big_us small_tflops big_tflops big_pct",
    )

    part2.setup(f, "03_mlp")

    # The eager MLP
    paste_each_repeat(
        f,
        lambda: m.mlp_eager(trace("eager"), trace("eager_big"), m.HBM_TBS[f.gpu]),
        md="k_gate k_down k_gate_big k_down_big",
        num="mlp_kernels mlp_memsets memset_bytes big_memsets gate_us down_us gate_tflops "
        "down_tflops gelu_us mul_us gelu_tbs mul_tbs t_mib same_name_big_us",
    )

    # Reading an nvjet name
    def nvjet() -> None:
        names = {
            n for v in ("eager", "eager_big") for n in m.kernels(trace(v)) if n.startswith("nvjet")
        }
        names |= {
            n
            for v in ("small", "big")
            for n in m.kernels(rec(v, "02_linear").trace())
            if n.startswith("nvjet")
        }
        num("n_nvjet", len(m.nvjet_fields(names)))

    f.repeats(nvjet)

    # The first forward of a fresh process
    paste_each_repeat(
        f,
        lambda: part2.cold_first_forward(f),
        num="cold_fwd_ms cold_occ warm_fwd_us cold_clusters cold_gate_ms cold_up_ms cold_down_ms "
        "cold_gelu_ms cold_gelu_rec_ms cold_mul_ms cold_mul_rec_ms",
    )

    decode = variant("generate_dynamic_1b", "05_llm_decode").repeats
    claim(
        all(f"/{f.gpu}/" in str(r.trace_path) for r in decode),
        "Part 4's decoding recordings read here are this GPU's own, not another GPU's",
    )
    issuers = [m.occupancy_issuers(r.trace()) for r in decode]
    claim(
        all(i == {"aten::cumsum"} for i in issuers),
        "in Part 4's decoding trace the occupancy query is issued by aten::cumsum, in every "
        "repeat of both GPUs",
    )
    if f.gpu == "h200":  # the same words on both GPUs: pasted once
        md("part4_issuer", "`aten::cumsum`")

    # The fused kernel's launch configurations
    out = part2.fusion_outcomes(f)
    md("outcome_table", out["outcome_table"])
    # Process or cache: max-autotune's first warm repeat raced from an empty cache
    walls = [float(r.env["wall_s"]) for r in recs("autotune")]
    claim(
        all(walls[0] > 10 * w for w in walls[1:]),
        "max-autotune's first warm repeat took more than ten times as long as the later ones",
    )
    num("at_first_wall_s", walls[0])
    num("at_later_wall_s", max(walls[1:]))
    claim(
        sum(g["variant"] == "autotune" for g in out["groups"]) == 1,
        "the warm max-autotune repeats kept one configuration",
    )
    n_cold = len(recs("autotune_cold"))
    claim(
        sum(g["variant"] == "autotune_cold" for g in out["groups"]) == n_cold,
        "each fresh max-autotune process drew a configuration of its own",
    )
    num("at_cold_n", n_cold)

    paste_each_repeat(
        f,
        lambda: part2.big_shape(
            f,
            h200_says="on the H200 Liger's kernel broke even with the pair at the larger shape",
            h100_says="on the H100 Liger's kernel saved time at the larger shape",
        ),
        num="liger_block liger_masked_pct liger_small_block liger_small_masked_pct",
    )

    # Compile modes
    def compile_modes() -> None:
        ro = m.reduce_overhead(trace("reduce_overhead"))
        f.num_from(ro, "ro_per_graph ro_copy_us ro_x_mib")
        out = m.autotune_cold(
            rec("autotune_cold").timings(),  # type: ignore[arg-type]  # both have timings.json
            rec("compile_cold").timings(),  # type: ignore[arg-type]
            trace("autotune_cold"),
        )
        f.num_from(
            out,
            "cold_compile_s cold_autotune_s autotune_x n_races n_candidates n_failed "
            "smem_need_kib smem_limit_kib race_s",
        )
        md("tri_example", out["tri_example"])

    f.repeats(compile_modes)

    templates, kept, ratios = m.autotune_warm(
        [(r.trace(), variant("compile").repeats[r.repeat].trace()) for r in recs("autotune")]
    )
    kinds = ", ".join(f"`{n}`" for n in templates + kept)
    md(
        "autotune_kept",
        f"kept {kinds}; its GPU time per forward was {min(ratios):.2f}–{max(ratios):.2f}× "
        "the default mode's",
    )
    races = [
        (r.repeat, *race)
        for r in recs("autotune_cold")
        for race in m.autotune_cold(
            r.timings(),  # type: ignore[arg-type]  # both have timings.json
            variant("compile_cold").repeats[r.repeat].timings(),  # type: ignore[arg-type]
            r.trace(),
        )["races"]
    ]
    rows = [
        "| compile | shape (M×K, K×N) | cuBLAS (`mm`) | best Triton template | won by |",
        "|---|---|---|---|---|",
    ]
    rows += [
        f"| repeat {k + 1} | {s} | {c * 1e3:.1f} µs | {t * 1e3:.1f} µs | "
        f"{'cuBLAS' if w == 'mm' else '`' + w + '`'} |"
        for k, s, c, t, w in races
    ]
    md("race_table", "\n".join(rows))
    num("races_total", len(races))
    num("races_cublas", sum(w == "mm" for *_, w in races))

    # The A100 beside the H200
    def a100() -> None:
        e = m.mlp_eager(trace("eager"), trace("eager_big"), m.HBM_TBS[f.gpu])
        a = m.a100(e["gate_us"], e["down_us"])
        f.num_from(a, "gate_x down_x peak_x")
        num("peak_h", m.SPEC_TFLOPS)
        num("peak_a", m.A100["bf16_tflops"])
        num("a100_gate_us", m.A100["gate_us"])
        num("a100_down_us", m.A100["down_us"])
        num("a100_fused_us", m.A100["fused_us"])
        num("a100_liger_us", m.A100["liger_us"])
        claim(
            words.few_pct(abs(m.A100["liger_us"] - m.A100["fused_us"]), m.A100["fused_us"]),
            "The series found Inductor's and Liger's kernels within a few per cent of each other "
            "on the A100",
        )

    f.repeats(a100)
