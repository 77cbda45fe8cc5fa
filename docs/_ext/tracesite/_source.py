"""Reading an example's source: the code hash, and its definitions without its page.

Both work on the script's text with :mod:`ast`, never by importing it, so a
recording's staleness can be checked on a machine without torch, and a
profiling function can run in a fresh process without the page around it.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["RecordingError", "StaleRecordingError", "code_hash", "load_definitions"]


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
