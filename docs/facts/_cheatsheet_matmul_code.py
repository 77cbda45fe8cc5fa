"""The matmul details' entries on what the code asks for (``cheatsheet-matmul.md``): the
dispatch chain, ``torch.compile`` and the profiler's own artifacts, one function per entry,
as :mod:`_cheatsheet_matmul` has the entries on the table and the two lanes (the module
was split to keep each under 800 lines). Each reads the current repeat's recordings of
``01_matmul_add``, checks its entry's claims and puts its numbers; its picture is drawn by
the function of the same name in ``docs/cheatsheet_pictures.py``.
"""

from __future__ import annotations

import numpy as np
from _cheatsheet_common import (
    LN,
    NAMES,
    T,
    code,
    cpu_ratios,
    in_step,
    one,
    param,
    put,
    ratio_range,
    recs,
    times,
    us,
)
from tracesite import words
from tracesite.facts import Fmt, claim
from tracesite.notebook import medians, unprofiled_calls, verdict

from tracereader import Kind, step_times


def chain() -> None:
    """Entry: From the step down to the kernel."""
    name = "64_bf16_cold"
    t, ln = T[name], LN[name]
    k = int(ln.gpu_ops_of(t.step(4).event)[0])
    chain = [t.name(i) for i in ln.stack(k)] + [t.name(k)]
    claim(
        chain[:5]
        == [
            "ProfilerStep#4",
            "matmul_add",
            "aten::matmul",
            "aten::mm",
            "cuLaunchKernelEx",
        ],
        "profiler step, your record_function label, aten::matmul, aten::mm, the CUDA launch call",
    )
    claim(chain[5].startswith("nvjet"), "the launch arrow leads to the kernel, the nvjet GEMM")
    add = int(ln.gpu_ops_of(t.step(4).event)[1])
    claim(
        [t.name(i) for i in ln.stack(add)]
        == [
            "ProfilerStep#4",
            "matmul_add",
            "aten::add",
            "cudaLaunchKernel",
        ],
        "The add is shorter: aten::add launches its kernel directly",
    )
    put("ch_chain", " → ".join(code(c) for c in chain))
    one(in_step(t, 4, name="aten::matmul"))  # exactly one matmul in the step


def batched() -> None:
    """Entry: `aten::matmul` → `reshape`, `mm`, `_unsafe_view` for a 3-D input."""
    name = "64_bf16_batch8"
    t, ln = T[name], LN[name]
    claim(param(name, "batch") > 0, "x is 3-D, batched; w is 2-D")
    claim(not len(t.where(prefix="aten::bmm")), "No aten::bmm appears")
    for s in t.steps:
        mat = one(in_step(t, s.name, name="aten::matmul"))
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == mat)]
        claim(
            kids == ["aten::reshape", "aten::mm", "aten::_unsafe_view"],
            f"aten::matmul calls aten::reshape, one aten::mm, then aten::_unsafe_view ({kids})",
        )
        view = one(in_step(t, s.name, name="aten::view"))
        claim(
            t.name(ln.parent[view]) == "aten::reshape", "aten::reshape (with an aten::view inside)"
        )
    gemm_b = {t.name(k) for k in t.where(kind=Kind.KERNEL, prefix="nvjet")}
    gemm_2d = {T["64_bf16"].name(k) for k in T["64_bf16"].where(kind=Kind.KERNEL, prefix="nvjet")}
    claim(gemm_b == gemm_2d, "the GEMM kernel is the same one as for 2-D inputs")
    add_b = {t.name(k) for k in t.where(kind=Kind.KERNEL, contains="CUDAFunctor_add")}
    claim(
        all("vectorized" not in n and "elementwise_kernel" in n for n in add_b),
        "broadcasting b over the batch switches the add to the general elementwise_kernel",
    )
    claim(
        all(
            "vectorized_elementwise_kernel" in T["64_bf16"].name(k)
            for k in T["64_bf16"].where(kind=Kind.KERNEL, contains="CUDAFunctor_add")
        ),
        "the 2-D add runs vectorized_elementwise_kernel",
    )
    put("bt_batch", param(name, "batch"))
    put("bt_size", param(name, "size"))
    put("bt_rows", param(name, "batch") * param(name, "size"))


