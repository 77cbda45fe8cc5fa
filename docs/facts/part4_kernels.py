"""Part 4's kernels notes' facts (``chapters/part4-kernels.md``): kernels of our own,
toward the bound.

Every number the notes quote and every claim they make about the recordings of
``05_llm_decode`` (:func:`facts`), checked on every repeat of every session kept.
:class:`Chapter` extends :class:`_sessions.Chapter` (and through it
:class:`_chapter.Chapter`) with what only these notes read: the two further attempts on
the fused loop, the GEMV kernels of our own and their settings sweep, the norms folded
into the GEMVs, and the attention kernel of our own with its sweep and the untuned row.

No drawing here; what Part 4's facts modules may read, :mod:`_part4` says.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
from _attention_kernels import AttentionChapter
from _decode import (
    CHECK,
    GEMV_CLASSES,
    Facts,
    Rec,
    Run,
    Table,
    days,
    lo_hi,
    res,
    rng,
    tim,
    token_ops,
)
from _part4 import EXAMPLE, shapes
from _paste import paste
from _sessions import KROWS, slow_gemv
from tracesite.facts import Facts as PageFacts
from tracesite.facts import claim
from tracesite.words import beyond_spread, most

from tracereader import Trace

__all__ = ["EXAMPLE", "facts"]  # EXAMPLE: the recordings the facts runner reads

#: The variants that sweep the kernels' launch settings.
GEMV_SWEEP = "gemv_settings_8b"
#: The settings ``gemv_op`` launches ``gemv_kernel`` with, as the page quotes them from the
#: example (``literalinclude``): columns per step (for the other GEMVs, for gate/up) and warps.
#: The recordings show the warps (the block's threads), not the columns.
GEMV_BLOCK_K, GEMV_WARPS = (1024, 2048), 8


def token_gaps_us(tr: Trace, step: str = "ProfilerStep#2") -> np.ndarray:
    """The GPU's idle time between consecutive GPU ops of one step, µs each (profiled)."""
    ops = token_ops(tr, step)
    ends = np.maximum.accumulate(tr.end_ns[ops])
    return np.clip((tr.ts_ns[ops][1:] - ends[:-1]) / 1e3, 0, None)


