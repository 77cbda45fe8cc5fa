"""Recordings: what the GPU runs of the examples left, read back for the pages.

A *variant* is one experiment of an example (``01_matmul_add`` / ``64_bf16``): a
harness function of the example and its settings, both listed in the example's
``VARIANTS``. Each variant is recorded on a *GPU* (a short slug of its name,
:func:`gpu_slug`: ``h200``, ``h100``) as several independent *repeats*, each in
a process of its own; a repeat's folder holds the gzipped trace, the profiler's
own ``key_averages()`` table and ``meta.json``::

    docs/recordings/<gpu>/<example>/<variant>/r<k>/{trace.json.gz, table.txt, meta.json}

and ``timings.json`` where the harness also timed its calls without the profiler.
Those are the variant's current *session*: the repeats one recording run made. Where the
plan keeps a variant's earlier sessions (``keep_sessions``), each lies beside them, named
by the UTC date-time its first repeat was recorded, its repeats as they were recorded
(trimmed as the plan says)::

    docs/recordings/<gpu>/<example>/<variant>/sessions/<2026-11-30T12-18>/r<k>/...

(:attr:`Variant.sessions`). An earlier session counts only when it ran the current
code: every repeat's hash the current repeats' hash. One recorded with other code is
kept only with a ``session.json`` beside its repeats that says how that code differs
from the current (:class:`Session`); :func:`check_examples` flags any other.
How each example is recorded (which variants need a process of their own, an empty
compile cache, what of a trace to keep) is the recordings' own plan,
``docs/recordings/plan.json`` (:func:`plan_settings`), not the examples' business; it is
the same on every GPU. The pages read the recordings of one GPU, :data:`PRIMARY_GPU`,
unless told otherwise; :func:`check_examples` checks every GPU's.

``meta.json`` names the example, variant and repeat, the harness and its
settings, the hash of the code that produced it (:mod:`tracesite._source`), the
machine it ran on, and how the process was shared. Pages quote the median over
repeats and assert their claims on every repeat.

Nothing here imports torch: checking that recordings are fresh needs none.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import profiler_table
from ._source import RecordingError, code_hash, find_examples, variant_sources

__all__ = [
    "PRIMARY_GPU",
    "RECORD_COMMAND",
    "Recording",
    "Session",
    "Variant",
    "check_examples",
    "gpu_slug",
    "gpus",
    "iter_recordings",
    "iter_variants",
    "load",
    "load_sessions",
    "plan_settings",
    "recordings_root",
]

#: The command that re-records; named in every staleness error.
RECORD_COMMAND = "python scripts/record.py (on a machine with a CUDA GPU)"

#: The GPU whose recordings the pages read unless told otherwise.
PRIMARY_GPU = "h200"
#: The slug of each GPU name (``torch.cuda.get_device_name()``) the recordings know by name.
GPU_SLUGS = {
    "NVIDIA H200": "h200",
    "NVIDIA H100 80GB HBM3": "h100",
    "NVIDIA H100": "h100",
    "NVIDIA H100 PCIe": "h100",
    "NVIDIA H100 NVL": "h100",
    # what the recorder stamps where it runs without one (its tests)
    "CPU only": "cpu",
}


def gpu_slug(device_name: str) -> str:
    """The folder a GPU's recordings are filed under, from its name as
    ``torch.cuda.get_device_name()`` gives it: ``"NVIDIA H200"`` -> ``"h200"``,
    ``"NVIDIA H100 80GB HBM3"`` -> ``"h100"`` (:data:`GPU_SLUGS`); any other name in
    lowercase letters, digits and dashes, without its vendor
    (``"NVIDIA A100-SXM4-80GB"`` -> ``"a100-sxm4-80gb"``)."""
    name = " ".join(device_name.split())
    if name in GPU_SLUGS:
        return GPU_SLUGS[name]
    name = re.sub(r"^nvidia\s+", "", name.lower())
    slug = re.sub(r"[^a-z0-9]+", "-", name).strip("-")
    if not slug:
        raise RecordingError(f"no folder name can be made of the GPU name {device_name!r}")
    return slug


#: The columns :meth:`Recording.table_view` keeps by default.
TABLE_COLUMNS = ("Self CPU", "CPU total", "Self CUDA", "CUDA total", "# of Calls")

TRACE, TABLE, META = "trace.json.gz", "table.txt", "meta.json"
#: The table's rows and totals as the profiler computed them (``key_averages()``'s own
#: fields), which the recorder stores beside ``table.txt`` from recordings of 2026-12 on.
TABLE_FIELDS = "table.json"
#: A variant's earlier recording sessions, and what one recorded with other code declares.
SESSIONS, SESSION_NOTE = "sessions", "session.json"
#: Written by a harness that also times its calls without the profiler.
TIMINGS = "timings.json"
RESULTS = (
    "results.json"  # a harness's headline measurements; the recorder moves them into meta.json
)


#: The recordings' plan: per example, how its variants are recorded.
PLAN = "plan.json"
#: What an example's entry in the plan may set, and the value when it does not.
PLAN_DEFAULTS: dict[str, Any] = {
    # Variants whose subject is a process's first call: each repeat in a fresh process.
    "cold_variants": [],
    # Every process compiles into an empty cache of its own (TORCHINDUCTOR_CACHE_DIR).
    "fresh_compile_cache": False,
    # Per variant: the profiler steps, the steps with Python frames, and the
    # record_function regions its trace keeps (the rest is dropped to keep it small).
    "keep_steps": {},
    "keep_python_steps": {},
    "keep_regions": {},
    # Per variant: keep its earlier recording sessions when it is recorded again (with
    # the same code), each trimmed to the profiler steps listed (null: as recorded).
    "keep_sessions": {},
}


def plan_settings(example: str, root: Path | None = None) -> dict[str, Any]:
    """How ``example`` is recorded: its entry in ``plan.json``, over :data:`PLAN_DEFAULTS`."""
    path = (root or recordings_root()) / PLAN
    try:
        plan = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except ValueError as exc:
        raise RecordingError(f"{path}: not valid JSON ({exc})") from None
    entry = plan.get(example, {})
    unknown = sorted(set(entry) - set(PLAN_DEFAULTS))
    if unknown:
        raise RecordingError(f"{path}: {example} sets unknown keys {unknown}")
    return {**PLAN_DEFAULTS, **entry}


def recordings_root() -> Path:
    """The folder holding every recording (``docs/recordings``; ``TRACESITE_RECORDINGS``
    overrides it): the plan, and a folder per GPU."""
    override = os.environ.get("TRACESITE_RECORDINGS")
    return Path(override) if override else Path(__file__).resolve().parents[2] / "recordings"


def gpus(root: Path | None = None) -> list[str]:
    """The GPUs with a folder of recordings under ``root``: :data:`PRIMARY_GPU` first,
    then the others by name."""
    root = root or recordings_root()
    found = [p.name for p in root.glob("*") if p.is_dir() and not p.name.startswith(".")]
    return sorted(found, key=lambda g: (g != PRIMARY_GPU, g))


@dataclass
class Recording:
    """One repeat of one variant: a trace, the profiler's table, and its ``meta.json``."""

    example: str
    variant: str
    repeat: int
    table: str
    meta: dict[str, Any]
    trace_path: Path
    stale: bool = False
    #: The earlier session it belongs to (:class:`Session`); ``None``: the current one.
    session: str | None = None
    #: The GPU it was recorded on (its folder's slug, :func:`gpu_slug`).
    gpu: str = PRIMARY_GPU
    _trace: Any = field(default=None, repr=False)

    @property
    def env(self) -> dict[str, Any]:
        """Where it ran: gpu (and, from late 2026, gpu_uuid), driver, torch, cuda, python, recorded_at."""
        env: dict[str, Any] = self.meta.get("env", {})
        return env

    @property
    def params(self) -> dict[str, Any]:
        """The settings the harness ran with."""
        params: dict[str, Any] = self.meta.get("params", {})
        return params

    @property
    def results(self) -> dict[str, Any] | None:
        """The headline measurements the harness wrote (``results.json``, kept in
        ``meta.json`` under ``results``), if any."""
        return self.meta.get("results")

    @property
    def name(self) -> str:
        return self.variant

    def trace(self) -> Any:
        """The trace, loaded once with :func:`tracereader.load`."""
        if self._trace is None:
            import tracereader

            self._trace = tracereader.load(self.trace_path)
        return self._trace

    def timings(self) -> dict[str, Any] | None:
        """What the harness measured outside the profiler (``timings.json``: CPU time per call,
        or a forward's peak GPU memory), if it wrote any."""
        path = self.trace_path.parent / TIMINGS
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    @property
    def trace_bytes(self) -> int:
        return self.trace_path.stat().st_size

    @property
    def download_name(self) -> str:
        """The file name a reader's download gets: ``<variant>.json.gz`` for the first
        repeat, ``<variant>-r<k>.json.gz`` for the others (what visible cells load); a
        recording of another GPU than :data:`PRIMARY_GPU` has its slug after the variant
        (``64_bf16-h100.json.gz``, ``64_bf16-h100-r1.json.gz``)."""
        name = self.variant if self.gpu == PRIMARY_GPU else f"{self.variant}-{self.gpu}"
        name = name if self.session is None else f"{name}-{self.session}"
        return f"{name}.json.gz" if self.repeat == 0 else f"{name}-r{self.repeat}.json.gz"

    def trace_url(self, root: str = "../") -> str:
        """Where the built site serves this trace, from a page ``root`` below the top:
        ``traces/<gpu>/<example>/<variant>/r<k>.json.gz`` (the site serves the current
        sessions' traces only)."""
        within = "" if self.session is None else f"{SESSIONS}/{self.session}/"
        return (
            f"{root}traces/{self.gpu}/{self.example}/{self.variant}/{within}r{self.repeat}.json.gz"
        )

    def stamp_line(self) -> str:
        """One line: GPU, driver, torch, CUDA, date, and which repeat this is."""
        e = self.env
        when = str(e.get("recorded_at", "?"))[:16].replace("T", " ")
        text = (
            f"Recorded on {e.get('gpu', '?')} (driver {e.get('driver', '?')}), "
            f"torch {e.get('torch', '?')}, CUDA {e.get('cuda', '?')}, {when} UTC "
            f"(repeat {self.repeat + 1} of {self.meta.get('repeats', '?')}); "
            "this output replays that recording"
        )
        if self.stale:
            text += f". STALE: the code changed since; re-record with {RECORD_COMMAND}"
        return text

    def table_view(self, columns: tuple[str, ...] = TABLE_COLUMNS, rows: int | None = None) -> str:
        """The profiler's table with only ``columns`` (it is 10 columns wide)."""
        return profiler_table.view(self.table, columns, rows)

    def table_fields(self) -> dict[str, Any]:
        """The table's rows and totals as the profiler computed them (``table.json``,
        which the recorder writes beside the table's text)."""
        path = self.trace_path.parent / TABLE_FIELDS
        if not path.exists():
            raise RecordingError(
                f"{self.gpu}/{self.example}/{self.variant} repeat {self.repeat + 1} has no "
                f"{TABLE_FIELDS} "
                f"(recorded before the recorder stored the table's fields); re-record it with "
                f"{RECORD_COMMAND}"
            )
        fields: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return fields

    def table_rows(self) -> list[dict[str, Any]]:
        """The profiler table's rows, in its order, as numbers (``self_cpu_us``, ``calls``,
        ...)."""
        rows: list[dict[str, Any]] = self.table_fields()["rows"]
        return rows

    def table_totals_us(self) -> dict[str, float]:
        """The table's ``Self CPU time total`` and ``Self CUDA time total``, in µs."""
        totals: dict[str, float] = self.table_fields()["totals_us"]
        return totals


