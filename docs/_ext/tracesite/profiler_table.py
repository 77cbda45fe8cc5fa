"""Showing ``prof.key_averages().table()`` narrower, as a recording stores its text.

Pages quote the profiler's own table; :func:`view` drops columns from its text for
display. A chapter's numbers are never read back from the text: the recorder stores the
table's own fields beside it (``table.json``, read by ``Recording.table_rows``). A story's
claims about the table it prints read the text (:func:`cells`, :func:`number`,
:func:`rows`, :func:`total_us`), since recordings made before ``table.json`` existed hold only the text.
Column positions come from the dashed rule under the header; names come from the
header itself, because a long name ("CUDA time avg") can overflow its column by a
character.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["cells", "number", "rows", "total_us", "view"]


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


def cells(text: str) -> list[dict[str, str]]:
    """The table's rows read back from its text, in its order: ``{column: text}`` under the
    header's names (a long op name as printed, cut and ending in ``...``).

    Raises ValueError for text that is not the profiler's table.
    """
    layout = _layout(text)
    if layout is None:
        raise ValueError("not the text of prof.key_averages().table()")
    names, spans, body, _ = layout
    return [{n: line[a:b].strip() for n, (a, b) in zip(names, spans, strict=True)} for line in body]


def number(cell: str) -> float:
    """A cell as a number: a time in µs (``"3.247ms"`` -> 3247.0), a share in % (``"12.50%"``
    -> 12.5) or a count (``"8"`` -> 8.0)."""
    for unit, scale in (("us", 1.0), ("ms", 1e3), ("s", 1e6), ("%", 1.0)):
        if cell.endswith(unit):
            return float(cell[: -len(unit)]) * scale
    return float(cell)


def total_us(text: str, what: str) -> float:
    """The footer's ``Self CPU time total`` (``what="Self CPU"``) or ``Self CUDA time total``,
    in µs."""
    found = re.findall(rf"^{re.escape(what)} time total: (\S+)$", text, re.M)
    if len(found) != 1:
        raise ValueError(f"no '{what} time total' line in the table's text")
    return number(found[0])


def rows(text: str) -> list[dict[str, Any]]:
    """:func:`cells` as numbers under the names ``Recording.table_rows`` gives them:
    ``name``, ``self_cpu_us``, ``cpu_total_us``, ``self_cuda_us``, ``self_cuda_pct``,
    ``cuda_total_us`` and ``calls``."""
    return [
        {
            "name": c["Name"],
            "self_cpu_us": number(c["Self CPU"]),
            "cpu_total_us": number(c["CPU total"]),
            "self_cuda_us": number(c["Self CUDA"]),
            "self_cuda_pct": number(c["Self CUDA %"]),
            "cuda_total_us": number(c["CUDA total"]),
            "calls": int(c["# of Calls"]),
        }
        for c in cells(text)
    ]
