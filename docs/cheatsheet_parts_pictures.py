"""The cheatsheet's pictures (``cheatsheet.md``: Parts 2 to 5's recordings), one function per
entry, drawn as :mod:`cheatsheet_pictures` draws the matmul details' (``cheatsheet-matmul.md``):
from the drawn repeat, picking the events the entry's facts pick
(``docs/facts/_cheatsheet_parts.py``), each with a callout on what its entry points at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from _cheatsheet_common import in_step, one, rec
from _cheatsheet_parts import attention_kernels, fused_kernel
from cheatsheet_pictures import (
    TRAIN_COLORS,
    TRAIN_WIDTH_IN,
    WIDTH_IN,
    SmallFigure,
    around,
    around_call,
    drawn,
    picture,
    win,
)
from matplotlib.patches import Rectangle
from tracesite.facts import claim

from tracereader import Callout, Kind, link, timeline


def launched_in_last_step(t: Any, **where: Any) -> int:
    """The one GPU op matching ``where`` (as ``Trace.where`` takes it) that a call in the
    last step launched."""
    ln, last = link(t), t.steps[-1].name
    return one(
        [
            int(i)
            for i in t.where(**where)
            if ln.launch[i] >= 0 and (s := ln.step_of(int(i))) is not None and s.name == last
        ]
    )


def bias() -> Callable[[], SmallFigure]:
    """Entry: `bias` in a GEMM kernel's name, and no add kernel."""
    t = rec("small", "02_linear").trace()
    caption = "Recording 02_linear small, the last step: one addmm, one launch, one kernel."
    return around_call("bias", t, t.steps[-1].name, "aten::addmm", 6, caption)


def views() -> Callable[[], SmallFigure]:
    """Entry: Ops with zero CUDA time."""
    t = rec("eager", "03_mlp").trace()
    lin = int(in_step(t, t.steps[-1].name, name="aten::linear")[-1])
    fig = timeline(
        t,
        around=lin,
        pad_us=3,
        arrows=False,
        callouts=[Callout("aten::t: a view", name="aten::t")],
        width_in=WIDTH_IN,
    )
    return lambda: picture(
        "views", fig, "Recording 03_mlp eager, the down projection's aten::linear in the last step."
    )


def fused() -> Callable[[], SmallFigure]:
    """Entry: A `triton_poi_fused_…` kernel where two pointwise kernels were."""
    tc = rec("compile", "03_mlp").trace()
    k = launched_in_last_step(tc, kind=Kind.KERNEL, name=fused_kernel(tc))
    caption = "Recording 03_mlp compile, around the fused kernel of the last step."
    return around("fused", tc, k, 60, "fused gelu * mul", caption)


def graph() -> Callable[[], SmallFigure]:
    """Entry: No `aten::mm` row under `mode='reduce-overhead'`."""
    r = rec("reduce_overhead", "03_mlp")
    t = r.trace()
    g = t.where(name="cudaGraphLaunch")
    caption = (
        "Recording 03_mlp reduce_overhead, the last step: the input copy, then one graph launch."
    )
    callout = Callout("one cudaGraphLaunch", event=int(g[-1]))
    return drawn("graph", caption, t, callout, step=t.steps[-1].name)


def att_copy() -> Callable[[], SmallFigure]:
    """Entry: A `Memcpy DtoD` before the mask in hand-written attention."""
    t = rec("naive", "04_attention").trace()
    c = launched_in_last_step(t, kind=Kind.MEMCPY)
    caption = "Recording 04_attention naive, the last step: the score matrix copied, then masked."
    return around("att_copy", t, c, 150, "Memcpy DtoD: the clone", caption)


def att_cudnn() -> Callable[[], SmallFigure]:
    """Entry: An `aten::_scaled_dot_product_cudnn_attention` you did not ask for."""
    r = rec("sdpa_default", "04_attention")
    t = r.trace()
    k_last = one(in_step(t, t.steps[-1].name, kind=Kind.KERNEL))
    caption = (
        "Recording 04_attention sdpa_default, the last step: one op chain, one launch, one kernel."
    )
    return around("att_cudnn", t, k_last, 40, "cuDNN's fused kernel", caption,
                  title="sdpa_default: around the cuDNN kernel")  # fmt: skip


