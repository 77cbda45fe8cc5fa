"""The computations behind Part 5 (``part5.md``): one training step of a 1.24 B Llama.

Each function takes one repeat (a :class:`tracereader.Trace`, or the trace file where a
field tracereader does not keep is needed: the profiler's memory events and the input
shapes of ``aten::mm``), asserts what the page says of it, and returns the numbers the
page glues, keyed by the names the prose uses. The page's facts module
(``docs/facts/part5.py``) calls them in ``f.repeats``, so every claim holds on every repeat;
``tests/site/test_facts.py`` runs it on the committed recordings.

Only :mod:`tracereader`, numpy and the standard library here: no drawing, no site glue.
"""

from __future__ import annotations

import gzip
import json
import math
import pickle
import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from part5_snapshot_measures import _alive_at_peak as _alive_at_peak
from part5_snapshot_measures import snapshot_at_peak as snapshot_at_peak
from part5_snapshot_measures import snapshot_table as snapshot_table
from part5_snapshot_measures import snapshot_timeline as snapshot_timeline
from tracesite import words
from tracesite.facts import claim

from tracereader import Kind, Trace, gaps, link, region_times, step_times

Facts = dict[str, Any]  # glue key -> float (a number) or str (Markdown)
Rows = npt.NDArray[np.int64]

PHASES = ("data", "forward", "loss", "backward", "optimizer")
SPEC_FLOPS = 989e12  # H200 SXM datasheet: dense bf16, FLOP/s (the MFU's denominator)
LAYERS, HIDDEN = 16, 2048  # the model's config (Llama-3.2-1B's shape): attention's 12 x L x H x seq
#: The variants of the goal's table, in the order of the attempts.
ATTEMPTS = ("eager", "eager_foreach", "eager_forloop", "eager_bf16", "eager_checkpoint", "loader_inline", "loader_workers",
            "loader_async", "compile", "compile_b8_bf16", "causal", "causal_b16", "causal_chunked", "causal_flex",
            "causal_s4096", "final")  # fmt: skip
KERNEL_CLASSES = ("GEMM", "attention", "Triton", "AdamW", "other")
#: The spread of the initial weights: transformers' ``LlamaConfig.initializer_range``.
INIT_STD = 0.02


