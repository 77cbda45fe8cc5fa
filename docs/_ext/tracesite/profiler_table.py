"""Reading the text of ``prof.key_averages().table()``, as a recording stores it.

Pages quote the profiler's own table; these helpers drop columns for display
(:func:`view`) or turn rows and totals into numbers (:func:`rows`, :func:`totals_us`)
so a page can check its prose against them. Column positions come from the
dashed rule under the header; names come from the header itself, because a long
name ("CUDA time avg") can overflow its column by a character.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["rows", "totals_us", "view"]

_UNIT_US = {"us": 1.0, "ms": 1e3, "s": 1e6}
#: Header text -> key in :func:`rows`; durations in µs, percentages as numbers.
_KEYS = {
    "Name": "name",
    "Self CPU %": "self_cpu_pct",
    "Self CPU": "self_cpu_us",
    "CPU total %": "cpu_total_pct",
    "CPU total": "cpu_total_us",
    "CPU time avg": "cpu_avg_us",
    "Self CUDA": "self_cuda_us",
    "Self CUDA %": "self_cuda_pct",
    "CUDA total": "cuda_total_us",
    "CUDA time avg": "cuda_avg_us",
    "# of Calls": "calls",
}


def _layout(text: str) -> tuple[list[str], list[tuple[int, int]], list[str], list[str]] | None:
    """(column names, column spans, body lines, footer lines), or None if unrecognised."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("---")]
    if len(rules) < 3:
        return None
    names = re.split(r"\s{2,}", lines[rules[0] + 1].strip())
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[rules[0]])]
    if len(names) != len(spans):
        return None
    footer = [line for line in lines[rules[2] + 1 :] if line.strip()]
    return names, spans, lines[rules[1] + 1 : rules[2]], footer


def duration_us(text: str) -> float:
    """``"836.608us"``, ``"1.007ms"``, ``"2.1s"`` -> microseconds."""
    m = re.fullmatch(r"(-?[\d.]+)(us|ms|s)", text.strip())
    if not m:
        raise ValueError(f"not a profiler duration: {text!r}")
    return float(m.group(1)) * _UNIT_US[m.group(2)]


def view(text: str, columns: tuple[str, ...], rows_kept: int | None = None) -> str:
    """The table with only the Name column and ``columns``; unrecognised text unchanged."""
    layout = _layout(text)
    if layout is None:
        return text
    names, spans, body, footer = layout
    picked = [(n, sp) for i, (n, sp) in enumerate(zip(names, spans, strict=True))
              if i == 0 or n in columns]  # fmt: skip

    def cut(line: str) -> str:
        return "  ".join(line[a:b] for _, (a, b) in picked).rstrip()

    head = "  ".join(name.rjust(b - a) for name, (a, b) in picked)
    rule = "  ".join("-" * (b - a) for _, (a, b) in picked)
    return "\n".join([rule, head, rule, *map(cut, body[:rows_kept]), rule, *footer])


def rows(text: str) -> list[dict[str, Any]]:
    """Every row as a dict: ``name``, ``calls``, ``*_us`` durations, ``*_pct`` shares."""
    layout = _layout(text)
    if layout is None:
        raise ValueError("not a key_averages() table")
    names, spans, body, _ = layout
    keys = [_KEYS.get(n, n) for n in names]
    out = []
    for line in body:
        row: dict[str, Any] = {}
        for key, (a, b) in zip(keys, spans, strict=True):
            cell = line[a:b].strip()
            if key == "name":
                row[key] = cell
            elif key == "calls":
                row[key] = int(cell)
            elif key.endswith("_pct"):
                row[key] = float(cell.rstrip("%"))
            else:
                row[key] = duration_us(cell)
        out.append(row)
    return out


def totals_us(text: str) -> dict[str, float]:
    """The footer: ``{"self_cpu_us": ..., "self_cuda_us": ...}`` (CUDA absent on CPU runs)."""
    found = re.findall(r"Self (CPU|CUDA) time total: (\S+)", text)
    return {f"self_{dev.lower()}_us": duration_us(value) for dev, value in found}
