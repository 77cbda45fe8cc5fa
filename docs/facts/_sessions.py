"""Part 4's recording sessions (``chapters/part4-kernels.md``): the rows recorded in
several sessions, compared across them.

:class:`Chapter` extends :class:`_chapter.Chapter` with every kept session of a row
(:meth:`Chapter.sessions_of`, :attr:`Chapter.kept`), one summary per repeat
(:func:`session_summary`) and the claims the kernels notes make across sessions
(:meth:`Chapter.session_facts`); ``part4_kernels.Chapter`` extends it in turn.

Only :mod:`tracereader`, numpy and the standard library here: no drawing, no site glue.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import _chapter
from _chapter import PATH
from _decode import FINAL, GOAL, Facts, Rec, days, lo_hi, res, token_ops
from tracesite import words
from tracesite.facts import claim

from tracereader import Kind, Trace

#: The rows recorded in several sessions, whose sessions the pages compare.
SESSION_ROWS = ("loop_kernels_8b", "loop_kernels_sdpa_8b", "loop_attention_8b", FINAL)
KROWS = ("loop_kernels_8b", "loop_kernels_sdpa_8b", "loop_norms_8b")


class Chapter(_chapter.Chapter):
    """:class:`_chapter.Chapter` with the rows' recording sessions (:data:`SESSION_ROWS`)."""

    # --- sessions (part4-kernels)

    def sessions_of(self, v: str) -> list[tuple[str | None, Sequence[Rec]]]:
        """Every recording session of ``v`` the recordings keep, oldest first: each earlier
        one as (its name, its repeats), then the current repeats as (None, repeats)."""
        return [*((s.name, s.repeats) for s in self.sessions(v)), (None, self.recs(v))]

    @cached_property
    def kept(self) -> dict[str, list[list[dict[str, Any]]]]:
        """Per row with kept earlier sessions (in :data:`PATH` order), per session (oldest
        first, the current one last), per repeat: :func:`session_summary`."""
        return {
            n: [[session_summary(r) for r in reps] for _, reps in self.sessions_of(n)]
            for n, _, _ in PATH
            if self.sessions(n)
        }

    @cached_property
    def sess(self) -> dict[str, list[list[dict[str, Any]]]]:
        """:attr:`kept` for the rows of :data:`SESSION_ROWS` only."""
        return {v: self.kept[v] for v in SESSION_ROWS}

    def session_facts(self) -> Facts:
        sess = self.sess

        def repeats(v: str) -> list[dict[str, Any]]:
            return [x for ss in sess[v] for x in ss]

        uv = repeats(FINAL)
        tuned_launches = [x["launches"] for v in sess if v != FINAL for x in repeats(v)]
        claim(
            len({x["launches"] for x in uv}) == 1
            and len(set(tuned_launches)) == len(tuned_launches),
            "the last row launched the same kernels on the same grids and blocks, where no two "
            "tuned repeats did",
        )
        claim(
            all(x["fresh_compile_cache"] for x in uv) and all(len(sess[v]) > 1 for v in sess),
            "every process of the last row compiled into an empty cache; these rows were each "
            "recorded in more than one session",
        )
        f: Facts = {
            "sess_u_n": len(uv),
            "sess_u_sessions": len(sess[FINAL]),
            "sess_tuned_n": len(tuned_launches),
        }
        # The earlier sessions of the GEMV-kernel and cuDNN rows ran an earlier version of
        # the example, each saying how it differs (session.json); the others, the same code.
        # The first sessions of those two rows, the same number for each; none after them.
        other = {v: [s.code_changed is not None for s in self.sessions(v)] for v in SESSION_ROWS}
        n_other = sum(other["loop_kernels_8b"])
        for v in ("loop_kernels_8b", "loop_kernels_sdpa_8b"):
            claim(
                n_other > 0 and other[v] == sorted(other[v], reverse=True),
                "The first N sessions of each of the first two rows ran earlier versions of the "
                "example",
            )
            claim(
                sum(other[v]) == n_other,
                "as many sessions of each of the first two rows ran earlier versions",
            )
        claim(
            not any(other["loop_attention_8b"] + other[FINAL]),
            "the attention row and the last row ran the current code in every session",
        )
        f["n_other_code"] = n_other
        su = [x["tokens_per_s"] for x in uv]
        sa = [x["tokens_per_s"] for x in repeats("loop_attention_8b")]
        claim(
            max(su) - min(su) < max(sa) - min(sa),
            "over its sessions it ran at N tokens/s, a narrower range than the attention row's",
        )
        f["u_tps_all"], f["at_tps_all"] = lo_hi(su, "{:.1f}"), lo_hi(sa, "{:.1f}")
        # Faster? Only if every repeat of every session beat every repeat of the attention row.
        xa = repeats("loop_attention_8b")
        if min(su) > max(sa):
            f["u_vs_at"] = (
                "It was also faster: every repeat of it beat every repeat of the attention row."
            )
        else:
            row_days = {v: days(x["recorded_at"] for x in xs) for v, xs in (("u", uv), ("a", xa))}
            groups = {v: {slow_gemv(x) for x in xs} for v, xs in (("u", uv), ("a", xa))}
            claim(
                groups["u"] == groups["a"] == {True, False},
                "both rows ran in processes of both groups described in the next section",
            )
            days_said = (
                f"both rows were recorded on {' and '.join(row_days['a'])}"
                if row_days["a"] == row_days["u"]
                else f"the attention row was recorded on {' and '.join(row_days['a'])} and "
                f"this row on {' and '.join(row_days['u'])}"
            )
            f["u_vs_at"] = (
                "Whether it is also faster, these recordings cannot say: the two ranges overlap, "
                f"{days_said}, and both rows ran in processes of both groups described in the "
                "next section."
            )
        late = (*KROWS, "loop_attention_8b", FINAL)
        when = sorted(r.env["recorded_at"] for v in late for r in self.recs(v))
        first, last = when[0][:16].replace("T", " "), when[-1][:16].replace("T", " ")
        span = (
            f"on {first[:10]}, {first[11:]}–{last[11:]} UTC"
            if first[:10] == last[:10]
            else f"from {first} to {last} UTC"
        )
        env = self.recs(FINAL)[0].stamp_line().split(" (repeat")[0].rsplit(" ", 3)[0]
        claim(env.startswith("Recorded on "), "the final loop's stamp line starts with Recorded on")
        f["k_stamp"] = f"{env.removeprefix('Recorded ').rstrip(',')}, {span}"
        claim(
            all(r.meta["process"].get("fresh_compile_cache") for v in late for r in self.recs(v)),
            "the current repeats of the rows from GEMV kernels of our own on compiled into an "
            "empty cache each",
        )
        claim(
            sum(not x["fresh_compile_cache"] for v in sess for x in repeats(v)) > 0,
            "some processes of the earlier sessions used the host's default compile cache",
        )
        # The first sessions of those two rows shared the host's compile cache; the later
        # ones (the current one among them) compiled afresh in every process.
        shared = {
            v: [not any(x["fresh_compile_cache"] for x in ss) for ss in sess[v]]
            for v in ("loop_kernels_8b", "loop_kernels_sdpa_8b")
        }
        for v, sh in shared.items():
            claim(
                sh == sorted(sh, reverse=True) and not sh[-1],
                "only the first sessions of those two rows used the host's default compile cache",
            )
            claim(
                all(
                    x["fresh_compile_cache"]
                    for ss, s_ in zip(sess[v], sh, strict=True)
                    if not s_
                    for x in ss
                ),
                "in the later ones every process compiled afresh",
            )
        claim(
            len({sum(sh) for sh in shared.values()}) == 1,
            "In the first N sessions of each of those two rows, the processes used the default "
            "compile cache",
        )
        f["n_shared_sessions"] = sum(shared["loop_kernels_8b"])
        # The GEMVs' remaining spread: two groups, by the copy rate each process measured.
        allr = [x for v in sess for x in repeats(v)]
        lo_g, hi_g = [x for x in allr if not slow_gemv(x)], [x for x in allr if slow_gemv(x)]
        claim(
            lo_g
            and hi_g
            and max(x["copy_tbs"] for x in lo_g) < min(x["copy_tbs"] for x in hi_g) - 0.015,
            "the repeats fall in two groups that follow the copy rate each process measured",
        )
        claim(
            max(x["gemv_us"] for x in lo_g) < min(x["gemv_us"] for x in hi_g),
            "the faster GEMVs where the copy ran slower",
        )
        for key, grp in (("glo", lo_g), ("ghi", hi_g)):
            f[f"{key}_copy"] = lo_hi([x["copy_tbs"] for x in grp], "{:.3f}")
            f[f"{key}_gemv"] = lo_hi([x["gemv_us"] for x in grp])
            f[f"{key}_n"] = len(grp)
        f["u_in_hi"] = sum(x in hi_g for x in uv)
        f["sess_rows"] = len(sess)
        kv, sv, av = (
            repeats("loop_kernels_8b"),
            repeats("loop_kernels_sdpa_8b"),
            repeats("loop_attention_8b"),
        )
        gem = [x["gemv_us"] for x in kv + sv + av + uv]
        claim(
            max(gem) < 1.03 * min(gem),
            "across every repeat of the rows without the norms folded in, the GEMVs took one time, "
            "within 3 %",
        )
        f["sess_gemv"] = lo_hi(gem)
        att = [x["attention_us"] for x in kv]
        claim(
            max(att) > 2 * min(att),
            "the GEMV-kernel row's attention reductions took from one time per token to over "
            "twice it",
        )
        f["sess_att"] = lo_hi(att)
        k_gemv = [x["gemv_us"] for x in kv]  # the same row's GEMVs vary far less
        claim(
            words.far(max(att) - min(att), max(k_gemv) - min(k_gemv))
            and max(att) - min(att) > 5 * (max(k_gemv) - min(k_gemv)),
            "the attention reductions now vary far more between processes and sessions than the "
            "GEMVs do",
        )
        f["sess_k_gemv"] = lo_hi(k_gemv)
        grids = sorted({x["softmax_grid"] for x in kv}, key=int, reverse=True)
        f["sess_grids"] = ", ".join(f"{int(g):,}" for g in grids[:-1]) + f" or {int(grids[-1]):,}"
        aatt = [x["attention_us"] for x in av + uv]
        claim(
            max(aatt) < 1.03 * min(aatt) and max(aatt) < min(att),
            "With the attention kernel, attention took N µs in every repeat of every session, "
            "less than the reductions",
        )
        f["sess_a_att"] = lo_hi(aatt)
        hits = {
            k: sum(x["hbm_fraction_spec"] >= GOAL for x in v)
            for k, v in (("k", kv), ("s", sv), ("a", av), ("u", uv))
        }
        claim(
            0 < hits["k"] < len(kv)
            and hits["s"] < len(sv)
            and hits["a"] < len(av)
            and hits["u"] == len(uv),
            "The last row reached 70 % in every repeat of every session, the other session rows "
            "not",
        )
        # The other 8B rows that reached the goal in every current repeat: in every repeat of
        # every session they were recorded in, or in their current session only.
        others = [
            (n, what)
            for n, what, shape in PATH
            if shape == "8B" and n != FINAL and min(self.per[n]["frac"]) >= GOAL
        ]

        def every_repeat(n: str) -> list[Rec]:  # its kept earlier sessions' and the current
            return [r for _, reps in self.sessions_of(n) for r in reps]

        always = [
            (n, w)
            for n, w in others
            if all(res(r)["hbm_fraction_spec"] >= GOAL for r in every_repeat(n))
        ]
        lately = [(n, w) for n, w in others if (n, w) not in always]

        def rows(xs: list[tuple[str, str]]) -> str:
            names = [f"*{w}*" for _, w in xs]
            return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]

        said = []
        if always:
            kept = [n for n, _ in always if self.sessions(n)]
            claim(
                not kept or len(kept) == len(always),
                "the other rows at the goal in every repeat all keep earlier sessions, or none "
                "does",
            )
            said.append(
                f", and {rows(always)} in every repeat of "
                + (
                    "every session"
                    if kept
                    else (
                        "its current session (the recordings keep no earlier one)"
                        if len(always) == 1
                        else "their current sessions (the recordings keep no earlier ones)"
                    )
                )
            )
        if lately:
            said.append(
                f". {({1: 'One', 2: 'Two', 3: 'Three', 4: 'Four'}).get(len(lately), len(lately))} more "
                + ("rows" if len(lately) > 1 else "row")
                + " reached it in every current repeat but not in every repeat of "
                + ("their" if len(lately) > 1 else "its")
                + " earlier sessions (table below): "
                + "; ".join(f"*{w}*" for _, w in lately)
            )
        f["goal_others"] = "".join(said) if said else ", and no other row did that"
        f.update({f"sess_{k}_hits": v for k, v in hits.items()})
        f.update(
            sess_k_n=len(kv),
            sess_s_n=len(sv),
            sess_a_n=len(av),
            n_k_sessions=len(sess["loop_kernels_8b"]),
            n_a_sessions=len(sess["loop_attention_8b"]),
        )
        fu = [x["hbm_fraction_spec"] for x in uv]
        f["sess_u_lo"], f["sess_u_hi"] = 100 * min(fu), 100 * max(fu)
        labels = {name: what for name, what, _ in PATH}
        table = []
        claim(
            set(SESSION_ROWS) <= set(self.kept),
            "the recordings keep earlier sessions of every row these notes compare across sessions",
        )
        f["kept_rows"] = len(self.kept)
        for v, kept_v in self.kept.items():
            xs = [x for ss in kept_v for x in ss]
            on = days(x["recorded_at"] for x in xs)
            table.append(
                f"| {labels[v]} | {len(kept_v)} | {len(xs)} | "
                f"{sum(x['hbm_fraction_spec'] >= GOAL for x in xs)} | "
                f"{on[0]}{' to ' + on[-1] if len(on) > 1 else ''} |"
            )
        f["sessions_table"] = (
            f"| row | sessions | repeats | repeats at {100 * GOAL:.0f} % or more | recorded |\n"
            "|---|---:|---:|---:|---|\n" + "\n".join(table)
        )
        copy_k = [res(r)["copy_tbs"] for v in late for r in self.recs(v)]
        f["copy_k_lo"], f["copy_k_hi"] = min(copy_k), max(copy_k)
        copy_f = [res(r)["copy_tbs"] for r in self.recs("loop_fused_8b")]
        f["copy_f_lo"], f["copy_f_hi"] = min(copy_f), max(copy_f)
        claim(
            abs(statistics.median(copy_k) / statistics.median(self.copy) - 1) < 0.02,
            "the later rows' processes measured the copy at the fused loop's median rate, "
            "within 2 %",
        )
        return f


