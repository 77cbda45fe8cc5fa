"""Story 05d's claims (examples/05_llm_decode/05d_kernel_settings.py): each sentence its text
says about the recordings, checked on every repeat. Both sweeps (``gemv_settings_8b``,
``attention_settings_8b``) are recorded on the H200 only, so ``GPUS`` is ``("h200",)``;
the sentence that the H100 ran no sweep reads the list of the H100's variants. It pastes
nothing: the story prints its numbers from the replay.
"""

from __future__ import annotations

import re
from typing import Any

from _attention_kernels import ATTENTION_BLOCK_N, ATTENTION_WARPS
from _decode import CHECK, COMMON, tim
from _part4 import shapes
from part4_kernels import GEMV_BLOCK_K, GEMV_SWEEP, GEMV_WARPS
from story_05c_kernels import ROWS as LOOPS
from tracesite import load_definitions
from tracesite.facts import Facts, claim
from tracesite.recordings import iter_variants

from tracereader import Kind, Trace, link

EXAMPLE = "05_llm_decode"
GPUS = ("h200",)

ATTENTION = "attention_settings_8b"
GEMVS = ("qkv", "o", "gate_up", "down", "lm_head")


def _passes(tr: Trace) -> dict[str, list[str]]:
    """Each profiled pass (a ``record_function`` range) and the names of its GPU ops."""
    return {
        tr.name(int(i)): [tr.name(int(g)) for g in link(tr).gpu_ops_of(int(i))]
        for i in tr.where(kind=Kind.USER_ANNOTATION)
    }


def _blocks(tr: Trace, name: str) -> set[int]:
    return {int(tr.extra["block"][g]) for g in tr.where(name=name, kind=Kind.KERNEL)}


def _printed(text: str) -> dict[str, list[tuple[int, int, float]]]:
    """The sweep's printed table: per case, its settings' lines (setting, warps, µs)."""
    out: dict[str, list[tuple[int, int, float]]] = {}
    case = ""
    for line in text.splitlines()[1:]:
        m = re.match(r"\s+BLOCK_[KN]\s+(\d+)\s+num_warps\s+(\d+)\s+([0-9.]+) µs", line)
        if m:
            out[case].append((int(m[1]), int(m[2]), float(m[3])))
        else:
            case = line.split(":")[0]
            out[case] = []
    return out


