"""Part 4's lab notes' facts (``chapters/part4-notes.md``): the evidence behind the lesson.

Every number the notes quote and every claim they make about the recordings of
``05_llm_decode`` (:func:`facts`), checked on every repeat: :class:`Chapter` extends
:class:`_chapter.Chapter` with the 1B shape's account (:meth:`Chapter.small_model_facts`);
:func:`packed_facts` and :func:`_decode.generate_facts` read one repeat each; the
command-line summary's numbers come from running it as the page shows it. Numbers are
medians over the repeats.

Only :mod:`tracereader`, numpy and the standard library here (and the facts runner's
:class:`~tracesite.facts.Facts`): no drawing.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import _chapter
from _decode import (
    OTHER,
    Facts,
    Rec,
    Table,
    decode_steps,
    gemv_bytes,
    generate_facts,
    res,
    token_ops,
)
from tracesite import load_definitions
from tracesite.facts import Facts as PageFacts
from tracesite.facts import claim
from tracesite.notebook import tracereader_cli

from tracereader import Trace

EXAMPLE = "05_llm_decode"
#: The helper module of the example's stories: the model's SHAPES.
COMMON = Path(__file__).resolve().parents[2] / "examples" / EXAMPLE / "_05_common.py"


def packed_facts(short: Rec, packed: Rec) -> Facts:
    """Packed GQA, one repeat: the attention work per token before and after."""

    def attention_ops(r: Rec) -> tuple[Trace, list[int]]:
        tr = r.trace()
        return tr, [g for g in token_ops(tr) if "sdpa" in tr.name(g) or "attention" in tr.name(g)]

    tr, att = attention_ops(short)
    tr2, att2 = attention_ops(packed)
    before = [g for g in att if tr.name(g).startswith("triton_poi")]
    after = [g for g in att2 if tr2.name(g).startswith("triton_poi")]
    assert len(after) < len(before)
    assert sum(tr2.dur_ns[g] for g in att2) < sum(tr.dur_ns[g] for g in att)
    cudnn = [g for g in att2 if tr2.name(g).startswith("cudnn")]
    assert len(cudnn) == 32  # one per layer, cuDNN's kernel
    return {
        "gqa_copy_kernels_before": len(before),
        "gqa_copy_kernels_after": len(after),
        "gqa_copy_us_before": sum(float(tr.dur_ns[g]) for g in before) / 1e3,
        "gqa_copy_us_after": sum(float(tr2.dur_ns[g]) for g in after) / 1e3,
        "att_us_before": sum(float(tr.dur_ns[g]) for g in att) / 1e3,
        "att_us_after": sum(float(tr2.dur_ns[g]) for g in att2) / 1e3,
        "cudnn_us": statistics.median(float(tr2.dur_ns[g]) / 1e3 for g in cudnn),
    }


class Chapter(_chapter.Chapter):
    """:class:`_chapter.Chapter` with what only the lab notes read."""

    # --- a small model (part4-notes)

    def small_model_facts(self) -> Facts:
        t1, t8 = self.table("loop_fused_1b", "1b"), self.table("loop_fused_8b")
        f1 = [res(r)["hbm_fraction_spec"] for r in self.recs("loop_fused_1b")]
        fr = self.per["loop_fused_8b"]["frac"]
        assert max(f1) < min(fr)
        f: Facts = {
            "class_table_1b": t1.markdown(),
            "s1_frac": 100 * statistics.median(f1),
            "s8_frac": 100 * statistics.median(fr),
            "s1_kernels": statistics.median(
                decode_steps(r.trace())[0].kernels for r in self.recs("loop_fused_1b")
            ),
            "s8_kernels": statistics.median(self.per["loop_fused_8b"]["kernels"]),
        }
        b1, b8 = gemv_bytes(self.shapes["1b"]), gemv_bytes(self.shapes["8b"])
        for c in ("o", "down", "qkv"):
            f[f"s1_{c}_gbs"] = t1.gbs[c]
            assert max(x.gbs[c] for x in t1.runs) < min(x.gbs[c] for x in t8.runs), (
                c
            )  # every repeat
            assert b1[c] / b8[c] < 0.3

        def other_share(t: Table) -> list[float]:
            """Per repeat: the share of the token that is not GEMVs (small kernels and the rest)."""
            return [(sum(x.t[c] for c in OTHER) + x.rest) / x.token_us for x in t.runs]

        o1, o8 = other_share(t1), other_share(t8)
        assert min(o1) > max(o8)
        f["s1_other_pct"], f["s8_other_pct"] = (
            100 * statistics.median(o1),
            100 * statistics.median(o8),
        )
        for c in OTHER:
            k = c.split(",")[0]
            f[f"s1_{k}_per_layer"], f[f"s8_{k}_per_layer"] = t1.med[c] / 16, t8.med[c] / 32
        return f


def facts(f: PageFacts) -> None:
    rec, recs, num, md = f.rec, f.recs, f.num, f.md

    def glue(facts: dict[str, Any]) -> dict[str, Any]:
        """The page's own helper: text as Markdown, anything else as a number, unconverted."""
        for key, value in facts.items():
            if isinstance(value, str):
                md(key, value)
            else:
                num(key, value)
        return facts

    C = Chapter(recs, load_definitions(COMMON)["SHAPES"])

    md("stamp", f.stamp())
    md("runs_note", C.runs_note())
    num("n_repeats", len(recs("loop_fused_8b")))
    found = glue({**C.path_facts(), **C.bound_facts(), **C.fused_facts(), **C.small_model_facts()})

    def each_repeat() -> None:  # generate() per token, and packed GQA, one repeat
        glue(
            {
                **generate_facts(
                    rec("generate_dynamic_1b"), rec("generate_static_1b"), C.shapes["1b"]
                ),
                **packed_facts(rec("loop_short_8b"), rec("loop_packed_8b")),
            }
        )

    f.repeats(each_repeat)

    # The same reading from the command line: the run the page shows (the drawn repeat).
    done = tracereader_cli(
        "summary",
        str(rec("loop_fused_8b").trace_path),
        "--bytes-per-step",
        f"{found['b8_gb'] * 1e9:.4g}",
        "--peak-tbs",
        "4.8",
        cwd=".",
        show=False,
    )
    rows = [ln.split() for ln in done.stdout.splitlines() if ln.startswith("ProfilerStep")]
    results: Any = rec("loop_fused_8b").results
    unprof = results["hbm_fraction_spec"]  # the same repeat, unprofiled
    claim(
        all(r[-3] == "balanced" for r in rows),
        "the verdict column says balanced for every step: the GPU busy 50 to 95 % of its span",
    )
    # columns: step, CPU ms, GPU busy ms, ...: the GPU busy over twice as long as the CPU worked
    claim(
        all(float(r[2].replace(",", "")) > 2 * float(r[1].replace(",", "")) for r in rows),
        "the GPU was busy for over twice the step's CPU time, so the GPU sets the pace",
    )
    claim(
        all(float(r[-1]) > unprof for r in rows),  # over busy time only
        "the rate counts only the time the step's GPU ops ran, so it is an upper estimate: "
        "above the same repeat's unprofiled share",
    )
    num("cli_frac", 100 * sorted(float(r[-1]) for r in rows)[len(rows) // 2])
    num("cli_unprof", 100 * unprof)
