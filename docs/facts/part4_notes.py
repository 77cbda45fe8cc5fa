"""Part 4's lab notes' facts (``chapters/part4-notes.md``): the evidence behind the lesson.

Every number the notes quote and every claim they make about the recordings of
``05_llm_decode`` (:func:`facts`), checked on every repeat: :class:`Chapter` extends
:class:`_chapter.Chapter` with the 1B shape's account (:meth:`Chapter.small_model_facts`);
:func:`packed_facts` and :func:`_decode.generate_facts` read one repeat each; the
command-line summary's numbers come from running it as the page shows it. Numbers are
medians over the repeats.

No drawing here; what Part 4's facts modules may read, :mod:`_part4` says.
"""

from __future__ import annotations

import statistics
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
from _part4 import EXAMPLE, shapes
from _paste import paste, paste_each_repeat
from tracesite.facts import Facts as PageFacts
from tracesite.facts import claim
from tracesite.notebook import tracereader_cli
from tracesite.words import about, beyond_spread

from tracereader import Trace

__all__ = ["EXAMPLE", "facts"]  # EXAMPLE: the recordings the facts runner reads


def packed_facts(short: Rec, packed: Rec) -> Facts:
    """Packed GQA, one repeat: the attention work per token before and after."""

    def attention_ops(r: Rec) -> tuple[Trace, list[int]]:
        tr = r.trace()
        return tr, [g for g in token_ops(tr) if "sdpa" in tr.name(g) or "attention" in tr.name(g)]

    tr, att = attention_ops(short)
    tr2, att2 = attention_ops(packed)
    sdpa = "scaled_dot_product_cudnn_attention"
    before = [g for g in token_ops(tr) if sdpa in tr.name(g)]
    after = [g for g in token_ops(tr2) if sdpa in tr2.name(g)]
    claim(
        len(after) < len(before),
        "the kernels whose names include scaled_dot_product_cudnn_attention fall in number",
    )
    claim(
        sum(tr2.dur_ns[g] for g in att2) < sum(tr.dur_ns[g] for g in att),
        "packed GQA: all attention work per token falls",
    )
    cudnn = [g for g in att2 if tr2.name(g).startswith("cudnn")]
    claim(len(cudnn) == 32, "the attention itself is cuDNN's kernel, one per layer")
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
        claim(
            max(f1) < min(fr),
            "loop_fused_1b reaches less of the specified bandwidth than loop_fused_8b, "
            "lower in every repeat",
        )
        f: Facts = {
            "class_table_1b": t1.markdown(),
            "s1_frac": 100 * statistics.median(f1),
            "s8_frac": 100 * statistics.median(fr),
            "s1_kernels": statistics.median(
                decode_steps(r.trace())[0].kernels for r in self.recs("loop_fused_1b")
            ),
            "s8_kernels": statistics.median(self.per["loop_fused_8b"]["kernels"]),
        }
        claim(about(f["s1_kernels"], f["s8_kernels"] / 2), "but runs half as many kernels")
        b1, b8 = gemv_bytes(self.shapes["1b"]), gemv_bytes(self.shapes["8b"])
        for c in ("o", "down", "qkv"):
            f[f"s1_{c}_gbs"] = t1.gbs[c]
            claim(
                beyond_spread([x.gbs[c] for x in t8.runs], [x.gbs[c] for x in t1.runs]),
                f"{c}: Inductor's GEMVs stream slower on the 1B model's smaller matrices, "
                "in every repeat",
            )
            claim(b1[c] / b8[c] < 0.3, "the 1B model's matrices hold under 0.3 of the 8B's bytes")

        def other_share(t: Table) -> list[float]:
            """Per repeat: the share of the token that is not GEMVs (small kernels and the rest)."""
            return [(sum(x.t[c] for c in OTHER) + x.rest) / x.token_us for x in t.runs]

        o1, o8 = other_share(t1), other_share(t8)
        claim(
            min(o1) > max(o8),
            "what is not a GEMV is a larger share of a 1B token than of an 8B one, in every repeat",
        )
        f["s1_other_pct"], f["s8_other_pct"] = (
            100 * statistics.median(o1),
            100 * statistics.median(o8),
        )
        for c in OTHER:
            k = c.split(",")[0]
            f[f"s1_{k}_per_layer"], f[f"s8_{k}_per_layer"] = t1.med[c] / 16, t8.med[c] / 32
            claim(
                abs(t1.med[c] / 16 - t8.med[c] / 32) <= 0.2 * t8.med[c] / 32,
                f"{c}: the small kernels cost much the same per layer at either width, each class "
                "within 20 % of the 8B's",
            )
        return f


def facts(f: PageFacts) -> None:
    rec, recs, num, md = f.rec, f.recs, f.num, f.md

    C = Chapter(recs, shapes())

    md("stamp", f.stamp())
    md("runs_note", C.runs_note())
    num("n_repeats", len(recs("loop_fused_8b")))
    found: dict[str, Any] = {
        **C.path_facts(),
        **C.bound_facts(),
        **C.fused_facts(),
        **C.small_model_facts(),
    }
    # Text as Markdown, numbers as they came (no float()), as the page's helper pasted them.
    paste(
        f,
        found,
        md="path_table overlap_steps gs1_vs tuned_runs o_runs class_table class_table_1b",
        num="gs1_kernels gd1_kernels gsc8_sync_ms gsc1_kernel_calls gsc1_copy_calls gsc1_launches "
        "gd1_tps gd1_tps_lo gd1_tps_hi gd1_launches gs1_tps gs1_tps_lo gs1_tps_hi gsc8_tps "
        "gsc8_tps_lo gsc8_tps_hi lc8_tps lc8_tps_lo lc8_tps_hi lc8_launches lf8_tps lf8_tps_lo "
        "lf8_tps_hi same_tokens lc_diverge fused_diff b8_gb b8_kv_mb b1_gb b_ratio copy_tbs "
        "copy_tbs_lo copy_tbs_hi at_copy_ms lf8_frac lf8_frac_lo lf8_frac_hi lf8_ms goal_pct "
        "cls_token_us stretch_pct cls_attention_us cls_norms_us cls_pointwise_us cls_qkv_gbs "
        "cls_o_gbs cls_gate_up_gbs cls_down_gbs cls_lm_head_gbs gemv_us lost_down_us lost_o_us "
        "s1_frac s8_frac s1_kernels s8_kernels s1_o_gbs s1_down_gbs s1_qkv_gbs s1_other_pct "
        "s8_other_pct s1_attention_per_layer s8_attention_per_layer s1_norms_per_layer "
        "s8_norms_per_layer s1_pointwise_per_layer s8_pointwise_per_layer",
    )

    paste_each_repeat(  # generate() per token, and packed GQA, one repeat
        f,
        lambda: {
            **generate_facts(rec("generate_dynamic_1b"), rec("generate_static_1b"), C.shapes["1b"]),
            **packed_facts(rec("loop_short_8b"), rec("loop_packed_8b")),
        },
        md="dec_tiles pre_tile gen_outside_names",
        num="dyn_pre_kernels dyn_dec_kernels dyn_dec_cpu_ms dyn_unprof_ms dec_nvjet dec_tnn "
        "kv_out eager_sync_us dyn_dtoh dyn_dtod gen_outside_ops gen_inside_ops gen_outside_us "
        "fwd_ms gqa_copy_kernels_before gqa_copy_kernels_after gqa_copy_us_before "
        "gqa_copy_us_after att_us_before att_us_after cudnn_us",
    )

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
