"""Part 4's kernels notes' facts (``chapters/part4-kernels.md``): kernels of our own,
toward the bound.

Every number the notes quote and every claim they make about the recordings of
``05_llm_decode`` (:func:`facts`), checked on every repeat of every session kept.
:class:`Chapter` extends :class:`_sessions.Chapter` (and through it
:class:`_chapter.Chapter`) with what only these notes read: the two further attempts on
the fused loop, the GEMV kernels of our own and their settings sweep, the norms folded
into the GEMVs, and the attention kernel of our own with its sweep and the untuned row.

Only :mod:`tracereader`, numpy and the standard library here (and the facts runner's
:class:`~tracesite.facts.Facts`): no drawing.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
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
from _sessions import KROWS, slow_gemv
from tracesite import load_definitions
from tracesite.facts import Facts as PageFacts

from tracereader import Trace

EXAMPLE = "05_llm_decode"
#: The helper module of the example's stories: the model's SHAPES.
COMMON = Path(__file__).resolve().parents[2] / "examples" / EXAMPLE / "_05_common.py"
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
        assert max(x.t["down"] for x in ta.runs) < min(
            x.t["down"] for x in t8.runs
        )  # down: faster, every repeat
        assert min(x.t["pointwise, copies"] for x in ta.runs) > max(
            x.t["pointwise, copies"] for x in t8.runs
        )
        # Computing the activation once is faster in the median. In every repeat too in the
        # 2026-12-02 recording, but not in the one before (its repeats overlapped the fused
        # loop's), so the page claims the median only.
        gain = statistics.median(self.per["loop_act_8b"]["tps"]) / statistics.median(
            self.per["loop_fused_8b"]["tps"]
        )
        assert gain > 1
        assert not self.beats("loop_act_attn_8b", "loop_act_8b")
        assert (
            abs(tb.med["attention"] - t8.med["attention"]) < 0.02 * tb.token
        )  # attention: about the same
        # The activation's extra kernels per layer: two eager ones (silu, mul) and two Inductor ones.
        tr = self.recs("loop_act_8b")[0].trace()
        ops = token_ops(tr)
        assert sum("vectorized_elementwise_kernel" in tr.name(g) for g in ops) == 64
        assert (
            sum(tr.name(g).startswith("triton_poi") and "silu_mul" in tr.name(g) for g in ops) == 64
        )
        gu = [x.t["gate_up"] for x in ta.runs]
        assert max(gu) > 1.02 * min(gu)  # the gate/up GEMV's time varies from repeat to repeat
        # The gate/up GEMV, not aimed at, moved too; the page gives its share of the saving.
        gu8 = [x.t["gate_up"] for x in t8.runs]
        gu_drop = statistics.median(gu8) - statistics.median(gu)
        saving = t8.token - ta.token
        assert saving > 0
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
            assert min(ratios) > 1
            per_gemv.append(f"{label} {lo_hi(ratios, '{:.2f}')}")
            if len(set(won)) == 1 and won[0] != want:
                others.append(f"{label} ({won[0][0]:,} columns, {won[0][1]} warps)")
        assert all(len(sw) == len(labels) for sw in sweeps) and max(gaps) < 0.05
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
                assert len(gemvs) == 4 * 32 + 1  # every GEMV is ours
                assert not any("silu" in tr.name(g) for g in ops)  # no activation kernel
                # Launched as the page says: one program per output row, 8 warps each.
                assert [int(tr.extra["grid"][g]) for g in gemvs[:4]] == gemv_rows(shape)
                assert {int(tr.extra["block"][g]) for g in gemvs} == {32 * GEMV_WARPS}
        f["spread_fused"] = max(t8.spread_pct(c) for c in GEMV_CLASSES)
        f["spread_final"] = max(tk.spread_pct(c) for c in GEMV_CLASSES)
        assert f["spread_final"] < 3 < 10 < f["spread_fused"]
        for c in ("qkv", "o"):  # ours against Inductor's, in every repeat
            assert max(x.t[c] for x in tk.runs) < min(x.t[c] for x in t8.runs)
            f[f"own_{c}"], f[f"ind_{c}"] = tk.lohi(c), t8.lohi(c)
        for c in ("gate_up", "down"):
            f[f"own_{c}"], f[f"ind_{c}"] = tk.lohi(c), tb.lohi(c)
        # Against the row above: GEMVs faster in every repeat, the speed set by the attention reductions.
        assert max(x.gemvs for x in tk.runs) < min(x.gemvs for x in tb.runs)
        f["own_gemvs"], f["ind_gemvs"] = (
            lo_hi([x.gemvs for x in tk.runs]),
            lo_hi([x.gemvs for x in tb.runs]),
        )
        tps_k = self.per["loop_kernels_8b"]["tps"]
        slowk = min(range(len(tps_k)), key=lambda i: tps_k[i])
        att_k = [x.t["attention"] for x in tk.runs]
        n_fast = sum(x > max(self.per["loop_act_attn_8b"]["tps"]) for x in tps_k)
        assert n_fast > 0
        if n_fast == len(tps_k):
            f["k_vs_above"] = "every current repeat ran faster than every repeat of the row above"
        else:  # the slowest held back by its attention
            assert att_k[slowk] == max(att_k) and max(att_k) > 2 * min(att_k)
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
        assert 0 < n_red < 3 and all(
            x.t["attention"] != u.t["attention"] for x in tk.runs for u in ts.runs
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
            assert len(scores) == 32 and all("sum" in n for n in scores)
        f["scores_kernel"] = f"`{scores[0][: scores[0].index('_sum') + 4]}…`"
        for r in self.recs("loop_act_attn_8b"):
            tra = r.trace()
            assert not any(
                tra.name(g).startswith("triton_red") and "cos" in tra.name(g)
                for g in token_ops(tra)
            )

        def softmax_kernels(r: Rec) -> tuple[float, int, int]:
            tr = r.trace()
            ks = [
                g
                for g in token_ops(tr)
                if tr.name(g).startswith("triton_red") and "softmax" in tr.name(g)
            ]
            assert len(ks) == 32
            return (
                sum(float(tr.dur_ns[g]) for g in ks) / 1e3,
                int(tr.extra["grid"][ks[0]]),
                int(tr.extra["block"][ks[0]]),
            )

        sm_aa = [softmax_kernels(r) for r in self.recs("loop_act_attn_8b")]
        sm_k = [softmax_kernels(r) for r in self.recs("loop_kernels_8b")]
        assert len({(g, b) for _, g, b in sm_k}) > 1  # launched differently from repeat to repeat
        assert max(u for u, *_ in sm_k) > 2 * min(u for u, *_ in sm_k)
        assert max(u for u, *_ in sm_k) - min(u for u, *_ in sm_k) > 0.8 * (
            max(att_k) - min(att_k)
        )  # the softmax
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
            assert min(x.t[c] for x in tn.runs) > max(x.t[c] for x in ts.runs), c
            f[f"n_{c}"], f[f"s_{c}"] = tn.lohi(c), ts.lohi(c)
        norms = "norms, argmax"
        assert max(x.t[norms] for x in tn.runs) < 0.25 * min(x.t[norms] for x in ts.runs)
        f.update(n_norms=tn.lohi(norms), s_norms=ts.lohi(norms))
        # Our GEMVs left the norm kernels their scaling: the same count of norm kernels per
        # token as in the fused loop, each doing more. Grew in every repeat of which row?
        assert {x.n[norms] for x in tk.runs + ts.runs} == {x.n[norms] for x in t8.runs}
        grew = [
            (label, t)
            for label, t in (("the GEMV-kernel row", tk), ("the cuDNN row", ts))
            if min(x.t[norms] for x in t.runs) > max(x.t[norms] for x in t8.runs)
        ]
        assert grew  # the undone fusion shows in at least one row, in every repeat
        f["norms_grew"] = (
            f"the norms class grew from {t8.lohi(norms)} µs per token in the fused loop to "
            + " and ".join(f"{t.lohi(norms)} in {label}" for label, t in grew)
        )
        assert max(x.rest for x in tn.runs) < min(x.rest for x in ts.runs)
        f["n_rest"], f["s_rest"] = (
            lo_hi([x.rest for x in tn.runs]),
            lo_hi([x.rest for x in ts.runs]),
        )
        assert min(x.gemvs for x in tn.runs) > max(x.gemvs for x in ts.runs)
        pw = "pointwise, copies"

        def med(runs: list[Run], key: Callable[[Run], float]) -> float:
            return statistics.median(map(key, runs))

        d_gemv = med(tn.runs, lambda x: x.gemvs) - med(ts.runs, lambda x: x.gemvs)
        d_norm = med(ts.runs, lambda x: x.t[norms]) - med(tn.runs, lambda x: x.t[norms])
        d_rest = med(ts.runs, lambda x: x.rest) - med(tn.runs, lambda x: x.rest)
        assert d_gemv > 0 and d_norm > 0 and d_rest > 0
        d_token = med(ts.runs, lambda x: x.token_us) - med(tn.runs, lambda x: x.token_us)
        d_pw = med(tn.runs, lambda x: x.t[pw]) - med(ts.runs, lambda x: x.t[pw])
        tok_s = med(ts.runs, lambda x: x.token_us)
        assert d_token > 0
        per_kernel_rest = [x.rest / sum(x.n.values()) for x in tn.runs]
        # The profiled token's own gaps between consecutive GPU ops, median per repeat: each
        # larger than the rest per kernel, so without the profiler the gaps, the kernels or
        # both were shorter.
        gap_med = []
        for r, x in zip(self.recs("loop_norms_8b"), tn.runs, strict=True):
            gaps = token_gaps_us(r.trace())
            gap_med.append(float(np.median(gaps)))
            assert 0 < x.rest < float(gaps.sum())  # less than the profiled gaps alone
        assert max(per_kernel_rest) < min(gap_med)
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
        assert same and min(same) > 0
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
            assert len(ns_) == len(ss_) == 1
            (n_launch,), (s_launch,) = ns_, ss_
            occupancy_fell[c] = n_launch[1] < s_launch[1]
            f[f"launch_n{pos}"] = "{} registers, {:.0f} %".format(*n_launch)
            f[f"launch_s{pos}"] = "{} registers, {:.0f} %".format(*s_launch)
            f[f"slow_{c}_pct"] = 100 * (tn.med[c] / ts.med[c] - 1)
        # Occupancy does not explain the slowdowns: it fell for gate/up and down only, and
        # those slowed less than q/k/v and o, whose occupancy did not change.
        assert [c for c in GEMV_CLASSES if occupancy_fell[c]] == ["gate_up", "down"]
        assert max(f["slow_gate_up_pct"], f["slow_down_pct"]) < min(
            f["slow_qkv_pct"], f["slow_o_pct"]
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

    C = Chapter(recs, load_definitions(COMMON)["SHAPES"], f.sessions)

    md("stamp", f.stamp())
    md("runs_note", C.runs_note())
    check: Any = rec(CHECK).timings()
    num("new_tokens_check", check["new_tokens"])
    num("check_rounds", len(check["ms_per_token"]))
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
    md("act_gu_moved", ch["act_gu_moved"])
    md("act_vs", ch["act_vs"])
    md("attempt_table", ch["attempt_table"])
    md("sweep_vs_cublas", ch["sweep_vs_cublas"])
    md("sweep_others", ch["sweep_others"])
    md("own_qkv", ch["own_qkv"])
    md("ind_qkv", ch["ind_qkv"])
    md("own_o", ch["own_o"])
    md("ind_o", ch["ind_o"])
    md("own_gate_up", ch["own_gate_up"])
    md("ind_gate_up", ch["ind_gate_up"])
    md("own_down", ch["own_down"])
    md("ind_down", ch["ind_down"])
    md("own_gemvs", ch["own_gemvs"])
    md("ind_gemvs", ch["ind_gemvs"])
    md("k_vs_above", ch["k_vs_above"])
    md("att_attention_k", ch["att_attention_k"])
    md("att_attention_aa", ch["att_attention_aa"])
    md("att_attention_s", ch["att_attention_s"])
    md("scores_kernel", ch["scores_kernel"])
    md("sm_k_runs", ch["sm_k_runs"])
    md("sm_aa", ch["sm_aa"])
    md("n_qkv", ch["n_qkv"])
    md("s_qkv", ch["s_qkv"])
    md("n_o", ch["n_o"])
    md("s_o", ch["s_o"])
    md("n_gate_up", ch["n_gate_up"])
    md("s_gate_up", ch["s_gate_up"])
    md("n_down", ch["n_down"])
    md("s_down", ch["s_down"])
    md("n_norms", ch["n_norms"])
    md("s_norms", ch["s_norms"])
    md("norms_grew", ch["norms_grew"])
    md("n_rest", ch["n_rest"])
    md("s_rest", ch["s_rest"])
    md("norms_groups", ch["norms_groups"])
    md("norms_vs_sdpa", ch["norms_vs_sdpa"])
    md("norms_days", ch["norms_days"])
    md("d_pw", ch["d_pw"])
    md("n_gap_med", ch["n_gap_med"])
    md("launch_n0", ch["launch_n0"])
    md("launch_s0", ch["launch_s0"])
    md("launch_n1", ch["launch_n1"])
    md("launch_s1", ch["launch_s1"])
    md("launch_n2", ch["launch_n2"])
    md("launch_s2", ch["launch_s2"])
    md("launch_n3", ch["launch_n3"])
    md("launch_s3", ch["launch_s3"])
    md("kernel_table", ch["kernel_table"])
    md("asweep_cudnn", ch["asweep_cudnn"])
    md("asweep_kernel_ours", ch["asweep_kernel_ours"])
    md("asweep_ind_range", ch["asweep_ind_range"])
    md("asweep_pos", ch["asweep_pos"])
    md("asweep_ours", ch["asweep_ours"])
    md("asweep_sdpa", ch["asweep_sdpa"])
    md("asweep_ind", ch["asweep_ind"])
    md("asweep_gap", ch["asweep_gap"])
    md("at_att", ch["at_att"])
    md("at_att_like", ch["at_att_like"])
    md("at_like_vs", ch["at_like_vs"])
    md("slow_ratio", ch["slow_ratio"])
    md("at_slow_session", ch["at_slow_session"])
    md("at_slow_when", ch["at_slow_when"])
    md("at_slow_covers", ch["at_slow_covers"])
    md("at_tps_others", ch["at_tps_others"])
    md("slow_kernel", ch["slow_kernel"])
    md("slow_launch", ch["slow_launch"])
    md("slow_kernel_else", ch["slow_kernel_else"])
    md("u_small", ch["u_small"])
    md("at_small", ch["at_small"])
    md("u_argmax_launch", ch["u_argmax_launch"])
    md("at_argmax_launch", ch["at_argmax_launch"])
    md("u_argmax", ch["u_argmax"])
    md("at_argmax", ch["at_argmax"])
    md("attention_table", ch["attention_table"])
    md("u_tps_all", ch["u_tps_all"])
    md("at_tps_all", ch["at_tps_all"])
    md("u_vs_at", ch["u_vs_at"])
    md("k_stamp", ch["k_stamp"])
    md("glo_copy", ch["glo_copy"])
    md("glo_gemv", ch["glo_gemv"])
    md("ghi_copy", ch["ghi_copy"])
    md("ghi_gemv", ch["ghi_gemv"])
    md("sess_gemv", ch["sess_gemv"])
    md("sess_att", ch["sess_att"])
    md("sess_k_gemv", ch["sess_k_gemv"])
    md("sess_grids", ch["sess_grids"])
    md("sess_a_att", ch["sess_a_att"])
    md("goal_others", ch["goal_others"])
    md("sessions_table", ch["sessions_table"])
    md("class_table_final", ch["class_table_final"])
    md("add_copy_us", ch["add_copy_us"])
    md("lg_table", ch["lg_table"])
    num("lf8_tps", ch["lf8_tps"])
    num("lf8_tps_lo", ch["lf8_tps_lo"])
    num("lf8_tps_hi", ch["lf8_tps_hi"])
    num("lf8_kernels", ch["lf8_kernels"])
    num("la8_tps", ch["la8_tps"])
    num("la8_tps_lo", ch["la8_tps_lo"])
    num("la8_tps_hi", ch["la8_tps_hi"])
    num("la8_kernels", ch["la8_kernels"])
    num("laa8_tps", ch["laa8_tps"])
    num("laa8_tps_lo", ch["laa8_tps_lo"])
    num("laa8_tps_hi", ch["laa8_tps_hi"])
    num("laa8_kernels", ch["laa8_kernels"])
    num("lk8_tps", ch["lk8_tps"])
    num("lk8_tps_lo", ch["lk8_tps_lo"])
    num("lk8_tps_hi", ch["lk8_tps_hi"])
    num("lk8_kernels", ch["lk8_kernels"])
    num("ln8_tps_lo", ch["ln8_tps_lo"])
    num("ln8_tps_hi", ch["ln8_tps_hi"])
    num("ls8_tps", ch["ls8_tps"])
    num("ls8_tps_lo", ch["ls8_tps_lo"])
    num("ls8_tps_hi", ch["ls8_tps_hi"])
    num("lu8_tps", ch["lu8_tps"])
    num("fused_diff", ch["fused_diff"])
    num("floor_spec_ms", ch["floor_spec_ms"])
    num("lf8_frac", ch["lf8_frac"])
    num("goal_pct", ch["goal_pct"])
    num("cls_down_us", ch["cls_down_us"])
    num("cls_attention_us", ch["cls_attention_us"])
    num("act_gain_pct", ch["act_gain_pct"])
    num("act_down_gbs", ch["act_down_gbs"])
    num("act_down_us", ch["act_down_us"])
    num("act_pointwise_us", ch["act_pointwise_us"])
    num("lf8_pointwise_us", ch["lf8_pointwise_us"])
    num("attn_red_us", ch["attn_red_us"])
    num("act_slow_gu_us", ch["act_slow_gu_us"])
    num("act_fast_gu_us", ch["act_fast_gu_us"])
    num("fused_slow_gu_us", ch["fused_slow_gu_us"])
    num("fused_fast_gu_us", ch["fused_fast_gu_us"])
    num("sweep_gap", ch["sweep_gap"])
    num("sweep_repeats", ch["sweep_repeats"])
    num("spread_fused", ch["spread_fused"])
    num("spread_final", ch["spread_final"])
    num("k_red_faster", ch["k_red_faster"])
    num("d_gemv", ch["d_gemv"])
    num("d_norm", ch["d_norm"])
    num("d_rest", ch["d_rest"])
    num("d_token", ch["d_token"])
    num("d_token_pct", ch["d_token_pct"])
    num("n_rest_per_kernel", ch["n_rest_per_kernel"])
    num("slow_qkv_pct", ch["slow_qkv_pct"])
    num("slow_o_pct", ch["slow_o_pct"])
    num("slow_gate_up_pct", ch["slow_gate_up_pct"])
    num("slow_down_pct", ch["slow_down_pct"])
    num("asweep_extra", ch["asweep_extra"])
    num("asweep_kernel_x", ch["asweep_kernel_x"])
    num("asweep_call_x", ch["asweep_call_x"])
    num("asweep_mb_hi", ch["asweep_mb_hi"])
    num("asweep_n", ch["asweep_n"])
    num("asweep_mb", ch["asweep_mb"])
    num("asweep_err", ch["asweep_err"])
    num("asweep_l2_pct", ch["asweep_l2_pct"])
    num("asweep_l2_x_hi", ch["asweep_l2_x_hi"])
    num("at_slow_tps", ch["at_slow_tps"])
    num("at_slow_extra", ch["at_slow_extra"])
    num("at_slow_lost", ch["at_slow_lost"])
    num("at_n_reps", ch["at_n_reps"])
    num("at_n_sessions", ch["at_n_sessions"])
    num("slow_kernel_us", ch["slow_kernel_us"])
    num("at_att_layer", ch["at_att_layer"])
    num("lu8_kernels_n", ch["lu8_kernels_n"])
    num("lat8_kernels_n", ch["lat8_kernels_n"])
    num("sess_u_n", ch["sess_u_n"])
    num("sess_u_sessions", ch["sess_u_sessions"])
    num("sess_tuned_n", ch["sess_tuned_n"])
    num("n_other_code", ch["n_other_code"])
    num("n_shared_sessions", ch["n_shared_sessions"])
    num("glo_n", ch["glo_n"])
    num("ghi_n", ch["ghi_n"])
    num("u_in_hi", ch["u_in_hi"])
    num("sess_rows", ch["sess_rows"])
    num("sess_u_hits", ch["sess_u_hits"])
    num("n_a_sessions", ch["n_a_sessions"])
    num("sess_u_lo", ch["sess_u_lo"])
    num("sess_u_hi", ch["sess_u_hi"])
    num("kept_rows", ch["kept_rows"])
    num("copy_k_lo", ch["copy_k_lo"])
    num("copy_k_hi", ch["copy_k_hi"])
    num("copy_f_lo", ch["copy_f_lo"])
    num("copy_f_hi", ch["copy_f_hi"])
    num("final_frac", ch["final_frac"])
    num("final_frac_lo", ch["final_frac_lo"])
    num("final_frac_hi", ch["final_frac_hi"])
    num("final_fracc", ch["final_fracc"])
    num("f_token_us", ch["f_token_us"])
    num("f_gemv_over_us", ch["f_gemv_over_us"])
    num("f_small_us", ch["f_small_us"])
    num("f_rest_us", ch["f_rest_us"])
    num("f_qkv_gbs", ch["f_qkv_gbs"])
    num("f_o_gbs", ch["f_o_gbs"])
    num("f_gate_up_gbs", ch["f_gate_up_gbs"])
    num("f_down_gbs", ch["f_down_gbs"])
    num("f_lm_head_gbs", ch["f_lm_head_gbs"])
    num("lg_positions", ch["lg_positions"])
    num("lg_first", ch["lg_first"])
    num("lg_last", ch["lg_last"])
    num("lg_rel_max", ch["lg_rel_max"])
    num("lg_abs_max", ch["lg_abs_max"])
    num("lg_agree_lo", ch["lg_agree_lo"])
    num("lg_agree_hi", ch["lg_agree_hi"])
    num("lg_gap_max", ch["lg_gap_max"])
    num("item_us", ch["item_us"])
    num("item_us_lo", ch["item_us_lo"])
    num("item_us_hi", ch["item_us_hi"])
    num("item_tps", ch["item_tps"])
    num("check_tps", ch["check_tps"])
    num("lg_abs_med", ch["lg_abs_med"])
    num("l2_mib", ch["l2_mib"])
    num("read_gap_ms", ch["read_gap_ms"])
