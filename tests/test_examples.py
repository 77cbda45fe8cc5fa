"""Every example runs as a plain script on the CPU, and every recorded variant's harness
runs there too (sizes scaled down), so a downloaded script cannot rot.

What a reader downloads from the built site is tested separately, in a venv with only
torch (tests/downloads, ``nox -s downloads``).
"""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import tokenize
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from tracesite import load_definitions  # noqa: E402
from tracesite._source import inlined_source, statements  # noqa: E402

EXAMPLES = sorted((ROOT / "examples").glob("*/[0-9]*.py"))
ENV = {k: v for k, v in os.environ.items() if not k.startswith("TRACE")}
ENV["KINETO_LOG_LEVEL"] = "6"


@pytest.mark.scripts
@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_as_a_plain_script_on_the_cpu(script, tmp_path):
    """`python NN_example.py`: profiles on the CPU and says why there is no GPU lane.

    ``nox`` leaves this to its downloads session, which runs each story as the site
    offers it (helper pasted in), with no flags and with each its docstring names;
    ``pytest tests/test_examples.py`` still runs it from the repository."""
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=ENV, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    if not torch.cuda.is_available():
        assert "no GPU lane" in done.stdout
    assert list((tmp_path / "traces").rglob("*.json"))


def _script_variants() -> list[tuple[Path, str | None]]:
    """(script, variant name) for every variant of every example: one test each, so that
    pytest-xdist spreads a set's variants over its workers. A script whose definitions do
    not load, or that has no variant, is one test with no name, that fails saying why."""
    found: list[tuple[Path, str | None]] = []
    for script in EXAMPLES:
        try:
            names = list(load_definitions(script)["VARIANTS"])
        except Exception:
            names = []
        found += [(script, name) for name in names] or [(script, None)]
    return found


@pytest.mark.parametrize(
    "script, variant",
    _script_variants(),
    ids=lambda v: v.stem if isinstance(v, Path) else str(v),
)
def test_every_variant_runs_on_the_cpu(script, variant, tmp_path):
    ns = load_definitions(script)
    variants = ns["VARIANTS"]
    assert variants, f"{script.name} has no VARIANTS"
    for name, (harness, params) in [(variant, variants[variant])]:
        small = dict(params, device="cpu")
        for key in ("size", "batch", "seq", "dim", "hidden", "in_dim", "out_dim", "heads"):
            if key in small:
                small[key] = min(small[key], 32)
        if "active" in small:
            small["active"] = min(small["active"], 3)
        if "shape" in small:  # 05_llm_decode: the tiny Llama, a few tokens
            small.update(shape="tiny", new_tokens=4, profiled_tokens=2, runs=1)
            if small.get("with_stack"):  # as the example's own run() does on the CPU: some
                small["with_stack"] = False  # CPU builds of torch fail to decode frame names
        for key, few in {"cycles": 1, "unprofiled_cycles": 1, "calls": 2, "copy_mib": 1}.items():
            if key in small:
                small[key] = few
        out = tmp_path / name
        with warnings.catch_warnings():
            # torch's own advice ("won't be using warmup") is part of some experiments.
            warnings.simplefilter("ignore", UserWarning)
            table = harness(out, **small)
        # The profiler's table, or (a harness that times without the profiler and
        # writes timings.json) a table of its own measurements.
        assert "Self CPU time total" in table or (
            (out / "timings.json").exists() and table.strip()
        ), name
        assert (out / "trace.json").stat().st_size > 0, name


def narrative_share(source: str) -> float:
    """Comment lines and the module docstring, over the non-blank lines."""
    lines = source.splitlines()
    told: set[int] = set()
    body = ast.parse(source).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        told |= set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and lines[tok.start[0] - 1].lstrip().startswith("#"):
            told.add(tok.start[0])
    nonblank = [i for i, line in enumerate(lines, 1) if line.strip()]
    return sum(i in told for i in nonblank) / len(nonblank)


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_a_story_is_short_and_mostly_narrative(script):
    """At most 400 lines, at least half of them comments or the docstring (a set's helper
    module, ``_NN_*.py``, is not a story: its stories' downloads paste it in)."""
    source = script.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 400
    assert narrative_share(source) >= 0.5


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_imports_nothing_but_torch_and_the_standard_library(script):
    """Nor does its set's helper module, which the story's download has pasted in."""
    tree = ast.Module(body=[stmt for _, stmt in statements(script)], type_ignores=[])
    top = set()
    for node in tree.body:  # module level only: tracereader is imported inside a try
        if isinstance(node, ast.Import):
            top |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            top.add((node.module or "").split(".")[0])
    assert top - {"torch"} <= set(sys.stdlib_module_names), top
    assert "tracesite" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}, (
        "the replay glue is reached through sys.modules, never imported"
    )


