"""The site's downloads (docs/_ext/site_downloads.py): the tracereader wheel and the source
archive, built by the docs build, hold what a reader needs to install tracereader and to
rebuild the site with nox."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest
import site_downloads as sd

ROOT = Path(__file__).resolve().parents[2]
#: What `nox -s docs` reads: the noxfile, the project, the pages, their glue, the examples
#: and the recordings they replay.
NEEDED = [
    "noxfile.py", "pyproject.toml", "README.md", "docs/conf.py", "docs/index.md",
    "docs/quickstart.md", "docs/cheatsheet.md", "docs/read-your-own-trace.md",
    "docs/_ext/site_hooks.py", "docs/_ext/site_downloads.py", "docs/_ext/tracesite/__init__.py",
    "docs/snippets/profile_your_model.py", "examples/01_matmul_add/01a_table_and_timeline.py",
    "src/tracereader/__init__.py", "src/tracereader/cli.py",
    "docs/recordings/h200/01_matmul_add/64_bf16/r0/trace.json.gz",
]  # fmt: skip


def test_version_is_pyprojects():
    assert sd.wheel_name() == f"tracereader-{sd.version()}-py3-none-any.whl"
    assert f'version = "{sd.version()}"' in (ROOT / "pyproject.toml").read_text()


def test_source_files_hold_what_the_docs_build_needs():
    names = set(sd.source_files())
    assert set(NEEDED) <= names, sorted(set(NEEDED) - names)
    assert {n for n in names if n.startswith("docs/recordings/") and n.endswith("trace.json.gz")}
    generated = ("docs/_build/", "docs/_generated/", "docs/auto_examples/", ".nox/", "artifacts/")
    assert not [n for n in names if n.startswith(generated) or "__pycache__" in n]


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    return sd.build_archive(tmp_path_factory.mktemp("archive") / sd.ARCHIVE)


def test_archive_unpacks_into_one_folder_with_a_manifest(archive, tmp_path):
    with tarfile.open(archive) as tar:
        members = tar.getnames()
        tar.extractall(tmp_path, filter="data")
    assert all(m.startswith(sd.PREFIX + "/") for m in members)
    unpacked = tmp_path / sd.PREFIX
    listed = (unpacked / sd.MANIFEST).read_text().splitlines()
    assert listed == sd.source_files() and set(NEEDED) <= set(listed)
    # From the unpacked folder (no git), the build hook lists the same files and writes
    # the same bytes: the archive rebuilds itself.
    assert sd.source_files(unpacked) == listed
    again = sd.build_archive(tmp_path / "again.tar.gz", root=unpacked)
    assert again.read_bytes() == archive.read_bytes()


def test_archive_is_reproducible(archive, tmp_path):
    assert sd.build_archive(tmp_path / "b.tar.gz").read_bytes() == archive.read_bytes()


def test_no_source_list_is_one_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a git checkout"):
        sd.source_files(tmp_path)


def test_wheel_holds_the_library_and_the_command(tmp_path):
    wheel = sd.build_wheel(tmp_path)
    assert wheel.name == sd.wheel_name()
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist = f"tracereader-{sd.version()}.dist-info"
        entry = zf.read(f"{dist}/entry_points.txt").decode()
    assert {"tracereader/__init__.py", "tracereader/cli.py", "tracereader/py.typed"} <= names
    assert "tracereader = tracereader.cli:run" in entry
    assert not [n for n in names if n.startswith(("docs/", "tests/", "examples/"))]


def test_repo_url_is_shown_only_when_set(monkeypatch, tmp_path):
    for name in (sd.wheel_name(), sd.ARCHIVE):
        (tmp_path / name).write_bytes(b"x" * 2000)
    monkeypatch.delenv("TRACEREADER_REPO_URL", raising=False)
    assert sd.repo_url() is None
    text = sd.links_markdown("../", built=tmp_path)
    assert f'<a href="../downloads/{sd.wheel_name()}" download>' in text
    assert f'<a href="../downloads/{sd.ARCHIVE}" download>' in text
    assert "http" not in text
    monkeypatch.setenv("TRACEREADER_REPO_URL", "https://github.com/someone/some-repo/")
    assert sd.repo_url() == "https://github.com/someone/some-repo"
    assert "<https://github.com/someone/some-repo>" in sd.links_markdown("", built=tmp_path)
    monkeypatch.setenv("TRACEREADER_REPO_URL", "javascript:alert(1)")
    with pytest.raises(ValueError, match="https://"):
        sd.repo_url()
