"""Part 4's facts (``chapters/part4.md``): an LLM decoding with transformers.

Every number the page quotes and every claim it makes about the recordings of
``05_llm_decode`` (:func:`facts`), computed by :class:`_chapter.Chapter` and
:func:`_decode.generate_facts` and checked on every repeat. Numbers are medians over the
repeats. The windows and events the page's pictures draw (``*_window``,
:func:`decode_zoom`, ...) are chosen here too; the page draws them.

No drawing here; what Part 4's facts modules may read, :mod:`_part4` says.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _chapter import LESSON_PATH, Chapter
from _decode import (
    CHECK,
    FINAL,
    GEMV_CLASSES,
    GOAL,
    classify,
    decode_steps,
    generate_facts,
    res,
    sync_window,
    syncs,
    tile,
    token_ops,
)
from _part4 import EXAMPLE, prompt_tokens, shapes
from _paste import paste, paste_each_repeat
from tracesite.facts import Facts, claim
from tracesite.words import beyond_spread

import tracereader
from tracereader import Trace, link

__all__ = [  # facts, and what the page's pictures read
    "CHECK",
    "EXAMPLE",
    "FINAL",
    "decode_zoom",
    "facts",
    "graph_launches",
    "layer_window",
    "longest_gap_us",
    "python_gap_op",
    "sync_window",
    "syncs",
    "token_ops",
    "tokens_window",
]


#: Every claim is checked on both GPUs' recordings; the H100's keys are pasted as h100_*.
GPUS = ("h200", "h100")
#: What the lesson reads on a GPU: its short path and the static cache alone. The lab notes'
#: other rows (the one-change-at-a-time path, the kernels' sweeps) are the H200's only.
LESSON_ROWS = (*LESSON_PATH, "generate_static_1b")


def facts(f: Facts) -> None:
    rec, recs, num, md = f.rec, f.recs, f.num, f.md

    every_row = f.gpu == "h200"
    C = Chapter(recs, shapes(), names=None if every_row else LESSON_ROWS)

    md("stamp", f.stamp())
    num("n_repeats", len(recs(FINAL)))
    num("prompt", prompt_tokens())
    T: Any = rec(FINAL).timings()
    num("new_tokens", T["new_tokens"])
    num("decoded", T["new_tokens"] - 1)
    num("timed_runs", len(T["ms_per_token"]))
    ch: dict[str, Any] = {
        **(C.path_facts() if every_row else C.lesson_path_facts()),
        **C.bound_facts(),
        **C.fused_facts(notes=every_row),
        **C.final_facts(),
        **C.logits_facts(),
    }
    if every_row:  # the lesson's path with the H100's tokens/s beside the H200's
        on_h100 = f.on("h100")
        h100 = Chapter(on_h100.recs, shapes(), names=LESSON_ROWS)
        ch["lesson_path_table"] = C.lesson_table(beside=("H100", h100))
        ch["class_table_final"] = C.table(FINAL).markdown(beside=("H100", h100.table(FINAL)))

        def kernels(tr: Trace) -> list[tuple[str, str]]:
            """A token's kernels by class and name, sorted."""
            return sorted((c, tr.name(g)) for c, _, g in classify(tr, token_ops(tr), 32))

        final = [kernels(r.trace()) for r in recs(FINAL) + on_h100.recs(FINAL)]
        claim(
            all(k == final[0] for k in final),
            "the final loop runs the same kernels, class by class, on the H100 as on the H200",
        )
        rows8 = [n for n in LESSON_PATH if n.endswith("_8b")]
        claim(
            all(beyond_spread(C.per[n]["tps"], h100.per[n]["tps"]) for n in rows8),
            "On the 8B rows the H200 was faster in every repeat. ...",
        )
        rows1 = [n for n in LESSON_PATH if n.endswith("_1b")]
        claim(
            all(
                min(C.per[n]["tps"]) <= max(h100.per[n]["tps"])
                and min(h100.per[n]["tps"]) <= max(C.per[n]["tps"])
                and max(C.per[n]["busy"] + h100.per[n]["busy"]) < 0.9
                for n in rows1
            ),
            "... On the 1B rows the two GPUs' repeats overlapped (...): there the GPU idles "
            "part of every token, and the host CPU sets the pace, not the memory.",
        )
        g1 = "generate_static_compiled_1b"
        for gpu, ch_ in (("h200", C), ("h100", h100)):
            num(f"g1_{gpu}_lo", min(ch_.per[g1]["tps"]))
            num(f"g1_{gpu}_hi", max(ch_.per[g1]["tps"]))
    paste(
        f,
        ch,
        md="lesson_path_table class_table_final",
        num="gsc8_sync_ms gsc8_prof_ms gsc8_ms gsc1_tps gd1_tps gsc8_busy lc8_launches lc8_busy "
        "lu8_tps b8_gb copy_tbs_lo copy_tbs_hi copy_spec_pct floor_spec_ms max_tps "
        "lf8_frac spec_tbs goal_pct gemv_pct final_frac f_token_us f_gemv_over_us f_small_us "
        "f_rest_us f_floor_us f_gemv_pct f_lost_us f_o_gbs f_gate_up_gbs lg_positions lg_agree "
        "item_us item_us_lo item_us_hi lg_abs_med lg_agree_lo lg_agree_hi",
    )
    if f.gpu == "h200":
        claim(
            ch["gsc8_ahead"] and not ch["gsc8_rerecorded"],
            "Once the CPU runs ahead, as in the compiled generate() of the 8B model on the "
            "H200, the same check waits for the GPU to finish the previous token: N ms",
        )
    else:
        claim(
            ch["gsc8_rerecorded"] and not ch["gsc8_ahead"],
            "On the H100, every repeat recorded the CUDA graph again in the token before the "
            "profiled one, so that token started on an idle GPU: the recording cannot tell "
            "whether the CPU runs ahead there.",
        )
    # The final loop's profiled token: the GPU's idle time between its ops, every repeat.
    between = [idle_between_us(r.trace()) for r in recs(FINAL)]
    claim(
        all(longest < 10 for _, longest, _ in between),
        "no gap between the final loop's GPU ops lasts 10 µs, in every repeat",
    )
    idle = [total for total, _, _ in between]
    num("f_between_us", float(np.median(idle)))
    num("f_between_us_lo", min(idle))
    num("f_between_us_hi", max(idle))
    num("f_ops", between[0][2])
    num("f_between_per_op_us", float(np.median(idle)) / (between[0][2] - 1))
    claim(len({n for _, _, n in between}) == 1, "every repeat's token runs as many GPU ops")
    if f.gpu == "h100":  # its profiled hand-offs alone exceed the unprofiled rest
        claim(
            all(b > x.rest for b, x in zip(idle, C.table(FINAL).runs, strict=True)),
            "on the H100 the idle between ops, profiled, is more than its whole rest",
        )
    # compiled generate(), 1B: the longest idle stretch of the profiled token, every repeat
    g1gap = [longest_gap_us(r.trace()) for r in recs("generate_static_compiled_1b")]
    num("g1_gap_us_lo", min(g1gap))
    num("g1_gap_us_hi", max(g1gap))
    num("read_gap_ms", ch["read_gap_ms"])  # not pasted: a picture's caption reads them
    num("read_gap_drawn_ms", ch["read_gap_drawn_ms"])
    # The cards: each repeat's env names its GPU's UUID (several cards of one model per GPU).
    read = (*LESSON_ROWS, "loop_fused_8b", CHECK)  # every variant this page reads
    num("n_cards", len({r.env["gpu_uuid"] for n in read for r in recs(n)}))

    # The final loop's token time plus the host read's cost per token (medians), over the bytes
    # a token must read at the specified bandwidth; below the goal whichever repeats are paired.
    floor_ms = ch["floor_spec_ms"]
    num("read_frac", 100 * floor_ms / (ch["f_ms"] + ch["item_us"] / 1e3))
    with_read = [
        floor_ms / (res(a)["ms_per_token"] + res(b)["item_us_per_token"] / 1e3)
        for a in recs(FINAL)
        for b in recs(CHECK)
    ]
    if f.gpu == "h200":
        claim(
            max(with_read) < GOAL,
            "A server that also reads each token back (the `.item()` measured above) would "
            "see N % on the H200, below the goal, ...",
        )
    else:
        claim(min(with_read) > GOAL, "... and N % on the H100, above it.")
    for r in recs(CHECK):  # the logits check, every repeat
        x = res(r)
        agree, n = sum(x["argmax_agrees"]), len(x["positions"])
        # per position it keeps fp32's margin (ref_gap) and differences over all the logits
        # (max_abs_diff, rel_err); the bf16_* fields are not a fair baseline (part4-kernels)
        kept = {k for k, v in x.items() if isinstance(v, list) and len(v) == n}
        known = {"positions", "argmax_agrees", "ref_gap", "max_abs_diff", "rel_err"}
        claim(
            0 < agree < n and all(k in known or k.startswith("bf16_") for k in kept),
            "The loop's token was fp32's top token at N of M positions. Whether the others "
            "are bf16 rounding or a kernel's error, this recording cannot tell: it holds no "
            "fair bf16 baseline, and no difference for the two tokens themselves, only the "
            "largest over the whole vocabulary.",
        )

    if f.gpu == "h200":
        two_gpus(f)

    paste_each_repeat(  # what generate() runs per token, one repeat
        f,
        lambda: generate_facts(
            rec("generate_dynamic_1b"), rec("generate_static_1b"), C.shapes["1b"]
        ),
        md="pre_tile",
        num="dyn_dec_kernels dyn_dec_cpu_ms dyn_dec_busy_ms dyn_busy_pct dyn_unprof_ms dec_tnn "
        "tnn_n eager_sync_us",
    )


