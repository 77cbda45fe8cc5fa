"""Story 01g's claims (examples/01_matmul_add/01g_cpu_time.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. It pastes nothing: the story
prints its numbers from the replay.

Its one variant, ``interleaved_64``, is recorded on the H200 and the H100. The versions'
medians, profiled and not, are Part 1's :func:`part1_measures.interleaved_facts` (its own
claims: a balanced rotation, the profiler's cost), imported. The sentences about "this
recording" (the H200's r0, which the page prints) are claimed on that repeat only; the
sentence about every recorded process reads both GPUs' repeats at once (``f.on``).
:func:`eager_spread` (how far one process's profiled eager steps move from run to run) is
shared with story 01f.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

import part1_measures as m
from tracesite.facts import Facts, claim
from tracesite.recordings import Recording
from tracesite.words import most

from tracereader import Kind, Region, Trace, link, step_times

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")
VARIANT = "interleaved_64"
#: The profiling runs of the same warm eager 64x64 step that one process made.
EAGER_RUNS = ("64_bf16", "64_bf16_20steps", "64_bf16_export_after")
CYCLE_LEN, UNPROFILED_CYCLES, PROFILED_CYCLES = 12, 64, 8
#: "more than 5 % from 1": the story's rule for a difference it claims.
MARGIN = 0.05


def eager_spread(f: Facts) -> float:
    """How far the eager 64x64 step's median CPU time moved between this process's
    profiling runs of it (:data:`EAGER_RUNS`, checked to share one fresh process): the
    largest over the smallest, minus 1."""
    m.same_process([f.rec(v).meta for v in EAGER_RUNS], *EAGER_RUNS)
    meds = [statistics.median(s.cpu_us for s in step_times(f.trace(v))) for v in EAGER_RUNS]
    return max(meds) / min(meds) - 1


def inside(tr: Trace, region: Region) -> list[int]:
    """The events on the region's thread that lie inside it (itself left out)."""
    lane = tr.lane[region.event]
    return [
        int(i)
        for i in tr.where(within=(region.start_ns, region.end_ns))
        if tr.lane[i] == lane and tr.end_ns[i] <= region.end_ns and i != region.event
    ]


def shape(tr: Trace, region: Region) -> dict[str, Any]:
    """One call: its top-level ops, its launch calls (name, GPU ops each), its GPU ops."""
    lk = link(tr)
    ev = inside(tr, region)
    calls = [i for i in ev if len(lk.gpu_ops_of_call(i))]
    return {
        "top": [tr.name(i) for i in ev if lk.parent[i] == region.event],
        "names": {tr.name(i) for i in ev},
        "calls": [(tr.name(i), [tr.name(int(g)) for g in lk.gpu_ops_of_call(i)]) for i in calls],
        "gpu": [tr.name(int(g)) for g in lk.gpu_ops_of(region.event)],
        "events": ev,
    }


def loop_pairs(seq: list[str]) -> Counter[tuple[str, str]]:
    """Each ordered pair of neighbours, the sequence read as a loop."""
    return Counter(zip(seq, seq[1:] + seq[:1], strict=True))


def periodic(seq: list[str], period: int) -> bool:
    return all(seq[i] == seq[i % period] for i in range(len(seq)))


def ratios(rec: Recording) -> dict[str, Any]:
    """``interleaved_facts`` of one recorded process."""
    timings: Any = rec.timings()
    return m.interleaved_facts(rec.trace(), bare=timings["calls"])


