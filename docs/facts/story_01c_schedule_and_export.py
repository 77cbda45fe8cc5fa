"""Story 01c's claims (examples/01_matmul_add/01c_schedule_and_export.py): each sentence its
text says about the recordings, checked on every repeat of both GPUs. It pastes nothing: the
story prints its numbers from the replay.

Its two variants (``64_bf16_nowait``, ``64_bf16_export_after``) are recorded on the H200 and
the H100. The unscheduled first step, the Activity Buffer Request over every recording of a
repeat and the late export are Part 1's measures (:func:`part1_measures.unscheduled_facts`,
:func:`part1_measures.window_facts`, :func:`part1_measures.export_facts`), imported; their
own claims run with them. The sentences the story says "on the H200" are claimed on the
H200's recordings only.
"""

from __future__ import annotations

import part1_measures as m
from tracesite import words
from tracesite.facts import Facts, claim

from tracereader import Kind, Trace, link

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")

LOADING = ("Lazy Function Loading", "Runtime Triggered Module Loading")


def longest_silence_ms(tr: Trace, op: int) -> float:
    """The longest stretch inside ``op`` with no recorded call or op under it, in ms."""
    lo, hi = int(tr.ts_ns[op]), int(tr.end_ns[op])
    kinds = (Kind.RUNTIME, Kind.DRIVER, Kind.CPU_OP, Kind.OVERHEAD)
    spans = sorted(
        (int(tr.ts_ns[i]), int(tr.end_ns[i]))
        for i in tr.where(within=(lo, hi))
        if i != op and tr.kind[i] in kinds
    )
    cur, best = lo, 0
    for a, b in spans:
        best, cur = max(best, a - cur), max(cur, b)
    return max(best, hi - cur) / 1e6


