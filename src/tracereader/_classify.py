"""Kernel classes from kernel names: GEMM, attention, elementwise, reduction...

A small name-based classifier for the report's kernel view. It reads the
kernel's name only (and the GPU op's kind for memcpy and memset), so it can be
wrong for a custom kernel with an unusual name; the classes are a first guess
at where GPU time goes, not a profile of the hardware.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._comm import COMM_MARKERS
from ._events import Kind, Trace
from ._intervals import Window, launched_in
from ._link import link
from ._tables import Table

__all__ = ["KERNEL_CLASSES", "class_table", "kernel_class"]

#: Every class, in the order the report lists them.
KERNEL_CLASSES = (
    "GEMM",
    "attention",
    "communication",
    "optimizer",
    "reduction",
    "elementwise/Triton",
    "memcpy/memset",
    "other",
)

# Checked in this order: the first class whose pattern matches wins.
_PATTERNS = (
    ("elementwise/Triton", re.compile(r"embedding", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|attn|sdpa|flex_|cudnn.*mha", re.I)),
    ("optimizer", re.compile(r"multi_tensor_apply|adam|sgd|optimizer|lamb_(?!da)", re.I)),
    (
        "GEMM",
        re.compile(
            r"(?<!fb)gemm|cutlass|dgrad_engine|wgrad_alg|implicit_convolve|conv2d|cublas|matmul|nvjet|wgmma|_mm_|bmm|"
            r"triton_tem_|xmma|ampere_.*_tn|sm\d+_xmma|gemv",
            re.I,
        ),
    ),  # fmt: skip
    (
        "reduction",
        re.compile(
            r"reduce|softmax|norm|sum_|_sum|mean|argmax|topk|sort|scan|"
            r"cross_entropy|nll_loss|triton_red_|triton_per_",
            re.I,
        ),
    ),  # fmt: skip
    (
        "elementwise/Triton",
        re.compile(
            r"elementwise|vectorized|unrolled|triton_|copy|fill|"
            r"cat|index|gather|scatter|where|pointwise",
            re.I,
        ),
    ),  # fmt: skip
)


def kernel_class(name: str, kind: int = Kind.KERNEL) -> str:
    """The class of one GPU op from its name (and kind: memcpy and memset).

    Parameters
    ----------
    name
        The kernel's name as the trace writes it.
    kind
        Its :class:`~tracereader.Kind`; memcpys and memsets are ``memcpy/memset``.

    Returns
    -------
    str
        One of :data:`KERNEL_CLASSES`.
    """
    if kind in (Kind.MEMCPY, Kind.MEMSET) or name.startswith(("Memcpy ", "Memset ")):
        return "memcpy/memset"
    low = name.lower()
    if any(m in low for m in COMM_MARKERS):
        return "communication"
    for cls, pattern in _PATTERNS:
        if pattern.search(name):
            return cls
    return "other"


def class_table(trace: Trace, window: Window | None = None) -> Table:
    """GPU ops per kernel class: ops, distinct names, summed GPU time (µs) and its share.

    ``window=(start_ns, end_ns)`` keeps the GPU ops launched inside it.
    Durations are summed (overlapping streams count twice), as in
    :func:`~tracereader.kernel_table`.
    """
    rows = link(trace).gpu_ops
    if window is not None:
        rows = rows[launched_in(trace, rows, window)]
    names = trace.name_id[rows]
    cls_of_name: dict[tuple[int, int], str] = {}
    per: dict[str, list[Any]] = {c: [0, set(), 0.0] for c in KERNEL_CLASSES}
    dur = trace.dur_ns[rows] / 1e3
    for n, k, d in zip(names.tolist(), trace.kind[rows].tolist(), dur.tolist(), strict=True):
        c = cls_of_name.get((n, k))
        if c is None:
            c = cls_of_name[(n, k)] = kernel_class(trace.names[n], k)
        per[c][0] += 1
        per[c][1].add(n)
        per[c][2] += d
    total = float(np.sum(dur))
    out = [
        [c, v[0], len(v[1]), v[2], 100 * v[2] / total if total else 0.0]
        for c, v in per.items()
        if v[0]
    ]
    out.sort(key=lambda r: -r[3])
    cols = ["class", "gpu_ops", "names", "total_us", "pct"]
    return Table(cols, out, "GPU time per kernel class (from kernel names)", name_columns=())
