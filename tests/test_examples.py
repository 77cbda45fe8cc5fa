"""Every example runs as a plain script on the CPU, so a downloaded script cannot rot.

On a machine without CUDA the script replays its recordings; its profiling
function is also run live here, on the CPU, with every set of flags its
recordings use (sizes scaled down).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("[0-9][0-9]_*.py"))
ENV = dict(os.environ, KINETO_LOG_LEVEL="6", TRACEREADER_REPLAY="1", TRACEREADER_STRICT="1")


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_as_a_plain_script(script, tmp_path):
    """`python NN_example.py` replays its recordings and prints their stamps."""
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=ENV, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Recorded on NVIDIA" in done.stdout


def _recorded_runs(script: Path) -> list[tuple[str, dict]]:
    """(profiling function, parameters) of every recording this script made."""
    from tracereader import record

    return [
        (rec.meta["entry"], rec.meta["params"])
        for rec in record.iter_recordings()
        if rec.example == script.stem
    ]


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_profiled_code_runs_on_cpu_with_every_recorded_flag_set(script, tmp_path):
    from tracereader.record import load_definitions

    ns = load_definitions(script)
    runs = _recorded_runs(script)
    assert runs, f"{script.name} has no recordings"
    seen = set()
    for entry, params in runs:
        func = ns[entry]
        small = dict(params, size=min(params.get("size", 32), 32), device="cpu")
        small["active"] = min(small.get("active", 3), 3)
        key = repr(sorted(small.items()))
        if key in seen:
            continue
        seen.add(key)
        out = tmp_path / str(len(seen))
        with warnings.catch_warnings():
            # torch's own advice ("won't be using warmup") is part of some experiments.
            warnings.simplefilter("ignore", UserWarning)
            table = func(out, **small)
        assert "Self CPU time total" in table
        if params.get("export", "on_trace_ready") == "on_trace_ready":
            assert (out / "trace.json").stat().st_size > 0


def test_example_cli_profiles_one_variant_on_cpu(tmp_path):
    script = ROOT / "examples" / "01_matmul_add.py"
    env = dict(ENV)
    env.pop("TRACEREADER_REPLAY")
    done = subprocess.run(
        [sys.executable, str(script), "--size", "16", "--dtype", "float32"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "traces" / "01_matmul_add" / "16_float32" / "trace.json").exists()