@cache
def raw_events(path: str) -> list[dict[str, Any]]:
    """The trace file's events as torch wrote them (for args tracereader does not keep)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        events: list[dict[str, Any]] = json.load(f)["traceEvents"]
    return events


def _gpu_ops_launched_in(tr: Trace, start_ns: int, end_ns: int) -> Rows:
    """GPU ops whose launch call, on any CPU thread, started inside [start_ns, end_ns]."""
    ln = link(tr)
    ops = ln.gpu_ops[ln.launch[ln.gpu_ops] >= 0]
    at = tr.ts_ns[ln.launch[ops]]
    return ops[(at >= start_ns) & (at <= end_ns)]


def _kernels(tr: Trace, ops: Rows) -> Rows:
    kernels: Rows = ops[tr.kind[ops] == Kind.KERNEL]
    return kernels


def _inside(tr: Trace, rows: Rows, start_ns: int, end_ns: int) -> Rows:
    return rows[(tr.ts_ns[rows] >= start_ns) & (tr.end_ns[rows] <= end_ns)]


def phase_times(tr: Trace) -> dict[str, tuple[float, float, int]]:
    """Each phase's (CPU ms, GPU busy ms, kernels), as :func:`tracereader.region_times` gives
    them: the region's span on the CPU, and the GPU work launched while it ran, from any
    thread (the backward's comes from the autograd thread, not the one holding the region)."""
    out = {}
    for r in region_times(tr, names=PHASES):
        (region,) = tr.regions(r.name)
        k = _kernels(tr, _gpu_ops_launched_in(tr, region.start_ns, region.end_ns))
        claim(len(k) == r.kernels, "region_times counts the kernels launched from any thread")
        out[r.name] = (r.cpu_us / 1e3, r.gpu_busy_us / 1e3, r.kernels)
    return out


def lanes(tr: Trace) -> tuple[int, int]:
    """(main thread's lane, autograd thread's lane): the lane that holds ``forward``, and the
    one that holds the backward's ``autograd::engine::evaluate_function`` ops."""
    main = int(tr.lane[tr.regions("forward")[0].event])
    evaluate = tr.where(prefix="autograd::engine::evaluate_function: ")
    backward = {int(x) for x in tr.lane[evaluate]}
    claim(len(backward) == 1 and main not in backward, "every backward op on one other thread")
    return main, backward.pop()


def step_facts(tr: Trace) -> Facts:
    """Section 1: phases, the autograd thread, sequence numbers, the wait in ``loss.item()``."""
    phases = phase_times(tr)
    main, auto = lanes(tr)
    (step,) = step_times(tr)
    seq = tr.extra["seq"]
    evaluate = tr.where(prefix="autograd::engine::evaluate_function: ")
    ops = tr.where(kind=Kind.CPU_OP)
    forward_seqs = set(seq[ops[(tr.lane[ops] == main) & (seq[ops] >= 0)]].tolist())
    unmatched = Counter(
        tr.name(int(i)).split(": ", 1)[1] for i in evaluate if int(seq[i]) not in forward_seqs
    )
    claim(
        set(unmatched) == {"torch::autograd::AccumulateGrad"},
        "only AccumulateGrad has no forward twin",
    )
    accumulate = tr.where(
        name="autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
    )
    claim(
        unmatched["torch::autograd::AccumulateGrad"] == len(accumulate),
        "no AccumulateGrad has a twin",
    )
    if tr.source.endswith(".json.gz"):  # Perfetto's arrows: one fwdbwd flow per matched pair
        flows = sum(e.get("cat") == "fwdbwd" and e.get("ph") == "s" for e in raw_events(tr.source))
        claim(flows == len(evaluate) - len(accumulate), "a fwdbwd arrow for every matched pair")
    on_main = {n: set(seq[o[tr.lane[o] == main]].tolist()) - {-1}
               for n in ("aten::linear", "aten::t") for o in [tr.where(name=n)]}  # fmt: skip
    claim(bool(on_main["aten::linear"] & on_main["aten::t"]), "aten::linear shows aten::t's number")
    mm_bwd = tr.where(name="autograd::engine::evaluate_function: MmBackward0")
    claim(all(int(seq[i]) in forward_seqs for i in mm_bwd), "each MmBackward0 ties to a forward op")
    bwd, fwd, loss = phases["backward"], phases["forward"], phases["loss"]  # (CPU, GPU, kernels)
    claim(
        words.much(loss[1], loss[0]) and words.few(int(loss[2])),
        "loss costs little CPU but much GPU time: a few large kernels",
    )
    # The backward differentiates the forward and the loss (output projection, cross-entropy).
    bwd_over_fwd_loss = bwd[1] / (fwd[1] + loss[1])
    claim(
        words.about(bwd_over_fwd_loss, 2.0), "the backward's GPU work is about twice forward + loss"
    )
    # loss.item() after the optimizer: the CPU waits there for the GPU to finish the step.
    opt_end = tr.regions("optimizer")[0].end_ns
    items = tr.where(name="aten::item")
    items = items[(tr.ts_ns[items] >= opt_end) & (tr.lane[items] == main)]
    claim(len(items) == 1, "one loss.item() after the optimizer")
    item = int(items[0])
    ln = link(tr)
    first_gpu = int(tr.ts_ns[ln.gpu_ops].min())
    step_ms = (step.end_ns - step.start_ns) / 1e6
    claim(tr.dur_ns[item] / 1e6 > 0.2 * step_ms, "the CPU waits a large part of the step in item()")
    idle = gaps(tr)
    idle_ms = step_ms - step.gpu_busy_us / 1e3
    longest = max((g.end_ns - g.start_ns) / 1e6 for g in idle)
    claim(
        longest < 0.5 and len(idle) > 1000,
        "the GPU's idle time is many short gaps, none of half a ms",
    )
    # and one longer stretch after the step's last kernel, before the step ends
    tail_ms = (step.end_ns - int(tr.end_ns[ln.gpu_ops].max())) / 1e6
    claim(0.5 < tail_ms < 3 and tail_ms > longest, "an idle stretch after the last kernel")
    return {
        **{f"{p}_cpu_ms": v[0] for p, v in phases.items()},
        **{f"{p}_gpu_ms": v[1] for p, v in phases.items()},
        **{f"{p}_kernels": v[2] for p, v in phases.items()},
        "bwd_over_fwd_loss": bwd_over_fwd_loss,
        "evaluate_ops": len(evaluate),
        "accumulate_grads": unmatched["torch::autograd::AccumulateGrad"],
        "step_kernels": step.kernels,
        "gpu_busy_pct": 100 * step.gpu_busy_us / 1e3 / step_ms,
        "item_ms": tr.dur_ns[item] / 1e6,
        "idle_ms": idle_ms,
        "n_gaps": len(idle),
        "longest_gap_ms": longest,
        "first_kernel_ms": (first_gpu - step.start_ns) / 1e6,
        "tail_ms": tail_ms,
        "launch_done_ms": (int(tr.ts_ns[item]) - step.start_ns) / 1e6,
        "main_lane": main,
        "auto_lane": auto,
    }


def seq_pair(tr: Trace, occurrence: int = 0) -> tuple[int, int, int]:
    """(forward ``aten::mm``, its backward's evaluate_function, the sequence number): the
    ``occurrence``-th ``MmBackward0`` of the step and the forward op with its number."""
    main, _ = lanes(tr)
    seq = tr.extra["seq"]
    bwd = int(tr.where(name="autograd::engine::evaluate_function: MmBackward0")[occurrence])
    fwd = tr.where(name="aten::mm")
    fwd = fwd[(seq[fwd] == seq[bwd]) & (tr.lane[fwd] == main)]
    claim(len(fwd) == 1, "one forward aten::mm carries the backward op's number")
    return int(fwd[0]), bwd, int(seq[bwd])


def optimizer_facts(tr: Trace) -> Facts:
    """Section 2: the ``optimizer`` region's CPU time, kernels, launch calls, kernel time."""
    (region,) = tr.regions("optimizer")
    ops = _gpu_ops_launched_in(tr, region.start_ns, region.end_ns)
    k = _kernels(tr, ops)
    ln = link(tr)
    queue_ms = float(np.median(tr.ts_ns[k] - tr.ts_ns[ln.launch[k]])) / 1e6
    claim(queue_ms > 10, "the optimizer's kernels wait in the GPU's queue, behind the backward's")
    return {
        "queue_ms": queue_ms,
        "cpu_ms": (region.end_ns - region.start_ns) / 1e6,
        "kernels": len(k),
        "launches": len(set(ln.launch[ops].tolist())),
        "gpu_ms": float(tr.dur_ns[k].sum()) / 1e6,
        "top": Counter(tr.name(int(i)).split("<")[0].split("(")[0] for i in k).most_common(1)[0][0],
    }


def optimizer_window(tr: Trace, us: float) -> tuple[int, int]:
    """The first ``us`` microseconds of the ``optimizer`` region (ns, as timelines take them)."""
    (region,) = tr.regions("optimizer")
    return region.start_ns, region.start_ns + int(us * 1e3)


def cast_facts(tr: Trace) -> Facts:
    """Section 3: autocast's ``aten::_to_copy`` casts in the forward, and their kernels' time."""
    (region,) = tr.regions("forward")
    casts = _inside(tr, tr.where(name="aten::_to_copy"), region.start_ns, region.end_ns)
    ln = link(tr)
    ks = [ln.gpu_ops_of(int(i)) for i in casts]
    kernels = np.concatenate(ks) if ks else np.empty(0, dtype=np.int64)
    k = _kernels(tr, _gpu_ops_launched_in(tr, region.start_ns, region.end_ns))
    linear_casts = sum(_under_linear(tr, int(i)) for i in casts)
    weights, inputs = _linear_cast_args(tr.source) if linear_casts else (0, 0)
    claim(weights + inputs == linear_casts, "a cast inside aten::linear casts its weight or input")
    # the others, each under an aten::to, by what called that: the model's own .to() (no op
    # around it, only the region), SDPA's arguments under autocast (its fp32 query and key),
    # or an op casting internally (aten::cumsum)
    callers = Counter(_caller_of_to(tr, int(i)) for i in casts if not _under_linear(tr, int(i)))
    return {
        "own_casts": callers.pop("own", 0),
        "sdpa_casts": callers.pop("aten::scaled_dot_product_attention", 0),
        "internal_casts": sum(callers.values()),
        "internal_ops": ",".join(sorted(callers)),
        "linear_casts": linear_casts,
        "weight_casts": weights,
        "input_casts": inputs,
        "other_casts": len(casts) - linear_casts,
        "casts": len(casts),
        "cast_ms": float(tr.dur_ns[kernels].sum()) / 1e6,
        "fwd_kernels": len(k),
        "fwd_gpu_ms": float(tr.dur_ns[k].sum()) / 1e6,
    }


def cast_phases(tr: Trace) -> Facts:
    """Section 3: the GPU time of every cast in a step, by phase: the ``aten::_to_copy``
    calls of the forward and of the loss, and in the backward the casts inside the
    ``ToCopyBackward0`` nodes (each casts a bf16 gradient back to fp32, the dtype its
    forward cast read), not the gradient sums those nodes also launch. ``own_ms``: the
    loss code's own cast, ``logits.float()`` (the one not inside an ``aten::linear``),
    with its gradient's (the backward node with its sequence number); the rest is
    autocast's (``autocast_ms``). ``loss_ops`` and ``backward_nodes`` count what the
    trace holds of the loss and the backward: none where it was trimmed to the forward."""
    ln = link(tr)
    seq = tr.extra["seq"]
    out: Facts = {}
    own_seqs: set[int] = set()
    for phase in ("forward", "loss"):
        (region,) = tr.regions(phase)
        casts = _inside(tr, tr.where(name="aten::_to_copy"), region.start_ns, region.end_ns)
        ks = [ln.gpu_ops_of(int(i)) for i in casts]
        k = _kernels(tr, np.concatenate(ks)) if ks else np.empty(0, dtype=np.int64)
        out[f"{phase}_casts"] = len(casts)
        out[f"{phase}_cast_ms"] = float(tr.dur_ns[k].sum()) / 1e6
        if phase == "loss":
            own = [int(i) for i in casts if not _under_linear(tr, int(i))]
            claim(
                len(own) == (1 if len(casts) else 0)
                and all(_caller_of_to(tr, i) == "own" for i in own),
                "one cast in the loss is the loss code's own .float()",
            )
            own_k = _kernels(
                tr, np.array([g for i in own for g in ln.gpu_ops_of(i)], dtype=np.int64)
            )
            out["loss_own_ms"] = float(tr.dur_ns[own_k].sum()) / 1e6
            own_seqs = {int(seq[i]) for i in own}
            ops = tr.where(kind=Kind.CPU_OP)
            out["loss_ops"] = len(_inside(tr, ops, region.start_ns, region.end_ns))
    nodes = tr.where(name="autograd::engine::evaluate_function: ToCopyBackward0")
    out["backward_nodes"] = len(tr.where(prefix="autograd::engine::evaluate_function: "))
    ms = []
    for i in nodes:
        k = _kernels(tr, ln.gpu_ops_of(int(i)))
        cast = [int(j) for j in k if any(tr.name(x) == "aten::_to_copy" for x in ln.stack(int(j)))]
        ms.append(float(tr.dur_ns[np.array(cast, dtype=np.int64)].sum()) / 1e6)
    out["backward_casts"] = len(nodes)
    out["backward_cast_ms"] = sum(ms)
    own_bwd = [x for i, x in zip(nodes, ms, strict=True) if int(seq[i]) in own_seqs]
    claim(len(own_bwd) == len(own_seqs), "the loss's own cast has one backward node")
    out["backward_own_ms"] = sum(own_bwd)
    claim(
        not own_bwd or max(ms) == own_bwd[0],
        "the gradient of the loss's own cast is the backward's largest cast",
    )
    out["cast_ms"] = out["forward_cast_ms"] + out["loss_cast_ms"] + out["backward_cast_ms"]
    out["own_ms"] = out.get("loss_own_ms", 0.0) + out["backward_own_ms"]
    out["autocast_ms"] = out["cast_ms"] - out["own_ms"]
    return out


def _linear_cast_args(path: str) -> tuple[int, int]:
    """(weights, inputs): the forward's ``aten::_to_copy`` calls inside an ``aten::linear``,
    told apart by the shape ``record_shapes`` stored: a weight is 2-D, an input 3-D."""
    events = [e for e in raw_events(path) if e.get("ph") == "X"]
    (fwd,) = (e for e in events if e["name"] == "forward" and e.get("cat") == "user_annotation")
    start, end = fwd["ts"], fwd["ts"] + fwd["dur"]
    on_main = [e for e in events if e["tid"] == fwd["tid"] and start <= e["ts"] <= end]
    linear = [(e["ts"], e["ts"] + e["dur"]) for e in on_main if e["name"] == "aten::linear"]
    ranks = Counter(
        len(e["args"]["Input Dims"][0])
        for e in on_main
        if e["name"] == "aten::_to_copy"
        and any(a <= e["ts"] and e["ts"] + e["dur"] <= b for a, b in linear)
    )
    claim(set(ranks) <= {2, 3}, "each cast inside aten::linear is of a 2-D weight or a 3-D input")
    return ranks[2], ranks[3]


def _caller_of_to(tr: Trace, i: int) -> str:
    """What asked for the cast ``i`` (an ``aten::_to_copy`` under an ``aten::to``): "own" for
    a ``.to()`` in the model's code (only a region around it), else the op around it."""
    names = [tr.name(j) for j in link(tr).stack(i)]
    claim(names[-1:] == ["aten::to"], "each cast outside aten::linear sits under an aten::to")
    around = names[-2] if len(names) > 1 else ""
    return "own" if around in ("", "forward", "loss") else around


def _under_linear(tr: Trace, i: int) -> bool:
    return any(tr.name(j) == "aten::linear" for j in link(tr).stack(i))


def first_cast(tr: Trace) -> int:
    """The forward's first ``aten::_to_copy`` that launched a kernel."""
    (region,) = tr.regions("forward")
    ln = link(tr)
    for i in _inside(tr, tr.where(name="aten::_to_copy"), region.start_ns, region.end_ns):
        if len(ln.gpu_ops_of(int(i))) and _under_linear(tr, int(i)):
            return int(i)
    raise AssertionError("claim failed: a cast launched a kernel")


def memory_curve(
    path: str,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], dict[str, tuple[float, float]]]:
    """The profiler's memory events on the GPU: (ms since the step's start, GiB allocated
    after each event), and each region's (start, end) in the same ms."""
    events = raw_events(path)
    spans = {
        e["name"]: e
        for e in events
        if e.get("cat") == "user_annotation" and e["name"] in (*PHASES, "ProfilerStep#2")
    }
    t0 = float(spans["ProfilerStep#2"]["ts"])
    mem = [e for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]
    mem.sort(key=lambda e: float(e["ts"]))
    ms = np.array([(float(e["ts"]) - t0) / 1e3 for e in mem])
    gib = np.array([e["args"]["Total Allocated"] / 2**30 for e in mem])
    regions = {n: ((float(e["ts"]) - t0) / 1e3, (float(e["ts"]) + float(e["dur"]) - t0) / 1e3)
               for n, e in spans.items() if n in PHASES}  # fmt: skip
    return ms, gib, regions


