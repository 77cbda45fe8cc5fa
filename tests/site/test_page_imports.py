"""Every name a page's code cells import from the site's glue or the library exists.

Executing a page takes the docs build; this reads the cells instead, so a renamed or
dropped function (``facts_dir`` once) fails here, in the tests session, and not first in
``nox -s docs-strict``.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.M | re.S)
OURS = ("tracesite", "tracereader")


def pages() -> list[Path]:
    return sorted(
        p
        for p in DOCS.rglob("*.md")
        if "_build" not in p.parts and "{code-cell}" in p.read_text(encoding="utf-8")
    )


def cell_imports(page: Path) -> list[tuple[str, str]]:
    """``(module, name)`` for each ``from tracesite... import name`` in the page's cells."""
    found = []
    for body in CELL.findall(page.read_text(encoding="utf-8")):
        code = "\n".join(line for line in body.splitlines() if not line.startswith((":", "%")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(OURS):
                found += [(node.module or "", alias.name) for alias in node.names]
    return found


def test_there_are_pages_with_cells() -> None:
    assert len(pages()) >= 10


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.stem)
def test_every_imported_name_exists(page: Path) -> None:
    missing = [
        f"{module}.{name}"
        for module, name in cell_imports(page)
        if not hasattr(importlib.import_module(module), name)
    ]
    assert not missing, f"{page.name} imports names that do not exist: {missing}"
