"""Showing ``prof.key_averages().table()`` narrower, as a recording stores its text.

Pages quote the profiler's own table; :func:`view` drops columns from its text for
display. Its numbers are never read back from the text: the recorder stores the
table's own fields beside it (``table.json``, read by ``Recording.table_rows``).
Column positions come from the dashed rule under the header; names come from the
header itself, because a long name ("CUDA time avg") can overflow its column by a
character.
"""

from __future__ import annotations

import re

__all__ = ["view"]


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
