"""Part 4's final loop, class by class, and its logits check: two readings of
:class:`_chapter.Chapter`'s rows, kept apart from it to keep modules short. The chapter's
methods of the same names call them.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from _decode import (
    CHECK,
    CLASSES,
    FINAL,
    GEMV_CLASSES,
    GOAL,
    OTHER,
    Facts,
    Rec,
    calls_per_step,
    classify,
    gemv_bytes,
    lo_hi,
    res,
    tim,
    token_ops,
)
from tracesite.facts import claim

import tracereader

if TYPE_CHECKING:
    from _chapter import Chapter


# --- the final loop, class by class (the lesson; the details in part4-kernels)


def final_facts(ch: Chapter) -> Facts:
    tu = ch.table(FINAL)
    b8 = tim(ch.recs(FINAL)[0])["bytes_per_token"]["total"]
    ff = [res(r)["hbm_fraction_spec"] for r in ch.recs(FINAL)]
    tpsf = [res(r)["tokens_per_s"] for r in ch.recs(FINAL)]
    claim(
        min(ff) >= GOAL and min(tpsf) >= GOAL * ch.spec_tbs * 1e12 / b8,
        "the final loop reads the bytes above the goal's share of the bandwidth, in every repeat",
    )
    nb = gemv_bytes(ch.shapes["8b"])
    floor_us = (sum(32 * nb[c] for c in GEMV_CLASSES) + nb["lm_head"]) / (ch.spec_tbs * 1e12) * 1e6
    f: Facts = {
        "class_table_final": tu.markdown(),
        "final_frac": 100 * statistics.median(ff),
        "final_frac_lo": 100 * min(ff),
        "final_frac_hi": 100 * max(ff),
        "final_fracc": 100 * statistics.median(res(r)["hbm_fraction_copy"] for r in ch.recs(FINAL)),
        "f_token_us": tu.token,
        "f_gemv_over_us": sum(tu.med[c] for c in tu.gbs) - floor_us,
        "f_small_us": sum(tu.med[c] for c in OTHER),
        "f_rest_us": tu.rest,
        "f_gemv_us": sum(tu.med[c] for c in tu.gbs),
        "f_floor_us": floor_us,
        "f_gemv_pct": 100 * sum(tu.med[c] for c in tu.gbs) / tu.token,
        "f_lost_us": tu.token - floor_us,
        "f_ms": statistics.median(res(r)["ms_per_token"] for r in ch.recs(FINAL)),
    }
    f.update({f"f_{c}_gbs": tu.gbs[c] for c in tu.gbs})
    f.update({f"f_{c.split(',')[0]}_us": tu.med[c] for c in CLASSES})
    for x in tu.runs:  # every claim below, on every repeat
        g = x.gbs
        claim(
            min(g[c] for c in ("gate_up", "down", "lm_head")) > max(g["qkv"], g["o"]),
            "The large GEMVs stream faster than the small ones, in every repeat",
        )
        claim(g["o"] < g["qkv"], "the output projection streams slower than q/k/v")
        small, over = sum(x.t[c] for c in OTHER), x.gemvs - floor_us
        claim(
            small > over > x.rest > 0,
            "The N µs between them come in three parts, largest first in every repeat",
        )
    copies = []
    for r in ch.recs(FINAL):  # a copy kernel in each layer, between its GEMVs
        tr = r.trace()
        ops = token_ops(tr)
        c = [g for g in ops if tr.name(g).startswith("triton_poi_fused_add_copy_")]
        gv = [g for g in ops if tr.name(g) == "gemv_kernel"]
        starts = [tr.ts_ns[g] for g in gv[0:-1:4]] + [tr.ts_ns[gv[-1]]]
        claim(
            len(c) == 32
            and all(a < tr.ts_ns[g] < b for g, a, b in zip(c, starts, starts[1:], strict=False)),
            "a copy kernel in each layer, triton_poi_fused_add_copy_…, between its GEMVs",
        )
        copies.append(sum(float(tr.dur_ns[g]) for g in c) / 1e3)
    f["add_copy_us"] = lo_hi(copies)
    # The layer pictures: one attention kernel of ours where the fused loop ran three,
    # Inductor's mask kernel, a memset and cuDNN's kernel; in the final loop Inductor
    # computes the mask (``le``) in rotary-embedding kernels (``cos``), counted as
    # pointwise. The small kernels around it no fewer and no shorter than in the fused loop.
    t8 = ch.table("loop_fused_8b")
    claim(
        {x.n["attention"] for x in tu.runs} == {32} and {x.n["attention"] for x in t8.runs} == {96},
        "one attention kernel of ours per layer in place of the fused loop's three",
    )
    for r in ch.recs("loop_fused_8b"):
        tr = r.trace()
        att = [tr.name(g) for c, _, g in classify(tr, token_ops(tr), 32) if c == "attention"]
        claim(
            all(
                a.startswith("triton_poi_fused__scaled_dot_product_cudnn_attention")
                and "le" in a.split("_")
                and b == "Memset (Device)"
                and c.startswith("cudnn")
                for a, b, c in zip(att[::3], att[1::3], att[2::3], strict=True)
            ),
            "the fused loop's attention: Inductor's mask kernel, a memset and cuDNN's kernel",
        )
    for r in ch.recs(FINAL):
        tr = r.trace()
        rows = classify(tr, token_ops(tr), 32)
        claim(
            all(c != "attention" or tr.name(g) == "attention_kernel" for c, _, g in rows),
            "The attention class holds only that kernel here",
        )
        mask = [g for c, _, g in rows if {"le", "cos"} <= set(tr.name(g).split("_"))]
        claim(
            len(mask) >= 32 and all(c == "pointwise, copies" for c, _, g in rows if g in mask),
            "Inductor now computes the mask inside rotary-embedding kernels, counted as "
            "pointwise work",
        )
    claim(
        min(x.n["norms, argmax"] + x.n["pointwise, copies"] for x in tu.runs)
        >= max(x.n["norms, argmax"] + x.n["pointwise, copies"] for x in t8.runs),
        "the small kernels are no fewer than before",
    )
    t8.below(
        tu,
        "small",
        "the final loop's small kernels take longer than the fused loop's, in every repeat",
    )
    return f


# --- the final loop's logits, and a host read per token (the logits-check recording)


def logits_facts(ch: Chapter) -> Facts:
    """The final loop's logits at every decoded position against an fp32 reference of the
    same weights (teacher-forced on the loop's tokens), and the loop timed with and without
    a per-token ``.item()``, from the logits check's recording. (Its ``bf16_*`` fields are
    left out: that forward also had its rotary frequencies cast to bf16.)"""
    rs = ch.recs(CHECK)
    f: Facts = {}
    for r in rs:
        x = res(r)
        n = len(x["positions"])
        claim(
            n == tim(r)["new_tokens"] - 1
            and x["weights_match"]
            and x["graphs_compiled_while_timed"] == 0,
            "the check keeps the logits at every decoded position, the LM head's weights "
            "match, and nothing recompiled",
        )
        claim(
            all(len(x[k]) == n for k in ("max_abs_diff", "rel_err", "argmax_agrees", "ref_gap")),
            "the check compares the logits at every decoded position",
        )
    per = [res(r) for r in rs]
    fused = max(tim(r)["fused_logits_max_abs_diff"] for r in ch.recs("loop_fused_8b"))
    for (
        x
    ) in per:  # where the loop's token is not fp32's top token, the two are within the loop's error
        claim(
            x["prefill_agrees"] and x["weights_match"],
            "The prompt's last position, which the eager prefill computes, agrees in every repeat",
        )
        flips = [
            (g, d)
            for g, d, ok in zip(x["ref_gap"], x["max_abs_diff"], x["argmax_agrees"], strict=True)
            if not ok
        ]
        claim(
            all(0 < g < d for g, d in flips),
            "At each of the others, fp32's margin was smaller than the loop's own largest "
            "difference there",
        )
        claim(
            0.5 * fused < statistics.median(x["max_abs_diff"]) < 2 * fused,
            "the loop's median largest difference is of that size, within a factor of two",
        )
    for (
        r
    ) in rs:  # the profiled loop reads every token: one synchronize per token, then the GPU idles
        tr = r.trace()
        claim(
            set(calls_per_step(tr, "cudaStreamSynchronize")) == {1},
            "the loop with a host read synchronizes once per token",
        )
        claim(
            any(g.cause == "sync" for g in tracereader.gaps(tr, min_gap_us=100)),
            "the GPU idled between tokens, the gap tracereader.gaps attributes to the synchronize",
        )
    item = [x["item_us_per_token"] for x in per]
    claim(min(item) > 0, "a token.item() after each step adds time per token, in every repeat")
    # Round by round, the read was not slower in every one on the H100 (one round of
    # one repeat): only part4_kernels, on the H200's recordings, claims every round.
    rel = [e for x in per for e in x["rel_err"]]
    agree = [sum(x["argmax_agrees"]) for x in per]
    gaps = [
        g for x in per for g, ok in zip(x["ref_gap"], x["argmax_agrees"], strict=True) if not ok
    ]
    f.update(
        lg_positions=len(per[0]["positions"]),
        lg_first=per[0]["positions"][0],
        lg_last=per[0]["positions"][-1],
        lg_rel_max=max(rel),
        lg_rel_med=statistics.median(rel),
        lg_abs_max=max(e for x in per for e in x["max_abs_diff"]),
        lg_agree=statistics.median(agree),
        lg_agree_lo=min(agree),
        lg_agree_hi=max(agree),
        lg_n_disagree=len(gaps),
        lg_gap_max=max(gaps) if gaps else 0.0,
        lg_prefill_all=all(x["prefill_agrees"] for x in per),
        item_us=statistics.median(item),
        item_us_lo=min(item),
        item_us_hi=max(item),
        item_tps=statistics.median(1e3 / x["ms_per_token_item"] for x in per),
        check_tps=statistics.median(x["tokens_per_s"] for x in per),
        fused_diff=fused,
        lg_abs_med=statistics.median(e for x in per for e in x["max_abs_diff"]),
        l2_mib=(ch.l2_bytes() or 0) / 2**20,
        read_gap_ms=statistics.median(read_gaps := [_read_gap_ms(r) for r in rs]),
        read_gap_drawn_ms=read_gaps[0],  # the first repeat's: the one the page draws
    )
    rows = [
        f"| {k + 1} | {statistics.median(x['rel_err']):.3f} | {max(x['rel_err']):.3f} | "
        f"{statistics.median(x['max_abs_diff']):.2f} | {max(x['max_abs_diff']):.2f} | "
        f"{sum(x['argmax_agrees'])} of {len(x['positions'])} | "
        f"{max((g for g, ok in zip(x['ref_gap'], x['argmax_agrees'], strict=True) if not ok), default=0):.3f} | "
        f"{x['ms_per_token']:.3f} | {x['ms_per_token_item']:.3f} |"
        for k, x in enumerate(per)
    ]
    f["lg_table"] = (
        "| repeat | relative error, median | relative error, largest | largest difference, median "
        "| largest difference, largest | top token agrees | fp32 margin where not, largest "
        "| ms per token | ms per token with `.item()` |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows)
    )
    return f


def _read_gap_ms(r: Rec) -> float:
    """The longest idle gap of a repeat of the loop with a host read, caused by the sync."""
    return max(
        (g.end_ns - g.start_ns) / 1e6
        for g in tracereader.gaps(r.trace(), min_gap_us=100)
        if g.cause == "sync"
    )
