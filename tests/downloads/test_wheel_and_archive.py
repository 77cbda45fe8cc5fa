"""What a reader leaves the built site with: the tracereader wheel installs into a fresh
virtual environment and its command runs there; the source archive unpacks into a folder
holding what ``nox -s docs`` reads."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.downloads


@pytest.fixture(scope="session")
def downloads(pytestconfig) -> Path:
    folder = Path(pytestconfig.getoption("--site")).resolve() / "downloads"
    assert folder.is_dir(), f"no {folder}: build the site first (nox -s docs)"
    return folder


def test_the_wheel_installs_and_its_command_runs(downloads, tmp_path):
    (wheel,) = downloads.glob("tracereader-*-py3-none-any.whl")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    bin_ = tmp_path / "venv" / "bin"
    subprocess.run([bin_ / "python", "-m", "pip", "install", "-q", str(wheel)], check=True)
    done = subprocess.run([bin_ / "tracereader", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "summary" in done.stdout, done.stderr
    trace = (
        Path(__file__).resolve().parents[2]
        / "docs/recordings/h200/01_matmul_add/64_bf16/r0/trace.json.gz"
    )
    done = subprocess.run(
        [bin_ / "tracereader", "summary", str(trace)], capture_output=True, text=True
    )
    assert done.returncode == 0 and "CPU-bound" in done.stdout, done.stderr
    assert "compute-bound" not in done.stdout and "overhead-bound" not in done.stdout


def test_the_source_archive_holds_what_nox_docs_reads(downloads, tmp_path):
    (archive,) = downloads.glob("*-src.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    (root,) = tmp_path.iterdir()
    listed = (root / "SOURCE_FILES.txt").read_text(encoding="utf-8").splitlines()
    assert all((root / name).is_file() for name in listed)
    for name in ("noxfile.py", "pyproject.toml", "docs/conf.py", "docs/index.md",
                 "docs/quickstart.md", "docs/_ext/site_hooks.py", "docs/_ext/site_downloads.py",
                 "src/tracereader/cli.py", "examples/01_matmul_add/01a_table_and_timeline.py"):  # fmt: skip
        assert (root / name).is_file(), name
    recorded = list((root / "docs" / "recordings").rglob("trace.json.gz"))
    here = list(
        (Path(__file__).resolve().parents[2] / "docs" / "recordings").rglob("trace.json.gz")
    )
    assert len(recorded) == len(here) > 0