def facts(f: Facts) -> None:
    def each() -> None:
        rec = f.rec(VARIANT)
        tr = rec.trace()
        timings: Any = rec.timings()
        bare = [(str(v), float(us)) for v, us in timings["calls"]]
        inter = ratios(rec)  # its own claims: a balanced rotation, the profiler not free
        lk = link(tr)
        profiled = [v for v, _ in m.calls_of(tr)]
        unprofiled = [v for v, _ in bare]

        # The question
        spread = eager_spread(f)
        claim(
            spread > abs(inter["u_a_over_e"] - 1) and spread > abs(inter["u_r_over_c"] - 1),
            "at 64x64 the CPU time per step moves from one profiling run to the next, even "
            "within one process, by more than some of the differences we are after",
        )

        # The four versions
        shapes = {v: [shape(tr, r) for r in tr.regions(v)] for v in m.VERSIONS}
        gemms = [
            tr.name(int(k))
            for k in tr.where(kind=Kind.KERNEL)
            if "gemm" in tr.name(int(k)) or tr.name(int(k)).startswith("nvjet")
        ]
        claim(
            len(gemms) == len(profiled)
            and all(g.startswith("nvjet") for g in gemms)
            and all(
                sum(n.startswith("nvjet") for n in s["gpu"]) == 1
                for v in m.VERSIONS
                for s in shapes[v]
            ),
            "All four ... on the GPU, run the same kind of GEMM",
        )
        claim(
            all(
                s["top"] == ["aten::matmul", "aten::add"]
                and "aten::mm" in s["names"]
                and len(s["calls"]) == 2
                and all(len(ops) == 1 for _, ops in s["calls"])
                for s in shapes["eager"]
            ),
            "Eager runs two aten ops, aten::matmul (which calls aten::mm) and aten::add, and two "
            "launch calls, each queuing one kernel on the GPU",
        )
        claim(
            all(
                s["top"] == ["aten::addmm"]
                and len(s["gpu"]) == 2
                and s["gpu"][0].startswith("Memcpy DtoD")
                and s["gpu"][1].startswith("nvjet")
                and "_badd_" in s["gpu"][1]
                for s in shapes["addmm"]
            ),
            "torch.addmm is one op, aten::addmm, with two GPU operations: a copy of b into the "
            "output (Memcpy DtoD) and a GEMM that adds its product onto it (badd in its nvjet name)",
        )
        addmm_gpu = shapes["addmm"][0]["gpu"]
        claim(
            all(
                "TorchDynamo Cache Lookup" in s["names"]
                and any("CompiledFxGraph" in n for n in s["names"])
                and "aten::addmm" in s["names"]
                and s["gpu"] == addmm_gpu
                for s in shapes["compiled"]
            )
            and all(
                "TorchDynamo Cache Lookup" in s["names"]
                and any("CompiledFxGraph" in n for n in s["names"])
                for s in shapes["reduce-overhead"]
            ),
            "The compiled versions wrap that same addmm in torch.compile's own work on every "
            "call: checking guards and calling the code TorchInductor generated",
        )
        claim(
            all(
                [c for c, _ in s["calls"]] == ["cudaLaunchKernel", "cudaGraphLaunch"]
                and len(s["calls"][0][1]) == 1
                and s["calls"][1][1] == addmm_gpu
                for s in shapes["reduce-overhead"]
            ),
            "reduce-overhead ... each call then copies its inputs into the memory the graph was "
            "recorded with (one small kernel) and replays the graph with one launch call, "
            "cudaGraphLaunch",
        )

        # The order of the calls, and the harness
        cycle = profiled[:CYCLE_LEN]
        pairs = loop_pairs(cycle)
        claim(
            periodic(profiled, CYCLE_LEN)
            and unprofiled[:CYCLE_LEN] == cycle
            and periodic(unprofiled, CYCLE_LEN)
            and len(pairs) == 12
            and set(pairs.values()) == {1}
            and all(a != b for a, b in pairs),
            "in each cycle of its 12 calls, every version runs right after every other version "
            "exactly once",
        )
        claim(
            len(tr.steps) == len(profiled) == PROFILED_CYCLES * CYCLE_LEN
            and tr.steps[0].name == "ProfilerStep#5"
            and [
                sum(
                    1
                    for v in m.VERSIONS
                    for r in tr.regions(v)
                    if s.start_ns <= r.start_ns < s.end_ns
                )
                for s in tr.steps
            ]
            == [1] * len(tr.steps),
            "Every call in the profiled part is one profiler step, so the schedule's wait=1, "
            "warmup=4 skips and discards the first five calls, and the active window holds "
            "cycles whole cycles",
        )

        # The variant
        procs = [r.meta["process"] for r in f.recs(VARIANT)]
        order = rec.meta["process"]["variants_in_it"]
        claim(
            f.n_repeats(VARIANT) == 3
            and f.gpu.upper() in rec.env["gpu"]
            and all(p["fresh"] and len(p["variants_in_it"]) > 1 for p in procs)
            and order.index(VARIANT) >= len(order) - 3,
            "recorded three times on an NVIDIA H200 and three times on an NVIDIA H100, each "
            "repeat in a fresh process that it shared with the set's other variants, near the "
            "end of it",
        )
        claim(
            len(unprofiled) == UNPROFILED_CYCLES * CYCLE_LEN
            and len(profiled) == PROFILED_CYCLES * CYCLE_LEN,
            "64x64 bf16; 64 cycles unprofiled, then 8 cycles profiled",
        )

        # Under the profiler: the table
        rows = rec.table_rows()
        totals = rec.table_totals_us()
        by_version = {v: [r for r in rows if r["name"] == v] for v in m.VERSIONS}
        claim(
            all(len(rs) == 2 for rs in by_version.values()),
            "The profiler's table has two rows per version label",
        )
        cpu_rows = {v: next(r for r in rs if r["self_cpu_us"] > 0) for v, rs in by_version.items()}
        claim(
            all(
                abs(cpu_rows[v]["cpu_total_us"] - sum(r.dur_us for r in tr.regions(v)))
                < 0.01 * cpu_rows[v]["cpu_total_us"]
                for v in m.VERSIONS
            ),
            "its CPU total is the CPU time of that version's calls, summed over the profiled "
            "cycles",
        )
        claim(
            len({r["calls"] for r in cpu_rows.values()}) == 1,
            "every version ran the same number of times (# of Calls)",
        )
        gpu_ops_us = float(tr.dur_ns[lk.gpu_ops].sum()) / 1e3
        claim(
            {r["name"] for r in rows[:4]} == set(m.VERSIONS)
            and all(r["self_cpu_us"] == 0 for r in rows[:4])
            and all(len(tr.where(kind=Kind.GPU_ANNOTATION, name=v)) for v in m.VERSIONS)
            and abs(totals["self_cuda_us"] - gpu_ops_us) < 0.01 * gpu_ops_us
            and all(r["self_cuda_us"] > totals["self_cuda_us"] for r in rows[:4]),
            "The other, at the top, is the label's GPU-side span: a label, not GPU work, so Self "
            "CUDA time total leaves it out and its Self CUDA % can pass 100 %",
        )
        names = [str(r["name"]) for r in rows]
        fx_rows = [r for r in rows if str(r["name"]).startswith("## Call CompiledFxGraph")]
        region_rows = [n for n in names if n.startswith("Torch-Compiled Region")]
        fx_of = {
            v: {n for s in shapes[v] for n in s["names"] if n.startswith("## Call CompiledFxGraph")}
            for v in ("compiled", "reduce-overhead")
        }
        rc_of = {
            v: {n for s in shapes[v] for n in s["names"] if n.startswith("Torch-Compiled Region")}
            for v in ("compiled", "reduce-overhead")
        }
        claim(
            len(fx_rows) == 2
            and sorted(region_rows) == ["Torch-Compiled Region: 0/0", "Torch-Compiled Region: 1/0"]
            and rc_of["compiled"] == {"Torch-Compiled Region: 0/0"}
            and rc_of["reduce-overhead"] == {"Torch-Compiled Region: 1/0"}
            and all(len(x) == 1 for x in fx_of.values())
            and fx_of["compiled"] != fx_of["reduce-overhead"],
            "the compiled versions' Torch-Compiled Region and ## Call CompiledFxGraph <hash> ## "
            "rows ... the numbers 0/0 and 1/0 tell the two compiled functions apart",
        )

        def fx_holds(v: str, what: str) -> bool:
            for region in tr.regions(v):
                ev = inside(tr, region)
                fx = [i for i in ev if tr.name(i).startswith("## Call CompiledFxGraph")]
                if len(fx) != 1 or not any(
                    tr.name(i) == what and lk.stack(i).count(fx[0]) == 1 for i in ev
                ):
                    return False
            return True

        claim(
            fx_holds("compiled", "aten::addmm") and fx_holds("reduce-overhead", "cudaGraphLaunch"),
            "the frames torch.compile adds around the same aten::addmm (for reduce-overhead, "
            "around the replay of the CUDA graph that holds its copy and GEMM)",
        )
        graph_us = (
            sum(
                float(tr.dur_ns[g])
                for c in tr.where(name="cudaGraphLaunch")
                for g in lk.gpu_ops_of_call(int(c))
            )
            / 1e3
        )
        with_cuda = [r for r in fx_rows if r["self_cuda_us"] > 0]
        claim(
            len(with_cuda) == 1
            and {with_cuda[0]["name"]} == fx_of["reduce-overhead"]
            and abs(with_cuda[0]["self_cuda_us"] - graph_us) < 0.01 * graph_us,
            "the reduce-overhead version's CompiledFxGraph row has Self CUDA time: it launched the "
            "CUDA graph itself, so the graph's copy and GEMM count as its own GPU time",
        )
        eager_kernels = {g for s in shapes["eager"] for g in s["gpu"]}
        left_out = {"aten::mm", "aten::add", "TorchDynamo Cache Lookup", *eager_kernels}
        copies = {tr.name(int(i)) for i in tr.where(kind=Kind.MEMCPY)}
        in_trace = {tr.name(i) for i in range(len(tr))}
        claim(
            len(rows) == 15
            and not (left_out | copies) & set(names)
            and (left_out | copies) <= in_trace
            and copies,
            "This table stops at 15 rows, so it leaves out, among others, eager's own aten::mm "
            "and aten::add and their kernels, the copies, and the TorchDynamo Cache Lookup rows; "
            "the trace holds them all",
        )

        # Without the profiler
        claim(
            inter["ie_us"] > inter["uie_us"],
            "the same eager call takes longer under it",
        )

        # What the chapter concluded
        claim(
            inter["uic_us"] >= 2 * inter["uie_us"],
            "without the profiler, a compiled call took at least twice the CPU time of an eager "
            "one, in every repeat on both the H200 and the H100",
        )
        claim(
            inter["u_r_over_c"] > 1 + MARGIN,
            "reduce-overhead took more than plain compile in every repeat on both GPUs",
        )
        n_calls = {v: len(shapes[v][0]["calls"]) for v in ("eager", "compiled", "reduce-overhead")}
        claim(
            all(len(s["calls"]) == n_calls[v] for v in n_calls for s in shapes[v])
            and n_calls["reduce-overhead"] == n_calls["compiled"] == n_calls["eager"] == 2,
            "it turns two launch calls into one cudaGraphLaunch, and the input copy before it adds "
            "one back: the launch calls break even",
        )
        ro_fx = next(r for r in fx_rows if {r["name"]} == fx_of["reduce-overhead"])
        c_fx = next(r for r in fx_rows if {r["name"]} == fx_of["compiled"])
        claim(
            ro_fx["self_cpu_us"] > 2 * c_fx["self_cpu_us"] and ro_fx["calls"] == c_fx["calls"],
            "its ## Call CompiledFxGraph row (the one with Self CUDA time) has more than twice the "
            "Self CPU of plain compile's, over the same number of calls, in every repeat on both "
            "GPUs",
        )
        if f.gpu == "h200" and f.repeat == 0:
            claim(
                inter["u_a_over_e"] < 1,
                "torch.addmm: Its line above (this recording's) reads below 1",
            )
            claim(inter["a_over_e"] > 1, "under the profiler it was above 1 here")

    f.repeats(each, n=f.n_repeats(VARIANT))

    # Every recorded process, on both GPUs
    every = {g: [ratios(r)["u_a_over_e"] for r in f.on(g).recs(VARIANT)] for g in GPUS}
    others = [(g, k, x) for g in GPUS for k, x in enumerate(every[g]) if (g, k) != ("h200", 0)]
    within = [x for _, _, x in others if abs(x - 1) <= MARGIN]
    above = [(g, x) for g, _, x in others if x > 1]
    claim(
        most(len(within), len(others)) and len(above) == 1 and above[0][0] == "h100",
        "most other recorded processes put the ratio within 5 % of 1, and one of them, on the "
        "H100, above 1",
    )