def memory_facts(path: str, peak_gib: float, params: int) -> Facts:
    """Section 4: the peak of the memory events, the phase it falls in, and what the step
    starts with: ``params`` fp32 weights and AdamW's two fp32 moments (12 bytes each)."""
    ms, gib, regions = memory_curve(path)
    top = int(np.argmax(gib))
    where = [n for n, (a, b) in regions.items() if a <= ms[top] <= b]
    claim(where == ["backward"], "the peak falls in the backward")
    claim(abs(gib.max() - peak_gib) < 0.05 * peak_gib, "the events' peak is the allocator's peak")
    (fa, fb) = regions["forward"]
    start = gib[ms <= fa][-1] if (ms <= fa).any() else gib[0]
    state = 12 * params / 2**30
    claim(abs(start - state) < 0.01 * state, "the step starts with weights and moments alone")
    roles = linear_roles(str(Path(path).parent / "memory_snapshot.pickle"), params)
    return {
        **{f"lin_{k}_gib": v for k, v in roles.items()},
        "state_gib": state,
        "lin_copies_gib": roles["weight"] + roles["input"],
        "state_saved_gib": 6 * params / 2**30,  # weights and two moments: 12 -> 6 bytes each
        "events": len(ms),
        "peak_gib": float(gib.max()),
        "peak_ms": float(ms[top]),
        "start_gib": float(start),
        "after_fwd_gib": float(gib[ms <= fb][-1]),
        "end_gib": float(gib[-1]),
        "peak_phase": where[0],
    }


