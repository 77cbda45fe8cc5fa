"""Run an example's profiled workload on a GPU, or replay what a GPU run recorded.

Every GPU number on the site comes from a *recording*: a folder holding the
trace the profiler exported (gzipped), the profiler's own ``key_averages()``
table, and ``meta.json`` with the environment stamp and the hash of the code
and parameters that produced it.

An example calls :func:`run_or_replay` with its profiling function::

    rec = run_or_replay(profile_matmul_add, "64_bf16", size=64, dtype="bfloat16")
    print(rec.stamp_line())
    print(rec.table)

* On a machine with CUDA (unless ``TRACEREADER_REPLAY=1``) the function runs
  live. With ``TRACEREADER_RECORD=1``, or on a GPU docs build, the result also
  replaces the bundled recording.
* Everywhere else the bundled recording is replayed. If the code hash no
  longer matches, the recording is *stale*: a strict build
  (``TRACEREADER_STRICT=1``) fails with the command that re-records it; a
  normal build warns and marks the output as stale.

The code hash is computed from the example's source with :mod:`ast`, not by
importing it: the profiling function plus every module-level function, class
and constant it reaches, with docstrings and comments ignored. Editing prose
leaves a recording fresh; editing the workload makes it stale. This module
does not import torch at import time, so checking staleness needs no torch.
"""

from __future__ import annotations

import ast
import datetime as _dt
import gzip
import hashlib
import inspect
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "RECORD_COMMAND",
    "Recording",
    "RecordingError",
    "StaleRecordingError",
    "check_examples",
    "code_hash",
    "load",
    "load_definitions",
    "recordings_root",
    "run_or_replay",
]

#: The command that re-records every example; named in every staleness error.
RECORD_COMMAND = "python scripts/record.py (on a GPU machine; `nox -s record` does the same)"

#: The columns :meth:`Recording.table_view` keeps by default.
TABLE_COLUMNS = ("Self CPU", "CPU total", "Self CUDA", "CUDA total", "# of Calls")

_TRACE = "trace.json.gz"
_TABLE = "table.txt"
_META = "meta.json"


class RecordingError(RuntimeError):
    """A recording is missing or unreadable."""


class StaleRecordingError(RecordingError):
    """The code or parameters changed since the recording was made."""


def recordings_root() -> Path:
    """The folder that holds every bundled recording (package data)."""
    override = os.environ.get("TRACEREADER_RECORDINGS")
    return Path(override) if override else Path(__file__).parent / "recordings"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


# --------------------------------------------------------------------------- hashing


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


# --------------------------------------------------------------------------- recordings


@dataclass
class Recording:
    """One recorded (or live) profiler run of an example.

    Attributes
    ----------
    example, name
        ``01_matmul_add`` and ``64_bf16``: the recording lives in
        ``recordings/<example>/<name>/``.
    table
        The text of ``prof.key_averages().table(...)`` as the run printed it.
    meta
        Environment stamp, parameters, code hash, and how it was made.
    trace_path
        The gzipped Chrome trace.
    live
        True when this run happened just now on this machine.
    stale
        True when replayed although the code hash no longer matches.
    """

    example: str
    name: str
    table: str
    meta: dict[str, Any]
    trace_path: Path
    live: bool = False
    stale: bool = False
    _trace: Any = field(default=None, repr=False)

    @property
    def env(self) -> dict[str, Any]:
        """The environment stamp, with keys gpu, driver, torch, cuda, python and recorded_at."""
        return self.meta.get("env", {})

    @property
    def params(self) -> dict[str, Any]:
        return self.meta.get("params", {})

    def stamp_line(self) -> str:
        """One line naming GPU, driver, torch, CUDA and date of the recording."""
        e = self.env
        when = str(e.get("recorded_at", "?"))[:16].replace("T", " ")
        how = "Ran live on" if self.live else "Recorded on"
        text = (
            f"{how} {e.get('gpu', '?')} (driver {e.get('driver', '?')}), "
            f"torch {e.get('torch', '?')}, CUDA {e.get('cuda', '?')}, {when} UTC"
        )
        if not self.live:
            text += "; this output replays that recording"
        if self.stale:
            text += f". STALE: the code changed since; re-record with {RECORD_COMMAND}"
        return text

    def trace(self):
        """The recording's trace, loaded once with :func:`tracereader.load`."""
        if self._trace is None:
            from tracereader import load as _load

            self._trace = _load(self.trace_path)
        return self._trace

    @property
    def trace_bytes(self) -> int:
        return self.trace_path.stat().st_size

    def trace_url(self, root: str = "../") -> str:
        """Where the built site serves this trace; ``root`` leads from the page to the
        site's top (``"../"`` for the examples and chapters, ``""`` for top-level pages)."""
        return f"{root}traces/{self.example}/{self.name}.json.gz"

    def links(self, root: str = "../") -> Any:
        """Just the download link and the Perfetto button, as a displayable object."""
        from ._html import Snippet, trace_links_html

        title = f"{self.example} {self.name}"
        html = trace_links_html(self.trace_url(root), self.trace_bytes, title)
        return Snippet(html, f"trace: {self.trace_url(root)}")

    def _repr_html_(self) -> str:
        """The stamp, a download link and an "Open in Perfetto" button (pages show this)."""
        import html

        from ._html import trace_links_html

        title = f"{self.example} {self.name}"
        return (
            f'<div class="tr-recording"><p class="tr-stamp">{html.escape(self.stamp_line())}</p>'
            + trace_links_html(self.trace_url(), self.trace_bytes, title)
            + "</div>"
        )

    def table_view(self, columns: tuple[str, ...] = TABLE_COLUMNS, rows: int | None = None) -> str:
        """The recorded profiler table with only ``columns`` (it is 10 columns wide).

        The numbers are the profiler's own; only columns and rows are dropped.
        """
        lines = self.table.splitlines()
        rules = [i for i, line in enumerate(lines) if line.startswith("---")]
        if len(rules) < 3:
            return self.table
        # Column names from the header (a long name can overflow its column by a
        # character, so split on runs of spaces); positions from the dashed rule.
        names = re.split(r"\s{2,}", lines[rules[0] + 1].strip())
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[rules[0]])]
        if len(names) != len(spans):
            return self.table
        picked = [
            (name, span)
            for i, (name, span) in enumerate(zip(names, spans, strict=True))
            if i == 0 or name in columns
        ]
        body = lines[rules[1] + 1 : rules[2]][: rows if rows else None]

        def cut(line: str) -> str:
            return "  ".join(line[a:b] for _, (a, b) in picked).rstrip()

        head = "  ".join(name.rjust(b - a) for name, (a, b) in picked)
        rule = "  ".join("-" * (b - a) for _, (a, b) in picked)
        footer = [line for line in lines[rules[2] + 1 :] if line.strip()]
        return "\n".join([rule, head, rule, *map(cut, body), rule, *footer])


