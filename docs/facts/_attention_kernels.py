"""Part 4's kernels notes, the attention part: the attention kernel of our own, its
settings sweep and the untuned row (:meth:`AttentionChapter.attention_facts`), and the
per-token kernels it compares (the heaviest pointwise kernel, the final argmax).

Moved out of :mod:`part4_kernels` so that each module stays under 800 lines; the page's
:class:`part4_kernels.Chapter` builds on :class:`AttentionChapter`. Only
:mod:`tracereader`, numpy and the standard library here: no drawing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import _sessions
from _decode import FINAL, Facts, Rec, lo_hi, rng, tim, token_ops
from _sessions import session_summary
from tracesite.facts import claim
from tracesite.words import about, beyond_spread, most

from tracereader import Kind, Trace, link

#: The variant that sweeps the attention kernel's launch settings.
ATTENTION_SWEEP = "attention_settings_8b"
#: ``attention_op``'s ``attention_kernel`` settings, as the page quotes them from the example
#: (``literalinclude``): keys per step and warps.
ATTENTION_BLOCK_N, ATTENTION_WARPS = 256, 8


def _region(tr: Trace, name: str) -> int:
    """The CPU event of the ``record_function`` region ``name`` (one in the trace)."""
    (event,) = [int(i) for i in tr.where(name=name) if tr.kind[i] == Kind.USER_ANNOTATION]
    return event


class AttentionChapter(_sessions.Chapter):
    """:class:`_sessions.Chapter` with the attention kernel's facts."""

    # --- an attention kernel of our own, then no tuning (part4-kernels)

    def attention_facts(self) -> Facts:
        # The sweep variant times every setting at each position, in every repeat: the
        # example's setting within 5 % of the fastest, and faster than either peer.
        sweeps = [tim(r) for r in self.recs(ATTENTION_SWEEP)]
        by_pos: dict[int, list[tuple[float, float, float, float]]] = {}
        gaps = []
        for sw in sweeps:
            for pos in sw["positions"]:
                mine = next(
                    t
                    for t in pos["settings"]
                    if (t["BLOCK_N"], t["num_warps"]) == (ATTENTION_BLOCK_N, ATTENTION_WARPS)
                )
                gaps.append(mine["us"] / min(t["us"] for t in pos["settings"]) - 1)
                claim(
                    mine["us"] < min(pos["sdpa_us"], pos["inductor_reductions_us"]),
                    "at each position our kernel's launch took less than SDPA's call and the "
                    "reductions'",
                )
                by_pos.setdefault(pos["position"], []).append(
                    (
                        mine["us"],
                        pos["sdpa_us"],
                        pos["inductor_reductions_us"],
                        max(t["max_abs_err"] for t in pos["settings"]),
                    )
                )
        claim(
            max(gaps) < 0.05,
            "in every repeat these settings came within 5 % of the fastest at both positions",
        )
        per_pass = min(p["bytes"] for p in sweeps[0]["positions"]) * sweeps[0]["shape"]["copies"]
        claim(
            sorted(by_pos) == [128, 191] and tim(self.recs(FINAL)[0])["new_tokens"] == 64,
            "positions 128 and 191: the first position Part 4 decodes, and one past its last",
        )

        def med(i: int) -> str:
            return " and ".join(
                f"{statistics.median(x[i] for x in v):.1f}" for v in by_pos.values()
            )

        # The profiled pass (position 191, the plan keeps only it): SDPA's own kernel, cuDNN's,
        # against ours, and the other GPU ops each SDPA call runs, per call (medians).
        cudnn, mine_k, extra = [], [], []
        calls = sweeps[0]["shape"]["copies"]
        for r in self.recs(ATTENTION_SWEEP):
            tr = r.trace()
            peer = link(tr).gpu_ops_of(_region(tr, "position 191 peer"))
            ours = link(tr).gpu_ops_of(_region(tr, "position 191 ours"))
            cud = [float(tr.dur_ns[g]) / 1e3 for g in peer if tr.name(g).startswith("cudnn")]
            claim(
                len(cud) == calls and len(ours) == calls,
                "the profiled pass at position 191 runs one cuDNN kernel, or one of ours, per call",
            )
            cudnn.append(statistics.median(cud))
            mine_k.append(statistics.median(float(tr.dur_ns[g]) / 1e3 for g in ours))
            extra.append((len(peer) - calls) / calls)
        claim(
            max(mine_k) < min(cudnn) and len(set(extra)) == 1,
            "kernel against kernel, ours was faster than cuDNN's; the same small GPU ops per call",
        )
        passes = [p["bytes"] * sweeps[0]["shape"]["copies"] for p in sweeps[0]["positions"]]
        ind_all = [p["inductor_reductions_us"] for sw in sweeps for p in sw["positions"]]
        f: Facts = {
            "asweep_cudnn": lo_hi(cudnn, "{:.1f}"),
            "asweep_kernel_ours": lo_hi(mine_k, "{:.1f}"),
            "asweep_extra": extra[0],
            "asweep_kernel_x": statistics.median(c / m for c, m in zip(cudnn, mine_k, strict=True)),
            "asweep_call_x": statistics.median(x[1] / x[0] for x in by_pos[191]),
            "asweep_ind_range": lo_hi(ind_all, "{:.1f}"),
            "asweep_mb_hi": max(passes) / 1e6,
            "asweep_n": len(sweeps[0]["positions"][0]["settings"]),
            "asweep_mb": per_pass / 1e6,
            "asweep_pos": " or ".join(f"{p}" for p in by_pos),
            "asweep_ours": med(0),
            "asweep_sdpa": med(1),
            "asweep_ind": med(2),
            "asweep_err": max(x[3] for v in by_pos.values() for x in v),
            "asweep_gap": (
                "were the fastest"
                if max(gaps) == 0
                else f"came within {100 * max(gaps):.1f} % of the fastest"
            ),
        }
        l2 = self.l2_bytes()
        if l2 is not None:  # the device's own report, stamped by the logits check's recording
            claim(per_pass > l2, "a pass at position 128 reads more than the GPU's L2 cache holds")
            f["asweep_l2_pct"] = 100 * (per_pass / l2 - 1)
            f["asweep_l2_x_hi"] = max(passes) / l2
        tk, ts = self.table("loop_kernels_8b"), self.table("loop_kernels_sdpa_8b")
        tat, tu = self.table("loop_attention_8b"), self.table(FINAL)
        for t in (tat, tu):  # attention: faster than the reductions and cuDNN, every repeat
            claim(
                beyond_spread(
                    [x.t["attention"] for x in tk.runs + ts.runs],
                    [x.t["attention"] for x in t.runs],
                ),
                "our kernel's attention took less than the reductions and cuDNN, in every repeat",
            )
        f["at_att"] = tat.lohi("attention")

        def mask_kernels_us(r: Rec) -> float:
            """The kernels that build the mask (a comparison, ``le``, beside q's rotary ``cos``)."""
            tr = r.trace()
            ops = token_ops(tr)
            ks = {
                g
                for g in ops
                if tr.name(g).startswith("triton_poi")
                and "cos" in tr.name(g)
                and "_le_" in tr.name(g)
            }
            claim(
                len(ks) == 64,
                "64 small kernels carry both the mask's comparison (le) and the rotary embedding (cos)",
            )
            names = [tr.name(g) for g in ops]
            at = [i for i, g in enumerate(ops) if g in ks]
            claim(
                sum(i < names.index("gemv_kernel") for i in at) == 32,
                "32 of them at the start of the token",
            )
            claim(
                sum(names[i + 1] == "attention_kernel" for i in at) == 32,
                "and one just before each layer's attention_kernel",
            )
            return sum(float(tr.dur_ns[g]) for g in ks) / 1e3

        like = [
            x.t["attention"] + mask_kernels_us(r)
            for x, r in zip(tat.runs, self.recs("loop_attention_8b"), strict=True)
        ]
        f["at_att_like"] = lo_hi(like)
        parts = []
        for label, their, t in (
            ("the reductions", "their", tk),
            ("cuDNN's kernel with its preparation", "its", ts),
        ):
            xs = sorted(x.t["attention"] for x in t.runs)
            above = [x for x in xs if x > max(like)]  # longer than ours in every repeat
            claim(
                len(above) >= 2 and all(x > min(like) for x in xs),
                "like for like, our fastest repeat beat every peer repeat, our slowest at least two",
            )
            if len(above) == len(xs):
                parts.append(
                    f"less than {label} took in any current repeat ({t.lohi('attention')} µs)"
                )
            else:  # the rest fall inside our range: about as long as each of ours
                inside = [x for x in xs if x not in above]
                claim(
                    all(about(x, y) for x in inside for y in like),
                    f"like for like, ours took about as long as {label} took in {their} fastest "
                    "current repeats",
                )
                fastest = (
                    "fastest current repeat"
                    if len(inside) == 1
                    else f"{len(inside)} fastest current repeats"
                )
                parts.append(
                    f"about as long as {label} took in {their} {fastest} "
                    f"({', '.join(f'{x:,.0f}' for x in inside)} µs) and less than in the other "
                    f"{len(above)} ({' and '.join(f'{x:,.0f}' for x in above)} µs)"
                )
        f["at_like_vs"] = "; ".join(parts)
        for v in ("loop_attention_8b", FINAL):
            for r in self.recs(v):
                tr = r.trace()
                names = [tr.name(g) for g in token_ops(tr)]
                claim(
                    names.count("attention_kernel") == 32
                    and names.count("gemv_kernel") == 4 * 32 + 1,
                    "a token runs our attention kernel once per layer and every GEMV in ours",
                )
                # One program per query head, 8 warps each, as the page says.
                att = [g for g in token_ops(tr) if tr.name(g) == "attention_kernel"]
                grids = {int(tr.extra["grid"][g]) for g in att}
                claim(
                    grids == {self.shapes["8b"]["num_attention_heads"]},
                    "one Triton program per query head",
                )
                sms = int(tr.device_properties[0]["numSms"])
                claim(
                    most(sms - max(grids), sms),
                    "its 32 programs leave most of the GPU's 132 SMs idle",
                )
                claim(
                    {int(tr.extra["block"][g]) for g in att} == {32 * ATTENTION_WARPS},
                    "the attention kernel runs 8 warps per program",
                )
        # The attention row's slowest repeat over all its sessions (the current one and the
        # earlier ones the recordings keep): one pointwise kernel, launched on a tiny grid.
        ATT = "loop_attention_8b"
        at_sess = self.sessions_of(ATT)
        at_reps = [r for _, reps in at_sess for r in reps]
        at_names = [name for name, reps in at_sess for _ in reps]
        tps_at = [session_summary(r)["tokens_per_s"] for r in at_reps]
        slow = min(range(len(tps_at)), key=lambda i: tps_at[i])
        heavy = [heaviest_pointwise(r) for r in at_reps]
        pn, pu, pg, pb, _ = heavy[slow]
        claim(
            "cos" in pn and "index_copy" in pn and pg == 1,
            "one pointwise kernel (k's rotary embedding and its cache write), launched on one block",
        )
        elsewhere = [h[4][pn][0] for i, h in enumerate(heavy) if i != slow]
        claim(
            len(elsewhere) == len(at_reps) - 1 and pu > 4 * max(elsewhere),
            "that kernel took over four times as long as in any other repeat",
        )
        for i, r in enumerate(at_reps):  # the others launched it on more than one block
            if i != slow:
                tr = r.trace()
                claim(
                    int(tr.extra["grid"][heavy[i][4][pn][1]]) > 1,
                    "the other repeats launched it on more than one block",
                )
        others_tps = [t for i, t in enumerate(tps_at) if i != slow]
        claim(tps_at[slow] < min(others_tps), "that repeat ran slower than every other one")
        # Against the other repeats of its own session: the kernel's extra time (profiled
        # token) covers most or all of what its token took longer (timed without the profiler).
        slow_session = at_names[slow]
        claim(slow_session is not None, "the slow repeat is kept in an earlier session")
        mates = [i for i, n in enumerate(at_names) if n == slow_session and i != slow]
        lost_us = 1e6 / tps_at[slow] - 1e6 / statistics.median(tps_at[i] for i in mates)
        extra_us = pu - statistics.median(heavy[i][4][pn][0] for i in mates)
        claim(
            mates and lost_us > 0 and most(extra_us, lost_us),
            "the kernel's extra time covers most or all of what its token took longer",
        )
        f.update(
            slow_ratio=f"{pu / max(elsewhere):.0f} to {pu / min(elsewhere):.0f}",
            at_slow_tps=tps_at[slow],
            at_slow_session=f"`sessions/{slow_session}`",
            at_slow_when="on {} at {} UTC".format(
                *str(at_reps[slow].env["recorded_at"])[:16].split("T")
            ),
            at_slow_extra=extra_us,
            at_slow_lost=lost_us,
            at_slow_covers="all of" if extra_us >= lost_us else "most of",
            at_tps_others=lo_hi(others_tps),
            at_n_reps=len(at_reps),
            at_n_sessions=len(self.sessions(ATT)) + 1,
            slow_kernel=f"`{pn[:56]}…`",
            slow_kernel_us=pu,
            slow_launch=f"{pg} block of {pb} threads",
            slow_kernel_else=lo_hi(elsewhere),
            at_att_layer=statistics.median(x.t["attention"] for x in tat.runs) / 32,
        )
        # Tuning off: a GEMM for the rotary embedding's product, and the argmax's own launch.
        for r in self.recs(FINAL):
            names = [r.trace().name(g) for g in token_ops(r.trace())]
            claim(
                sum("gemm" in n for n in names) == 1
                and any("bmm" in n and "cos" not in n for n in names),
                "tuning off, the rotary product goes to cuBLAS plus a small kernel preparing its input",
            )
        for r in self.recs("loop_attention_8b"):
            claim(
                not any("gemm" in r.trace().name(g) for g in token_ops(r.trace())),
                "with the tuning on, Inductor rewrites the rotary product as a multiply-and-sum",
            )
        f["lu8_kernels_n"] = statistics.median(self.per[FINAL]["kernels"])
        f["lat8_kernels_n"] = statistics.median(self.per["loop_attention_8b"]["kernels"])
        f["u_small"], f["at_small"] = tu.below(
            tat,
            "small",
            "tuning off, the norms and the pointwise work took less than in the attention row",
        )
        f["u_argmax_launch"], f["at_argmax_launch"] = (
            argmax_launch(self.recs(FINAL)),
            argmax_launch(self.recs("loop_attention_8b")),
        )
        am_u = [argmax_us(r) for r in self.recs(FINAL)]
        am_at = [argmax_us(r) for r in self.recs("loop_attention_8b")]
        claim(
            min(am_u) > max(am_at),
            "the heuristics' launches are not always the best: the untuned argmax took longer",
        )
        f["u_argmax"], f["at_argmax"] = lo_hi(am_u), lo_hi(am_at)
        rows = []
        for label, name, t in (
            ("GEMV kernels of our own", "loop_kernels_8b", tk),
            ("GEMV and attention kernels of our own", "loop_attention_8b", tat),
            ("+ Inductor's tuning off", FINAL, tu),
        ):
            rows.append(
                f"| {label} | {t.lohi('attention')} | {t.lohi('norms, argmax')} | "
                f"{t.lohi('pointwise, copies')} | {lo_hi([x.gemvs for x in t.runs])} | "
                f"{statistics.median(self.per[name]['kernels']):.0f} | {rng(self.per[name]['tps'], '{:.1f}')} |"
            )
        f["attention_table"] = (
            "| loop | attention | norms, argmax | pointwise, copies | all GEMVs | kernels | "
            "tokens/s |\n|---|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows)
        )
        return f