def loader_facts(tr: Trace) -> Facts:
    """Section 5: the ``data`` region's CPU time, the GPU's work during it, its copy and syncs."""
    (region,) = tr.regions("data")
    ln = link(tr)
    during = ln.gpu_ops[
        (tr.end_ns[ln.gpu_ops] > region.start_ns) & (tr.ts_ns[ln.gpu_ops] < region.end_ns)
    ]
    runtime = _inside(tr, tr.where(kind=Kind.RUNTIME), region.start_ns, region.end_ns)
    names = Counter(tr.name(int(i)) for i in runtime)
    launched = _gpu_ops_launched_in(tr, region.start_ns, region.end_ns)
    copies = [tr.name(int(i)) for i in launched if tr.kind[i] == Kind.MEMCPY]
    claim(len(copies) == 1, "one copy of the batch launched in the data region")
    busy = float(
        np.minimum(tr.end_ns[during], region.end_ns).sum()
        - np.maximum(tr.ts_ns[during], region.start_ns).sum()
    )
    (step,) = step_times(tr)
    syncs = [int(i) for i in runtime if tr.name(int(i)) == "cudaStreamSynchronize"]
    return {
        "sync_us": float(tr.dur_ns[syncs].sum()) / 1e3 if syncs else 0.0,
        "data_ms": (region.end_ns - region.start_ns) / 1e6,
        "gpu_busy_in_data_ms": busy / 1e6,
        "syncs": names["cudaStreamSynchronize"],
        "copies": names["cudaMemcpyAsync"],
        "pinned": int(any("Pinned" in c for c in copies)),
        "busy_frac": busy / (region.end_ns - region.start_ns),
        "step_kernels": step.kernels,
    }