class Chapter(AttentionChapter):
    """:class:`_sessions.Chapter` with what only the kernels notes read."""

    # --- further attempts on the fused loop (part4-kernels)

    def attempt_facts(self) -> Facts:
        t8, ta, tb = (
            self.table("loop_fused_8b"),
            self.table("loop_act_8b"),
            self.table("loop_act_attn_8b"),
        )
        claim(
            beyond_spread([x.t["down"] for x in t8.runs], [x.t["down"] for x in ta.runs]),
            "computing the activation once speeds up the down GEMV in every repeat",
        )
        claim(
            beyond_spread(
                [x.t["pointwise, copies"] for x in ta.runs],
                [x.t["pointwise, copies"] for x in t8.runs],
            ),
            "the custom op adds pointwise work, in every repeat",
        )
        # Computing the activation once is faster in the median. In every repeat too in the
        # 2026-12-02 recording, but not in the one before (its repeats overlapped the fused
        # loop's), so the page claims the median only.
        gain = statistics.median(self.per["loop_act_8b"]["tps"]) / statistics.median(
            self.per["loop_fused_8b"]["tps"]
        )
        claim(gain > 1, "computing the activation once gives more tokens/s in the median")
        tps_a, tps_b = self.per["loop_act_8b"]["tps"], self.per["loop_act_attn_8b"]["tps"]
        claim(
            not beyond_spread(tps_b, tps_a) and not beyond_spread(tps_a, tps_b),
            "the attention-as-reductions row shows no difference beyond the spread",
        )
        claim(
            0 < t8.med["attention"] - tb.med["attention"] < 0.02 * tb.token,
            "attention as reductions against cuDNN's kernel: a saving under 2 % of a token",
        )
        # The activation's extra kernels per layer: two eager ones (silu, mul) and two Inductor ones.
        tr = self.recs("loop_act_8b")[0].trace()
        ops = token_ops(tr)
        claim(
            sum("vectorized_elementwise_kernel" in tr.name(g) for g in ops) == 64,
            "the custom op adds its two eager kernels per layer, silu and the multiply",
        )
        claim(
            sum(tr.name(g).startswith("triton_poi") and "silu_mul" in tr.name(g) for g in ops)
            == 64,
            "and two Inductor kernels per layer that prepare its inputs",
        )
        gu = [x.t["gate_up"] for x in ta.runs]
        claim(
            max(gu) > 1.02 * min(gu),
            "the gate/up GEMV's time varies from repeat to repeat: Inductor tunes it in each process",
        )
        # The gate/up GEMV, not aimed at, moved too: its median against the fused loop's, by at
        # least the page's 1 µs; the page gives the amount and its share of the saving.
        gu8 = [x.t["gate_up"] for x in t8.runs]
        gu_drop = statistics.median(gu8) - statistics.median(gu)
        claim(
            abs(gu_drop) >= 1,
            "the gate/up GEMV, which this change was not aimed at, moved too (its median)",
        )
        saving = t8.token - ta.token
        claim(saving > 0, "computing the activation once saves time per token")
        rows = []
        for label, m, name in (
            ("fused projections", t8.med, "loop_fused_8b"),
            ("+ activation computed once", ta.med, "loop_act_8b"),
            ("+ attention as reductions", tb.med, "loop_act_attn_8b"),
        ):
            rows.append(
                f"| {label} | {m['gate_up']:,.0f} | {m['down']:,.0f} | {m['attention']:,.0f} | "
                f"{m['pointwise, copies']:,.0f} | {rng(self.per[name]['tps'])} |"
            )
        return {
            "act_gain_pct": 100 * (gain - 1),
            "act_down_gbs": ta.gbs["down"],
            "act_down_us": ta.med["down"],
            "act_pointwise_us": ta.med["pointwise, copies"],
            "lf8_pointwise_us": t8.med["pointwise, copies"],
            "attn_red_us": tb.med["attention"],
            "act_slow_gu_us": max(gu),
            "act_fast_gu_us": min(gu),
            "fused_slow_gu_us": max(gu8),
            "fused_fast_gu_us": min(gu8),
            "act_gu_moved": f"its median fell by {gu_drop:,.0f} µs, {100 * gu_drop / saving:.0f} % of "
            f"the token's saving of {saving:,.0f} µs"
            if gu_drop > 0
            else f"its median rose by {-gu_drop:,.0f} µs",
            "act_vs": "faster in every repeat"
            if self.beats("loop_act_8b", "loop_fused_8b")
            else "though some repeats overlap the fused loop's",
            "attempt_table": "| loop | gate/up µs | down µs | attention µs | pointwise, copies µs | tokens/s |\n"
            "|---|---:|---:|---:|---:|---:|\n" + "\n".join(rows),
        }

    # --- GEMV kernels of our own (part4-kernels)

    def gemv_kernel_facts(self) -> Facts:
        # The sweep variant times every setting on every GEMV, in every repeat: per GEMV, the
        # fixed settings' distance from the fastest, how many times as fast as cuBLAS, and
        # whether another setting won in every repeat.
        sweeps = [tim(r)["gemvs"] for r in self.recs(GEMV_SWEEP)]
        labels = {"qkv": "q/k/v", "o": "output", "gate_up": "gate/up", "down": "down"}
        labels["lm_head"] = "LM head"
        gaps, per_gemv, others = [], [], []
        for name, label in labels.items():
            want = (GEMV_BLOCK_K[name == "gate_up"], GEMV_WARPS)
            ratios, won = [], []
            for sw in sweeps:
                g = sw[name]
                chosen = next(t for t in g["settings"] if (t["BLOCK_K"], t["num_warps"]) == want)
                best = min(g["settings"], key=lambda t: t["us"])
                gaps.append(chosen["us"] / best["us"] - 1)
                ratios.append(g["cublas_us"] / chosen["us"])
                won.append((best["BLOCK_K"], best["num_warps"]))
            claim(
                min(ratios) > 1,
                "our GEMV kernel ran faster than cuBLAS on each GEMV, in every repeat",
            )
            per_gemv.append(f"{label} {lo_hi(ratios, '{:.2f}')}")
            if len(set(won)) == 1 and won[0] != want:
                others.append(f"{label} ({won[0][0]:,} columns, {won[0][1]} warps)")
        claim(
            all(len(sw) == len(labels) for sw in sweeps) and max(gaps) < 0.05,
            "the fixed settings come within 5 % of the fastest setting on every GEMV",
        )
        f: Facts = {
            "sweep_gap": 100 * max(gaps),
            "sweep_vs_cublas": "; ".join(per_gemv),
            "sweep_others": (
                "no other setting won any GEMV in every repeat"
                if not others
                else "another setting won in every repeat for "
                + (", ".join(others[:-1]) + " and " if len(others) > 1 else "")
                + others[-1]
            ),
            "sweep_repeats": len(self.recs(GEMV_SWEEP)),
        }
        t8, tb, tk = (
            self.table("loop_fused_8b"),
            self.table("loop_act_attn_8b"),
            self.table("loop_kernels_8b"),
        )
        ts, tn = self.table("loop_kernels_sdpa_8b"), self.table("loop_norms_8b")
        shape = self.shapes["8b"]
        for v in KROWS:
            for r in self.recs(v):
                tr = r.trace()
                ops = token_ops(tr)
                gemvs = [g for g in ops if tr.name(g) == "gemv_kernel"]
                claim(len(gemvs) == 4 * 32 + 1, "every GEMV replaced: every GEMV is ours")
                claim(
                    not any("silu" in tr.name(g) for g in ops),
                    "the activation moved into the gate/up kernel: no activation kernel",
                )
                # Launched as the page says: one program per output row, 8 warps each.
                claim(
                    [int(tr.extra["grid"][g]) for g in gemvs[:4]] == gemv_rows(shape),
                    "one program per output row",
                )
                claim(
                    {int(tr.extra["block"][g]) for g in gemvs} == {32 * GEMV_WARPS},
                    "our GEMV kernel runs 8 warps per program",
                )
        f["spread_fused"] = max(t8.spread_pct(c) for c in GEMV_CLASSES)
        f["spread_final"] = max(tk.spread_pct(c) for c in GEMV_CLASSES)
        claim(
            f["spread_final"] < 3 < 10 < f["spread_fused"],
            "with the settings fixed, the GEMVs' speed stops wandering between processes",
        )
        for c in ("qkv", "o"):  # ours against Inductor's, in every repeat
            claim(
                beyond_spread([x.t[c] for x in t8.runs], [x.t[c] for x in tk.runs]),
                "our q/k/v and output GEMVs beat Inductor's in the fused loop, in every repeat",
            )
            f[f"own_{c}"], f[f"ind_{c}"] = tk.lohi(c), t8.lohi(c)
        for c in ("gate_up", "down"):
            f[f"own_{c}"], f[f"ind_{c}"] = tk.lohi(c), tb.lohi(c)
        # Against the row above: GEMVs faster in every repeat, the speed set by the attention reductions.
        f["own_gemvs"], f["ind_gemvs"] = tk.below(
            tb, "gemvs", "all its GEMVs together take less than in the row above, in every repeat"
        )
        tps_k = self.per["loop_kernels_8b"]["tps"]
        slowk = min(range(len(tps_k)), key=lambda i: tps_k[i])
        att_k = [x.t["attention"] for x in tk.runs]
        n_fast = sum(x > max(self.per["loop_act_attn_8b"]["tps"]) for x in tps_k)
        claim(n_fast > 0, "a repeat or more ran faster than every repeat of the row above")
        if n_fast == len(tps_k):
            f["k_vs_above"] = "every current repeat ran faster than every repeat of the row above"
        else:  # the slowest held back by its attention
            claim(
                att_k[slowk] == max(att_k) and max(att_k) > 2 * min(att_k),
                "its slowest repeat did not beat the row above, because of its attention",
            )
            f["k_vs_above"] = (
                f"{n_fast} of its repeats ran faster than every repeat of the row above, and "
                f"its slowest ({tps_k[slowk]:.0f} tokens/s) did not, because of its attention "
                f"({att_k[slowk]:,.0f} µs per token; next bullet)"
            )
        f.update(
            att_attention_k=tk.lohi("attention"),
            att_attention_aa=tb.lohi("attention"),
            att_attention_s=ts.lohi("attention"),
        )
        n_red = sum(x.t["attention"] < min(u.t["attention"] for u in ts.runs) for x in tk.runs)
        claim(
            0 < n_red < 3
            and all(x.t["attention"] != u.t["attention"] for x in tk.runs for u in ts.runs),
            "cuDNN's attention took more than the reductions in some, not all, of their 3 repeats",
        )
        f["k_red_faster"] = n_red
        # The first attention kernel of each layer now also computes q's rotary embedding.
        for r in self.recs("loop_kernels_8b"):
            trk = r.trace()
            scores = [
                trk.name(g)
                for g in token_ops(trk)
                if trk.name(g).startswith("triton_red") and "cos" in trk.name(g)
            ]
            claim(
                len(scores) == 32 and all("sum" in n for n in scores),
                "each layer's first attention kernel has cos next to its sum: q's rotary embedding",
            )
        f["scores_kernel"] = f"`{scores[0][: scores[0].index('_sum') + 4]}…`"
        for r in self.recs("loop_act_attn_8b"):
            tra = r.trace()
            claim(
                not any(
                    tra.name(g).startswith("triton_red") and "cos" in tra.name(g)
                    for g in token_ops(tra)
                ),
                "in the row above no attention reduction computes the rotary embedding",
            )

        def softmax_kernels(r: Rec) -> tuple[float, int, int]:
            tr = r.trace()
            ks = [
                g
                for g in token_ops(tr)
                if tr.name(g).startswith("triton_red") and "softmax" in tr.name(g)
            ]
            claim(len(ks) == 32, "one softmax kernel per layer")
            return (
                sum(float(tr.dur_ns[g]) for g in ks) / 1e3,
                int(tr.extra["grid"][ks[0]]),
                int(tr.extra["block"][ks[0]]),
            )

        sm_aa = [softmax_kernels(r) for r in self.recs("loop_act_attn_8b")]
        sm_k = [softmax_kernels(r) for r in self.recs("loop_kernels_8b")]
        claim(
            len({(g, b) for _, g, b in sm_k}) == len(sm_k),
            "the softmax kernel launched differently in each repeat",
        )
        claim(
            max(u for u, *_ in sm_k) > 2 * min(u for u, *_ in sm_k),
            "the softmax kernel's time per token more than doubled between repeats",
        )
        claim(
            most(max(u for u, *_ in sm_k) - min(u for u, *_ in sm_k), max(att_k) - min(att_k)),
            "most of the difference between repeats is in the softmax kernel",
        )
        f["sm_k_runs"] = "; ".join(
            f"{u:,.0f} µs on {g:,} blocks of {b} threads" for u, g, b in sm_k
        )
        f["sm_aa"] = lo_hi([u for u, *_ in sm_aa])
        f.update(self._norms_facts(t8, tk, ts, tn))
        return f

    def _norms_facts(self, t8: Table, tk: Table, ts: Table, tn: Table) -> Facts:
        """The norms row against the cuDNN row: the norm kernels go, the gaps shrink, the GEMVs
        that now carry a norm or a residual slow down, in every repeat."""
        f: Facts = {}
        for c in GEMV_CLASSES:
            claim(
                beyond_spread([x.t[c] for x in tn.runs], [x.t[c] for x in ts.runs]),
                f"{c}: every GEMV class got slower, in every repeat",
            )
            f[f"n_{c}"], f[f"s_{c}"] = tn.lohi(c), ts.lohi(c)
        norms = "norms, argmax"
        claim(
            max(x.t[norms] for x in tn.runs) < 0.25 * min(x.t[norms] for x in ts.runs),
            "the norms class falls to under a quarter (the final norm and the argmax are left)",
        )
        f.update(n_norms=tn.lohi(norms), s_norms=ts.lohi(norms))
        # Our GEMVs left the norm kernels their scaling: the same count of norm kernels per
        # token as in the fused loop, each doing more. Grew in every repeat of which row?
        claim(
            {x.n[norms] for x in tk.runs + ts.runs} == {x.n[norms] for x in t8.runs},
            "our GEMVs leave the same count of norm kernels per token as the fused loop",
        )
        grew = [
            (label, t)
            for label, t in (("the GEMV-kernel row", tk), ("the cuDNN row", ts))
            if min(x.t[norms] for x in t.runs) > max(x.t[norms] for x in t8.runs)
        ]
        claim(grew, "our kernel undid the fusion: the norms class grew, in every repeat of a row")
        f["norms_grew"] = (
            f"the norms class grew from {t8.lohi(norms)} µs per token in the fused loop to "
            + " and ".join(f"{t.lohi(norms)} in {label}" for label, t in grew)
        )
        f["n_rest"], f["s_rest"] = tn.below(
            ts, "rest", "the rest of the token falls, in every repeat"
        )
        ts.below(tn, "gemvs", "the GEMVs together got slower, in every repeat")
        pw = "pointwise, copies"

        def med(runs: list[Run], key: Callable[[Run], float]) -> float:
            return statistics.median(map(key, runs))

        d_gemv = med(tn.runs, lambda x: x.gemvs) - med(ts.runs, lambda x: x.gemvs)
        d_norm = med(ts.runs, lambda x: x.t[norms]) - med(tn.runs, lambda x: x.t[norms])
        d_rest = med(ts.runs, lambda x: x.rest) - med(tn.runs, lambda x: x.rest)
        claim(
            d_gemv > 0 and d_norm > 0 and d_rest > 0,
            "in medians the GEMVs took more, the norm kernels and the rest of the token less",
        )
        d_token = med(ts.runs, lambda x: x.token_us) - med(tn.runs, lambda x: x.token_us)
        d_pw = med(tn.runs, lambda x: x.t[pw]) - med(ts.runs, lambda x: x.t[pw])
        tok_s = med(ts.runs, lambda x: x.token_us)
        claim(d_token > 0, "the median token, timed without the profiler, took less")
        per_kernel_rest = [x.rest / sum(x.n.values()) for x in tn.runs]
        # The profiled token's own gaps between consecutive GPU ops, median per repeat: each
        # larger than the rest per kernel, so without the profiler the gaps, the kernels or
        # both were shorter.
        gap_med = []
        for r, x in zip(self.recs("loop_norms_8b"), tn.runs, strict=True):
            gaps = token_gaps_us(r.trace())
            gap_med.append(float(np.median(gaps)))
            claim(
                0 < x.rest < float(gaps.sum()),
                "the rest is less than the sum of the profiled token's gaps between kernels",
            )
        claim(
            max(per_kernel_rest) < min(gap_med),
            "the median gap is larger than the rest per kernel, in every repeat",
        )
        # The groups of processes (slow_gemv, by the copy rate each measured): the GEMVs
        # compared within a group.
        n_slow = [slow_gemv(res(r)) for r in self.recs("loop_norms_8b")]
        s_slow = [slow_gemv(res(r)) for r in self.recs("loop_kernels_sdpa_8b")]
        same = [
            xn.gemvs - xs.gemvs
            for xn, a in zip(tn.runs, n_slow, strict=True)
            for xs, b in zip(ts.runs, s_slow, strict=True)
            if a == b
        ]
        claim(
            same and min(same) > 0,
            "within a group of processes, repeat against repeat, the norms row's GEMVs took more",
        )
        f["norms_groups"] = (
            "Every current repeat of both rows ran in the same one of the two groups of "
            "processes described below (the faster-GEMV one), so that grouping does not "
            "explain these differences"
            if sum(n_slow) == sum(s_slow) == 0
            else "Of the two groups of processes described below, the slower-GEMV one holds "
            f"{sum(n_slow)} of the norms row's {len(n_slow)} repeats and {sum(s_slow)} of the "
            f"cuDNN row's {len(s_slow)}"
            + (
                ""
                if n_slow == s_slow
                else f"; repeat against repeat within a group, the GEMVs took {lo_hi(same)} µs more"
            )
        )
        # Worded from the recording: the two rows may come from different sessions.
        n8, s8 = self.per["loop_norms_8b"]["tps"], self.per["loop_kernels_sdpa_8b"]["tps"]
        earlier = [x["tokens_per_s"] for ss in self.sess["loop_kernels_sdpa_8b"][:-1] for x in ss]
        if self.beats("loop_norms_8b", "loop_kernels_sdpa_8b"):
            f["norms_vs_sdpa"] = "faster than every repeat of the cuDNN row's current session, " + (
                f"if only just ({min(n8):.1f} against {max(s8):.1f})"
                if min(n8) < 1.01 * max(s8)
                else f"by {100 * (min(n8) / max(s8) - 1):.0f} % or more"
            )
            f["norms_vs_sdpa"] += (
                f", and about as fast as the best repeat of its earlier sessions ({min(n8):.1f} against {max(earlier):.1f})"
                if max(earlier) < min(n8) < 1.01 * max(earlier)
                else f", and faster than the best repeat of its earlier sessions ({min(n8):.1f} against {max(earlier):.1f})"
                if max(earlier) < min(n8)
                else f", but not than every repeat of its earlier sessions (the best ran at {max(earlier):.1f})"
            )
        elif self.beats("loop_kernels_sdpa_8b", "loop_norms_8b"):
            f["norms_vs_sdpa"] = "slower in every repeat"
        else:
            f["norms_vs_sdpa"] = "the repeats overlap: no difference beyond the spread"
        session_medians = [
            statistics.median(x["tokens_per_s"] for x in ss)
            for ss in self.sess["loop_kernels_sdpa_8b"]
        ]
        n_days, s_days = (
            days(r.env["recorded_at"] for r in self.recs(v))
            for v in ("loop_norms_8b", "loop_kernels_sdpa_8b")
        )
        f["norms_days"] = (
            ""
            if n_days == s_days
            else " The two rows were recorded on different days ("
            + ", ".join(n_days)
            + " and "
            + ", ".join(s_days)
            + "), and the medians of the cuDNN row's own sessions (table below) were "
            + lo_hi(session_medians, "{:.1f}")
            + " tokens/s."
        )
        f.update(
            d_gemv=d_gemv,
            d_norm=d_norm,
            d_rest=d_rest,
            d_token=d_token,
            d_token_pct=100 * d_token / tok_s,
            d_pw=(
                f"{abs(d_pw):,.0f} µs {'more' if d_pw > 0 else 'less'} (in every repeat)"
                if min(x.t[pw] for x in tn.runs) > max(x.t[pw] for x in ts.runs)
                or max(x.t[pw] for x in tn.runs) < min(x.t[pw] for x in ts.runs)
                else f"about the same ({tn.lohi(pw)} µs in its repeats, against {ts.lohi(pw)} "
                "in the cuDNN row's)"
            ),
            n_rest_per_kernel=max(per_kernel_rest),
            n_gap_med=lo_hi(gap_med, "{:.2f}"),
        )

        def gemv_launch(r: Rec, pos: int) -> tuple[int, float]:
            """Registers per thread and estimated occupancy of layer 5's GEMV number ``pos``."""
            tr = r.trace()
            g = [g for g in token_ops(tr) if tr.name(g) == "gemv_kernel"][4 * 5 + pos]
            return int(tr.extra["registers"][g]), float(tr.extra["occupancy_pct"][g])

        occupancy_fell = {}
        for pos, c in enumerate(GEMV_CLASSES):
            ns_ = {gemv_launch(r, pos) for r in self.recs("loop_norms_8b")}
            ss_ = {gemv_launch(r, pos) for r in self.recs("loop_kernels_sdpa_8b")}
            claim(
                len(ns_) == len(ss_) == 1,
                "each GEMV's registers and occupancy are the same in every repeat of a row",
            )
            (n_launch,), (s_launch,) = ns_, ss_
            occupancy_fell[c] = n_launch[1] < s_launch[1]
            f[f"launch_n{pos}"] = "{} registers, {:.0f} %".format(*n_launch)
            f[f"launch_s{pos}"] = "{} registers, {:.0f} %".format(*s_launch)
            f[f"slow_{c}_pct"] = 100 * (tn.med[c] / ts.med[c] - 1)
        # Occupancy does not explain the slowdowns: it fell for gate/up and down only, and
        # those slowed less than q/k/v and o, whose occupancy did not change.
        claim(
            [c for c in GEMV_CLASSES if occupancy_fell[c]] == ["gate_up", "down"],
            "the kernels' events show the occupancy fall for gate/up and down only",
        )
        claim(
            f["slow_gate_up_pct"] < f["slow_down_pct"] < min(f["slow_qkv_pct"], f["slow_o_pct"]),
            "yet q/k/v and the output projection slowed the most, gate/up the least",
        )
        rows = []
        for label, name in (
            ("activation once, attention as reductions", "loop_act_attn_8b"),
            ("GEMV kernels of our own", "loop_kernels_8b"),
            ("+ cuDNN attention again", "loop_kernels_sdpa_8b"),
            ("+ norms in the GEMVs", "loop_norms_8b"),
        ):
            t = self.table(name)
            m = t.med
            rows.append(
                f"| {label} | {m['gate_up']:,.0f} | {m['down']:,.0f} | {m['qkv'] + m['o']:,.0f} | "
                f"{m['attention']:,.0f} | {m[norms]:,.0f} | {m[pw]:,.0f} | {t.rest:,.0f} | "
                f"{statistics.median(self.per[name]['kernels']):.0f} | {rng(self.per[name]['tps'])} |"
            )
        f["kernel_table"] = (
            "| loop | gate/up | down | q/k/v + o | attention | norms, argmax | pointwise, copies "
            "| rest | kernels | tokens/s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            + "\n".join(rows)
        )
        return f


