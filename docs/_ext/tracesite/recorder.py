"""Recording an example on a GPU: every variant, several independent repeats.

The plan for one example, for each repeat ``k``:

* every variant named in the example's ``COLD_VARIANTS`` runs in a fresh Python
  process of its own, since its subject is what a process does first;
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
(loaded with :func:`tracesite._source.load_definitions`, without the page around
them) and writes the trace and the table; the parent stamps, hashes and gzips
them into a staging folder (a ``results.json`` the harness wrote, its headline
measurements, goes into ``meta.json`` under ``results``), and replaces the example's recordings only when
every process succeeded. ``scripts/record.py`` is the command.
"""

from __future__ import annotations

import datetime as _dt
import functools
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._source import RecordingError, code_hash, load_definitions
from .recordings import META, RESULTS, TABLE, TRACE, recordings_root

__all__ = ["plan", "record_example"]

DEFAULT_REPEATS = 3


def plan(variants: dict[str, Any], cold: tuple[str, ...], repeats: int) -> list[list[tuple[str, int]]]:
    """The processes to run: each a list of (variant, repeat) run in that order."""
    unknown = set(cold) - set(variants)
    if unknown:
        raise RecordingError(f"COLD_VARIANTS names unknown variants: {sorted(unknown)}")
    warm = [name for name in variants if name not in cold]
    processes = []
    for k in range(repeats):
        processes.extend([[(name, k)] for name in cold])
        if warm:
            shift = k % len(warm)
            processes.append([(name, k) for name in warm[shift:] + warm[:shift]])
    return processes


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


def environment_stamp() -> dict[str, Any]:
    """What a page must say about the machine a recording was made on (needs torch)."""
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


def _child(argv: list[str]) -> int:
    """Entry point of one fresh process: ``_child SOURCE JOBS_JSON``.

    ``JOBS_JSON`` lists ``[variant, out_dir]`` pairs; each runs its harness with
    its settings and leaves ``trace.json``, ``table.txt`` and ``env.json`` in
    ``out_dir``.
    """
    source, jobs_json = argv
    ns = load_definitions(source)
    for variant, out_dir in json.loads(jobs_json):
        harness, params = ns["VARIANTS"][variant]
        out = Path(out_dir)
        start = time.perf_counter()
        table = harness(out, **params)
        (out / TABLE).write_text(table, encoding="utf-8")
        env = environment_stamp()
        env["wall_s"] = round(time.perf_counter() - start, 2)
        (out / "env.json").write_text(json.dumps(env), encoding="utf-8")
    return 0


def _gzip_trace(src: Path, dst: Path) -> None:
    """Gzip the exported trace, dropping the ``traceName`` path it leaks."""
    data = json.loads(src.read_text(encoding="utf-8", errors="replace"), strict=False)
    data.pop("traceName", None)
    raw = json.dumps(data, separators=(",", ":")).encode()
    with gzip.GzipFile(dst, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(raw)


def record_example(
    source: Path, repeats: int = DEFAULT_REPEATS, root: Path | None = None, limit_s: float = 540
) -> dict[str, Any]:
    """Record every variant of the example at ``source``; return what it took.

    Raises :class:`RecordingError` (and leaves the old recordings in place) when
    any process fails or the whole run passes ``limit_s``.
    """
    source = Path(source).resolve()
    example = source.stem
    ns = load_definitions(source)
    variants = ns.get("VARIANTS")
    if not isinstance(variants, dict) or not variants:
        raise RecordingError(f"{source.name} defines no VARIANTS to record")
    cold = tuple(ns.get("COLD_VARIANTS", ()))
    processes = plan(variants, cold, repeats)
    root = root or recordings_root()
    staging = root / f".staging-{example}"
    shutil.rmtree(staging, ignore_errors=True)
    env = dict(os.environ, KINETO_LOG_LEVEL="6", PYTHONUNBUFFERED="1")
    here = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
    start = time.perf_counter()
    for i, jobs in enumerate(processes):
        outs = [[name, str(staging / name / f"r{k}")] for name, k in jobs]
        left = limit_s - (time.perf_counter() - start)
        if left <= 0:
            raise RecordingError(f"recording {example} ran past {limit_s:.0f} s")
        cmd = [sys.executable, "-m", "tracesite.recorder", "_child", str(source), json.dumps(outs)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=left, env=env)
        except subprocess.TimeoutExpired:
            raise RecordingError(f"recording {example} ran past {limit_s:.0f} s") from None
        if done.returncode != 0:
            raise RecordingError(
                f"recording {example} failed in process {i + 1} ({[j[0] for j in jobs]}):\n"
                + done.stderr[-4000:]
            )
        for (name, k), (_, out) in zip(jobs, outs, strict=True):
            _finish(Path(out), example, name, k, repeats, variants[name], source, jobs)
        print(f"  process {i + 1}/{len(processes)}: {', '.join(j[0] for j in jobs)} (r{jobs[0][1]})",
              flush=True)
    target = root / example
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return {"processes": len(processes), "variants": len(variants), "repeats": repeats,
            "wall_s": round(time.perf_counter() - start, 1)}


def _finish(out: Path, example: str, name: str, k: int, repeats: int, entry: Any,
            source: Path, jobs: list[tuple[str, int]]) -> None:
    """Stamp, hash and gzip one repeat's output folder in place."""
    harness, params = entry
    exported = out / "trace.json"
    if not exported.exists():
        raise RecordingError(f"{harness.__name__} wrote no trace.json for {example}/{name}")
    env = json.loads((out / "env.json").read_text(encoding="utf-8"))
    meta = {
        "example": example,
        "variant": name,
        "repeat": k,
        "repeats": repeats,
        "entry": harness.__name__,
        "params": params,
        "code_hash": code_hash(source, harness.__name__, params),
        "env": env,
        "process": {"fresh": True, "variants_in_it": [j[0] for j in jobs]},
    }
    results = out / RESULTS
    if results.exists():  # the harness's headline measurements, kept in meta.json
        meta["results"] = json.loads(results.read_text(encoding="utf-8"))
        results.unlink()
    _gzip_trace(exported, out / TRACE)
    exported.unlink()
    (out / "env.json").unlink()
    (out / META).write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:2] == ["_child"]:
        sys.exit(_child(sys.argv[2:]))
    print("usage: python scripts/record.py [EXAMPLE ...]", file=sys.stderr)
    sys.exit(2)
