"""Story 05c's claims (examples/05_llm_decode/05c_kernels.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. Of the story's variants the
H100 recorded only the final loop, ``loop_untuned_8b`` (the printed table's): a sentence
about it, or about the fused loop of 05b (``loop_fused_8b``, recorded on both), is checked
on both GPUs; one about the other rows, the GEMV sweep (``gemv_settings_8b``) or the
attention row's earlier sessions only on the H200 (``if f.gpu == "h200"``). It pastes
nothing: the story prints its numbers from the replay.
"""

from __future__ import annotations

from _attention_kernels import heaviest_pointwise
from _decode import (
    FINAL,
    GEMV_CLASSES,
    Run,
    Table,
    decode_steps,
    is_gemv,
    res,
    tile,
    tim,
    token_ops,
)
from _part4 import shapes
from part4_kernels import GEMV_BLOCK_K, GEMV_SWEEP, GEMV_WARPS, gemv_rows
from story_05a_generate import ranked_by_gpu_time, table
from tracesite.facts import Facts, claim
from tracesite.words import far, few

from tracereader import Trace, link

EXAMPLE = "05_llm_decode"
GPUS = ("h200", "h100")

#: The story's rows, in its table's order.
ROWS = ("loop_kernels_8b", "loop_kernels_sdpa_8b", "loop_norms_8b", "loop_attention_8b", FINAL)
#: The fused loop of the previous story, which the docstring starts from.
FUSED = "loop_fused_8b"


def _names(tr: Trace) -> list[str]:
    return [tr.name(g) for g in token_ops(tr)]


def _norms(tr: Trace) -> int:
    """Inductor's RMSNorm reductions in the profiled token (a mean of squares)."""
    return sum(n.startswith("triton_red") and "mean" in n for n in _names(tr))


