"""Recording an example on a GPU: every variant, several independent repeats.

The plan for one example, for each repeat ``k``:

* every variant the recordings' plan (``docs/recordings/plan.json``, see
  :func:`tracesite.recordings.plan_settings`) names in the example's ``cold_variants``
  runs in a fresh Python process of its own, since its subject is what a process does
  first;
* the example's other variants run one after another in one shared fresh
  process (each warms itself up), in an order rotated from repeat to repeat so
  that no variant always runs first.

So every repeat of every variant comes from a process of its own repeat: the
repeats are independent in what runs, with one exception that pages must respect:
the processes share the machine's compile caches (Inductor's, Triton's), so what
``torch.compile`` decides by timing candidates once (max-autotune's GEMM choice, a
pointwise kernel's launch configuration) is drawn once per machine, and all
repeats of a recording agree on it. A fresh machine can draw differently, so a
page words such choices from the recording and never assumes them. A child process runs the example's harness functions
(loaded with :func:`load_example`: every script of the example, each without the
page around it) and writes the trace, the table and the table's own fields (``table.json``); the parent stamps, hashes and gzips
them into a staging folder (a ``results.json`` the harness wrote, its headline
measurements, goes into ``meta.json`` under ``results``), and replaces the example's
recordings only when every process succeeded. With several GPUs, the processes of all the
examples being recorded share one queue, the longest first, one process per GPU at a
time. The recordings go into the folder of the GPU they ran on
(``docs/recordings/<gpu>/<example>/``, :func:`tracesite.recordings.gpu_slug` of its name):
every repeat's stamped GPU must be that one. ``scripts/record.py`` is the command.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._source import (
    RecordingError,
    code_hash,
    example_scripts,
    load_definitions,
    variant_sources,
)
from .recordings import (
    META,
    PRIMARY_GPU,
    RESULTS,
    SESSIONS,
    TABLE,
    TABLE_FIELDS,
    TRACE,
    gpu_slug,
    gpus,
    iter_recordings,
    plan_settings,
    recordings_root,
    session_name,
)
from .retrim import Keep, gzip_trace, keep_of, retrim_repeat, session_keep, trimmed

__all__ = [
    "estimate_s",
    "load_example",
    "past_walls_s",
    "plan",
    "record_example",
    "record_examples",
    "recording_gpu",
    "shard_of",
    "stale_variants",
    "wall_sources",
]

DEFAULT_REPEATS = 3


def plan(
    variants: dict[str, Any], cold: tuple[str, ...], repeats: int
) -> list[list[tuple[str, int]]]:
    """The processes to run: each a list of (variant, repeat) run in that order."""
    unknown = set(cold) - set(variants)
    if unknown:
        raise RecordingError(f"cold_variants names unknown variants: {sorted(unknown)}")
    warm = [name for name in variants if name not in cold]
    processes = []
    for k in range(repeats):
        processes.extend([[(name, k)] for name in cold])
        if warm:
            shift = k % len(warm)
            processes.append([(name, k) for name in warm[shift:] + warm[:shift]])
    return processes


def load_example(example: str | os.PathLike[str]) -> dict[str, Any]:
    """Every variant of an example (a folder of scripts, or one script), from all its
    scripts' ``VARIANTS``; each harness runs in its own script's definitions."""
    variants: dict[str, Any] = {}
    for script in example_scripts(example):
        found = load_definitions(script).get("VARIANTS") or {}
        for name in set(found) & set(variants):
            raise RecordingError(f"variant {name!r} is defined twice in {Path(example).name}")
        variants.update(found)
    if not variants:
        raise RecordingError(f"{Path(example).name} defines no VARIANTS to record")
    return variants


@functools.cache
def _driver_version() -> str:
    """The NVIDIA driver's version, asked of nvidia-smi once per process."""
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip().splitlines()[0]  # fmt: skip
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def recording_gpu() -> str:
    """The slug of the GPU a recording made here would be stamped with
    (:func:`tracesite.recordings.gpu_slug` of ``torch.cuda.get_device_name(0)``; ``cpu``
    without one): the folder it goes into. Needs torch."""
    import torch

    return gpu_slug(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU only")


def environment_stamp() -> dict[str, Any]:
    """What a page must say about the machine a recording was made on (needs torch)."""
    import torch

    cuda = torch.cuda.is_available()
    return {
        "gpu": torch.cuda.get_device_name(0) if cuda else "CPU only",
        # Which physical GPU: recordings of one host's two GPUs can then be told apart.
        "gpu_uuid": str(getattr(torch.cuda.get_device_properties(0), "uuid", "")) or None
        if cuda
        else None,
        "driver": _driver_version() if cuda else "none",
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "cudnn": torch.backends.cudnn.version() if cuda else None,  # type: ignore[no-untyped-call,unused-ignore]
        "python": platform.python_version(),
        # what the LLM and training examples run on, where it is installed
        "transformers": _version_of("transformers"),
        "recorded_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _version_of(package: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _table_fields(events: Any, sort_by: str | None, row_limit: int) -> dict[str, Any]:
    """The rows of ``events.table(sort_by=..., row_limit=...)`` and its two totals, from the
    profiler's own fields, in the printed table's order and with its keys (µs, shares in %)."""
    from torch.autograd.profiler_util import DeviceType

    def dev(evt: Any, field: str) -> float:  # torch 2.4 renamed cuda_* to device_*
        if not hasattr(evt, field):
            field = field.replace("device", "cuda")
        return float(getattr(evt, field))

    self_cpu = sum(float(e.self_cpu_time_total) for e in events)
    # As the table's footer sums: device events, not the GPU span of a user's label.
    self_dev = sum(
        dev(e, "self_device_time_total")
        for e in events
        if e.device_type != DeviceType.CPU and not getattr(e, "is_user_annotation", False)
    )
    if sort_by is not None:
        key = sort_by.replace("cuda", "device")
        events = sorted(events, key=lambda e: dev(e, key) if "device" in key else getattr(e, key),
                        reverse=True)  # fmt: skip

    def share(x: float, total: float) -> float:
        return round(100.0 * x / total, 2) if total else 0.0

    rows = [
        {
            "name": e.key,
            "calls": int(e.count),
            "self_cpu_us": float(e.self_cpu_time_total),
            "self_cpu_pct": share(float(e.self_cpu_time_total), self_cpu),
            "cpu_total_us": float(e.cpu_time_total),
            "cpu_total_pct": share(float(e.cpu_time_total), self_cpu),
            "cpu_avg_us": float(e.cpu_time),
            "self_cuda_us": dev(e, "self_device_time_total"),
            "self_cuda_pct": share(dev(e, "self_device_time_total"), self_dev),
            "cuda_total_us": dev(e, "device_time_total"),
            "cuda_avg_us": dev(e, "device_time"),
        }
        for e in list(events)[:row_limit]
    ]
    totals = {"self_cpu_us": self_cpu} | ({"self_cuda_us": self_dev} if self_dev else {})
    return {"sort_by": sort_by, "row_limit": row_limit, "rows": rows, "totals_us": totals}


def _watch_tables() -> list[tuple[str, dict[str, Any]]]:
    """From now on, every profiler table printed in this process (``EventList.table``) is
    appended to the returned list as (its text, :func:`_table_fields` of it), so the child
    stores the fields of the table a harness returns beside its text."""
    from torch.autograd import profiler_util

    seen: list[tuple[str, dict[str, Any]]] = []
    printed = profiler_util.EventList.table

    @functools.wraps(printed)
    def table(self: Any, sort_by: str | None = None, row_limit: int = 100, **kw: Any) -> str:
        text = str(printed(self, sort_by=sort_by, row_limit=row_limit, **kw))
        seen.append((text, _table_fields(self, sort_by, row_limit)))
        return text

    setattr(profiler_util.EventList, "table", table)  # noqa: B010 (a method, replaced)
    return seen


def _child(argv: list[str]) -> int:
    """Entry point of one fresh process: ``_child SOURCE JOBS_JSON``.

    ``JOBS_JSON`` lists ``[variant, out_dir]`` pairs; each runs its harness with
    its settings and leaves ``trace.json``, ``table.txt`` and ``env.json`` in
    ``out_dir``.
    """
    source, jobs_json = argv
    variants = load_example(source)
    tabled = _watch_tables()
    for variant, out_dir in json.loads(jobs_json):
        harness, params = variants[variant]
        out = Path(out_dir)
        start = time.perf_counter()
        tabled.clear()
        table = harness(out, **params)
        (out / TABLE).write_text(table, encoding="utf-8")
        fields = next((f for text, f in reversed(tabled) if text == table), None)
        if fields is not None:
            (out / TABLE_FIELDS).write_text(json.dumps(fields, indent=0), encoding="utf-8")
        env = environment_stamp()
        env["wall_s"] = round(time.perf_counter() - start, 2)
        (out / "env.json").write_text(json.dumps(env), encoding="utf-8")
    return 0


#: Seconds a fresh recording process takes to start (torch, CUDA) and finish, on an H200,
#: beyond the wall time its variants stamp: 6.3-8.4 s per process, measured over five runs
#: of 05_llm_decode (2026-12-02).
PROCESS_START_S = 7.5
#: A variant's guessed wall time when no earlier recording says.
UNKNOWN_WALL_S = 30.0


@dataclass
class _Example:
    """One example being recorded: its processes and how they went."""

    source: Path
    variants: dict[str, Any]
    processes: list[list[tuple[str, int]]]
    staging: Path
    settings: dict[str, Any]
    gpu: str  # the slug of the GPU it is recorded on: where it goes, what each repeat stamps
    fresh_compile_cache: bool = False
    whole: bool = True  # every variant, every process: the run replaces the example's folder
    processes_run: int = 0
    error: RecordingError | None = None
    busy_s: float = 0.0


def _walls_by_gpu(root: Path | None = None) -> dict[str, dict[tuple[str, str], float]]:
    """Per GPU, the mean wall time each recorded variant's repeats stamped there."""
    walls: dict[str, dict[tuple[str, str], list[float]]] = {}
    for rec in iter_recordings(root):
        if "wall_s" in rec.env:
            key = (rec.example, rec.variant)
            walls.setdefault(rec.gpu, {}).setdefault(key, []).append(float(rec.env["wall_s"]))
    return {gpu: {key: sum(w) / len(w) for key, w in by.items()} for gpu, by in walls.items()}


def wall_sources(root: Path | None = None, gpu: str = PRIMARY_GPU) -> dict[tuple[str, str], str]:
    """Which GPU's stamps :func:`past_walls_s` takes each (example, variant)'s wall time
    from, for ``gpu``: ``gpu`` where it recorded the variant, else the first other GPU that
    did (:data:`tracesite.recordings.PRIMARY_GPU` first, then by name)."""
    by_gpu = _walls_by_gpu(root)
    order = [gpu] + [g for g in gpus(root) if g != gpu]
    out: dict[tuple[str, str], str] = {}
    for slug in reversed(order):  # the GPU asked for last, so that it wins
        out.update(dict.fromkeys(by_gpu.get(slug, {}), slug))
    return out


def past_walls_s(root: Path | None = None, gpu: str = PRIMARY_GPU) -> dict[tuple[str, str], float]:
    """The mean wall time each recorded variant's repeats stamped on ``gpu``, by (example,
    variant); for a variant ``gpu`` has not recorded, another GPU's (:func:`wall_sources`)."""
    by_gpu = _walls_by_gpu(root)
    return {key: by_gpu[slug][key] for key, slug in wall_sources(root, gpu).items()}


def estimate_s(
    example: str, jobs: list[tuple[str, int]], walls: dict[tuple[str, str], float]
) -> float:
    """About how long a process running ``jobs`` takes: the wall times the last recordings
    of those variants stamped (``walls``, from :func:`past_walls_s`), plus ``PROCESS_START_S``."""
    return PROCESS_START_S + sum(walls.get((example, name), UNKNOWN_WALL_S) for name, _ in jobs)


def stale_variants(
    source: Path, root: Path | None = None, repeats: int = DEFAULT_REPEATS, gpu: str = PRIMARY_GPU
) -> list[str]:
    """The variants of the example at ``source`` that need recording on ``gpu``: those with
    fewer than ``repeats`` repeats there, and those whose recorded hash differs from the
    hash of their entry function (and all it reaches) with the settings ``VARIANTS`` gives
    them now.

    Unlike :func:`tracesite.recordings.check_examples` (torch-free, run before every build,
    which hashes with the *recorded* settings), this executes the example's definitions,
    so a changed parameter in ``VARIANTS`` counts too.
    """
    root = root or recordings_root()
    source = Path(source).resolve()
    variants = load_example(source)
    stale = []
    scripts = variant_sources(source)
    for name, (harness, params) in variants.items():
        metas = _repeat_metas(root / gpu / source.stem / name)
        want = code_hash(scripts[name], harness.__name__, params)
        if len(metas) < repeats or any(m.get("code_hash") != want for m in metas):
            stale.append(name)
    return stale


def recorded_before(
    source: Path,
    before: str,
    root: Path | None = None,
    repeats: int = DEFAULT_REPEATS,
    gpu: str = PRIMARY_GPU,
) -> list[str]:
    """The variants of the example at ``source`` with a repeat recorded on ``gpu`` before
    ``before`` (an ISO 8601 time in UTC, ``2026-12-01T21:00``) or fewer than ``repeats``
    repeats there: what a full re-record begun at ``before`` has still to do, however many
    runs it takes."""
    root = root or recordings_root()
    source = Path(source).resolve()
    variants = load_example(source)
    cutoff = _dt.datetime.fromisoformat(before)
    cutoff = cutoff if cutoff.tzinfo else cutoff.replace(tzinfo=_dt.timezone.utc)
    left = []
    for name in variants:
        metas = _repeat_metas(root / gpu / source.stem / name)
        times = [_dt.datetime.fromisoformat(m["env"]["recorded_at"]) for m in metas]
        if len(metas) < repeats or any(t < cutoff for t in times):
            left.append(name)
    return left


def _repeat_metas(folder: Path) -> list[dict[str, Any]]:
    """The ``meta.json`` of each recorded repeat of one variant (its folder)."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob(f"r*/{META}"))]


def within_budget(
    variants: dict[str, list[str]],
    budget_s: float,
    walls: dict[tuple[str, str], float],
    repeats: int = DEFAULT_REPEATS,
) -> dict[str, list[str]]:
    """Of ``variants`` (example -> variant names, taken in order, skipping any that no longer
    fits), those whose recording, ``repeats`` times each at the wall times the last
    recordings stamped, fits in ``budget_s`` together."""
    chosen: dict[str, list[str]] = {}
    used = 0.0
    for example, names in variants.items():
        chosen[example] = []
        for name in names:
            cost = repeats * (PROCESS_START_S + walls.get((example, name), UNKNOWN_WALL_S))
            if used + cost <= budget_s:
                chosen[example].append(name)
                used += cost
    return chosen


def shard_of(estimates: list[float], shard: tuple[int, int]) -> list[int]:
    """Which of the processes (by index into ``estimates``, seconds each) shard ``k`` of ``n``
    runs, ``shard = (k, n)`` with ``1 <= k <= n``: the longest process first, each to the
    shard with the least work so far (ties to the lowest shard), so the ``n`` shards end
    about together. Every job that sees the same recordings computes the same split."""
    k, n = shard
    if not 1 <= k <= n:
        raise RecordingError(f"shard {k}/{n}: K must be between 1 and N")
    load = [0.0] * n
    mine = []
    for i in sorted(range(len(estimates)), key=lambda i: (-estimates[i], i)):
        target = min(range(n), key=lambda j: (load[j], j))
        load[target] += estimates[i]
        if target == k - 1:
            mine.append(i)
    return sorted(mine)


def record_examples(
    sources: list[Path],
    repeats: int = DEFAULT_REPEATS,
    root: Path | None = None,
    gpus: list[str] | None = None,
    limit_s: float = 540,
    log: Any = print,
    only: dict[str, list[str]] | None = None,
    shard: tuple[int, int] | None = None,
    gpu: str | None = None,
) -> dict[str, dict[str, Any] | RecordingError]:
    """Record every variant of each example; return, per example, what it took or why it failed.

    The recordings go into ``root``'s folder of ``gpu`` (default: :func:`recording_gpu`, the
    GPU here), a slug (:func:`tracesite.recordings.gpu_slug`): a repeat stamped with another
    GPU fails its example (a host with GPUs of several kinds: record each kind apart, with
    ``gpus`` naming its GPUs). Staleness, sessions and the estimates are of that GPU's
    recordings (the estimates fall back on another GPU's stamps, :func:`past_walls_s`).

    The processes of all the examples run from one queue, the longest first (by
    :func:`estimate_s`), one at a time on each GPU in ``gpus`` (its id goes into the
    child's ``CUDA_VISIBLE_DEVICES``; ``None``: one at a time, the environment as it is).
    A process running past ``limit_s`` fails. An example's recordings are replaced only
    when all its processes succeeded; a failed one keeps its old recordings and its
    remaining processes are skipped. An example whose plan sets ``fresh_compile_cache``
    gets an empty compile cache in every process (``TORCHINDUCTOR_CACHE_DIR`` and
    ``TRITON_CACHE_DIR`` in a temporary folder, removed after it), so that no repeat reuses
    the kernels another compiled and tuned.

    ``only`` maps an example's stem to the variants to record (an example it leaves out:
    all of its variants; an empty list: none). ``shard=(k, n)`` runs only the k-th of n
    balanced parts of the whole queue (:func:`shard_of`). Recording every variant and
    every process of an example replaces its whole folder (dropping variants it no longer
    has); anything less replaces just the repeats it recorded, so the shards' outputs
    merge by copying one over another.
    """
    root = root or recordings_root()
    gpu = gpu or recording_gpu()
    dest = root / gpu
    examples: dict[str, _Example] = {}
    todo: list[tuple[float, str, int]] = []
    walls = past_walls_s(root, gpu)
    for source in sources:
        source = Path(source).resolve()
        variants = load_example(source)
        settings = plan_settings(source.stem, root)
        chosen = (
            list(variants) if only is None or source.stem not in only else list(only[source.stem])
        )
        unknown = sorted(set(chosen) - set(variants))
        if unknown:
            raise RecordingError(f"{source.name} has no variant {', '.join(unknown)}")
        if not chosen:
            continue
        cold = tuple(c for c in settings["cold_variants"] if c in chosen)
        processes = plan({v: variants[v] for v in chosen}, cold, repeats)
        staging = dest / f".staging-{source.stem}"
        shutil.rmtree(staging, ignore_errors=True)
        examples[source.stem] = _Example(
            source,
            variants,
            processes,
            staging,
            settings,
            gpu,
            bool(settings["fresh_compile_cache"]),
            whole=len(chosen) == len(variants),
        )
        todo += [
            (estimate_s(source.stem, jobs, walls), source.stem, i)
            for i, jobs in enumerate(processes)
        ]
    if shard is not None:
        keep = set(shard_of([t[0] for t in todo], shard))
        todo = [t for i, t in enumerate(todo) if i in keep]
        ran = {(name, i) for _, name, i in todo}
        for name, ex in examples.items():
            ex.whole = ex.whole and len([i for n, i in ran if n == name]) == len(ex.processes)
            ex.processes_run = sum(1 for n, _ in ran if n == name)
        examples = {name: ex for name, ex in examples.items() if ex.processes_run}
    else:
        for ex in examples.values():
            ex.processes_run = len(ex.processes)
    todo.sort(key=lambda t: -t[0])
    lock = threading.Lock()
    env = dict(os.environ, KINETO_LOG_LEVEL="6", PYTHONUNBUFFERED="1")
    here = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))

    def worker(lane: str | None) -> None:
        child_env = env if lane is None else dict(env, CUDA_VISIBLE_DEVICES=lane)
        while True:
            with lock:
                if not todo:
                    return
                _, name, i = todo.pop(0)
                ex = examples[name]
                if ex.error is not None:
                    continue
            jobs = ex.processes[i]
            start_s = time.perf_counter()
            error = _run_process(ex, name, i, jobs, repeats, child_env, limit_s)
            with lock:
                ex.busy_s += time.perf_counter() - start_s
                if error is not None:
                    ex.error = ex.error or error
                    continue
                where = "" if lane is None else f" on GPU {lane}"
                log(
                    f"  {name} process {i + 1}/{len(ex.processes)}{where}: "
                    f"{', '.join(j[0] for j in jobs)} (r{jobs[0][1]})",
                    flush=True,
                )

    lanes: list[str | None] = list(gpus) if gpus else [None]
    threads = [threading.Thread(target=worker, args=(lane,)) for lane in lanes]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall_s = round(time.perf_counter() - start, 1)
    took: dict[str, dict[str, Any] | RecordingError] = {}
    for name, ex in examples.items():
        if ex.error is not None:
            shutil.rmtree(ex.staging, ignore_errors=True)
            took[name] = ex.error
            continue
        target = dest / name
        recorded = sorted({p.parent.parent.name for p in ex.staging.glob(f"*/r*/{META}")})
        for variant in recorded:
            _keep_session(target / variant, ex.staging / variant, ex.settings, repeats, log)
        if ex.whole:
            for kept in target.glob(f"*/{SESSIONS}"):  # earlier sessions outlive the folder
                if (ex.staging / kept.parent.name).is_dir():
                    kept.rename(ex.staging / kept.parent.name / SESSIONS)
            shutil.rmtree(target, ignore_errors=True)
            ex.staging.rename(target)
        else:  # only what this run recorded: repeat by repeat
            for done in sorted(ex.staging.glob(f"*/r*/{META}")):
                dest = target / done.parent.parent.name / done.parent.name
                shutil.rmtree(dest, ignore_errors=True)
                dest.parent.mkdir(parents=True, exist_ok=True)
                done.parent.rename(dest)
            shutil.rmtree(ex.staging, ignore_errors=True)
        took[name] = {
            "processes": ex.processes_run,
            "variants": len(recorded),
            "repeats": repeats,
            "busy_s": round(ex.busy_s, 1),
            "wall_s": wall_s,
        }
    return took


def _keep_session(
    old: Path, new: Path, settings: dict[str, Any], repeats: int, log: Any = print
) -> Path | None:
    """Before ``new`` (a variant's fresh repeats) replaces ``old`` (its folder), move
    ``old``'s current repeats into ``old/sessions/<name>/``, trimmed to the steps the plan
    keeps of its sessions, when the plan keeps the variant's sessions, ``new`` holds
    all ``repeats`` repeats, and every old repeat was recorded with the new repeats'
    code hash (a session recorded with other code is dropped, and said so). Return
    the session's folder, if one was kept."""
    keep_sessions = settings.get("keep_sessions", {})
    if old.name not in keep_sessions:
        return None
    before = {int(p.parent.name[1:]): p.parent for p in old.glob(f"r*/{META}")}
    after = [json.loads(p.read_text(encoding="utf-8")) for p in new.glob(f"r*/{META}")]
    if (
        not before
        or len(after) < repeats
        or {int(m["repeat"]) for m in after} != set(range(repeats))
    ):
        return None
    metas = {k: json.loads((p / META).read_text(encoding="utf-8")) for k, p in before.items()}
    hashes = {m.get("code_hash") for m in metas.values()} | {m["code_hash"] for m in after}
    if len(hashes) != 1:
        log(
            f"  {old.parent.parent.name}/{old.parent.name}/{old.name}: its last session ran other code; not kept"
        )
        return None
    first = min(str(m["env"]["recorded_at"]) for m in metas.values())
    dest = old / SESSIONS / session_name(first)
    if dest.exists():
        dest = dest.with_name(first[:19].replace(":", "-"))
    dest.mkdir(parents=True)
    for k, rep in sorted(before.items()):
        rep.rename(dest / rep.name)
        retrim_repeat(dest / rep.name, session_keep(settings, old.name, metas[k]))
    log(
        f"  {old.parent.parent.name}/{old.parent.name}/{old.name}: last session kept in {SESSIONS}/{dest.name}"
    )
    return dest


def _run_process(
    ex: _Example,
    example: str,
    i: int,
    jobs: list[tuple[str, int]],
    repeats: int,
    env: dict[str, str],
    limit_s: float,
) -> RecordingError | None:
    """Run one fresh recording process and finish its outputs; the error, if it failed."""
    outs = [[name, str(ex.staging / name / f"r{k}")] for name, k in jobs]
    cmd = [sys.executable, "-m", "tracesite.recorder", "_child", str(ex.source), json.dumps(outs)]
    cache = tempfile.mkdtemp(prefix="tracesite-compile-") if ex.fresh_compile_cache else None
    if cache is not None:
        env = dict(
            env, TORCHINDUCTOR_CACHE_DIR=cache, TRITON_CACHE_DIR=os.path.join(cache, "triton")
        )
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit_s, env=env)
    except subprocess.TimeoutExpired:
        return RecordingError(f"recording {example}: process {i + 1} ran past {limit_s:.0f} s")
    finally:
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    if done.returncode != 0:
        return RecordingError(
            f"recording {example} failed in process {i + 1} "
            f"({[j[0] for j in jobs]}):\n" + done.stderr[-4000:]
        )
    try:
        for (name, k), (_, out) in zip(jobs, outs, strict=True):
            _finish(
                Path(out),
                example,
                name,
                k,
                repeats,
                ex.variants[name],
                ex.source,
                jobs,
                keep_of(ex.settings, name),
                ex.fresh_compile_cache,
                ex.gpu,
            )
    except RecordingError as exc:
        return exc
    return None


def record_example(
    source: Path,
    repeats: int = DEFAULT_REPEATS,
    root: Path | None = None,
    limit_s: float = 540,
    gpu: str | None = None,
) -> dict[str, Any]:
    """Record every variant of the example at ``source``, one process at a time, into the
    folder of ``gpu`` (default: the GPU here); return what it took. Raises
    :class:`RecordingError` (and leaves the old recordings in place) when any process
    fails or runs past ``limit_s``."""
    took = record_examples([Path(source)], repeats, root, None, limit_s, gpu=gpu)
    result = took[Path(source).stem]
    if isinstance(result, RecordingError):
        raise result
    return result


def _finish(
    out: Path,
    example: str,
    name: str,
    k: int,
    repeats: int,
    entry: Any,
    source: Path,
    jobs: list[tuple[str, int]],
    keep: Keep = (None, None, None),
    fresh_compile_cache: bool = False,
    gpu: str | None = None,
) -> None:
    """Stamp, hash and gzip one repeat's output folder in place; it must have run on
    ``gpu`` (a slug; ``None``: any)."""
    harness, params = entry
    exported = out / "trace.json"
    if not exported.exists():
        raise RecordingError(f"{harness.__name__} wrote no trace.json for {example}/{name}")
    env = json.loads((out / "env.json").read_text(encoding="utf-8"))
    if gpu is not None and gpu_slug(str(env.get("gpu", ""))) != gpu:
        raise RecordingError(
            f"recording {example}/{name} r{k} ran on {env.get('gpu')!r}, not on the GPU its "
            f"recordings go to ({gpu}): record each kind of GPU apart"
        )
    meta = {
        "example": example,
        "variant": name,
        "repeat": k,
        "repeats": repeats,
        "entry": harness.__name__,
        "params": params,
        "code_hash": code_hash(variant_sources(source)[name], harness.__name__, params),
        "env": env,
        "process": {
            "fresh": True,
            "variants_in_it": [j[0] for j in jobs],
            "fresh_compile_cache": fresh_compile_cache,
        },
    }
    results = out / RESULTS
    if results.exists():  # the harness's headline measurements, kept in meta.json
        meta["results"] = json.loads(results.read_text(encoding="utf-8"))
        results.unlink()
    dropped = gzip_trace(exported, out / TRACE, keep)
    if dropped:
        meta["trimmed"] = trimmed(keep, dropped)
    exported.unlink()
    (out / "env.json").unlink()
    (out / META).write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:2] == ["_child"]:
        sys.exit(_child(sys.argv[2:]))
    print("usage: python scripts/record.py [EXAMPLE ...]", file=sys.stderr)
    sys.exit(2)