def facts(f: Facts) -> None:
    sweep: dict[str, list[Any]] = load_definitions(COMMON)["GEMV_SWEEP"]
    asweep: dict[str, list[Any]] = load_definitions(COMMON)["ATTENTION_SWEEP"]
    layers = shapes()["8b"]["num_hidden_layers"]

    def each() -> None:
        l2 = (f.rec(CHECK).results or {})["l2_cache_bytes"]  # the H200's, as the device reports it
        g, a = f.rec(GEMV_SWEEP), f.rec(ATTENTION)
        claim(
            g.params["shape"] == a.params["shape"] == "8b",
            "as a decode step of Llama-3-8B's shape runs it",
        )
        gemvs = tim(g)["gemvs"]
        claim(
            tuple(gemvs) == GEMVS,
            "on each GEMV of a decode step: q/k/v, the output projection, gate/up with the "
            "activation, down, and the LM head",
        )
        for name, x in gemvs.items():
            want = {
                (bk, w)
                for bk in sweep["BLOCK_K"]
                if x["cols"] % bk == 0
                for w in sweep["num_warps"]
            }
            got = [(t["BLOCK_K"], t["num_warps"]) for t in x["settings"]]
            claim(
                len(got) == len(want) and set(got) == want,
                "gemv_kernel at every combination of GEMV_SWEEP ... whose BLOCK_K divides the "
                "GEMV's columns",
            )
            claim(
                all("max_abs_err" in t for t in x["settings"]) and x["cublas_us"] > 0,
                "against cuBLAS ... Each timing also records its largest error against an fp32 "
                "reference",
            )
            claim(
                x["copies"] == (4 if name == "lm_head" else layers),
                "one per layer for the layers' GEMVs, 4 copies of the LM head",
            )
            claim(
                x["bytes"] * x["copies"] > l2,
                "Launches on enough different matrices read each from memory, as the loop does",
            )
        at = tim(a)
        claim(
            at["shape"]["copies"] == 128 > layers,
            "128 attention caches ... so the attention sweep uses more caches than there are "
            "layers",
        )
        for pos in at["positions"]:
            claim(
                len(pos["settings"]) == len(asweep["BLOCK_N"]) * len(asweep["num_warps"])
                and pos["sdpa_us"] > 0
                and pos["inductor_reductions_us"] > 0,
                "attention_kernel at every setting of ATTENTION_SWEEP, against a whole SDPA call "
                "... and the reductions",
            )
            claim(
                pos["bytes"] < l2 < pos["bytes"] * at["shape"]["copies"],
                "One layer's cache is small, so the attention sweep uses more caches",
            )
        claim(
            gemvs["o"]["bytes"] < l2,
            "the H200's L2 cache is large enough to hold a whole weight matrix of one 8B layer, "
            "such as the output projection's",
        )
        # the profiled passes
        gt, att = g.trace(), a.trace()
        gp, ap = _passes(gt), _passes(att)
        claim(
            set(gp) == {f"{n} {k}" for n in GEMVS for k in ("ours", "peer")}
            and all(set(gp[f"{n} ours"]) == {"gemv_kernel"} for n in GEMVS)
            and all(any(k.startswith("nvjet") for k in gp[f"{n} peer"]) for n in GEMVS)
            and _blocks(gt, "gemv_kernel") == {32 * GEMV_WARPS},
            "It profiles one pass of our kernel at its fixed settings and one of cuBLAS or SDPA",
        )
        ours, peer = ap["position 191 ours"], ap["position 191 peer"]
        calls = at["shape"]["copies"]
        claim(
            set(ours) == {"attention_kernel"}
            and len(ours) == calls
            and _blocks(att, "attention_kernel") == {32 * ATTENTION_WARPS},
            "attention_kernel with 256 keys per step and 8 warps: one pass at the example's "
            "settings",
        )
        claim(
            sum(k.startswith("cudnn") for k in peer) == calls
            and len(peer) > calls
            and any("Memset" in k for k in peer)
            and any("Memcpy" in k for k in peer),
            "against a whole SDPA call (cuDNN's kernel with the fills and copies around it)",
        )
        claim(
            not any(k.startswith("triton") for k in att.names),
            "(the reductions are timed, not traced)",
        )
        # the printed table: per GEMV the peer, then our five fastest settings
        printed = _printed(g.table)
        claim(
            list(printed) == list(GEMVS)
            and all(
                [(bk, w) for bk, w, _ in lines]
                == [
                    (t["BLOCK_K"], t["num_warps"])
                    for t in sorted(gemvs[n]["settings"], key=lambda t: t["us"])[:5]
                ]
                for n, lines in printed.items()
            )
            and all(f"{n}: cuBLAS" in g.table for n in GEMVS),
            "per GEMV of a decode step, the peers' times, then the five fastest settings of ours "
            "with their largest error against fp32",
        )
        claim(
            (ATTENTION_BLOCK_N, ATTENTION_WARPS) in {(t["BLOCK_N"], t["num_warps"])
                                                     for t in at["positions"][0]["settings"]}
            and all((GEMV_BLOCK_K[n == "gate_up"], GEMV_WARPS) in
                    {(t["BLOCK_K"], t["num_warps"]) for t in gemvs[n]["settings"]} for n in GEMVS),
            "each times its kernel at every setting as a decode step runs it",
        )  # fmt: skip

    f.repeats(each, n=f.n_repeats(GEMV_SWEEP))

    first = {
        n: min(
            str(r.env["recorded_at"])
            for r in [*f.recs(n), *(x for s in f.sessions(n) for x in s.repeats)]
        )
        for n in LOOPS
    }
    swept = min(str(r.env["recorded_at"]) for n in (GEMV_SWEEP, ATTENTION) for r in f.recs(n))
    claim(
        all(t < swept for t in first.values()),
        "the sweeps ran after the loops were first recorded with these settings",
    )
    h100 = {v.name for v in iter_variants(gpu="h100") if v.example == EXAMPLE}
    claim(
        bool(h100) and not h100 & {GEMV_SWEEP, ATTENTION},
        "the H200's (the H100 ran no sweep)",
    )