def facts(f: Facts) -> None:
    h200 = f.gpu == "h200"
    rows = ROWS if h200 else (FINAL,)
    shape = shapes()["8b"]
    layers = shape["num_hidden_layers"]

    def each() -> None:
        claim(
            all(r.meta["process"]["fresh_compile_cache"] for r in (f.rec(FUSED), f.rec(FINAL))),
            "every process that compiles from an empty cache (as the recorder's do)",
        )
        for name in rows:
            r = f.rec(name)
            tr = r.trace()
            names = _names(tr)
            claim(r.params["shape"] == "8b", "The model is Llama-3-8B's shape")
            claim(
                names.count("gemv_kernel") == 4 * layers + 1
                and not any(is_gemv(n) and n != "gemv_kernel" or tile(n) for n in names),
                "Here every GEMV of a decoded token runs one Triton kernel of our own",
            )
            gemvs = [g for g in token_ops(tr) if tr.name(g) == "gemv_kernel"]
            claim(
                [int(tr.extra["grid"][g]) for g in gemvs[:4]] == gemv_rows(shape)
                and {int(tr.extra["block"][g]) for g in gemvs} == {32 * GEMV_WARPS},
                "one program (one instance of the kernel, run by one thread block) per output "
                "row ... (one row per program, 8 warps ...)",
            )
            claim(
                {tr.name(int(link(tr).launch[g])) for g in gemvs} == {"cudaGraphLaunch"},
                "so that torch.compile puts the kernel itself into the CUDA graph",
            )
            claim(
                "kernel_logits_max_abs_diff" in tim(r),
                "It also writes how far the kernels' logits are from the model's own "
                "(kernel_logits_max_abs_diff in timings.json)",
            )
            claim(
                r.params["cache_len"] == 256 and r.params["packed_gqa"],
                "all run the fused loop with a short cache and attention on the key/value heads",
            )
            attention = r.params.get("attention", "sdpa")
            claim(
                (names.count("attention_kernel") == layers) == (attention == "kernel")
                and (sum(n.startswith("cudnn") for n in names) == layers) == (attention == "sdpa"),
                "attention picks one token's attention: sdpa (cuDNN's kernel in the H200 "
                "recordings), reductions or kernel (attention_kernel)",
            )
            if attention == "kernel":
                att = [g for g in token_ops(tr) if tr.name(g) == "attention_kernel"]
                claim(
                    {int(tr.extra["grid"][g]) for g in att} == {shape["num_attention_heads"]},
                    "attention_kernel computes one query token's attention: one program per "
                    "query head",
                )
        final = f.rec(FINAL)
        claim(final.params["tune_gemv"] is False, "and finally Inductor's remaining tuning is "
              "turned off")  # fmt: skip
        for name in ("loop_attention_8b", FINAL) if h200 else (FINAL,):
            tr = f.trace(name)
            ops = token_ops(tr)
            ind = sum(float(tr.dur_ns[g]) for g in ops if tr.name(g).startswith("triton_"))
            claim(  # small: under an eighth of the token's GPU time
                ind < 0.125 * sum(float(tr.dur_ns[g]) for g in ops),
                "what Inductor still generates is small: the norms, the rotary embedding, the "
                "cache writes",
            )
        # the printed table: the final loop
        rows_ = table(final)
        claim(
            ranked_by_gpu_time(rows_),
            "The table keeps the 15 ops with the most GPU time over the profiled run",
        )
        (steps,) = [row for row in rows_ if row["name"] == "ProfilerStep*"]
        claim(few(steps["calls"]), "then profiles a few tokens, one profiler step per token")
        printed = [row["name"] for row in rows_]
        claim(
            "gemv_kernel" in printed and "attention_kernel" in printed,
            "Find gemv_kernel and attention_kernel by name",
        )
        tr = final.trace()
        decoded = {n for s in decode_steps(tr) for n in _names_in(tr, s.name)}
        prefill = [n for n in printed if n.startswith("nvjet") or "elementwise_kernel" in n]
        claim(
            any(n.startswith("nvjet") for n in prefill)
            and any("elementwise_kernel" in n for n in prefill)
            and not any(n.startswith("nvjet") or "elementwise_kernel" in n for n in decoded),
            "the cuBLAS nvjet GEMMs and ATen's elementwise_kernel rows are the prefill's, not "
            "the decoded tokens'",
        )
        claim(
            not any(n.startswith("triton_") for n in printed)
            and any(n.startswith("triton_") for n in decoded),
            "What Inductor still generates around our kernels (its triton_ kernels) is below "
            "those rows, in the trace",
        )
        if not h200:
            return
        sdpa, norms = f.trace("loop_kernels_sdpa_8b"), f.trace("loop_norms_8b")
        claim(
            _norms(sdpa) == 2 * layers + 1 and _norms(norms) <= 1,
            "fold_norms moves the RMSNorms and the residual adds into the GEMV kernels",
        )
        for name in ROWS[1:]:
            p = f.rec(name).params
            claim(
                any(
                    len({k for k in p.keys() | q.keys() if p.get(k) != q.get(k)}) == 1
                    for q in (f.rec(n).params for n in ROWS[: ROWS.index(name)])
                ),
                "Each row changes one thing from an earlier row",
            )
        sweep = tim(f.rec(GEMV_SWEEP))["gemvs"]
        gaps = []
        for gemv, g in sweep.items():
            want = (GEMV_BLOCK_K[gemv == "gate_up"], GEMV_WARPS)
            (chosen,) = [t for t in g["settings"] if (t["BLOCK_K"], t["num_warps"]) == want]
            gaps.append(chosen["us"] / min(t["us"] for t in g["settings"]) - 1)
        claim(
            len(gaps) == 5 and max(gaps) < 0.05 and max(gaps) > 0,
            "checked by the sweep of the next story: near the fastest on every GEMV (within "
            "5 %), though not the fastest on each",
        )

    f.repeats(each, n=f.n_repeats(FINAL))

    # every repeat at once: the fused loop's GEMVs and attention, by class
    fused = Table([Run(r, shape, layers) for r in f.recs(FUSED)])
    if h200:
        claim(
            max(fused.spread_pct(c) for c in GEMV_CLASSES) > 10,
            "so on the H200 the same projection ran at different speeds from one recording to "
            "the next",
        )
    for x in fused.runs:
        claim(
            x.t["o"] < min(x.t[c] for c in ("qkv", "gate_up", "down"))
            and x.t["attention"] > 2 / 3 * x.t["o"],
            "each layer's attention takes over two thirds the time of its smallest GEMV, the "
            "output projection",
        )
    if h200:
        # Tuning can pick a far slower launch: the attention row's slowest repeat, over every
        # session kept, ran one pointwise kernel on one block, over 4 times as long as elsewhere.
        reps = [r for s in f.sessions("loop_attention_8b") for r in s.repeats]
        reps += f.recs("loop_attention_8b")
        heavy = [heaviest_pointwise(r) for r in reps]
        slow = min(range(len(reps)), key=lambda i: res(reps[i])["tokens_per_s"])
        name, us, grid, _, _ = heavy[slow]
        elsewhere = [h[4][name][0] for i, h in enumerate(heavy) if i != slow and name in h[4]]
        claim(
            grid == 1 and len(elsewhere) == len(reps) - 1 and far(us, max(elsewhere)),
            "Coordinate-descent tuning ... can pick a launch that runs far slower inside the loop",
        )
        h100 = f.on("h100")
        claim(
            len(h100.recs(FINAL)) == len(f.recs(FINAL))
            and all(
                (r.results or {}).get("tokens_per_s")
                for r in [*h100.recs(FINAL), *(x for n in ROWS for x in f.recs(n))]
            ),
            "the table of every recording of these variants follows, the H200's and, where it "
            "recorded them, the H100's, with each one's tokens per second",
        )


def _names_in(tr: Trace, step: str) -> list[str]:
    return [tr.name(g) for g in token_ops(tr, step)]