@dataclass
class Session:
    """An earlier recording session of one variant: the repeats one recording run made,
    kept beside the current ones (``<variant>/sessions/<name>/r<k>/``).

    ``name`` is the UTC date-time its first repeat was recorded (``2026-11-30T12-18``).
    ``note`` is its ``session.json``, which only a session recorded with other code than
    the current has: ``{"code_changed": {"current_code_hash": ..., "what": ...}}``, what
    differs between the code it ran and the code whose hash is ``current_code_hash``.
    """

    example: str
    variant: str
    name: str
    repeats: list[Recording]
    note: dict[str, Any] = field(default_factory=dict)
    gpu: str = PRIMARY_GPU

    @property
    def code_changed(self) -> str | None:
        """How the code it ran differs from the current code (``None``: it ran the same)."""
        changed = self.note.get("code_changed")
        return str(changed.get("what")) if isinstance(changed, dict) else None


@dataclass
class Variant:
    """Every repeat of one variant, and its earlier sessions (oldest first)."""

    example: str
    name: str
    repeats: list[Recording]
    sessions: list[Session] = field(default_factory=list)
    #: The GPU it was recorded on (its folder's slug, :func:`gpu_slug`).
    gpu: str = PRIMARY_GPU

    @property
    def rep(self) -> Recording:
        """The repeat the pages draw and print (the first)."""
        return self.repeats[0]