def schedule_and_export(f: Facts) -> None:
    nw_rec, after_rec = f.rec("64_bf16_nowait"), f.rec("64_bf16_export_after")
    nw, after, ready = nw_rec.trace(), after_rec.trace(), f.trace("64_bf16")
    # Part 1's measures of the same recordings (their claims are the chapter's).
    u = m.unscheduled_facts(nw)
    m.window_facts(recordings=[(f.trace(n), f.rec(n).meta) for n in m.VARIANTS])
    m.export_facts(ready, after)

    # -- the docstring and the variants -------------------------------------------------
    p, pa = nw_rec.params, after_rec.params
    proc = nw_rec.meta["process"]
    mm0 = m.first(nw, name="aten::mm")
    s0 = nw.steps[0]
    claim(
        p["wait"] == 0
        and p["warmup_steps"] == 0
        and not p.get("warmup")
        and p.get("active", 3) == 3
        and p["size"] == 64
        and p["dtype"] == "bfloat16"
        and proc["fresh"]
        and proc["variants_in_it"] == ["64_bf16_nowait"]
        and s0.start_ns <= nw.ts_ns[mm0] < s0.end_ns,
        "a schedule that skips and discards nothing (wait=0, warmup=0, active=3), so the "
        "profiler records the process's very first call, each time alone in a fresh process",
    )
    claim(
        pa["export"] == "after" and pa["warmup"] and pa["size"] == 64,
        "64_bf16_export_after: 64x64 bf16, warm, the trace exported after with",
    )
    if f.gpu == "h200":
        claim(
            all(
                "H200" in str(f.rec(v).env["gpu"]) and f.n_repeats(v) > 1
                for v in ("64_bf16_nowait", "64_bf16_export_after")
            ),
            "The recordings this page shows were made on an NVIDIA H200, each variant several "
            "times",
        )

    # -- what the schedule hides --------------------------------------------------------
    step0 = (s0.start_ns, s0.end_ns)
    gemm0 = m.first(nw, kind=Kind.KERNEL, prefix="nvjet")
    claim(
        len(nw.where(name="Activity Buffer Request", within=step0)) == 1
        and len(nw.where(contains="Occupancy", within=step0)) > 0
        and len(nw.where(name="cudaMalloc", within=step0)) > 0
        and link(nw).step[gemm0] == 0,
        "Skipping both puts all of the start-up, and the process's first GEMM, into the first "
        "kept step",
    )
    if f.gpu == "h200":
        claim(
            words.far(s0.dur_us, nw.steps[2].dur_us) and words.most(m.dur_us(nw, mm0), s0.dur_us),
            "On the H200 that first step took far longer than the third, and most of it was the "
            "first aten::mm",
        )
    claim(
        all(float(u[k]) > 0 for k in ("n_attr", "n_clusters", "n_occ", "n_malloc", "n_modload"))
        and longest_silence_ms(nw, mm0) > 0.5 * m.dur_us(nw, mm0) / 1e3,
        "Inside it the trace shows attribute calls, occupancy queries, cudaMalloc calls and "
        "module loading, and a long stretch with no recorded call at all",
    )
    adds = [int(i) for i in nw.where(name="aten::add")]
    add_span = (int(nw.ts_ns[adds[0]]), int(nw.end_ns[adds[0]]))
    claim(
        any(len(nw.where(name=n, within=add_span)) for n in LOADING)
        and m.dur_us(nw, adds[0]) > 100 * max(m.dur_us(nw, a) for a in adds[1:]),
        "The first aten::add pays its own loading cost",
    )
    table = nw_rec.table_rows()
    ps = next(r for r in table if r["name"] == "ProfilerStep*")
    claim(
        [int(r["calls"]) for r in table if r["name"] == "aten::mm"] == [3]
        and s0.dur_us > 0.9 * ps["cpu_total_us"],
        "The table sums the three steps, so the first dominates it",
    )
    claim(
        table[0]["name"] == "matmul_add"
        and table[0]["cpu_total_us"] == 0
        and table[0]["self_cuda_pct"] > 100
        and len(nw.where(kind=Kind.GPU_ANNOTATION, name="matmul_add")) == len(nw.steps),
        "The matmul_add row with no CPU time is the label's GPU-side span: its Self CUDA % can "
        "pass 100 %",
    )
    span = (int(nw.ts_ns[mm0]), int(nw.end_ns[mm0]))
    calls = nw.where(kind=(Kind.RUNTIME, Kind.DRIVER, Kind.OVERHEAD), within=span)
    n_invalid = sum(nw.name(int(i)) == "INVALID" for i in calls)
    claim(
        words.few(n_invalid),
        "a count lists the calls recorded inside the first aten::mm (the few INVALID)",
    )
    claim(
        s0.dur_us > 100 * nw.steps[2].dur_us,
        "Expect the first step to dwarf the third on a GPU",
    )

    # -- the Activity Buffer Request ----------------------------------------------------
    peaks_rec = f.rec("peaks")
    peaks = peaks_rec.trace()
    peaks_proc = peaks_rec.meta["process"]
    claim(
        len(nw.where(name="Activity Buffer Request")) == 1
        and len(peaks.where(name="Activity Buffer Request")) == 1
        and not peaks.steps
        and peaks_proc["variants_in_it"].index("peaks") > 0,
        "A recording profiled from its first step holds the profiler's Activity Buffer Request: "
        "this one, or story 01d's peaks, profiled without a schedule in a warm process",
    )
    if f.gpu == "h200":
        for tr in (nw, peaks):
            abr = m.first(tr, name="Activity Buffer Request")
            first_mm = m.first(tr, name="aten::mm")
            cuda = tr.where(kind=(Kind.RUNTIME, Kind.DRIVER))
            claim(
                len(tr.where(name="Activity Buffer Request")) == 1
                and tr.ts_ns[first_mm] <= tr.ts_ns[abr]
                and tr.end_ns[abr] <= tr.end_ns[first_mm]
                and tr.end_ns[abr] < tr.ts_ns[cuda].min(),
                "On the H200 it appeared once, inside the first aten::mm, and ended before the "
                "first CUDA call",
            )
    scheduled = [n for n in m.VARIANTS if not m.profiled_from_start(f.rec(n).meta)]
    claim(
        scheduled
        and all(not len(f.trace(n).where(name="Activity Buffer Request")) for n in scheduled),
        "in every recording whose schedule skipped or discarded a step first it did not appear "
        "at all",
    )
    claim(
        "64_bf16_cold" in scheduled
        and proc["fresh"]
        and peaks_proc["variants_in_it"][0] != "peaks",
        "Its presence follows the schedule, not a cold process",
    )

    # -- when to export -----------------------------------------------------------------
    if f.gpu == "h200":
        claim(
            len(after) == len(ready),
            "on the H200 the late export held as many events as the on_trace_ready one of the "
            "64_bf16 run",
        )
    # "The key_averages() table has the same limit: it sums the last cycle only": with one
    # cycle recorded, the recordings cannot decide it (it is what the profiler's source does).
    claim(
        [s.name for s in after.steps]
        == [s.name for s in ready.steps]
        == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"],
        "The trace holds the three active steps (the skipped and discarded steps, #0 and #1, "
        "are absent), exactly as an on_trace_ready export would",
    )


def facts(f: Facts) -> None:
    f.repeats(lambda: schedule_and_export(f), n=f.n_repeats("64_bf16_nowait"))