def heaviest_pointwise(r: Rec) -> tuple[str, float, int, int, dict[str, tuple[float, int]]]:
    """The step's pointwise kernel with the most time: name, µs, grid, block, and every one's."""
    tr = r.trace()
    by: dict[str, tuple[float, int]] = {}
    for g in token_ops(tr):
        if tr.name(g).startswith("triton_poi"):
            us, g0 = by.get(tr.name(g), (0.0, g))
            by[tr.name(g)] = (us + float(tr.dur_ns[g]) / 1e3, g0)
    name, (us, g0) = max(by.items(), key=lambda kv: kv[1][0])
    return name, us, int(tr.extra["grid"][g0]), int(tr.extra["block"][g0]), by


def _argmax_kernel(tr: Trace) -> int:
    (g,) = [g for g in token_ops(tr) if "argmax" in tr.name(g)]
    return g


def argmax_us(r: Rec) -> float:
    tr = r.trace()
    return float(tr.dur_ns[_argmax_kernel(tr)]) / 1e3


def argmax_launch(rs: Sequence[Rec]) -> str:
    """The final argmax's grid and block, the same in every repeat."""
    out = set()
    for r in rs:
        tr = r.trace()
        g = _argmax_kernel(tr)
        out.add((int(tr.extra["grid"][g]), int(tr.extra["block"][g])))
    claim(len(out) == 1, "the final argmax's grid and block are the same in every repeat")
    g, b = out.pop()
    return f"{g} block{'s' * (g > 1)} of {b:,} threads"