def session_name(recorded_at: str) -> str:
    """A session's folder name: the UTC date-time (to the minute) of its first repeat,
    ``2026-11-30T12:18:58+00:00`` -> ``2026-11-30T12-18``."""
    return recorded_at[:16].replace(":", "-")


def _load_repeats(
    folder: Path, example: str, variant: str, session: str | None = None, gpu: str = PRIMARY_GPU
) -> list[Recording]:
    """The repeats ``r<k>/`` in ``folder``, in repeat order."""
    out = []
    for path in sorted(folder.glob("r*/" + META), key=lambda p: int(p.parent.name[1:])):
        rep = path.parent
        meta = json.loads(path.read_text(encoding="utf-8"))
        table = (rep / TABLE).read_text(encoding="utf-8")
        # The folders name the recording; meta.json says the same for a file read on its own.
        out.append(
            Recording(
                example, variant, int(rep.name[1:]), table, meta, rep / TRACE, False, session, gpu
            )
        )
    return out


def load_sessions(
    example: str, variant: str, root: Path | None = None, gpu: str = PRIMARY_GPU
) -> list[Session]:
    """The earlier recording sessions of ``example``/``variant`` on ``gpu``, oldest first
    (none: an empty list), without checking their code hashes (:func:`check_examples` does)."""
    folder = (root or recordings_root()) / gpu / example / variant / SESSIONS
    out = []
    for sub in sorted(p for p in folder.glob("*") if p.is_dir()):
        note_path = sub / SESSION_NOTE
        try:
            note = json.loads(note_path.read_text(encoding="utf-8")) if note_path.exists() else {}
        except ValueError as exc:
            raise RecordingError(f"{note_path}: not valid JSON ({exc})") from None
        reps = _load_repeats(sub, example, variant, sub.name, gpu)
        out.append(Session(example, variant, sub.name, reps, note, gpu))
    return out


