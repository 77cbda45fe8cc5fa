"""Story 03d's claims (examples/03_mlp/03d_compile_from_empty_cache.py): each sentence its
text says about the recordings, checked on every repeat of both GPUs. It pastes nothing: the
story prints its numbers from the replay.

Both variants (``compile_cold``, ``autotune_cold``) are recorded on the H200 and the H100,
with their ``timings.json`` (the first call's time and max-autotune's report). The report's
checks are Part 2's :func:`part2_measures.autotune_cold`, and the fused kernel's launch
configurations Part 2's :func:`part2.fusion_outcomes`, both imported with their claims.
Sentences about "this table" or "the two tables" are about the H200's r0, which the page
shows, and are claimed on it; the sentences comparing the two GPUs are checked once, in
the H200's run, on every repeat of both.
"""

from __future__ import annotations

from typing import Any

import part2
import part2_measures as m
from story_03a_eager_mlp import dims, step_kernels, table_rows
from tracesite.facts import Facts, claim
from tracesite.words import about, beyond_spread, most, no_outlier, times

from tracereader import Kind, Trace, step_times

EXAMPLE = "03_mlp"
GPUS = ("h200", "h100")
VARIANTS = {"compile_cold": "default", "autotune_cold": "max-autotune-no-cudagraphs"}
#: The two GEMM shapes the races time: gate's and up's, then down's.
GATE_UP, DOWN = "8192x768, 768x3072", "8192x3072, 3072x768"
#: The report quoted on the page, "from one H200 recording": its first race's first lines.
QUOTED: dict[str, Any] = {"sizes": GATE_UP, "first": [("mm", 0.0676), ("triton_mm_17", 0.0679)],
          "settings": ("BLOCK_K=64", "BLOCK_M=128", "BLOCK_N=128", "num_stages=3",
                       "num_warps=4"),
          "bench_s": 0.5275, "precompile_s": 2.8899, "n_choices": 20}  # fmt: skip
NUMEL = m.SMALL["rows"] * m.SMALL["hidden"]


def gemms(tr: Trace, step: int = -1) -> list[str]:
    """The GEMM kernels of one step, in order (the fused pointwise kernel left out)."""
    return [tr.name(k) for k in step_kernels(tr, step) if not tr.name(k).startswith("triton_poi")]


def gemm_us(tr: Trace) -> dict[str, float]:
    """Each GEMM's kernel time, median, by role: ``gate``, ``up``, ``down`` (the kernels of a
    step, in order, around the fused kernel)."""
    names = gemms(tr)
    k = m.kernels(tr)
    return {"gate": k[names[0]], "up": k[names[1]], "down": k[names[2]]}


