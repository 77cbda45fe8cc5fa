"""Shared test setup: ``_builders`` (synthetic trace builders) importable as a plain module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # _builders.py, next to this file


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``--dist loadgroup``), the tests of a module that uses the facts
    runner (``tracesite.facts``) run on one worker: a page's facts are computed by the
    first test that asks and written to ``docs/_generated/facts/<page>.json``, a file that
    two workers must not write at once."""
    facts = sys.modules.get("tracesite.facts")
    if facts is None:
        return
    for item in items:
        module = getattr(item, "module", None)
        found = vars(module).values() if module is not None else ()
        if any(v is facts or getattr(v, "__module__", None) == facts.__name__ for v in found):
            item.add_marker(pytest.mark.xdist_group("facts"))


def pytest_addoption(parser):
    parser.addoption(
        "--site",
        default=str(Path(__file__).resolve().parent.parent / "docs" / "_build" / "html"),
        help="the built site that the browser and downloads checks read (default: docs/_build/html)",
    )