def load(example: str, variant: str, root: Path | None = None, gpu: str = PRIMARY_GPU) -> Variant:
    """Every repeat of ``example``/``variant`` recorded on ``gpu`` (a slug,
    :func:`gpu_slug`) and its earlier sessions, without checking the code hash.

    :func:`check_examples`, run before every docs build, is what guards the
    pages against stale recordings.
    """
    folder = (root or recordings_root()) / gpu / example / variant
    reps = _load_repeats(folder, example, variant, None, gpu)
    if not reps:
        raise RecordingError(
            f"no recording {gpu}/{example}/{variant} in {folder.parent.parent}; record it "
            f"with {RECORD_COMMAND}"
        )
    return Variant(example, variant, reps, load_sessions(example, variant, root, gpu), gpu)


def iter_variants(root: Path | None = None, gpu: str | None = None) -> Iterator[Variant]:
    """Every recorded variant under ``root`` (default: :func:`recordings_root`), of every
    GPU (:data:`PRIMARY_GPU`'s first, :func:`gpus`) or of ``gpu`` alone."""
    root = root or recordings_root()
    for slug in gpus(root) if gpu is None else [gpu]:
        folders = (root / slug).glob("*/*")
        for folder in sorted(p for p in folders if p.is_dir() and not p.name.startswith(".")):
            if not folder.parent.name.startswith(".") and any(folder.glob("r*/" + META)):
                yield load(folder.parent.name, folder.name, root, slug)


