"""Story 06's claims (examples/06_train_step/06_train_step.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. It pastes nothing: the story
prints its numbers from the replay.

Every variant is recorded on both GPUs. Part 5's measures (:mod:`part5_measures`) are
imported where one computes what a sentence needs (the phases, the optimizer's kernels,
the casts, the memory events, the data region, the compiled step). The profiler's table
of ``eager`` and ``causal`` is read from the text the recording stores (``table.txt``: the
recorder kept no ``table.json`` for this set). Several recordings are trimmed to one or two
regions (``meta.json``'s ``trimmed``: the optimizer of ``eager_foreach``, ``eager_forloop``
and ``memory``, the forward of ``eager_bf16``, the backward of ``eager_checkpoint``, the data
and forward of the three loaders): a sentence about a whole step is checked on the
untrimmed ones. The one sentence that counts over both GPUs' repeats ("two of the six") is
checked once, in the first GPU's run, reading the other's recordings beside it.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

import numpy as np
import part5_measures as m
from tracesite.facts import Facts, claim
from tracesite.profiler_table import cells, number, total_us
from tracesite.recordings import recordings_root
from tracesite.words import a_little, about, beyond_spread, far, most

import tracereader
from tracereader import Kind, Trace, link, region_times, step_times

EXAMPLE = "06_train_step"
GPUS = ("h200", "h100")

#: The model's shape (Llama-3.2-1B's): vocabulary, MLP width, heads of a query and of a
#: key/value, and the width of a head.
VOCAB, MLP, Q_HEADS, KV_HEADS, HEAD = 128_256, 8192, 32, 8, 64
#: The timed steps a variant runs without the profiler (``timed_steps``'s default).
TIMED_STEPS = 8
#: How many rows the story's table keeps (``row_limit=15``).
TABLE_ROWS = 15
#: A duration the profiler's table prints to the µs, compared with the trace's: within this.
TABLE_US = 10.0
CBF = "Command Buffer Full"
#: The CPU work a DataLoader does per sample, ms (``cpu_ms``'s default).
CPU_MS = 40.0
#: bf16 keeps 7 of a float's significand bits: between 0.5 and 1.0 its neighbouring values
#: stand 2**-8 apart, so a weight of 1.0 moved by under half that gap rounds back to 1.0.
BF16_GAP_BELOW_1 = 2.0**-8


# -- the profiler's table, read from its text ----------------------------------------------
def table_rows(text: str) -> list[dict[str, Any]]:
    """The rows of ``prof.key_averages().table()``, in its order: ``name`` and every column
    under its header's name, as a number (times in µs)."""
    return [
        {"name": c["Name"], **{k: number(v) for k, v in c.items() if k != "Name"}}
        for c in cells(text)
    ]


def rows_named(rows: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["name"] == name]


# -- helpers on one trace -------------------------------------------------------------------
def launched_in(tr: Trace, region: str) -> list[int]:
    """GPU ops launched (from any thread) while the region was open, by launch time."""
    (reg,) = tr.regions(region)
    ops = m._gpu_ops_launched_in(tr, reg.start_ns, reg.end_ns)
    ln = link(tr)
    return [int(i) for i in ops[np.argsort(tr.ts_ns[ln.launch[ops]], kind="stable")]]


def launch_lane(tr: Trace, op: int) -> int:
    return int(tr.lane[link(tr).launch[op]])


def main_ops_us(tr: Trace, main: int) -> float:
    """The GPU time of every op launched from the main thread."""
    ln = link(tr)
    ops = ln.gpu_ops[ln.launch[ln.gpu_ops] >= 0]
    mine = ops[tr.lane[ln.launch[ops]] == main]
    return float(tr.dur_ns[mine].sum()) / 1e3


def enclosing(tr: Trace, i: int, lane: int) -> set[str]:
    """Names of the events on ``lane`` whose span holds event ``i`` (the step as
    ``ProfilerStep*``, as the table names it)."""
    on = tr.where(lane=lane)
    inside = on[(tr.ts_ns[on] <= tr.ts_ns[i]) & (tr.end_ns[on] >= tr.end_ns[i])]
    return {re.sub(r"^ProfilerStep#\d+$", "ProfilerStep*", tr.name(int(j))) for j in inside}


