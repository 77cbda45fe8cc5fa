"""Part 4's rows read over every repeat, shared by its three pages: :class:`Chapter`.

:class:`Chapter` reads every repeat of the example's variants through a ``recs`` getter
(variant name -> its recorded repeats) and, for the rows recorded in several sessions, a
``sessions`` getter (variant name -> its earlier sessions, oldest first), asserts each claim
the pages make on every repeat, and returns the numbers (floats) and Markdown snippets (str)
the pages glue, keyed by the names the prose uses: the whole path of changes
(:data:`PATH`), the bound, the fused and the final loops class by class, and the final
loop's logits. Each page's facts module extends it with what only that page reads
(``part4_notes.Chapter``; ``part4_kernels.Chapter``, through :mod:`_sessions`).

Only :mod:`tracereader`, numpy and the standard library here: no drawing, no site glue.
"""

from __future__ import annotations

import calendar
import statistics
from collections.abc import Sequence
from functools import cached_property

import _final_loop
from _decode import (
    CHECK,
    CLASSES,
    FINAL,
    GOAL,
    LOOP_CALLS,
    Facts,
    Rec,
    Recs,
    Run,
    Sessions,
    Table,
    _in,
    calls_per_step,
    days,
    decode_steps,
    first_diff,
    gemv_bytes,
    is_gemv,
    launch_calls,
    res,
    rng,
    syncs,
    tim,
    token_ops,
)
from tracesite import words
from tracesite.facts import claim

import tracereader
from tracereader import Kind, step_times

# ---------------------------------------------------------------------- the whole path

PATH = [
    ("generate_dynamic_1b", "generate(), dynamic cache", "1B"),
    ("generate_static_1b", "static cache", "1B"),
    ("generate_static_compiled_1b", "generate() compiles", "1B"),
    ("generate_static_compiled_8b", "generate() compiles", "8B"),
    ("loop_compiled_8b", "our loop, CUDA graph", "8B"),
    ("loop_tuned_8b", "+ tuned GEMVs", "8B"),
    ("loop_short_8b", "+ short cache", "8B"),
    ("loop_packed_8b", "+ packed GQA", "8B"),
    ("loop_fused_8b", "+ fused projections", "8B"),
    ("loop_act_8b", "+ activation computed once", "8B"),
    ("loop_act_attn_8b", "+ attention as reductions", "8B"),
    ("loop_kernels_8b", "GEMV kernels of our own", "8B"),
    ("loop_kernels_sdpa_8b", "+ cuDNN attention again", "8B"),
    ("loop_norms_8b", "+ norms in the GEMVs", "8B"),
    ("loop_attention_8b", "GEMV and attention kernels of our own", "8B"),
    (FINAL, "+ Inductor's tuning off", "8B"),
]
#: The lesson's short path: where the CPU sets the pace, then where the kernels do.
LESSON_PATH = (
    "generate_dynamic_1b",
    "generate_static_compiled_1b",
    "generate_static_compiled_8b",
    "loop_compiled_8b",
    "loop_fused_8b",
    FINAL,
)
#: The lesson's table skips the rows between the fused loop and the final loop: its label says all it holds.
LESSON_LABELS = {
    "loop_fused_8b": "+ tuned GEMVs, short cache, packed GQA, fused projections",
    FINAL: "GEMV and attention kernels of our own, tuning off",
}
BUILDS_ON = {"loop_attention_8b": "loop_kernels_8b"}  # each other row builds on the row above it