def addmm() -> None:
    """Entry: `aten::addmm` instead of `aten::matmul` plus `aten::add`."""
    name = "64_bf16_addmm"
    t, ln = T[name], LN[name]
    claim(param(name, "op") == "addmm", "here by calling torch.addmm directly")
    claim(
        not any(len(t.where(name=n)) for n in ("aten::matmul", "aten::mm", "aten::add")),
        "aten::addmm instead of aten::matmul plus aten::add: no aten::mm or aten::add",
    )
    for s in t.steps:
        op = one(in_step(t, s.name, name="aten::addmm"))
        claim(t.name(ln.parent[op]) == "matmul_add", "Under the label there is one aten::addmm")
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == op)]
        claim(
            kids == ["aten::squeeze", "cudaMemcpyAsync", "cuLaunchKernelEx"],
            f"one aten::addmm, whose children are a squeeze, a cudaMemcpyAsync and a "
            f"cuLaunchKernelEx ({kids})",
        )
    am = cpu_ratios("addmm", bare=True)
    put(
        "am_verdict",
        verdict(am, "a measurable cost", "a measurable saving", "too close to tell apart"),
    )
    put("am_ratio", Fmt(float(np.median(am)), lambda v: f"{v:.2f}×"))
    put("am_range", ratio_range(am))
    # The eager call's CPU time, process by process (the same recordings, unprofiled).
    eager = [medians(unprofiled_calls(r))["eager"] for r in recs("interleaved_64")]
    claim(
        words.far(max(eager) / min(eager) - 1, abs(float(np.median(am)) - 1)),
        "Separate runs cannot answer it either: CPU time per step moves far more than that "
        "from one process to the next",
    )


def dynamo() -> None:
    """Entry: `TorchDynamo Cache Lookup` in every step."""
    for n in ("64_bf16_compile", "4096_bf16_compile", "64_bf16_reduce_overhead"):
        t, ln = T[n], LN[n]
        claim(
            len(t.where(name="TorchDynamo Cache Lookup")) == len(t.steps),
            f"{n}: a TorchDynamo Cache Lookup in every compiled step",
        )
        for s in t.steps:
            lk = one(in_step(t, s.name, name="TorchDynamo Cache Lookup"))
            rg = one(in_step(t, s.name, prefix="Torch-Compiled Region"))
            ann = one(in_step(t, s.name, kind=Kind.USER_ANNOTATION, name="matmul_add"))
            kids = np.flatnonzero(ln.parent == ann)
            claim(
                int(kids[np.argmin(t.ts_ns[kids])]) == lk,
                f"{n}: In each compiled step, the first op inside the matmul_add label is a "
                "TorchDynamo Cache Lookup",
            )
            claim(
                t.ts_ns[lk] + t.dur_ns[lk] <= t.ts_ns[rg],
                f"{n}: the lookup comes before the compiled code runs",
            )
    t = T["64_bf16_compile"]
    put("dy_med", us(np.median(t.dur_ns[t.where(name="TorchDynamo Cache Lookup")]) / 1e3))


def region() -> None:
    """Entry: `Torch-Compiled Region: 0/0`."""
    name = "4096_bf16_compile"
    t, ln = T[name], LN[name]
    regions = t.where(prefix="Torch-Compiled Region")
    claim(
        {t.name(i) for i in regions} == {"Torch-Compiled Region: 0/0"}
        and len(regions) == len(t.steps),
        "a Torch-Compiled Region: 0/0 in each step: no recompile",
    )
    for r in regions:
        kids = [t.name(i) for i in np.flatnonzero(ln.parent == r)]
        claim(
            kids[:2] == ["Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue"],
            f"in order: Pregraph bytecode, AOTDispatcher Runtime Wrapper Prologue ({kids})",
        )
        claim(
            len(kids) == 3 and kids[2].startswith("## Call CompiledFxGraph"),
            f"three children, the last ## Call CompiledFxGraph <hash> ## ({kids})",
        )
        up = int(ln.parent[r])
        claim(
            t.name(up) == "matmul_add" and list(ln.gpu_ops_of(r)) == list(ln.gpu_ops_of(up)),
            "Inside the label, a Torch-Compiled Region holds all its GPU work",
        )
        fx = int(np.flatnonzero(ln.parent == r)[2])
        claim(
            len(ln.gpu_ops_of(fx)) and list(ln.gpu_ops_of(fx)) == list(ln.gpu_ops_of(r)),
            "## Call CompiledFxGraph <hash> ##, which holds the aten ops and launches",
        )


