"""Story 03b's claims (examples/03_mlp/03b_cold_first_forward.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. It pastes nothing: the story
prints its numbers from the replay.

``eager_cold`` is recorded on the H200 and the H100. Who asks for occupancy, and when, is
Part 2's :func:`part2_measures.first_forward` (imported, with its claims); the warm
variants it is set against are every other variant of ``03_mlp``. The section headed "What
the H200 showed" holds on both GPUs, and is checked on both.
"""

from __future__ import annotations

import part2_measures as m
from story_03a_eager_mlp import table_rows
from tracesite import words
from tracesite.facts import Facts, claim

from tracereader import Kind, Trace, link

EXAMPLE = "03_mlp"
GPUS = ("h200", "h100")
#: Every warm variant of the set: profiled after warm-up forwards (or after the first call).
WARM = ("eager", "eager_big", "compile", "compile_big", "autotune", "reduce_overhead",
        "liger", "liger_big", "compile_cold", "autotune_cold")  # fmt: skip


def unrecorded_most(tc: Trace, op: int) -> bool:
    """Most of ``op``'s time has no recorded event under it (:func:`tracesite.words.most`):
    its children (and the driver's ``Lazy Function Loading`` records inside it) leave over
    half of it uncovered."""
    lk = link(tc)
    span = (int(tc.ts_ns[op]), int(tc.end_ns[op]))
    inside = [int(j) for j in tc.where(within=span) if j != op]
    rec = sum(
        int(tc.dur_ns[j])
        for j in inside
        if lk.parent[j] == op or tc.name(j) == "Lazy Function Loading"
    )
    return words.most(int(tc.dur_ns[op]) - rec, int(tc.dur_ns[op]))


def facts(f: Facts) -> None:
    def each() -> None:
        rec = f.rec("eager_cold")
        tc = rec.trace()
        claim(
            rec.params.get("cold") is True and len(tc.steps) == 3,
            "eager_cold: the first forward, then two warm ones",
        )
        claim(
            tc.device_properties[0]["computeMajor"] == 9 and str(rec.env["cuda"]).startswith("13"),
            "these recordings answer it for two Hopper GPUs with the cuBLAS of CUDA 13",
        )
        claim(
            rec.meta["process"]["fresh"]
            and rec.meta["process"]["variants_in_it"] == ["eager_cold"],
            "the recorder ran each repeat of this variant in a process of its own",
        )
        warm = [f.trace(v) for v in WARM]
        cold = m.first_forward(tc, warm)  # Part 2's claims: only the first GEMM asks, cheaply
        claim(
            all(not len(t.where(contains="Occupancy")) for t in warm),
            "the warm forwards of this set's other stories make none",
        )
        claim(
            cold["cold_occ"] > 0 and len(tc.where(contains="Occupancy")) == cold["cold_occ"],
            "every occupancy query came from the process's first GEMM",
        )

        # The table: aten::mm's nine calls, the first pulling the average up.
        rows = table_rows(rec)
        mm_row = next(r for r in rows if r["Name"] == "aten::mm")
        mms = tc.dur_ns[tc.where(name="aten::mm", kind=Kind.CPU_OP)] / 1e3
        warm_mm = f.trace("eager").dur_ns[f.trace("eager").where(name="aten::mm", kind=Kind.CPU_OP)]
        claim(
            mm_row["# of Calls"] == "9" and len(mms) == 9 and mms.mean() >= 1000,
            "the aten::mm row: nine calls, three a forward, and a CPU time average of milliseconds",
        )
        claim(words.much(1e3, warm_mm.mean() / 1e3), "a warm call takes well under a millisecond")
        claim(
            mms[0] == mms.max() and mms[1:].mean() < 1000,
            "one call, the first, pulls the average up",
        )
        mlp = [r for r in rows if r["Name"] == "mlp_fwd"]
        claim(
            len(mlp) == 2
            and sum(r["Self CPU"] == r["CPU total"] == "0.000us" for r in mlp) == 1
            and len(tc.where(kind=Kind.GPU_ANNOTATION, name="mlp_fwd")) == len(tc.steps),
            "the mlp_fwd row with no CPU time is the label's GPU-side span; the other is the "
            "label on the CPU",
        )

        # The first forward: slow, and mostly unrecorded.
        first = tc.steps[0]
        in_first = (first.start_ns, first.end_ns)
        gate = int(tc.where(name="aten::mm", kind=Kind.CPU_OP, within=in_first)[0])
        for op in ("aten::gelu", "aten::mul"):
            call = int(tc.where(name=op, kind=Kind.CPU_OP, within=in_first)[0])
            claim(
                unrecorded_most(tc, call) and unrecorded_most(tc, gate),
                "most of their time, like most of the first GEMM's, has no recorded event under it",
            )
        second = tc.steps[1]
        claim(
            words.small_share(second.end_ns - second.start_ns, first.end_ns - first.start_ns),
            "the first forward as a whole was slow; in the second step the whole forward takes "
            "a small fraction of that time",
        )

    f.repeats(each, n=f.n_repeats("eager_cold"))

    decode = f.variant("generate_dynamic_1b", "05_llm_decode").repeats
    claim(
        all(m.occupancy_issuers(r.trace()) == {"aten::cumsum"} for r in decode),
        "in Part 4's decoding trace the query comes from aten::cumsum",
    )