class Chapter:
    """Every claim of Part 4's pages that reads more than one repeat, and their numbers.

    ``recs`` returns every repeat of a variant; ``shapes`` is the example's ``SHAPES``;
    ``sessions`` returns a variant's earlier recording sessions (:data:`SESSION_ROWS`').
    """

    def __init__(
        self,
        recs: Recs,
        shapes: dict[str, dict[str, int]],
        sessions: Sessions = lambda name: (),
        names: Sequence[str] | None = None,
    ) -> None:
        self.recs, self.shapes, self.sessions = recs, shapes, sessions
        #: The rows of :data:`PATH` read (all by default; a GPU with fewer recordings: fewer).
        self.names = [n for n, _, _ in PATH if names is None or n in names]
        self._tables: dict[str, Table] = {}

    @cached_property
    def spec_tbs(self) -> float:
        """The datasheet memory bandwidth of the GPU the final loop was recorded on, TB/s."""
        return float(res(self.recs(FINAL)[0])["spec_tbs"])

    # --- the path table (part4-notes) and the lesson's short one

    @cached_property
    def per(self) -> dict[str, dict[str, list[float]]]:
        per = {}
        for name in self.names:
            rs = self.recs(name)
            kern, launches, busy = [], [], []
            for r in rs:
                dec = decode_steps(r.trace())
                ks = [s.kernels for s in dec]
                claim(
                    max(ks) - min(ks) <= 2,
                    f"{name}: every profiled token launches as many kernels, give or take 2",
                )
                kern.append(statistics.median(ks))
                launches.append(statistics.median(s.launches for s in dec))
                busy.append(
                    statistics.median(s.gpu_busy_us for s in dec) / 1e3 / res(r)["ms_per_token"]
                )
                claim(
                    tim(r)["graphs_compiled_while_timed"] == 0,
                    f"{name}: no row's time includes a recompile",
                )
            claim(
                max(busy) < 1.03,
                f"GPU busy, capped at 100 %, is never over it by 3 % or more ({name}, {busy})",
            )
            per[name] = {
                "tps": [res(r)["tokens_per_s"] for r in rs],
                "ms": [res(r)["ms_per_token"] for r in rs],
                "frac": [res(r)["hbm_fraction_spec"] for r in rs],
                "kernels": kern,
                "busy": busy,
                "launches": launches,
            }
        return per

    def beats(self, a: str, b: str) -> bool:
        """Every repeat of ``a`` faster than every repeat of ``b``."""
        return min(self.per[a]["tps"]) > max(self.per[b]["tps"])

    def _row(self, name: str, what: str, shape: str, base: str) -> str:
        p = self.per[name]
        on = [
            f"{int(d[8:10])} {calendar.month_abbr[int(d[5:7])]}"
            for d in days(r.env["recorded_at"] for r in self.recs(name))
        ]
        return (
            f"| {what} | {base} | {' and '.join(on)} | {shape} | {rng(p['tps'])} | {rng(p['ms'], '{:.2f}')} | {p['kernels'][0]:.0f} | "
            f"{p['launches'][0]:.0f} | {rng([min(b, 1) * 100 for b in p['busy']])} % | "
            f"{rng([f * 100 for f in p['frac']])} % |"
        )

    def path_table(self, names: Sequence[str] | None = None) -> str:
        label = {n: what for n, what, _ in PATH}
        base = {n: BUILDS_ON.get(n, a[0]) for a, (n, _, _) in zip(PATH, PATH[1:], strict=False)}
        rows = [
            self._row(*p, label[base[p[0]]] if p[0] in base else "")
            for p in PATH
            if p[0] in self.names and (names is None or p[0] in names)
        ]
        return (
            "| change | built on | recorded | shape | tokens/s | ms/token | kernels per token "
            f"| launch calls per token | GPU busy | of {self.spec_tbs:g} TB/s |\n"
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows)
        )

    def lesson_table(self, beside: tuple[str, Chapter] | None = None) -> str:
        """The lesson's short path: medians over the repeats (the ranges are in the notes);
        ``beside``: another GPU's name and chapter, whose tokens/s get a column."""
        rows = []
        for name, what, shape in PATH:
            if name in LESSON_PATH:
                p = self.per[name]
                other = f"{statistics.median(beside[1].per[name]['tps']):.0f} | " if beside else ""
                rows.append(
                    f"| {LESSON_LABELS.get(name, what)} | {shape} | {statistics.median(p['tps']):.0f} | "
                    + other
                    + f"{statistics.median(p['launches']):.0f} | "
                    f"{100 * min(1, statistics.median(p['busy'])):.0f} % | "
                    f"{100 * statistics.median(p['frac']):.0f} % |"
                )
        tps = f"tokens/s | {beside[0]} tokens/s" if beside else "tokens/s"
        return (
            f"| change | shape | {tps} | launch calls per token | GPU busy | of {self.spec_tbs:g} TB/s |\n"
            + (
                "|---|---|---:|---:|---:|---:|---:|\n"
                if beside
                else "|---|---|---:|---:|---:|---:|\n"
            )
            + "\n".join(rows)
        )

    def lesson_path_facts(self) -> Facts:
        """What the lesson claims of its rows (:data:`LESSON_PATH` and the static cache
        alone), on every repeat: all a GPU needs recorded for the lesson."""
        per, beats = self.per, self.beats
        claim(
            beats("generate_static_compiled_1b", "generate_dynamic_1b"),
            "The compiled generate() lifts the 1B model, in every repeat",
        )
        claim(
            beats("loop_compiled_8b", "generate_static_compiled_8b"),
            "On the 8B shape our loop beats the compiled generate() in every repeat",
        )
        claim(
            beats("loop_fused_8b", "loop_compiled_8b"),
            "The changes after it together reach N tokens/s, faster than the plain loop in every "
            "repeat",
        )
        claim(
            beats(FINAL, "loop_fused_8b"),
            "the final loop decodes faster than the fused loop in every repeat",
        )
        # A static cache alone is no faster: never faster in every repeat, and slower in the
        # median. The page words how much from the recording: slower in every repeat (as on
        # 2026-12-02), or only in the median (the recording before it: the repeats overlapped).
        claim(
            not beats("generate_static_1b", "generate_dynamic_1b"),
            "with a static cache alone, eager generate() is not faster in every repeat",
        )
        claim(
            statistics.median(per["generate_static_1b"]["tps"])
            < statistics.median(per["generate_dynamic_1b"]["tps"]),
            "A static cache alone makes eager generate() slower, in the median",
        )
        static_slower = (
            "slower in every repeat"
            if beats("generate_dynamic_1b", "generate_static_1b")
            else "slower in the median, though some repeats overlap"
        )
        # It launches more kernels per token than the dynamic cache, in every repeat, and
        # both are bound by the CPU (the GPU busy under half of each token).
        claim(
            min(per["generate_static_1b"]["kernels"]) > max(per["generate_dynamic_1b"]["kernels"]),
            "it launches more kernels per token than the dynamic cache, in every repeat",
        )
        claim(
            max(per["generate_static_1b"]["busy"] + per["generate_dynamic_1b"]["busy"]) < 0.5,
            "both rows are bound by the CPU, which launches them: the GPU busy under half of each "
            "token",
        )
        f: Facts = {
            "lesson_path_table": self.lesson_table(),
            "gs1_vs": static_slower,
            "gs1_kernels": statistics.median(per["generate_static_1b"]["kernels"]),
            "gd1_kernels": statistics.median(per["generate_dynamic_1b"]["kernels"]),
        }
        for name in ("generate_static_compiled_1b", "generate_static_compiled_8b"):
            for r in self.recs(name):
                claim(
                    set(calls_per_step(r.trace(), "cudaStreamSynchronize")) == {1},
                    f"{name}: generate()'s own compile makes one synchronize per token",
                )
                claim(
                    set(calls_per_step(r.trace(), "cudaGraphLaunch")) == {1},
                    f"{name}: one graph launch per token for the forward",
                )
        # On 8B, where the CPU runs ahead of the compiled forward, the stop check's sync (in
        # step 2, before its graph launch) waits milliseconds, until the GPU has run the
        # previous token's forward (its last kernel), in every repeat less than a token.
        waits: list[float] = []
        profiled: list[float] = []
        after_us: list[float] = []
        ran_ahead: list[bool] = []
        rerecorded: list[bool] = []
        for r in self.recs("generate_static_compiled_8b"):
            tr = r.trace()
            # A CUDA graph instantiated in the token before the profiled one: the graph was
            # recorded again there, so the profiled token starts on an idle GPU.
            rerecorded.append(
                len(tr.where(prefix="cudaGraphInstantiate", within=_in(tr, "ProfilerStep#1"))) > 0
            )
            (i,) = syncs(tr)
            waits.append(float(tr.end_ns[i] - tr.ts_ns[i]) / 1e6)
            (st,) = [s for s in step_times(tr) if s.name == "ProfilerStep#2"]
            profiled.append((st.end_ns - st.start_ns) / 1e6)
            (launch,) = tr.where(name="cudaGraphLaunch", within=_in(tr, "ProfilerStep#2"))
            done = max(
                int(tr.end_ns[g])
                for g in token_ops(tr, "ProfilerStep#1")
                if tr.kind[g] == Kind.KERNEL
            )
            claim(
                tr.end_ns[i] < tr.ts_ns[launch] and tr.end_ns[i] - done > 0,
                "the stop check's sync ends before the token's graph launch, after the previous "
                "token's last kernel",
            )
            after_us.append((tr.end_ns[i] - done) / 1e3)
            ran_ahead.append(1 < waits[-1] < res(r)["ms_per_token"] and after_us[-1] < 100)
        # Either the CPU ran ahead in every repeat (the sync waited milliseconds and ended
        # within 100 µs of the forward's last kernel) or in none (it waited under 0.1 ms, the
        # GPU long done): the page words which, per GPU.
        claim(
            len(set(ran_ahead)) == 1 and (ran_ahead[0] or max(waits) < 0.1),
            "the CPU ran ahead in every repeat, or in none, the sync then waiting under 0.1 ms "
            f"({waits}, {after_us})",
        )
        claim(
            len(set(rerecorded)) == 1,
            "every repeat recorded the CUDA graph again in the token before the profiled one, or "
            f"none did ({rerecorded})",
        )
        f["gsc8_ahead"] = ran_ahead[0]
        f["gsc8_rerecorded"] = rerecorded[0]
        f["gsc8_sync_us"] = 1e3 * statistics.median(waits)
        f["gsc8_sync_ms"] = statistics.median(waits)
        f["gsc8_prof_ms"] = statistics.median(profiled)
        f["gsc8_ms"] = statistics.median(per["generate_static_compiled_8b"]["ms"])
        for r in [
            *self.recs("loop_compiled_8b"),
            *self.recs(FINAL),
        ]:  # our loop: no host sync at all
            tr = r.trace()
            claim(
                set(calls_per_step(tr, "cudaStreamSynchronize")) == {0},
                "our loop makes no host sync",
            )
            claim(
                set(calls_per_step(tr, "cudaGraphLaunch")) == {1},
                "our loop makes one cudaGraphLaunch per token",
            )
            claim(
                [launch_calls(tr, st.name) for st in decode_steps(tr)] == [LOOP_CALLS] * 3,
                "The loop makes N launch calls per token (a copy into the graph's inputs, the "
                "graph launch, two clones of its outputs)",
            )
            # Once the CPU is ahead (from the second profiled token on), the GPU never waits.
            steps = decode_steps(tr)
            ahead = (
                int(tr.ts_ns[token_ops(tr, steps[1].name)[0]]),
                int(tr.end_ns[token_ops(tr, steps[-1].name)[-1]]),
            )
            claim(
                not tracereader.gaps(tr, window=ahead, min_gap_us=10),
                "from the second profiled token on, no gap between kernels reaches 10 µs",
            )
            claim(
                all(words.hundreds(len(token_ops(tr, st.name))) for st in steps),
                "each token's cudaGraphLaunch fans out to hundreds of kernels",
            )
        trg = self.recs("generate_static_compiled_1b")[0].trace()
        f["gsc1_kernel_calls"] = statistics.median(calls_per_step(trg, "cudaLaunchKernel"))
        f["gsc1_copy_calls"] = statistics.median(calls_per_step(trg, "cudaMemcpyAsync"))

        keys = {
            "gsc1": "generate_static_compiled_1b",
            "gd1": "generate_dynamic_1b",
            "gs1": "generate_static_1b",
            "gsc8": "generate_static_compiled_8b",
            "lc8": "loop_compiled_8b",
            "lf8": "loop_fused_8b",
            "la8": "loop_act_8b",
            "laa8": "loop_act_attn_8b",
            "lk8": "loop_kernels_8b",
            "ln8": "loop_norms_8b",
            "ls8": "loop_kernels_sdpa_8b",
            "lat8": "loop_attention_8b",
            "lu8": FINAL,
        }
        for key, name in keys.items():
            if name not in self.names:
                continue
            p = per[name]
            f.update(
                {
                    f"{key}_tps": statistics.median(p["tps"]),
                    f"{key}_tps_lo": min(p["tps"]),
                    f"{key}_tps_hi": max(p["tps"]),
                    f"{key}_kernels": statistics.median(p["kernels"]),
                    f"{key}_launches": statistics.median(p["launches"]),
                    f"{key}_busy": 100 * min(1, statistics.median(p["busy"])),
                }
            )
        tok = {
            n: tim(self.recs(n)[0])["tokens"]
            for n in ("loop_fused_8b", "generate_static_compiled_8b")
        }
        f["same_tokens"] = first_diff(*tok.values())
        claim(
            0 < f["same_tokens"] < len(tok["loop_fused_8b"]),
            "loop_fused_8b and generate() agree on the first N tokens, not on all",
        )
        lc = [tim(r)["tokens"] for r in self.recs("loop_compiled_8b")]
        f["lc_diverge"] = min(first_diff(a, b) for a in lc for b in lc if a is not b)
        claim(
            f["lc_diverge"] < len(lc[0]),
            "two processes of loop_compiled_8b diverge from token N on",
        )
        f["fused_diff"] = max(
            tim(r)["fused_logits_max_abs_diff"] for r in self.recs("loop_fused_8b")
        )

        return f

    def path_facts(self) -> Facts:
        """The lesson's facts and every other row of :data:`PATH` (the lab notes)."""
        per, beats = self.per, self.beats
        f = self.lesson_path_facts()
        b1 = tim(self.recs("loop_fused_1b")[0])["bytes_per_token"]["total"]
        b8 = tim(self.recs("loop_fused_8b")[0])["bytes_per_token"]["total"]
        f.update(b1_gb=b1 / 1e9, b_ratio=b8 / b1)
        # the fused loop short of the goal (on the H200; the H100 reached it with this loop)
        claim(
            max(res(r)["hbm_fraction_spec"] for r in self.recs("loop_fused_8b")) < GOAL,
            "on the H200 the fused loop is short of the goal in every repeat",
        )
        claim(
            beats("loop_act_attn_8b", "loop_compiled_8b"),
            "the attention-as-reductions row is faster than our plain loop in every repeat",
        )
        built = [
            (next(p for p in PATH if p[0] == BUILDS_ON.get(b[0], a[0])), b)
            for a, b in zip(PATH[4:], PATH[5:], strict=False)
        ]
        section2 = ["loop_tuned_8b", "loop_short_8b", "loop_packed_8b", "loop_fused_8b"]
        overlapping = [
            b
            for a, b in built
            if b[0] in section2 and not beats(b[0], a[0]) and not beats(a[0], b[0])
        ]
        claim(
            len(overlapping) >= 2,
            "for the steps N neither the row nor the row above it is faster in every repeat",
        )
        beating = [(w, n, a[0]) for a, (n, w, _) in built if n in section2 and beats(n, a[0])]

        def by(n: str, a: str) -> str:  # say so when the slowest repeat wins by under 1 %
            lo, hi = min(per[n]["tps"]), max(per[a]["tps"])
            return (
                f" (its slowest repeat only just: {lo:.1f} against {hi:.1f} tokens/s)"
                if (lo < 1.01 * hi)
                else ""
            )

        lesson_beating = (
            "only " + ", ".join(f"*{w}*{by(n, a)}" for w, n, a in beating)
            if beating
            else "none of them"
        )
        f.update(
            path_table=self.path_table(),
            overlap_steps=", ".join(f"*{w}*" for _, w, _ in overlapping),
            lesson_beating=lesson_beating,
        )

        def gemv_total_us(r: Rec) -> float:
            tr = r.trace()
            return sum(float(tr.dur_ns[g]) for g in token_ops(tr) if is_gemv(tr.name(g))) / 1e3

        tuned = sorted(
            (res(r)["tokens_per_s"], gemv_total_us(r)) for r in self.recs("loop_tuned_8b")
        )
        claim(
            tuned[0][1] == max(g for _, g in tuned),
            "of the tuned GEMVs' repeats, the slowest has the slowest GEMVs",
        )
        f["tuned_runs"] = "; ".join(f"{g:,.0f} µs of GEMVs and {t:.0f} tokens/s" for t, g in tuned)

        def o_proj(r: Rec) -> tuple[float, int, int, str]:
            """Duration, grid and block of layer 5's output-projection GEMV in step 2."""
            tr = r.trace()
            ops = token_ops(tr)
            cud = [i for i, g in enumerate(ops) if tr.name(g).startswith("cudnn")]
            g = next(g for g in ops[cud[5] + 1 : cud[6]] if is_gemv(tr.name(g)))
            grid, block = int(tr.extra["grid"][g]), int(tr.extra["block"][g])
            return float(tr.dur_ns[g]) / 1e3, grid, block, tr.name(g)

        o_runs = [o_proj(r) for r in self.recs("loop_packed_8b")]
        claim(
            len({n for *_, n in o_runs}) == 1,
            "layer 5's output projection is the same kernel name in every repeat",
        )
        o_us = [u for u, *_ in o_runs]
        claim(
            max(o_us) > 1.1 * min(o_us),
            "layer 5's output projection runs at speeds that differ by process",
        )
        o_name = o_runs[0][3]
        o_all = []
        for r in self.recs("loop_packed_8b"):
            tr = r.trace()
            o_all.append([float(tr.dur_ns[g]) / 1e3 for g in token_ops(tr) if tr.name(g) == o_name])
        o_slow = o_us.index(max(o_us))
        claim(
            min(o_all[o_slow]) > max(max(d) for i, d in enumerate(o_all) if i != o_slow),
            "every launch of it in the slowest repeat's token is slower than every launch in the "
            "others'",
        )
        launches = {(grid, block) for _, grid, block, _ in o_runs}
        blocks = {block for _, _, block, _ in o_runs}
        each = [f"{u:.1f} µs on {grid:,} blocks" for u, grid, _, _ in o_runs]
        listed = ", ".join(each[:-1]) + " and " + each[-1]
        if len(launches) > 1:  # launched differently: the tuning settled differently
            f["o_runs"] = (
                (
                    f"{listed}, of {blocks.pop()} threads each"
                    if len(blocks) == 1
                    else "; ".join(
                        f"{u:.1f} µs on {grid:,} blocks of {block} threads"
                        for u, grid, block, _ in o_runs
                    )
                )
                + ": coordinate-descent tuning picks each kernel's launch configuration by "
                "timing candidates the first time each kernel runs, and different processes "
                "settled differently"
            )
        else:
            f["o_runs"] = (
                f"{listed}, of {blocks.pop()} threads each: the same grid and blocks in every "
                "process, at speeds that differ by process"
            )
        return f

    # --- the bound

    @cached_property
    def copy(self) -> list[float]:
        return [
            res(r)["copy_tbs"] for v in ("loop_fused_8b", "loop_compiled_8b") for r in self.recs(v)
        ]

    def bound_facts(self) -> Facts:
        b8 = tim(self.recs("loop_fused_8b")[0])["bytes_per_token"]
        for v in ("loop_fused_8b", FINAL):
            claim(
                all(tim(r)["bytes_per_token"] == b8 for r in self.recs(v)),
                "every repeat of the fused and final loops reads the same bytes per token",
            )
            claim(
                all(res(r)["bytes_per_token"] == b8["total"] for r in self.recs(v)),
                "the results and the timings give the same bytes per token",
            )
        copy = self.copy
        fr = [res(r)["hbm_fraction_spec"] for r in self.recs("loop_fused_8b")]
        frc = [res(r)["hbm_fraction_copy"] for r in self.recs("loop_fused_8b")]
        claim(
            words.nearly_all(b8["weights"], b8["total"]),
            "On the 8B shape a token must read N GB, almost all of it weights",
        )
        return {
            "b8_gb": b8["total"] / 1e9,
            "b8_kv_mb": b8["kv_cache"] / 1e6,
            "b8_w_gb": b8["weights"] / 1e9,
            "copy_tbs": statistics.median(copy),
            "copy_tbs_lo": min(copy),
            "copy_tbs_hi": max(copy),
            "copy_spec_pct": 100 * statistics.median(copy) / self.spec_tbs,
            "floor_spec_ms": b8["total"] / (self.spec_tbs * 1e12) * 1e3,
            "at_copy_ms": b8["total"] / (statistics.median(copy) * 1e12) * 1e3,
            "goal_tps": GOAL * self.spec_tbs * 1e12 / b8["total"],
            "max_tps": self.spec_tbs * 1e12 / b8["total"],
            "lf8_frac": 100 * statistics.median(fr),
            "lf8_frac_lo": 100 * min(fr),
            "lf8_frac_hi": 100 * max(fr),
            "lf8_fracc": 100 * statistics.median(frc),
            "lf8_ms": statistics.median(res(r)["ms_per_token"] for r in self.recs("loop_fused_8b")),
            "spec_tbs": self.spec_tbs,
            "goal_pct": 100 * GOAL,
        }

    # --- tokens by class

    def table(self, name: str, shape: str = "8b") -> Table:
        """Every repeat of the fused loop ``name`` by class (made once)."""
        if name not in self._tables:
            layers = self.shapes[shape]["num_hidden_layers"]
            self._tables[name] = Table(
                [Run(r, self.shapes[shape], layers) for r in self.recs(name)]
            )
        return self._tables[name]

    def fused_facts(self, notes: bool = True) -> Facts:
        """The fused loop by class; with ``notes``, the lab notes' claims on its classes
        too (the H200's: on the H100 the down GEMV streamed faster than q/k/v)."""
        t8 = self.table("loop_fused_8b")
        f: Facts = {
            "class_table": t8.markdown(),
            "cls_rest_us": t8.rest,
            "cls_token_us": t8.token,
            "stretch_pct": 100 * t8.stretch,
        }
        f.update({f"cls_{c.split(',')[0]}_us": t8.med[c] for c in CLASSES})
        f.update({f"cls_{c}_gbs": t8.gbs[c] for c in t8.gbs})
        gemv_us = sum(t8.med[c] for c in t8.gbs)
        f.update(gemv_us=gemv_us, gemv_pct=100 * gemv_us / t8.token)
        claim(
            all(words.most(x.gemvs, x.token_us) for x in t8.runs),
            "The GEMVs take most of the token",
        )
        if not notes:
            return f
        nb = gemv_bytes(self.shapes["8b"])
        for x in t8.runs:  # every claim below, on every repeat
            t, g = x.t, x.gbs
            claim(
                t["gate_up"] > t["down"] > max(t["qkv"], t["o"]),
                "gate/up takes the most GEMV time per token, then down, then q/k/v and the output "
                "projection",
            )
            claim(
                g["lm_head"] > max(g[c] for c in ("qkv", "o", "down")),
                "the LM head reads faster than the q/k/v, output and down projections",
            )
            claim(
                g["lm_head"] / 1e3 > max(self.copy),
                "The LM head reads at N GB/s, faster than the copy",
            )
            claim(
                g["down"] < min(g["qkv"], g["gate_up"]) and nb["qkv"] < 0.5 * nb["down"],
                "The down projection reads at only N GB/s, slower than q/k/v, whose matrix is "
                "less than half the size of down's",
            )
            claim(g["o"] < g["qkv"], "the output projection also reads slower than q/k/v")
            lost = {c: t[c] - 32 * nb[c] / (g["gate_up"] * 1e9) * 1e6 for c in ("down", "o", "qkv")}
            claim(
                lost["down"] > max(lost["o"], lost["qkv"]),
                "at the gate/up rate, down would take more time off than the output or q/k/v "
                "projections",
            )
        for c in ("down", "o"):
            f[f"lost_{c}_us"] = t8.med[c] - 32 * nb[c] / (t8.gbs["gate_up"] * 1e9) * 1e6
        return f

    def runs_note(self) -> str:
        """How the current recordings were made: over how many days, and how many of their
        processes ran while another recording process ran beside them (the recorder runs one
        process per GPU at a time, so beside them means on another GPU of the host)."""
        import datetime as dt

        names = [*(n for n, _, _ in PATH), CHECK, "loop_compiled_1b", "loop_fused_1b"]
        spans, days = [], set()
        for n in names:
            for r in self.recs(n):
                at = str(r.env["recorded_at"])
                days.add(at[:10])
                end = dt.datetime.fromisoformat(at).timestamp()
                spans.append((end - float(r.env["wall_s"]), end))
        # recorded_at is stamped to the second, hence the 1 s of slack
        beside = sum(
            any(a < d - 1 and c < b - 1 for j, (c, d) in enumerate(spans) if j != i)
            for i, (a, b) in enumerate(spans)
        )
        # Only the kept recordings are compared: a process may also have run beside one
        # whose recording was replaced since, hence "at least".
        alone = (
            f"at least {beside} of their {len(spans)} processes ran while another recording "
            "process ran on a second GPU of the same host"
            if beside
            else f"none of their {len(spans)} processes ran beside another kept here"
        )
        on = "one day" if len(days) == 1 else f"{len(days)} days"
        return f"These repeats come from recording runs on {on}; {alone}."

    # --- the final loop, class by class (the lesson; the details in part4-kernels)

    def final_facts(self) -> Facts:
        """The final loop, class by class: :func:`_final_loop.final_facts`."""
        return _final_loop.final_facts(self)

    def logits_facts(self) -> Facts:
        """The final loop's logits check: :func:`_final_loop.logits_facts`."""
        return _final_loop.logits_facts(self)

    def l2_bytes(self) -> int | None:
        """The GPU's L2 size as the device reports it, stamped by the logits check (None
        until it is recorded)."""
        try:
            rs = self.recs(CHECK)
        except RuntimeError:  # tracesite's RecordingError: not recorded yet
            return None
        sizes = {res(r)["l2_cache_bytes"] for r in rs}
        claim(len(sizes) == 1, "every repeat of the logits check reports the same L2 size")
        return int(sizes.pop())
