"""Reading an example's source: the code hash, and its definitions without its page.

Both work on the script's text with :mod:`ast`, never by importing it, so a
recording's staleness can be checked on a machine without torch, and a
profiling function can run in a fresh process without the page around it.

An *example* is what the recordings are filed under (``docs/recordings/<gpu>/<example>/``):
a folder ``examples/NN_name/`` of story scripts (one experiment each, a sub-gallery
of the site), or, in tests, one script ``NN_name.py``. Each script defines the
variants it shows in a ``VARIANTS`` dict literal; :func:`variant_sources` reads which
script defines which variant without running any of them.

A folder may also hold one *helper* module, ``_NN_name.py`` (a leading underscore: it is
not a story, and the gallery neither runs nor lists it), with the code its stories share.
A story imports names from it (``from _05_common import build_model``). For the code hash,
:func:`load_definitions` and the site's downloads, that import stands for the helper's
statements, inlined where the import is (:func:`statements`): a story hashes exactly as
the one file it would be with the helper pasted in, and its download is that one file.
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
    "helper_module",
    "inlined_source",
    "load_definitions",
    "statements",
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


def _definitions(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Module-level names bound by def, class, assignment or import (the last binding)."""
    defs: dict[str, ast.stmt] = {}
    for stmt in body:
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


def helper_module(script: str | os.PathLike[str], stmt: ast.stmt) -> Path | None:
    """The helper module ``stmt`` imports from, if it is ``from _helper import names`` and
    ``_helper.py`` sits beside ``script``; else None."""
    if not (isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module):
        return None
    if not stmt.module.startswith("_") or "." in stmt.module:
        return None
    path = Path(script).parent / f"{stmt.module}.py"
    return path if path.is_file() else None


def statements(script: str | os.PathLike[str]) -> list[tuple[Path, ast.stmt]]:
    """The script's module-level statements, each with the file it is in: an import from
    its helper module (:func:`helper_module`) is replaced by the helper's statements.

    Raises :class:`RecordingError` for what the inlining cannot keep the same: a helper
    that imports another helper, ``import *`` or ``as`` from a helper, or a name the helper
    does not define.
    """
    script = Path(script)
    out: list[tuple[Path, ast.stmt]] = []
    for stmt in ast.parse(script.read_text(encoding="utf-8")).body:
        helper = helper_module(script, stmt)
        if helper is None:
            out.append((script, stmt))
            continue
        assert isinstance(stmt, ast.ImportFrom)
        inner = ast.parse(helper.read_text(encoding="utf-8")).body
        where = f"{script.name}:{stmt.lineno}"
        if any(helper_module(helper, s) for s in inner):
            raise RecordingError(f"{helper.name}: a helper module imports no other helper")
        if any(a.name == "*" or a.asname for a in stmt.names):
            raise RecordingError(f"{where}: import names from {helper.name} by name, without 'as'")
        missing = sorted({a.name for a in stmt.names} - set(_definitions(inner)))
        if missing:
            raise RecordingError(f"{where}: {helper.name} defines no {', '.join(missing)}")
        out.extend((helper, s) for s in inner)
    return out


def _pasted(helper: Path) -> str:
    """The helper's code as a story's download holds it: all but its module docstring,
    between two comment lines that name it."""
    text = helper.read_text(encoding="utf-8")
    body = ast.parse(text).body
    has_doc = (
        bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    )
    start = (body[0].end_lineno or 0) if has_doc else 0
    code = "".join(text.splitlines(keepends=True)[start:]).strip("\n")
    return (
        f"# ---- {helper.name}: the code this set's stories share, pasted in ----\n\n"
        f"{code}\n\n# ---- end of {helper.name} ----\n"
    )


def inlined_source(
    script: str | os.PathLike[str],
) -> tuple[str, list[tuple[str, str, Path]]] | None:
    """The story as one file, each import from its helper module replaced by the helper's
    code (what the site offers as its download), and the (import, pasted, helper) text
    pairs with the helper's path; None if the story imports no helper. It hashes as the
    story does (:func:`statements`)."""
    script = Path(script)
    text = script.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    swaps = []
    for stmt in ast.parse(text).body:
        helper = helper_module(script, stmt)
        if helper is not None:
            first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
            swaps.append((first, last, "".join(lines[first - 1 : last]), _pasted(helper), helper))
    if not swaps:
        return None
    for first, last, _, pasted, _ in reversed(swaps):
        lines[first - 1 : last] = [pasted]
    return "".join(lines), [(old, new, helper) for _, _, old, new, helper in swaps]


def code_hash(source_path: str | os.PathLike[str], entry: str, params: dict[str, Any]) -> str:
    """Hash of ``entry`` in ``source_path``, everything it reaches, and ``params``.

    What it reaches counts as a set of statements: where each stands (in the story or in
    its helper, above or below its caller) does not change the hash.

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
    body = [stmt for _, stmt in statements(source_path)]
    defs = _definitions(body)
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
    # Sorted, so that the hash depends neither on the traversal nor on where a definition
    # stands: moving one verbatim (within the story, or into its helper) keeps the hash.
    parts = sorted(_canonical(_strip_docstrings(s)) for s in seen.values())
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
    runs: list[tuple[Path, list[ast.stmt]]] = []  # consecutive definitions of one file
    bound: set[str] = set()
    for where, node in statements(path):
        if _is_definition(node, bound):
            if not runs or runs[-1][0] != where:
                runs.append((where, []))
            runs[-1][1].append(node)
            bound |= _bound_names(node)
    namespace: dict[str, Any] = {
        "__name__": f"tracereader_example_{path.stem}",
        "__file__": str(path),
    }
    for where, body in runs:  # each compiled under its own file, so tracebacks point there
        exec(compile(ast.Module(body=body, type_ignores=[]), str(where), "exec"), namespace)
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
