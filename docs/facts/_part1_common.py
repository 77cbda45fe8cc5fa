"""What Part 1's facts modules share (``part1.py`` and ``part1_notes.py``).

Both pages glued each ``part1_measures.*_facts`` result through the same small helper;
:func:`glue_measure` is that helper, bound to a page's :class:`~tracesite.facts.Facts`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracesite.facts import Facts


def glue_measure(f: Facts) -> Callable[..., None]:
    """The pages' ``facts(measure, *names, suffix="", **more)`` helper, pasting into ``f``.

    It calls ``measure`` on the traces of ``names`` (the current repeat's) and ``more``,
    and pastes each value under its key plus ``suffix``: text as Markdown (inside
    :meth:`Facts.repeats`, the drawn repeat's), numbers with :meth:`Facts.num` (medians).
    """
    md, num, recorded = f.md, f.num, f.trace

    def glue(
        measure: Callable[..., dict[str, Any]], *names: str, suffix: str = "", **more: Any
    ) -> None:
        """Glue what ``measure`` finds (in f.repeats: medians; outside: the drawn recording's)."""
        for key, value in measure(*map(recorded, names), **more).items():
            if isinstance(value, str):
                md(key + suffix, value)
            else:
                num(key + suffix, value)

    return glue
