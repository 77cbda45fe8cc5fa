"""The library ships only itself (no recordings, no page glue, no torch, no import circles)
and exactly the public names it means to."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import tracereader

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
    code = (
        "import sys; sys.modules['torch'] = None; import tracereader, tracereader.cli; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


#: Every name ``from tracereader import *`` gives. Adding or dropping one is an API change:
#: update this set and the API page (docs/api.md) together.
PUBLIC = {
    # load and events
    "load", "TraceError", "Trace", "Kind", "Lane", "Region",
    # link, measure, gaps
    "link", "Links", "summary", "gpu_busy_us", "launches", "LaunchTable", "step_times",
    "StepTime", "gaps", "Gap", "CAUSES", "region_times", "RegionTime", "region_table",
    # several ranks
    "load_ranks", "rank_summary", "RankSummary",
    # tables
    "kernel_table", "op_table", "Table", "compare", "Comparison", "shorten_kernel_name",
    # validate
    "validate", "Finding",
    # the GPUs' datasheet peaks
    "datasheet", "Datasheet", "DATASHEETS",
    # draw
    "timeline", "compare_timelines", "Callout", "alt_text",
}  # fmt: skip


def test_public_names_are_exactly_these_and_sorted():
    import tracereader

    assert set(tracereader.__all__) == PUBLIC
    assert tracereader.__all__ == sorted(PUBLIC)
    assert all(getattr(tracereader, name) is not None for name in tracereader.__all__)


def test_no_other_public_name_at_the_top_level():
    """A fresh import holds the names of ``__all__`` and private ones only (no stray imports)."""
    code = "import tracereader; print(' '.join(n for n in vars(tracereader) if n[0] != '_'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(done.stdout.split()) == PUBLIC


def test_every_public_name_is_in_the_api_reference():
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    missing = [n for n in tracereader.__all__ if f"tracereader.{n}\n" not in api]
    assert not missing, f"docs/api.md does not document {missing}"
