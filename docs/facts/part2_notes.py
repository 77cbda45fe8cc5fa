"""Part 2's lab notes' facts (``chapters/part2-notes.md``): the evidence behind Part 2.

Every number the notes quote and every claim they make about the recordings of
``02_linear`` and ``03_mlp`` (and one of ``05_llm_decode``), computed by
:mod:`part2_measures` (which raises on a false claim) and checked on every repeat.
"""

from __future__ import annotations

from typing import Any

import part2_measures as m
from tracesite.facts import Facts, claim

EXAMPLE = "03_mlp"


def facts(f: Facts) -> None:
    rec, recs, trace, variant, num, md = f.rec, f.recs, f.trace, f.variant, f.num, f.md

    def setup(example: str) -> None:  # as the page's setup(): the example read from here on
        f.example = example

    def glue_all(values: dict[str, Any]) -> None:  # the page's own: text as Markdown, no float()
        for key, value in values.items():
            if isinstance(value, str):
                md(key, value)
            else:
                num(key, value)

    setup("03_mlp")
    num("n_repeats", len(recs("eager")))

    # The Linear, in numbers
    setup("02_linear")

    def one_linear() -> None:
        glue_all(
            m.linear(
                trace("small"),
                trace("big"),
                variant("64_bf16", "01_matmul_add").repeats[0].trace(),
            )
        )

    f.repeats(one_linear)

    setup("03_mlp")

    # The eager MLP
    def mlp_eager() -> None:
        glue_all(m.mlp_eager(trace("eager"), trace("eager_big")))

    f.repeats(mlp_eager)

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
    def first_forward() -> None:
        glue_all(
            m.first_forward(
                trace("eager_cold"), [trace(v) for v in ("eager", "eager_big", "compile", "liger")]
            )
        )

    f.repeats(first_forward)

    issuers = [
        m.occupancy_issuers(r.trace())
        for r in variant("generate_dynamic_1b", "05_llm_decode").repeats
    ]
    claim(
        all(i == {"aten::cumsum"} for i in issuers),
        "in Part 4's decoding trace the occupancy query is issued by aten::cumsum, in every repeat",
    )
    md("part4_issuer", "`aten::cumsum`")

    # The fused kernel's launch configurations
    runs = {v: [r.trace() for r in recs(v)] for v in m.HOW}
    out = m.fusion_outcomes(
        runs, [r.trace() for r in recs("eager")], [r.trace() for r in recs("liger")]
    )
    glue_all({k: v for k, v in out.items() if k not in ("bw_x", "a100_fused_us")})

    def big_shape() -> None:
        glue_all(
            m.big_shape(
                trace("eager_big"),
                trace("compile_big"),
                trace("liger_big"),
                rec("liger_big").params,
            )
        )

    f.repeats(big_shape)

    # Compile modes
    def compile_modes() -> None:
        glue_all(m.reduce_overhead(trace("reduce_overhead")))
        out = m.autotune_cold(
            rec("autotune_cold").timings(),  # type: ignore[arg-type]  # both have timings.json
            rec("compile_cold").timings(),  # type: ignore[arg-type]
            trace("autotune_cold"),
        )
        out.pop("races")
        glue_all(out)

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
        e = m.mlp_eager(trace("eager"), trace("eager_big"))
        glue_all(m.a100(e["gate_us"], e["down_us"]))
        num("peak_h", m.SPEC_TFLOPS)
        num("peak_a", m.A100["bf16_tflops"])
        for key in ("gate_us", "down_us", "fused_us", "liger_us"):
            num(f"a100_{key}", m.A100[key])

    f.repeats(a100)
