"""The words pages use about numbers (docs/_ext/tracesite/words.py): one meaning each, and
each perturbation breaks a call that held (every page's worded claims are fed their
perturbed data in test_facts.py)."""

from __future__ import annotations

import pytest
from tracesite import words


def test_about_is_within_ten_percent() -> None:
    assert words.about(109, 100) and words.about(91, 100)
    assert not words.about(111, 100) and not words.about(89, 100)


def test_barely_changed_is_within_ten_percent() -> None:
    assert words.barely_changed(100, 108)
    assert not words.barely_changed(100, 240)  # a 2.4-fold change is not "barely"


def test_no_outlier_is_every_value_within_ten_percent_of_the_median() -> None:
    assert words.no_outlier([100, 104, 96])
    assert not words.no_outlier([100, 104, 119])  # a 19 % outlier


def test_beyond_spread_needs_the_ranges_apart() -> None:
    assert words.beyond_spread([10, 11], [8, 9])
    assert not words.beyond_spread([10, 11], [8, 10.5])


def test_times_is_at_least() -> None:
    assert words.times(31, 10, 3) and not words.times(29, 10, 3)


def test_calls_are_remembered_only_while_recording() -> None:
    words.about(1, 1)
    seen = words.recording()
    words.about(2, 2)
    words.stop()
    words.about(3, 3)
    assert seen == [("about", (2.0, 2.0))]


@pytest.mark.parametrize(
    "word", ["about", "barely_changed", "no_outlier", "beyond_spread", "times"]
)
def test_each_perturbation_breaks_a_call_that_held(word: str) -> None:
    held = {
        "about": (1.05, 1.0),
        "barely_changed": (1.0, 0.95),
        "no_outlier": ((1.0, 1.02, 0.99),),
        "beyond_spread": ((3.0, 3.1), (2.0, 2.2)),
        "times": (3.5, 1.0, 3.0),
    }[word]
    check = getattr(words, word)
    assert check(*held)
    for args in words.perturbed(word, held):
        assert not check(*args), (word, args)
