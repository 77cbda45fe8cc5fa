"""Part 2's facts (``chapters/part2.md``): from ``nn.Linear`` to a fused MLP.

Every number the page quotes and every claim it makes about the recordings of
``02_linear`` and ``03_mlp``, computed by :mod:`part2_measures` (which raises on a false
claim) and checked on every repeat. Numbers are medians over the repeats.
"""

from __future__ import annotations

from typing import Any

import part2_measures as m
from tracesite.facts import Facts

EXAMPLE = "02_linear"


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

    setup("02_linear")
    num("n_repeats", len(recs("small")))
    md("stamp", rec("small").stamp_line().split(" (repeat")[0])
    part1 = variant("64_bf16", "01_matmul_add").repeats[0].trace()

    # Where did the Linear's transpose and bias go?
    def one_linear() -> None:
        glue_all(m.linear(trace("small"), trace("big"), part1))

    f.repeats(one_linear)

    # Can torch.compile help one Linear?
    def linear_compiled() -> None:
        glue_all(
            m.linear_compile(
                [(trace("small"), trace("small_compile")), (trace("big"), trace("big_compile"))]
            )
        )

    f.repeats(linear_compiled)

    setup("03_mlp")

    # What does an MLP run, and what does a kernel name tell you?
    def mlp_eager() -> None:
        glue_all(m.mlp_eager(trace("eager"), trace("eager_big")))

    f.repeats(mlp_eager)

    # Who asks for occupancy, and when?
    def first_forward() -> None:
        glue_all(
            m.first_forward(
                trace("eager_cold"), [trace(v) for v in ("eager", "eager_big", "compile", "liger")]
            )
        )

    f.repeats(first_forward)

    # What does fusion save, and why did it vary?
    def mlp_compile() -> None:
        glue_all(m.mlp_compile(trace("eager"), trace("compile"), trace("liger")))

    f.repeats(mlp_compile)

    runs = {v: [r.trace() for r in recs(v)] for v in m.HOW}
    glue_all(
        m.fusion_outcomes(
            runs, [r.trace() for r in recs("eager")], [r.trace() for r in recs("liger")]
        )
    )

    # Is a hand-written kernel better?
    def liger() -> None:
        glue_all(m.liger(trace("liger"), trace("compile")))
        glue_all(
            m.big_shape(
                trace("eager_big"),
                trace("compile_big"),
                trace("liger_big"),
                rec("liger_big").params,
            )
        )

    f.repeats(liger)
