"""Story 03c's claims (examples/03_mlp/03c_compile_modes.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. It pastes nothing: the story
prints its numbers from the replay.

Every variant (``compile``, ``compile_big``, ``autotune``, ``reduce_overhead``, and
``compile_cold`` of story 03d, which the text sets beside them) is recorded on the H200
and the H100; the sentences that name one GPU are claimed on that GPU's run. The fused
kernel's launch configurations over every repeat are Part 2's
(:func:`part2.fusion_outcomes`, imported with its claims), as is the larger shape
(:func:`part2.big_shape`).
"""

from __future__ import annotations

import part2
import part2_measures as m
from story_03a_eager_mlp import step_kernels, table_rows
from tracesite.facts import Facts, claim
from tracesite.words import about, beyond_spread

from tracereader import Kind, link

EXAMPLE = "03_mlp"
GPUS = ("h200", "h100")
#: The warm variants of the set, which share one process per repeat (in turn, the recorder's plan).
WARM = ("eager", "eager_big", "compile", "compile_big", "autotune", "reduce_overhead",
        "liger", "liger_big")  # fmt: skip
#: The page's table: each variant's shape and compile mode.
MODES = {"compile": ("small", "default"), "compile_big": ("big", "default"),
         "autotune": ("small", "max-autotune-no-cudagraphs"),
         "reduce_overhead": ("small", "reduce-overhead")}  # fmt: skip
SHAPES = {"small": (64, 128, 768, 3072), "big": (8, 512, 4096, 11008)}
NUMEL = m.SMALL["rows"] * m.SMALL["hidden"]


