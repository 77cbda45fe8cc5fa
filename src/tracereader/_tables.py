"""Tables computed from a trace: kernels, ops (self/total CPU and GPU time), comparisons.

These play the role of ``prof.key_averages().table()``, but they are computed
from the trace file alone, so they work on any trace someone sends you, and
their GPU columns come from the linker (which op launched which kernel) rather
than from the profiler's own bookkeeping.
"""

from __future__ import annotations

import dataclasses
import html
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ._events import Kind, Trace, arg_column, cached, kind_mask
from ._intervals import Window, launched_in
from ._link import link
from ._measure import gpu_busy_us, step_times
from ._names import cut, shorten_kernel_name

__all__ = ["Comparison", "Table", "compare", "kernel_table", "op_table"]


# ---------------------------------------------------------------- Table
def _fmt(column: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return ""
        return f"{value:,.1f}" if column.startswith(("pct", "%")) else f"{value:,.2f}"
    return str(value)


@dataclass
class Table:
    """Columns and rows, with plain-text, Markdown, JSON and HTML renderings.

    Values stay raw (full names, unrounded floats) in :meth:`to_records` and
    :meth:`to_json`; the text renderings shorten the kernel names in
    ``name_columns`` with :func:`shorten_kernel_name` and cut other text longer
    than ``text_width`` (HTML keeps the full text in a ``title=`` tooltip).
    """

    columns: list[str]
    rows: list[list[Any]]
    title: str = ""
    name_columns: tuple[str, ...] = ("name",)
    name_width: int = 60
    text_width: int | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return self.to_text()

    def head(self, n: int | None) -> Table:
        rows = self.rows if n is None or n <= 0 else self.rows[:n]
        return dataclasses.replace(self, rows=rows)

    def to_records(self) -> list[dict[str, Any]]:
        def plain(v: Any) -> Any:
            if isinstance(v, np.generic):
                v = v.item()
            return None if isinstance(v, float) and np.isnan(v) else v

        return [{c: plain(v) for c, v in zip(self.columns, r, strict=False)} for r in self.rows]

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_records(), indent=indent)

    def _cells(self) -> list[list[str]]:
        """Display strings. Distinct names that shorten alike get a " (2)" suffix."""
        seen: dict[str, list[str]] = {}

        def short(v: str) -> str:
            s = shorten_kernel_name(v, self.name_width)
            names = seen.setdefault(s, [])
            if v not in names:
                names.append(v)
            k = names.index(v)
            return f"{s} ({k + 1})" if k else s

        def show(c: str, v: Any) -> str:
            if isinstance(v, str):
                if c in self.name_columns:
                    return short(v)
                return cut(v, self.text_width) if self.text_width else v
            return _fmt(c, v)

        return [[show(c, v) for c, v in zip(self.columns, r, strict=False)] for r in self.rows]

    def _numeric(self) -> list[bool]:
        return [
            bool(self.rows)
            and all(isinstance(r[k], (int, float, np.number)) or r[k] is None for r in self.rows)
            for k in range(len(self.columns))
        ]

    def to_text(self) -> str:
        """Aligned plain text: names left, numbers right."""
        cells = self._cells()
        num = self._numeric()
        widths = [max([len(c), *(len(r[k]) for r in cells)]) for k, c in enumerate(self.columns)]

        def line(vals: list[str]) -> str:
            parts = [
                v.rjust(w) if n else v.ljust(w) for v, w, n in zip(vals, widths, num, strict=False)
            ]
            return "  ".join(parts).rstrip()

        lines = [self.title] if self.title else []
        lines += [line(self.columns), "  ".join("-" * w for w in widths)]
        lines += [line(r) for r in cells]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A GitHub/MyST pipe table; names in code spans."""
        num = self._numeric()

        def cell(c: str, v: str) -> str:
            v = v.replace("|", "\\|")
            return f"`{v}`" if c in self.name_columns and v else v

        lines = [f"**{self.title}**", ""] if self.title else []
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "|".join("---:" if n else ":---" for n in num) + "|")
        for r in self._cells():
            lines.append(
                "| " + " | ".join(cell(c, v) for c, v in zip(self.columns, r, strict=False)) + " |"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        num = self._numeric()
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = []
        for raw, shown in zip(self.rows, self._cells(), strict=False):
            tds = []
            for v, s, n in zip(raw, shown, num, strict=False):
                style = ' style="text-align:right"' if n else ""
                title = f' title="{html.escape(v)}"' if isinstance(v, str) and s != v else ""
                tds.append(f"<td{style}{title}>{html.escape(s)}</td>")
            body.append("<tr>" + "".join(tds) + "</tr>")
        cap = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return (
            f'<table class="tracereader">{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
        )


# ---------------------------------------------------------------- kernels and ops
def kernel_table(trace: Trace, window: Window | None = None, top: int | None = None) -> Table:
    """Per GPU-op name (kernels, memcpys, memsets): calls and durations in µs.

    ``pct`` is the share of the summed duration of all GPU ops in the table
    (overlapping streams count twice here, unlike :func:`gpu_busy_us`).
    ``window=(start_ns, end_ns)`` keeps GPU ops *launched* inside the window
    (kernels that spill past a step boundary stay with the step that launched
    them). Sorted by total time.
    """
    rows = link(trace).gpu_ops
    if window is not None:
        rows = rows[launched_in(trace, rows, window)]
    dur = trace.dur_ns[rows] / 1e3
    names = trace.name_id[rows]
    order = np.lexsort((dur, names))
    names, dur = names[order], dur[order]
    grand = dur.sum()
    out: list[list[Any]] = []
    if len(rows):
        starts = np.flatnonzero(np.append(True, names[1:] != names[:-1]))
        for a, b in zip(starts, np.append(starts[1:], len(names)), strict=False):
            d = dur[a:b]
            out.append(
                [trace.names[int(names[a])], int(b - a), float(d.sum()), float(d.mean()),
                 float(d[0]), float(np.median(d)), float(d[-1]),
                 float(100 * d.sum() / grand) if grand else 0.0]
            )  # fmt: skip
    out.sort(key=lambda r: (-r[2], r[0]))
    cols = ["name", "calls", "total_us", "mean_us", "min_us", "median_us", "max_us", "pct"]
    return Table(cols, out, "GPU kernels").head(top)


_ROW_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.DRIVER)


def op_table(
    trace: Trace,
    window: Window | None = None,
    top: int | None = None,
    sort: str = "total_gpu_us",
    *,
    by_shape: bool = False,
    per_call: bool = False,
    waits: bool = False,
) -> Table:
    """Per op name: calls, self/total CPU time and self/total GPU time, in µs.

    Rows are ``cpu_op``, ``user_annotation`` and runtime/driver calls (as in
    ``prof.key_averages()``); Python frames are looked through.

    * **total CPU**: the op's wall time on its thread, summed over calls.
    * **self CPU**: total CPU minus the time of the ops and calls directly inside it.
    * **self GPU**: duration of the GPU ops whose launch call the op issued
      directly (the linker's *issuing op*).
    * **total GPU**: the same including everything launched by ops nested inside
      it; ``gpu_ops`` counts those GPU ops.

    Runtime calls carry no GPU time themselves: it belongs to the op that made
    them. ``window=(start_ns, end_ns)`` keeps ops that *start* inside it.

    ``by_shape`` groups by name and ``Input Dims`` (traces recorded with
    ``record_shapes``; an ``input_dims`` column follows the name, blank for
    calls without shapes), as the TensorBoard plugin's "group by operator +
    input shape". ``per_call`` adds the mean, min and max total CPU time of
    one call (``mean_cpu_us``, ``min_cpu_us``, ``max_cpu_us``). ``waits``
    adds ``cpu_waiting_us``: the time of the synchronize calls
    (``cudaStreamSynchronize``...) inside the op, or the op's own when it is
    one: the CPU waiting for the GPU, not working.
    """
    is_row, dur, self_cpu, self_gpu, total_gpu, gpu_ops = _op_times(trace)
    waited = _op_waits(trace) if waits else np.zeros(len(trace))
    sel = np.flatnonzero(is_row)
    if window is not None:
        sel = sel[(trace.ts_ns[sel] >= window[0]) & (trace.ts_ns[sel] < window[1])]
    dims = arg_column(trace, "input_dims")[sel] if by_shape else np.full(len(sel), -1, np.int64)
    groups, ids = np.unique(trace.name_id[sel].astype(np.int64) << 32 | (dims + 1),
                            return_inverse=True)  # fmt: skip
    ids = ids.reshape(-1)
    m = len(groups)

    def per_group(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.asarray(np.bincount(ids, weights=values[sel], minlength=m), dtype=np.float64)

    calls = np.bincount(ids, minlength=m)
    sums = [per_group(v) / 1e3 for v in (self_cpu, dur, self_gpu, total_gpu)]
    n_gpu = per_group(gpu_ops.astype(np.float64))
    wait_sum = per_group(waited) / 1e3
    lo, hi = np.full(m, np.inf), np.full(m, -np.inf)
    np.minimum.at(lo, ids, dur[sel] / 1e3)
    np.maximum.at(hi, ids, dur[sel] / 1e3)
    cols = ["name", "calls", "self_cpu_us", "total_cpu_us", "self_gpu_us", "total_gpu_us",
            "gpu_ops"]  # fmt: skip
    rows: list[list[Any]] = []
    for k in range(m):
        row: list[Any] = [trace.names[int(groups[k] >> 32)], int(calls[k]),
                          *(float(s[k]) for s in sums), int(n_gpu[k])]  # fmt: skip
        if per_call:
            row += [float(sums[1][k] / calls[k]), float(lo[k]), float(hi[k])]
        if waits:
            row.append(float(wait_sum[k]))
        if by_shape:
            text = int(groups[k] & 0xFFFFFFFF) - 1
            row.insert(1, trace.texts[text] if text >= 0 else "")
        rows.append(row)
    cols += ["mean_cpu_us", "min_cpu_us", "max_cpu_us"] * per_call
    cols += ["cpu_waiting_us"] * waits
    cols[1:1] = ["input_dims"] * by_shape
    key, total_cpu = cols.index(sort), cols.index("total_cpu_us")
    rows.sort(key=lambda r: (-r[key], -r[total_cpu], r[0], r[1]))
    title = "Ops (CPU time on the op's thread, GPU time of what it launched)"
    return Table(cols, rows, title, name_columns=()).head(top)


# ---------------------------------------------------------------- comparisons
@dataclass
class Comparison:
    """Two traces side by side: per-step metrics and GPU ops that appear or vanish."""

    labels: tuple[str, str]
    metrics: Table
    kernels: Table
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    def _lists(self) -> list[tuple[str, list[str]]]:
        a, b = self.labels
        return [(f"GPU ops only in {a} (gone in {b})", self.only_a),
                (f"GPU ops only in {b} (new)", self.only_b)]  # fmt: skip

    def _joined(self, metrics: str, heading: str, item: str) -> str:
        """``metrics``, then each list: ``heading`` (title, count), one ``item`` a name."""
        out = [metrics]
        for title, names in self._lists():
            out.append(heading.format(title, len(names)))
            out += [item.format(shorten_kernel_name(n)) for n in names]
        return "\n".join(out)

    def to_text(self) -> str:
        return self._joined(self.metrics.to_text(), "\n{}: {}", "  {}")

    def to_markdown(self) -> str:
        return self._joined(self.metrics.to_markdown(), "\n**{}: {}**\n", "- `{}`")

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(
            {"labels": list(self.labels), "metrics": self.metrics.to_records(),
             "kernels": self.kernels.to_records(), "only_a": self.only_a, "only_b": self.only_b},
            indent=indent,
        )  # fmt: skip

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        parts = [self.metrics._repr_html_()]
        for title, names in self._lists():
            items = "".join(
                f'<li title="{html.escape(n)}"><code>{html.escape(shorten_kernel_name(n))}</code></li>'
                for n in names
            )
            parts.append(f"<p>{html.escape(title)}: {len(names)}</p><ul>{items}</ul>")
        return "".join(parts)


def warmup_steps(counts: list[int], skip_first: bool) -> int:
    """How many leading steps to leave out of traces with ``counts`` steps.

    One (the cold first step) when ``skip_first`` and every trace has more
    than one step, else none: a trace's only step is all there is to compare,
    and the traces' first steps are then compared alike.
    """
    return 1 if skip_first and min(counts, default=0) > 1 else 0


def _per_step(trace: Trace, skip: int = 0) -> dict[str, Any]:
    """Means over ProfilerSteps but the first ``skip`` (the whole trace when there are none)."""
    ln = link(trace)
    steps = step_times(trace)[skip:]
    if steps:
        step = ln.step[ln.gpu_ops]
        ops = ln.gpu_ops[step >= skip]
        n = len(steps)
        vals: dict[str, Any] = {k: float(np.mean([getattr(s, k) for s in steps]))
                                for k in ("kernels", "gpu_ops", "launches", "cpu_us", "gpu_busy_us")}  # fmt: skip
    else:
        ops, n = ln.gpu_ops, 1
        end = int(trace.end_ns.max())
        vals = {"kernels": float(np.count_nonzero(trace.kind[ops] == Kind.KERNEL)),
                "gpu_ops": float(len(ops)), "launches": float(len(ln.launch_calls)),
                "cpu_us": (end - trace.t0_ns) / 1e3, "gpu_busy_us": gpu_busy_us(trace)}  # fmt: skip
    names: dict[str, list[float]] = {}
    for r in ops:
        names.setdefault(trace.name(r), []).append(trace.dur_ns[r] / 1e3)
    vals["names"] = {k: (len(v) / n, sum(v) / n) for k, v in names.items()}
    vals["steps"] = len(steps)
    return vals


def compare(
    a: Trace, b: Trace, labels: tuple[str, str] = ("eager", "compiled"), *, skip_first: bool = False
) -> Comparison:
    """Compare two traces per step: kernels, launches, CPU and GPU time, kernel names.

    All metrics are means per ``ProfilerStep`` (a trace without steps counts as
    one step). GPU ops belong to the step that launched them. ``change`` is
    ``b / a``. Every step counts unless ``skip_first``, which leaves out each
    trace's first (warm-up) step when both traces have more than one (see
    :func:`warmup_steps`); the ``steps`` row counts the steps compared.
    """
    skip = warmup_steps([len(a.steps), len(b.steps)], skip_first)
    pa, pb = _per_step(a, skip), _per_step(b, skip)
    rows = []
    for key, label in [("steps", "steps"), ("kernels", "kernels per step"),
                       ("gpu_ops", "GPU ops per step"), ("launches", "launch calls per step"),
                       ("cpu_us", "CPU time per step (us)"),
                       ("gpu_busy_us", "GPU busy per step (us)")]:  # fmt: skip
        va, vb = pa[key], pb[key]
        rows.append([label, va, vb, f"x{vb / va:.2f}" if va else ""])
    for p in (pa, pb):
        p["busy"] = 100 * p["gpu_busy_us"] / p["cpu_us"] if p["cpu_us"] else 0.0
    rows.append(["GPU busy % of CPU step", pa["busy"], pb["busy"], ""])
    title = f"{labels[0]} vs {labels[1]}" + " (first step left out)" * bool(skip)
    metrics = Table(["metric", *labels, "change"], rows, title, ())
    na, nb = pa["names"], pb["names"]
    krows = [[k, *na.get(k, (0.0, 0.0)), *nb.get(k, (0.0, 0.0))] for k in set(na) | set(nb)]
    krows.sort(key=lambda r: (-max(r[2], r[4]), r[0]))
    a_, b_ = labels
    kcols = ["name", f"{a_}_calls", f"{a_}_us", f"{b_}_calls", f"{b_}_us"]
    kernels = Table(kcols, krows, "GPU ops per step")
    only_a = sorted(set(na) - set(nb), key=lambda k: (-na[k][1], k))
    only_b = sorted(set(nb) - set(na), key=lambda k: (-nb[k][1], k))
    return Comparison(labels, metrics, kernels, only_a, only_b)


def _op_nesting(trace: Trace) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    """Which events are :func:`op_table` rows, and each one's nearest enclosing row (-1: none).

    Python frames are looked through. Computed once per trace.
    """

    def make() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        ln = link(trace)
        is_row = kind_mask(trace, _ROW_KINDS)
        up = ln.parent.copy()
        todo = np.flatnonzero((up >= 0) & is_row)
        while todo.size:
            todo = todo[~is_row[up[todo]]]
            up[todo] = ln.parent[up[todo]]
            todo = todo[up[todo] >= 0]
        up[~is_row] = -1
        return is_row, up

    return cached(trace, "op_table_nesting", make)


_Floats = npt.NDArray[np.float64]
_OpTimes = tuple[npt.NDArray[np.bool_], _Floats, _Floats, _Floats, _Floats, npt.NDArray[np.int64]]


def _op_times(trace: Trace) -> _OpTimes:
    """Per event: is a row, wall, self CPU, self and total GPU ns, GPU ops (once per trace)."""

    def make() -> _OpTimes:
        ln = link(trace)
        n = len(trace)
        is_row, up = _op_nesting(trace)
        dur = trace.dur_ns.astype(np.float64)
        self_cpu = np.where(is_row, dur, 0.0)
        child = np.flatnonzero(up >= 0)
        np.subtract.at(self_cpu, up[child], dur[child])
        self_gpu, total_gpu, gpu_ops = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64)
        g = ln.gpu_ops[ln.launch[ln.gpu_ops] >= 0]
        owner = ln.issuer[ln.launch[g]]
        g, owner = g[owner >= 0], owner[owner >= 0]
        np.add.at(self_gpu, owner, dur[g])
        while owner.size:
            np.add.at(total_gpu, owner, dur[g])
            np.add.at(gpu_ops, owner, 1)
            owner = up[owner]
            g, owner = g[owner >= 0], owner[owner >= 0]
        return is_row, dur, self_cpu, self_gpu, total_gpu, gpu_ops

    return cached(trace, "op_table_times", make)


def _op_waits(trace: Trace) -> npt.NDArray[np.float64]:
    """Per event: ns of synchronize calls inside it, or its own if it is one (once per trace)."""

    def make() -> npt.NDArray[np.float64]:
        from ._waits import wait_rows

        _, up = _op_nesting(trace)
        waited = np.zeros(len(trace))
        owner = wait_rows(trace)
        spent = trace.dur_ns.astype(np.float64)[owner]
        while owner.size:
            np.add.at(waited, owner, spent)
            owner = up[owner]
            spent, owner = spent[owner >= 0], owner[owner >= 0]
        return waited

    return cached(trace, "op_table_waits", make)