def idle_until_gpu(tr: Trace, start_ns: int) -> tuple[int, int]:
    """``(start_ns, first GPU op's start)``: the GPU's idle stretch from ``start_ns`` to its
    first op. A timeline shades only gaps between two GPU ops; where no GPU op comes
    before ``start_ns`` in the trace (asserted), the page marks this stretch itself."""
    ops = link(tr).gpu_ops
    claim(not (tr.ts_ns[ops] < start_ns).any(), "no GPU op before the window")
    return start_ns, int(tr.ts_ns[ops].min())


def compile_facts(tr: Trace) -> Facts:
    """Section 6: kernels per step, Triton kernels, the compiled autograd nodes."""
    (step,) = step_times(tr)
    k = tr.where(kind=Kind.KERNEL)
    names = [tr.name(int(i)) for i in k]
    claim(len(tr.where(name="CompiledFunction")) >= 1, "CompiledFunction in the forward")
    claim(
        len(tr.where(name="CompiledFunctionBackward")) >= 1,
        "CompiledFunctionBackward in the backward",
    )
    _, auto = lanes(tr)
    cfb = tr.where(name="autograd::engine::evaluate_function: CompiledFunctionBackward")
    claim(len(cfb) == 2, "two compiled graphs, each one backward node: the decoder and the loss")
    claim(all(int(tr.lane[i]) == auto for i in cfb), "compiled backward on the autograd thread")
    claim(
        not any(n.startswith("triton_tem") for n in names),
        "no GEMM template: the GEMMs stay cuBLAS's",
    )
    claim(any(n.startswith("nvjet") for n in names), "cuBLAS's nvjet GEMMs")
    sdpa = {tr.name(int(i)) for i in tr.where(prefix="aten::_scaled_dot_product_")}
    claim(sdpa == {"aten::_scaled_dot_product_cudnn_attention",
                   "aten::_scaled_dot_product_cudnn_attention_backward"}, "cuDNN's SDPA only")  # fmt: skip
    attention = [i for i, n in zip(k, names, strict=True) if kernel_class(n) == "attention"]
    claim(all("cudnn" in n for n in names if kernel_class(n) == "attention"), "cuDNN kernels")
    # Kernels that only cast (``triton_poi_fused__to_copy_<n>``) launched in the backward:
    # under autocast, each follows the GEMMs of a Linear and casts its weight's bf16
    # gradient to fp32, the dtype of the weight (eager mode's ``ToCopyBackward0``).
    (b,) = tr.regions("backward")
    in_backward = _kernels(tr, _gpu_ops_launched_in(tr, b.start_ns, b.end_ns))
    grad_casts = [
        i for i in in_backward if re.fullmatch(r"triton_poi_fused__to_copy_\d+", tr.name(int(i)))
    ]
    # the forward's and the loss's weight casts to bf16 (transposed on the way: ``_to_copy_t_<n>``)
    casts = [n for n in names if re.fullmatch(r"triton_poi_fused__to_copy_t_\d+", n)]
    return {
        "weight_casts": len(casts) + len(grad_casts),
        "grad_casts": len(grad_casts),
        "attn_names": tuple(sorted({n for n in names if kernel_class(n) == "attention"})),
        "attn_ms": float(tr.dur_ns[np.array(attention, dtype=np.int64)].sum()) / 1e6,
        "kernels": step.kernels,
        "triton": sum(n.startswith("triton_") for n in names),
        "triton_kinds": len({n for n in names if n.startswith("triton_")}),
    }