def the_call(tr: Trace, i: int) -> int:
    """The CUDA runtime or driver call whose span holds event ``i`` (-1: none)."""
    calls = tr.where(kind=(Kind.RUNTIME, Kind.DRIVER))
    hold = calls[(tr.ts_ns[calls] <= tr.ts_ns[i]) & (tr.end_ns[calls] >= tr.end_ns[i])]
    return int(hold[0]) if len(hold) == 1 else -1


def linear_inputs(path: str) -> tuple[int, int, set[str], set[str]]:
    """The step's ``aten::linear`` calls (``record_shapes``' input types): (calls, calls
    inside another one, the outer calls' weight types, the inner calls' input and weight
    types)."""
    ev = [e for e in m.raw_events(path) if e.get("ph") == "X" and e["name"] == "aten::linear"]
    spans = [(e["tid"], float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev]

    def inside(e: dict[str, Any]) -> bool:
        a, b = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        return any(t == e["tid"] and s <= a and b <= x and (s, x) != (a, b) for t, s, x in spans)

    inner = [e for e in ev if inside(e)]
    outer = [e for e in ev if not inside(e)]

    def types(es: list[dict[str, Any]], which: slice) -> set[str]:
        return {t for e in es for t in e["args"]["Input type"][which]}

    return len(ev), len(inner), types(outer, slice(1, 2)), types(inner, slice(0, 2))


def picture(tr: Trace) -> tuple[list[str], list[str]]:
    """The story's picture of the step, drawn as it draws it: (lane names, labels)."""
    from matplotlib.figure import Figure

    fig = tracereader.timeline(tr, step=tr.steps[-1].name, arrows=False, gaps=False, fig=Figure())
    lanes = [str(t.get_text()) for ax in fig.axes for t in ax.get_yticklabels()]
    labels = [str(t.get_text()) for ax in fig.axes for t in ax.texts]
    return lanes, labels


# -- the claims -----------------------------------------------------------------------------
def model_shape(f: Facts) -> None:
    """The docstring's model: heads, layers, width, vocabulary, tied table, parameters."""
    r: Any = f.rec("eager")
    t = r.timings()
    ev = m.raw_events(str(r.trace_path))
    name = "aten::_scaled_dot_product_cudnn_attention"  # attention's forward, once a layer
    sdpa = [e for e in ev if e.get("ph") == "X" and e["name"] == name]
    dims = {str(e["args"]["Input Dims"][:3]) for e in sdpa}
    q, kv = [t["batch"], Q_HEADS, t["seq"], HEAD], [t["batch"], KV_HEADS, t["seq"], HEAD]
    claim(
        len(sdpa) == m.LAYERS == 16
        and dims == {str([q, kv, kv])}
        and Q_HEADS * HEAD == m.HIDDEN == 2048
        and t["seq"] == 2048,
        "hidden 2048, 16 layers, 32 query and 8 key/value heads; sequences of length 2,048",
    )
    kv_width = KV_HEADS * HEAD
    layer = 2 * m.HIDDEN**2 + 2 * m.HIDDEN * kv_width + 3 * m.HIDDEN * MLP + 2 * m.HIDDEN
    tied = VOCAB * m.HIDDEN + m.LAYERS * layer + m.HIDDEN  # the table once, then the final norm
    claim(
        t["embedding_params"] == VOCAB * m.HIDDEN and t["params"] == tied,
        "a vocabulary of 128,256 whose output projection is tied to the embedding "
        "(one matrix serves both)",
    )
    claim(about(t["params"], 1.24e9), "about 1.24 B parameters")


def results_and_steps(f: Facts, names: list[str]) -> None:
    """What every variant writes, and the one step its trace keeps (one repeat)."""
    for v in names:
        r: Any = f.rec(v)
        res, t = r.results, r.timings()
        med = statistics.median(t["step_ms"])
        tokens = t["batch"] * t["seq"] / (med / 1e3)
        flops = 6 * (t["params"] - t["embedding_params"]) + 12 * m.LAYERS * m.HIDDEN * t["seq"]
        claim(
            len(t["step_ms"]) == TIMED_STEPS
            and res["step_ms"] == round(med, 2)
            and res["step_ms_min"] == round(min(t["step_ms"]), 2)
            and res["step_ms_max"] == round(max(t["step_ms"]), 2)
            and res["tokens_per_s"] == round(tokens)
            and {"peak_gib", "mfu_spec", "first_step_s"} <= set(res),
            "timings.json (each timed step's ms) and results.json: step_ms (the median step, "
            "its fastest and slowest), tokens_per_s, peak_gib, first_step_s and mfu_spec",
        )
        claim(
            t["flops_per_token"] == flops
            and res["mfu_spec"] == round(res["tokens_per_s"] * flops / m.SPEC_FLOPS, 4)
            and m.SPEC_FLOPS == 989e12,
            "mfu_spec: tokens per second times a token's FLOPs, 6 × (P − E) + 12 × L × H × S, "
            "over the H200's dense bf16 peak, 989 TFLOP/s",
        )
        claim(
            m.mfu(res, t) > res["mfu_spec"],
            "Part 5 also counts the tied table, so its MFU is higher",
        )
        tr = r.trace()
        claim(
            [s.name for s in tr.steps] == ["ProfilerStep#2"],
            "runs three under it (the trace keeps the third): one step",
        )
        if r.meta.get("trimmed"):  # the recorder kept one or two regions of the step
            continue
        ln = link(tr)
        (step,) = tr.steps
        order = sorted(m.PHASES, key=lambda p: tr.regions(p)[0].start_ns)
        claim(
            all(len(tr.regions(p)) == 1 for p in m.PHASES) and order == list(m.PHASES),
            "four phases, each a record_function range: forward, loss, backward and "
            "optimizer, after a data region",
        )
        claim(
            int(tr.end_ns[ln.gpu_ops].max()) <= step.end_ns
            and int(tr.ts_ns[ln.gpu_ops].min()) >= step.start_ns,
            "Before it ends we wait for the GPU, so every kernel it launched is inside the trace",
        )


def the_baseline(f: Facts) -> dict[str, Any]:
    """``eager``'s table, its trace and its picture (one repeat); returns what the claims
    over both GPUs' repeats need: the Command Buffer Full records in the optimizer, and
    whether the table has the row."""
    r: Any = f.rec("eager")
    tr = r.trace()
    rows = table_rows(r.table)
    main, auto = m.lanes(tr)  # claims: every backward op on one other thread
    ln = link(tr)
    claim(
        len(rows) == TABLE_ROWS
        and all(a["CUDA total"] >= b["CUDA total"] for a, b in zip(rows, rows[1:], strict=False)),
        "The table sums the profiled step by name and keeps the 15 rows with the most GPU time",
    )
    claim(
        rows_named(rows, "ProfilerStep*")[0]["# of Calls"] == 1, "the table counts calls per step"
    )
    total = total_us(r.table, "Self CUDA")
    claim(
        all(abs(x["Self CUDA %"] - 100 * x["Self CUDA"] / total) < 0.006 for x in rows),
        "Self CUDA % is a share of Self CUDA time total",
    )
    # The two forward rows: the CPU's (the GPU ops launched inside it), the GPU's span.
    fwd = rows_named(rows, "forward")
    cpu_row = [x for x in fwd if x["CPU total"] > 0 and x["Self CUDA"] == 0]
    gpu_row = [x for x in fwd if x["CPU total"] == 0 and x["Self CUDA"] > 0]
    (span,) = tr.where(kind=Kind.GPU_ANNOTATION, name="forward")
    launched = float(tr.dur_ns[launched_in(tr, "forward")].sum()) / 1e3
    claim(
        len(fwd) == 2
        and len(cpu_row) == 1 == len(gpu_row)
        and abs(cpu_row[0]["CUDA total"] - launched) < TABLE_US
        and abs(gpu_row[0]["Self CUDA"] - tr.dur_ns[span] / 1e3) < TABLE_US
        and gpu_row[0]["Self CUDA"] > cpu_row[0]["CUDA total"],
        "Of the two forward rows, the one with CPU time counts the kernels launched inside "
        "it; the one with only Self CUDA is its GPU-side span, idle time included",
    )
    # Who launches what: the main thread the forward, the loss, the backward's first kernel
    # and the optimizer; the autograd thread the rest of the backward.
    bwd = launched_in(tr, "backward")
    first = [tr.name(j) for j in ln.stack(int(ln.launch[bwd[0]]))]
    claim(
        launch_lane(tr, bwd[0]) == main
        and first[-2:] == ["aten::ones_like", "aten::fill_"]
        and all(launch_lane(tr, i) == auto for i in bwd[1:])
        and any(x["name"].startswith("autograd::engine::evaluate_function: ") for x in rows),
        "All the backward's kernels but the first (a fill of ones) come from the autograd "
        "thread, not the main thread's backward: see the autograd::engine::evaluate_function: "
        "... rows",
    )
    fused = tr.where(name="aten::_fused_adamw_")
    times = {x.name: x for x in region_times(tr, names=m.PHASES)}
    m.phase_times(tr)  # Part 5's claim: region_times counts the kernels launched from any thread
    bwd_kernels = [i for i in bwd if tr.kind[i] == Kind.KERNEL]
    claim(
        times["backward"].kernels == len(bwd_kernels)
        and sum(launch_lane(tr, i) == auto for i in bwd_kernels) > 0,
        "tracereader reads each region's GPU time from the trace: every GPU op launched while "
        "it was open, from any thread, so backward gets the autograd thread's kernels",
    )
    by_main = [launch_lane(tr, i) == main for p in ("forward", "loss") for i in launched_in(tr, p)]
    by_main += [launch_lane(tr, i) == main for i in launched_in(tr, "optimizer")]
    # the GPU finishes each phase's work after the CPU closed the phase
    behind = [times[p].gpu_end_us > tr.rel_us(tr.regions(p)[0].end_ns) for p in m.PHASES[1:]]
    claim(
        all(by_main) and all(behind),
        "The CPU's main thread launches the forward, the loss and the backward's first kernel, "
        "waits in backward while the autograd thread launches the rest, then launches the "
        "optimizer; the GPU runs behind it",
    )
    claim(
        r.timings()["batch"] == 4 and "weights" not in r.params and len(fused) == 1,
        "eager, the baseline (fp32 weights under bf16 autocast, fused AdamW, batch 4)",
    )
    mm = tr.where(name="aten::mm")
    claim(bool((tr.extra["input_dims"][mm] >= 0).all()), "Input shapes are recorded")
    # Command Buffer Full: CUPTI's records, and what the table makes of them.
    records = [int(i) for i in tr.where(name=CBF)]
    in_fused = [
        i
        for i in records
        if tr.ts_ns[fused[0]] <= tr.ts_ns[i] and tr.end_ns[i] <= tr.end_ns[fused[0]]
    ]
    calls = [the_call(tr, i) for i in records]
    claim(
        all(tr.cat(i) == "overhead" for i in records)
        and len({int(tr.lane[i]) for i in records}) <= 1
        and all(len(tr.where(lane=int(tr.lane[i]))) == len(records) for i in records[:1])
        and not any(tr.lanes[int(tr.lane[i])].is_gpu for i in records),
        "Command Buffer Full is no GPU work but a record of CUPTI (category overhead in the "
        "trace, on a lane of its own)",
    )
    claim(
        all(c >= 0 and len(ln.gpu_ops_of_call(c)) > 0 for c in calls),
        "a launch call waited",
    )
    (b,) = tr.regions("backward")
    in_backward = [
        i
        for i, c in zip(records, calls, strict=True)
        if b.start_ns <= tr.ts_ns[i] < b.end_ns and int(tr.lane[c]) == auto
    ]
    claim(
        not records or most(len(in_backward), len(records)),
        "Most records, in every repeat that has any, fell in the backward, on the autograd "
        "engine's thread",
    )
    row = rows_named(rows, CBF)
    adamw = rows_named(rows, "aten::_fused_adamw_")
    claim(
        bool(row) == bool(in_fused),
        "two of the six repeats have none in the optimizer, and no such row",
    )
    if row:
        x, a = row[0], adamw[0]
        above = rows[: rows.index(x)]
        claim(
            abs(x["Self CPU"] - float(tr.dur_ns[records].sum()) / 1e3) < TABLE_US,
            "This table counts the records' length as CPU time",
        )
        claim(x["Self CUDA %"] > 100, "their Self CUDA (over 100 %) is no length")
        claim(
            abs(x["Self CUDA"] - len(in_fused) * a["Self CUDA"]) < TABLE_US * len(in_fused),
            "one copy of aten::_fused_adamw_'s Self CUDA per record inside that operator "
            "(those in the backward add no CUDA time)",
        )
        held = set.intersection(*(enclosing(tr, i, main) for i in in_fused))
        held |= {tr.name(c) for c in calls if c >= 0 and int(tr.lane[c]) == main}
        claim(
            len(above) == 5
            and {y["name"] for y in above} <= held
            and all(y["CUDA total"] >= x["Self CUDA"] for y in above),
            "added again to the CUDA total of the rows they sit in, the five above",
        )
    if adamw:
        opt = m.optimizer_facts(tr)
        claim(
            abs(adamw[0]["Self CUDA"] - 1e3 * opt["gpu_ms"]) < TABLE_US,
            "the optimizer's GPU time is aten::_fused_adamw_'s Self CUDA",
        )
    n, inner, outer_types, inner_types = linear_inputs(str(r.trace_path))
    linear, mm_bwd = (
        rows_named(rows, "aten::linear"),
        [x for x in rows if x["name"].startswith("MmBackward0")],
    )
    claim(
        linear[0]["# of Calls"] == 2 * mm_bwd[0]["# of Calls"]
        and n == 2 * inner
        and outer_types == {"float"}
        and inner_types == {"c10::BFloat16"},
        "aten::linear counts each linear layer twice (MmBackward0 once): autocast runs it "
        "again inside, on bf16 inputs",
    )
    (step,) = step_times(tr)
    claim(
        times["backward"].gpu_busy_us > step.gpu_busy_us / 2
        and times["optimizer"].gpu_busy_us < step.gpu_busy_us / 10,
        "In every repeat on both GPUs the backward takes over half the GPU's time, the "
        "optimizer under a tenth",
    )
    # The picture: the lanes, the optimizer unlabelled, the wait in loss.item().
    lanes, labels = picture(tr)
    names = [tr.lanes[main].label, tr.lanes[auto].label]
    claim(
        len(lanes) == 3
        and all(lane.endswith(n) for lane, n in zip(lanes, names, strict=False))
        and lanes[2].startswith("GPU"),
        "The picture draws the step lane by lane: the main thread, the autograd thread, the GPU",
    )
    (opt_region,) = tr.regions("optimizer")
    items = tr.where(name="aten::item", lane=main)
    (item,) = items[tr.ts_ns[items] >= opt_region.end_ns]
    syncs = tr.where(name="cudaStreamSynchronize", lane=main)
    (sync,) = syncs[(tr.ts_ns[syncs] >= tr.ts_ns[item]) & (tr.end_ns[syncs] <= tr.end_ns[item])]
    last_gpu = int(tr.end_ns[ln.gpu_ops].max())
    claim(
        not any(t.startswith("optim") for t in labels)
        and 0 <= tr.ts_ns[item] - opt_region.end_ns < 100_000
        and tr.ts_ns[sync] < last_gpu <= tr.end_ns[sync]
        and any(t.startswith("cudaStreamSynchro") for t in labels),
        "After the optimizer (too short a range to label, just before aten::item), the main "
        "thread waits in cudaStreamSynchronize to read the loss while the GPU finishes the step",
    )
    return {"in_optimizer": len(in_fused), "row": bool(row)}


def the_result(f: Facts) -> None:
    """``causal``'s table and its kernels (one repeat)."""
    r: Any = f.rec("causal")
    tr = r.trace()
    rows = table_rows(r.table)
    main, auto = m.lanes(tr)
    m.compile_facts(tr)  # Part 5's claims: CompiledFunctionBackward on the autograd thread, ...
    names = [x["name"] for x in rows]
    claim(
        any(n.startswith("## Call CompiledFxGraph") for n in names)
        and any(n.startswith("Torch-Compiled Region") for n in names)
        and {"CompiledFunction", "CompiledFunctionBackward"} <= set(names),
        "Compiled code has rows of its own (CompiledFxGraph, Torch-Compiled Region); "
        "CompiledFunction and CompiledFunctionBackward",
    )
    compiled = tr.where(name="CompiledFunction")
    claim(
        all(int(tr.lane[i]) == main for i in compiled)
        and all(enclosing(tr, int(i), main) & {"forward", "loss"} for i in compiled),
        "CompiledFunction and CompiledFunctionBackward are the compiled forward and backward "
        "as autograd runs them",
    )
    (adamw,) = {
        tuple(e["args"]["Concrete Inputs"])
        for e in m.raw_events(str(r.trace_path))
        if e.get("name") == "aten::_fused_adamw_"
    }
    lr, beta1, beta2, decay = map(float, adamw[6:10])  # the scalars record_shapes kept
    # Adam moves a weight by at most lr * (1 - beta1) / sqrt(1 - beta2) per step (Kingma and
    # Ba, 2015, section 2.1, where 1 - beta1 > sqrt(1 - beta2)), plus lr * decay * weight.
    largest = lr * (max(1.0, (1 - beta1) / (1 - beta2) ** 0.5) + decay * 1.0)
    claim(
        r.params["weights"] == "bf16"
        and far(BF16_GAP_BELOW_1, lr)
        and largest < BF16_GAP_BELOW_1 / 2,
        "an update under half the gap between neighbouring bf16 values rounds away (every "
        "update of the norm weights, which start at 1.0, where that gap is far wider than the "
        "learning rate)",
    )
    bwd = launched_in(tr, "backward")
    ln = link(tr)
    ops = ln.gpu_ops[ln.launch[ln.gpu_ops] >= 0]
    autograd = sorted(int(i) for i in ops if launch_lane(tr, int(i)) == auto)
    (ps,) = rows_named(rows, "ProfilerStep*")
    claim(
        abs(ps["CUDA total"] - main_ops_us(tr, main)) < TABLE_US
        and launch_lane(tr, bwd[0]) == main
        and autograd == sorted(bwd[1:]),
        "Here (causal) ProfilerStep*'s CUDA total counts the main thread's kernels, not the autograd "
        "thread's (the backward's but its first)",
    )
    kernels = tr.where(kind=Kind.KERNEL)
    per_name: dict[str, float] = {}
    for i in kernels:
        per_name[tr.name(int(i))] = per_name.get(tr.name(int(i)), 0.0) + tr.dur_ns[i] / 1e3
    attention = {n: us for n, us in per_name.items() if m.kernel_class(n) == "attention"}
    claim(
        bool(attention)
        and max(attention.values()) < min(x["CUDA total"] for x in rows)
        and not any(m.kernel_class(n) == "attention" for n in names),
        "The attention kernels fall below the 15 rows",
    )
    top = [str(x["name"]) for x in tracereader.kernel_table(tr, top=10).to_records()]
    att_top = [n for n in top if m.kernel_class(n) == "attention"]
    fwd_names = {tr.name(i) for i in launched_in(tr, "forward")}
    bwd_names = {tr.name(i) for i in bwd}
    fprop = [n for n in att_top if "_sdpa_" in n and "_fprop_" in n]
    bprop = [n for n in att_top if "_sdpa_" in n and "_bprop_" in n]
    claim(
        all("cudnn" in n for n in att_top)
        and bool(fprop)
        and bool(bprop)
        and set(fprop) <= fwd_names
        and set(bprop) <= bwd_names,
        "tracereader lists the ten kernels with the most time: attention's are cuDNN's "
        "(..._sdpa_..._fprop_... forward, ..._bprop_... backward)",
    )


def the_variants(f: Facts, order: list[str]) -> None:
    """What the variant list says of each one's trace and results (one repeat)."""
    rec: Any = f.rec
    res = {v: rec(v).results for v in order}
    tim = {v: rec(v).timings() for v in order}
    params = {v: rec(v).params for v in order}
    # the optimizers: how many kernels, CPU time against GPU time
    opt = {v: m.optimizer_facts(f.trace(v)) for v in ("eager", "eager_foreach", "eager_forloop")}
    fused, foreach, forloop = opt.values()
    claim(
        fused["kernels"] < foreach["kernels"] < forloop["kernels"]
        and fused["cpu_ms"] < fused["gpu_ms"]
        and forloop["cpu_ms"] > forloop["gpu_ms"],
        "The optimizer region changes: how many kernels it launches, and how long the CPU "
        "takes to launch them against how long the GPU takes to run them",
    )
    c32, c16 = m.cast_facts(f.trace("eager")), m.cast_facts(f.trace("eager_bf16"))
    claim(
        c16["linear_casts"] == 0 == c16["sdpa_casts"]
        and c32["linear_casts"] > 0
        and c32["sdpa_casts"] > 0,
        "eager_bf16: Autocast's casts are gone from the forward",
    )
    mem: Any = rec("memory")
    facts = m.memory_facts(str(mem.trace_path), mem.results["peak_gib"], mem.timings()["params"])
    claim(
        facts["events"] > 0
        and (mem.trace_path.parent / "memory_snapshot.pickle").exists()
        and facts["peak_phase"] in m.PHASES,
        "memory: when in the step the peak is reached, in the snapshot's timeline and in the "
        "profiler's memory events (each with the total allocated after it)",
    )
    li, lw, la = (
        m.loader_facts(f.trace(v)) for v in ("loader_inline", "loader_workers", "loader_async")
    )
    work_ms = tim["loader_inline"]["batch"] * CPU_MS  # the DataLoader's CPU work for a batch
    claim(
        li["data_ms"] >= work_ms and lw["data_ms"] < CPU_MS,
        "the batch comes from a DataLoader doing CPU work per sample, in the training "
        "process, then in worker processes",
    )
    claim(
        la["pinned"] == 1 and la["syncs"] == 0,
        "loader_async: pinned and copied without waiting",
    )
    # loader_async's wait in the forward (its stored trace keeps the data and the forward)
    tr = f.trace("loader_async")
    (fwd,) = tr.regions("forward")
    main = int(tr.lane[fwd.event])
    items = tr.where(name="aten::item", lane=main)
    items = items[(tr.ts_ns[items] >= fwd.start_ns) & (tr.end_ns[items] <= fwd.end_ns)]
    syncs = tr.where(name="cudaStreamSynchronize", lane=main)

    def waits_in(i: int) -> bool:
        return bool(((tr.ts_ns[syncs] >= tr.ts_ns[i]) & (tr.end_ns[syncs] <= tr.end_ns[i])).any())

    early = fwd.start_ns + (fwd.end_ns - fwd.start_ns) / 10  # in the forward's first tenth
    waits = [
        int(i)
        for i in items
        if 10e6 <= tr.dur_ns[i] < 100e6 and tr.ts_ns[i] < early and waits_in(int(i))
    ]
    claim(
        len(waits) == 1 and "forward" in [tr.name(j) for j in link(tr).stack(waits[0])],
        "loader_async's main thread waits tens of milliseconds early in forward, in an "
        "aten::item of the model's code, in every repeat on both GPUs",
    )
    cc, s = m.compile_facts(f.trace("compile")), m.step_facts(f.trace("eager"))
    claim(
        cc["kernels"] < s["step_kernels"] and cc["triton"] > 0,
        "compile: The step runs fewer, fused kernels",
    )
    eager_like = [v for v in order if "compile" not in params[v]]
    claim(
        all(res["compile"]["first_step_s"] > res[v]["first_step_s"] for v in eager_like),
        "first_step_s includes compiling",
    )
    shape = {v: (tim[v]["batch"], tim[v]["seq"]) for v in order}
    claim(
        shape["compile_b8_bf16"] == (8, 2048)
        and shape["causal"] == (8, 2048)
        and shape["causal_b16"] == (16, 2048)
        and shape["causal_s4096"] == (4, 4096)
        and shape["final"] == (2, 8192)
        and params["causal"]["attention"] == "causal"
        and params["causal_chunked"]["loss"] == "chunked"
        and params["causal_flex"]["attention"] == "flex"
        and 2 * 8192 == 8 * 2048 == 16_384,
        "compile_b8_bf16 (batch 8), causal (attention told it is causal), causal_b16 (batch "
        "16), causal_chunked (the chunked loss), causal_flex (flex attention), causal_s4096 "
        "(sequences of 4,096, batch 4) and final (sequences of 8,192, batch 2, the same "
        "16,384 tokens per step)",
    )
    claim(
        all(res["final"]["mfu_spec"] > res[v]["mfu_spec"] for v in order if v != "final")
        and res["final"]["tokens_per_s"] < res["causal"]["tokens_per_s"],
        "final: the highest mfu_spec, yet slower in tokens per second than causal",
    )
    b16, c = res["causal_b16"], res["causal"]
    claim(
        a_little(b16["tokens_per_s"], c["tokens_per_s"])
        and b16["tokens_per_s"] < 1.1 * c["tokens_per_s"],
        "batch 16 trains slightly more tokens per second (more in every repeat on both GPUs, "
        "by under a tenth)",
    )
    claim(b16["peak_gib"] > 1.7 * c["peak_gib"], "at over 1.7 times causal's peak memory")
    later = order[order.index("compile_b8_bf16") :]
    claim(
        all(params[v].get("weights") == "bf16" for v in later),
        "From compile_b8_bf16 on, the weights are bf16, no fp32 copy",
    )
    batch8 = [v for v in order if tim[v]["batch"] == 8 and v != "causal"]
    claim(
        len(batch8) >= 3 and all(c["tokens_per_s"] > res[v]["tokens_per_s"] for v in batch8),
        "causal: the step that trains the most tokens per second here at batch 8",
    )
    fp32 = [v for v in order if params[v].get("weights", "fp32") == "fp32" and v != "compile"]
    attention = [v for v in order if "attention" in params[v]]
    fastest = res["compile"]["tokens_per_s"]
    claim(
        all(params[v].get("weights") == "bf16" for v in attention)
        and all(fastest > res[v]["tokens_per_s"] for v in fp32),
        "No fp32 causal was recorded; with fp32 weights, compile is the fastest, in every "
        "repeat on both GPUs",
    )
    every = [rec(v).meta["process"] for v in order]
    claim(
        all(p["fresh"] and sorted(p["variants_in_it"]) == sorted(order) for p in every),
        "each repeat a fresh process running the variants in turn",
    )


def facts(f: Facts) -> None:
    folder = recordings_root() / f.gpu / EXAMPLE
    recorded = {p.name for p in folder.iterdir() if p.is_dir()}
    order: list[str] = list(f.rec("eager").meta["process"]["variants_in_it"])
    claim(set(order) == recorded, "the variants: every one recorded")
    n = f.n_repeats()
    optimizer_records: list[dict[str, Any]] = []

    def each() -> None:
        model_shape(f)
        results_and_steps(f, order)
        optimizer_records.append(the_baseline(f))
        the_result(f)
        the_variants(f, order)

    f.repeats(each, n=n)
    # Across the repeats: the checkpoint's trade, peak memory against time per step.
    recs: Any = f.recs
    step = {v: [r.results["step_ms"] for r in recs(v)] for v in ("eager", "eager_checkpoint")}
    peak = {v: [r.results["peak_gib"] for r in recs(v)] for v in ("eager", "eager_checkpoint")}
    claim(
        beyond_spread(step["eager_checkpoint"], step["eager"])
        and beyond_spread(peak["eager"], peak["eager_checkpoint"]),
        "eager_checkpoint: activation checkpointing; peak memory against time per step",
    )
    if f.gpu == GPUS[0]:  # over both GPUs' repeats, once
        other = f.on(GPUS[1])
        for k in range(other.n_repeats()):
            other.repeat = k
            optimizer_records.append(the_baseline(other))
        claim(
            len(optimizer_records) == 6
            and sum(x["in_optimizer"] == 0 for x in optimizer_records) == 2
            and all(x["row"] == (x["in_optimizer"] > 0) for x in optimizer_records),
            "two of the six repeats have none in the optimizer, and no such row",
        )
