"""Story 01b's claims (examples/01_matmul_add/01b_cold_start.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. It pastes nothing: the story
prints its numbers from the replay.

Its four variants (``64_bf16_cold``, ``4096_bf16_cold``, ``64_bf16_20steps_cold``,
``64_bf16_20steps``) are recorded on the H200 and the H100. The first step against the rest,
the late GPU lane and the closing synchronize are Part 1's measures
(:func:`part1_measures.first_step_facts`, :func:`part1_measures.offset_facts`,
:func:`part1_measures.sync_window`), imported; their own claims run with them. The sentences
the story says "on the H200" are claimed on the H200's recordings only.
"""

from __future__ import annotations

import part1_measures as m
from tracesite.facts import Facts, claim
from tracesite.words import few, times

from tracereader import Kind, Trace, link

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")
COLD = ("64_bf16_cold", "4096_bf16_cold", "64_bf16_20steps_cold")
VARIANTS = (*COLD, "64_bf16_20steps")


def parts(tr: Trace, step: int) -> dict[str, float]:
    """The parts of one step the story names, in µs: the gap from the step's start to
    ``matmul_add``, ``aten::mm``, its launch call ``cuLaunchKernelEx`` and ``aten::add``."""
    s = tr.steps[step]
    lo_hi = (s.start_ns, s.end_ns)
    label = m.first(tr, name="matmul_add", kind=Kind.USER_ANNOTATION, within=lo_hi)
    return {
        "gap before matmul_add": float(tr.ts_ns[label] - s.start_ns) / 1e3,
        "aten::mm": m.dur_us(tr, m.first(tr, name="aten::mm", within=lo_hi)),
        "the launch call": m.dur_us(tr, m.first(tr, name="cuLaunchKernelEx", within=lo_hi)),
        "aten::add": m.dur_us(tr, m.first(tr, name="aten::add", within=lo_hi)),
    }


