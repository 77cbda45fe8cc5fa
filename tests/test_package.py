"""The library ships only itself: no recordings, no page glue, no torch, no import circles."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "tracereader"


def _imports(path: Path, modules: set[str]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            found |= set(names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tracereader."):
            found.add(node.module.split(".")[1])
    return found & modules


def test_no_two_modules_import_each_other():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    graph = {p.stem: _imports(p, modules) for p in PACKAGE.glob("*.py")}
    mutual = sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, ()))
    assert mutual == []


def test_package_holds_no_recordings_or_page_glue():
    files = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*") if p.is_file()}
    assert not [f for f in files if f.endswith((".gz", ".json", ".txt"))]
    assert not {"record.py", "_live.py", "_html.py", "_profiler_table.py"} & files
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'tracereader = ["py.typed"]' in pyproject


def test_imports_without_torch():
    code = "import sys; sys.modules['torch'] = None; import tracereader, tracereader.cli; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
