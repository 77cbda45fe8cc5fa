"""The cheatsheet's facts about the other parts' recordings (``cheatsheet.md``: Parts 2 to 5),
one function per entry, as :mod:`_cheatsheet_matmul` has them for Part 1's. Their pictures
are drawn in ``docs/cheatsheet_parts_pictures.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import part5_measures as part5  # Part 5's reading of the optimizer region
from _cheatsheet_common import code, in_step, put, rec, us
from _cheatsheet_common import variant as recorded
from tracesite import words
from tracesite.facts import claim
from tracesite.notebook import medians, op_per_call, unprofiled_calls

from tracereader import Kind, link, op_table, step_times


def fused_kernel(tc: Any) -> str:
    """The one ``triton_poi_fused_…`` kernel name of the compiled MLP's trace ``tc``."""
    fused = {
        tc.name(i) for i in tc.where(kind=Kind.KERNEL) if tc.name(i).startswith("triton_poi_fused_")
    }
    claim(len(fused) == 1, "after torch.compile, one triton_poi_fused_… kernel runs in their place")
    name: str = fused.pop()
    return name


def attention_kernels() -> dict[str, tuple[float, float]]:
    """Every distinct large kernel (over 10 µs) of the attention recordings: its shared memory
    per block (KB) and the occupancy its trace reports (%)."""
    pts = {}
    for v in ("naive", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"):
        tv = rec(v, "04_attention").trace()
        for i in tv.where(kind=Kind.KERNEL):
            if tv.dur_ns[i] > 10_000:
                pts[tv.name(int(i))] = (
                    int(tv.extra["shared_mem"][i]) / 1024,
                    float(tv.extra["occupancy_pct"][i]),
                )
    return pts


def bias() -> None:
    """Entry: `bias` in a GEMM kernel's name, and no add kernel."""
    t = rec("small", "02_linear").trace()
    names = {t.name(i) for i in t.where(kind=Kind.KERNEL)}
    claim(  # the layout suffix differs (TNT on the H200, TNN on the H100): not claimed
        len(names) == 1 and "_bz_bias_" in next(iter(names)),
        "An nn.Linear with a bias runs one GPU kernel per call, with bias and bz in its name",
    )
    claim(
        not len(t.where(kind=Kind.MEMCPY)) and not len(t.where(name="aten::add")),
        "under aten::addmm: no aten::add, no elementwise kernel and no Memcpy",
    )
    put("cs_bias_kernel", code(next(iter(names))))


def views() -> None:
    """Entry: Ops with zero CUDA time."""
    t = rec("eager", "03_mlp").trace()
    lk = link(t)
    views = (
        "aten::t",
        "aten::transpose",
        "aten::as_strided",
        "aten::reshape",
        "aten::view",
        "aten::_unsafe_view",
    )
    table = {r["name"]: r for r in op_table(t).to_records()}  # the profiler's table, whole
    claim(
        all(
            v in table and table[v]["self_cpu_us"] > 0 and table[v]["total_gpu_us"] == 0
            for v in views
        ),
        "The MLP's table lists aten::t, aten::transpose, aten::as_strided, aten::reshape, "
        "aten::view and aten::_unsafe_view with CPU time but 0.000us of CUDA time",
    )
    rows = [int(r) for v in views for r in in_step(t, t.steps[-1].name, name=v)]
    claim(
        rows and all(len(lk.gpu_ops_of(r)) == 0 for r in rows),
        "aten::t, aten::transpose, aten::view and the other view ops launch nothing",
    )
    idle_ops = [int(r) for r in in_step(t, t.steps[-1].name, kind=Kind.CPU_OP)
                if len(lk.gpu_ops_of(int(r))) == 0]  # fmt: skip
    claim(sorted(idle_ops) == sorted(rows), "Here every op that launches nothing is a view")
    put("cs_views_per_step", len(rows))
    put("cs_kernels_per_step", len(t.where(kind=Kind.KERNEL)) // len(t.steps))


def fused() -> None:
    """Entry: A `triton_poi_fused_…` kernel where two pointwise kernels were."""
    te, tc = rec("eager", "03_mlp").trace(), rec("compile", "03_mlp").trace()

    def med(t: Any, pick: Callable[[str], bool]) -> float:
        return (
            float(np.median([t.dur_ns[i] for i in t.where(kind=Kind.KERNEL) if pick(t.name(i))]))
            / 1e3
        )

    f = fused_kernel(tc)
    pair = med(te, lambda n: "Gelu" in n) + med(te, lambda n: "MulFunctor" in n)
    claim(
        med(tc, lambda n: n == f) < 0.95 * pair,
        "the fused kernel takes less time than the gelu and multiply kernels together",
    )
    claim(
        {n for n in (te.name(i) for i in te.where(kind=Kind.KERNEL)) if n.startswith("nvjet")}
        == {n for n in (tc.name(i) for i in tc.where(kind=Kind.KERNEL)) if n.startswith("nvjet")},
        "The GEMMs keep their cuBLAS kernels, name for name",
    )
    put("cs_fused", code(f))
    put("cs_fused_us", us(med(tc, lambda n: n == f)))
    put("cs_pair_us", us(pair))


def graph() -> None:
    """Entry: No `aten::mm` row under `mode='reduce-overhead'`."""
    r = rec("reduce_overhead", "03_mlp")
    t = r.trace()
    claim(
        not len(t.where(name="aten::mm")) and len(t.where(name="Torch-Compiled Region: 0/0")),
        "no aten::mm row: their CUDA time is charged to Torch-Compiled Region: 0/0",
    )
    g = t.where(name="cudaGraphLaunch")
    claim(
        [len(in_step(t, s.name, name="cudaGraphLaunch")) for s in t.steps] == [1] * len(t.steps),
        "each step has one cudaGraphLaunch",
    )
    n_ops = {len(link(t).gpu_ops_of_call(int(c))) for c in g}
    claim(len(n_ops) == 1, "each cudaGraphLaunch releases the same number of GPU operations")
    put("cs_graph_ops", n_ops.pop())


def att_copy() -> None:
    """Entry: A `Memcpy DtoD` before the mask in hand-written attention."""
    t = rec("naive", "04_attention").trace()
    ln = link(t)
    copies = [int(i) for i in t.where(kind=Kind.MEMCPY) if ln.launch[i] >= 0]
    claim(
        copies and {t.name(int(ln.issuing_op(c))) for c in copies} == {"aten::copy_"},
        "hand-written attention has a Memcpy DtoD, issued by the clone's aten::copy_",
    )
    for c in copies:
        (fill,) = [int(i) for i in ln.stack(c) if t.name(int(i)) == "aten::masked_fill"]
        ops = sorted((int(o) for o in ln.gpu_ops_of(fill)), key=lambda o: int(t.ts_ns[o]))
        claim(
            t.name(c).startswith("Memcpy DtoD")
            and [Kind(int(t.kind[o])) for o in ops] == [Kind.MEMCPY, Kind.KERNEL]
            and ops[0] == c,
            "a Memcpy DtoD under aten::masked_fill, then the fill kernel",
        )
    sizes = {int(t.extra["bytes"][c]) for c in copies}
    claim(sizes == {8 * 16 * 1024 * 1024 * 2}, "masked_fill clones the whole (bf16) score matrix")
    put("cs_att_copy_mib", f"{sizes.pop() / 2**20:.0f} MiB")
    ti = rec("naive_inplace", "04_attention").trace()
    claim(not len(ti.where(kind=Kind.MEMCPY)), "masked_fill_ fills in place and drops the copy")

    def busy(tr: Any) -> float:
        return step_times(tr)[-1].gpu_busy_us

    put("cs_inplace_pct", f"{100 * (1 - busy(ti) / busy(t)):.0f} %")
    chain = [t.name(i) for i in t.where(kind=Kind.CPU_OP)]
    claim(
        "aten::masked_fill" in chain and "aten::clone" in chain,
        "masked_fill is out of place: it clones the score matrix and fills the clone",
    )


def att_cudnn() -> None:
    """Entry: An `aten::_scaled_dot_product_cudnn_attention` you did not ask for."""
    r = rec("sdpa_default", "04_attention")
    t = r.trace()
    sdpa = sorted(
        {
            t.name(i)
            for i in t.where(kind=Kind.CPU_OP)
            if t.name(i).startswith("aten::_scaled_dot_product")
        }
    )
    claim(
        sdpa == ["aten::_scaled_dot_product_cudnn_attention"],
        "a plain F.scaled_dot_product_attention shows aten::_scaled_dot_product_cudnn_attention",
    )
    ks = {t.name(i) for i in t.where(kind=Kind.KERNEL)}
    claim(
        len(ks) == 1 and next(iter(ks)).startswith("cudnn_generated_"),
        "SDPA's default runs one cudnn_generated_… kernel",
    )
    ln = link(t)
    claim(
        {t.name(int(ln.launch[i])) for i in t.where(kind=Kind.KERNEL)} == {"cuLaunchKernelEx"},
        "the cuDNN kernel is launched with cuLaunchKernelEx",
    )
    claim(r.env["cudnn"] > 91500, "cuDNN is newer than 9.15 here")
    put("cs_sdpa_op", code(sdpa[0]))
    put("cs_cudnn_kernel", code(next(iter(ks))[:60] + "…"))
    put("cs_cudnn_version", code(str(r.env["cudnn"])))


def att_occupancy() -> None:
    """Entry: 0 % occupancy on the fastest attention kernel."""
    t = rec("sdpa_cudnn", "04_attention").trace()
    k = [int(i) for i in t.where(kind=Kind.KERNEL) if t.name(int(i)).startswith("cudnn_generated_")]
    claim(
        k and all(t.extra["occupancy_pct"][i] == 0 for i in k),
        "the cuDNN backend's fused kernel shows est. achieved occupancy % 0 on its event",
    )
    smem = {int(t.extra["shared_mem"][i]) for i in k}
    claim(
        len(smem) == 1 and smem.pop() > 48 * 1024,
        "the cuDNN kernel's block needs more than 48 KiB of shared memory",
    )
    put("cs_att_smem", f"{int(t.extra['shared_mem'][k[0]]) / 1024:.0f} KB")
    # Over 48 KB of shared memory per block the occupancy reads 0; under it, a value.
    claim(
        all((o == 0) == (kb > 48) for kb, o in attention_kernels().values()),
        "a kernel whose block needs more than 48 KiB reads 0 %, the others a value",
    )


def att_cudnn_self() -> None:
    """Entry: A fused attention op that is mostly self time."""
    r_il = rec("interleaved_backends", "04_attention")
    t = r_il.trace()
    cud = op_per_call(t, "cudnn", "aten::_cudnn_attention_forward")
    fl = op_per_call(t, "flash", "aten::_flash_attention_forward")

    def self_us(rows: list[dict[str, Any]]) -> float:
        return float(np.median([r["self_cpu_us"] for r in rows]))

    claim(
        self_us(cud) > 2 * self_us(fl),
        "aten::_cudnn_attention_forward spends more self time per call than flash's",
    )
    claim(
        words.most(np.median([r["self_cpu_us"] / r["total_cpu_us"] for r in cud]), 1.0),
        "A fused attention op that is mostly self time (the median call)",
    )
    bare = unprofiled_calls(r_il)
    cycle = 20  # 5 versions, balanced
    claim(
        bare[0][0] == "cudnn" and all(bare[k][0] == "cudnn" for k in range(0, len(bare), cycle)),
        "the unprofiled calls come in cycles of 20, each starting with a cuDNN call",
    )

    def cudnn_over_flash(r: Any) -> float:
        """One process's median whole cuDNN call over flash's, without the profiler."""
        calls = unprofiled_calls(r)
        per = medians([c for k, c in enumerate(calls) if k % cycle])  # off the seam (Part 3)
        return per["cudnn"] / per["flash"]

    ratios = [cudnn_over_flash(r) for r in recorded("interleaved_backends", "04_attention").repeats]
    claim(  # in every process, as the matmul page's "cost more CPU per call"
        words.beyond_spread(ratios, [1.0] * len(ratios)),
        "without the profiler, the whole cuDNN call costs more CPU time than flash's",
    )
    # Medians over the repeats (the per-call self time varies with the op before it).
    put("cs_cudnn_self", us(self_us(cud)))
    put("cs_flash_self", us(self_us(fl)))


def llm_eager() -> None:
    """Entry: Hundreds of short kernels per token, and the GPU lane mostly empty."""
    t = rec("generate_dynamic_1b", "05_llm_decode").trace()
    r = rec("generate_dynamic_1b", "05_llm_decode")
    claim(r.results is not None, "the recording has a results.json (time per token unprofiled)")
    assert r.results is not None  # for the type checker: the claim above holds it
    dec = [s for s in step_times(t) if s.name != "ProfilerStep#0"]
    token_us = r.results["ms_per_token"] * 1e3
    claim(
        all(
            words.most(token_us - s.gpu_busy_us, token_us)
            and words.small_share(s.gpu_busy_us, token_us)
            for s in dec
        ),
        "the GPU lane mostly empty: the kernels keep the GPU busy for a small fraction of a "
        "token's time",
    )
    lk_ = link(t)
    for s in dec:  # one token each
        ks = [int(k) for k in lk_.gpu_ops_of(t.step(s.name).event) if t.kind[k] == Kind.KERNEL]
        claim(
            words.hundreds(len(ks))
            and words.most(sum(words.few_us(float(d) / 1e3) for d in t.dur_ns[ks]), len(ks)),
            "Each profiler step holds hundreds of kernels, most of them a few microseconds long",
        )
    put("cs_llm_kernels", f"{dec[0].kernels}")
    put("cs_llm_busy", us(np.median([s.gpu_busy_us for s in dec])))
    put("cs_llm_token", us(r.results["ms_per_token"] * 1e3))
    syncs = [len(in_step(t, s.name, name="cudaStreamSynchronize")) for s in dec]
    claim(
        len(set(syncs)) == 1 and syncs[0] in (1, 2, 3),
        f"Every token also has {syncs[0]} cudaStreamSynchronize calls ({syncs})",
    )
    put("cs_llm_syncs", {1: "one", 2: "two", 3: "three"}[syncs[0]])
    tg = rec("generate_static_compiled_1b", "05_llm_decode").trace()
    lg = link(tg)
    per_step: dict[str, int] = {}
    for i in tg.where(name="cudaStreamSynchronize"):
        if (st_ := lg.step_of(int(i))) is not None:
            per_step[st_.name] = per_step.get(st_.name, 0) + 1
    gst = step_times(tg)[:-1]
    claim(
        set(per_step[s_.name] for s_ in gst) == {1},
        "with a static KV cache, generate() adds one host sync per token",
    )
    put("cs_gen_launches", f"{np.median([s_.launches for s_ in gst]) - 1:.0f}")
    put("cs_gen_syncs", "one")


def llm_graph() -> None:
    """Entry: One `cudaGraphLaunch` per token, and the GPU lane full."""
    r = rec("loop_fused_8b", "05_llm_decode")
    claim(r.results is not None, "the recording has a results.json (time per token unprofiled)")
    assert r.results is not None  # for the type checker: the claim above holds it
    t = r.trace()
    dec = step_times(t)[:-1]
    claim(
        all(s.launches == 4 for s in dec),
        "each step has one cudaGraphLaunch and three small copies",
    )
    claim(
        all(len(in_step(t, s.name, name="cudaGraphLaunch")) == 1 for s in step_times(t)),
        "One cudaGraphLaunch per token",
    )
    busy_frac = np.median([s.gpu_busy_us for s in dec]) / (r.results["ms_per_token"] * 1e3)
    claim(
        busy_frac > 0.9,
        "the GPU lane full: the kernels fill the time a token takes without the profiler",
    )
    put("cs_graph_kernels", f"{dec[0].kernels}")
    put("cs_graph_busy", f"{100 * min(busy_frac, 1):.0f} %")


def kernel_runs(name: str) -> list[dict[str, tuple[float, Any]]]:
    """Per repeat of 05_llm_decode's ``name`` (one process each): {kernel name: (µs per
    token, (grid, block) of its first launch)} for the kernels of profiler step 2."""
    out = []
    for r in recorded(name, "05_llm_decode").repeats:
        tv = r.trace()
        by: dict[str, tuple[float, Any]] = {}
        for g in link(tv).gpu_ops_of(tv.step("ProfilerStep#2").event):
            if tv.kind[g] == Kind.KERNEL:
                launch = (int(tv.extra["grid"][g]), int(tv.extra["block"][g]))
                us_, launch = by.get(tv.name(g), (0.0, launch))
                by[tv.name(g)] = (us_ + tv.dur_ns[g] / 1e3, launch)
        out.append(by)
    return out


def tuning_runs() -> tuple[str, list[tuple[float, Any]], list[float]]:
    """The llm_tuning entry's data, read across the repeats: of Inductor's GEMVs
    (reductions over a transposed weight) launched with different settings in different
    processes of ``loop_packed_8b``, the most uneven one's name and (µs, launch) per process,
    and the fixed-setting ``gemv_kernel``'s µs per process of ``loop_kernels_8b``."""
    tuned = kernel_runs("loop_packed_8b")
    common = {
        n
        for n in set.intersection(*(set(k) for k in tuned))
        if n.startswith("triton_red") and "_t_" in n and "argmax" not in n
    }
    relaunched = [n for n in common if len({t[n][1] for t in tuned}) > 1]
    name = max(relaunched, key=lambda n: max(t[n][0] for t in tuned) / min(t[n][0] for t in tuned))
    fixed = [t["gemv_kernel"][0] for t in kernel_runs("loop_kernels_8b")]
    return name, [t[name] for t in tuned], fixed


def llm_tuning() -> None:
    """Entry: The same kernel, at different speeds in different runs."""
    name, per_run, fixed = tuning_runs()

    def own_processes(variant: str) -> bool:
        """Three repeats of ``variant``, each a fresh process that ran it alone."""
        reps = recorded(variant, "05_llm_decode").repeats
        return len(reps) == 3 and all(
            r.meta["process"]["fresh"] and r.meta["process"]["variants_in_it"] == [variant]
            for r in reps
        )

    claim(
        len(per_run) == 3 and own_processes("loop_packed_8b"),
        "on the H200, three recordings of one compiled decode loop, each its own process",
    )
    claim(
        len(fixed) == 3 and own_processes("loop_kernels_8b"),
        "on the H200, Part 4's own GEMV kernel ran a token's GEMVs in three processes",
    )
    claim(
        max(u for u, _ in per_run) > 1.2 * min(u for u, _ in per_run),
        "on the H200, the same Inductor GEMV kernel runs at different speeds in different runs",
    )
    put("cs_tune_kernel", f"`{name[:48]}…`")
    put(
        "cs_tune_runs",
        ", ".join(f"{us(u)} ({g:,} blocks of {b} threads)" for u, (g, b) in per_run),
    )
    claim(
        max(fixed) < 1.03 * min(fixed),
        "on the H200, Part 4's own fixed-setting GEMV kernel runs at one speed in every process",
    )
    put("cs_fixed_runs", ", ".join(f"{us(u)}" for u in fixed))

    def launches(r: Any) -> tuple[tuple[str, str, str], ...]:
        """One token's kernel launches (profiler step 2), in order: name, grid, block."""
        tv = r.trace()
        ops = link(tv).gpu_ops_of(tv.step("ProfilerStep#2").event)
        ops = ops[np.argsort(tv.ts_ns[ops], kind="stable")]
        return tuple(
            (tv.name(g), str(tv.extra["grid"][g]), str(tv.extra["block"][g]))
            for g in ops
            if tv.kind[g] == Kind.KERNEL
        )

    final = recorded("loop_untuned_8b", "05_llm_decode")  # every session it was recorded in
    untuned = [launches(r) for s in final.sessions for r in s.repeats] + [
        launches(r) for r in final.repeats
    ]
    claim(
        len(untuned) >= 6 and len(set(untuned)) == 1,
        "on the H200, the same kernels on the same grids and blocks in all recorded processes",
    )
    put("cs_untuned_n", f"{len(untuned)}")


def train_backward_thread() -> None:
    """Entry: A second CPU thread that only works during the backward."""
    t = rec("eager", "06_train_step").trace()
    (fwd,) = t.regions("forward")
    (bwd,) = t.regions("backward")
    main = int(t.lane[fwd.event])
    evaluate = t.where(prefix="autograd::engine::evaluate_function: ")
    lanes = {int(x) for x in t.lane[evaluate]}
    claim(
        len(lanes) == 1 and main not in lanes,
        f"a second CPU thread holds all autograd::engine::evaluate_function ops ({lanes})",
    )
    claim(
        all(bwd.start_ns <= t.ts_ns[i] <= bwd.end_ns for i in evaluate),
        "the evaluate_function ops all run during the backward",
    )
    on_it = np.flatnonzero(t.lane == next(iter(lanes)))
    claim(
        t.ts_ns[on_it].min() >= bwd.start_ns
        and (t.ts_ns[on_it] + t.dur_ns[on_it]).max() <= bwd.end_ns,
        "A second CPU thread, busy only during the backward: idle through the forward",
    )
    put("cs_train_evaluate", f"{len(evaluate):,}")


def train_data_gap() -> None:
    """Entry: The GPU lane empty under a long `enumerate(DataLoader)` span."""
    t = rec("loader_inline", "06_train_step").trace()
    (data,) = t.regions("data")
    ln = link(t)
    ops = ln.gpu_ops
    during = ops[(t.ts_ns[ops] < data.end_ns) & (t.ts_ns[ops] + t.dur_ns[ops] > data.start_ns)]
    busy = float(t.dur_ns[during].sum())
    claim(
        busy < 0.01 * (data.end_ns - data.start_ns),
        f"the GPU lane has no work until the batch's copy at its end (GPU busy {busy} ns)",
    )
    (it,) = t.where(name="enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    claim(
        t.dur_ns[it] > 0.95 * (data.end_ns - data.start_ns),
        "the CPU spends the data region inside enumerate(DataLoader)…__next__",
    )
    put("cs_train_data", us((data.end_ns - data.start_ns) / 1e3))


ACCUMULATE = "torch::autograd::AccumulateGrad"


def train_optimizer() -> None:
    """Entry: Over a thousand kernels launched from `optimizer.step()`."""
    t_fused = rec("eager", "06_train_step").trace()  # its backward: one AccumulateGrad a parameter
    loop, fused = (part5.optimizer_facts(t) for t in
                   (rec("eager_forloop", "06_train_step").trace(), t_fused))  # fmt: skip
    params = len(t_fused.where(name=f"autograd::engine::evaluate_function: {ACCUMULATE}"))
    claim(
        words.few(round(loop["kernels"] / params)),
        "The for-loop implementation updates one parameter at a time, a few kernels each",
    )
    claim(
        loop["kernels"] > 1000 and words.dozens(fused["kernels"]) and loop["top"] != fused["top"],
        "the for-loop launches over a thousand kernels where fused AdamW launches dozens",
    )
    results = {v: rec(v, "06_train_step").results for v in ("eager_forloop", "eager")}
    steps = {v: r["step_ms"] for v, r in results.items() if r is not None}
    claim(steps["eager"] < steps["eager_forloop"], "fused AdamW's step is the shorter")
    put("cs_train_loop_kernels", f"{loop['kernels']:,}")
    put("cs_train_fused_kernels", f"{fused['kernels']:,}")
