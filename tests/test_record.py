"""The recording mechanism: code hashes, staleness, replay, the environment stamp."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from tracereader import record

EXAMPLE = textwrap.dedent(
    '''
    """Docstring of the page."""
    import math

    SCALE = 2

    def helper(x):
        """Helper docstring."""
        return x * SCALE

    def unrelated():
        return 1

    def profile_thing(out_dir, *, size=4):
        # a comment
        return str(helper(size) + math.pi)
    '''
)


def write(tmp_path: Path, text: str, name: str = "01_thing.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_hash_ignores_prose_and_unreached_code(tmp_path):
    base = record.code_hash(write(tmp_path, EXAMPLE), "profile_thing", {"size": 4})
    prose = EXAMPLE.replace("Helper docstring.", "Reworded.").replace("# a comment", "# other")
    assert record.code_hash(write(tmp_path, prose), "profile_thing", {"size": 4}) == base
    other = EXAMPLE.replace("return 1", "return 2")
    assert record.code_hash(write(tmp_path, other), "profile_thing", {"size": 4}) == base


@pytest.mark.parametrize(
    "edit",
    [("x * SCALE", "x + SCALE"), ("SCALE = 2", "SCALE = 3"), ("size=4", "size=5")],
)
def test_hash_follows_the_workload_it_reaches(tmp_path, edit):
    base = record.code_hash(write(tmp_path, EXAMPLE), "profile_thing", {"size": 4})
    changed = EXAMPLE.replace(*edit)
    assert record.code_hash(write(tmp_path, changed), "profile_thing", {"size": 4}) != base


def test_hash_follows_parameters(tmp_path):
    path = write(tmp_path, EXAMPLE)
    assert record.code_hash(path, "profile_thing", {"size": 4}) != record.code_hash(
        path, "profile_thing", {"size": 8}
    )


def test_missing_entry_is_a_clear_error(tmp_path):
    with pytest.raises(record.RecordingError, match="no module-level function named 'nope'"):
        record.code_hash(write(tmp_path, EXAMPLE), "nope", {})


def test_bundled_recordings_are_fresh_and_stamped():
    examples = Path(__file__).resolve().parent.parent / "examples"
    assert record.check_examples(examples) == []
    recs = list(record.iter_recordings())
    assert len(recs) >= 2
    for rec in recs:
        assert rec.env["gpu"].startswith("NVIDIA")
        for key in ("driver", "torch", "cuda", "recorded_at"):
            assert rec.env[key], key
        assert "replays that recording" in rec.stamp_line()
        assert rec.trace_path.stat().st_size < 1_000_000


def test_editing_the_workload_makes_check_name_the_record_command(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parent.parent
    examples = tmp_path / "examples"
    shutil.copytree(root / "examples", examples)
    script = examples / "01_matmul_add.py"
    text = script.read_text()
    assert "torch.add(torch.matmul(x, w), b)" in text
    script.write_text(text.replace("torch.add(torch.matmul(x, w), b)", "torch.matmul(x, w) + b"))
    problems = record.check_examples(examples)
    assert problems and all("stale" in p and "scripts/record.py" in p for p in problems)


def test_replay_of_stale_recording_fails_when_strict(tmp_path, monkeypatch):
    recordings = tmp_path / "recordings"
    monkeypatch.setenv("TRACEREADER_RECORDINGS", str(recordings))
    monkeypatch.setenv("TRACEREADER_REPLAY", "1")
    script = write(tmp_path, EXAMPLE)
    namespace: dict = {"__file__": str(script)}
    exec(compile(script.read_text(), str(script), "exec"), namespace)
    func = namespace["profile_thing"]
    folder = recordings / "01_thing" / "v"
    folder.mkdir(parents=True)
    meta = {
        "example": "01_thing", "name": "v", "entry": "profile_thing", "params": {"size": 4},
        "code_hash": "0" * 16, "env": {"gpu": "NVIDIA H200"},
    }
    (folder / "meta.json").write_text(json.dumps(meta))
    (folder / "table.txt").write_text("table")
    (folder / "trace.json.gz").write_bytes(b"")
    monkeypatch.setenv("TRACEREADER_STRICT", "1")
    with pytest.raises(record.StaleRecordingError, match="scripts/record.py"):
        record.run_or_replay(func, "v", size=4)
    monkeypatch.setenv("TRACEREADER_STRICT", "0")
    with pytest.warns(UserWarning, match="stale"):
        rec = record.run_or_replay(func, "v", size=4)
    assert rec.stale and "STALE" in rec.stamp_line()
    meta["code_hash"] = record.code_hash(script, "profile_thing", {"size": 4})
    (folder / "meta.json").write_text(json.dumps(meta))
    assert not record.run_or_replay(func, "v", size=4).stale


def test_missing_recording_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEREADER_RECORDINGS", str(tmp_path))
    with pytest.raises(record.RecordingError, match="scripts/record.py"):
        record.load("01_thing", "nothing")


def test_load_definitions_skips_the_page_body(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEREADER_RECORDINGS", str(tmp_path / "none"))
    script = write(
        tmp_path,
        EXAMPLE + "\nLIMITS = {'a': 1}\nresult = profile_thing(None)\nprint('page body ran')\n",
    )
    ns = record.load_definitions(script)
    assert ns["profile_thing"](None, size=1) == str(2 + 3.141592653589793)
    assert "LIMITS" in ns and "result" not in ns


def test_table_view_keeps_the_profilers_numbers():
    rec = record.load("01_matmul_add", "4096_bf16")
    view = rec.table_view()
    assert "CPU time avg" not in view and "Self CPU %" not in view
    header = view.splitlines()[1].split()
    assert header[:3] == ["Name", "Self", "CPU"] and header[-3:] == ["#", "of", "Calls"]
    full_rows = rec.table.splitlines()[3:-4]
    view_rows = view.splitlines()[3:-4]
    assert len(view_rows) == len(full_rows) > 5
    for short, full in zip(view_rows, full_rows, strict=True):
        assert short.split()[-1] == full.split()[-1]  # calls
        assert short.split()[-5] == full.split()[-9]  # self CPU, character for character
    assert view.splitlines()[-2:] == rec.table.strip().splitlines()[-2:]


def test_recording_html_has_stamp_download_and_perfetto_button():
    html = record.load("01_matmul_add", "64_bf16")._repr_html_()
    assert "Recorded on NVIDIA H200" in html
    assert 'href="../traces/01_matmul_add/64_bf16.json.gz"' in html
    assert "tr-perfetto" in html


def test_load_definitions_skips_assignments_that_use_page_results(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEREADER_RECORDINGS", str(tmp_path / "none"))
    body = "\nresult = profile_thing(None)\nfirst = result[0]\nLIMIT = SCALE + 1\n"
    ns = record.load_definitions(write(tmp_path, EXAMPLE + body))
    assert ns["LIMIT"] == 3 and "first" not in ns and "result" not in ns


def test_check_command_names_stale_recordings_in_one_line_each(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    examples = tmp_path / "examples"
    shutil.copytree(root / "examples", examples)
    run = [sys.executable, "-m", "tracereader.record", "check", str(examples)]
    fresh = subprocess.run(run, capture_output=True, text=True)
    assert fresh.returncode == 0 and "are fresh" in fresh.stdout
    script = examples / "01_matmul_add.py"
    script.write_text(script.read_text().replace("torch.add(torch.matmul(x, w), b)", "x @ w + b"))
    stale = subprocess.run(run, capture_output=True, text=True)
    lines = stale.stderr.strip().splitlines()
    assert stale.returncode == 1 and lines
    assert all("is stale" in line and "scripts/record.py" in line for line in lines)
    assert "Traceback" not in stale.stderr
    bad = subprocess.run(run[:-1] + [str(tmp_path / "nope")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_live_run_in_a_fresh_process_on_the_cpu(tmp_path, monkeypatch):
    """The machinery a GPU recording uses, run end to end on the CPU."""
    pytest.importorskip("torch")
    from tracereader import _live, load

    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    monkeypatch.delenv("TRACEREADER_RECORD", raising=False)
    monkeypatch.delenv("TRACEREADER_REFRESH", raising=False)
    script = Path(__file__).resolve().parent.parent / "examples" / "01_matmul_add.py"
    func = record.load_definitions(script)["profile_matmul_add"]
    params = {"size": 16, "dtype": "float32", "device": "cpu"}
    digest = record.code_hash(script, "profile_matmul_add", params)
    rec = _live._run_live(func, "cpu_test", "01_matmul_add", digest, params)
    assert rec.live and rec.meta["code_hash"] == digest and rec.meta["fresh_process"]
    assert rec.env["gpu"] == "CPU only" and "Ran live on CPU only" in rec.stamp_line()
    assert "Self CPU time total" in rec.table
    assert [s.name for s in load(rec.trace_path).steps] == [f"ProfilerStep#{n}" for n in (2, 3, 4)]
    assert not (record.recordings_root() / "01_matmul_add" / "cpu_test").exists()
