"""Pasting a dict of facts, shared by the pages' facts modules: some of its keys as Markdown
and some as numbers in one call (:func:`paste`), or a dict computed anew on every repeat
(:func:`paste_each_repeat`: numbers as medians over the repeats, with ``_lo`` and ``_hi``;
Markdown as the drawn repeat's).

Each key is spelled whole at the call, as :meth:`~tracesite.facts.Facts.num_from` asks, so
that a search for it finds where it is pasted. Only the facts runner's
:class:`~tracesite.facts.Facts` here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracesite.facts import Facts


def paste(f: Facts, found: dict[str, Any], md: str = "", num: str = "") -> None:
    """Paste the space-separated keys ``md`` of ``found`` as Markdown and the keys ``num`` as
    numbers, as they came (no ``float()``)."""
    f.md_from(found, md)
    f.num_from(found, num)


def paste_each_repeat(
    f: Facts, facts_of_repeat: Callable[[], dict[str, Any]], md: str = "", num: str = ""
) -> None:
    """:func:`paste` the dict ``facts_of_repeat()`` returns on each repeat, under
    :meth:`~tracesite.facts.Facts.repeats`."""
    f.repeats(lambda: paste(f, facts_of_repeat(), md, num))