def facts(f: Facts) -> None:
    def each() -> None:
        for v, mode in VARIANTS.items():
            rec = f.rec(v)
            claim(
                rec.params["mode"] == mode
                and (rec.params["batch"], rec.params["seq"], rec.params["dim"]) == (64, 128, 768)
                and rec.params["hidden"] == 3072,
                "the table at the top of the page: 64 x 128 tokens, 768 -> 3072, and the mode",
            )
            claim(
                rec.meta["process"]["fresh"] and rec.meta["process"]["variants_in_it"] == [v],
                "each variant recorded on an H200 and an H100, each in a fresh process; time one "
                "variant per process, as this site's recordings were",
            )
        cold, auto = f.rec("compile_cold"), f.rec("autotune_cold")
        tc, ta = cold.trace(), auto.trace()
        timings: Any = auto.timings()
        timings_cold: Any = cold.timings()
        out = m.autotune_cold(timings, timings_cold, ta)  # Part 2's claims on the report
        races = timings["autotune"]

        # Reading the report.
        claim(
            [b["sizes"] for b in races] == [GATE_UP, GATE_UP, DOWN],
            "one block per race: three per compile here, one per GEMM (gate and up share a "
            "shape, yet each got its own)",
        )
        claim(
            all(
                b["op"] == "mm"
                and all(
                    c["name"] == "mm" or c["name"].startswith("triton_mm_") for c in b["choices"]
                )
                and {"bench_s", "precompile_s"} <= b.keys()
                for b in races
            ),
            "a block names the op and its input sizes, then the fastest candidates with their "
            "times (cuBLAS as mm, Inductor's Triton templates as triton_mm_N), then how long "
            "benchmarking and precompiling took",
        )
        claim(
            all(len(b["choices"]) <= 10 for b in races),
            "each block lists up to ten candidates",
        )

        # The default mode's table.
        rows = table_rows(cold)
        names = [r["Name"] for r in rows]
        eager = {r["Name"] for r in table_rows(f.rec("eager"))}
        frames = ["TorchDynamo Cache Lookup", "Torch-Compiled Region: 0/0", "Pregraph bytecode",
                  "AOTDispatcher Runtime Wrapper Prologue"]  # fmt: skip
        calls = [r for r in rows if r["Name"].startswith("## Call CompiledFxGraph")]
        claim(
            set(frames) <= set(names)
            and not (set(frames) | {r["Name"] for r in calls}) & eager
            and len(calls) == 2
            and calls[0]["Self CPU"] == calls[0]["CPU total"] == "0.000us"
            and calls[1]["Self CPU"] != "0.000us",
            "rows that eager mode lacks: TorchDynamo Cache Lookup, Torch-Compiled Region, "
            "Pregraph bytecode, AOTDispatcher Runtime Wrapper Prologue and the second ## Call "
            "CompiledFxGraph; the first ## Call CompiledFxGraph is that call's span on the GPU",
        )
        poi = [r for r in rows if r["Name"].startswith("triton_poi")]
        claim(
            len(poi) == 2 and sorted(r["Self CPU"] == "0.000us" for r in poi) == [False, True],
            "the fused kernel has a row for its launch on the CPU, named after it, and one on "
            "the GPU",
        )
        for v in VARIANTS:
            t = f.trace(v)
            order = [t.name(k)[:10] for k in step_kernels(t, -1)]
            claim(
                len(order) == 4 and order[2] == "triton_poi" and order.count("triton_poi") == 1,
                "in every repeat on both GPUs, the fused kernel runs after the gate and up GEMMs, "
                "before down",
            )

        # max-autotune's first call and its races.
        claim(
            times(timings["first_call_s"], timings_cold["first_call_s"], 3),
            "on both GPUs, in every repeat, max-autotune's first call took at least three times "
            "as long as the default mode's",
        )
        claim(not timings_cold["autotune"], "the default mode's, which races nothing")
        claim(
            out["race_s"] < timings["first_call_s"] - timings_cold["first_call_s"],
            "the races' own times account for only part of the difference",
        )
        smem = tc.device_properties[0]
        claim(
            [len(b["failed"]) for b in races] == [1, 0, 1]
            and out["smem_need_kib"] == 256
            and out["smem_limit_kib"] == 227
            and smem["sharedMemPerBlockOptin"] == 227 * 1024
            and smem["sharedMemPerMultiprocessor"] == 228 * 1024,
            "in every max-autotune compile on both GPUs, a Triton candidate that asked for more "
            "shared memory than a block may use failed in the first and last races (256 KiB "
            "and 227 KiB, what a block may take of an SM's 228 KiB); the second printed none",
        )
        won = {
            shape: sorted("triton" if b["choices"][0]["name"] != "mm" else "nvjet"
                          for b in races if b["sizes"] == shape)
            for shape in (GATE_UP, DOWN)
        }  # fmt: skip
        ran = gemms(ta)
        for s in range(len(ta.steps)):
            kinds = ["triton" if n.startswith("triton_tem") else "nvjet" for n in gemms(ta, s)]
            claim(
                all(n.startswith(("triton_tem", "nvjet")) for n in gemms(ta, s))
                and sorted(kinds[:2]) == won[GATE_UP]
                and kinds[2:] == won[DOWN],
                "in every repeat the forwards then ran the races' winners: triton_tem among the "
                "GEMMs where a template won, nvjet where cuBLAS did",
            )
        if ran[2].startswith("triton_tem"):
            op = ta.where(name=ran[2], kind=Kind.CPU_OP)
            claim(
                len(op) and all(dims(ta, int(i)).startswith("[[64,128,3072],[768,3072],[8192,768]")
                                for i in op)
                and "gelu" in ran[2] and "mul" in ran[2],
                "its CPU row's input shapes are the product gelu(gate) * up, down's weight and a "
                "buffer shaped like the output: the down GEMM; its name also lists gelu and mul",
            )  # fmt: skip
            for s in range(len(ta.steps)):
                seq = [ta.name(k) for k in step_kernels(ta, s)]
                claim(
                    seq.index(ran[2]) > seq.index(m.fused_name(ta)),
                    "it reads the product the fused kernel wrote before it",
                )
        if f.gpu == "h200" and f.repeat == 0:  # the page's table
            claim(
                len([n for n in m.kernels(ta) if n.startswith("triton_tem")]) == 1
                and ran[2].startswith("triton_tem"),
                "in this table one GEMM ran a triton_tem kernel, a template that won its race: "
                "the down GEMM",
            )

        # After the first call: the steps.
        for v in VARIANTS:
            steps = step_times(f.trace(v))
            claim(
                all(s.cpu_us > s.gpu_busy_us for s in steps),
                "in both modes, in every repeat on both GPUs, the CPU spent longer per step than "
                "the GPU was busy",
            )
            claim(
                all(s.span_end_ns > s.end_ns for s in steps if s.verdict == "balanced"),
                "every balanced step's GPU work ran on past its CPU time",
            )
            claim(
                steps[0].cpu_us == max(s.cpu_us for s in steps),
                "the first recorded step was the longest in every repeat",
            )
        claim(
            timings_cold["first_call_s"] > 100 * timings_cold["second_call_s"]
            and timings["first_call_s"] > timings_cold["first_call_s"],
            "a first compile is slow, and max-autotune's slower still",
        )

    f.repeats(each, n=f.n_repeats("compile_cold"))
    claim(
        f.n_repeats("compile_cold") == f.n_repeats("autotune_cold") == 3,
        "each variant recorded three times (repeats r0, r1, r2)",
    )

    # The fused kernel's configurations over the repeats (Part 2's claims).
    out = part2.fusion_outcomes(f)
    fused, groups = out["fused"], out["groups"]
    cfg = {(g["variant"], g["block"]) for g in groups}
    if f.gpu == "h200":
        claim(
            {b for v, b in cfg if v == "compile_cold"} == {256}
            and {b for v, b in cfg if v == "compile"} == {128}
            and beyond_spread(fused["compile_cold"], fused["compile"]),
            "on the H200 every compile_cold repeat kept the 256-thread one, and every repeat of "
            "the warm compile the 128-thread one, which ran faster, beyond the spread",
        )
        claim(
            any(
                b["sizes"] == QUOTED["sizes"]
                and [(c["name"], c["ms"]) for c in b["choices"][:2]] == QUOTED["first"]
                and all(x in b["choices"][1]["description"] for x in QUOTED["settings"])
                and (b["bench_s"], b["precompile_s"], b["n_choices"])
                == (QUOTED["bench_s"], QUOTED["precompile_s"], QUOTED["n_choices"])
                for r in f.recs("autotune_cold")
                for b in (r.timings() or {"autotune": []})["autotune"][:1]
            ),
            "its layout, from one H200 recording",
        )
    if f.gpu == "h100":
        claim(
            {b for v, b in cfg if v in ("compile", "compile_cold")} == {256}
            and no_outlier(fused["compile"] + fused["compile_cold"]),
            "on the H100 both kept 256-thread blocks and ran alike",
        )
    claim(
        all(not r.meta["process"]["fresh_compile_cache"] for r in f.recs("compile")),
        "the warm repeats shared one cache",
    )
    own = [(g["block"], g["grid"]) for g in groups if g["variant"] == "autotune_cold"]
    claim(
        len(own) == len(set(own)) == f.n_repeats("autotune_cold"),
        "each autotune_cold repeat ended with its own, on both GPUs",
    )

    if f.gpu == "h200":  # the two GPUs together, every repeat of both
        readers = (f, f.on("h100"))
        pairs = [
            (r.trace(), reader.recs("compile_cold")[r.repeat].trace(), reader, r)
            for reader in readers
            for r in reader.recs("autotune_cold")
        ]
        slower = [
            m.fused_launch(ta, NUMEL)["us"] > m.fused_launch(tc, NUMEL)["us"]
            for ta, tc, _, _ in pairs
        ]
        claim(
            slower[0] and most(sum(not s for s in slower[1:]), len(slower) - 1),
            "in the two tables the fused kernel ran slower than the default mode's, in most "
            "other repeats faster",
        )
        for ta, _, reader, r in pairs:
            default = [
                gemm_us(x.trace()) for v in ("compile", "compile_cold") for x in reader.recs(v)
            ]
            names = gemms(ta)
            mine = gemm_us(ta)
            races = (r.timings() or {"autotune": []})["autotune"]
            for role, name in zip(("gate", "up", "down"), names, strict=True):
                if not name.startswith("triton_tem"):
                    continue
                shape = DOWN if role == "down" else GATE_UP
                race = next(
                    b for b in races if b["sizes"] == shape and b["choices"][0]["name"] != "mm"
                )
                cublas_race = next(c["ms"] for c in race["choices"] if c["name"] == "mm") * 1e3
                tem_race = race["choices"][0]["ms"] * 1e3
                claim(
                    mine[role] > max(d[role] for d in default),
                    "each template that won a race, on either GPU, then ran longer in the "
                    "forwards than cuBLAS's kernel for the same GEMM in any default-mode repeat",
                )
                claim(
                    cublas_race > max(d[role] for d in default) and about(mine[role], tem_race),
                    "the race had timed cuBLAS slower than the forwards ran it, the template "
                    "about as fast",
                )
