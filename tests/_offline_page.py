"""Open a written HTML page in headless Chromium, offline, and collect what it asked for.

The report and diff tests share it: a page must make no request outside the file and raise
no error in the browser. It drives the run's one Playwright (the ``playwright`` fixture of
tests/conftest.py): the sync API allows one per thread, and the browser checks keep theirs
open for the whole session.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")


@contextmanager
def offline_page(path: Path, pw: Any) -> Iterator[tuple[Any, list[str], list[str]]]:
    """``(page, requests, errors)`` for ``path``, opened with the Playwright ``pw``; skips
    the test without Chromium. ``errors`` holds console errors and uncaught exceptions."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing")
    requests: list[str] = []
    errors: list[str] = []
    browser = pw.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
    )
    page = browser.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    try:
        yield page, requests, errors
    finally:
        browser.close()


def outside(requests: list[str]) -> list[str]:
    """The requests that left the file."""
    return [u for u in requests if not u.startswith(("file:", "data:"))]