def test_a_named_variant_names_its_trace_file(tmp_path):
    """`python STORY.py VARIANT`: profiles that variant alone, its trace named after it."""
    script = ROOT / "examples" / "01_matmul_add" / "01e_dtypes.py"
    for variant in ("4096_fp32", "4096_fp32_tf32"):
        done = subprocess.run(
            [sys.executable, str(script), variant], cwd=tmp_path, env=ENV,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Self CPU time total" in done.stdout
    written = sorted(p.name for p in (tmp_path / "traces" / "01_matmul_add").glob("*.json"))
    assert written == ["4096_fp32.json", "4096_fp32_tf32.json"]


def test_changed_settings_name_their_trace_files(tmp_path, monkeypatch):
    """`run("4096_fp32", size=16)`: the trace's name spells out what was changed."""
    run = load_definitions(ROOT / "examples" / "01_matmul_add" / "01e_dtypes.py")["run"]
    monkeypatch.chdir(tmp_path)
    run("4096_fp32", size=16)
    run("4096_fp32", size=16, tf32=True)
    written = sorted(p.name for p in (tmp_path / "traces" / "01_matmul_add").glob("*.json"))
    assert written == ["4096_fp32_size16.json", "4096_fp32_size16_tf32True.json"]


def test_unknown_variant_is_one_line(tmp_path):
    script = ROOT / "examples" / "01_matmul_add" / "01a_table_and_timeline.py"
    done = subprocess.run(
        [sys.executable, str(script), "nope"], cwd=tmp_path, env=ENV,
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "'nope'" in done.stderr, done.stderr


SNIPPETS = sorted((ROOT / "docs" / "snippets").glob("*.py"))


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.stem)
def test_a_snippet_a_page_shows_runs_with_only_torch(snippet, tmp_path):
    done = subprocess.run(
        [sys.executable, str(snippet)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Self CPU time total" in done.stdout
    written = [p for p in tmp_path.iterdir() if p.name in ("trace.json", "trace.json.gz")]
    assert len(written) == 1 and written[0].stat().st_size > 0, sorted(tmp_path.iterdir())
    if written[0].suffix == ".gz":  # the name asks for gzip: the profiler must write it
        assert written[0].read_bytes()[:2] == b"\x1f\x8b"


@pytest.mark.parametrize("script", [s for s in EXAMPLES if inlined_source(s)], ids=lambda p: p.stem)
def test_a_story_with_a_helper_downloads_as_one_file_that_hashes_the_same(script, tmp_path):
    """The download pastes the helper in where the story imports it: the one file then
    defines every variant the same, and every variant's code hash is the story's."""
    from tracesite import code_hash

    text, swaps = inlined_source(script)
    assert swaps and all(old.lstrip().startswith("from _") for old, _, _ in swaps)
    alone = tmp_path / script.name  # no helper beside it
    alone.write_text(text, encoding="utf-8")
    mine, theirs = load_definitions(script)["VARIANTS"], load_definitions(alone)["VARIANTS"]
    assert list(mine) == list(theirs)
    for name, (harness, params) in mine.items():
        assert theirs[name][1] == params
        entry = harness.__name__
        assert code_hash(alone, entry, params) == code_hash(script, entry, params), name


def test_the_gallery_neither_runs_nor_lists_a_helper_module():
    """sphinx-gallery matches ``ignore_pattern`` against the file name alone."""
    import re

    conf = ast.parse((ROOT / "docs" / "conf.py").read_text(encoding="utf-8"))
    found = next(
        v.value
        for node in ast.walk(conf)
        if isinstance(node, ast.Dict)
        for k, v in zip(node.keys, node.values, strict=True)
        if isinstance(k, ast.Constant) and k.value == "ignore_pattern"
    )
    helpers = sorted(p.name for p in (ROOT / "examples").glob("*/_[0-9][0-9]_*.py"))
    assert helpers and all(re.search(found, name) for name in helpers)
    assert not any(re.search(found, p.name) for p in EXAMPLES)