def hash() -> None:
    """Entry: The same `CompiledFxGraph` hash in every step."""
    name = "64_bf16_compile"
    t = T[name]
    calls = t.where(prefix="## Call CompiledFxGraph")
    hashes = {t.name(i).split()[3] for i in calls}
    claim(
        len(calls) == len(t.steps) and len(hashes) == 1,
        "All steps call ## Call CompiledFxGraph with the same hash",
    )
    other = {
        T["4096_bf16_compile"].name(i).split()[3]
        for i in T["4096_bf16_compile"].where(prefix="## Call CompiledFxGraph")
    }
    claim(len(other) == 1 and other != hashes, "The 4096×4096 compiled run calls a different one")
    h = hashes.pop()
    put("fx_hash", code(h))
    put("fx_other", code(other.pop()))
    put("fx_n", len(calls))


def samekernel() -> None:
    """Entry: Compiled, and still a copy plus the same GEMM."""
    a, c = "64_bf16_addmm", "64_bf16_compile"
    ka = {T[a].name(k) for k in T[a].where(kind=Kind.KERNEL)}
    kc = {T[c].name(k) for k in T[c].where(kind=Kind.KERNEL)}
    claim(
        ka == kc and len(kc) == 1,
        f"the same GEMM: exactly what eager torch.addmm runs ({ka}, {kc})",
    )
    claim(not any("triton" in n for n in kc), "No Triton kernel appears")
    for s in T[c].steps:
        ops = LN[c].gpu_ops_of(s.event)
        claim(
            [Kind(int(T[c].kind[o])) for o in ops] == [Kind.MEMCPY, Kind.KERNEL],
            "the GPU runs a Memcpy DtoD then the GEMM",
        )
        claim(
            LN[c].launch_api(ops[1]) == "cuLaunchKernelEx",
            "the compiled GEMM is launched by cuLaunchKernelEx, as eager",
        )
        claim(
            len(in_step(T[c], s.name, name="aten::addmm")) == 1,
            "The compiled step dispatches one aten::addmm",
        )
    claim(
        {st.launches for st in step_times(T[c])}
        == {st.launches for st in step_times(T["64_bf16"])}
        == {2},
        "Launches per step stay at two",
    )
    put("sk_gemm", code(kc.pop()))


def tax() -> None:
    """Entry: More CPU per step under compile."""
    tx = cpu_ratios("compiled")
    claim(  # the table's remedy for overhead: compile pays off only with many small kernels
        min(tx) > 1.5 and words.beyond_spread(tx, [1.0] * len(tx)),
        "on our two-kernel step both [compile and CUDA graphs] cost more CPU per call",
    )
    put("tx_ratio", times(float(np.median(tx))))
    put("tx_range", ratio_range(tx))
    tro = cpu_ratios("reduce-overhead")
    claim(
        min(tro) > 1.5 and words.beyond_spread(tro, [1.0] * len(tro)),
        "on our two-kernel step CUDA graphs cost more CPU per call than eager",
    )
    claim(  # as much or more (r >= 1), or about as much (within 10 %, below it)
        all(r >= 1 or words.about(r, 1.0) for r in cpu_ratios("reduce-overhead", "compiled")),
        "reduce-overhead took about as much CPU time as the default mode or more",
    )
    put("tx_ro_ratio", times(float(np.median(tro))))


def graphs() -> None:
    """Entry: One `cudaGraphLaunch`, several GPU ops."""
    name = "64_bf16_reduce_overhead"
    t, ln = T[name], LN[name]
    claim(param(name, "compile") == "reduce-overhead", 'With mode="reduce-overhead"')
    gl = t.where(name="cudaGraphLaunch")
    per = [[t.name(o) for o in ln.gpu_ops_of_call(c)] for c in gl]
    claim(
        [len(in_step(t, s.name, name="cudaGraphLaunch")) for s in t.steps] == [1] * len(t.steps)
        and len(per[0]) >= 2
        and all(p == per[0] for p in per),
        f"each step has one cudaGraphLaunch whose arrows fan out to {len(per[0])} GPU ops "
        f"({', '.join(per[0])})",
    )
    for s in t.steps:
        fc = one(in_step(t, s.name, name="aten::_foreach_copy_"))
        (k,) = ln.gpu_ops_of(fc)
        g = one(in_step(t, s.name, name="cudaGraphLaunch"))
        claim(
            ln.launch_api(k) == "cudaLaunchKernel"
            and t.ts_ns[k] < t.ts_ns[ln.gpu_ops_of_call(g)].min(),
            "after an aten::_foreach_copy_ and its kernel",
        )
    put("cg_n", len(per[0]))
    put("cg_names", ", ".join(code(n) for n in per[0]))


