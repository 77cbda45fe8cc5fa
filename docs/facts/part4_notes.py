"""Part 4's lab notes' facts (``chapters/part4-notes.md``): the evidence behind the lesson.

:func:`packed_facts` (one repeat) and :class:`Chapter`, which extends
:class:`_chapter.Chapter` with the 1B shape's account (:meth:`Chapter.small_model_facts`).

Only :mod:`tracereader`, numpy and the standard library here: no drawing, no site glue.
"""

from __future__ import annotations

import statistics

import _chapter
from _decode import OTHER, Facts, Rec, Table, decode_steps, gemv_bytes, res, token_ops

from tracereader import Trace


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