def cold_start(f: Facts) -> None:
    t = f.trace
    cold20, warm20, cold64, cold4k = (
        t("64_bf16_20steps_cold"),
        t("64_bf16_20steps"),
        t("64_bf16_cold"),
        t("4096_bf16_cold"),
    )
    warm_meta = f.rec("64_bf16_20steps").meta
    # Part 1's measures of the same recordings (their claims are the chapter's).
    first = m.first_step_facts(cold20, warm20, cold64, warm_meta=warm_meta)
    m.offset_facts(t("64_bf16"), cold64, t("64_bf16_nowait"), cold20)

    # -- the docstring and the variants -------------------------------------------------
    for tr in (cold64, cold4k):
        claim(
            len(tr.steps) == 3 and tr.steps[0].dur_us > max(s.dur_us for s in tr.steps[1:]),
            "The three active steps of a profile run the same code, yet the first is wider",
        )
    params = {v: f.rec(v).params for v in VARIANTS}
    claim(
        all(not params[v].get("warmup") for v in COLD)
        and params["64_bf16_20steps"]["warmup"]
        and [params[v].get("active", 3) for v in VARIANTS] == [3, 3, 20, 20],
        "profiles it in a fresh process without any warm-up, and again after five warm-up "
        "calls, with 3 and with 20 active steps",
    )
    for v in COLD:
        rec = f.rec(v)
        claim(
            rec.meta["process"]["fresh"]
            and rec.meta["process"]["variants_in_it"] == [v]
            and f.n_repeats(v) > 1
            and (f.gpu != "h200" or "H200" in str(rec.env["gpu"])),
            "the recordings this page shows ran each of them alone in a process of its own, "
            "several times over, on an NVIDIA H200",
        )
    shared = warm_meta["process"]["variants_in_it"]
    claim(
        len(shared) > 1 and not any(v.endswith("_cold") or v == "64_bf16_nowait" for v in shared),
        "The warm 64_bf16_20steps ran in a process shared with other warm experiments",
    )

    # -- twenty steps in a cold process -------------------------------------------------
    p = params["64_bf16_20steps_cold"]
    claim(
        p.get("wait", 1) == 1
        and p.get("warmup_steps", 1) == 1
        and not p.get("warmup")
        and cold20.steps[0].name == "ProfilerStep#2",
        "There is no warm-up, so the schedule's skipped step (wait=1) and discarded step "
        "(warmup=1) are the process's first two calls",
    )
    for tr in (cold20, warm20, cold64, cold4k):
        claim(
            not any(len(tr.where(contains=c)) for c in m.SETUP_CALLS),
            "they absorb the one-time setup: no allocation, occupancy query or module loading "
            "appears in the kept steps at all",
        )
    mm_calls = [
        int(r["calls"])
        for r in f.rec("64_bf16_20steps_cold").table_rows()
        if r["name"] == "aten::mm"
    ]
    claim(
        mm_calls == [20] and len(cold20.steps) == 20,
        "The table sums the 20 steps, so one slow step hides in it",
    )

    # -- twenty steps after a warm-up ---------------------------------------------------
    claim(
        times(float(first["warm_first"]), float(first["warm_rest"]), 2)
        and float(first["warm_ratio"]) < float(first["cold_ratio"]),
        "on both GPUs the warm first step still took more than twice the median of the rest, "
        "though less than in the cold process",
    )
    claim(
        shared[0] != "64_bf16_20steps" and warm_meta["process"]["fresh"],
        "the warm run also came after other profiled runs in its process",
    )
    first_parts, next_parts = parts(warm20, 0), parts(warm20, 1)
    for name, us in first_parts.items():
        claim(
            us > next_parts[name],
            "every part of the first kept step is wider than in the step after it, the gap "
            f"before matmul_add, aten::mm, the launch call and aten::add alike ({name})",
        )
    claim(
        few(len(warm20.steps[:5]))
        and warm20.steps[0].dur_us > max(s.dur_us for s in warm20.steps[1:5]),
        "The timeline of the warm run's first few steps: the first kept step is wider than the "
        "four after it",
    )

    # -- three cold steps, at two sizes -------------------------------------------------
    if f.gpu == "h200":
        claim(
            float(first["gap2"]) > max(float(first["gap3"]), float(first["gap4"])),
            "On the H200 that wait (from matmul_add to aten::matmul) was longest in the first "
            "step too",
        )
        g, launch = m.first_launch(cold64)
        start = cold64.steps[0].start_ns
        offset = float(cold64.ts_ns[g] - start) / 1e3
        claim(
            float(cold64.ts_ns[g] - cold64.end_ns[launch]) / 1e3 < 5
            and float(cold64.ts_ns[launch] - start) / 1e3 > 0.5 * offset,
            "the late GPU lane was CPU work before the first launch, not a late GPU: the first "
            "kernel started soon after its launch call",
        )
    table = f.rec("64_bf16_cold").table_rows()
    claim(
        len(table) <= 15
        and f.rec("64_bf16_cold").table_fields()["row_limit"] == 15
        and [int(r["calls"]) for r in table if r["name"] == "aten::mm"] == [3],
        "The table sums the three steps and keeps its top 15 rows",
    )
    claim(
        table[0]["name"] == "matmul_add"
        and table[0]["cpu_total_us"] == 0
        and table[0]["self_cuda_pct"] > 100,
        "The matmul_add row with no CPU time is the label's GPU-side span: its Self CUDA % can "
        "pass 100 %",
    )
    _, (w0, w1) = m.sync_window(cold4k)
    last_end = int(cold4k.end_ns[link(cold4k).gpu_ops].max())
    claim(
        last_end <= w0 or w1 >= last_end,
        "At 4096x4096, the closing cudaDeviceSynchronize waits for any GEMMs still queued on "
        "the GPU: with work queued, it ends only after that work",
    )


def facts(f: Facts) -> None:
    f.repeats(lambda: cold_start(f), n=f.n_repeats("64_bf16_cold"))
