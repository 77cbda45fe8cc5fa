"""Every example, as a reader downloads it from the built site, runs with only torch (R9).

The scripts and notebooks come from ``docs/_build/html/_downloads``, not from
``examples/``: what the site serves is what must run. They run in a fresh
virtual environment that holds torch and nothing of this project (no
tracereader, no matplotlib, no numpy); the notebooks run through a Jupyter
kernel there. On a machine without CUDA each run profiles on the CPU and says
why its trace has no GPU lane.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
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


def _torch_venv(folder: Path) -> Path:
    """A fresh venv with torch alone (``TORCH_SPEC``), or reusing an existing torch
    (``TORCH_SPEC=system``: the one ``TORCH_PYTHON`` imports); its python."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    spec = os.environ.get("TORCH_SPEC", "torch==2.13.0")
    if spec == "system":
        torch_py = os.environ.get("TORCH_PYTHON", sys.executable)
        where = subprocess.run(
            [torch_py, "-c", "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        purelib = subprocess.run(
            [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        Path(purelib, "_existing_torch.pth").write_text(where + "\n")
    else:
        subprocess.run([py, "-m", "pip", "install", "-q", spec], check=True)
    return py


@pytest.fixture(scope="session")
def torch_only(tmp_path_factory) -> Path:
    return _torch_venv(tmp_path_factory.mktemp("torch-only"))


@pytest.fixture(scope="session")
def torch_and_transformers(tmp_path_factory) -> Path:
    """torch and Hugging Face transformers (``TRANSFORMERS_SPEC``), for 05_llm_decode."""
    py = _torch_venv(tmp_path_factory.mktemp("torch-transformers"))
    spec = os.environ.get("TRANSFORMERS_SPEC", "transformers>=5.17,<6")
    subprocess.run([py, "-m", "pip", "install", "-q", spec], check=True)
    return py


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


def test_downloaded_notebook_runs_in_jupyter_with_only_torch(
    torch_only, torch_and_transformers, site, tmp_path
):
    for python in (torch_only, torch_and_transformers):
        subprocess.run(
            [python, "-m", "pip", "install", "-q", "nbclient", "ipykernel", "nbformat"],
            check=True, env=_env(),
        )  # fmt: skip
    runner = (
        "import sys, nbformat, nbclient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "nbclient.NotebookClient(nb, timeout=540, kernel_name='python3',"
        " resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
        "outs = [o.get('text', '') for c in nb.cells if c.cell_type == 'code'"
        " for o in c.get('outputs', [])]\n"
        "print('\\n'.join(outs))\n"
    )
    for notebook in _downloads(site, ".ipynb"):
        text = notebook.read_text(encoding="utf-8")
        assert "tracesite" not in text, f"{notebook.name} carries the site's replay glue"
        python = torch_and_transformers if "import transformers" in text else torch_only
        done = subprocess.run(
            [python, "-c", runner, str(notebook), str(tmp_path)], cwd=tmp_path,
            env=_env(), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        assert re.search(r"trace written to traces/", done.stdout), done.stdout[-2000:]