def iter_recordings(
    root: Path | None = None, sessions: bool = False, gpu: str | None = None
) -> Iterator[Recording]:
    """Every current repeat of every variant under ``root``, of every GPU or of ``gpu``
    alone (:func:`iter_variants`); with ``sessions``, every repeat of their earlier
    sessions too."""
    for variant in iter_variants(root, gpu):
        yield from variant.repeats
        if sessions:
            for session in variant.sessions:
                yield from session.repeats


def _session_problems(variant: Variant) -> list[str]:
    """What is wrong with ``variant``'s earlier sessions: one recorded with other code than
    its current repeats' and no ``session.json`` that says how that code differs from the
    current (or one that says so of code no longer current); a session named otherwise
    than its first repeat's time; one that repeats the current session."""
    problems = []
    current = {str(r.meta.get("code_hash")) for r in variant.repeats}
    now_at = {str(r.env.get("recorded_at")) for r in variant.repeats}
    for s in variant.sessions:
        where = f"recording {_where(variant)} session {s.name}"
        if not s.repeats:
            problems.append(f"{where}: no repeats in it")
            continue
        first = min(str(r.env.get("recorded_at", "")) for r in s.repeats)
        if session_name(first) != s.name and not s.name.startswith(session_name(first) + "-"):
            problems.append(f"{where}: its first repeat was recorded at {first}; name it so")
        if now_at & {str(r.env.get("recorded_at")) for r in s.repeats}:
            problems.append(f"{where}: it holds repeats of the current session")
        hashes = {str(r.meta.get("code_hash")) for r in s.repeats}
        if hashes <= current and len(current) == 1:
            continue
        changed = s.note.get("code_changed")
        if not isinstance(changed, dict) or not str(changed.get("what", "")).strip():
            problems.append(
                f"{where} was recorded with other code (hash {', '.join(sorted(hashes))}, "
                f"{', '.join(sorted(current))} now): delete it, or say in its {SESSION_NOTE} "
                f'how that code differs ({{"code_changed": {{"current_code_hash": ..., "what": ...}}}})'
            )
        elif {str(changed.get("current_code_hash"))} != current:
            problems.append(
                f"{where}: its {SESSION_NOTE} says how its code differs from the code of hash "
                f"{changed.get('current_code_hash')}, but the current repeats have "
                f"{', '.join(sorted(current))}: say how it differs from the current code, or delete it"
            )
    return problems


def _where(variant: Variant) -> str:
    """A variant as messages name it: ``h200/01_matmul_add/64_bf16``."""
    return f"{variant.gpu}/{variant.example}/{variant.name}"


