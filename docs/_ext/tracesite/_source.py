"""Reading an example's source: the code hash, and its definitions without its page.

Both work on the script's text with :mod:`ast`, never by importing it, so a
recording's staleness can be checked on a machine without torch, and a
profiling function can run in a fresh process without the page around it.

An *example* is what the recordings are filed under (``docs/recordings/<example>/``):
a folder ``examples/NN_name/`` of story scripts (one experiment each, a sub-gallery
of the site), or, in tests, one script ``NN_name.py``. Each script defines the
variants it shows in a ``VARIANTS`` dict literal; :func:`variant_sources` reads which
script defines which variant without running any of them.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "RecordingError",
    "StaleRecordingError",
    "code_hash",
    "example_name",
    "example_scripts",
    "find_examples",
    "harness_source",
    "load_definitions",
    "variant_sources",
]


class RecordingError(RuntimeError):
    """A recording is missing or unreadable."""


class StaleRecordingError(RecordingError):
    """The code or parameters changed since the recording was made."""


def _strip_docstrings(node: ast.AST) -> ast.AST:
    for sub in ast.walk(node):
        body = getattr(sub, "body", None)
        if (
            isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            sub.body = body[1:] or [ast.Pass()]
    return node


def _canonical(node: Any) -> str:
    """A dump of an AST that is the same on every Python version.

    ``ast.dump`` is not: Python 3.12 added fields such as ``type_params``. Empty
    and missing fields are dropped, so code recorded on the GPU machine's Python
    hashes the same on the docs machine's.
    """
    if isinstance(node, ast.AST):
        fields = []
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or value == []:
                continue
            fields.append(f"{name}={_canonical(value)}")
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(_canonical(v) for v in node) + "]"
    return repr(node)


def _definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    """Module-level names bound by def, class, assignment or import."""
    defs: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defs[name.id] = stmt
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                defs[(alias.asname or alias.name).split(".")[0]] = stmt
    return defs


def code_hash(source_path: str | os.PathLike[str], entry: str, params: dict[str, Any]) -> str:
    """Hash of ``entry`` in ``source_path``, everything it reaches, and ``params``.

    Parameters
    ----------
    source_path
        The example script.
    entry
        Name of its profiling function.
    params
        The keyword arguments the function is called with (JSON-serialisable).

    Returns
    -------
    str
        16 hex digits of a SHA-256.
    """
    tree = ast.parse(Path(source_path).read_text(encoding="utf-8"))
    defs = _definitions(tree)
    if entry not in defs:
        raise RecordingError(f"{source_path}: no module-level function named {entry!r}")
    seen: dict[int, ast.stmt] = {}
    todo = [entry]
    while todo:
        stmt = defs.get(todo.pop())
        if stmt is None or id(stmt) in seen:
            continue
        seen[id(stmt)] = stmt
        todo.extend(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id in defs)
    # Keep source order so the hash does not depend on traversal order.
    order = {id(s): i for i, s in enumerate(tree.body)}
    parts = [
        _canonical(_strip_docstrings(s)) for s in sorted(seen.values(), key=lambda s: order[id(s)])
    ]
    parts.append(json.dumps(params, sort_keys=True, default=str))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _is_definition(node: ast.stmt, bound: set[str]) -> bool:
    """Imports, defs, classes, and constants built only from names already defined.

    Page body is everything else: ``rec = run_or_replay(...)`` (a call), or
    ``last = rec_trace.steps[-1]`` (uses a name the page body made). So a
    workload's module-level constants must be call-free expressions of imported
    or defined names, such as ``DTYPES = {"bfloat16": torch.bfloat16}``.
    """
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
        return True
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return False
    subs = list(ast.walk(node.value))
    if any(isinstance(sub, (ast.Call, ast.Await, ast.Yield, ast.NamedExpr)) for sub in subs):
        return False
    loaded = {sub.id for sub in subs if isinstance(sub, ast.Name)}
    return loaded <= bound | set(dir(builtins))


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def load_definitions(source_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Execute only an example's imports and module-level definitions.

    The page body (the ``run_or_replay`` calls and their printing) is skipped,
    so a profiling function can be called on its own: in a fresh process for a
    recording, or on the CPU in the test suite.
    """
    path = Path(source_path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body: list[ast.stmt] = []
    bound: set[str] = set()
    for node in tree.body:
        if _is_definition(node, bound):
            body.append(node)
            bound |= _bound_names(node)
    namespace: dict[str, Any] = {
        "__name__": f"tracereader_example_{path.stem}",
        "__file__": str(path),
    }
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def find_examples(examples_dir: str | os.PathLike[str]) -> list[Path]:
    """The examples under ``examples_dir``: its ``NN_name/`` folders and ``NN_name.py`` scripts."""
    found = [
        p
        for p in Path(examples_dir).glob("[0-9][0-9]_*")
        if (p.is_dir() and any(p.glob("[0-9]*.py"))) or p.suffix == ".py"
    ]
    return sorted(found, key=lambda p: p.stem)


def example_scripts(example: str | os.PathLike[str]) -> list[Path]:
    """An example's scripts: a folder's ``NN*.py`` stories in name order, or the one script."""
    path = Path(example)
    if path.is_dir():
        scripts = sorted(path.glob("[0-9]*.py"))
        if not scripts:
            raise RecordingError(f"{path}: no example scripts (NN*.py) in this folder")
        return scripts
    return [path]


def example_name(path: str | os.PathLike[str]) -> str:
    """The name an example's recordings are filed under: a folder's name; a script's
    folder when that folder is an example (``examples/01_matmul_add/01a_x.py`` ->
    ``01_matmul_add``); a lone script's stem."""
    path = Path(path)
    if path.suffix == ".py" and path.parent.name[:2].isdigit() and path.parent.name[2:3] == "_":
        return path.parent.name
    return path.stem


def _variant_names(script: Path) -> list[str]:
    tree = ast.parse(script.read_text(encoding="utf-8"))
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "VARIANTS" for t in stmt.targets
        ):
            if not isinstance(stmt.value, ast.Dict) or not all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in stmt.value.keys
            ):
                raise RecordingError(f"{script}: VARIANTS must be a dict literal with string keys")
            return [
                k.value
                for k in stmt.value.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
    return []


def variant_sources(example: str | os.PathLike[str]) -> dict[str, Path]:
    """Which script of an example defines each variant (read, not run: no torch needed)."""
    out: dict[str, Path] = {}
    for script in example_scripts(example):
        for name in _variant_names(script):
            if name in out:
                raise RecordingError(
                    f"variant {name!r} is defined in both {out[name].name} and {script.name}"
                )
            out[name] = script
    return out


def harness_source(harness: Any) -> Path:
    """The script a harness function was defined in (:func:`load_definitions` compiles
    each script under its own path)."""
    code = getattr(harness, "__code__", None)
    if code is None:
        raise RecordingError(f"{harness!r} is not a function defined in an example script")
    return Path(code.co_filename)
