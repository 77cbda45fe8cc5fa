"""The quick start's facts (``quickstart.md``): profile your own model, read on Part 1's traces.

Every number the page reads from the recordings of ``01_matmul_add`` and every claim it
makes about them, checked on every repeat. A number beside a picture or a printed output
is the drawn recording's (``f.md`` in ``f.repeats`` pastes the drawn repeat's text); a
median over the repeats (``f.num``) is called a median. The page's own checks of the
snippet and of the printed ``tracereader summary`` stay on the page: they read what the
build runs, not the recordings. The page imports :func:`after_call_us` for its pictures:
the cheatsheet's (:mod:`_cheatsheet_common`), as is :func:`idle_before_us`.
"""

from __future__ import annotations

from typing import Any

import part1_measures as p1  # Part 1's checks: the first step, the profiler's cost
from _cheatsheet_common import after_call_us, idle_before_us
from tracesite import words
from tracesite.facts import Facts, Fmt, claim

from tracereader import datasheet, kernel_table, link, step_times, summary

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")


def facts(f: Facts) -> None:
    rec, num, md, trace = f.rec, f.num, f.md, f.trace

    md("gpu", rec("64_bf16").env["gpu"])

    # 3. The five things to look at first. The small run: one step of 64x64 bf16, and the
    # facts the text reads off it.
    def small_run() -> Any:
        t64 = trace("64_bf16")
        L64 = link(t64)
        s64 = t64.steps[1]  # the second kept step: never the first (item 5)
        gemm = next(
            int(i)
            for i in L64.gpu_ops
            if t64.ts_ns[i] >= s64.start_ns and t64.name(i).startswith("nvjet")
        )
        add_k = next(int(i) for i in L64.gpu_ops if t64.ts_ns[i] > t64.ts_ns[gemm])
        call = int(L64.launch[add_k])
        claim(
            t64.name(call) == "cudaLaunchKernel" and "add" in t64.name(add_k),
            "the small step's add kernel is queued by its cudaLaunchKernel call",
        )
        st64 = step_times(t64)
        # CPU-bound: the GPU idle most of each step (the page's words; the verdict says so).
        claim(
            all(s.verdict == "CPU-bound" and words.most(s.gpu_idle_us, s.span_us) for s in st64),
            "The small run is CPU-bound: its GPU idle most of each step",
        )
        # An empty queue: every kernel starts within a few µs of its call's end, on an idle GPU.
        claim(
            all(words.few_us(abs(after_call_us(t64, L64, int(k)))) for k in L64.gpu_ops),
            "in the small run every kernel starts within a few µs of its call's end",
        )
        claim(
            all(idle_before_us(t64, L64, int(k)) > 5 for k in L64.gpu_ops),
            "in the small run every kernel starts on an idle GPU",
        )
        md("busy64_pct", f"{100 * st64[1].gpu_busy_us / st64[1].cpu_us:.0f} %")
        q_add = after_call_us(t64, L64, add_k)
        claim(
            q_add > 0 and words.few_us(q_add),
            "The small step's add started a few µs after its call returned",
        )
        md("q_add", f"{q_add:.1f} µs")
        return t64

    t64 = f.repeats(small_run)  # the drawn repeat's, for the summary below

    # The large run: 4096x4096 bf16, where the GEMM fills the GPU lane.
    def large_run() -> None:
        t4k = trace("4096_bf16")
        L4k = link(t4k)
        s4k = t4k.steps[1]
        kt = kernel_table(t4k).to_records()
        claim(
            kt[0]["name"].startswith("nvjet") and words.most(kt[0]["pct"], 100),
            "In the large run one GEMM takes most of the GPU time",
        )
        md("gemm_pct", f"{kt[0]['pct']:.0f} %")
        st4k = step_times(t4k)
        # The CPU launches a step in less than the GEMM's time, so the queue fills: by the
        # last step the GPU runs past the CPU's step. (How soon depends on the host: on one
        # H100 repeat the slower CPU left the second step balanced.)
        claim(
            st4k[-1].verdict == "GPU-bound"
            and st4k[-1].gpu_busy_us > st4k[-1].cpu_us
            and words.nearly_all(st4k[-1].span_us - st4k[-1].gpu_idle_us, st4k[-1].span_us),
            "by the last step the GPU runs past the CPU's step, almost never idle: GPU-bound",
        )
        # A full queue behind the GEMM: each step's add is launched while its GEMM runs, so
        # it starts long after its call returns, as the GPU finishes the GEMM before it.
        adds = [int(k) for k in L4k.gpu_ops if "add" in t4k.name(k)]
        claim(
            len(adds) == len(st4k)
            and all(after_call_us(t4k, L4k, k) > 100 for k in adds)
            and all(0 <= idle_before_us(t4k, L4k, k) < 5 for k in adds),
            "in the large run every add starts long after its call returns, as the GPU "
            "finishes the GEMM before it",
        )
        add4k = next(int(k) for k in adds if L4k.step_of(k) == s4k)
        md("q_add4k", f"{after_call_us(t4k, L4k, add4k):.0f} µs")
        tflops = 2 * 4096**3 / (kt[0]["median_us"] * 1e-6) / 1e12
        peak = datasheet(rec("4096_bf16").env["gpu"])  # this GPU's datasheet row
        claim(peak is not None, "the recordings name a GPU with a datasheet row")
        assert peak is not None  # for the type checker: the claim above holds it
        claim(
            tflops / peak.bf16_tflops > 0.7,
            "this GEMM ran near the datasheet's peak, so little is left inside it",
        )
        f.put("tflops_pct", Fmt(100 * tflops / peak.bf16_tflops, lambda v: f"{v:.0f} %"))
        # CPU times are measured under the profiler, which slows them down.
        timings: Any = rec("interleaved_64").timings()  # what the harness timed, unprofiled
        num(
            "prof_cost",
            p1.interleaved_facts(trace("interleaved_64"), timings["calls"])["prof_cost"],
        )

    f.repeats(large_run)

    # The first step: without wait or warm-up it holds the one-time setup; with them, the
    # first kept step makes the same calls as the later ones and is still wider (Part 1).
    def first_step() -> None:
        t_cold = trace("64_bf16_nowait")
        Lc = link(t_cold)
        cold = step_times(t_cold)
        claim(
            cold[0].cpu_us > 50 * max(s.cpu_us for s in cold[1:]),
            "without wait or warm-up the first step holds the one-time setup",
        )
        md("cold_ms", f"{cold[0].cpu_us / 1e3:.0f} ms")
        add0 = next(int(k) for k in Lc.gpu_ops if "add" in t_cold.name(k))
        call0 = int(Lc.launch[add0])
        # The long wait is inside the cold call itself: the GPU was idle, the kernel started
        # before the call returned.
        claim(
            t_cold.dur_ns[call0] > 1e6 and after_call_us(t_cold, Lc, add0) < 0,
            "Its add's cudaLaunchKernel alone took over a millisecond, and the kernel started "
            "before the call returned",
        )
        claim(
            idle_before_us(t_cold, Lc, add0) > 1e3,
            "a slow call, not a full queue: the GPU was idle before the add",
        )
        md("cold_call_ms", f"{t_cold.dur_ns[call0] / 1e6:.1f} ms")
        t_warm = trace("64_bf16")
        warm = step_times(t_warm)
        claim(
            warm[0].cpu_us > 1.5 * max(s.cpu_us for s in warm[1:]),
            "the first kept step is still wider than the widest later one",
        )
        claim(
            all(p1.cpu_calls(t_warm, 0) == p1.cpu_calls(t_warm, k) for k in range(1, len(warm))),
            "the first kept step makes the same calls as the later ones",
        )
        claim(
            not any(len(t_warm.where(contains=c)) for c in p1.SETUP_CALLS),
            "The schedule's skipped steps absorb this setup",
        )
        num("warm_first_x", warm[0].cpu_us / max(s.cpu_us for s in warm[1:]))

    f.repeats(first_step)

    # 4. Summarise it with tracereader: the command reads the drawn repeat (repeat 0).
    S = summary(t64)
    md("busy_trace_pct", f"{100 * S['gpu_busy_us'] / S['duration_us']:.1f} %")