def check_examples(examples_dir: str | os.PathLike[str], root: Path | None = None) -> list[str]:
    """One message per stale or orphaned variant of every GPU (an empty list: all fresh),
    each naming its GPU (``recording h100/01_matmul_add/64_bf16 is stale: ...``).

    A variant is stale when the hash stored with any repeat differs from
    :func:`code_hash` of its example's current source and settings, and orphaned
    when its example is gone. Its earlier sessions must have been recorded with the
    current repeats' hash, or say how their code differs (:class:`Session`). A folder of
    recordings outside a GPU's (``docs/recordings/<example>/<variant>/r<k>/``, the layout
    before recordings were filed by GPU) is flagged too: no page would read it.
    """
    problems = []
    sources: dict[str, dict[str, Path] | None] = {}
    root = root or recordings_root()
    for slug in gpus(root):
        if any((root / slug).glob(f"*/r*/{META}")):
            problems.append(
                f"recordings {slug}/: a variant's repeats lie directly under it; recordings "
                f"are filed as <gpu>/<example>/<variant>/r<k>/ (move them under a GPU's folder)"
            )
        for folder in sorted((root / slug).glob(f"*/*/{SESSIONS}")):
            if not any(folder.parent.glob("r*/" + META)):
                problems.append(
                    f"recording {slug}/{folder.parent.parent.name}/{folder.parent.name}: "
                    "earlier sessions but no current repeats"
                )
    for variant in iter_variants(root):
        problems += _session_problems(variant)
        where = f"recording {_where(variant)}"
        if variant.example not in sources:
            folder = Path(examples_dir) / variant.example
            found = folder if folder.is_dir() else folder.with_suffix(".py")
            sources[variant.example] = variant_sources(found) if found.exists() else None
        defined = sources[variant.example]
        if defined is None:
            problems.append(f"{where}: its example {variant.example} no longer exists")
            continue
        source = defined.get(variant.name)
        if source is None:
            problems.append(f"{where}: no script of {variant.example} defines it in VARIANTS")
            continue
        for rec in variant.repeats:
            try:
                now = code_hash(source, rec.meta["entry"], rec.params)
            except RecordingError as exc:
                problems.append(f"{where}: {exc}")
                break
            if now != rec.meta["code_hash"]:
                problems.append(
                    f"{where} is stale: {source.name}:{rec.meta['entry']} or its settings "
                    f"changed (hash {rec.meta['code_hash']} recorded, {now} now); "
                    f"re-record with {RECORD_COMMAND}"
                )
                break
    return problems


def main(argv: list[str]) -> int:
    """``python -m tracesite check [EXAMPLES_DIR]``: one line per stale variant.

    Exit status 1 when any is stale or orphaned, so a build stops before it
    starts, naming the command that re-records.
    """
    if argv[:1] != ["check"] or len(argv) > 2:
        print("usage: python -m tracesite check [EXAMPLES_DIR]", file=sys.stderr)
        return 2
    examples = Path(argv[1] if len(argv) > 1 else "examples")
    if not examples.is_dir():
        print(f"recordings: {examples}: no such folder of examples", file=sys.stderr)
        return 2
    problems = check_examples(examples)
    problems += [
        line
        for line in _unrecorded(examples)
        if not any(p.startswith(line.split(" is ")[0] + " ") for p in problems)
    ]
    for line in problems:
        print(f"recordings: {line}", file=sys.stderr)
    if not problems:
        counts: dict[str, int] = {}
        for rec in iter_recordings():
            counts[rec.gpu] = counts.get(rec.gpu, 0) + 1
        each = ", ".join(f"{n} on {gpu}" for gpu, n in counts.items())
        print(f"recordings: all {sum(counts.values())} recordings are fresh ({each})")
    return 1 if problems else 0


def _unrecorded(examples: Path, root: Path | None = None) -> list[str]:
    """One message per variant that ``VARIANTS`` names now but no full set of repeats
    recorded with its current settings: new variants and changed settings on
    :data:`PRIMARY_GPU` (the pages read its recordings), and changed settings of the
    variants another GPU recorded (it need not record every variant).

    This executes the examples' definitions, so it needs torch; without it, it says
    so and checks nothing (the hash check above still runs)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("recordings: torch is not installed here: new variants and changed settings "
              "in VARIANTS are not checked", file=sys.stderr)  # fmt: skip
        return []
    from .recorder import stale_variants  # executes the examples: only here

    root = root or recordings_root()
    out = []
    for gpu in sorted({PRIMARY_GPU, *gpus(root)}, key=lambda g: (g != PRIMARY_GPU, g)):
        for source in find_examples(examples):
            names = stale_variants(source, root, gpu=gpu)
            if gpu != PRIMARY_GPU:
                names = [n for n in names if (root / gpu / source.stem / n).is_dir()]
            for name in names:
                on = "" if gpu == PRIMARY_GPU else f" on {gpu}"
                out.append(
                    f"recording {gpu}/{source.stem}/{name} is stale or missing (VARIANTS gives "
                    f"it settings no full set of repeats was recorded with); record it{on} "
                    f"with python scripts/record.py {source.stem} --variants {name}"
                )
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
