"""The command line: every subcommand, its formats, errors, and golden outputs.

Golden files live in ``tests/golden/*.txt`` and are compared exactly. After an
intended change (or a re-recording), regenerate them and review the diff::

    UPDATE_GOLDEN=1 python -m pytest tests/test_cli.py
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _builders import GAPS, LAUNCH_PATHS, NESTED, doc, gpu

from tracereader.cli import main, run

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
H200 = ROOT / "tests" / "data" / "h200"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

SYNTHETIC = {"paths": LAUNCH_PATHS, "gaps": GAPS, "nested": NESTED}


@pytest.fixture
def synth(tmp_path, monkeypatch):
    """Synthetic traces as files in the working directory (so paths print short)."""
    for name, events in SYNTHETIC.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(doc(events)))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no golden file {path.name}; run with UPDATE_GOLDEN=1 to create it")
    assert text == path.read_text(encoding="utf-8")


# ------------------------------------------------------------------ golden: synthetic
SYNTH_CASES = [
    ("synthetic_summary", ["summary", "paths.json"]),
    ("synthetic_kernels", ["kernels", "paths.json"]),
    ("synthetic_launches", ["launches", "paths.json"]),
    ("synthetic_launches_ops", ["launches", "paths.json", "--ops"]),
    ("synthetic_gaps", ["gaps", "gaps.json"]),
    ("synthetic_ops", ["ops", "nested.json"]),
    ("synthetic_ops_markdown", ["ops", "nested.json", "--format", "markdown"]),
    ("synthetic_compare", ["compare", "paths.json", "gaps.json", "--labels", "paths,gaps"]),
]


@pytest.mark.parametrize(("name", "argv"), SYNTH_CASES, ids=[c[0] for c in SYNTH_CASES])
def test_golden_synthetic(synth, capsys, name, argv):
    rc, out, err = cli(capsys, *argv)
    assert rc == 0 and err == ""
    check_golden(name, out)


# ------------------------------------------------------------------ golden: real traces
REAL_CASES = [
    (f"{trace}_{cmd}", [cmd, f"tests/data/h200/{trace}.json.gz", *extra])
    for trace in ("train_eager", "train_stack", "compile", "cudagraphs", "sdpa")
    for cmd, extra in [
        ("summary", []),
        ("kernels", []),
        ("ops", ["--top", "15"]),
        ("launches", []),
        ("gaps", ["--top", "10"]),
    ]
] + [
    ("compare_eager_compile", ["compare", "tests/data/h200/train_eager.json.gz",
                               "tests/data/h200/compile.json.gz"]),
    ("train_eager_kernels_step2_markdown", ["kernels", "tests/data/h200/train_eager.json.gz",
                                            "--step", "2", "--format", "markdown"]),
    ("train_eager_regions", ["regions", "tests/data/h200/train_eager.json.gz"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "argv"), REAL_CASES, ids=[c[0] for c in REAL_CASES])
def test_golden_real(capsys, monkeypatch, name, argv):
    monkeypatch.chdir(ROOT)  # a missing trace fails: rc 2, "no such file"
    rc, out, err = cli(capsys, *argv)
    assert rc == 0 and err == ""
    check_golden(name, out)


# ------------------------------------------------------------------ formats
def test_summary_json_is_one_object_with_the_keys(synth, capsys):
    rc, out, _ = cli(capsys, "summary", "paths.json", "--format", "json")
    assert rc == 0
    data = json.loads(out)
    for key in ("kernels", "memcpys", "memsets", "gpu_ops", "linked_gpu_ops", "launch_apis",
                "graph_launches", "gpu_busy_us", "steps", "events", "duration_us", "devices",
                "parser", "repairs", "step_times"):  # fmt: skip
        assert key in data, key
    assert (data["gpu_ops"], data["linked_gpu_ops"], data["graph_launches"]) == (17, 16, 1)


@pytest.mark.parametrize("cmd", ["kernels", "ops", "launches", "gaps", "regions"])
@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_every_format(synth, capsys, cmd, fmt):
    trace = "nested.json" if cmd == "regions" else "gaps.json"  # gaps.json has no region
    rc, out, err = cli(capsys, cmd, trace, "--format", fmt)
    assert rc == 0 and err == "" and out.strip()
    if fmt == "json":
        json.loads(out)
    if fmt == "markdown":
        assert "|---" in out or "|:---" in out


def test_step_and_top(synth, capsys):
    rc, out, _ = cli(
        capsys, "kernels", "gaps.json", "--step", "1", "--top", "2", "--format", "json"
    )
    assert rc == 0 and len(json.loads(out)) == 2


def test_compare_json(synth, capsys):
    rc, out, _ = cli(capsys, "compare", "paths.json", "nested.json", "--format", "json")
    data = json.loads(out)
    assert rc == 0 and data["labels"] == ["eager", "compiled"]


def test_version(capsys):
    from importlib.metadata import version

    import tracereader

    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.strip() in (f"tracereader {version('tracereader')}",
                           f"tracereader {tracereader.__version__}")  # fmt: skip


def test_version_without_package_metadata(capsys, monkeypatch):
    """Run from a source tree (no installed distribution): the package's own version."""
    import importlib.metadata

    import tracereader

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"tracereader {tracereader.__version__}\n"