def _folder(example: str, name: str) -> Path:
    return recordings_root() / example / name


def load(example: str, name: str) -> Recording:
    """Load a bundled recording without checking its hash.

    Chapters use this; :func:`check_examples` (run at the start of every docs
    build) is what guards them against staleness.
    """
    folder = _folder(example, name)
    meta_path = folder / _META
    if not meta_path.exists():
        raise RecordingError(
            f"no recording {example}/{name} in {recordings_root()}; record it with {RECORD_COMMAND}"
        )
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    table = (folder / _TABLE).read_text(encoding="utf-8")
    return Recording(example, name, table, meta, folder / _TRACE)


def iter_recordings(root: Path | None = None) -> Iterator[Recording]:
    """Every recording under ``root`` (default: the bundled ones)."""
    root = root or recordings_root()
    for meta_path in sorted(root.glob("*/*/" + _META)):
        yield load(meta_path.parent.parent.name, meta_path.parent.name)


def check_examples(examples_dir: str | os.PathLike[str]) -> list[str]:
    """Return one message per stale or orphaned recording (empty list: all fresh).

    A recording is stale when its stored hash differs from :func:`code_hash`
    of its example's current source; orphaned when its example is gone.
    """
    problems = []
    examples_dir = Path(examples_dir)
    for rec in iter_recordings():
        source = examples_dir / f"{rec.example}.py"
        where = f"recording {rec.example}/{rec.name}"
        if not source.exists():
            problems.append(f"{where}: its example {source.name} no longer exists")
            continue
        try:
            now = code_hash(source, rec.meta["entry"], rec.meta["params"])
        except RecordingError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if now != rec.meta["code_hash"]:
            problems.append(
                f"{where} is stale: {source.name}:{rec.meta['entry']} or its parameters changed "
                f"(hash {rec.meta['code_hash']} recorded, {now} now); re-record with {RECORD_COMMAND}"
            )
    return problems


# --------------------------------------------------------------------------- live runs


