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
  live, in a fresh process (:mod:`tracereader._live`). With
  ``TRACEREADER_RECORD=1`` (``scripts/record.py``) or ``TRACEREADER_REFRESH=1``
  (set by the docs build on a GPU machine) the result also replaces the bundled
  recording.
* Everywhere else the bundled recording is replayed. If the code hash no
  longer matches, the recording is *stale*: a strict build
  (``TRACEREADER_STRICT=1``) fails with the command that re-records it; a
  normal build warns and marks the output as stale.

The code hash is computed from the example's source with :mod:`ast`
(:mod:`tracereader._source`), not by importing it: the profiling function plus every module-level function, class
and constant it reaches, with docstrings and comments ignored. Editing prose
leaves a recording fresh; editing the workload makes it stale. This module
does not import torch at import time, so checking staleness needs no torch.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _profiler_table
from ._source import RecordingError, StaleRecordingError, code_hash, load_definitions

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


def recordings_root() -> Path:
    """The folder that holds every bundled recording (package data)."""
    override = os.environ.get("TRACEREADER_RECORDINGS")
    return Path(override) if override else Path(__file__).parent / "recordings"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


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
        return _profiler_table.view(self.table, columns, rows)

    def table_rows(self) -> list[dict[str, Any]]:
        """The profiler table's rows as numbers (``self_cpu_us``, ``calls``, ...)."""
        return _profiler_table.rows(self.table)

    def table_totals_us(self) -> dict[str, float]:
        """The table's ``Self CPU time total`` and ``Self CUDA time total``, in µs."""
        return _profiler_table.totals_us(self.table)


def _folder(example: str, name: str) -> Path:
    return recordings_root() / example / name


def load(example: str, name: str) -> Recording:
    """Load a bundled recording without checking its hash.

    Chapters use this; :func:`check_examples` (run at the start of every docs
    build) is what guards them against staleness.
    """
    folder = _folder(example, name)
    if not (folder / _META).exists():
        raise RecordingError(
            f"no recording {example}/{name} in {recordings_root()}; record it with {RECORD_COMMAND}"
        )
    return _load_folder(folder)


def _load_folder(folder: Path) -> Recording:
    meta = json.loads((folder / _META).read_text(encoding="utf-8"))
    table = (folder / _TABLE).read_text(encoding="utf-8")
    return Recording(folder.parent.name, folder.name, table, meta, folder / _TRACE)


def iter_recordings(root: Path | None = None) -> Iterator[Recording]:
    """Every recording under ``root`` (default: the bundled ones)."""
    root = root or recordings_root()
    for meta_path in sorted(root.glob("*/*/" + _META)):
        yield _load_folder(meta_path.parent)


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
    from ._live import _run_live, _should_run_live

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


def main(argv: list[str]) -> int:
    """``python -m tracereader.record check [EXAMPLES_DIR]``: one line per stale recording.

    Exit status 1 when any recording is stale or orphaned, so a build can stop
    before it starts, with the command that re-records. (``_child`` is the
    internal entry point of :func:`_run_live`'s fresh process.)
    """
    if argv[:1] == ["_child"]:
        from ._live import _child

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
