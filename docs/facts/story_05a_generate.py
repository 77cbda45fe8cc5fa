"""Story 05a's claims (examples/05_llm_decode/05a_generate.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs (all four ``generate_*``
variants are recorded on both). A sentence that compares the GPUs is checked once, in the
H200's run, against every repeat of the H100's. It pastes nothing: the story prints its
numbers from the replay.

:func:`table` reads the profiler's table as the page prints it (``table.txt``; several of
these recordings predate ``table.json``); the stories 05b-05e read their tables with it too.
"""

from __future__ import annotations

import statistics
from typing import Any

from _decode import calls_per_step, res, tile, tim, token_ops
from _part4 import prompt_tokens, shapes
from tracesite import profiler_table
from tracesite.facts import Facts, claim
from tracesite.words import about, beyond_spread, dozens, far, few, most, times

import tracereader
from tracereader import Kind, Trace, step_times

EXAMPLE = "05_llm_decode"
GPUS = ("h200", "h100")

DYNAMIC = "generate_dynamic_1b"
STATIC = "generate_static_1b"
COMPILED = ("generate_static_compiled_1b", "generate_static_compiled_8b")
VARIANTS = (DYNAMIC, STATIC, *COMPILED)


def table(rec: Any) -> list[dict[str, Any]]:
    """The profiler's table of a repeat as the page prints it
    (:func:`tracesite.profiler_table.rows`)."""
    return profiler_table.rows(rec.table)


def ranked_by_gpu_time(rows: list[dict[str, Any]], n: int = 15) -> bool:
    """The table keeps ``n`` rows, the most GPU time (``CUDA total``) first."""
    total = [r["cuda_total_us"] for r in rows]
    return len(rows) == n and total == sorted(total, reverse=True)


def _gpu_spans(tr: Trace) -> list[tuple[str, int, int]]:
    """The GPU-side spans of the record_function ranges (``gpu_user_annotation``), in order."""
    return [
        (tr.name(int(i)), int(tr.ts_ns[i]), int(tr.end_ns[i]))
        for i in tr.where(kind=Kind.GPU_ANNOTATION)
    ]


