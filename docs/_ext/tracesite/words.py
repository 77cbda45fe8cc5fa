"""The words a page uses about numbers, each with one meaning, checked the same everywhere.

A claim whose sentence says one of these words ("about", "most", "a few µs", "far
longer", ...) checks it with the function of that name here, so the check is as tight as
the word: each function's docstring and the constant it reads give its meaning, and the
tables in CONTRIBUTING.md (with the functions) and the glossary's "Words about numbers"
(for readers) list them, kept alike by ``tests/site/test_facts.py``. A check may be
stricter than its word (a sentence that gives its own number, "under 30 %", checks that
number), never looser.

The facts runner remembers each call a page's facts make (:func:`recording`) and stores
them with the facts, so that a test can feed every claim a perturbed copy of its own data
(a doubled ratio, an added outlier) and expect it to fail; and, with :data:`SAYS`, that a
claim whose sentence says a word calls its function.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ABOUT",
    "DOZENS",
    "FAR",
    "FEW",
    "FEW_BYTES",
    "FEW_PCT",
    "FEW_US",
    "HUNDREDS",
    "MOST",
    "MUCH",
    "NEARLY_ALL",
    "SMALL_SHARE",
    "TINY",
    "a_little",
    "about",
    "barely_changed",
    "beyond_spread",
    "dozens",
    "far",
    "few",
    "few_bytes",
    "few_pct",
    "few_us",
    "hundreds",
    "most",
    "much",
    "nearly_all",
    "no_outlier",
    "small_share",
    "tiny",
    "perturbed",
    "recording",
    "said",
    "unchecked",
    "stop",
    "times",
]

#: "Far" longer, slower, more: at least this many times the reference.
FAR = 3.0

#: "About": within this fraction of the reference; "a little", "slightly": above it by
#: at most this fraction.
ABOUT = 0.10

#: "Much" longer, "well" over: at least this many times the reference.
MUCH = 2.0

#: "Most" of a whole: more than this share of it.
MOST = 0.5

#: "Nearly all", "almost all": at least this share.
NEARLY_ALL = 0.9

#: "A small share", "a small fraction", "a small part": under this share.
SMALL_SHARE = 0.3

#: "A few per cent": under this share (a bound: "within a few per cent").
FEW_PCT = 0.1

#: "Tiny" next to a reference: under this share of it.
TINY = 0.01

#: "A few µs": at most this many microseconds.
FEW_US = 5.0

#: "A few bytes": from 1 to this many.
FEW_BYTES = 16

#: "A few" (a count): from 2 to this many.
FEW = 9

#: "Dozens": a count in this range (two dozen to 99).
DOZENS = range(24, 100)

#: "Hundreds": a count in this range.
HUNDREDS = range(200, 1000)

_calls: list[tuple[str, tuple[Any, ...]]] | None = None

#: How a sentence says each word (a claim whose sentence matches calls the word's
#: function: ``tests/site/test_facts.py``). Only uses in the table's sense: "the most GPU
#: time" is a superlative, not :func:`most`.
SAYS = {
    "about": r"\babout\b(?! (how|why|what|which|it|this|that|a kernel|the kernel))",
    "beyond_spread": r"\bbeyond (the|their|its) spread",
    "barely_changed": r"\bbarely (changed|moved|changes|moves)",
    "no_outlier": r"\bno outlier",
    "far": r"\bfar (more|less|longer|shorter|slower|faster|larger|smaller|fewer|wider|above|"
    r"below|ahead|behind)\b",
    "much": r"(?<!how )\bmuch (more|less|longer|shorter|slower|faster|larger|smaller|fewer)\b"
    r"|\bwell (under|over|below|above)\b",
    "a_little": r"\ba little (more|less|faster|slower|longer|shorter)\b|\bslightly\b",
    "most": r"(?<!\bthe )(?<!\bat )(?<!\bidled )\bmost\b(?! likely)",
    "nearly_all": r"\b(nearly|almost) (all|every|never)\b",
    "small_share": r"\ba small (share|fraction|part)\b",
    "few_pct": r"\ba few (per ?cent|%)",
    "tiny": r"\btiny\b",
    "few_us": r"\ba few (µs|microseconds)\b",
    "few_bytes": r"\ba few bytes\b",
    "few": r"\b(a|the) few (?!µs|microseconds|bytes|per ?cent|%)[a-z]",
    "dozens": r"\bdozens\b",
    "hundreds": r"(?<!tens to )\bhundreds\b",
}

#: Words whose meaning another word's check implies: "no outlier" is every value about
#: the median, "barely changed" is about the same as before.
IMPLIED_BY = {"about": {"no_outlier", "barely_changed"}}


def said(sentence: str) -> set[str]:
    """The words of :data:`SAYS` that ``sentence`` uses (:func:`unchecked` pairs them with a
    check's calls)."""
    return {word for word, pattern in SAYS.items() if re.search(pattern, sentence, re.I)}


def unchecked(sentence: str, called: Sequence[str]) -> set[str]:
    """The words ``sentence`` says whose function its check did not call."""
    return {
        w for w in said(sentence) if w not in called and not IMPLIED_BY.get(w, set()) & set(called)
    }


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


def much(x: float, ref: float) -> bool:
    """``x`` is much more than ``ref`` ("much longer", "well over"; "well under" and "much
    less" are the same call with the two swapped): at least :data:`MUCH` (2) times it."""
    _remember("much", float(x), float(ref))
    return float(x) >= MUCH * float(ref)


def a_little(x: float, ref: float) -> bool:
    """``x`` is a little more than ``ref`` ("a little faster", "slightly more"): above it,
    by at most :data:`ABOUT` (10 %). "Slightly less" swaps the two."""
    _remember("a_little", float(x), float(ref))
    return float(ref) < float(x) <= (1 + ABOUT) * float(ref)


def most(part: float, whole: float) -> bool:
    """``part`` is most of ``whole``: more than :data:`MOST` (half) of it."""
    _remember("most", float(part), float(whole))
    return float(part) > MOST * float(whole)


def nearly_all(part: float, whole: float) -> bool:
    """``part`` is nearly all of ``whole``: at least :data:`NEARLY_ALL` (90 %) of it."""
    _remember("nearly_all", float(part), float(whole))
    return float(part) >= NEARLY_ALL * float(whole)


def small_share(part: float, whole: float) -> bool:
    """``part`` is a small share (fraction, part) of ``whole``: under :data:`SMALL_SHARE`
    (30 %) of it."""
    _remember("small_share", float(part), float(whole))
    return float(part) < SMALL_SHARE * float(whole)


def few_pct(part: float, whole: float) -> bool:
    """``part`` is a few per cent of ``whole``: under :data:`FEW_PCT` (10 %) of it."""
    _remember("few_pct", float(part), float(whole))
    return float(part) < FEW_PCT * float(whole)


def tiny(x: float, ref: float) -> bool:
    """``x`` is tiny next to ``ref``: under :data:`TINY` (1 %) of it."""
    _remember("tiny", float(x), float(ref))
    return float(x) < TINY * float(ref)


def few_us(x_us: float) -> bool:
    """``x_us`` is a few µs: at most :data:`FEW_US` (5). A signed gap is passed as its
    size (``abs``) where the sentence says "within"."""
    _remember("few_us", float(x_us))
    return float(x_us) <= FEW_US


def few_bytes(n: int) -> bool:
    """``n`` bytes are a few bytes: from 1 to :data:`FEW_BYTES` (16)."""
    _remember("few_bytes", int(n))
    return 1 <= int(n) <= FEW_BYTES


def few(n: int) -> bool:
    """``n`` things are a few: from 2 to :data:`FEW` (9)."""
    _remember("few", int(n))
    return 2 <= int(n) <= FEW


def dozens(n: int) -> bool:
    """``n`` things are dozens: from 24 to 99 (:data:`DOZENS`)."""
    _remember("dozens", int(n))
    return int(n) in DOZENS


def hundreds(n: int) -> bool:
    """``n`` things are hundreds: from 200 to 999 (:data:`HUNDREDS`)."""
    _remember("hundreds", int(n))
    return int(n) in HUNDREDS


def perturbed(word: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Copies of a call's arguments that the word must reject: a doubled or halved ratio
    (about, barely changed), an added outlier (no outlier), the sets swapped or a value of
    the lower set raised past the higher (beyond the spread), a halved ratio (times: so
    "3 times" is said only of a ratio under 6), a ratio just past the word's threshold
    (far, much, most, nearly all, a small share, a few per cent, tiny, a few µs), no rise
    or twice the word's rise (a little), a count just outside the word's range (a few
    bytes, a few, dozens, hundreds)."""
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
    if word == "much":
        x, ref = args
        return [(0.99 * MUCH * ref, ref)]
    if word == "a_little":
        x, ref = args
        return [(ref, ref), ((1 + 2 * ABOUT) * ref, ref)]
    shares = {"most": (MOST, 0.99), "nearly_all": (NEARLY_ALL, 0.99)}
    if word in shares:
        part, whole = args
        share, below = shares[word]
        return [(below * share * whole, whole)]
    limits = {"small_share": SMALL_SHARE, "few_pct": FEW_PCT, "tiny": TINY}
    if word in limits:
        part, whole = args
        return [(1.01 * limits[word] * whole, whole)]
    if word == "few_us":
        return [(1.01 * FEW_US,)]
    if word == "few_bytes":
        return [(0,), (FEW_BYTES + 1,)]
    if word == "few":
        return [(1,), (FEW + 1,)]
    if word in ("dozens", "hundreds"):
        span = DOZENS if word == "dozens" else HUNDREDS
        return [(span.start - 1,), (span.stop,)]
    raise ValueError(f"no perturbation for {word!r}")