def test_summary_help_explains_its_lines_and_the_verdict(capsys):
    assert main(["summary", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for words in ("repairs", "issuing op found by", "external_id", "containment",
                  "GPU-bound", "CPU-bound", "balanced", "overhead-bound", "95 %", "50 %",
                  "gpu_idle_us", "span_us"):  # fmt: skip
        assert words in out, words
    assert "compute-bound" not in out


def test_summary_verdicts_use_the_new_words_only(synth, capsys):
    rc, out, _ = cli(capsys, "summary", "gaps.json")
    assert rc == 0 and "compute-bound" not in out and "overhead-bound" not in out
    rc, out, _ = cli(capsys, "summary", "gaps.json", "--format", "json")
    (st,) = json.loads(out)["step_times"]
    assert st["verdict"] == "CPU-bound"
    assert {"span_us", "gpu_idle_us", "busy_share"} <= set(st)


GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_sync")


@pytest.fixture
def cpu_only(tmp_path, monkeypatch):
    """LAUNCH_PATHS without its GPU side: what a CPU-only recording looks like."""
    events = [e for e in LAUNCH_PATHS if e["cat"] not in GPU_CATS]
    (tmp_path / "cpu.json").write_text(json.dumps(doc(events)))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_trace_without_gpu_activity_says_so_once(cpu_only, capsys):
    rc, out, err = cli(capsys, "summary", "cpu.json")
    assert rc == 0 and err == ""
    assert out.count("No GPU activity in this trace") == 1
    assert "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]" in out
    assert "no GPU work" in out and "bound" not in out


@pytest.mark.parametrize(
    "argv",
    [["kernels"], ["launches"], ["launches", "--ops"], ["gaps"], ["kernels", "--step", "1"]],
)
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_empty_tables_print_one_line_saying_why(cpu_only, capsys, argv, fmt):
    rc, out, err = cli(capsys, argv[0], "cpu.json", *argv[1:], "--format", fmt)
    assert rc == 0 and err == ""
    assert out.count("\n") == 1 and out.startswith("no GPU activity in this trace")
    rc, out, _ = cli(capsys, argv[0], "cpu.json", *argv[1:], "--format", "json")
    assert rc == 0 and json.loads(out) in ([], {"by_cause": [], "gaps": []})


def test_other_empty_tables_say_why(synth, capsys):
    assert cli(capsys, "regions", "paths.json")[1].startswith("no record_function region in")
    out = cli(capsys, "gaps", "nested.json", "--min-gap-us", "1000")[1]
    assert out == "no GPU idle gap >= 1000 us in this trace\n"
    out = cli(capsys, "launches", "gaps.json", "--step", "1", "--top", "1")[1]
    assert out.count("\n") > 1  # not empty: the table
    Path("nolaunch.json").write_text(json.dumps(doc([gpu("k", 0, 5, 1)])))
    assert cli(capsys, "launches", "nolaunch.json")[1] == (
        "no GPU op with a recorded launch call in this trace\n"
    )


def test_a_trace_without_steps_says_there_is_no_verdict(synth, capsys):
    rc, out, _ = cli(capsys, "summary", "nested.json")
    assert rc == 0 and "no ProfilerStep#N range" in out and "verdict" in out


# ------------------------------------------------------------------ errors
def _one_line_error(rc, out, err):
    assert rc == 2 and out == ""
    assert err.startswith("tracereader: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_missing_file(synth, capsys):
    _one_line_error(*cli(capsys, "summary", "nope.json"))


def test_not_a_trace(synth, capsys):
    Path("x.json").write_text('{"hello": 1}')
    Path("y.txt").write_text("this is not json")
    Path("z.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [')[:-8])
    for name in ("x.json", "y.txt", "z.json.gz"):
        _one_line_error(*cli(capsys, "kernels", name))


def test_unknown_step(synth, capsys):
    rc, out, err = cli(capsys, "kernels", "paths.json", "--step", "7")
    _one_line_error(rc, out, err)
    assert "ProfilerStep#7" in err


def test_unknown_region(synth, capsys):
    rc, out, err = cli(capsys, "regions", "gaps.json", "--name", "backward")
    assert rc == 2 and out == "" and err.startswith("tracereader: no region named backward")


def test_bad_labels(synth, capsys):
    _one_line_error(*cli(capsys, "compare", "paths.json", "paths.json", "--labels", "one"))


def test_usage_error_returns_2(capsys):
    assert main(["frobnicate"]) == 2
    assert main([]) == 2
    capsys.readouterr()


def test_run_exits_with_status(synth, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["tracereader", "summary", "nope.json"])
    with pytest.raises(SystemExit) as exc:
        run()
    assert exc.value.code == 2
    capsys.readouterr()


# ------------------------------------------------------------------ validate
def test_validate_ok(synth, capsys):
    rc, out, _ = cli(capsys, "validate", "paths.json")
    assert rc == 0 and out.strip()


def test_validate_error_exits_1(synth, capsys, monkeypatch):
    import tracereader._validate as v

    monkeypatch.setattr(v, "validate", lambda t: [v.Finding("error", "clock went backwards")])
    rc, out, _ = cli(capsys, "validate", "paths.json", "--format", "json")
    assert rc == 1 and json.loads(out)[0]["message"] == "clock went backwards"


# ------------------------------------------------------------------ render is lazy
def test_render_help(capsys):
    assert main(["render", "--help"]) == 0
    assert "--out" in capsys.readouterr().out


def test_cli_imports_neither_matplotlib_nor_torch(synth):
    code = (
        "import sys; from tracereader.cli import main; "
        "rc = main(['summary', 'paths.json']) + main(['kernels', 'paths.json']); "
        "bad = {'matplotlib', 'torch'} & set(sys.modules); "
        "sys.exit(rc or (3 if bad else 0))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_summary_bandwidth_per_step(capsys):
    """--bytes-per-step: the rate each step read them at while its GPU ops ran; with
    --peak-tbs, as a fraction of the GPU's bandwidth (a recorded 8B decode loop)."""
    path = str(ROOT / "docs/recordings/h200/05_llm_decode/loop_fused_8b/r0/trace.json.gz")
    rc, out, _ = cli(
        capsys,
        "summary",
        path,
        "--format",
        "json",
        "--bytes-per-step",
        "15.03e9",
        "--peak-tbs",
        "4.8",
    )
    assert rc == 0
    steps = json.loads(out)["step_times"]
    for d in steps:
        assert d["busy_tb_per_s"] == round(15.03e9 / (d["gpu_busy_us"] * 1e-6) / 1e12, 3)
        assert d["peak_fraction"] == round(d["busy_tb_per_s"] / 4.8, 3)
    rc, out, _ = cli(capsys, "summary", path, "--bytes-per-step", "15.03e9")
    assert rc == 0 and "busy_tb_per_s" in out and "peak_fraction" not in out
    _one_line_error(*cli(capsys, "summary", path, "--bytes-per-step", "0"))
    _one_line_error(*cli(capsys, "summary", path, "--peak-tbs", "4.8"))


def test_gaps_help_says_what_each_cause_means(capsys):
    rc, out, _ = cli(capsys, "gaps", "--help")
    assert rc == 0
    for cause in ("sync", "op without kernels", "python", "launch", "nothing recorded"):
        assert f"  {cause} " in out
    assert "with_stack" in out


def test_diff_writes_what_report_against_writes(capsys, tmp_path):
    a, b = H200 / "train_eager.json.gz", H200 / "compile.json.gz"
    rc, out, _ = cli(capsys, "diff", str(a), str(b), "-o", str(tmp_path / "d.html"))
    assert rc == 0 and "wrote" in out
    rc, _, _ = cli(capsys, "report", str(a), "--against", str(b), "-o", str(tmp_path / "r.html"))
    assert rc == 0
    assert (tmp_path / "d.html").read_text() == (tmp_path / "r.html").read_text()
    rc, _, err = cli(capsys, "diff", str(a), str(tmp_path / "missing.json"))
    assert rc == 2 and err.count("\n") == 1
