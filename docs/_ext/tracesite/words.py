"""The words a page uses about numbers, each with one meaning, checked the same everywhere.

A claim whose sentence says "about", "barely changed", "no outlier", "faster" or "N times"
checks it with the function of that name here, so the check is exactly as tight as the
word. CONTRIBUTING.md lists them. The facts runner remembers each call a page's facts make
(:func:`recording`) and stores them with the facts, so that a test can feed every claim a
perturbed copy of its own data (a doubled ratio, an added outlier) and expect it to fail
(``tests/site/test_facts.py``): a check that a perturbation does not break guards nothing.

=================  =====================================================================
word               meaning
=================  =====================================================================
about x, ref       x within 10 % of ref (``ABOUT``)
barely changed     the ratio of after to before within 10 % of 1 (as "about" 1)
no outlier         every value within 10 % of the values' median
beyond the spread  every value of one set above (or below) every value of the other
N times            x at least N times ref, and under 2N times (the perturbation test)
far (more, ...)    x at least 3 times ref (``FAR``): "far longer", "far slower", "far more"
in every repeat    the claim holds on each repeat (``f.repeats`` runs it once per repeat)
=================  =====================================================================
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ABOUT",
    "about",
    "barely_changed",
    "beyond_spread",
    "far",
    "no_outlier",
    "perturbed",
    "recording",
    "stop",
    "times",
]

#: "Far" longer, slower, more: at least this many times the reference.
FAR = 3.0

#: "About": within this fraction of the reference.
ABOUT = 0.10

_calls: list[tuple[str, tuple[Any, ...]]] | None = None


def _remember(word: str, *args: Any) -> None:
    if _calls is not None:
        _calls.append((word, args))


def recording() -> list[tuple[str, tuple[Any, ...]]]:
    """Start remembering every call of a word (the facts runner does, for each page); the
    list returned fills as they come. :func:`stop` ends it."""
    global _calls
    _calls = []
    return _calls


def stop() -> None:
    global _calls
    _calls = None


def about(x: float, ref: float) -> bool:
    """``x`` is about ``ref``: within :data:`ABOUT` (10 %) of it."""
    _remember("about", float(x), float(ref))
    return abs(float(x) - float(ref)) <= ABOUT * abs(float(ref))


def barely_changed(before: float, after: float) -> bool:
    """``after`` barely changed from ``before``: within 10 % of it."""
    _remember("barely_changed", float(before), float(after))
    return abs(float(after) - float(before)) <= ABOUT * abs(float(before))


def no_outlier(values: Sequence[float]) -> bool:
    """Every value within 10 % of the values' median."""
    vals = [float(v) for v in values]
    _remember("no_outlier", tuple(vals))
    mid = statistics.median(vals)
    return all(abs(v - mid) <= ABOUT * abs(mid) for v in vals)


def beyond_spread(higher: Sequence[float], lower: Sequence[float]) -> bool:
    """Every value of ``higher`` above every value of ``lower``: a difference larger than
    the spread of either (the only kind a page claims)."""
    hi, lo = [float(v) for v in higher], [float(v) for v in lower]
    _remember("beyond_spread", tuple(hi), tuple(lo))
    return min(hi) > max(lo)


def times(x: float, ref: float, n: float) -> bool:
    """``x`` is at least ``n`` times ``ref`` ("N times", "N-fold")."""
    _remember("times", float(x), float(ref), float(n))
    return float(x) >= n * float(ref)


def far(x: float, ref: float) -> bool:
    """``x`` is far above ``ref`` ("far longer", "far slower", "far more"): at least
    :data:`FAR` (3) times it."""
    _remember("far", float(x), float(ref))
    return float(x) >= FAR * float(ref)


def perturbed(word: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Copies of a call's arguments that the word must reject: a doubled or halved ratio
    (about, barely changed), an added outlier (no outlier), the sets swapped or a value of
    the lower set raised past the higher (beyond the spread), a halved ratio (times: so
    "3 times" is said only of a ratio under 6), a ratio just under 3 (far)."""
    if word == "about":
        x, ref = args
        return [(2 * x, ref), (x / 2, ref)]
    if word == "barely_changed":
        before, after = args
        return [(before, 2 * after), (before, after / 2)]
    if word == "no_outlier":
        (vals,) = args
        mid = statistics.median(vals)
        return [((*vals, 2 * mid),)]
    if word == "beyond_spread":
        hi, lo = args
        return [(lo, hi), (hi, (*lo, max(hi) * 1.01 if max(hi) > 0 else 1.0))]
    if word == "times":
        x, ref, n = args
        return [(x / 2, ref, n)]
    if word == "far":
        x, ref = args
        return [(0.99 * FAR * ref, ref)]
    raise ValueError(f"no perturbation for {word!r}")
