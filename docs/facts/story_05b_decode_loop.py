"""Story 05b's claims (examples/05_llm_decode/05b_decode_loop.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. The H100 recorded three of the
story's variants (``loop_compiled_8b``, ``loop_tuned_8b``, ``loop_fused_8b``): a sentence
about those is checked on both GPUs, one about the others (the short cache, packed GQA, the
two further attempts, the 1B rows and the printed table of ``loop_fused_1b``) only on the
H200 (``if f.gpu == "h200"``). It pastes nothing: the story prints its numbers from the
replay.
"""

from __future__ import annotations

import re

from _decode import calls_per_step, decode_steps, is_gemv, res, tile, tim, token_ops
from _part4 import shapes
from story_05a_generate import ranked_by_gpu_time, table
from tracesite.facts import Facts, claim
from tracesite.words import beyond_spread, few

from tracereader import Kind, Trace

EXAMPLE = "05_llm_decode"
GPUS = ("h200", "h100")

#: The 8B rows, each changing one thing from the row above.
ROWS = (
    "loop_compiled_8b",
    "loop_tuned_8b",
    "loop_short_8b",
    "loop_packed_8b",
    "loop_fused_8b",
    "loop_act_8b",
    "loop_act_attn_8b",
)
#: The 1B rows and the 8B row each repeats.
ONE_B = {"loop_compiled_1b": "loop_compiled_8b", "loop_fused_1b": "loop_fused_8b"}
#: The variants the H100 recorded too.
ON_BOTH = ("loop_compiled_8b", "loop_tuned_8b", "loop_fused_8b")
#: The changes the docstring lists as removing something the trace shows.
CHANGES = ("loop_tuned_8b", "loop_short_8b", "loop_packed_8b", "loop_fused_8b")


def _kinds(tr: Trace) -> set[str]:
    """The kernel names of the profiled token, Inductor's numbered suffixes dropped."""
    return {re.sub(r"_\d+$", "", tr.name(g)) for g in token_ops(tr)}


def _names(tr: Trace) -> list[str]:
    return [tr.name(g) for g in token_ops(tr)]


