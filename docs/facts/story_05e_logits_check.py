"""Story 05e's claims (examples/05_llm_decode/05e_logits_check.py): each sentence its text
says about the recordings, checked on every repeat of both GPUs (``logits_check_8b`` and
the final loop it is set against, ``loop_untuned_8b``, are recorded on both). It pastes
nothing: the story prints its numbers from the replay.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter

from _decode import CHECK, FINAL, calls_per_step, res, tim, token_ops
from story_05a_generate import ranked_by_gpu_time, table
from tracesite.facts import Facts, claim
from tracesite.words import few, hundreds

import tracereader
from tracereader import Kind, Trace

EXAMPLE = "05_llm_decode"
GPUS = ("h200", "h100")


def _kernels(tr: Trace) -> Counter[str]:
    """The profiled token's GPU ops by name, Inductor's numbered suffixes dropped."""
    return Counter(re.sub(r"_\d+$", "", tr.name(g)) for g in token_ops(tr))


def _launch(tr: Trace, step: str) -> tuple[int, int]:
    """The step's one ``cudaGraphLaunch`` call: (start, end) in ns."""
    s = tr.step(step)
    (i,) = tr.where(name="cudaGraphLaunch", within=(s.start_ns, s.end_ns))
    return int(tr.ts_ns[i]), int(tr.end_ns[i])


def facts(f: Facts) -> None:
    def each() -> None:
        r = f.rec(CHECK)
        x, t, tr = res(r), tim(r), r.trace()
        n = t["new_tokens"] - 1
        claim(r.params["shape"] == "8b", "The model is Llama-3-8B's shape")
        claim(
            len(x["positions"]) == n
            and all(len(v) == n for v in x.values() if isinstance(v, list)),
            "this story keeps the logits of every decoded position ... per decoded position "
            "where it is a list",
        )
        claim(
            all((gap == 0) == agrees for agrees, gap in zip(x["argmax_agrees"], x["ref_gap"],
                                                              strict=True))
            and all(gap >= 0 for gap in x["ref_gap"]),
            "argmax_agrees: whether the loop's token is the reference's choice, and ref_gap: "
            "where it is not, by how much the reference preferred its own",
        )  # fmt: skip
        claim(
            x["prefill_agrees"] is True,
            "prefill_agrees: the first new token (the prefill picks it) is the reference's "
            "choice too",
        )
        claim(
            x["weights_match"] is True,
            "weights_match: the reference's LM head equals the loop's",
        )
        ms, ms_read = t["ms_per_token"], t["ms_per_token_item"]
        claim(
            len(ms) == len(ms_read) >= 2
            and abs(statistics.median(ms) - x["ms_per_token"]) < 1e-3
            and abs(statistics.median(ms_read) - x["ms_per_token_item"]) < 1e-3
            and abs(1e3 * (x["ms_per_token_item"] - x["ms_per_token"]) - x["item_us_per_token"])
            < 0.1,
            "ms_per_token and ms_per_token_item: the median time per token without and with the "
            "host read, and item_us_per_token, their difference in µs",
        )
        claim(
            x["graphs_compiled_while_timed"] == 0,
            "graphs_compiled_while_timed: graphs compiled during the timing (0 expected)",
        )
        final = f.trace(FINAL)
        extra = _kernels(tr) - _kernels(final)
        claim(
            not _kernels(final) - _kernels(tr)
            and set(extra) == {k for k in extra if "DtoH" in k}
            and sum(extra.values()) == 1,
            "check_loop_logits builds that loop (the settings loop_untuned_8b runs with)",
        )
        # the host read: one device-to-host copy and one wait per decoded step
        steps = tr.steps
        for s in steps:
            inside = (s.start_ns, s.end_ns)
            copies = tr.where(kind=Kind.MEMCPY, contains="DtoH", within=inside)
            waits = tr.where(name="cudaStreamSynchronize", within=inside)
            claim(
                len(copies) == 1 and len(waits) == 1 and tr.dur_ns[waits].sum() > 0,
                "find each token's device-to-host copy and the CPU's wait beside it in the "
                "trace, one per decoded step",
            )
        claim(
            set(calls_per_step(final, "cudaStreamSynchronize")) == {0}
            and not len(final.where(kind=Kind.MEMCPY, contains="DtoH")),
            "Without read, the loop never asks the host for a value while decoding",
        )
        rows = table(r)
        claim(
            ranked_by_gpu_time(rows),
            "The table keeps the 15 ops with the most GPU time over the profiled run",
        )
        (region,) = [row for row in rows if row["name"].startswith("Torch-Compiled Region")]
        claim(few(region["calls"]), "(the prefill, then a few tokens)")
        claim(
            not any("Synchronize" in row["name"] or "DtoH" in row["name"] for row in rows),
            "so the waits themselves hardly show in it",
        )
        # where the host read's cost comes from
        names = [s.name for s in steps]
        for a, b in zip(names, names[1:], strict=False):
            sync = tr.where(name="cudaStreamSynchronize", within=(tr.step(a).start_ns,
                                                                  tr.step(a).end_ns))  # fmt: skip
            lo, hi = int(tr.end_ns[sync[-1]]), _launch(tr, b)[1]
            first = min(int(tr.ts_ns[g]) for g in token_ops(tr, b))
            claim(
                tracereader.gpu_busy_us(tr, window=(lo, hi)) < 0.05 * (hi - lo) / 1e3
                and first > lo,
                "once the CPU waits for each token, the GPU in turn waits, after each wait, for "
                "the CPU to launch the next token's graph",
            )
        launches = [_launch(tr, s) for s in names] + [_launch(final, s.name) for s in final.steps]
        claim(
            all(hundreds((b - a) // 1000) for a, b in launches),
            "(cudaGraphLaunch, hundreds of µs of CPU time)",
        )
        for s in final.steps[1:]:
            a, b = _launch(final, s.name)
            claim(
                tracereader.gpu_busy_us(final, window=(a, b)) > 0.9 * (b - a) / 1e3,
                "which without the host read runs while the GPU works",
            )

    f.repeats(each, n=f.n_repeats(CHECK))

    if f.gpu == "h200":
        h100 = f.on("h100")
        claim(
            len(h100.recs(CHECK)) == len(f.recs(CHECK))
            and all(
                (r.results or {}).get("tokens_per_s") for r in f.recs(CHECK) + h100.recs(CHECK)
            ),
            "On the site, the table of this variant's recordings follows, on both GPUs, with its "
            "tokens per second",
        )
