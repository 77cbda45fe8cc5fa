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

    C = Chapter(recs, load_definitions(COMMON)["SHAPES"])

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
    md("path_table", found["path_table"])
    md("overlap_steps", found["overlap_steps"])
    md("gs1_vs", found["gs1_vs"])
    md("tuned_runs", found["tuned_runs"])
    md("o_runs", found["o_runs"])
    md("class_table", found["class_table"])
    md("class_table_1b", found["class_table_1b"])
    num("gs1_kernels", found["gs1_kernels"])
    num("gd1_kernels", found["gd1_kernels"])
    num("gsc8_sync_ms", found["gsc8_sync_ms"])
    num("gsc1_kernel_calls", found["gsc1_kernel_calls"])
    num("gsc1_copy_calls", found["gsc1_copy_calls"])
    num("gsc1_launches", found["gsc1_launches"])
    num("gd1_tps", found["gd1_tps"])
    num("gd1_tps_lo", found["gd1_tps_lo"])
    num("gd1_tps_hi", found["gd1_tps_hi"])
    num("gd1_launches", found["gd1_launches"])
    num("gs1_tps", found["gs1_tps"])
    num("gs1_tps_lo", found["gs1_tps_lo"])
    num("gs1_tps_hi", found["gs1_tps_hi"])
    num("gsc8_tps", found["gsc8_tps"])
    num("gsc8_tps_lo", found["gsc8_tps_lo"])
    num("gsc8_tps_hi", found["gsc8_tps_hi"])
    num("lc8_tps", found["lc8_tps"])
    num("lc8_tps_lo", found["lc8_tps_lo"])
    num("lc8_tps_hi", found["lc8_tps_hi"])
    num("lc8_launches", found["lc8_launches"])
    num("lf8_tps", found["lf8_tps"])
    num("lf8_tps_lo", found["lf8_tps_lo"])
    num("lf8_tps_hi", found["lf8_tps_hi"])
    num("same_tokens", found["same_tokens"])
    num("lc_diverge", found["lc_diverge"])
    num("fused_diff", found["fused_diff"])
    num("b8_gb", found["b8_gb"])
    num("b8_kv_mb", found["b8_kv_mb"])
    num("b1_gb", found["b1_gb"])
    num("b_ratio", found["b_ratio"])
    num("copy_tbs", found["copy_tbs"])
    num("copy_tbs_lo", found["copy_tbs_lo"])
    num("copy_tbs_hi", found["copy_tbs_hi"])
    num("at_copy_ms", found["at_copy_ms"])
    num("lf8_frac", found["lf8_frac"])
    num("lf8_frac_lo", found["lf8_frac_lo"])
    num("lf8_frac_hi", found["lf8_frac_hi"])
    num("lf8_ms", found["lf8_ms"])
    num("goal_pct", found["goal_pct"])
    num("cls_token_us", found["cls_token_us"])
    num("stretch_pct", found["stretch_pct"])
    num("cls_attention_us", found["cls_attention_us"])
    num("cls_norms_us", found["cls_norms_us"])
    num("cls_pointwise_us", found["cls_pointwise_us"])
    num("cls_qkv_gbs", found["cls_qkv_gbs"])
    num("cls_o_gbs", found["cls_o_gbs"])
    num("cls_gate_up_gbs", found["cls_gate_up_gbs"])
    num("cls_down_gbs", found["cls_down_gbs"])
    num("cls_lm_head_gbs", found["cls_lm_head_gbs"])
    num("gemv_us", found["gemv_us"])
    num("lost_down_us", found["lost_down_us"])
    num("lost_o_us", found["lost_o_us"])
    num("s1_frac", found["s1_frac"])
    num("s8_frac", found["s8_frac"])
    num("s1_kernels", found["s1_kernels"])
    num("s8_kernels", found["s8_kernels"])
    num("s1_o_gbs", found["s1_o_gbs"])
    num("s1_down_gbs", found["s1_down_gbs"])
    num("s1_qkv_gbs", found["s1_qkv_gbs"])
    num("s1_other_pct", found["s1_other_pct"])
    num("s8_other_pct", found["s8_other_pct"])
    num("s1_attention_per_layer", found["s1_attention_per_layer"])
    num("s8_attention_per_layer", found["s8_attention_per_layer"])
    num("s1_norms_per_layer", found["s1_norms_per_layer"])
    num("s8_norms_per_layer", found["s8_norms_per_layer"])
    num("s1_pointwise_per_layer", found["s1_pointwise_per_layer"])
    num("s8_pointwise_per_layer", found["s8_pointwise_per_layer"])

    def each_repeat() -> None:  # generate() per token, and packed GQA, one repeat
        each: dict[str, Any] = {
            **generate_facts(rec("generate_dynamic_1b"), rec("generate_static_1b"), C.shapes["1b"]),
            **packed_facts(rec("loop_short_8b"), rec("loop_packed_8b")),
        }
        md("dec_tiles", each["dec_tiles"])
        md("pre_tile", each["pre_tile"])
        md("gen_outside_names", each["gen_outside_names"])
        num("dyn_pre_kernels", each["dyn_pre_kernels"])
        num("dyn_dec_kernels", each["dyn_dec_kernels"])
        num("dyn_dec_cpu_ms", each["dyn_dec_cpu_ms"])
        num("dyn_unprof_ms", each["dyn_unprof_ms"])
        num("dec_nvjet", each["dec_nvjet"])
        num("dec_tnn", each["dec_tnn"])
        num("kv_out", each["kv_out"])
        num("eager_sync_us", each["eager_sync_us"])
        num("dyn_dtoh", each["dyn_dtoh"])
        num("dyn_dtod", each["dyn_dtod"])
        num("gen_outside_ops", each["gen_outside_ops"])
        num("gen_inside_ops", each["gen_inside_ops"])
        num("gen_outside_us", each["gen_outside_us"])
        num("fwd_ms", each["fwd_ms"])
        num("gqa_copy_kernels_before", each["gqa_copy_kernels_before"])
        num("gqa_copy_kernels_after", each["gqa_copy_kernels_after"])
        num("gqa_copy_us_before", each["gqa_copy_us_before"])
        num("gqa_copy_us_after", each["gqa_copy_us_after"])
        num("att_us_before", each["att_us_before"])
        num("att_us_after", each["att_us_after"])
        num("cudnn_us", each["cudnn_us"])

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
