"""Every example, as a reader downloads it from the built site, runs with only torch (R9).

The scripts and notebooks come from ``docs/_build/html/_downloads``, not from
``examples/``: what the site serves is what must run. They run in a fresh
virtual environment that holds torch and nothing of this project (no
tracereader, no matplotlib, no numpy); the notebooks run through a Jupyter
kernel in one that adds only Jupyter's kernel and client to it. On a machine
without CUDA each run profiles on the CPU and says why its trace has no GPU lane.

The environments are made once per run and shared by pytest-xdist's workers
(``nox -s downloads`` runs ``-n auto``): torch is installed once, into the torch-only
one; the others see that torch through a ``.pth`` line and install only what they
add (transformers; Jupyter).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.downloads


def _downloads(site: Path, suffix: str) -> list[Path]:
    # sphinx-gallery can serve the same file from two hashed folders: one of each name.
    by_name = {p.name: p for p in sorted((site / "_downloads").glob(f"*/[0-9][0-9]*_*{suffix}"))}
    found = [by_name[name] for name in sorted(by_name)]
    assert found, f"no {suffix} example under {site / '_downloads'}: build the site first"
    return found


@pytest.fixture(scope="session")
def site(pytestconfig) -> Path:
    return Path(pytestconfig.getoption("--site")).resolve()


JUPYTER = ["nbclient", "ipykernel", "nbformat"]


def _purelib(python: Path) -> str:
    return subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _venv(folder: Path, links: list[str], packages: list[str]) -> Path:
    """A fresh venv at ``folder/venv`` that sees the site-packages ``links`` (a ``.pth``
    file, after its own) and holds ``packages``; its python."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    if links:
        Path(_purelib(py), "_linked.pth").write_text("".join(f"{p}\n" for p in links))
    if packages:
        subprocess.run([py, "-m", "pip", "install", "-q", *packages], check=True)
    return py


@pytest.fixture(scope="session")
def shared_tmp(tmp_path_factory) -> Path:
    """This run's folder for the environments, one for all of pytest-xdist's workers."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _once(root: Path, name: str, make) -> Path:
    """``make(root / name)``'s python, made by the first worker that asks for it."""
    from filelock import FileLock

    made = root / name / "python.txt"
    with FileLock(str(root / f"{name}.lock")):
        if not made.exists():
            made.parent.mkdir(parents=True, exist_ok=True)
            made.write_text(str(make(made.parent)))
    return Path(made.read_text())


