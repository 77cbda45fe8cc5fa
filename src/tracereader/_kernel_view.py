"""The kernel view: each top kernel's launch configuration, as the trace records it.

Kineto writes, on every kernel event, the grid and block sizes ``[x, y, z]``,
the registers per thread, the shared memory per block and CUPTI's estimate of
the achieved occupancy (``est. achieved occupancy %``). Per kernel name this
module keeps the most common launch configuration and the occupancy weighted
by duration. Tensor Core use is not in the trace: the TensorBoard plugin guessed
it from kernel names (an allowlist of name patterns); this module does not guess.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import numpy.typing as npt

from ._columns import unpack_xyz
from ._events import Kind, Trace, arg_column
from ._intervals import Window, launched_in
from ._link import link
from ._tables import Table, kernel_table

__all__ = ["OCCUPANCY_NOTE", "launch_table", "weighted_occupancy_pct"]

#: One line on what the occupancy column means.
OCCUPANCY_NOTE = (
    "est_occupancy_pct: CUPTI's estimate, at launch, of the share of an SM's warp slots "
    "the kernel's blocks keep filled (registers, shared memory and block size cap it); "
    "not measured, and a GEMM with big tiles can run well at low occupancy; 0 can mean "
    "CUPTI made no estimate. "
    "blocks_per_sm: the grid's blocks over the GPU's SMs (above 1: several waves). "
    "The trace does not record Tensor Core use: the TensorBoard plugin guessed it from "
    "kernel names (an allowlist of patterns such as hmma and xmma); this report does not "
    "guess."
)


def _common(values: npt.NDArray[np.int64]) -> int | None:
    values = values[values >= 0]
    return int(Counter(values.tolist()).most_common(1)[0][0]) if len(values) else None


def _xyz(packed: int | None) -> str:
    xyz = unpack_xyz(packed) if packed is not None else None
    return "" if xyz is None else "[{},{},{}]".format(*xyz)


def _sms(trace: Trace) -> int | None:
    for d in trace.device_properties:
        n = d.get("numSms")
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n
    return None


def _occupancy(trace: Trace, rows: npt.NDArray[np.int64]) -> float | None:
    occ = arg_column(trace, "occupancy_pct")[rows]
    dur = trace.dur_ns[rows].astype(np.float64)
    ok = (occ >= 0) & (dur > 0)
    return float(np.average(occ[ok], weights=dur[ok])) if ok.any() else None


def weighted_occupancy_pct(
    trace: Trace, window: Window | None = None
) -> tuple[float, float, float] | None:
    """Kernels' estimated occupancy weighted by duration, and how much time had none.

    ``(all_pct, nonzero_pct, zero_share_pct)``: the weighted mean over every
    kernel with an estimate, the same over those above 0 % (CUPTI writes 0
    where it made no estimate), and
    the share of that kernel time at 0 %. ``None`` when no kernel has one.
    """
    rows = _kernels(trace, window)
    occ = arg_column(trace, "occupancy_pct")[rows]
    dur = trace.dur_ns[rows].astype(np.float64)
    ok = (occ >= 0) & (dur > 0)
    if not ok.any():
        return None
    nonzero = ok & (occ > 0)
    mean_nonzero = float(np.average(occ[nonzero], weights=dur[nonzero])) if nonzero.any() else 0.0
    zero_share = 100 * float(dur[ok & (occ == 0)].sum() / dur[ok].sum())
    return float(np.average(occ[ok], weights=dur[ok])), mean_nonzero, zero_share


def _kernels(trace: Trace, window: Window | None) -> npt.NDArray[np.int64]:
    rows: npt.NDArray[np.int64] = link(trace).gpu_ops
    rows = rows[trace.kind[rows] == Kind.KERNEL]
    if window is not None:
        rows = rows[launched_in(trace, rows, window)]
    return rows


def launch_table(trace: Trace, window: Window | None = None, top: int | None = 20) -> Table:
    """The top kernels by total time with their launch configuration.

    ``grid`` and ``block`` are the most common ``[x, y, z]`` of the name's
    launches, ``registers`` (per thread) and ``shared_mem_bytes`` (per block)
    the most common values; ``blocks_per_sm`` is that grid's blocks over the
    SMs of the trace's GPU (``deviceProperties``); ``est_occupancy_pct`` is
    CUPTI's estimate, averaged over launches weighted by duration. Blank where
    the trace does not record a value.
    """
    rows = _kernels(trace, window)
    names = trace.name_id[rows]
    index = {n: i for i, n in enumerate(trace.names)}
    sms = _sms(trace)

    def col(name: str) -> npt.NDArray[np.int64]:
        return arg_column(trace, name)

    out: list[list[Any]] = []
    for r in kernel_table(trace, window).rows:
        mine = rows[names == index[r[0]]]
        if not len(mine):
            continue  # a memcpy or memset
        grid = _common(col("grid_xyz")[mine])
        volume = _common(col("grid")[mine])
        out.append([r[0], r[1], r[2], _xyz(grid), _xyz(_common(col("block_xyz")[mine])),
                    _common(col("registers")[mine]), _common(col("shared_mem")[mine]),
                    volume / sms if volume is not None and sms else None,
                    _occupancy(trace, mine)])  # fmt: skip
        if top is not None and len(out) >= top:
            break
    cols = ["name", "calls", "total_us", "grid", "block", "registers", "shared_mem_bytes",
            "blocks_per_sm", "est_occupancy_pct"]  # fmt: skip
    return Table(cols, out, "Top kernels' launch configuration", name_columns=("name",))
