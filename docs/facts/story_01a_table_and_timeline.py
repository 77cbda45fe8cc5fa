"""Story 01a's claims (examples/01_matmul_add/01a_table_and_timeline.py): each sentence its
text says about the recordings, checked on every repeat of both GPUs. It pastes nothing: the
story prints its numbers from the replay.

Its three variants (``64_bf16``, ``4096_bf16``, ``64_bf16_batch8``) are recorded on the H200
and the H100. What Part 1 already measures of them (the table's totals, the call chain, the
launch calls, the closing synchronize, the interleaved calls of story 01g) is
:mod:`part1_measures`, imported, and its own claims run with it. The sentences that name one
H100 repeat ("on one H100 repeat the CPU kept just level with the GPU") count the H100's
repeats once all have run: exactly one of them, the one whose last 4096x4096 GEMM started
within a few µs of its launch call's return (:func:`level`).
"""

from __future__ import annotations

from typing import Any

import part1_measures as m
from tracesite.facts import Facts, claim
from tracesite.recordings import Recording
from tracesite.words import (
    a_little,
    about,
    far,
    few_bytes,
    few_us,
    most,
    nearly_all,
    small_share,
    times,
)

from tracereader import Kind, Trace, launches, link, step_times

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")
VARIANTS = ("64_bf16", "4096_bf16", "64_bf16_batch8")

#: "Queued": a GPU op started this long (µs) or more after its launch call returned.
QUEUED_US = 50.0
#: "Kept just level": the last step's GEMM started within this (µs) of its call's return.
LEVEL_US = 5.0


def rows(rec: Recording) -> dict[str, dict[str, Any]]:
    """The profiler table's rows by name (of two rows with one name, the last)."""
    return {str(r["name"]): r for r in rec.table_rows()}


def kernel_row(rec: Recording, prefix: str) -> dict[str, Any]:
    """The table's first row whose name starts with ``prefix``."""
    return next(r for r in rec.table_rows() if str(r["name"]).startswith(prefix))


def last_step_ops(tr: Trace) -> list[int]:
    """The GPU ops launched in the last step, in the order they started."""
    lk = link(tr)
    last = len(tr.steps) - 1
    return sorted((int(g) for g in lk.gpu_ops if lk.step[g] == last), key=lambda g: tr.ts_ns[g])


def queue_us(tr: Trace, g: int) -> float:
    """From the return of ``g``'s launch call to ``g``'s start, in µs."""
    return float(tr.ts_ns[g] - tr.end_ns[int(link(tr).launch[g])]) / 1e3


def level(t4k: Trace) -> bool:
    """The CPU kept just level with the GPU: the last step's GEMM started within
    :data:`LEVEL_US` of its launch call's return."""
    gemm = next(g for g in last_step_ops(t4k) if t4k.name(g).startswith("nvjet"))
    return queue_us(t4k, gemm) < LEVEL_US


def queued(t4k: Trace) -> bool:
    """Every GPU op of the last step started :data:`QUEUED_US` or more after its launch."""
    return all(queue_us(t4k, g) >= QUEUED_US for g in last_step_ops(t4k))


def stack_names(tr: Trace, g: int) -> list[str]:
    return [tr.name(int(i)) for i in link(tr).stack(g)]