def two_gpus(f: Facts) -> None:
    """Your GPU, not ours: the final loop on the H200 and the H100, each against its own
    datasheet bandwidth (every repeat of both GPUs)."""
    readers = {"h200": f, "h100": f.on("h100")}
    per: dict[str, dict[str, Any]] = {}
    for gpu, reader in readers.items():
        rs = reader.recs(FINAL)
        sheet = tracereader.datasheet(str(rs[0].meta["env"]["gpu"]))
        claim(sheet is not None, f"the {gpu}'s recordings name a GPU with a datasheet row")
        assert sheet is not None  # for the type checker: the claim above holds it
        x = [res(r) for r in rs]
        gen = [res(r)["tokens_per_s"] for r in reader.recs("generate_static_compiled_8b")]
        per[gpu] = {
            "sheet": sheet,
            "gen": gen,
            "tps": [v["tokens_per_s"] for v in x],
            "frac": [v["achieved_tbs"] / sheet.hbm_tbs for v in x],
            "copy_frac": [v["achieved_tbs"] / v["copy_tbs"] for v in x],
            "ceiling": sheet.hbm_tbs * 1e12 / x[0]["bytes_per_token"],
        }
        claim(
            len({v["bytes_per_token"] for v in x}) == 1,
            "every repeat reads the same bytes per token",
        )
    h200, h100 = per["h200"], per["h100"]
    claim(
        all(min(p["frac"]) > GOAL for p in per.values()),
        "each GPU read its bytes above the goal's share of its own datasheet bandwidth, "
        "in every repeat",
    )
    claim(
        beyond_spread(h200["tps"], h100["tps"]),
        "the H200 decoded more tokens per second than the H100 in every repeat",
    )
    claim(
        all(beyond_spread(p["tps"], p["gen"]) for p in per.values()),
        "on both GPUs the final loop decoded faster than generate() in every repeat",
    )
    claim(
        min(h100["frac"]) > max(h200["frac"]),
        "the H100 reached a larger share of its own bandwidth, in every repeat",
    )
    bw_ratio = h200["sheet"].hbm_tbs / h100["sheet"].hbm_tbs
    tps_ratio = float(np.median(h200["tps"]) / np.median(h100["tps"]))
    claim(1 < tps_ratio < bw_ratio, "by less than the ratio of their datasheet bandwidths")
    f.nums({"gpu_tps_ratio": tps_ratio, "gpu_bw_ratio": bw_ratio})
    rows = [
        "| GPU | Datasheet bandwidth | Ceiling | Final loop | Share of datasheet | "
        "Share of a copy | `generate()` compiled |",
        "|:---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in per.values():
        lo, hi = min(p["tps"]), max(p["tps"])
        rows.append(
            f"| {p['sheet'].gpu} | {p['sheet'].hbm_tbs:g} TB/s | {p['ceiling']:.0f} tokens/s "
            f"| {np.median(p['tps']):.0f} ({lo:.0f}–{hi:.0f}) tokens/s "
            f"| {100 * np.median(p['frac']):.0f} % | {100 * np.median(p['copy_frac']):.0f} % "
            f"| {np.median(p['gen']):.0f} tokens/s |"
        )
    f.md("gpu_table", "\n".join(rows))


# ---------------------------------------------------------------------- what the pictures show


def python_gap_op(tr: Trace) -> int:
    """The GPU op after the longest idle gap of the sync picture's window (generate()'s Python)."""
    return int(max(tracereader.gaps(tr, window=sync_window(tr)), key=lambda g: g.gap_us).next_op)


def decode_zoom(
    tr: Trace, before_us: float = 120, after_us: float = 80
) -> tuple[tuple[int, int], int, int]:
    """A window in the middle of an eager decode token (step 2): the window, one of its
    nvjet GEMMs and that GEMM's launch call."""
    nv = [g for g in token_ops(tr) if tile(tr.name(g))]
    g = nv[len(nv) // 4]
    start = int(tr.ts_ns[g])
    return (start - int(before_us * 1e3), start + int(after_us * 1e3)), g, int(link(tr).launch[g])


def graph_launches(tr: Trace) -> list[int]:
    """The trace's ``cudaGraphLaunch`` calls, in time order."""
    return [int(i) for i in tr.where(name="cudaGraphLaunch")]


def tokens_window(tr: Trace) -> tuple[int, int]:
    """From the first decode step's start to the end of the last step's last GPU op."""
    steps = decode_steps(tr)
    return steps[0].start_ns, int(tr.end_ns[token_ops(tr, steps[-1].name)[-1]])


def longest_gap_us(tr: Trace, step: str = "ProfilerStep#2") -> float:
    """The longest GPU idle gap among the step's own GPU ops, µs."""
    return idle_between_us(tr, step)[1]


def idle_between_us(tr: Trace, step: str = "ProfilerStep#2") -> tuple[float, float, int]:
    """The step's GPU ops: the idle time between them summed, the longest such gap (µs),
    and how many ops."""
    ops = token_ops(tr, step)
    starts, ends = tr.ts_ns[ops], np.maximum.accumulate(tr.end_ns[ops])
    gaps = np.maximum(starts[1:] - ends[:-1], 0) / 1e3
    return float(gaps.sum()), float(gaps.max()), len(ops)


def layer_window(
    tr: Trace, layers: int = 32, layer: int = 5
) -> tuple[tuple[int, int], dict[str, int]]:
    """One layer of a fused loop's step-2 token: the window from its q/k/v GEMV to the
    next layer's, and the row of its first op of each class."""
    rows = classify(tr, token_ops(tr), layers)
    gemvs = [i for i, (c, _, _) in enumerate(rows) if c in GEMV_CLASSES or c == "lm_head"]
    a, b = gemvs[4 * layer], gemvs[4 * layer + 4]
    first: dict[str, int] = {}
    for c, _, g in rows[a:b]:
        first.setdefault(c, g)
    return (int(tr.ts_ns[rows[a][2]]) - 2000, int(tr.ts_ns[rows[b][2]]) + 1000), first