def gemv_rows(shape: dict[str, int]) -> list[int]:
    """The output rows of one layer's four GEMVs (q/k/v, output, gate/up with the
    activation, down), in the order a token launches them: ``gemv_kernel`` runs one program
    per output row."""
    q, kv = (
        shape["num_attention_heads"] * shape["head_dim"],
        shape["num_key_value_heads"] * shape["head_dim"],
    )
    h, i = shape["hidden_size"], shape["intermediate_size"]
    return [q + 2 * kv, h, i, h]


def facts(f: PageFacts) -> None:
    rec, recs, num, md = f.rec, f.recs, f.num, f.md

    C = Chapter(recs, shapes(), f.sessions)

    md("stamp", f.stamp())
    md("runs_note", C.runs_note())
    check: Any = rec(CHECK).timings()
    num("new_tokens_check", check["new_tokens"])
    num("check_rounds", len(check["ms_per_token"]))
    for r in recs(CHECK):  # each round: a run without the read, then one with it
        t = tim(r)
        claim(
            all(b > a for a, b in zip(t["ms_per_token"], t["ms_per_token_item"], strict=True)),
            "The read cost N µs per token, slower in every round of every repeat",
        )
    ch: dict[str, Any] = {
        **C.path_facts(),
        **C.bound_facts(),
        **C.fused_facts(),
        **C.attempt_facts(),
        **C.gemv_kernel_facts(),
        **C.attention_facts(),
        **C.session_facts(),
        **C.final_facts(),
        **C.logits_facts(),
    }
    # Text as Markdown, numbers as they came (no float()), as the page's helper pasted them.
    paste(
        f,
        ch,
        md="act_gu_moved act_vs attempt_table sweep_vs_cublas sweep_others own_qkv ind_qkv own_o "
        "ind_o own_gate_up ind_gate_up own_down ind_down own_gemvs ind_gemvs k_vs_above "
        "att_attention_k att_attention_aa att_attention_s scores_kernel sm_k_runs sm_aa n_qkv "
        "s_qkv n_o s_o n_gate_up s_gate_up n_down s_down n_norms s_norms norms_grew n_rest s_rest "
        "norms_groups norms_vs_sdpa norms_days d_pw n_gap_med launch_n0 launch_s0 launch_n1 "
        "launch_s1 launch_n2 launch_s2 launch_n3 launch_s3 kernel_table asweep_cudnn "
        "asweep_kernel_ours asweep_ind_range asweep_pos asweep_ours asweep_sdpa asweep_ind "
        "asweep_gap at_att at_att_like at_like_vs slow_ratio at_slow_session at_slow_when "
        "at_slow_covers at_tps_others slow_kernel slow_launch slow_kernel_else u_small at_small "
        "u_argmax_launch at_argmax_launch u_argmax at_argmax attention_table u_tps_all at_tps_all "
        "u_vs_at k_stamp glo_copy glo_gemv ghi_copy ghi_gemv sess_gemv sess_att sess_k_gemv "
        "sess_grids sess_a_att goal_others sessions_table class_table_final add_copy_us lg_table",
        num="lf8_tps lf8_tps_lo lf8_tps_hi lf8_kernels la8_tps la8_tps_lo la8_tps_hi la8_kernels "
        "laa8_tps laa8_tps_lo laa8_tps_hi laa8_kernels lk8_tps lk8_tps_lo lk8_tps_hi lk8_kernels "
        "ln8_tps_lo ln8_tps_hi ls8_tps ls8_tps_lo ls8_tps_hi lu8_tps fused_diff floor_spec_ms "
        "lf8_frac goal_pct cls_down_us cls_attention_us act_gain_pct act_down_gbs act_down_us "
        "act_pointwise_us lf8_pointwise_us attn_red_us act_slow_gu_us act_fast_gu_us "
        "fused_slow_gu_us fused_fast_gu_us sweep_gap sweep_repeats spread_fused spread_final "
        "k_red_faster d_gemv d_norm d_rest d_token d_token_pct n_rest_per_kernel slow_qkv_pct "
        "slow_o_pct slow_gate_up_pct slow_down_pct asweep_extra asweep_kernel_x asweep_call_x "
        "asweep_mb_hi asweep_n asweep_mb asweep_err asweep_l2_pct asweep_l2_x_hi at_slow_tps "
        "at_slow_extra at_slow_lost at_n_reps at_n_sessions slow_kernel_us at_att_layer "
        "lu8_kernels_n lat8_kernels_n sess_u_n sess_u_sessions sess_tuned_n n_other_code "
        "n_shared_sessions glo_n ghi_n u_in_hi sess_rows sess_u_hits n_a_sessions sess_u_lo "
        "sess_u_hi kept_rows copy_k_lo copy_k_hi copy_f_lo copy_f_hi final_frac final_frac_lo "
        "final_frac_hi final_fracc f_token_us f_gemv_over_us f_small_us f_rest_us f_qkv_gbs "
        "f_o_gbs f_gate_up_gbs f_down_gbs f_lm_head_gbs lg_positions lg_first lg_last lg_rel_max "
        "lg_abs_max lg_agree_lo lg_agree_hi lg_gap_max item_us item_us_lo item_us_hi item_tps "
        "check_tps lg_abs_med l2_mib read_gap_ms",
    )
