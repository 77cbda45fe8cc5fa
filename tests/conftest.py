"""Shared test setup: ``_builders`` (synthetic trace builders) importable as a plain module,
and the run's one Playwright."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # _builders.py, next to this file


def pytest_addoption(parser):
    parser.addoption(
        "--site",
        default=str(Path(__file__).resolve().parent.parent / "docs" / "_build" / "html"),
        help="the built site that the browser and downloads checks read (default: docs/_build/html)",
    )


@pytest.fixture(scope="session")
def playwright():
    """The run's one Playwright (skips without it): its sync API allows one per thread, so
    the browser checks and the report pages' tests share it in a one-process run."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        yield pw