def schedule() -> None:
    """Entry: The steps start at #2."""
    for n in NAMES[:-1]:  # the interleaved recording has its own schedule
        expect = param(n, "wait") + param(n, "warmup_steps")
        claim(
            T[n].steps[0].name == f"ProfilerStep#{expect}",
            f"{n}: the schedule skipped the wait and warm-up steps",
        )
        claim(len(T[n].steps) == param(n, "active"), f"{n}: the active steps are recorded")
    claim(
        T["64_bf16"].steps[0].name == "ProfilerStep#2"
        and T["64_bf16_nowait"].steps[0].name == "ProfilerStep#0",
        "The steps start at #2; with wait=0, warmup=0 the trace starts at #0",
    )
    put("sc_wait", param("64_bf16", "wait"))
    put("sc_warm", param("64_bf16", "warmup_steps"))
    put("sc_active", param("64_bf16", "active"))
    put("sc_first", code(T["64_bf16"].steps[0].name))
    put(
        "sc_missing",
        " and ".join(
            f"#{i}" for i in range(param("64_bf16", "wait") + param("64_bf16", "warmup_steps"))
        ),
    )


def abr() -> None:
    """Entry: An `Activity Buffer Request` row."""
    name = "64_bf16_nowait"
    t = T[name]
    abr = t.where(name="Activity Buffer Request")
    others = [n for n in NAMES if n != name and len(T[n].where(name="Activity Buffer Request"))]
    claim(
        len(abr) == 1 and not others,
        "the trace holds an Activity Buffer Request; none of the other recordings has one",
    )
    i = int(abr[0])
    s0 = t.steps[0]
    claim(
        Kind(int(t.kind[i])) == Kind.OVERHEAD and s0.start_ns < t.ts_ns[i] < s0.end_ns,
        "The profiler allocating its buffers, inside the first step",
    )
    claim(
        not t.lanes[int(t.lane[i])].is_gpu and t.lane[i] != t.lane[s0.event],
        "on a lane of its own",
    )
    put("ab_dur", us(t.dur_ns[i] / 1e3))
    put("ab_at", us((t.ts_ns[i] - s0.start_ns) / 1e3))
    put("ab_lane", code(t.lanes[int(t.lane[i])].label))
    put("ab_others", len(NAMES) - 1)


def lazy() -> None:
    """Entry: Module loading inside the first runtime calls."""
    name = "64_bf16_nowait"
    t = T[name]
    rtml = t.where(name="Runtime Triggered Module Loading")
    lfl = t.where(name="Lazy Function Loading")
    claim(len(rtml) and len(lfl), "Module loading rows of both kinds in the cold first step")
    s0 = t.steps[0]
    claim(
        all(s0.start_ns <= t.ts_ns[i] < s0.end_ns for i in [*rtml, *lfl]),
        "module loading inside the cold first step",
    )
    for n in NAMES:
        if n != name:
            claim(
                not len(T[n].where(kind=Kind.OVERHEAD)),
                f"{n}: No other recording has any of these rows",
            )
    fsa = t.where(name="cudaFuncSetAttribute")
    host = max(fsa, key=lambda i: t.dur_ns[i])
    inside = [
        i
        for i in rtml
        if t.ts_ns[host] <= t.ts_ns[i]
        and t.ts_ns[i] + t.dur_ns[i] <= t.ts_ns[host] + t.dur_ns[host]
    ]
    claim(len(inside) == 1, "a Runtime Triggered Module Loading row sits inside it")
    calls = t.where(kind=(Kind.RUNTIME, Kind.DRIVER))
    for i in lfl:  # each one inside a runtime call, or right before one
        a, b = int(t.ts_ns[i]), int(t.ts_ns[i] + t.dur_ns[i])
        claim(
            any(
                t.ts_ns[c] <= a < t.ts_ns[c] + t.dur_ns[c] or 0 <= t.ts_ns[c] - b < 100_000
                for c in calls
            ),
            "Lazy Function Loading rows sit inside or just before runtime and launch calls",
        )
    put("ml_host", us(t.dur_ns[host] / 1e3))
    put("ml_load", us(t.dur_ns[inside[0]] / 1e3))
    put("ml_lfl", len(lfl))
    put("ml_lfl_max", us(t.dur_ns[lfl].max() / 1e3))