def att_occupancy() -> Callable[[], SmallFigure]:
    """Entry: 0 % occupancy on the fastest attention kernel."""
    # Every distinct large kernel of the attention recordings: shared memory per block against
    # the occupancy the trace reports. Over 48 KB reads 0; under it, a value.
    from matplotlib.figure import Figure

    pts = attention_kernels()
    fig = Figure(figsize=(WIDTH_IN, 2.4))
    ax = fig.subplots()
    for kb, o in pts.values():
        ax.plot(kb, o, "o", color="C3" if o == 0 else "C0")
    ax.axvline(48, color="k", lw=1, ls="--")
    ax.text(49, ax.get_ylim()[1] * 0.9, "48 KB", fontsize=9, va="top")
    kb0 = max(kb for kb, o in pts.values() if o == 0)  # the callout: the largest 0 % kernel
    ax.annotate("over 48 KB: reads 0 %", xy=(kb0, 0), xytext=(-150, 40), textcoords="offset points",
                fontsize=9, arrowprops={"arrowstyle": "->", "color": "C3"})  # fmt: skip
    ax.set_xlabel("shared memory per block (KB)")
    ax.set_ylabel("reported occupancy (%)")
    n0 = sum(o == 0 for _, o in pts.values())
    fig.tracereader_alt = (  # type: ignore[attr-defined]
        f"Scatter of {len(pts)} attention-recording kernels: the {n0} with more than "
        f"48 KB of shared memory per block all report 0 % occupancy, the others a value."
    )
    return lambda: picture(
        "att_occupancy",
        fig,
        "Recordings 04_attention: every kernel over 10 µs, by shared memory per block.",
    )