def _system_torch_site() -> str:
    torch_py = os.environ.get("TORCH_PYTHON", sys.executable)
    return subprocess.run(
        [torch_py, "-c", "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


@pytest.fixture(scope="session")
def torch_only(shared_tmp) -> Path:
    """A fresh venv with torch alone (``TORCH_SPEC``), or reusing an existing torch
    (``TORCH_SPEC=system``: the one ``TORCH_PYTHON`` imports); its python."""
    spec = os.environ.get("TORCH_SPEC", "torch==2.13.0")
    if spec == "system":
        return _once(shared_tmp, "torch-only", lambda d: _venv(d, [_system_torch_site()], []))
    return _once(shared_tmp, "torch-only", lambda d: _venv(d, [], [spec]))


@pytest.fixture(scope="session")
def torch_site(torch_only) -> str:
    """Where the torch-only venv's torch lives, for the venvs that add to it."""
    if os.environ.get("TORCH_SPEC") == "system":
        return _system_torch_site()
    return _purelib(torch_only)


@pytest.fixture(scope="session")
def torch_and_transformers(shared_tmp, torch_site) -> Path:
    """torch and Hugging Face transformers (``TRANSFORMERS_SPEC``), for 05_llm_decode."""
    spec = os.environ.get("TRANSFORMERS_SPEC", "transformers>=5.17,<6")
    return _once(shared_tmp, "torch-transformers", lambda d: _venv(d, [torch_site], [spec]))


@pytest.fixture(scope="session")
def jupyter_torch_only(shared_tmp, torch_site) -> Path:
    """The torch-only venv's torch, and Jupyter's kernel and client: for the notebooks."""
    return _once(shared_tmp, "jupyter-torch", lambda d: _venv(d, [torch_site], JUPYTER))


@pytest.fixture(scope="session")
def jupyter_torch_and_transformers(shared_tmp, torch_site, torch_and_transformers) -> Path:
    """As :func:`jupyter_torch_only`, with the transformers venv's packages too."""
    links = [torch_site, _purelib(torch_and_transformers)]
    return _once(shared_tmp, "jupyter-transformers", lambda d: _venv(d, links, JUPYTER))


def _needs_transformers(script: Path) -> bool:
    return "import transformers" in script.read_text(encoding="utf-8")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TRACE"))}
    env["KINETO_LOG_LEVEL"] = "6"
    return env


def test_the_venv_holds_torch_and_nothing_of_ours(torch_only):
    probe = (
        "import importlib.util as u, json; "
        "print(json.dumps({m: u.find_spec(m) is not None for m in "
        "('torch', 'tracereader', 'tracesite', 'matplotlib')}))"
    )
    if os.environ.get("TORCH_SPEC") == "system":
        pytest.skip("TORCH_SPEC=system reuses a torch environment that may hold anything")
    out = subprocess.run([torch_only, "-c", probe], capture_output=True, text=True, env=_env())
    assert json.loads(out.stdout) == {
        "torch": True,
        "tracereader": False,
        "tracesite": False,
        "matplotlib": False,
    }


def _docstring_commands(script: Path) -> list[list[str]]:
    """The ``python NN_example.py ...`` lines the example's docstring tells readers to run."""
    text = script.read_text(encoding="utf-8")
    doc = text.split('"""')[1]
    commands = []
    for line in doc.splitlines():
        line = line.split("#")[0].strip()
        if line.startswith(f"python {script.name}"):
            commands.append(shlex.split(line)[2:])
    assert commands, f"{script.name}'s docstring names no command to run"
    return commands


def _py_ids(site: Path) -> list[tuple[Path, list[str]]]:
    return [(s, argv) for s in _downloads(site, ".py") for argv in _docstring_commands(s)]


def pytest_generate_tests(metafunc):
    if "download_run" in metafunc.fixturenames:
        site = Path(metafunc.config.getoption("--site")).resolve()
        try:
            runs = _py_ids(site)
        except AssertionError:
            runs = []
        metafunc.parametrize(
            "download_run", runs,
            ids=[f"{s.stem}[{' '.join(a) or 'no flags'}]" for s, a in runs],
        )  # fmt: skip
    if "notebook" in metafunc.fixturenames:
        site = Path(metafunc.config.getoption("--site")).resolve()
        try:
            notebooks = _downloads(site, ".ipynb")
        except AssertionError:
            notebooks = [None]  # the test then fails, saying so
        metafunc.parametrize(
            "notebook", notebooks, ids=[p.stem if p else "none" for p in notebooks]
        )


def test_downloaded_script_runs_with_only_torch(download_run, request, tmp_path):
    """Every example with only torch; 05_llm_decode with torch and transformers."""
    script, argv = download_run
    python = request.getfixturevalue(
        "torch_and_transformers" if _needs_transformers(script) else "torch_only"
    )
    local = tmp_path / script.name
    shutil.copyfile(script, local)
    done = subprocess.run(
        [python, local.name, *argv], cwd=tmp_path, env=_env(),
        capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "Traceback" not in out and "Error" not in done.stderr, out[-3000:]
    traces = sorted(
        p.name
        for p in (tmp_path / "traces").rglob("*.json")  # not the runs' own
        if not p.name.endswith((".timings.json", ".results.json"))
    )  # measurements
    assert traces, out[-2000:]
    for name in traces:
        assert f"{name}" in done.stdout  # each run says where its trace went
    probe = "import torch; print(torch.cuda.is_available())"
    cuda = subprocess.run([python, "-c", probe], capture_output=True, text=True).stdout.strip()
    if cuda == "False":
        assert "no GPU lane" in done.stdout


def test_without_transformers_the_llm_example_says_what_to_install(torch_only, site, tmp_path):
    """Only torch: a story of 05_llm_decode or 06_train_step, run with the variant its
    docstring names, either runs (a sweep needs no model) or stops with one line naming
    the package; never a traceback."""
    if os.environ.get("TORCH_SPEC") == "system":
        pytest.skip("TORCH_SPEC=system reuses a torch environment that may hold transformers")
    stopped = 0
    for script in [s for s in _downloads(site, ".py") if _needs_transformers(s)]:
        shutil.copyfile(script, tmp_path / script.name)
        argv = next(a for a in _docstring_commands(script) if "--variant" in a)
        done = subprocess.run(
            [torch_only, script.name, *argv], cwd=tmp_path, env=_env(),
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr  # (torch may warn: no numpy)
        if done.returncode == 0:
            continue
        assert done.returncode == 1, done.stdout + done.stderr
        last = done.stderr.strip().splitlines()[-1]
        example = last.split()[0]  # the set: 05_llm_decode for its stories 05a, 05b, ...
        assert example[:2] == script.stem[:2]
        assert last == f"{example} needs Hugging Face transformers: pip install transformers"
        stopped += 1
    assert stopped >= 2


def test_every_story_page_links_every_recording_of_its_variants(site):
    """A story's page ends with the table of every recording of its variants: a row per
    variant, and for each GPU a download link per repeat recorded on it (the build adds
    it, ``site_hooks.recordings_table``; sphinx-gallery drops a story's last cell if it
    prints nothing visible, and such a table with it). Where the recordings timed tokens,
    each GPU's tokens per second stand beside its links."""
    recordings = Path(__file__).resolve().parents[2] / "docs" / "recordings"
    gpus = sorted(p.name for p in recordings.iterdir() if p.is_dir())
    pages = sorted((site / "auto_examples").glob("*/[0-9][0-9]*.html"))
    assert len(pages) >= 20, f"{len(pages)} story pages under {site / 'auto_examples'}"
    assert len(gpus) >= 2, gpus
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert text.count("tr-all-recordings") == 1, f"{page.name}: no recordings table"
        table = text.split("tr-all-recordings", 1)[1].split("</table>", 1)[0]
        rows = re.findall(r"<tr><td><code>(.*?)</code>(.*?)</tr>", table)
        assert rows, f"{page.name}: the recordings table has no row"
        example = page.parent.name
        columns = [g for g in gpus if any((recordings / g / example / v).is_dir() for v, _ in rows)]
        for variant, row in rows:
            cells = dict(re.findall(r'<td data-gpu="([^"]+)">(.*?)</td>', row))
            assert sorted(cells) == columns, f"{page.name}: {variant}: {sorted(cells)}"
            for gpu, cell in cells.items():
                folder = recordings / gpu / example / variant
                repeats = sorted(r.name for r in folder.glob("r[0-9]*") if r.is_dir())
                assert re.findall(r"download>(r\d+)</a>", cell) == repeats, (
                    f"{page.name}: {variant} on the {gpu}"
                )
                timed = [
                    json.loads((folder / r / "meta.json").read_text())
                    .get("results", {})
                    .get("tokens_per_s")
                    for r in repeats
                ]
                if repeats and all(isinstance(t, (int, float)) for t in timed):
                    want = (
                        f"{statistics.median(timed):,.0f} "
                        f"({min(timed):,.0f}\u2013{max(timed):,.0f})"
                    )
                    shown = re.findall(rf'data-gpu="{gpu}">.*?</td><td>([^<]*)</td>', row)
                    assert shown == [want], f"{page.name}: {variant}: tokens/s on the {gpu}"


def test_distinct_flag_sets_write_distinct_traces(site):
    names = []
    for script in _downloads(site, ".py"):
        for argv in _docstring_commands(script):
            if not argv:
                continue
            if "--variant" in argv:
                names.append(argv[argv.index("--variant") + 1])
            else:
                names.append(" ".join(argv))
    assert len(names) == len(set(names))


def test_trace_names_follow_every_variant(torch_only, site, tmp_path):
    """Two variants that differ in one setting (TF32) must not share a trace file."""
    script = next(s for s in _downloads(site, ".py") if s.name == "01e_dtypes.py")
    local = tmp_path / script.name
    shutil.copyfile(script, local)
    for argv in (["4096_fp32"], ["4096_fp32_tf32"]):
        done = subprocess.run(
            [torch_only, local.name, *argv], cwd=tmp_path, env=_env(),
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
    written = sorted(p.name for p in (tmp_path / "traces").rglob("*.json"))
    assert len(written) == 2, written


def test_downloaded_notebook_runs_in_jupyter_with_only_torch(notebook, request, tmp_path):
    """Each notebook (``notebook``: one per downloadable ``.ipynb``) through a Jupyter
    kernel: torch alone (and transformers for those that import it) and Jupyter's own
    packages."""
    assert notebook is not None, "no .ipynb example under _downloads: build the site first"
    runner = (
        "import sys, nbformat, nbclient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "nbclient.NotebookClient(nb, timeout=540, kernel_name='python3',"
        " resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
        "outs = [o.get('text', '') for c in nb.cells if c.cell_type == 'code'"
        " for o in c.get('outputs', [])]\n"
        "print('\\n'.join(outs))\n"
    )
    text = notebook.read_text(encoding="utf-8")
    assert "tracesite" not in text, f"{notebook.name} carries the site's replay glue"
    python = request.getfixturevalue(
        "jupyter_torch_and_transformers" if "import transformers" in text else "jupyter_torch_only"
    )
    done = subprocess.run(
        [python, "-c", runner, str(notebook), str(tmp_path)], cwd=tmp_path,
        env=_env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert re.search(r"trace written to traces/", done.stdout), done.stdout[-2000:]
