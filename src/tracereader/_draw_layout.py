"""What a timeline picture shows, decided without matplotlib.

:mod:`tracereader._draw` paints; this module only *selects*: which events
overlap the window, which row each goes on (CPU threads with nested ops
stacked by depth, then one row per GPU stream), which colour class each bar
gets, how sub-pixel bars coalesce, and how long kernel names are shortened.
Nothing here measures anything: launch links and idle gaps come from
:mod:`tracereader._link` and :mod:`tracereader._gaps`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._events import GPU_OP_KINDS, Kind, Lane, Trace
from ._link import LAUNCH_APIS, SYNC_APIS
from ._names import split_args

__all__ = [
    "CLASSES",
    "Row",
    "classify",
    "layout_rows",
    "merge_bars",
    "place_callout",
    "select",
    "short_name",
    "stack_levels",
]

#: Bar classes in legend order: (key, legend label, colour).
CLASSES: tuple[tuple[str, str, str], ...] = (
    ("annotation", "step / user annotation", "#c9c3e6"),
    ("op", "aten / CPU op", "#6baed6"),
    ("python", "Python frame", "#e0d3a8"),
    ("launch", "launch call (cudaLaunchKernel, cuLaunchKernel...)", "#fd8d3c"),
    ("sync", "synchronize call", "#d62728"),
    ("runtime", "other runtime call", "#a3a3a3"),
    ("kernel", "kernel", "#31a354"),
    ("copy", "memcpy", "#8c6bb1"),
    ("set", "memset", "#a6761d"),
    ("gpu_annotation", "GPU annotation", "#c7e9c0"),
)
CLASS_INDEX = {key: i for i, (key, _, _) in enumerate(CLASSES)}

FONT_PT = 7.0  # bar labels
CALLOUT_PT = 8.0
CHAR_IN = 0.56 * FONT_PT / 72  # average glyph width of the label font, in inches
PX_PER_IN = 144  # merge resolution: finer than any page shows the picture

_CPU_DRAWN = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.DRIVER)


@dataclass(frozen=True)
class Row:
    """One horizontal strip of the picture.

    ``depth`` is the nesting depth on a CPU thread (0 = outermost); GPU rows
    use ``depth = 0`` and ``annotations`` tells the GPU-annotation strip apart
    from the stream's own ops.
    """

    lane: Lane
    depth: int
    annotations: bool = False

    @property
    def is_gpu(self) -> bool:
        return self.lane.is_gpu

    @property
    def lane_label(self) -> str:
        label = self.lane.label
        if self.lane.is_gpu:
            return label + (" annotations" if self.annotations else "")
        return label if label.lower().startswith("cpu") else f"CPU {label}"


def select(
    trace: Trace, start_ns: int, end_ns: int, *, python: bool, gpu_annotations: bool
) -> np.ndarray:
    """Rows of the events to draw: those overlapping ``[start_ns, end_ns)``.

    CPU ops, annotations and runtime/driver calls always; Python frames only
    with ``python``; kernels, copies and sets; GPU annotations only with
    ``gpu_annotations``. Profiler overhead, sync records and the ``Trace``
    span are never drawn.
    """
    kinds = list(_CPU_DRAWN) + list(GPU_OP_KINDS)
    if python:
        kinds.append(Kind.PYTHON)
    if gpu_annotations:
        kinds.append(Kind.GPU_ANNOTATION)
    want = np.isin(trace.kind, np.array([int(k) for k in kinds], dtype=trace.kind.dtype))
    ts, end = trace.ts_ns, trace.ts_ns + trace.dur_ns
    # zero-length events count when they sit inside the window
    overlap = (ts < end_ns) & ((end > start_ns) | ((trace.dur_ns == 0) & (ts >= start_ns)))
    return np.flatnonzero(want & overlap)


def layout_rows(trace: Trace, idx: np.ndarray) -> tuple[list[Row], np.ndarray]:
    """Assign each selected event to a row.

    CPU lanes come first (the thread running ``ProfilerStep`` spans, then
    the others by their first event in the window), each as many rows deep
    as its deepest nesting in the window; GPU lanes follow, sorted by device
    and stream. Depth is found with a per-thread interval stack over events in
    start order (the trace is sorted by start, longer first on ties, so a
    parent always comes before its children).

    Returns
    -------
    rows : list of Row
    row_of : int array, one entry per element of ``idx``
    """
    depth = np.zeros(len(idx), dtype=np.int64)
    lanes = trace.lane[idx]
    is_gpu_lane = np.array([ln.is_gpu for ln in trace.lanes], dtype=bool)
    cpu = ~is_gpu_lane[lanes] if len(idx) else np.zeros(0, dtype=bool)
    stacks: dict[int, list[int]] = {}
    ts, end = trace.ts_ns[idx], trace.ts_ns[idx] + trace.dur_ns[idx]
    for j in np.flatnonzero(cpu).tolist():
        stack = stacks.setdefault(int(lanes[j]), [])
        t = ts[j]
        while stack and stack[-1] <= t:
            stack.pop()
        depth[j] = len(stack)
        stack.append(max(end[j], t + 1))
    ann = trace.kind[idx] == int(Kind.GPU_ANNOTATION)

    keys: dict[tuple[int, int, bool], int] = {}
    # The thread that runs the profiler steps first (then by first event in
    # the window); GPU streams after, by device and stream.
    steps = np.array(
        [trace.names[k].startswith("ProfilerStep#") for k in trace.name_id[idx]], dtype=bool
    ) & (trace.kind[idx] == int(Kind.USER_ANNOTATION))
    step_lanes = {int(x) for x in lanes[steps]}
    first_ts = {int(li): int(ts[np.argmax(lanes == li)]) for li in np.unique(lanes)}
    used_lanes = sorted(
        first_ts,
        key=lambda i: (
            trace.lanes[i].is_gpu,
            _gpu_order(trace.lanes[i]),
            i not in step_lanes,
            first_ts[i],
        ),
    )
    rows: list[Row] = []
    for li in used_lanes:
        lane = trace.lanes[li]
        mask = lanes == li
        if lane.is_gpu:
            variants = [True] if ann[mask].any() else []
            variants += [False] if (~ann[mask]).any() else []
            for a in variants:
                keys[(li, 0, a)] = len(rows)
                rows.append(Row(lane, 0, a))
        else:
            for d in range(int(depth[mask].max()) + 1):
                keys[(li, d, False)] = len(rows)
                rows.append(Row(lane, d))
    row_of = np.array(
        [keys[(int(li), int(d), bool(a))] for li, d, a in zip(lanes, depth, ann, strict=True)],
        dtype=np.int64,
    )
    return rows, row_of


def _gpu_order(lane: Lane) -> tuple[int, int]:
    if not lane.is_gpu:
        return (0, 0)
    try:
        return (lane.device, lane.stream)
    except (TypeError, ValueError):
        return (1 << 30, 1 << 30)


def classify(trace: Trace, idx: np.ndarray, launched: np.ndarray) -> np.ndarray:
    """Colour class (index into :data:`CLASSES`) of each selected event.

    ``launched`` is a boolean mask over *all* events: runtime/driver calls the
    linker found launching at least one GPU op. A call is a *sync* when its
    name is one of the linker's :data:`~tracereader._link.SYNC_APIS`, a
    *launch* when it launched something or is named like one of
    :data:`~tracereader._link.LAUNCH_APIS` (kernel and graph launches, memcpy,
    memset), else *other runtime*.
    """
    kinds = trace.kind[idx]
    out = np.full(len(idx), CLASS_INDEX["runtime"], dtype=np.int64)
    simple = {
        Kind.USER_ANNOTATION: "annotation",
        Kind.CPU_OP: "op",
        Kind.PYTHON: "python",
        Kind.KERNEL: "kernel",
        Kind.MEMCPY: "copy",
        Kind.MEMSET: "set",
        Kind.GPU_ANNOTATION: "gpu_annotation",
    }
    for kind, key in simple.items():
        out[kinds == int(kind)] = CLASS_INDEX[key]
    calls = np.flatnonzero((kinds == int(Kind.RUNTIME)) | (kinds == int(Kind.DRIVER)))
    if len(calls):
        ids = trace.name_id[idx[calls]]
        uniq, inv = np.unique(ids, return_inverse=True)
        sync = np.array([trace.names[i].startswith(SYNC_APIS) for i in uniq], dtype=bool)[inv]
        named = np.array([trace.names[i].startswith(LAUNCH_APIS) for i in uniq], dtype=bool)
        launch = named[inv] | launched[idx[calls]]
        out[calls[launch]] = CLASS_INDEX["launch"]
        out[calls[sync]] = CLASS_INDEX["sync"]
    return out


def merge_bars(
    start_ns: np.ndarray, end_ns: np.ndarray, row: np.ndarray, cls: np.ndarray, px_ns: float
) -> dict[str, np.ndarray]:
    """Coalesce sub-pixel bars so a dense window draws in bounded time.

    Within one (row, class), consecutive bars narrower than one pixel join
    while the space between them is under one pixel too. Bars a pixel wide
    or more are never merged, so every visible event keeps its own edges.

    Returns
    -------
    dict of arrays ``start_ns``, ``end_ns``, ``row``, ``cls``, ``count``
    (events per bar) and ``first`` (position of the first merged event in
    the inputs).
    """
    n = len(start_ns)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return {k: empty for k in ("start_ns", "end_ns", "row", "cls", "count", "first")}
    order = np.lexsort((start_ns, cls, row))
    s, e, r, c = start_ns[order], end_ns[order], row[order], cls[order]
    group_start = np.ones(n, dtype=bool)
    group_start[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    # running end of everything so far in the same (row, class) group
    reach = e.copy()
    bounds = np.flatnonzero(group_start).tolist() + [n]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        reach[a:b] = np.maximum.accumulate(e[a:b])
    narrow = (e - s) < px_ns
    new = group_start.copy()
    new[1:] |= (s[1:] - reach[:-1] >= px_ns) | ~narrow[1:] | ~narrow[:-1]
    heads = np.flatnonzero(new)
    return {
        "start_ns": s[heads],
        "end_ns": np.maximum.reduceat(e, heads),
        "row": r[heads],
        "cls": c[heads],
        "count": np.diff(np.append(heads, n)),
        "first": order[heads],
    }


_GENERIC = {"Kernel", "Kernel2", "kernel", "device_kernel", "GenericKernel"}
_LITERAL = re.compile(r"-?\d+[uUlL]*|true|false")
_FUNCTOR_HOSTS = {
    "elementwise_kernel",
    "vectorized_elementwise_kernel",
    "unrolled_elementwise_kernel",
    "index_elementwise_kernel",
    "reduce_kernel",
}
_FUNCTOR = re.compile(r"\b(\w*[Ff]unctor\w*)|\b(?!operator\b)(\w+)\(")


def short_name(name: str, kind: int | None = None) -> str:
    """A readable label for a long C++ kernel name.

    Strips ``void``, the argument list, template arguments and namespaces:
    ``void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,
    std::array<char*, 3ul> >(int, ...)`` becomes
    ``vectorized_elementwise_kernel<CUDAFunctor_add>`` (PyTorch's generic
    elementwise and reduce kernels keep the functor that says what they do),
    and a generic wrapper such as
    ``cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>`` becomes its
    template argument. When ``kind`` is given and is not :attr:`Kind.KERNEL`
    (CPU ops, copies), or the name has no C++ decoration (Triton, cuBLAS
    ``sm90_xmma_*``), the name comes back unchanged.
    """
    if kind is not None and kind != int(Kind.KERNEL):
        return name
    text = name.strip().replace("(anonymous namespace)::", "")
    if text.startswith("void "):
        text = text[5:]
    if "<" not in text and "::" not in text and "(" not in text:
        return text
    base, args = split_args(_strip_call(text))
    base = base.rsplit("::", 1)[-1].strip()
    if args and base in _GENERIC:
        first = next((a for a in args if not _LITERAL.fullmatch(a)), "")
        inner = split_args(first)[0].rsplit("::", 1)[-1].strip()
        if re.fullmatch(r"\w+", inner):
            return inner
    if args and base in _FUNCTOR_HOSTS:
        found = _FUNCTOR.search(", ".join(args))
        if found:
            return f"{base}<{found.group(1) or found.group(2)}>"
    return base or name


def _strip_call(text: str) -> str:
    """Drop a trailing top-level ``(...)`` argument list."""
    depth_angle = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth_angle += 1
        elif ch == ">":
            depth_angle -= 1
        elif ch == "(" and depth_angle <= 0:
            return text[:i]
    return text


def place_callout(
    trace: Trace,
    idx: np.ndarray,
    c: Any,
    start_ns: int,
    end_ns: int,
    px_ns: float,
) -> dict[str, Any]:
    """Resolve a callout's event and the span its text box takes (level set later).

    The box is centred over the pointed-at time and kept inside the window;
    its width is estimated from the text length at :data:`CALLOUT_PT`.
    """
    j = _callout_target(trace, idx, c)
    ev = int(idx[j])
    t0 = int(np.clip(trace.ts_ns[ev], start_ns, end_ns))
    t1 = int(np.clip(trace.ts_ns[ev] + trace.dur_ns[ev], start_ns, end_ns))
    t = {"start": t0, "mid": (t0 + t1) // 2, "end": t1}.get(c.at, t0)
    width = (len(c.text) + 2) * CHAR_IN * CALLOUT_PT / FONT_PT * px_ns * PX_PER_IN
    width = min(width, end_ns - start_ns)
    x0 = min(max(t - width / 2, start_ns), end_ns - width)
    return {"callout": c, "pos": j, "t_ns": t, "box": (x0, x0 + width), "level": 0}


def stack_levels(callouts: list[dict[str, Any]]) -> None:
    """Give each callout box the lowest level (0 = nearest the lanes) where it
    does not overlap another box, left to right."""
    ends: list[float] = []
    for c in sorted(callouts, key=lambda c: c["box"][0]):
        for level, right in enumerate(ends):
            if c["box"][0] > right:
                c["level"], ends[level] = level, c["box"][1]
                break
        else:
            c["level"] = len(ends)
            ends.append(c["box"][1])


def _callout_target(trace: Trace, idx: np.ndarray, c: Any) -> int:
    """Position in ``idx`` of the event a callout names."""
    if c.event is not None:
        hit = np.flatnonzero(idx == int(c.event))
        if not len(hit):
            raise ValueError(f"callout {c.text!r}: event {c.event} is not drawn in this window")
        return int(hit[0])
    if c.name is None:
        raise ValueError(f"callout {c.text!r}: give event= or name=")
    names = [trace.names[i] for i in trace.name_id[idx]]
    hits = [j for j, n in enumerate(names) if n == c.name]
    hits = hits or [j for j, n in enumerate(names) if c.name in n]
    if not -len(hits) <= c.occurrence < len(hits):
        raise ValueError(
            f"callout {c.text!r}: {len(hits)} drawn events named {c.name!r}, "
            f"no occurrence {c.occurrence}"
        )
    return hits[c.occurrence]