def _driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def environment_stamp() -> dict[str, Any]:
    """What a page must say about the machine a recording was made on."""
    import torch

    cuda = torch.cuda.is_available()
    return {
        "gpu": torch.cuda.get_device_name(0) if cuda else "CPU only",
        "driver": _driver_version() if cuda else "none",
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "python": platform.python_version(),
        "recorded_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _should_run_live() -> bool:
    if _env_flag("TRACEREADER_REPLAY"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _save_trace(src: Path, dst: Path) -> None:
    """Gzip the exported trace, dropping the ``traceName`` path it leaks."""
    data = json.loads(src.read_text(encoding="utf-8", errors="replace"), strict=False)
    data.pop("traceName", None)
    raw = json.dumps(data, separators=(",", ":")).encode()
    with gzip.GzipFile(dst, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(raw)


def run_or_replay(
    func: Callable[..., str], name: str, *, example: str | None = None, **params: Any
) -> Recording:
    """Run ``func(out_dir, **params)`` live on a GPU, or replay its recording.

    Parameters
    ----------
    func
        The example's profiling function. It must write ``trace.json`` into
        ``out_dir`` (via ``on_trace_ready``) and return the profiler table text.
    name
        The recording's name within the example, e.g. ``"64_bf16"``.
    example
        Defaults to the stem of the file that defines ``func``.
    **params
        Keyword arguments for ``func``; part of the code hash.
    """
    source = Path(inspect.getsourcefile(func) or "")
    example = example or source.stem
    digest = code_hash(source, func.__name__, params)
    if _should_run_live():
        return _run_live(func, name, example, digest, params)
    rec = load(example, name)
    if rec.meta.get("code_hash") != digest:
        message = (
            f"recording {example}/{name} is stale: {source.name}:{func.__name__} or its "
            f"parameters changed since it was recorded; re-record with {RECORD_COMMAND}"
        )
        if _env_flag("TRACEREADER_STRICT"):
            raise StaleRecordingError(message)
        warnings.warn(message, stacklevel=2)
        rec.stale = True
    return rec


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
    import builtins

    loaded = {sub.id for sub in subs if isinstance(sub, ast.Name)}
    return loaded <= bound | set(dir(builtins))


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def load_definitions(source_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Execute only an example's imports and module-level definitions.

    The page body (the ``run_or_replay`` calls and their printing) is skipped,
    so a profiling function can be called on its own: in a fresh process for a
    recording, or on the CPU in the test suite.
    """
    path = Path(source_path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body, bound = [], set()
    for node in tree.body:
        if _is_definition(node, bound):
            body.append(node)
            bound |= _bound_names(node)
    namespace: dict[str, Any] = {"__name__": f"tracereader_example_{path.stem}", "__file__": str(path)}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def _child(argv: list[str]) -> int:
    """Entry point of the fresh process that runs one recording."""
    source, entry, params_json, out_dir = argv
    func = load_definitions(source)[entry]
    table = func(Path(out_dir), **json.loads(params_json))
    (Path(out_dir) / _TABLE).write_text(table, encoding="utf-8")
    return 0


def _run_live(
    func: Callable[..., str], name: str, example: str, digest: str, params: dict[str, Any]
) -> Recording:
    """Run one recording in a fresh Python process, so no experiment inherits the
    warm caches (cuBLAS heuristics, CUPTI, allocator, compiled graphs) of another."""
    source = inspect.getsourcefile(func) or ""
    with tempfile.TemporaryDirectory(prefix="tracereader-") as tmp:
        cmd = [sys.executable, "-m", "tracereader.record", "_child", source, func.__name__,
               json.dumps(params), tmp]
        limit_s = float(os.environ.get("TRACEREADER_RECORD_TIMEOUT_S", "300"))
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit_s)
        except subprocess.TimeoutExpired:
            raise RecordingError(f"recording {example}/{name} ran past {limit_s:.0f} s") from None
        if done.returncode != 0:
            raise RecordingError(
                f"recording {example}/{name} failed in its process:\n{done.stderr[-4000:]}"
            )
        exported = Path(tmp) / "trace.json"
        if not exported.exists():
            raise RecordingError(f"{func.__name__} wrote no trace.json into its output folder")
        table = (Path(tmp) / _TABLE).read_text(encoding="utf-8")
        meta = {
            "example": example,
            "name": name,
            "entry": func.__name__,
            "params": params,
            "code_hash": digest,
            "env": environment_stamp(),
            "fresh_process": True,
        }
        keep = _env_flag("TRACEREADER_RECORD") or _env_flag("TRACEREADER_REFRESH")
        folder = _folder(example, name) if keep else Path(tempfile.mkdtemp(prefix="tracereader-"))
        if keep and folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        _save_trace(exported, folder / _TRACE)
        (folder / _TABLE).write_text(table, encoding="utf-8")
        (folder / _META).write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")
    return Recording(example, name, table, meta, folder / _TRACE, live=True)


def main(argv: list[str]) -> int:
    """``python -m tracereader.record check [EXAMPLES_DIR]``: one line per stale recording.

    Exit status 1 when any recording is stale or orphaned, so a build can stop
    before it starts, with the command that re-records. (``_child`` is the
    internal entry point of :func:`_run_live`'s fresh process.)
    """
    if argv[:1] == ["_child"]:
        return _child(argv[1:])
    if argv[:1] != ["check"] or len(argv) > 2:
        print("usage: python -m tracereader.record check [EXAMPLES_DIR]", file=sys.stderr)
        return 2
    examples = Path(argv[1] if len(argv) > 1 else "examples")
    if not examples.is_dir():
        print(f"record: {examples}: no such folder of examples", file=sys.stderr)
        return 2
    problems = check_examples(examples)
    for line in problems:
        print(f"record: {line}", file=sys.stderr)
    if not problems:
        print(f"record: all {sum(1 for _ in iter_recordings())} recordings are fresh")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
