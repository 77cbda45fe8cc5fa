"""Build hook: the site offers what a reader needs to leave with, built by the docs build.

* ``downloads/tracereader-<version>-py3-none-any.whl``: the library and its command-line
  tool, built from ``src/`` with pip (``pip install`` takes the file as it is);
* ``downloads/reading-pytorch-profiler-traces-src.tar.gz``: the project's source, every file
  of the checkout that git tracks (or, in an unpacked archive, every file the archive's
  ``SOURCE_FILES.txt`` lists), with a fresh ``SOURCE_FILES.txt``, so that ``nox -s docs``
  rebuilds the site from the unpacked folder alone.

Pages link them through :func:`links_markdown`. ``TRACEREADER_REPO_URL`` (set by the
publish workflow to the repository the site is built from) adds a link to the repository;
unset, no address is shown.
"""

from __future__ import annotations

import gzip
import html
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
FOLDER = "downloads"  # in the built site
ARCHIVE = "reading-pytorch-profiler-traces-src.tar.gz"
PREFIX = "reading-pytorch-profiler-traces"  # the folder the archive unpacks into
MANIFEST = "SOURCE_FILES.txt"
#: What the wheel is built from (the rest of the checkout is the site, not the library).
WHEEL_SOURCES = ("pyproject.toml", "README.md", "src")
#: Fixed file times in the archive, so that the same sources give the same bytes.
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01


def version(root: Path = ROOT) -> str:
    """tracereader's version, as pyproject.toml gives it."""
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    if not found:
        raise ValueError("no version in pyproject.toml")
    return found.group(1)


def wheel_name(root: Path = ROOT) -> str:
    return f"tracereader-{version(root)}-py3-none-any.whl"


def repo_url() -> str | None:
    """The repository the site was built from (``TRACEREADER_REPO_URL``), or None."""
    url = os.environ.get("TRACEREADER_REPO_URL", "").strip().rstrip("/")
    if not url:
        return None
    if not re.fullmatch(r"https://[^\s\"'<>()]+", url):
        raise ValueError(f"TRACEREADER_REPO_URL must be an https:// address, got {url!r}")
    return url


def source_files(root: Path = ROOT) -> list[str]:
    """The project's files, relative to ``root``: git's (tracked, and new files git does not
    ignore) in a checkout, else those the unpacked archive's manifest lists."""
    if (root / ".git").exists() and shutil.which("git"):
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root, capture_output=True, check=True,
        )  # fmt: skip
        names = [n for n in done.stdout.decode().split("\0") if n]
    elif (root / MANIFEST).is_file():
        names = (root / MANIFEST).read_text(encoding="utf-8").splitlines()
    else:
        raise FileNotFoundError(
            f"{root} is neither a git checkout nor an unpacked source archive (no {MANIFEST})"
        )
    # A file deleted in the checkout but still tracked is not part of it.
    return sorted({n for n in names if n and n != MANIFEST and (root / n).is_file()})


def build_archive(dest: Path, root: Path = ROOT) -> Path:
    """Write the source archive to ``dest``; the same files give the same bytes."""
    names = source_files(root)
    out = io.BytesIO()

    def add(name: str, data: bytes, mode: int) -> None:
        info = tarfile.TarInfo(f"{PREFIX}/{name}")
        info.size, info.mtime, info.mode = len(data), EPOCH, mode
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            path = root / name
            add(name, path.read_bytes(), 0o755 if os.access(path, os.X_OK) else 0o644)
        add(MANIFEST, "".join(n + "\n" for n in names).encode(), 0o644)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(out.getvalue())
    return dest


def build_wheel(folder: Path, root: Path = ROOT) -> Path:
    """Build tracereader's wheel into ``folder`` with pip, from a copy of its sources (the
    checkout stays free of build/ folders). Without setuptools in this Python, pip fetches
    it into an isolated build environment, as ``pip install -e .`` does."""
    with tempfile.TemporaryDirectory(prefix="tracereader-wheel-") as tmp:
        src = Path(tmp) / "src-copy"
        for name in WHEEL_SOURCES:
            if (root / name).is_dir():
                shutil.copytree(
                    root / name,
                    src / name,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
                )
            else:
                src.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(root / name, src / name)
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", tmp + "/out"]
        try:
            import setuptools  # noqa: F401  (only whether it is there)
        except ImportError:
            pass
        else:
            cmd.append("--no-build-isolation")
        done = subprocess.run([*cmd, str(src)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("pip wheel failed:\n" + done.stderr[-3000:])
        built = Path(tmp, "out", wheel_name(root))
        if not built.is_file():
            raise RuntimeError(
                f"pip wheel wrote {sorted(p.name for p in Path(tmp, 'out').iterdir())},"
                f" not {built.name}"
            )
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copyfile(built, folder / built.name))


def _size(path: Path) -> str:
    n = path.stat().st_size
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def download_link(name: str, site_root: str = "", text: str | None = None) -> str:
    """An HTML link to one download (Markdown would make it a cross-reference)."""
    href = html.escape(f"{site_root}{FOLDER}/{name}", quote=True)
    return f'<a href="{href}" download>{html.escape(text or name)}</a>'


def links_markdown(site_root: str = "", built: Path | None = None) -> str:
    """A Markdown list of the downloads, for a page ``site_root`` below the top of the site
    (``""`` for a page at the top, ``"../"`` for one in ``chapters/``). ``built``: the
    folder holding them (default: where the build hook put them)."""
    from site_hooks import EXTRA  # the site's extra files

    built = built or EXTRA / FOLDER
    wheel, archive = built / wheel_name(), built / ARCHIVE
    for path in (wheel, archive):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not built (the site_downloads hook makes it)")
    lines = [
        f"- **tracereader** (the library and the `tracereader` command): "
        f"{download_link(wheel.name, site_root)} ({_size(wheel)}); install it with "
        f"`python -m pip install {wheel.name}`.",
        f"- **This site's source** (library, examples, recordings, pages, `noxfile.py`): "
        f"{download_link(archive.name, site_root)} ({_size(archive)}); unpack it and run "
        f"`python -m pip install nox && python -m nox -s docs` inside to rebuild the site.",
    ]
    url = repo_url()
    if url:
        lines.append(f"- **The repository** the site was built from: <{url}>")
    return "\n".join(lines)


def make_downloads(app: object) -> None:
    from site_hooks import EXTRA

    target = EXTRA / FOLDER
    shutil.rmtree(target, ignore_errors=True)
    build_wheel(target)
    build_archive(target / ARCHIVE)


def setup(app: object) -> dict[str, bool]:
    repo_url()  # a malformed address fails the build at once
    app.connect("builder-inited", make_downloads, priority=100)  # type: ignore[attr-defined]
    return {"parallel_read_safe": True, "parallel_write_safe": True}