def att_cudnn_self() -> Callable[[], SmallFigure]:
    """Entry: A fused attention op that is mostly self time."""
    r_il = rec("interleaved_backends", "04_attention")
    t = r_il.trace()
    spans = t.where(name="cudnn", kind=Kind.USER_ANNOTATION)
    span = int(spans[len(spans) // 2])
    op = one(
        t.where(
            name="aten::_cudnn_attention_forward",
            kind=Kind.CPU_OP,
            within=(t.ts_ns[span], t.ts_ns[span] + t.dur_ns[span]),
        )
    )
    caption = "Recording 04_attention interleaved_backends: one cuDNN call under the profiler."
    callout = Callout("_cudnn_attention_forward: mostly self time", event=op)
    return drawn("att_cudnn_self", caption, t, callout, window=win(t, [span], pad_us=3), gaps=False)


def llm_eager() -> Callable[[], SmallFigure]:
    """Entry: Hundreds of short kernels per token, and the GPU lane mostly empty."""
    t = rec("generate_dynamic_1b", "05_llm_decode").trace()
    s1 = t.step("ProfilerStep#2")
    mid = (s1.start_ns + s1.end_ns) // 2
    k = int(t.where(kind=Kind.KERNEL, within=(mid, mid + 1_000_000))[0])
    caption = "Recording 05_llm_decode generate_dynamic_1b: one millisecond in the middle of decode step 2."
    callout = Callout("one short kernel, then idle", event=k)
    return drawn("llm_eager", caption, t, callout, window=(mid, mid + 1_000_000), arrows=False)


def llm_graph() -> Callable[[], SmallFigure]:
    """Entry: One `cudaGraphLaunch` per token, and the GPU lane full."""
    r = rec("loop_fused_8b", "05_llm_decode")
    t = r.trace()
    ln = link(t)
    ops2 = ln.gpu_ops_of(t.step("ProfilerStep#2").event)  # the GPU work of one token
    k = int(ops2[len(ops2) // 2])
    caption = "Recording 05_llm_decode loop_fused_8b: the GPU work of one token (ProfilerStep#2)."
    callout = Callout("kernels back to back", event=k)
    return drawn("llm_graph", caption, t, callout, window=win(t, ops2, pad_us=30), arrows=False)


def llm_tuning() -> SmallFigure:
    """Entry: The same kernel, at different speeds in different runs."""
    from _cheatsheet_parts import tuning_runs
    from matplotlib.figure import Figure

    _, per_run, fixed = tuning_runs()  # the facts' own selection, read across the repeats
    fig = Figure(figsize=(WIDTH_IN, 1.8))
    ax = fig.subplots()
    slow_tuned = [u / min(v for v, _ in per_run) for u, _ in per_run]
    slow_fixed = [u / min(fixed) for u in fixed]
    ax.plot(slow_tuned, [1] * 3, "o", color="C3")
    ax.plot(slow_fixed, [0] * 3, "o", color="C0")
    ax.set_yticks([0, 1], ["fixed settings", "tuned per process"])
    ax.set_ylim(-0.6, 1.6)
    ax.set_xlabel("time per token / fastest process's (one dot per process)")
    ax.annotate("same kernel, slowest process", xy=(max(slow_tuned), 1), xytext=(-40, -30),
                textcoords="offset points", ha="right", fontsize=9,
                arrowprops={"arrowstyle": "->", "color": "C3"})  # fmt: skip
    fig.tracereader_alt = (  # type: ignore[attr-defined]
        f"Dot plot: an Inductor GEMV kernel tuned in each process runs up to "
        f"{max(slow_tuned):.2f} times as long as in its fastest process; the fixed-setting "
        f"GEMV kernels stay within {100 * (max(slow_fixed) - 1):.1f} %."
    )
    return picture(
        "llm_tuning",
        fig,
        "Recordings 05_llm_decode loop_packed_8b and loop_kernels_8b: profiler step 2 of each repeat.",
    )


def train_backward_thread() -> Callable[[], SmallFigure]:
    """Entry: A second CPU thread that only works during the backward."""
    t = rec("eager", "06_train_step").trace()
    evaluate = t.where(prefix="autograd::engine::evaluate_function: ")
    first = int(evaluate[np.argmin(t.ts_ns[evaluate])])
    start = int(t.ts_ns[first])
    caption = "Recording 06_train_step eager: the start of the backward, on a second CPU thread."
    return drawn("train_backward_thread", caption, t,
                 Callout("backward: a second CPU thread", event=first),
                 window=(start - 1_500_000, start + 1_000_000), arrows=False,
                 width_in=TRAIN_WIDTH_IN, colors=TRAIN_COLORS)  # fmt: skip


def train_data_gap() -> Callable[[], SmallFigure]:
    """Entry: The GPU lane empty under a long `enumerate(DataLoader)` span."""
    t = rec("loader_inline", "06_train_step").trace()
    (data,) = t.regions("data")
    lo = data.start_ns - 50_000
    fig = timeline(t, window=(lo, data.end_ns + 400_000), arrows=False, width_in=TRAIN_WIDTH_IN)
    # The timeline shades only gaps between two GPU ops, and no GPU op comes before this
    # window: hatch the idle GPU lane up to its first op here, as the timeline would.
    ops = link(t).gpu_ops
    claim(not (t.ts_ns[ops] < lo).any(), "no GPU op comes before the window: the GPU lane is idle")
    first = int(t.ts_ns[ops].min())
    ax = fig.axes[0]
    y = next(k for k, s in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)
             if s.get_text().startswith("GPU"))  # fmt: skip
    ax.add_patch(Rectangle((0, y - 0.5), (first - lo) / 1e6, 1, facecolor="#f4a6a6", alpha=0.5,
                           hatch="//", edgecolor="#d46a6a", lw=0, zorder=1))  # fmt: skip
    idle = f"GPU idle {(first - lo) / 1e6:.0f} ms"
    ax.text((first - lo) / 2e6, y, idle, ha="center", va="center", fontsize=9, color="#9b1c1c")
    return lambda: picture(
        "train_data_gap",
        fig,
        "Recording 06_train_step loader_inline: the data region, the DataLoader working in "
        "the training process while the GPU lane is idle (hatched).",
        f"The GPU lane is hatched: {idle}.",
        colors=TRAIN_COLORS,
    )


def train_optimizer() -> Callable[[], SmallFigure]:
    """Entry: Over a thousand kernels launched from `optimizer.step()`."""
    t = rec("eager_forloop", "06_train_step").trace()
    (region,) = t.regions("optimizer")
    launches = t.where(name="cudaLaunchKernel")
    inside = launches[t.ts_ns[launches] >= region.start_ns]
    first = int(inside[np.argmin(t.ts_ns[inside])])
    lo = int(t.ts_ns[first]) - 300_000
    caption = (
        "Recording 06_train_step eager_forloop: 2 ms of the for-loop AdamW's optimizer "
        "region on the CPU, a launch call per tensor and operation (its kernels run later, "
        "behind the backward's)."
    )
    return drawn("train_optimizer", caption, t,
                 Callout("a launch per tensor and operation", event=first),
                 window=(lo, lo + 2_000_000), arrows=False,
                 width_in=TRAIN_WIDTH_IN, colors=TRAIN_COLORS)  # fmt: skip
