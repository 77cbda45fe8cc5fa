"""Shared test setup: ``_builders`` (synthetic trace builders) importable as a plain module."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # _builders.py, next to this file


def pytest_addoption(parser):
    parser.addoption(
        "--site",
        default=str(Path(__file__).resolve().parent.parent / "docs" / "_build" / "html"),
        help="the built site that the browser and downloads checks read (default: docs/_build/html)",
    )