def facts(f: Facts) -> None:
    def each() -> None:
        for v, (shape, mode) in MODES.items():
            p, proc = f.rec(v).params, f.rec(v).meta["process"]
            claim(
                (p["batch"], p["seq"], p["dim"], p["hidden"]) == SHAPES[shape]
                and p["compile"] == mode,
                "the table at the top of the page: each variant's shape and compile mode",
            )
            claim(
                proc["fresh"]
                and set(proc["variants_in_it"]) == set(WARM)
                and not proc["fresh_compile_cache"],
                "the recorder ran each variant in one process per repeat that it shared with "
                "the other warm variants of the 03_mlp set, and with the machine's compile cache",
            )

        # The default mode: one fused kernel for the pair.
        te, tc = f.trace("eager"), f.trace("compile")
        m.mlp_compile(te, tc, f.trace("liger"))  # Part 2's: one Triton kernel, the same GEMMs
        fused = m.fused_name(tc)
        if f.gpu == "h200":
            claim(
                fused == "triton_poi_fused__unsafe_view_gelu_mul_0"
                and len(link(tc).gpu_ops) == len(link(te).gpu_ops) - len(tc.steps),
                "on the H200 one kernel replaced the pair: "
                "triton_poi_fused__unsafe_view_gelu_mul_0",
            )
        claim(
            {n for n in m.kernels(tc) if n.startswith("nvjet")}
            == {n for n in m.kernels(te) if n.startswith("nvjet")},
            "the GEMMs are still the nvjet kernels of cuBLAS, name for name as in eager",
        )

        # The larger shape: the fused kernel reads gate's and up's outputs and writes one.
        params = {v: f.rec(v).params for v in ("compile", "compile_big")}
        numel = {v: p["batch"] * p["seq"] * p["hidden"] for v, p in params.items()}
        claim(
            about(numel["compile_big"] / numel["compile"], 1.8)
            and params["compile_big"]["hidden"] == 11008
            and params["compile"]["hidden"] == 3072
            and 2 * params["compile_big"]["batch"] * params["compile_big"]["seq"]
            == params["compile"]["batch"] * params["compile"]["seq"],
            "half the tokens, but a hidden layer 11008 wide instead of 3072, so the fused kernel "
            "moves about 1.8 times the data it moved at the first shape",
        )
        if f.gpu == "h200":
            big = m.big_shape(
                f.trace("eager_big"),
                f.trace("compile_big"),
                f.trace("liger_big"),
                f.rec("liger_big").params,
            )
            claim(
                big["fused_big_us"] < big["pair_big_us"],
                "it did on the H200: the fused kernel took less time than eager's gelu plus "
                "multiply at this shape too",
            )
            claim(
                about(big["liger_big_us"], big["pair_big_us"]),
                "where the hand-written kernel of story 03e only broke even",
            )

        # reduce-overhead: one graph launch a step, after the input's copy.
        tro = f.trace("reduce_overhead")
        if f.gpu == "h200":
            ro = m.reduce_overhead(tro)  # Part 2's: one graph a step, the copy, no aten::mm
            lk = link(tro)
            for s, g in zip(tro.steps, tro.where(name="cudaGraphLaunch"), strict=True):
                mine = [int(k) for k in lk.gpu_ops if (st := lk.step_of(int(k))) is not None
                        and st.name == s.name]  # fmt: skip
                copy = [k for k in mine if "multi_tensor_apply" in tro.name(k)]
                graph_ops = lk.gpu_ops_of_call(int(g))
                claim(
                    len(copy) == 1
                    and len(mine) == 1 + ro["ro_per_graph"]
                    and tro.ts_ns[copy[0]] < min(tro.ts_ns[graph_ops]),
                    "each step on the H200 was one cudaGraphLaunch releasing the forward's GPU "
                    "operations, after a kernel that copies the input",
                )
            copies = tro.where(name="aten::_foreach_copy_", kind=Kind.CPU_OP)
            claim(
                all(tro.texts[tro.extra["input_dims"][i]].startswith("[[[64,128,768]]")
                    for i in copies),
                "a kernel that copies the input (12 MiB: 64 x 128 x 768 bf16 values)",
            )  # fmt: skip
            rows = table_rows(f.rec("reduce_overhead"))
            names = [r["Name"] for r in rows]
            claim(
                len(rows) == 15 and "cudaGraphLaunch" not in names,
                "the table's 15 rows leave it out",
            )
            total = {r["Name"]: r["CUDA total"] for r in rows}
            claim(
                "aten::mm" not in names
                and total["Torch-Compiled Region: 0/0"] == total["ProfilerStep*"],
                "the table has no aten::mm row any more: the graph's GPU time is charged to the "
                "compiled region",
            )

    f.repeats(each, n=f.n_repeats("compile"))

    # Across the repeats: the fused kernel's configurations and what each saved.
    out = part2.fusion_outcomes(f)  # Part 2's claims: default-mode candidates, savings
    fused, groups = out["fused"], out["groups"]
    pair = [
        sum(us for n, us in m.kernels(r.trace()).items() if not n.startswith("nvjet"))
        for r in f.recs("eager")
    ]
    claim(
        all(us < p for v in ("compile", "compile_cold") for us in fused[v] for p in pair),
        "in every default-mode recording the fused kernel took less time than eager's gelu "
        "plus multiply",
    )
    cfg = {(g["variant"], g["block"]) for g in groups}
    names = {m.fused_name(r.trace()) for v in ("compile", "compile_cold") for r in f.recs(v)}
    if f.gpu == "h200":
        claim(
            {b for v, b in cfg if v == "compile"} == {128}
            and {b for v, b in cfg if v == "compile_cold"} == {256}
            and beyond_spread(fused["compile_cold"], fused["compile"])
            and len(names) == 1,
            "on the H200, every recording of compile ran 128-thread blocks, and every recording "
            "of compile_cold ran 256-thread blocks and took clearly longer: the same code, at "
            "two speeds",
        )
    if f.gpu == "h100":
        claim(
            {b for v, b in cfg if v in ("compile", "compile_cold")} == {256},
            "on the H100 both variants kept 256-thread blocks",
        )
    autotune = [m.fused_launch(r.trace(), NUMEL) for r in f.recs("autotune")]
    claim(
        all(m.POINTWISE_CANDIDATES.get(a["block"]) != a["block"] * a["per_thread"]
            for a in autotune),
        "the autotune variant below kept another configuration in every repeat",
    )  # fmt: skip

    # max-autotune, warm: the same GEMMs every repeat; a race need not make it faster.
    traces = [r.trace() for r in f.recs("autotune")]
    per_step = {
        tuple(tuple(t.name(k) for k in step_kernels(t, s)) for s in range(len(t.steps)))
        for t in traces
    }
    templates, kept, ratios = m.autotune_warm(
        [(t, f.recs("compile")[k].trace()) for k, t in enumerate(traces)]
    )
    if f.gpu == "h200":
        claim(
            len(per_step) == 1 and len({*next(iter(per_step))}) == 1 and templates and kept,
            "on the H200 the warm autotune variant made the same choice, GEMM by GEMM, in every "
            "repeat: triton_tem templates and cuBLAS's nvjet kernels",
        )
    claim(
        any(r >= 1 for r in ratios),
        "a race won in the compile's benchmark need not make the profiled forward faster",
    )
