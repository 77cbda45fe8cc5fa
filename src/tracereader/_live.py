"""Running an example's profiling function live, in a fresh process, on a GPU.

Used by :func:`tracereader.record.run_or_replay` when CUDA is available. This is
the only part of tracereader that imports torch.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import inspect
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._source import RecordingError, load_definitions
from .record import _META, _TABLE, _TRACE, Recording, _env_flag, _folder


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
