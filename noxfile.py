"""Sessions: lint, tests, docs, docs-strict, browser (the default set runs every check),
plus bench, record and serve.

* ``nox -s docs`` builds the site into ``docs/_build/html`` (README command 1).
* ``nox`` runs every check (README command 2, and CI).

torch is never a dependency of tracereader itself; the sessions that run examples
install the CPU build that this machine's pip offers (``TORCH_SPEC``). On a GPU
machine, ``TORCH_SPEC=system`` reuses the machine's own torch.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

nox.needs_version = ">=2024.3.2"
# pip (virtualenv) rather than uv: uv ignores pip's configuration, where the local CPU
# build of torch lives, and would download a multi-GB CUDA build instead.
nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "docs-strict", "browser"]

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml("pyproject.toml")
TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
SYSTEM_TORCH = TORCH_SPEC == "system"
VENV_PARAMS = ["--system-site-packages"] if SYSTEM_TORCH else []
GENERATED = ["docs/_build", "docs/auto_examples", "docs/gen_modules", "docs/_generated"]


def groups(*names: str) -> list[str]:
    return [req for name in names for req in nox.project.dependency_groups(PYPROJECT, name)]


def install_torch(session: nox.Session) -> None:
    if SYSTEM_TORCH:
        session.run("python", "-c", "import torch; print('torch', torch.__version__)")
    else:
        session.install(TORCH_SPEC)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the library, tests, examples and build scripts."""
    session.install(*groups("lint"))
    session.run("ruff", "check", "src", "tests", "examples", "scripts", "benchmarks", "noxfile.py", "docs/conf.py", "docs/_ext")


@nox.session(venv_params=VENV_PARAMS)
def tests(session: nox.Session) -> None:
    """Unit tests, plus every example run as a plain script on the CPU."""
    install_torch(session)
    session.install("-e", ".", *groups("test"))
    session.run("pytest", "-q", "-m", "not browser", *session.posargs)


def _build_docs(session: nox.Session, strict: bool) -> None:
    install_torch(session)
    session.install("-e", ".", *groups("docs"))
    for path in GENERATED:
        shutil.rmtree(ROOT / path, ignore_errors=True)
    (ROOT / "docs" / "sg_execution_times.rst").unlink(missing_ok=True)
    env = {"TRACEREADER_STRICT": "1" if strict else "0", "KINETO_LOG_LEVEL": "6"}
    if strict:  # one line per stale recording, before Sphinx starts
        session.run("python", "-m", "tracereader.record", "check", "examples")
    session.run(
        "sphinx-build", "-W", "--keep-going", "-b", "html", "docs", "docs/_build/html", env=env
    )


@nox.session(venv_params=VENV_PARAMS)
def docs(session: nox.Session) -> None:
    """Build the site into docs/_build/html; a stale recording is marked on its page."""
    _build_docs(session, strict=False)


@nox.session(name="docs-strict", venv_params=VENV_PARAMS)
def docs_strict(session: nox.Session) -> None:
    """The CI build: warnings are errors and a stale recording fails the build."""
    _build_docs(session, strict=True)


@nox.session
def browser(session: nox.Session) -> None:
    """Check the built site in headless Chromium: every page loads offline and clean, its
    images, links, anchors and downloads resolve, it fits a phone, reads in dark mode and
    stays within its weight budget; screenshots and page weights go to artifacts/.

    Installs what a fresh machine lacks: Debian's chromium and a font (apt), Playwright
    (pip; it drives /usr/bin/chromium and never downloads a browser of its own).
    """
    if not (ROOT / "docs/_build/html/index.html").exists():
        session.error("no built site: run `nox -s docs-strict` (or `nox -s docs`) first")
    apt = [name for name, path in (
        ("chromium", "/usr/bin/chromium"),
        ("fonts-dejavu-core", "/usr/share/fonts/truetype/dejavu"),
    ) if not os.path.exists(path)]
    if apt:
        if not shutil.which("apt-get"):
            session.error(f"install {' '.join(apt)} (Debian packages; /usr/bin/chromium is used)")
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run(*sudo, "apt-get", "update", "-qq", external=True, env=env)
        session.run(*sudo, "apt-get", "install", "-y", "-qq", *apt, external=True, env=env)
    session.install("-e", ".", *groups("browser"))
    session.run(
        "pytest", "-q", "-m", "browser", "tests/browser", "--site", "docs/_build/html",
        *session.posargs,
        env={"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
    )


@nox.session
def bench(session: nox.Session) -> None:
    """Load-and-link benchmark against Holistic Trace Analysis on a >= 500 MB trace."""
    session.install("-e", ".", *groups("bench"))
    session.run("python", "benchmarks/bench_load.py", *session.posargs)


@nox.session(venv_params=["--system-site-packages"])
def record(session: nox.Session) -> None:
    """Re-record every example on a GPU machine (same as `python scripts/record.py`)."""
    session.install("-e", ".", "--no-deps")
    session.run("python", "scripts/record.py", *session.posargs)


@nox.session(venv_params=VENV_PARAMS)
def serve(session: nox.Session) -> None:
    """Serve the built site on http://127.0.0.1:8000 (build it first)."""
    session.run(
        "python", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "docs/_build/html"
    )