def session_summary(r: Rec) -> dict[str, Any]:
    """What Part 4 compares across one repeat of a row's sessions: its headline results,
    whether its process compiled into an empty cache, and from one profiled token (step 2):
    the GPU time of its GEMVs and of its attention (the attention reductions: the scores,
    the softmax's preparation and the softmax, with the launch grid and block of the
    softmax kernel; or ``attention_kernel``), and its kernel launches (each kernel's name,
    grid and block, in order: two repeats with the same launches ran the same kernels on
    the same grids and blocks, though not necessarily with the same constants inside)."""
    tr = r.trace()
    ops = token_kernels(tr)
    names = [tr.name(g) for g in ops]
    gemv = [g for g, n in zip(ops, names, strict=True) if n == "gemv_kernel"]
    softmax = [
        g for g, n in zip(ops, names, strict=True) if n.startswith("triton_red") and "softmax" in n
    ]
    scores = [
        g
        for g, n in zip(ops, names, strict=True)
        if n.startswith("triton_red") and "cos" in n and "sum" in n
    ]
    prepare = [
        g for g, n in zip(ops, names, strict=True) if n.startswith("triton_per") and "softmax" in n
    ]
    attention = (
        softmax
        + scores
        + prepare
        + [g for g, n in zip(ops, names, strict=True) if n == "attention_kernel"]
    )
    return {
        "recorded_at": r.env["recorded_at"],
        "tokens_per_s": res(r)["tokens_per_s"],
        "hbm_fraction_spec": res(r)["hbm_fraction_spec"],
        "copy_tbs": res(r)["copy_tbs"],
        "fresh_compile_cache": bool(r.meta["process"].get("fresh_compile_cache")),
        "gemv_us": sum(float(tr.dur_ns[g]) for g in gemv) / 1e3,
        "attention_us": sum(float(tr.dur_ns[g]) for g in attention) / 1e3,
        "softmax_grid": str(tr.extra["grid"][softmax[0]]) if softmax else None,
        "softmax_block": str(tr.extra["block"][softmax[0]]) if softmax else None,
        "kernels": len(ops),
        "launches": launches(tr),
    }


def token_kernels(tr: Trace, step: str = "ProfilerStep#2") -> list[int]:
    """The kernels one step launched (its GPU ops without copies and sets), in the order
    they ran."""
    return [g for g in token_ops(tr, step) if tr.kind[g] == Kind.KERNEL]


def launches(tr: Trace, step: str = "ProfilerStep#2") -> tuple[tuple[str, str, str], ...]:
    """One profiled token's kernel launches, in order: each kernel's name, grid and block."""
    return tuple(
        (tr.name(g), str(tr.extra["grid"][g]), str(tr.extra["block"][g]))
        for g in token_kernels(tr, step)
    )


def slow_gemv(x: dict[str, Any]) -> bool:
    """The session repeats whose processes measured the faster copy and ran the slower GEMVs."""
    return bool(x["copy_tbs"] >= 4.26)