def facts(f: Facts) -> None:
    def each() -> None:
        dyn = f.rec(DYNAMIC)
        tr = dyn.trace()
        ms = float(res(dyn)["ms_per_token"])
        for name in VARIANTS:
            r = f.rec(name)
            t, x = tim(r), res(r)
            claim(
                t["new_tokens"] == 64 and len(t["tokens"]) == 64,
                "a prompt of PROMPT (128) random tokens, then NEW_TOKENS (64) new ones",
            )
            claim(
                len(t["ms_per_token"]) >= 3 and "compile_s" in t,
                "Each variant first times decoding without the profiler (timings.json: ms per "
                "token over several runs, ...); its time is kept in timings.json as compile_s",
            )
            rows = table(r)
            steps = [row for row in rows if row["name"] == "ProfilerStep*"]
            cpu = [row for row in steps if row["self_cpu_us"] > 0]
            gpu = [row for row in steps if row["self_cpu_us"] == 0]
            n = r.params.get("profiled_tokens", 6)
            claim(
                few(n)
                and len(cpu) == 1
                and cpu[0]["calls"] == n + 1
                and gpu
                and gpu[0]["calls"] == n,
                "then profiles a few tokens, one profiler step per token: each new token "
                "closes one profiler step",
            )
            claim(
                (len(r.trace().where(kind=Kind.PYTHON)) > 0) == bool(r.params.get("with_stack")),
                "with Python stacks when with_stack is set (the trace then also records each "
                "Python function call)",
            )
            bt = t["bytes_per_token"]
            cfg = shapes()[r.params["shape"]]
            kv = cfg["num_key_value_heads"] * cfg["head_dim"] * 2 * 2 * cfg["num_hidden_layers"]
            claim(
                x["bytes_per_token"] == bt["total"] == bt["weights"] + bt["kv_cache"]
                and bt["kv_cache"] == kv * (prompt_tokens() + t["new_tokens"] // 2),
                "bytes_per_token, what one decode step must read (every weight, and the KV cache "
                "halfway through the decode)",
            )
            tbs = x["bytes_per_token"] / (float(x["ms_per_token"]) * 1e-3) / 1e12
            claim(
                abs(tbs - x["achieved_tbs"]) < 1e-3
                and abs(x["achieved_tbs"] / x["copy_tbs"] - x["hbm_fraction_copy"]) < 1e-3,
                "achieved_tbs, those bytes over the time per token; ... hbm_fraction_copy, the "
                "achieved rate over that",
            )
            claim(
                abs(statistics.median(t["ms_per_token"]) - x["ms_per_token"]) < 1e-3
                and abs(1e3 / float(x["ms_per_token"]) - x["tokens_per_s"]) < 0.01,
                "ms_per_token (the median of the timed runs) and tokens_per_s",
            )
        # --- what generate() compiles
        claim(
            calls_per_step(f.trace(STATIC), "cudaGraphLaunch") == [0]
            and all(set(calls_per_step(f.trace(n), "cudaGraphLaunch")) == {1} for n in COMPILED),
            "generate() replays each token's forward as one CUDA graph (one launch for all the "
            "forward's kernels) when compiled; the static cache alone launches no graph",
        )
        compile_s = {n: tim(f.rec(n))["compile_s"] for n in VARIANTS}
        claim(
            min(compile_s[n] for n in COMPILED) > max(compile_s[DYNAMIC], compile_s[STATIC]),
            "The first call warms up (and compiles, when asked)",
        )
        # --- the table
        rows = table(dyn)
        claim(
            ranked_by_gpu_time(rows),
            "The table sums the profiled run ... by name and keeps the 15 rows with the most "
            "GPU time",
        )
        for name in ("generate", "ProfilerStep*"):
            two = [row for row in rows if row["name"] == name]
            claim(
                len(two) == 2
                and sum(row["self_cpu_us"] > 0 and row["self_cuda_us"] == 0 for row in two) == 1
                and sum(row["self_cpu_us"] == 0 and row["self_cuda_us"] > 0 for row in two) == 1,
                "generate and ProfilerStep* appear twice. The row with CPU time is the range on "
                "the CPU; the row with only Self CUDA is its GPU-side span",
            )
        claim(
            all(
                row["self_cpu_us"] == 0 and row["self_cuda_us"] > 0
                for row in rows
                if not row["name"].startswith("aten::")
                and row["name"] not in ("generate", "ProfilerStep*")
            ),
            "aten:: rows are PyTorch's operators; the others (beside those two labels) are kernels",
        )
        claim(
            any(row["self_cpu_us"] == 0 and row["self_cuda_pct"] > 100 for row in rows),
            "a label, not GPU work, so its Self CUDA % can pass 100 %",
        )
        spans = _gpu_spans(tr)
        claim(
            all(a[2] <= b[1] for a, b in zip(spans, spans[1:], strict=False)),
            "In this trace the GPU-side spans do not overlap",
        )
        named = {s[0]: (s[1], s[2]) for s in spans}
        for span, step in (("generate", "ProfilerStep#0"), ("ProfilerStep#2", "ProfilerStep#2")):
            ops = token_ops(tr, step)
            first, last = int(tr.ts_ns[ops[0]]), int(tr.end_ns[ops].max())
            claim(
                abs(named[span][0] - first) < 1e3 and abs(named[span][1] - last) < 1e3,
                "each runs from the first to the last GPU op launched while its range was the "
                "innermost one open, idle time included",
            )
        gpu_steps = [s[0] for s in spans if s[0].startswith("ProfilerStep#")]
        claim(
            gpu_steps == [f"ProfilerStep#{k}" for k in range(1, 5)],
            "The GPU-side row counts four, #1 to #4: ... the GPU-side generate covers only the "
            "prefill's step, #0",
        )
        claim(
            named["ProfilerStep#4"][1] - named["ProfilerStep#4"][0]
            < 0.1 * (named["ProfilerStep#2"][1] - named["ProfilerStep#2"][0]),
            "then one from the last token to the profiler's end, in which generate() still "
            "launched GPU work as it finished (its GPU-side span under a tenth as long as a decode "
            "step's)",
        )
        for name in VARIANTS:
            claim(
                "ProfilerStep#0" not in {s[0] for s in _gpu_spans(f.trace(name))},
                "A range of your own around the call (generate here) then takes step #0's GPU "
                "work from ProfilerStep#0's GPU-side row",
            )
        s2 = tr.step("ProfilerStep#2")
        mms = tr.where(name="aten::mm", within=(s2.start_ns, s2.end_ns))
        dims = [tr.texts[int(tr.extra["input_dims"][i])] for i in mms]
        claim(
            len(mms) > 0 and all(d.startswith("[[1,") for d in dims),
            "In a decode step each multiplies one row of activations by a weight matrix (the "
            "trace's input shapes say so)",
        )
        tiles = [tile(tr.name(g)) for g in token_ops(tr)]
        nvjet = [t for t in tiles if t]
        claim(
            nvjet and all(8 in t for t in nvjet) and (64, 8) in nvjet,
            "these are the GEMV kernels, ... and their names show a tile with a side of 8 (64x8)",
        )
        claim(
            [s.name for s in step_times(tr)] == ["ProfilerStep#0", "ProfilerStep#2"],
            "the site keeps two steps of the trace: the prefill's, #0, and a decode step, #2",
        )
        (dec,) = [s for s in step_times(tr) if s.name == "ProfilerStep#2"]
        layers = shapes()["1b"]["num_hidden_layers"]
        claim(
            dec.kernels > 10 * layers and dec.launches >= dec.kernels,
            "every small op of every layer is a kernel of its own, which the CPU must launch",
        )
        # --- the results line and the kept steps
        x = res(dyn)  # its share recomputed against the GPU's own datasheet (the H100's there)
        claim(
            dyn.results is not None
            and dyn.results["hbm_fraction_spec"] < 0.1
            and dyn.results["hbm_fraction_copy"] < 0.1
            and x["hbm_fraction_spec"] < 0.1
            and all(far(ms, ms * x[k]) for k in ("hbm_fraction_spec", "hbm_fraction_copy")),
            "Both fractions are under a tenth, in every repeat on both GPUs (the H100's also "
            "against its own datasheet's figure): generate() decodes far slower than reading "
            "the weights allows",
        )
        claim(
            times(dec.span_us, 1e3 * ms, 2),
            "The decode step lasts at least twice ms_per_token, in every repeat on both GPUs",
        )
        claim(
            dec.gpu_busy_us < 0.25 * 1e3 * ms,
            "even against ms_per_token, the decode step's kernels keep the GPU busy under a "
            "quarter of the time, in every repeat on both GPUs",
        )
        # --- one millisecond of a decode step
        middle = (s2.start_ns + s2.end_ns) // 2
        window = (middle - 500_000, middle + 500_000)
        claim(
            most(1e3 - tracereader.gpu_busy_us(tr, window=window), 1e3),
            "the hatched spans are idle gaps, most of this millisecond in every repeat on both "
            "GPUs",
        )
        claim(dec.verdict == "CPU-bound", "So on both GPUs the step is CPU-bound")
        # --- what the chapter reads
        for name in COMPILED:
            r = f.rec(name)
            (st,) = [s for s in step_times(r.trace()) if s.name == "ProfilerStep#2"]
            claim(
                dozens(st.launches - 1),
                "yet each token still makes dozens of other launch calls",
            )
            claim(
                st.gpu_busy_us < 0.9 * 1e3 * float(res(r)["ms_per_token"]),
                "and the GPU still idles while generate() does its bookkeeping between tokens",
            )
        g8 = f.trace("generate_static_compiled_8b")
        s1 = g8.step("ProfilerStep#1")
        recorded = g8.where(name="CUDAGraphNode.record", within=(s1.start_ns, s1.end_ns))
        by_name = {s.name: s for s in step_times(g8)}
        if f.gpu == "h100":
            claim(
                len(recorded) > 0
                and far(by_name["ProfilerStep#1"].span_us, by_name["ProfilerStep#2"].span_us),
                "on the H100, the 8B recordings' ProfilerStep#1 also records a graph, "
                "CUDAGraphNode.record in the trace: a far slower step",
            )
        else:
            claim(
                len(g8.where(name="CUDAGraphNode.record")) == 0,
                "(on the H100, the 8B recordings' ProfilerStep#1 also records a graph ...): the "
                "H200's do not",
            )

    f.repeats(each, n=f.n_repeats(DYNAMIC))

    if f.gpu == "h200":  # the GPUs compared, every repeat of each
        h100 = f.on("h100")
        claim(
            all(len(h100.recs(n)) == len(f.recs(n)) for n in VARIANTS)
            and all((r.results or {}).get("tokens_per_s") for n in VARIANTS for r in h100.recs(n)),
            "At the end of the page, a list of every recording of these variants, on both GPUs: "
            "... each variant's tokens per second",
        )

        def busy(reader: Facts) -> list[float]:
            return [
                s.gpu_busy_us
                for r in reader.recs(DYNAMIC)
                for s in step_times(r.trace())
                if s.name == "ProfilerStep#2"
            ]

        def tps(reader: Facts) -> float:
            return float(statistics.median(res(r)["tokens_per_s"] for r in reader.recs(DYNAMIC)))

        hbm = [tracereader.datasheet(str(rd.rec(DYNAMIC).env["gpu"])) for rd in (h100, f)]
        claim(
            all(hbm) and hbm[0].hbm_tbs < hbm[1].hbm_tbs,  # type: ignore[union-attr]
            "The H100's recordings show it: its memory is slower",
        )
        claim(
            beyond_spread(busy(h100), busy(f)),
            "and this step's kernels keep it busy longer, in every repeat",
        )
        claim(
            about(tps(h100), tps(f)),
            "yet it decodes about as fast as the H200 (the tokens per second listed at the end "
            "of the page)",
        )