def attention_facts(tr: Trace) -> Facts:
    """The attention kernels' GPU time in one step, and whether they are flex attention's
    Triton templates (``triton_tem_fused_flex_attention...``)."""
    k = tr.where(kind=Kind.KERNEL)
    rows = [int(i) for i in k if kernel_class(tr.name(int(i))) == "attention"]
    claim(all("flex_attention" in tr.name(i) for i in rows), "flex attention's kernels only")
    return {"attn_ms": float(tr.dur_ns[np.array(rows, dtype=np.int64)].sum()) / 1e6}


def grad_cast_window(tr: Trace, us: float) -> tuple[int, int, int]:
    """A window of ``us`` on the GPU around the backward's first kernel that only casts a
    weight's gradient to fp32 (``triton_poi_fused__to_copy_<n>``), and that kernel's row."""
    (b,) = tr.regions("backward")
    k = _kernels(tr, _gpu_ops_launched_in(tr, b.start_ns, b.end_ns))
    casts = [int(i) for i in k if re.fullmatch(r"triton_poi_fused__to_copy_\d+", tr.name(int(i)))]
    claim(len(casts) > 0, "the backward casts weights' gradients")
    first = min(casts, key=lambda i: int(tr.ts_ns[i]))
    start = int(tr.ts_ns[first]) - 200_000
    return start, start + int(us * 1e3), first


def kernel_class(name: str) -> str:
    """GEMM (cuBLAS's nvjet, cuBLASLt), attention (cuDNN's or Flash's SDPA), Triton, AdamW, other."""
    low = name.lower()
    if name.startswith("nvjet") or "gemm" in low or "cublaslt" in low:
        return "GEMM"
    if (
        "sdpa" in low
        or "flash" in low
        or "fmha" in low
        or "cudnn" in low
        or "flex_attention" in low
    ):
        return "attention"
    if name.startswith("triton_"):
        return "Triton"
    if "multi_tensor_apply" in name:
        return "AdamW"
    return "other"


def account(tr: Trace, path: str, seq: int) -> Facts:
    """Section 7: GPU time per kernel class, the GEMMs' achieved TFLOP/s from the input shapes
    of ``aten::mm`` (record_shapes), attention's from the work a causal kernel does (half of
    the 12 x layers x hidden x ``seq`` FLOPs per token that the MFU counts), the GPU's idle
    time, the tied output projection's share of the GEMMs' work."""
    (step,) = step_times(tr)
    k = tr.where(kind=Kind.KERNEL)
    total = float(tr.dur_ns[k].sum())
    per = class_ns(tr)
    attention = {tr.name(int(i)) for i in k if kernel_class(tr.name(int(i))) == "attention"}
    claim(all("cudnn" in n for n in attention), "the attention kernels are cuDNN's")
    flops = head = 0.0
    for e in raw_events(path):
        if e.get("name") == "aten::mm" and e.get("ph") == "X":
            (m, kk), (_, n) = e["args"]["Input Dims"][:2]
            f = 2.0 * m * kk * n
            flops += f
            head += f if 128256 in (m, kk, n) else 0.0
    step_ns = step.end_ns - step.start_ns
    gemm_s = per["GEMM"] / 1e9
    tokens = head / (2 * 3 * HIDDEN * 128256)  # the head's three GEMMs: forward, two backward
    claim(tokens == int(tokens), "the output projection's GEMMs give the tokens per step")
    causal = 6 * LAYERS * HIDDEN * seq * tokens
    out = {f"pct_{c}": 100 * per[c] / total for c in KERNEL_CLASSES}
    out |= {f"ms_{c}": per[c] / 1e6 for c in KERNEL_CLASSES}
    return {
        **out,
        "attn_tflops": causal / (per["attention"] / 1e9) / 1e12,
        "gemm_tflops": flops / gemm_s / 1e12,
        "gemm_pct_of_spec": 100 * flops / gemm_s / SPEC_FLOPS,
        "idle_pct": 100 * (1 - step.gpu_busy_us * 1e3 / step_ns),
        "head_pct": 100 * head / flops,
        "kernels": step.kernels,
    }


def class_ns(tr: Trace, classify: Callable[[str], str] = kernel_class) -> dict[str, float]:
    """GPU time of a trace's kernels, ns, summed by class (``classify`` of each kernel's name;
    every class in :data:`KERNEL_CLASSES` present, at 0 if it launched nothing)."""
    per: dict[str, float] = dict.fromkeys(KERNEL_CLASSES, 0.0)
    for i in tr.where(kind=Kind.KERNEL):
        c = classify(tr.name(int(i)))
        per[c] = per.get(c, 0.0) + float(tr.dur_ns[i])
    return per


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def mfu(results: dict[str, Any], timings: dict[str, Any]) -> float:
    """MFU as nanoGPT and llm-foundry (``mpt_get_active_params``) count it: 6 FLOPs per
    token for every parameter (the tied embedding table once, as the output projection, a
    real matrix product) and attention in full, 12 x layers x hidden x seq. The example's
    ``mfu_spec`` leaves the table out: 6 x (params - embedding) + attention, checked here."""
    attention = 12 * LAYERS * HIDDEN * timings["seq"]
    strict = 6 * (timings["params"] - timings["embedding_params"]) + attention
    claim(strict == timings["flops_per_token"], "mfu_spec counts 6 x non-embedding + attention")
    return float(results["tokens_per_s"] * (6 * timings["params"] + attention) / SPEC_FLOPS)


