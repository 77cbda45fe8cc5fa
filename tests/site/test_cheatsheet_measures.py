"""The cheatsheet's facts (docs/facts/cheatsheet.py and _cheatsheet_*.py) and pictures
(docs/cheatsheet_pictures.py, docs/cheatsheet_parts_pictures.py) against the real recordings:
every entry's claims hold and every entry draws its picture, with alt text (the facts run
checks every repeat; this test, the drawn one, without a notebook)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def cs(monkeypatch_module: pytest.MonkeyPatch) -> Any:
    monkeypatch_module.syspath_prepend(str(DOCS))
    monkeypatch_module.syspath_prepend(str(DOCS / "facts"))
    monkeypatch_module.chdir(DOCS)  # where the page runs
    import _cheatsheet_common
    import _cheatsheet_matmul
    import _cheatsheet_parts
    import cheatsheet
    import cheatsheet_parts_pictures
    import cheatsheet_pictures
    import tracesite.notebook as nb

    glued: dict[str, Any] = {}
    monkeypatch_module.setattr(nb, "_glue", glued.__setitem__)  # no notebook to glue into
    return SimpleNamespace(
        common=_cheatsheet_common,
        intro=cheatsheet.intro,
        pictures=cheatsheet_pictures,
        # each facts module with the module that draws its entries
        entries=[
            (_cheatsheet_matmul, cheatsheet_pictures),
            (_cheatsheet_parts, cheatsheet_parts_pictures),
        ],
        GLUED=glued,
    )


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
    page = (DOCS / "cheatsheet.md").read_text(encoding="utf-8")
    for facts, pictures in cs.entries:
        entries, drawn = _entries(facts), _entries(pictures)
        called = [f.__name__ for f in entries]
        assert called == [f.__name__ for f in drawn]  # each entry's facts and its picture
        assert called == [n for n in called if f".{n}()" in page]  # each is on the page
        for fn, draw in zip(entries, drawn, strict=True):
            fn()
            out = draw()
            picture = out() if callable(out) else out
            assert picture.png[:4] == b"\x89PNG", fn.__name__
    cs.pictures.check_entries()
    assert all(key in cs.GLUED for key in ("gpu", "ovh_cpu", "hf_gemm_name"))
    assert len(cs.pictures.ALTS) == page.count("\n### ")


def test_durations_read_in_three_figures(cs):
    c = cs.common
    assert [str(c.us(x)) for x in (0.0123, 5.5, 123.4, 4567.0, 2.5e6)] == [
        "0.0123 µs", "5.50 µs", "123 µs", "4.57 ms", "2.50 s",
    ]  # fmt: skip
    assert str(c.times(3.14159)) == "3.1×" and str(c.times(1234)) == "1,234×"
    assert c.their(2314.0) == "2.314 ms" and c.their(23.104) == "23.104 µs"