def table_and_timeline(f: Facts, per_repeat: dict[str, list[Any]]) -> None:
    """One repeat's claims; what the H100 sentences count goes into ``per_repeat``."""
    r64, r4k, rb = (f.rec(v) for v in VARIANTS)
    t64, t4k, tb = (r.trace() for r in (r64, r4k, rb))
    tot64, tot4k = r64.table_totals_us(), r4k.table_totals_us()
    # Part 1's measures of the same recordings (their claims are the chapter's).
    tab = m.table_facts(t64, t4k, tot64, tot4k)
    m.chain_facts(t64, tb)
    t = f.trace
    m.launch_call_facts(
        t64,
        t4k,
        t("4096_fp32"),
        t("4096_fp32_tf32"),
        others=[t(n) for n in ("4096_fp32_tf32", "4096_bf16_compile", "peaks")],
    )

    # -- the docstring and the variants -------------------------------------------------
    p64, p4k, pb = r64.params, r4k.params, rb.params
    claim(
        (p64["size"], p4k["size"]) == (64, 4096)
        and p64["dtype"] == p4k["dtype"] == pb["dtype"] == "bfloat16",
        "at two sizes, 64x64 and 4096x4096 in bfloat16",
    )
    claim(
        pb["batch"] == 8 and pb["size"] == 64 and pb["warmup"],
        "64_bf16_batch8: 64x64 with x batched to (8, 64, 64)",
    )
    claim(
        all(r.params["warmup"] and r.params.get("active", 3) == 3 for r in (r64, r4k)),
        "64_bf16: five warm-up calls first, 3 active steps; 4096_bf16: the same",
    )
    for r in (r64, r4k, rb):
        claim(
            r.table_fields()["sort_by"] == "cuda_time_total",
            "It returns the profiler's table, sorted by GPU time when there is a GPU",
        )
        tr = r.trace()
        labels = tr.where(name="matmul_add", kind=Kind.USER_ANNOTATION)
        claim(
            len(tr.steps) == 3
            and all(s.name.startswith("ProfilerStep#") for s in tr.steps)
            and len(labels) == 3
            and all(
                len(labels[(tr.ts_ns[labels] >= s.start_ns) & (tr.ts_ns[labels] < s.end_ns)]) == 1
                for s in tr.steps
            ),
            "Each kept step becomes a ProfilerStep#N span in the trace, and "
            'record_function("matmul_add") puts our own label around each call',
        )
        proc = r.meta["process"]
        claim(
            f.n_repeats(r.variant) == 3
            and ("H200" if f.gpu == "h200" else "H100") in str(r.env["gpu"])
            and proc["fresh"]
            and set(VARIANTS) < set(proc["variants_in_it"]),
            "Every variant was recorded three times on an NVIDIA H200 and three times on an "
            "NVIDIA H100, each repeat in a fresh process (shared with the set's other variants)",
        )

    # -- 64x64: the table ---------------------------------------------------------------
    row64 = rows(r64)
    ps64 = row64["ProfilerStep*"]
    kernels64 = t64.where(kind=Kind.KERNEL)
    claim(
        few_us(float(t64.dur_ns[kernels64].max()) / 1e3)
        and small_share(tot64["self_cuda_us"], ps64["cpu_total_us"]),
        "each kernel takes a few µs, and the GPU works for a small fraction of the time the CPU "
        "spends preparing and launching them",
    )
    claim(
        row64["aten::mm"]["calls"] == row64["aten::add"]["calls"] == len(t64.steps) == 3,
        "The table sums each op over the profiled window, the three kept steps",
    )
    sync64 = row64["cudaDeviceSynchronize"]
    steps64 = sum(s.dur_us for s in t64.steps)
    claim(
        sync64["calls"] == 1
        and abs(tot64["self_cpu_us"] - ps64["cpu_total_us"] - sync64["self_cpu_us"])
        < 0.01 * tot64["self_cpu_us"]
        and abs(ps64["cpu_total_us"] - steps64) < 0.01 * steps64,
        "The CPU total also counts the profiler's closing cudaDeviceSynchronize: the "
        "ProfilerStep* row is the steps' own CPU time",
    )
    mm_kids = [
        [
            t64.name(int(j))
            for j in t64.where(
                kind=Kind.CPU_OP,
                lane=int(t64.lane[i]),
                within=(int(t64.ts_ns[i]), int(t64.end_ns[i])),
            )
            if j != i
        ]
        for i in t64.where(name="aten::matmul")
    ]
    claim(
        row64["aten::matmul"]["self_cpu_us"] < 0.2 * row64["aten::matmul"]["cpu_total_us"]
        and all(kids == ["aten::mm"] for kids in mm_kids),
        "aten::matmul has little self time but a large total, because it only hands over to "
        "aten::mm",
    )
    lk64 = link(t64)
    by_op = {str(r["op"]): r for r in launches(t64).to_records()}
    gemm64, add64 = by_op["aten::mm"], by_op["aten::add"]
    claim(
        set(by_op) == {"aten::mm", "aten::add"}
        and str(gemm64["name"]).startswith("nvjet_")
        and "vectorized_elementwise_kernel" in str(add64["name"])
        and {str(gemm64["name"]), str(add64["name"])} <= set(row64),
        "nvjet_... is the matrix multiply's kernel, and vectorized_elementwise_kernel the add's",
    )
    gemm_k, add_k = int(gemm64["gpu_op"]), int(add64["gpu_op"])
    claim(
        t64.name(int(lk64.launch[gemm_k])) == "cuLaunchKernelEx"
        and t64.kind[lk64.launch[gemm_k]] == Kind.DRIVER
        and t64.name(int(lk64.launch[add_k])) == "cudaLaunchKernel"
        and t64.kind[lk64.launch[add_k]] == Kind.RUNTIME,
        "cuLaunchKernelEx and cudaLaunchKernel queued them: cuBLAS launched its GEMM through "
        "CUDA's driver API and PyTorch its add through the runtime API",
    )
    t32 = f.trace("4096_fp32")
    lk32 = link(t32)
    gemms32 = [int(k) for k in t32.where(kind=Kind.KERNEL) if "elementwise" not in t32.name(int(k))]
    claim(
        gemms32 and all(t32.kind[lk32.launch[k]] == Kind.RUNTIME for k in gemms32),
        "cuBLAS launches some other GEMMs through the runtime (story 01e)",
    )
    table64 = r64.table_rows()
    labels64 = [r for r in table64 if r["name"] == "matmul_add"]
    claim(
        len(labels64) == 2
        and table64[0]["name"] == "matmul_add"
        and table64[0]["cpu_total_us"] == 0
        and labels64[1]["self_cpu_us"] > 0,
        "matmul_add appears twice. The row with CPU time is our label on the CPU. The first "
        "row, with no CPU time, is the same label's GPU-side span",
    )
    spans = t64.where(kind=Kind.GPU_ANNOTATION, name="matmul_add")
    ends_ok = []
    for a in spans:
        lo, hi = int(t64.ts_ns[a]), int(t64.end_ns[a])
        inside = [int(g) for g in lk64.gpu_ops if lo <= t64.ts_ns[g] and t64.end_ns[g] <= hi]
        busy = sum(int(t64.dur_ns[g]) for g in inside)
        ends_ok.append(
            len(inside) == 2
            and int(t64.ts_ns[inside].min()) - lo < 1000
            and hi - int(t64.end_ns[inside].max()) < 1000
            and hi - lo > busy
        )
    claim(
        len(spans) == len(t64.steps) and all(ends_ok),
        "the label's GPU-side span: from the first kernel it launched to the last, idle time "
        "between them included",
    )
    claim(
        abs(tot64["self_cuda_us"] - float(t64.dur_ns[lk64.gpu_ops].sum()) / 1e3) < 0.01
        and table64[0]["self_cuda_pct"] > 100,
        "It is a label, not GPU work: Self CUDA time total leaves it out, and its Self CUDA % "
        "can pass 100 %",
    )
    claim(
        [s.name for s in t64.steps] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"],
        "ProfilerStep* stands for the three kept steps, ProfilerStep#2 to #4",
    )
    claim(
        ps64["cpu_avg_us"] > t64.steps[-1].dur_us
        and t64.steps[0].dur_us > max(s.dur_us for s in t64.steps[1:]),
        "Its CPU time avg is above the last step, because the first kept step took longest in "
        "every repeat, on both GPUs",
    )

    # -- 64x64: one step on the timeline ------------------------------------------------
    claim(t64.steps[-1].name == "ProfilerStep#4", "The last kept step, ProfilerStep#4")
    gemm_last = m.last_gemm(t64)
    ops = last_step_ops(t64)
    add_last = next(g for g in ops if "elementwise" in t64.name(g))
    step4 = t64.steps[-1].name
    claim(
        stack_names(t64, gemm_last)
        == [step4, "matmul_add", "aten::matmul", "aten::mm", "cuLaunchKernelEx"]
        and stack_names(t64, add_last) == [step4, "matmul_add", "aten::add", "cudaLaunchKernel"]
        and t64.ts_ns[lk64.launch[add_last]] > t64.ts_ns[lk64.launch[gemm_last]],
        "ProfilerStep > matmul_add > aten::matmul > aten::mm > its launch call "
        "cuLaunchKernelEx, then aten::add > cudaLaunchKernel",
    )
    lanes = {t64.lanes[int(t64.lane[g])] for g in ops}
    claim(
        len(ops) == 2
        and all(t64.kind[g] == Kind.KERNEL and few_us(t64.dur_ns[g] / 1e3) for g in ops)
        and len(lanes) == 1
        and all(ln.device == 0 and ln.stream == 7 for ln in lanes),
        "The GPU stream below runs two kernels of a few µs; GPU 0 stream 7",
    )
    claim(
        all(
            lk64.launch[g] >= 0 and t64.correlation[g] == t64.correlation[lk64.launch[g]]
            for g in lk64.gpu_ops
        ),
        "Arrows join each launch call to the kernel it launched; the launch call and the kernel "
        "share a correlation id",
    )
    w0, w1 = step_times(t64)[-1].window
    claim(
        int(t64.ts_ns[ops[1]]) > int(t64.end_ns[ops[0]])
        and int(t64.ts_ns[ops[0]]) > w0
        and w1 > int(t64.end_ns[ops[1]]),
        "an idle gap between two kernels; the GPU was just as idle before the first kernel and "
        "after the last",
    )
    verdicts64 = step_times(t64)
    if f.gpu == "h200":
        claim(
            all(s.verdict == "CPU-bound" and most(s.gpu_idle_us, s.span_us) for s in verdicts64),
            "On the H200, the GPU sat idle for most of every 64x64 step (CPU-bound)",
        )

    # -- 4096x4096: the table -----------------------------------------------------------
    claim(
        (p4k["size"] // p64["size"]) ** 3 == 262_144 and (p4k["size"] // p64["size"]) ** 2 == 4096,
        "262,144 times the GEMM's arithmetic (and 4,096 times the add's elements)",
    )
    row4k = rows(r4k)
    gemm_row = kernel_row(r4k, "nvjet")
    claim(
        most(gemm_row["self_cuda_us"], tot4k["self_cuda_us"]),
        "The GEMM kernel now takes most of the GPU time",
    )
    ps4k = row4k["ProfilerStep*"]
    per_repeat["gpu_vs_steps"].append((tot4k["self_cuda_us"], ps4k["cpu_total_us"]))
    claim(
        0.5 < float(tab["steps_growth"]) < 1.5,
        "The steps' CPU time changed by less than half from 64x64, in every repeat on both GPUs",
    )
    is_level = level(t4k)
    per_repeat["level"].append(is_level)
    top = max(r4k.table_rows(), key=lambda r: float(r["self_cpu_us"]))
    sync_share = row4k["cudaDeviceSynchronize"]["self_cpu_us"] / tot4k["self_cpu_us"]
    if is_level:
        claim(
            top["name"] != "cudaDeviceSynchronize" and sync_share < 0.2,
            "under a fifth on the H100 repeat where the CPU kept just level with the GPU",
        )
    else:
        claim(
            top["name"] == "cudaDeviceSynchronize" and sync_share > 0.25,
            "In every repeat but one, the row with the most Self CPU is the closing "
            "cudaDeviceSynchronize: over a quarter of Self CPU time total in those repeats",
        )
    new = {str(n) for n in row4k} - {str(n) for n in row64}
    claim(
        {n for n in new if not n.startswith("nvjet")} == {"cudaMemsetAsync", "Memset (Device)"},
        "Two rows are new: cudaMemsetAsync and Memset (Device)",
    )
    lk4k = link(t4k)
    memsets = [int(i) for i in t4k.where(kind=Kind.MEMSET)]
    gemms4k = [int(i) for i in t4k.where(kind=Kind.KERNEL, prefix="nvjet")]
    issued = [
        t4k.name(int(lk4k.issuer[lk4k.launch[s]])) == "aten::mm"
        and t4k.name(int(lk4k.launch[s])) == "cudaMemsetAsync"
        for s in memsets
    ]
    claim(
        len(memsets) == len(gemms4k) == len(t4k.steps)
        and all(issued)
        and all(few_bytes(int(t4k.extra["bytes"][s])) for s in memsets)
        and all(
            t4k.ts_ns[lk4k.launch[s]] < t4k.ts_ns[lk4k.launch[g]]
            for s, g in zip(sorted(memsets), sorted(gemms4k), strict=True)
        ),
        "a memset of a few bytes, issued inside aten::mm before each GEMM",
    )
    claim(
        not len(t32.where(kind=Kind.MEMSET)) and not f.rec("4096_fp32").params.get("tf32"),
        "at this size, the plain float32 GEMM (TF32 off) of story 01e has none",
    )

    # -- 4096x4096: one step on the timeline --------------------------------------------
    st4k = step_times(t4k)
    ops4k = last_step_ops(t4k)
    gemm4k = next(g for g in ops4k if t4k.name(g).startswith("nvjet"))
    claim(
        st4k[-1].verdict == "GPU-bound"
        and far(t4k.dur_ns[gemm4k], t4k.dur_ns[lk4k.launch[gemm4k]]),
        "The GPU lane is full: the GEMM runs for far longer than the CPU needs to launch it",
    )
    claim(
        [t4k.kind[g] for g in ops4k] == [Kind.MEMSET, Kind.KERNEL, Kind.KERNEL]
        and t4k.name(ops4k[1]).startswith("nvjet")
        and "elementwise" in t4k.name(ops4k[2]),
        "this step's launch calls point to its memset, GEMM and add",
    )
    last = t4k.steps[-1]
    claim(
        any(
            lk4k.step[g] < len(t4k.steps) - 1 and t4k.end_ns[g] > last.start_ns
            for g in lk4k.gpu_ops
        ),
        "The bars before them on the GPU lane are GPU ops that earlier steps launched, still "
        "queued or running when this step began",
    )
    if not is_level:
        claim(
            queued(t4k),
            "the launches got ahead of the GPU and the kernels queued: this step's launch calls, "
            "at the left, point far to the right",
        )
    _, (_, sync_end) = m.sync_window(t4k)
    claim(
        sync_end >= int(t4k.end_ns[lk4k.gpu_ops].max()),
        "after the last step, the CPU waits there until the queued kernels have run",
    )
    claim(
        st4k[-1].verdict == "GPU-bound" and nearly_all(st4k[-1].span_busy_us, st4k[-1].span_us),
        "This step is GPU-bound: the GPU was busy for nearly all of it",
    )
    claim(st4k[0].verdict == "balanced", "The first kept step is only balanced")
    first0 = min((int(g) for g in lk4k.gpu_ops if lk4k.step[g] == 0), key=lambda g: t4k.ts_ns[g])
    s0 = t4k.steps[0]
    claim(
        all(t4k.end_ns[g] <= s0.start_ns for g in lk4k.gpu_ops if t4k.ts_ns[g] < s0.start_ns)
        and all(t4k.ts_ns[g] >= t4k.ts_ns[first0] for g in lk4k.gpu_ops)
        and t4k.ts_ns[first0] > s0.start_ns
        and s0.dur_us > max(s.dur_us for s in t4k.steps[1:]),
        "its GPU lane is empty until the step's first GPU op (the trace keeps no GPU op that "
        "started before it), and the step's CPU time was the longest of the three",
    )
    per_repeat["second_balanced"].append(st4k[1].verdict == "balanced")
    claim(
        st4k[2].verdict == "GPU-bound"
        and st4k[1].verdict in ("GPU-bound", "balanced")
        and all(
            nearly_all(s.span_busy_us, s.span_us) for s in st4k[1:] if s.verdict == "GPU-bound"
        ),
        "busy for nearly all of each 4096x4096 step after the first (GPU-bound; on one H100 "
        "repeat the second kept step was only balanced)",
    )
    if f.gpu == "h200":
        claim(
            all(
                s.verdict == "GPU-bound" and nearly_all(s.span_busy_us, s.span_us) for s in st4k[1:]
            ),
            "On the H200, the GPU was busy for nearly all of each 4096x4096 step after the first",
        )

    # -- a batched x ----------------------------------------------------------------------
    lkb = link(tb)
    gemm_b = m.last_gemm(tb)
    claim(
        stack_names(tb, gemm_b)[1:] == stack_names(t64, gemm_last)[1:]
        and not len(tb.where(name="aten::bmm"))
        and len(lkb.gpu_ops) == 2 * len(tb.steps)
        and all(tb.kind[g] == Kind.KERNEL for g in lkb.gpu_ops),
        "Batch x to (8, 64, 64) and the chain stays the same: there is no aten::bmm, so each "
        "step still runs two kernels",
    )
    rowb = rows(rb)
    new_ops = {str(n) for n in rowb if str(n).startswith("aten::")} - set(row64)
    folds = [int(i) for n in new_ops for i in tb.where(name=n)]
    mm_b = [int(i) for i in tb.where(name="aten::mm")]
    unsafe = [int(i) for i in tb.where(name="aten::_unsafe_view")]
    claim(
        new_ops == {"aten::reshape", "aten::view", "aten::_unsafe_view"}
        and all(lkb.gpu_ops_inside[i] == 0 for i in folds)
        and all(tb.ts_ns[u] >= tb.end_ns[mm] for u, mm in zip(unsafe, mm_b, strict=True)),
        "The new rows do the folding: aten::reshape and aten::view, and aten::_unsafe_view gives "
        "the product its batch back; all three launch no GPU work",
    )
    add_b = {str(r["op"]): str(r["name"]) for r in launches(tb).to_records()}["aten::add"]
    claim(
        add_b.startswith("void at::native::elementwise_kernel")
        and "vectorized" not in add_b
        and "vectorized_elementwise_kernel" in str(add64["name"]),
        "the add runs PyTorch's general elementwise_kernel instead of the vectorized kernel",
    )
    add_us = kernel_row(rb, "void at::native::elementwise_kernel")["self_cuda_us"]
    gemm_us = kernel_row(rb, "nvjet")["self_cuda_us"]
    per_repeat["add_vs_gemm"].append((add_us, gemm_us))
    claim(
        pb["batch"] == 8
        and len(tb.where(kind=(Kind.RUNTIME, Kind.DRIVER), contains="Launch"))
        == len(t64.where(kind=(Kind.RUNTIME, Kind.DRIVER), contains="Launch"))
        == 2 * len(tb.steps),
        "The batch of 8 above ran 8 times the GEMM's rows with the same two launches per step",
    )

    # -- the conclusion's pointers to stories 01f and 01g -------------------------------
    comp = f.trace("64_bf16_compile")
    claim(
        len(link(comp).gpu_ops) == 2 * len(comp.steps),
        "For this two-op step, compiling left two GPU operations per step (story 01f)",
    )
    inter = f.rec("interleaved_64")
    timings: Any = inter.timings()
    i = m.interleaved_facts(inter.trace(), timings["calls"])
    for key in ("uic_us", "uir_us"):
        claim(
            times(float(i[key]), float(i["uie_us"]), 2),
            "compiled calls, with or without a CUDA graph, took at least twice eager's CPU time "
            f"without the profiler (story 01g; {key})",
        )


def facts(f: Facts) -> None:
    per_repeat: dict[str, list[Any]] = {
        "level": [],
        "gpu_vs_steps": [],
        "second_balanced": [],
        "add_vs_gemm": [],
    }
    f.repeats(lambda: table_and_timeline(f, per_repeat), n=f.n_repeats("64_bf16"))

    # The sentences that single out one H100 repeat: counted over the repeats.
    n_level = sum(per_repeat["level"])
    on_h100 = f.gpu == "h100"
    claim(
        n_level == (1 if on_h100 else 0),
        "On the H200 the launches got ahead of the GPU and the kernels queued (on one H100 "
        "repeat the CPU kept just level with it)",
    )
    pairs = per_repeat["gpu_vs_steps"]
    not_larger = [(g, s) for g, s in pairs if not g > s]
    claim(
        not not_larger
        if not on_h100
        else len(not_larger) == 1 and all(about(g, s) for g, s in not_larger),
        "In this table Self CUDA time total is larger than the steps' own CPU time (the "
        "ProfilerStep* row's CPU total); on one H100 repeat the two were about equal",
    )
    claim(
        sum(per_repeat["second_balanced"]) == (1 if on_h100 else 0),
        "on one H100 repeat the second kept step was only balanced",
    )
    shorter = [(a, g) for a, g in per_repeat["add_vs_gemm"] if not a > g]
    claim(
        not shorter
        if not on_h100
        else len(shorter) == 1 and all(a_little(g, a) for a, g in shorter),
        "In this table the add took longer than the GEMM (on one H100 repeat slightly shorter)",
    )