def mfu_half(results: dict[str, Any], timings: dict[str, Any]) -> float:
    """MFU with causal attention counted half, as Megatron-LM's
    ``num_floating_point_operations`` counts it: every parameter (the tied table once, as
    the output projection) and attention's unmasked half, 6 x layers x hidden x seq FLOPs
    per token, about what a causal kernel computes. Still a model-FLOPs count:
    recomputation, element-wise work and norms are not in it."""
    work = 6 * timings["params"] + 6 * LAYERS * HIDDEN * timings["seq"]
    return float(results["tokens_per_s"] * work / SPEC_FLOPS)


def bf16_gap(x: float) -> float:
    """The gap between neighbouring bf16 values at ``x``: 8 significant bits, 7 stored."""
    return float(2.0 ** (math.floor(math.log2(abs(x))) - 7))


def credit_pct(seq: int, params: int) -> float:
    """The attention work the MFU credits but a causal kernel skips (the masked half,
    6 x layers x hidden x seq FLOPs per token), in % of the work done."""
    skipped = 6 * LAYERS * HIDDEN * seq
    return 100 * skipped / (6 * params + skipped)


#: The precision column: the variant's ``weights`` setting (the example's default fp32).
PRECISION = {
    "fp32": "fp32 (bf16 autocast)",
    "bf16": "bf16 (no fp32 copy)",
}


def results_row(
    results: Sequence[dict[str, Any]], timings: Sequence[dict[str, Any]], weights: str = "fp32"
) -> dict[str, Any]:
    """The medians over repeats of a variant's headline results, the step's min and max,
    and each MFU count's lowest and highest repeat; ``weights`` names its precision."""
    counts = {
        "mfu": [mfu(r, t) for r, t in zip(results, timings, strict=True)],
        "mfu_half": [mfu_half(r, t) for r, t in zip(results, timings, strict=True)],
        "mfu_spec": [float(r["mfu_spec"]) for r in results],
    }
    claim(len({(t["batch"], t["seq"]) for t in timings}) == 1, "one shape per variant")
    return {
        "batch": timings[0]["batch"],
        "seq": timings[0]["seq"],
        "precision": PRECISION[weights],
        **{k: median(v) for k, v in counts.items()},
        **{f"{k}_min": min(v) for k, v in counts.items()},
        **{f"{k}_max": max(v) for k, v in counts.items()},
        "tokens_per_s": median([r["tokens_per_s"] for r in results]),
        "tokens_min": min(r["tokens_per_s"] for r in results),
        "tokens_max": max(r["tokens_per_s"] for r in results),
        "step_ms": median([r["step_ms"] for r in results]),
        "step_ms_min": min(r["step_ms_min"] for r in results),
        "step_ms_max": max(r["step_ms_max"] for r in results),
        "peak_gib": median([r["peak_gib"] for r in results]),
        "first_step_s": median([r["first_step_s"] for r in results]),
    }


def results_table(
    rows: dict[str, dict[str, Any]], beside: tuple[str, dict[str, dict[str, Any]]] | None = None
) -> str:
    """A Markdown table of every variant's results (medians; the step's range over all
    repeats); ``beside``: another GPU's rows, whose tokens/s and MFU follow as two columns."""
    more = f" {beside[0]} tokens/s | {beside[0]} MFU |" if beside else ""
    lines = [
        "| variant | sequences x tokens | weights and AdamW moments | tokens/s | step ms (median, min-max) "
        "| MFU | MFU, causal attention counted half | peak GiB |" + more,
        "|---|--:|---|--:|--:|--:|--:|--:|" + "--:|--:|" * bool(beside),
    ]
    for name, r in rows.items():
        o = beside[1][name] if beside else None
        extra = f" {o['tokens_per_s']:,.0f} | {o['mfu']:.3f} |" if o else ""
        lines.append(f"| `{name}` | {r['batch']:.0f} x {r['seq']:,.0f} | {r['precision']} | {r['tokens_per_s']:,.0f} "
                     f"| {r['step_ms']:.1f} ({r['step_ms_min']:.1f}-{r['step_ms_max']:.1f}) | {r['mfu']:.3f} "
                     f"| {r['mfu_half']:.3f} | {r['peak_gib']:.1f} |" + extra)  # fmt: skip
    return "\n".join(lines)


def repeat_row(eager: Trace, accounts: dict[str, Facts]) -> dict[str, float]:
    """One repeat's trace counts for the evidence table: the eager step's, then each
    compiled variant's ``account``."""
    s = step_facts(eager)
    row = {
        "eager kernels": s["step_kernels"],
        "eager GPU busy %": s["gpu_busy_pct"],
        "eager item() ms": s["item_ms"],
    }
    for name, a in accounts.items():
        row |= {
            f"{name} kernels": a["kernels"],
            f"{name} GEMM %": a["pct_GEMM"],
            f"{name} attention %": a["pct_attention"],
            f"{name} GEMM TFLOP/s": a["gemm_tflops"],
            f"{name} attention TFLOP/s": a["attn_tflops"],
            f"{name} idle %": a["idle_pct"],
        }
    return row