def facts(f: Facts) -> None:
    h200 = f.gpu == "h200"
    mine = [*ROWS, *ONE_B] if h200 else list(ON_BOTH)
    layers = shapes()["8b"]["num_hidden_layers"]

    def each() -> None:
        for name in mine:
            r = f.rec(name)
            tr = r.trace()
            claim(tim(r)["new_tokens"] == 64, "greedy decoding, batch 1, ... 64 new ones")
            claim(
                set(calls_per_step(tr, "cudaGraphLaunch")) == {1}
                and set(calls_per_step(tr, "cudaStreamSynchronize")) == {0},
                "compile one decoding step into one CUDA graph ... and replay it with one "
                "launch per token: nothing waits for the host (the CPU) between tokens",
            )
            rows = table(r)
            steps = [row for row in rows if row["name"] == "ProfilerStep*"]
            claim(
                len(steps) == 1
                and steps[0]["calls"] == r.params.get("profiled_tokens", 6)
                and few(steps[0]["calls"]),
                "then profiles a few tokens, one profiler step per token",
            )
            claim(
                res(r)["hbm_fraction_spec"] < 1,
                "the time the GPU needs to read the weights is a floor no loop can beat",
            )
        # tune_gemv: Inductor's own GEMVs instead of cuBLAS's
        plain, tuned = f.trace("loop_compiled_8b"), f.trace("loop_tuned_8b")
        claim(
            any(tile(n) for n in _names(plain))
            and not any(is_gemv(n) for n in _names(plain))
            and not any(tile(n) or "cublas" in n for n in _names(tuned))
            and sum(is_gemv(n) for n in _names(tuned)) > 4 * layers,
            "tune_gemv=True ... rewrites each one-row matrix multiply (a GEMV) as a "
            "multiply-and-sum that it generates and tunes itself, instead of calling cuBLAS",
        )
        if not h200:
            return
        for above, row in zip(ROWS, ROWS[1:], strict=False):
            params, before = f.rec(row).params, f.rec(above).params
            changed = {k for k in params.keys() | before.keys() if params.get(k) != before.get(k)}
            claim(len(changed) == 1, "Each row changes one thing from the row above")
        for small, big in ONE_B.items():
            p, q = f.rec(small).params, f.rec(big).params
            claim(
                {k: v for k, v in p.items() if k != "shape"}
                == {k: v for k, v in q.items() if k != "shape"}
                and p["shape"] == "1b",
                "the 1B rows repeat two of them at the smaller shape",
            )
        for row in CHANGES:
            above = ROWS[ROWS.index(row) - 1]
            claim(
                bool(_kinds(f.trace(above)) - _kinds(f.trace(row))),
                "Each change aims at it, and each one shows in the trace (a kernel the row "
                "above ran is gone)",
            )
        short, packed = f.trace("loop_short_8b"), f.trace("loop_packed_8b")
        claim(
            any("clone_expand" in n for n in _names(short))
            and not any("clone_expand" in n for n in _names(packed)),
            "packed_gqa=True: attention on the key/value heads as they are, ... instead of "
            "copies of them",
        )
        fused = f.trace("loop_fused_8b")
        claim(
            sum(is_gemv(n) for n in _names(packed)) == 5 * layers + 1
            and sum(is_gemv(n) for n in _names(fused)) == 4 * layers + 1,
            "Inductor already ran gate and up as one kernel, so what changes is q with k and v: "
            "fewer GEMVs",
        )

        def splits(tr: Trace) -> int:
            """Kernels that split the q/k/v output and write the cache, beside the rotary
            embedding's (``cos``, ``sin``) and the GEMVs."""
            return sum(
                "split_with_sizes" in n and "index_copy" in n and "cos" not in n and not is_gemv(n)
                for n in _names(tr)
            )

        claim(
            not any("split_with_sizes" in n for n in _names(packed)) and splits(fused) == layers,
            "and a new kernel that splits their output and writes the cache",
        )
        for name in ("loop_act_8b", "loop_act_attn_8b"):
            process = f.rec(name).meta["process"]
            claim(
                process["fresh"] and process["variants_in_it"] == [name],
                "run each of its variants in a fresh process (the site's recorder does)",
            )
        act, act_attn = f.trace("loop_act_8b"), f.trace("loop_act_attn_8b")
        claim(
            sum(is_gemv(n) and "silu" in n for n in _names(fused)) == layers
            and not any(is_gemv(n) and "silu" in n for n in _names(act))
            and sum("at::native" in n and "silu_kernel" in n for n in _names(act)) == layers,
            "materialize_act computes the MLP's activation silu(gate) * up once, in an op "
            "Inductor cannot fuse, before the down projection, instead of letting Inductor "
            "recompute it inside every block of that GEMV",
        )
        claim(
            sum(n.startswith("cudnn") for n in _names(act)) == layers
            and not any("cudnn" in n for n in _names(act_attn))
            and any("softmax" in n for n in _names(act_attn)),
            "reduce_attention writes one token's attention as multiply-and-sum reductions "
            "that Inductor generates and tunes itself, ... instead of calling cuDNN's "
            "attention kernel",
        )
        # the printed table: the fused loop at 1B
        r1 = f.rec("loop_fused_1b")
        rows = table(r1)
        claim(
            ranked_by_gpu_time(rows),
            "It keeps the 15 ops with the most GPU time over the profiled run",
        )
        layers_1b = shapes()["1b"]["num_hidden_layers"]
        (mm,) = [row for row in rows if row["name"] == "aten::mm"]
        (region,) = [row for row in rows if row["name"].startswith("Torch-Compiled Region")]
        n = r1.params.get("profiled_tokens", 6)
        claim(
            mm["calls"] == 4 * layers_1b + 1 and region["calls"] == n - 1 and few(region["calls"]),
            "(the prefill, uncompiled, then a few tokens)",
        )
        tr1 = r1.trace()
        launches = tr1.where(name="cudaGraphLaunch")
        claim(
            not any(row["name"] == "cudaGraphLaunch" for row in rows)
            and len(launches) == len(decode_steps(tr1))
            and all(tr1.dur_ns[i] > 0 and tr1.kind[i] == Kind.RUNTIME for i in launches),
            "The graph launches themselves (cudaGraphLaunch, one per token) take CPU time, not "
            "GPU time, so the table leaves them out: ... one under each token's step",
        )

    f.repeats(each, n=f.n_repeats("loop_fused_8b"))

    if h200:  # every repeat at once
        tps = {n: [res(r)["tokens_per_s"] for r in f.recs(n)] for n in ROWS}
        claim(
            not all(beyond_spread(tps[b], tps[a]) for a, b in zip(ROWS, ROWS[1:], strict=False)),
            "Not every change moved tokens/s beyond the spread of the repeats",
        )
        h100 = f.on("h100")
        claim(
            all(len(h100.recs(n)) == len(f.recs(n)) for n in ON_BOTH)
            and all(
                (r.results or {}).get("tokens_per_s")
                for n in [*ROWS, *ONE_B]
                for r in f.recs(n) + (h100.recs(n) if n in ON_BOTH else [])
            ),
            "the table of every recording of these variants follows, the H200's and, where it "
            "recorded them, the H100's, with each one's tokens per second",
        )
