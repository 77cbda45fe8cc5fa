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
    "elementwise",
    "memcpy/memset",
    "other",
)

#: Triton kernels by the kind inductor names first (``triton_poi_``: pointwise,
#: ``triton_per_`` / ``triton_red_``: persistent and looped reductions,
#: ``triton_tem_``: a template, a GEMM or flex attention). The fused ops after
#: the prefix (``..._bmm_cat_cos_...``) are what the kernel was fused *from*,
#: not what it does: a pointwise kernel is elementwise whatever it names. One
#: exception: a reduction that names a matmul op (``mm``, ``bmm``, ``addmm``) is
#: that matmul, a GEMV with a tiny M lowered to a reduction over K (decoding
#: one token), so it counts as GEMM.
_TRITON_MATMUL = {"mm", "bmm", "addmm", "baddbmm"}
_TRITON = (
    ("triton_poi_", "elementwise"),
    ("triton_per_", "reduction"),
    ("triton_red_", "reduction"),
)

# Checked in this order: the first class whose pattern matches wins.
_PATTERNS = (
    ("attention", re.compile(r"^triton_tem_.*flex_attention", re.I)),
    ("GEMM", re.compile(r"^triton_tem_", re.I)),
    ("elementwise", re.compile(r"embedding|multi_tensor_apply.*\bCopy<", re.I)),
    (
        "attention",
        re.compile(r"flash|fmha|attention|attn|sdpa|flex_|cudnn.*mha|cudnn::fusion::", re.I),
    ),
    ("optimizer", re.compile(r"multi_tensor_apply|adam|sgd|optimizer|lamb_(?!da)", re.I)),
    (
        "GEMM",
        re.compile(
            r"(?<!fb)gemm|cutlass|dgrad_engine|wgrad_alg|implicit_convolve|conv2d|cublas|matmul|nvjet|wgmma|_mm_|bmm|"
            r"xmma|ampere_.*_tn|sm\d+_xmma|gemv|^Cijk_|scudnn|winograd",
            re.I,
        ),
    ),  # fmt: skip
    (
        "reduction",
        re.compile(
            r"reduce|softmax|norm|sum_|_sum|mean|argmax|topk|sort|scan|"
            r"cross_entropy|nll_loss|NLLCriterion|GammaBeta|RowwiseMoments|cudnn::bn_",
            re.I,
        ),
    ),  # fmt: skip
    (
        "elementwise",
        re.compile(
            r"elementwise|vectorized|unrolled|copy|fill|"
            r"cat|index|gather|scatter|where|pointwise|triu_tril|nchwToNhwc|nhwcToNchw|"
            r"geglu|swiglu",
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
    for prefix, cls in _TRITON:
        if name.startswith(prefix):
            matmul = cls == "reduction" and _TRITON_MATMUL & set(name.split("_"))
            return "GEMM" if matmul else cls
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