def repeats_table(rows: Sequence[dict[str, float]]) -> str:
    """A Markdown table, one column per repeat, one row per measure."""
    head = "| measure | " + " | ".join(f"r{k}" for k in range(len(rows))) + " |"
    lines = [head, "|---|" + "--:|" * len(rows)]
    for key in rows[0]:
        cells = (f"{r[key]:,.0f}" if float(r[key]).is_integer() else f"{r[key]:,.1f}" for r in rows)
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def overlap(
    a: dict[str, float], b: dict[str, float], per_a: float = 1.0, per_b: float = 1.0
) -> bool:
    """Whether two variants' step ranges overlap, each divided by its ``per`` (batch ratio)."""
    return (
        a["step_ms_min"] / per_a <= b["step_ms_max"] / per_b
        and b["step_ms_min"] / per_b <= a["step_ms_max"] / per_a
    )


def check_attempts(r: dict[str, dict[str, Any]]) -> None:
    """Section 7's claims on the results rows (each over every repeat: min and max)."""
    claim(r["eager"]["mfu_max"] < r["compile"]["mfu_min"] and not overlap(r["eager"], r["compile"])
          and words.beyond_spread([r["compile"]["mfu_min"], r["compile"]["mfu_max"]],
                                  [r["eager"]["mfu_min"], r["eager"]["mfu_max"]]),
          "compiling the baseline raises its MFU beyond the spread")  # fmt: skip
    claim(
        r["compile"]["mfu_max"] < r["compile_b8_bf16"]["mfu_min"],
        "batch 8 and bf16 weights raise it",
    )
    claim(not overlap(r["compile_b8_bf16"], r["causal"]), "causal attention beats the spread")
    claim(
        r["compile"]["peak_gib"] < r["eager"]["peak_gib"] - 10,
        "compiled, the peak falls by >10 GiB",
    )
    claim(all(r[v]["mfu_max"] < r["causal"]["mfu_min"] for v in ("causal_chunked", "causal_flex")),
          "the chunked loss and flex attention are slower")  # fmt: skip
    claim(
        r["causal_chunked"]["peak_gib"] >= r["causal"]["peak_gib"],
        "the chunked loss saves no memory",
    )
    for a, b in (("causal", "causal_s4096"), ("causal_s4096", "final")):
        claim(r[a]["mfu_max"] < r[b]["mfu_min"], "longer sequences raise the MFU")
        claim(r[b]["mfu_half_max"] < r[a]["mfu_half_min"], "... and lower it counted half")
        claim(r[b]["tokens_max"] < r[a]["tokens_min"], "... and the tokens per second")
    claim(
        r["causal"]["mfu_min"] > 0.5 and r["causal"]["precision"] == PRECISION["bf16"],
        "causal passes 0.50 in every repeat, with bf16 weights and moments",
    )
    claim(r["final"]["mfu"] > max(r[v]["mfu"] for v in ATTEMPTS if v != "final")
          and r["final"]["seq"] > r["causal"]["seq"]
          and r["final"]["batch"] * r["final"]["seq"] == r["causal"]["batch"] * r["causal"]["seq"],
          "final's longer sequences, at causal's tokens a step, give the table's highest MFU")  # fmt: skip
    claim(r["causal"]["mfu_half_min"] > r["final"]["mfu_half_max"],
          "counted half, causal leads final")  # fmt: skip
    fp32 = [v for v in ATTEMPTS if r[v]["precision"] == PRECISION["fp32"]]
    after = ATTEMPTS[ATTEMPTS.index("compile") + 1 :]
    claim(r["compile"]["mfu_min"] > max(r[v]["mfu_max"] for v in fp32 if v != "compile")
          and all(r[v]["precision"] == PRECISION["bf16"] for v in after),
          "compile is the fastest with fp32 weights; every variant after it keeps bf16 weights")  # fmt: skip
    claim(r["compile"]["mfu_max"] < 0.5, "with fp32 weights no variant reaches 0.50")


def linear_roles(path: str, params: int) -> dict[str, float]:
    """GiB alive at the snapshot's peak that ``nn.Linear`` (linear.py) allocated, by role.
    One call of a Linear under autocast allocates, in this order, the bf16 copy of its
    weight, the bf16 copy of its input where the input is fp32, and its output: a run of
    2 or 3 allocations with the same Python stack, the output last."""
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    role: dict[int, str] = {}
    runs: list[list[dict[str, Any]]] = []
    previous = None
    for e in snapshot["device_traces"][0]:
        if e["action"] != "alloc":
            continue
        stack = tuple((fr["filename"], fr["line"]) for fr in e["frames"])
        key = stack if stack and stack[0][0].endswith("linear.py") else None
        if key is not None and key == previous:
            runs[-1].append(e)
        elif key is not None:
            runs.append([e])
        previous = key
    claim(all(len(r) in (2, 3) for r in runs), "each Linear call allocates 2 or 3 blocks")
    for run in runs:
        names = ("weight", "input", "output") if len(run) == 3 else ("weight", "output")
        role.update({id(e): r for e, r in zip(run, names, strict=True)})
    weights = sum(e["size"] for run in runs for e in run if role[id(e)] == "weight")
    linear_weights = params - (2 * LAYERS + 1) * HIDDEN  # all but the RMSNorm weights
    claim(weights == 2 * linear_weights, "one bf16 copy of every Linear weight, the head's too")
    _, alive = _alive_at_peak(snapshot)
    out = dict.fromkeys(("weight", "input", "output"), 0.0)
    for e in alive:
        if id(e) in role:
            out[role[id(e)]] += e["size"] / 2**30
    claim(out["weight"] == weights / 2**30, "every weight copy is alive at the peak")
    return out
