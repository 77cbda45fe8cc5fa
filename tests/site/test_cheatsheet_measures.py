"""docs/cheatsheet_measures.py against the real recordings: every entry's claims hold and
every entry draws its picture, with alt text (the page checks every repeat; this test, the
drawn one, without a notebook)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def cs(monkeypatch_module: pytest.MonkeyPatch) -> Any:
    monkeypatch_module.syspath_prepend(str(DOCS))
    monkeypatch_module.chdir(DOCS)  # where the page runs
    import cheatsheet_measures
    import tracesite.notebook as nb

    glued: dict[str, Any] = {}
    monkeypatch_module.setattr(nb, "_glue", glued.__setitem__)  # no notebook to glue into
    cheatsheet_measures.GLUED = glued
    return cheatsheet_measures


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def _entries(module: Any) -> list[Callable[..., Any]]:
    """The entry functions, in page order."""
    fns = [f for name, f in vars(module).items()
           if inspect.isfunction(f) and f.__module__ == module.__name__
           and f.__doc__ and f.__doc__.startswith("Entry: ")]  # fmt: skip
    return sorted(fns, key=lambda f: f.__code__.co_firstlineno)


def test_every_entry_holds_and_draws(cs):
    import matplotlib

    matplotlib.use("Agg")
    cs.intro()
    entries = _entries(cs)
    page = (DOCS / "cheatsheet.md").read_text(encoding="utf-8")
    called = [f.__name__ for f in entries]
    assert called == [n for n in called if f"cs.{n}()" in page]  # each is on the page
    for fn in entries:
        out = fn()
        picture = out() if callable(out) else out
        assert picture.png[:4] == b"\x89PNG", fn.__name__
    cs.check_entries()
    assert all(key in cs.GLUED for key in ("gpu", "ovh_cpu", "hf_gemm_name"))
    assert len(cs.ALTS) == page.count("\n### ")


def test_durations_read_in_three_figures(cs):
    assert [str(cs.us(x)) for x in (0.0123, 5.5, 123.4, 4567.0, 2.5e6)] == [
        "0.0123 µs", "5.50 µs", "123 µs", "4.57 ms", "2.50 s",
    ]  # fmt: skip
    assert str(cs.times(3.14159)) == "3.1×" and str(cs.times(1234)) == "1,234×"
    assert cs.their(2314.0) == "2.314 ms" and cs.their(23.104) == "23.104 µs"
