"""``tracereader report A --against B``: the diff of two traces as one HTML page.

This module only lays out :class:`~tracereader._diff.Diff`; the page, tables
and bars are the report's own (:mod:`tracereader._report_html`), so the page
is as self-contained: inline CSS and JS, no request outside the file.
"""

from __future__ import annotations

from pathlib import Path

from ._diff import BUSY, Diff, Side, diff, verdict_line, what_changed
from ._load import load
from ._names import shorten_kernel_name
from ._overview import SPLIT_KINDS
from ._report_html import bar, esc, page, table
from ._trimmed import trimmed_note

__all__ = ["diff_page", "diff_report"]

_CONTENTS = (("changed", "What changed"), ("steps", "Time per step"),
             ("classes", "Kernel classes"), ("kernels", "Kernels"), ("ops", "Operators"))  # fmt: skip


def _head(d: Diff) -> str:
    def cut(s: Side) -> str:
        note = trimmed_note(s.trace)
        return f' <b class="verdict-CPU-bound">Incomplete: it {esc(note)}.</b>' if note else ""

    sides = "".join(
        f"<li><b>{k}</b>{esc(what)}: <code>{esc(s.name)}</code>, {len(s.trace):,} events, "
        f"{s.all_steps} step(s){cut(s)}</li>"
        for k, what, s in (("A", " (baseline)", d.a), ("B", "", d.b))
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in d.notes)
    return (f"<ul>{sides}</ul><p>Every difference is B − A; a ratio is B ÷ A.</p>"
            f'<ul class="note">{notes}</ul>')  # fmt: skip


def _changed(d: Diff) -> str:
    items = "".join(f"<li>{esc(x)}</li>" for x in what_changed(d)[1:])  # [0]: the verdict
    return (f'<h2 id="changed">What changed</h2><p class="note">Regressions (more time in B) '
            f"first, then gains.</p><ul>{items}</ul>")  # fmt: skip


def _steps(d: Diff) -> str:
    bars = ""
    if d.a.gpu:
        rows, spans = [], [sum(x.span_us for x in s.split) for s in (d.a, d.b)]
        for k, s, span in zip("AB", (d.a, d.b), spans, strict=True):
            parts = {n: sum(x.by_kind[n] for x in s.split) for n in SPLIT_KINDS}
            parts["idle"] = sum(x.idle_us for x in s.split)
            legend = ", ".join(f"{n} {v:,.0f} µs" for n, v in parts.items() if v)
            width = f'class="bar" style="width:{320 * span / max(max(spans), 1e-9):.0f}px"'
            scaled = bar(parts).replace('class="bar"', width, 1)
            rows.append(f"<p><b>{k}</b> {scaled}{esc(legend)}</p>")
        bars = "".join(rows) + '<p class="note">The bars share one scale: the steps\' span.</p>'
    note = ("Kinds are unions of GPU intervals over each step's span (two kinds at once both "
            f"count); {BUSY} is the time some GPU ran anything, idle the rest of the span. "
            "spread_us is the larger of the two traces' ranges of per-step values.")  # fmt: skip
    return (f'<h2 id="steps">Time per step</h2>{table(d.totals)}{bars}'
            f"{table(d.steps, note=note if d.a.gpu else '')}")  # fmt: skip


def _only(d: Diff, names: list[tuple[str, float]], where: str) -> str:
    """The GPU op names found in one trace only, by kernel class (largest class first)."""
    if not names:
        return f"<p>No GPU op name {esc(where)}.</p>"
    groups: dict[str, list[tuple[str, float]]] = {}
    for n, v in names:
        groups.setdefault(d.classes_of.get(n, "other"), []).append((n, v))
    parts = []
    for cls, some in sorted(groups.items(), key=lambda kv: -sum(v for _, v in kv[1])):
        items = "".join(
            f'<li title="{esc(n)}"><code>{esc(shorten_kernel_name(n))}</code> {v:,.1f} µs</li>'
            for n, v in some
        )
        total = sum(v for _, v in some)
        parts.append(f"<li><details><summary>{esc(cls)}: {len(some)} name(s), {total:,.1f} µs"
                     f"</summary><ul>{items}</ul></details></li>")  # fmt: skip
    return f"<p>{len(names)} GPU op name(s) {esc(where)}, by class:</p><ul>{''.join(parts)}</ul>"


def _gpu_sections(d: Diff) -> str:
    if not d.a.gpu:
        return ""
    return ('<h2 id="classes">Kernel classes</h2>'
            + table(d.classes, note="Classes from kernel names; durations summed.")
            + '<h2 id="kernels">Kernels</h2>' + table(d.kernels)
            + _only(d, d.only_a, "only in A (gone in B)") + _only(d, d.only_b, "only in B (new)"))  # fmt: skip


def _ops(d: Diff) -> str:
    gpu = table(d.ops_gpu) if d.a.gpu else ""
    own = table(d.ops_self) if d.ops_self is not None else ""
    return (f'<h2 id="ops">Operators</h2>{gpu}{table(d.ops_cpu)}{own}<p class="note">Total '
            "time of each op name over the compared steps: CPU time on the op's thread, GPU "
            "time of what it and the ops inside it launched. An op's total includes the ops "
            "inside it (aten::item > aten::_local_scalar_dense > cudaStreamSynchronize is one "
            "wait, listed three times); self CPU time counts each moment once, and leaves the "
            "host syncs, the CPU waiting for the GPU, to the list above.</p>")  # fmt: skip


def diff_page(d: Diff) -> str:
    """The HTML document of ``d``."""
    top = f'<p class="headline"><b>{esc(verdict_line(d))}</b></p>'
    body = top + _head(d) + _changed(d) + _steps(d) + _gpu_sections(d) + _ops(d)
    links = " · ".join(f'<a href="#{k}">{v}</a>' for k, v in _CONTENTS if f'id="{k}"' in body)
    title = f"tracereader diff: {d.a.name} → {d.b.name}"
    return page(title, f"<nav><p>{links}</p></nav>{body}")


def diff_report(baseline: str | Path, other: str | Path, *, keep_first: bool = False) -> str:
    """The HTML page comparing trace ``other`` with trace ``baseline``.

    Raises
    ------
    TraceError
        A file is missing or not a trace.
    UserError
        The traces cannot be compared (see :func:`tracereader._diff.diff`).
    """
    a, b = load(baseline), load(other)
    return diff_page(diff(baseline, a, other, b, keep_first=keep_first))
