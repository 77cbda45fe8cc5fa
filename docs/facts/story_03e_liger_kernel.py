"""Story 03e's claims (examples/03_mlp/03e_liger_kernel.py): each sentence its text says about
the recordings, checked on every repeat of both GPUs. It pastes nothing: the story prints
its numbers from the replay.

Both variants (``liger``, ``liger_big``) are recorded on the H200 and the H100, as are the
eager and compiled variants the text sets them against (``eager``, ``eager_big``,
``compile``, ``compile_big``, ``compile_cold``). The launchers and the
larger shape are Part 2's (:func:`part2_measures.mlp_compile`, :func:`part2.big_shape`),
imported with their claims; the sentences that name one GPU are claimed on that GPU's run.
"""

from __future__ import annotations

import part2
import part2_measures as m
from story_03a_eager_mlp import step_kernels, table_rows
from tracesite.facts import Facts, claim
from tracesite.words import beyond_spread, much

from tracereader import Kind, Trace, link

EXAMPLE = "03_mlp"
GPUS = ("h200", "h100")
NUMEL = m.SMALL["rows"] * m.SMALL["hidden"]


def geglu(tr: Trace) -> int:
    """The first launch of Liger's kernel in the trace."""
    return int(tr.where(kind=Kind.KERNEL, contains="geglu")[0])


def pair_us(tr: Trace) -> float:
    """Eager's gelu plus multiply: the medians of its two elementwise kernels."""
    return sum(us for n, us in m.kernels(tr).items() if not n.startswith("nvjet"))


def facts(f: Facts) -> None:
    def each() -> None:
        tl, te, tc = f.trace("liger"), f.trace("eager"), f.trace("compile")
        for v, shape in (("liger", m.SMALL), ("liger_big", m.BIG)):
            p = f.rec(v).params
            claim(
                p["kernel"] == "liger"
                and p["batch"] * p["seq"] == shape["rows"]
                and (p["dim"], p["hidden"]) == (shape["dim"], shape["hidden"]),
                "the two shapes of this set, each with kernel='liger'",
            )

        # The small shape: three GEMMs as in eager, one kernel between them.
        gemms = {n for n in m.kernels(te) if n.startswith("nvjet")}
        for s in range(len(tl.steps)):
            seq = [tl.name(k) for k in step_kernels(tl, s)]
            claim(
                len(seq) == 4 and set(seq[:2] + seq[3:]) <= gemms and "geglu" in seq[2],
                "three GEMMs as in eager, and between them, where eager ran a gelu and a "
                "multiply, one kernel",
            )
        names = [r["Name"] for r in table_rows(f.rec("liger"))]
        claim(
            not any(n.startswith(("cuLaunch", "cudaLaunch")) for n in names),
            "how it was launched, the runtime call under it, is not in the table",
        )
        m.mlp_compile(te, tc, tl)  # Part 2's: Triton's, Inductor's and PyTorch's launchers
        lk, le = link(tl), link(te)
        k = geglu(tl)
        if f.gpu == "h200":
            claim(
                tl.name(k) == "_geglu_tanh_forward_kernel"
                and tl.name(int(lk.launch[k])) == "cuLaunchKernelEx",
                "on the H200 the kernel was _geglu_tanh_forward_kernel, launched through "
                "cuLaunchKernelEx",
            )
        claim(
            {te.name(int(le.launch[i])) for i in te.where(kind=Kind.KERNEL)
             if not te.name(int(i)).startswith("nvjet")} == {"cudaLaunchKernel"},
            "PyTorch's eager kernels go through cudaLaunchKernel",
        )  # fmt: skip
        claim(
            {tl.name(int(lk.launch[i])) for i in tl.where(kind=Kind.KERNEL, prefix="nvjet")}
            == {"cuLaunchKernelEx"},
            "cuBLAS launches its nvjet GEMMs with it too, in this very trace",
        )
        claim(
            int(tl.extra["grid"][k]) == m.SMALL["rows"],
            "in the trace that shows as a grid of 8192 blocks, one per token",
        )

        # The larger shape (Part 2's claims), and how the kernel was launched there.
        big = part2.big_shape(
            f,
            h200_says="not on the H200: Liger's kernel took about as long as eager's gelu plus "
            "multiply here",
            h100_says="on the H100 it still saved time",
        )
        if f.gpu == "h200":
            claim(
                0.99 * big["pair_big_us"] < big["liger_big_us"] < big["pair_big_us"],
                "not on the H200: it saved under 1 % (a saving, in every repeat)",
            )
        claim(
            big["fused_big_us"] < big["pair_big_us"],
            "Inductor's fused kernel took less time than the pair at this shape, on both GPUs",
        )
        claim(
            f.rec("liger_big").params["hidden"] == 11008 and big["liger_block"] == 16384,
            "11008 rounds up to 16384",
        )
        tb = f.trace("liger_big")
        kb = geglu(tb)
        x, xb = tl.extra, tb.extra
        claim(
            int(xb["block"][kb]) == 2 * int(x["block"][k])
            and int(xb["registers"][kb]) > int(x["registers"][k]),
            "at the larger shape the blocks are twice as large and each thread uses more registers",
        )
        claim(
            much(int(x["occupancy_pct"][k]), int(xb["occupancy_pct"][kb])),
            "CUPTI's estimated occupancy falls well below the small shape's",
        )
        fused_occ = [
            int(t.extra["occupancy_pct"][i])
            for t in (tc, f.trace("compile_big"))
            for i in t.where(kind=Kind.KERNEL, prefix="triton_poi")
        ]
        claim(
            set(fused_occ) == {100},
            "Inductor's fused kernel reaches 100 % at both shapes",
        )

    f.repeats(each, n=f.n_repeats("liger"))
    claim(f.n_repeats("liger") == f.n_repeats("liger_big") >= 2, "several times")

    # Over the repeats: Liger's kernel against eager's pair and Inductor's fused kernel.
    liger = [m.kernels(r.trace())[r.trace().name(geglu(r.trace()))] for r in f.recs("liger")]
    pair = [pair_us(r.trace()) for r in f.recs("eager")]
    claim(
        max(liger) < min(pair),
        "its median time was below that of eager's gelu plus multiply, in every repeat",
    )
    fused = {
        v: [m.fused_launch(r.trace(), NUMEL) for r in f.recs(v)]
        for v in ("compile", "compile_cold")
    }
    us = {v: [x["us"] for x in rows] for v, rows in fused.items()}
    blocks = {v: {x["block"] for x in rows} for v, rows in fused.items()}
    if f.gpu == "h200":
        claim(
            blocks["compile_cold"] == {256}
            and blocks["compile"] == {128}
            and beyond_spread(us["compile_cold"], liger)
            and beyond_spread(liger, us["compile"]),
            "on the H200, Liger's kernel was faster than the 256-thread one that a compile from "
            "an empty cache kept and slower than the 128-thread one",
        )
    if f.gpu == "h100":
        claim(
            blocks["compile"] | blocks["compile_cold"] == {256}
            and beyond_spread(us["compile"] + us["compile_cold"], liger),
            "on the H100, where the warm and the empty-cache compile both kept 256-thread blocks, "
            "it was faster",
        )
