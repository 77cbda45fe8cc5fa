"""Recordings: code hashes, staleness, replay, repeats, the recording plan."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tracesite as record
from tracesite import recorder
from tracesite.retrim import retrim

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


def _split(tmp_path: Path, story_import: str) -> Path:
    """EXAMPLE as a set: a helper module with its first part, a story with the rest."""
    folder = tmp_path / "01_set"
    folder.mkdir()
    head, tail = EXAMPLE.split("def unrelated():")
    (folder / "_01_common.py").write_text(
        '"""Shared."""\n' + head.split('"""Docstring of the page."""')[1]
    )
    return write(
        folder,
        f'"""Story."""\nimport math\n{story_import}\n\ndef unrelated():{tail}',
        "01a_story.py",
    )


def test_a_story_hashes_as_one_file_with_its_helper_pasted_in(tmp_path):
    base = record.code_hash(write(tmp_path, EXAMPLE), "profile_thing", {"size": 4})
    story = _split(tmp_path, "from _01_common import helper")
    assert record.code_hash(story, "profile_thing", {"size": 4}) == base
    ns = record.load_definitions(story)
    assert ns["profile_thing"](None, size=1) == str(2 + 3.141592653589793)
    assert ns["helper"].__code__.co_filename.endswith("_01_common.py")  # tracebacks point there
    # A change in the helper is a change in the story.
    helper = story.parent / "_01_common.py"
    helper.write_text(helper.read_text().replace("SCALE = 2", "SCALE = 3"))
    assert record.code_hash(story, "profile_thing", {"size": 4}) != base


def test_a_definition_moved_verbatim_keeps_the_hash(tmp_path):
    """The hash reads what the entry reaches, not where it stands: a function moved below
    its caller, or from the story into its helper module, is the same code."""
    base = record.code_hash(write(tmp_path, EXAMPLE), "profile_thing", {"size": 4})
    helper = 'def helper(x):\n    """Helper docstring."""\n    return x * SCALE\n'
    moved = EXAMPLE.replace(helper, "") + "\n" + helper
    assert moved != EXAMPLE
    assert (
        record.code_hash(write(tmp_path, moved, "02_thing.py"), "profile_thing", {"size": 4})
        == base
    )


@pytest.mark.parametrize(
    ("line", "error"),
    [("from _01_common import helper as h", "without 'as'"),
     ("from _01_common import nothing", "defines no nothing")],
)  # fmt: skip
def test_a_helper_import_the_hash_cannot_follow_says_why(tmp_path, line, error):
    with pytest.raises(record.RecordingError, match=error):
        record.code_hash(_split(tmp_path, line), "profile_thing", {"size": 4})


def write_plan(root: Path, **examples: dict) -> None:
    """The recordings' plan (``plan.json``) for the examples given as keywords."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "plan.json").write_text(json.dumps(examples), encoding="utf-8")


#: TINY's variant "cold" runs alone in its process, whatever the example is called.
TINY_PLAN = {f"{n:02d}_tiny": {"cold_variants": ["cold"]} for n in range(9, 13)}
#: The folder the recorder files what it records on the CPU under (the tests' "GPU").
CPU = "cpu"


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


ROOT = Path(__file__).resolve().parents[2]


def test_recordings_are_fresh_stamped_and_repeated():
    assert record.check_examples(ROOT / "examples") == []
    variants = list(record.iter_variants())
    assert len(variants) >= 17
    for variant in variants:
        assert len(variant.repeats) >= 3, variant.name
        assert [r.repeat for r in variant.repeats] == list(range(len(variant.repeats)))
        for rec in variant.repeats:
            assert rec.meta["example"] == variant.example and rec.meta["variant"] == variant.name
            assert rec.meta["repeats"] == len(variant.repeats)
            assert rec.env["gpu"].startswith("NVIDIA")
            assert record.gpu_slug(rec.env["gpu"]) == rec.gpu == variant.gpu  # filed by its GPU
            for key in ("driver", "torch", "cuda", "recorded_at"):
                assert rec.env[key], key
            assert "replays that recording" in rec.stamp_line()
            assert f"repeat {rec.repeat + 1} of" in rec.stamp_line()
            assert rec.trace_bytes < 1_000_000


def test_cold_variants_ran_alone_in_their_process():
    for name in record.plan_settings("01_matmul_add")["cold_variants"]:
        for rec in record.load("01_matmul_add", name).repeats:
            assert rec.meta["process"]["variants_in_it"] == [name]


#: Bytes of gzipped traces each example may keep on each GPU (R5). An eager training step of the
#: 1.24 B model is about 26,000 events (0.5 MB gzipped), so 06 trims most of its
#: variants to the regions its page reads (the plan's ``keep_regions``) and still needs the most.
TRACE_BUDGET = {"05_llm_decode": 3_800_000, "06_train_step": 7_800_000}
TRACE_BUDGET_OTHER = 600_000


def test_recordings_stay_small():
    """Each example's traces on each GPU stay within its budget."""
    by_example: dict[tuple[str, str], int] = {}
    for r in record.iter_recordings(sessions=True):  # earlier sessions count too
        key = (r.gpu, r.example)
        by_example[key] = by_example.get(key, 0) + r.trace_bytes
    over = {
        f"{gpu}/{name}": size
        for (gpu, name), size in by_example.items()
        if size > TRACE_BUDGET.get(name, TRACE_BUDGET_OTHER)
    }
    assert not over, f"trim these examples' traces (plan.json's keep_steps, keep_regions): {over}"


def test_editing_the_workload_makes_check_name_the_record_command(tmp_path):
    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", examples)
    script = examples / "01_matmul_add" / "_01_common.py"  # where the stories' harnesses live
    text = script.read_text()
    assert "torch.add(torch.matmul(x, w), b)" in text
    script.write_text(text.replace("torch.add(torch.matmul(x, w), b)", "torch.matmul(x, w) + b"))
    problems = record.check_examples(examples)
    assert problems and all("stale" in p and "scripts/record.py" in p for p in problems)


def _fake_recording(root: Path, script: Path, digest: str, repeats: int = 2) -> None:
    for k in range(repeats):
        folder = root / "h200" / script.stem / "v" / f"r{k}"
        folder.mkdir(parents=True)
        meta = {
            "example": script.stem,
            "variant": "v",
            "repeat": k,
            "repeats": repeats,
            "entry": "profile_thing",
            "params": {"size": 4},
            "code_hash": digest,
            "env": {"gpu": "NVIDIA H200"},
        }
        (folder / "meta.json").write_text(json.dumps(meta))
        (folder / "table.txt").write_text("table")
        (folder / "trace.json.gz").write_bytes(b"")


def test_replay_of_stale_recording_fails_when_strict(tmp_path, monkeypatch):
    recordings = tmp_path / "recordings"
    monkeypatch.setenv("TRACESITE_RECORDINGS", str(recordings))
    script = write(tmp_path, EXAMPLE + "\nVARIANTS = {'v': (profile_thing, {'size': 4})}\n")
    _fake_recording(recordings, script, "0" * 16)
    replay = record.replayer(lambda name: None, script)
    monkeypatch.setenv("TRACEREADER_STRICT", "1")
    with pytest.raises(record.StaleRecordingError, match="scripts/record.py"):
        replay("v")
    monkeypatch.setenv("TRACEREADER_STRICT", "0")
    with pytest.warns(UserWarning, match="stale"):
        shown = replay("v")
    assert "STALE" in shown.stamp_line()
    shutil.rmtree(recordings)
    _fake_recording(recordings, script, record.code_hash(script, "profile_thing", {"size": 4}))
    shown = replay("v")
    assert "STALE" not in shown.stamp_line() and shown.table == "table"
    assert "repeat 2:" in shown._repr_html_() and "r1.json.gz" in shown._repr_html_()


def test_a_replay_prints_the_recordings_own_numbers_as_the_live_run_does(monkeypatch):
    """A story run live prints what its results.json says (05: tokens/s); its replay
    prints the recording's results in one line, naming the GPU and the repeat; a
    recording without results prints nothing."""
    from tracesite.gallery import results_line

    monkeypatch.delenv("TRACESITE_RECORDINGS", raising=False)
    decode = record.load("05_llm_decode", "loop_fused_1b").rep
    line = results_line(decode)
    assert line is not None and line.startswith("loop_fused_1b, recorded on the NVIDIA H200")
    tokens = decode.meta["results"]["tokens_per_s"]
    assert f"tokens_per_s {tokens:g}" in line and "repeat r0 of 3" in line
    assert results_line(record.load("01_matmul_add", "64_bf16").rep) is None


def test_replay_of_a_variant_not_recorded_yet_is_pending_unless_strict(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACESITE_RECORDINGS", str(tmp_path / "recordings"))
    script = write(tmp_path, EXAMPLE + "\nVARIANTS = {'v': (profile_thing, {'size': 4})}\n")
    replay = record.replayer(lambda name: None, script)
    monkeypatch.setenv("TRACEREADER_STRICT", "0")
    shown = replay("v")
    assert shown.table.startswith("Recording pending") and "scripts/record.py" in shown.table
    assert "pending" in repr(shown) and "pending" in shown._repr_html_()
    monkeypatch.setenv("TRACEREADER_STRICT", "1")
    with pytest.raises(record.RecordingError, match="scripts/record.py"):
        replay("v")


def test_missing_recording_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACESITE_RECORDINGS", str(tmp_path))
    with pytest.raises(record.RecordingError, match="scripts/record.py"):
        record.load("01_thing", "nothing")


def test_load_definitions_skips_the_page_body(tmp_path):
    script = write(
        tmp_path,
        EXAMPLE + "\nLIMITS = {'a': 1}\nresult = profile_thing(None)\nprint('page body ran')\n",
    )
    ns = record.load_definitions(script)
    assert ns["profile_thing"](None, size=1) == str(2 + 3.141592653589793)
    assert "LIMITS" in ns and "result" not in ns


def test_load_definitions_skips_assignments_that_use_page_results(tmp_path):
    body = "\nresult = profile_thing(None)\nfirst = result[0]\nLIMIT = SCALE + 1\n"
    ns = record.load_definitions(write(tmp_path, EXAMPLE + body))
    assert ns["LIMIT"] == 3 and "first" not in ns and "result" not in ns


def test_table_view_keeps_the_profilers_numbers():
    rec = record.load("01_matmul_add", "4096_bf16").rep
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


def test_check_command_names_stale_recordings_in_one_line_each(tmp_path):
    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", examples)
    env = {"PYTHONPATH": str(ROOT / "docs" / "_ext"), "PATH": "/usr/bin:/bin"}
    run = [sys.executable, "-m", "tracesite", "check", str(examples)]
    fresh = subprocess.run(run, capture_output=True, text=True, env=env)
    assert fresh.returncode == 0 and "are fresh" in fresh.stdout, fresh.stderr
    script = examples / "01_matmul_add" / "_01_common.py"  # where the stories' harnesses live
    text = script.read_text()
    assert "torch.add(torch.matmul(x, w), b)" in text
    script.write_text(text.replace("torch.add(torch.matmul(x, w), b)", "x @ w + b"))
    stale = subprocess.run(run, capture_output=True, text=True, env=env)
    lines = stale.stderr.strip().splitlines()
    assert stale.returncode == 1 and lines
    assert all("is stale" in line and "scripts/record.py" in line for line in lines)
    assert "Traceback" not in stale.stderr
    bad = subprocess.run(
        run[:-1] + [str(tmp_path / "nope")], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_plan_gives_cold_variants_a_process_each_and_rotates_the_rest():
    variants = {"a": 1, "b": 2, "c": 3, "cold": 4}
    processes = recorder.plan(variants, ("cold",), repeats=3)
    assert processes == [
        [("cold", 0)],
        [("a", 0), ("b", 0), ("c", 0)],
        [("cold", 1)],
        [("b", 1), ("c", 1), ("a", 1)],
        [("cold", 2)],
        [("c", 2), ("a", 2), ("b", 2)],
    ]
    with pytest.raises(record.RecordingError, match="unknown"):
        recorder.plan(variants, ("nope",), repeats=1)


TINY = textwrap.dedent(
    '''
    """A tiny example the recorder can run on the CPU."""
    from pathlib import Path

    import torch
    from torch.profiler import ProfilerActivity, profile


    def profile_tiny(out_dir, *, size=8):
        x = torch.ones(size, size)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            (x @ x).sum()
        prof.export_chrome_trace(str(Path(out_dir) / "trace.json"))
        (Path(out_dir) / "results.json").write_text('{"size_squared": %d}' % (size * size))
        return prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)


    VARIANTS = {"warm_a": (profile_tiny, {"size": 8}), "warm_b": (profile_tiny, {"size": 4}),
                "cold": (profile_tiny, {"size": 2})}
    '''
)


def test_recorder_end_to_end_on_the_cpu(tmp_path, monkeypatch):
    """The machinery a GPU recording uses, run on the CPU: plan, fresh processes, meta."""
    pytest.importorskip("torch")
    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    script = write(tmp_path, TINY, name="09_tiny.py")
    root = tmp_path / "recordings"
    write_plan(root, **TINY_PLAN)
    took = recorder.record_example(script, repeats=2, root=root)
    assert took["processes"] == 4 and took["variants"] == 3
    variants = {v.name: v for v in record.iter_variants(root)}
    assert sorted(variants) == ["cold", "warm_a", "warm_b"]
    for v in variants.values():
        assert [r.repeat for r in v.repeats] == [0, 1] and v.gpu == CPU
        for r in v.repeats:
            assert r.trace_path.parent == root / CPU / "09_tiny" / v.name / f"r{r.repeat}"
            assert r.meta["code_hash"] == record.code_hash(script, "profile_tiny", r.params)
            assert r.env["gpu"] == "CPU only" and r.trace_path.stat().st_size > 0
            # A harness's results.json lands in meta.json under "results".
            assert r.results == {"size_squared": r.params["size"] ** 2}
            assert not (r.trace_path.parent / "results.json").exists()
            # The table's own fields are stored beside its text, in the order it prints them.
            fields = r.table_fields()
            assert fields["row_limit"] == 5
            printed = r.table.splitlines()
            for row in r.table_rows():
                assert any(line.lstrip().startswith(row["name"][:20]) for line in printed)
            assert set(r.table_totals_us()) == {"self_cpu_us"}
    assert variants["cold"].repeats[1].meta["process"]["variants_in_it"] == ["cold"]
    assert variants["warm_a"].repeats[1].meta["process"]["variants_in_it"] == ["warm_b", "warm_a"]
    assert record.check_examples(tmp_path, root=root) == []
    import tracereader

    assert len(tracereader.load(variants["cold"].rep.trace_path))


def test_processes_share_one_queue_over_several_lanes(tmp_path, monkeypatch):
    """With several GPUs the processes of several examples run from one queue, one per
    lane at a time (here two lanes on the CPU), and land as one example at a time does."""
    pytest.importorskip("torch")
    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    first = write(tmp_path, TINY, name="09_tiny.py")
    second = write(tmp_path, TINY.replace("size * size", "size + size"), name="10_tiny.py")
    root = tmp_path / "recordings"
    write_plan(root, **TINY_PLAN)
    lines: list[str] = []
    took = recorder.record_examples(
        [first, second],
        repeats=1,
        root=root,
        gpus=["0", "1"],
        log=lambda line, **_: lines.append(line),
    )
    assert {name: t["processes"] for name, t in took.items()} == {"09_tiny": 2, "10_tiny": 2}
    assert (
        sum("on GPU 0" in line for line in lines) + sum("on GPU 1" in line for line in lines) == 4
    )
    found = {(r.example, r.variant, r.repeat) for r in record.iter_recordings(root)}
    assert len(found) == 6 and not list(root.glob("*/.staging-*"))
    assert record.check_examples(tmp_path, root=root) == []
    walls = recorder.past_walls_s(root)
    assert recorder.estimate_s("09_tiny", [("cold", 0)], walls) < recorder.estimate_s(
        "09_tiny", [("nope", 0)], {}
    )


def test_fresh_compile_cache_gives_every_process_its_own_empty_one(tmp_path, monkeypatch):
    """``fresh_compile_cache`` in the plan: each process compiles into an empty cache folder of
    its own, removed after it, and meta.json says so; without it, the environment's."""
    pytest.importorskip("torch")
    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    seen = TINY.replace(
        """(Path(out_dir) / "results.json").write_text('{"size_squared": %d}' % (size * size))""",
        """cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    empty = not cache or not os.listdir(cache)
    (Path(out_dir) / "results.json").write_text(json.dumps({"cache": cache, "empty": empty}))""",
    ).replace("import torch", "import json\nimport os\n\nimport torch", 1)
    assert "json.dumps" in seen
    fresh = write(tmp_path, seen, name="09_tiny.py")
    shared = write(tmp_path, seen, name="10_tiny.py")
    root = tmp_path / "recordings"
    write_plan(
        root,
        **{
            "09_tiny": {"cold_variants": ["cold"], "fresh_compile_cache": True},
            "10_tiny": {"cold_variants": ["cold"]},
        },
    )
    recorder.record_examples([fresh, shared], repeats=1, root=root)
    caches = {(r.example, r.variant, r.repeat): r for r in record.iter_recordings(root)}
    mine = [r for key, r in caches.items() if key[0] == "09_tiny"]
    dirs = {r.results["cache"] for r in mine}
    assert len(dirs) == 2 and all(d and not Path(d).exists() for d in dirs)  # one per process, gone
    assert all(r.results["empty"] and r.meta["process"]["fresh_compile_cache"] for r in mine)
    theirs = [r for key, r in caches.items() if key[0] == "10_tiny"]
    shared_dirs = {r.results["cache"] for r in theirs}  # torch's default, the same for all
    assert len(shared_dirs) == 1 and "tracesite-compile-" not in shared_dirs.pop()
    assert not any(r.meta["process"]["fresh_compile_cache"] for r in theirs)


def test_failed_recording_keeps_the_old_one(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    script = write(
        tmp_path, TINY.replace("(x @ x).sum()", "raise RuntimeError('boom')"), name="09_tiny.py"
    )
    root = tmp_path / "recordings"
    write_plan(root, **TINY_PLAN)
    (root / CPU / "09_tiny" / "old").mkdir(parents=True)
    with pytest.raises(record.RecordingError, match="boom"):
        recorder.record_example(script, repeats=1, root=root)
    assert (root / CPU / "09_tiny" / "old").is_dir()


def test_a_recording_goes_into_the_folder_of_the_gpu_it_ran_on(tmp_path, monkeypatch):
    """Told to record for another GPU than the one each repeat stamps, the recorder fails
    and leaves that GPU's folder as it was."""
    pytest.importorskip("torch")
    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    script = write(tmp_path, TINY, name="09_tiny.py")
    root = tmp_path / "recordings"
    write_plan(root, **TINY_PLAN)
    assert recorder.recording_gpu() == CPU  # no GPU in these tests
    took = recorder.record_examples([script], repeats=1, root=root, gpu="h200",
                                    only={"09_tiny": ["cold"]})  # fmt: skip
    error = took["09_tiny"]
    assert isinstance(error, record.RecordingError)
    assert "ran on 'CPU only', not on the GPU its recordings go to (h200)" in str(error)
    assert list(record.iter_recordings(root)) == [] and not list(root.glob("*/.staging-*"))


def test_iter_recordings_reads_the_folder_it_is_given(tmp_path):
    src = record.recordings_root() / "h200" / "01_matmul_add" / "64_bf16"
    shutil.copytree(src, tmp_path / "h200" / "99_other" / "only")
    found = list(record.iter_recordings(tmp_path))
    assert [(f.gpu, f.example, f.variant, f.repeat) for f in found] == [
        ("h200", "99_other", "only", k) for k in range(len(found))
    ]
    assert found[0].trace_path.parent == tmp_path / "h200" / "99_other" / "only" / "r0"


def test_trim_keeps_the_named_steps_and_what_they_launched():
    from tracesite.trim import trim_steps

    def step(n, ts):
        return {
            "ph": "X",
            "cat": "user_annotation",
            "name": f"ProfilerStep#{n}",
            "ts": ts,
            "dur": 100,
            "pid": 1,
        }

    def launch(corr, ts):
        return [
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "ts": ts,
                "dur": 5,
                "pid": 1,
                "args": {"correlation": corr},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"k{corr}",
                "ts": ts + 500,
                "dur": 5,
                "pid": 0,
                "args": {"correlation": corr},
            },
            {"ph": "s", "cat": "ac2g", "id": corr, "ts": ts, "pid": 1},
            {"ph": "X", "cat": "python_function", "name": f"f{corr}", "ts": ts, "dur": 2, "pid": 1},
        ]

    data = {
        "traceEvents": [
            step(0, 0),
            step(1, 100),
            step(2, 200),
            *launch(1, 10),
            *launch(2, 110),
            *launch(3, 210),
            {"ph": "X", "cat": "user_annotation", "name": "generate", "ts": 0, "dur": 300},
        ]
    }
    dropped = trim_steps(data, keep=[1, 2], keep_python=[2])
    names = {e.get("name") for e in data["traceEvents"]}
    assert {"k2", "k3", "generate", "ProfilerStep#1", "f3"} <= names
    assert not {"k1", "f1", "f2", "ProfilerStep#0"} & names
    assert dropped == {
        "user_annotation": 1,
        "cuda_runtime": 1,
        "python_function": 2,
        "kernel": 1,
        "ac2g": 1,
    }
    import tracereader

    # A trimmed real recording still reads: 05's loop keeps decode steps 1-3 only.
    rec = record.load("05_llm_decode", "loop_fused_8b").rep
    assert rec.meta["trimmed"]["keep_steps"] == [1, 2, 3]
    steps = [s.name for s in tracereader.step_times(tracereader.load(rec.trace_path))]
    assert steps == [f"ProfilerStep#{n}" for n in range(1, 4)]


def test_trim_regions_keeps_the_named_regions_cpu_side_and_what_it_launched(tmp_path):

    from tracesite.trim import trim_regions

    def ev(cat, name, ts, dur=5, **args):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "args": args}

    data = {
        "traceEvents": [
            ev("user_annotation", "ProfilerStep#2", 0, 300),
            ev("user_annotation", "forward", 0, 100),
            ev("user_annotation", "optimizer", 200, 100),
            ev("cpu_op", "aten::mm", 10, 20),
            ev("cuda_runtime", "cudaLaunchKernel", 12, 2, correlation=1),
            ev("kernel", "gemm", 400, 5, correlation=1),
            {"ph": "s", "cat": "ac2g", "id": 1, "ts": 12, "pid": 1},
            {"ph": "s", "cat": "fwdbwd", "id": 7, "ts": 10, "pid": 1},
            {"ph": "f", "cat": "fwdbwd", "id": 7, "ts": 150, "pid": 2},
            ev("cpu_op", "aten::_fused_adamw_", 210, 20),
            ev("cuda_runtime", "cudaLaunchKernel", 212, 2, correlation=2),
            ev("kernel", "adamw", 420, 5, correlation=2),
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 50, "pid": 1},
        ]
    }
    dropped = trim_regions(data, ["optimizer"])
    names = {e.get("name") for e in data["traceEvents"]}
    assert {
        "ProfilerStep#2",
        "forward",
        "optimizer",
        "aten::_fused_adamw_",
        "adamw",
        "[memory]",
    } <= names
    assert not {"aten::mm", "gemm"} & names
    assert not [e for e in data["traceEvents"] if e.get("cat") == "fwdbwd"]
    assert dropped == {"cpu_op": 1, "cuda_runtime": 1, "kernel": 1, "ac2g": 1, "fwdbwd": 2}
    assert trim_regions(data, ["optimizer"]) == {}  # a trimmed trace trims to itself

    # --retrim applies an example's keep_regions (the plan) to its recordings in place, once.
    script = tmp_path / "99_other.py"
    script.write_text("VARIANTS = {'v': (print, {})}\n", encoding="utf-8")
    write_plan(tmp_path / "rec", **{"99_other": {"keep_regions": {"v": ["optimizer"]}}})
    folder = tmp_path / "rec" / "h200" / "99_other" / "v" / "r0"
    folder.mkdir(parents=True)
    full = {"traceEvents": [ev("user_annotation", "optimizer", 0, 10), ev("cpu_op", "x", 20)]}
    (folder / "trace.json.gz").write_bytes(gzip.compress(json.dumps(full).encode()))
    meta = {"example": "99_other", "variant": "v", "repeat": 0, "repeats": 1, "params": {}}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (folder / "table.txt").write_text("", encoding="utf-8")
    assert set(retrim([script], tmp_path / "rec")) == {"99_other"}
    kept = json.loads(gzip.decompress((folder / "trace.json.gz").read_bytes()))
    assert [e["name"] for e in kept["traceEvents"]] == ["optimizer"]
    trimmed = json.loads((folder / "meta.json").read_text(encoding="utf-8"))["trimmed"]
    assert trimmed["keep_regions"] == ["optimizer"] and trimmed["dropped"] == {"cpu_op": 1}
    retrim([script], tmp_path / "rec")
    assert json.loads((folder / "meta.json").read_text(encoding="utf-8"))["trimmed"] == trimmed


def test_shards_split_the_queue_into_parts_of_about_equal_length():
    estimates = [100.0, 90.0, 40.0, 30.0, 30.0, 10.0, 5.0]
    parts = [recorder.shard_of(estimates, (k, 3)) for k in (1, 2, 3)]
    assert sorted(i for part in parts for i in part) == list(range(len(estimates)))  # each once
    loads = [sum(estimates[i] for i in part) for part in parts]
    assert max(loads) <= 110 and min(loads) >= 90  # the longest first, to the least loaded
    assert recorder.shard_of(estimates, (1, 1)) == list(range(len(estimates)))
    with pytest.raises(record.RecordingError, match="between 1 and N"):
        recorder.shard_of(estimates, (4, 3))


def test_stale_only_and_shards_record_just_their_part_and_merge(tmp_path, monkeypatch):
    """Record everything; change one variant's settings: only it is stale, and recording
    it replaces its repeats alone. Two shards, recorded into two copies, merge by copying."""
    pytest.importorskip("torch")
    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    script = write(tmp_path, TINY, name="09_tiny.py")
    root = tmp_path / "recordings"
    write_plan(root, **TINY_PLAN)
    recorder.record_example(script, repeats=1, root=root)
    before = {
        r.variant: r.env["recorded_at"] for r in record.iter_recordings(root) if r.repeat == 0
    }
    assert recorder.stale_variants(script, root, repeats=1, gpu=CPU) == []
    assert recorder.stale_variants(script, root, repeats=2, gpu=CPU) == ["warm_a", "warm_b", "cold"]
    # Another GPU's recordings are its own: none of them is recorded there.
    assert recorder.stale_variants(script, root, repeats=1) == ["warm_a", "warm_b", "cold"]
    write(
        tmp_path,
        TINY.replace(
            '"warm_b": (profile_tiny, {"size": 4})', '"warm_b": (profile_tiny, {"size": 5})'
        ),
        name="09_tiny.py",
    )
    assert recorder.stale_variants(script, root, repeats=1, gpu=CPU) == ["warm_b"]
    took = recorder.record_examples([script], repeats=1, root=root, only={"09_tiny": ["warm_b"]})
    assert took["09_tiny"]["processes"] == 1 and took["09_tiny"]["variants"] == 1
    assert recorder.stale_variants(script, root, repeats=1, gpu=CPU) == []
    after = {r.variant: r for r in record.iter_recordings(root) if r.repeat == 0}
    assert after["warm_b"].params == {"size": 5}
    assert after["warm_a"].env["recorded_at"] == before["warm_a"]  # untouched
    assert not list(root.glob("*/.staging-*"))
    # Shards: each records its part into a copy of the recordings; copied together, they
    # hold every repeat of every variant once.
    merged = tmp_path / "merged"
    for k in (1, 2):
        copy = tmp_path / f"shard{k}"
        shutil.copytree(root, copy)
        took = recorder.record_examples([script], repeats=1, root=copy, shard=(k, 2))
        assert took["09_tiny"]["processes"] == 1  # of the queue's two: one each
        shutil.copytree(copy, merged, dirs_exist_ok=True)
    stamps = {(r.variant, r.repeat): r.env["recorded_at"] for r in record.iter_recordings(merged)}
    assert len(stamps) == 3 and record.check_examples(tmp_path, root=merged) == []
    # A full re-record begun at a time, resumed: only what was recorded before it is left.
    newest = max(stamps.values())
    assert recorder.recorded_before(script, "2000-01-01T00:00", merged, repeats=1, gpu=CPU) == []
    later = "2999-01-01T00:00"
    assert recorder.recorded_before(script, later, merged, repeats=1, gpu=CPU) == [
        "warm_a",
        "warm_b",
        "cold",
    ]
    assert recorder.recorded_before(script, newest, merged, repeats=2, gpu=CPU) == [
        "warm_a",
        "warm_b",
        "cold",
    ]


def test_a_time_budget_takes_the_variants_that_fit_in_order():
    walls = {("ex", "a"): 10.0, ("ex", "b"): 100.0, ("ex", "c"): 20.0}
    start = recorder.PROCESS_START_S
    fit = 3 * (start + 10) + 3 * (start + 20)  # a and c, not b
    wanted = {"ex": ["a", "b", "c"]}
    assert recorder.within_budget(wanted, fit, walls, repeats=3) == {"ex": ["a", "c"]}
    assert recorder.within_budget(wanted, fit - 1, walls, repeats=3) == {"ex": ["a"]}
    assert recorder.within_budget({"ex": ["b"], "other": []}, 0, walls) == {"ex": [], "other": []}


def test_the_readme_quotes_the_recording_plan_of_the_current_recordings():
    """The README's recording times come from the recordings' stamps, not typed by hand:
    after a re-record, `python scripts/record.py --plan --readme` brings it up to date.
    It quotes the plan on the H200 (the default without a GPU), whatever GPU runs this."""
    pytest.importorskip("torch")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "scripts" / "record.py"), "--plan", "--gpu", "h200"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    readme = (root / "README.md").read_text(encoding="utf-8")
    quoted = readme.split("<!-- record --plan: begin -->")[1].split("<!-- record --plan: end -->")[
        0
    ]
    assert quoted.strip().strip("`").strip() == done.stdout.strip(), (
        "README's recording plan is out of date: run python scripts/record.py --plan --readme"
    )


def test_the_check_names_variants_that_have_no_recording_with_their_current_settings(tmp_path):
    from tracesite.recordings import _unrecorded

    (tmp_path / "99_new.py").write_text(
        "def profile_new(out_dir, *, size=1):\n    return ''\n\n"
        "VARIANTS = {'small': (profile_new, {'size': 1})}\n",
        encoding="utf-8",
    )
    (line,) = _unrecorded(tmp_path)
    assert "99_new/small is stale or missing" in line
    assert line.endswith("python scripts/record.py 99_new --variants small")
    assert _unrecorded(ROOT / "examples") == []  # every variant recorded as VARIANTS says


def _sessions_tree(tmp_path: Path) -> Path:
    """A copy of 05_llm_decode's final loop, its current repeats and one earlier session
    made of copies of them, stamped a day earlier (``sessions/2026-11-29T10-00/``)."""
    root = tmp_path / "recordings"
    variant = root / "h200" / "05_llm_decode" / "loop_untuned_8b"
    src = record.recordings_root() / "h200" / "05_llm_decode" / "loop_untuned_8b"
    for k in range(3):
        shutil.copytree(src / f"r{k}", variant / f"r{k}")
        earlier = variant / "sessions" / "2026-11-29T10-00" / f"r{k}"
        shutil.copytree(src / f"r{k}", earlier)
        meta = json.loads((earlier / "meta.json").read_text(encoding="utf-8"))
        meta["env"]["recorded_at"] = f"2026-11-29T10:0{k}:00+00:00"
        (earlier / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return root


def _edit_meta(folder: Path, **changes: object) -> None:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    meta.update(changes)
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def test_earlier_sessions_are_read_beside_the_current_repeats_and_checked(tmp_path):
    """``<variant>/sessions/<time>/r<k>/``: read as Variant.sessions, left out of the current
    repeats, and checked: the same code as the current repeats, or a stated difference."""
    root = _sessions_tree(tmp_path)
    variant = record.load("05_llm_decode", "loop_untuned_8b", root)
    (session,) = variant.sessions
    assert session.name == "2026-11-29T10-00" and session.code_changed is None
    assert [r.repeat for r in session.repeats] == [0, 1, 2]
    assert all(r.session == session.name and r.variant == variant.name for r in session.repeats)
    assert session.repeats[0].trace_url() == (
        "../traces/h200/05_llm_decode/loop_untuned_8b/sessions/2026-11-29T10-00/r0.json.gz"
    )
    assert all(r.session is None for r in variant.repeats)
    assert len(list(record.iter_recordings(root))) == 3
    assert len(list(record.iter_recordings(root, sessions=True))) == 6
    examples = ROOT / "examples"
    assert record.check_examples(examples, root) == []
    # Recorded with other code: flagged, unless session.json says how it differs from now.
    folder = root / "h200" / "05_llm_decode" / "loop_untuned_8b" / "sessions" / session.name
    _edit_meta(folder / "r1", code_hash="0123456789abcdef")
    (problem,) = record.check_examples(examples, root)
    assert "session 2026-11-29T10-00 was recorded with other code" in problem
    current = variant.repeats[0].meta["code_hash"]
    note = {"code_changed": {"current_code_hash": current, "what": "an older GEMV kernel"}}
    (folder / "session.json").write_text(json.dumps(note), encoding="utf-8")
    assert record.check_examples(examples, root) == []
    assert record.load("05_llm_decode", "loop_untuned_8b", root).sessions[0].code_changed == (
        "an older GEMV kernel"
    )
    note["code_changed"]["current_code_hash"] = "fedcba9876543210"  # the code changed since
    (folder / "session.json").write_text(json.dumps(note), encoding="utf-8")
    (problem,) = record.check_examples(examples, root)
    assert "differs from the code of hash fedcba9876543210" in problem
    (folder / "session.json").unlink()
    _edit_meta(folder / "r1", code_hash=current)
    # Misnamed, or a copy of the current session: flagged.
    folder.rename(folder.with_name("2026-11-29T09-00"))
    (problem,) = record.check_examples(examples, root)
    assert "its first repeat was recorded at 2026-11-29T10:00" in problem
    folder.with_name("2026-11-29T09-00").rename(folder)
    first = str(variant.repeats[0].env["recorded_at"])  # named after the current session
    twin = folder.with_name(first[:16].replace(":", "-"))
    for k in range(3):
        shutil.copytree(folder.parent.parent / f"r{k}", twin / f"r{k}")
    (problem,) = record.check_examples(examples, root)
    assert f"{twin.name}: it holds repeats of the current session" in problem
    shutil.rmtree(twin)
    # Earlier sessions without current repeats: flagged.
    for k in range(3):
        shutil.rmtree(folder.parent.parent / f"r{k}")
    (problem,) = record.check_examples(examples, root)
    assert "earlier sessions but no current repeats" in problem


def test_retrim_trims_earlier_sessions_to_the_steps_the_plan_keeps(tmp_path):
    root = _sessions_tree(tmp_path)
    variant = root / "h200" / "05_llm_decode" / "loop_untuned_8b"
    session = variant / "sessions" / "2026-11-29T10-00"  # as recorded: keep_steps [1, 2, 3]
    before = {p: p.read_bytes() for p in variant.glob("r*/*")}
    plan = {
        "keep_steps": {"loop_untuned_8b": [1, 2, 3]},
        "keep_sessions": {"loop_untuned_8b": [2, 4]},
    }
    write_plan(root, **{"05_llm_decode": plan})
    sizes = {p: p.stat().st_size for p in session.glob("r*/trace.json.gz")}
    retrim([Path("05_llm_decode")], root)
    assert {p: p.read_bytes() for p in variant.glob("r*/*")} == before  # the current: as it was
    (s,) = record.load("05_llm_decode", "loop_untuned_8b", root).sessions
    for r in s.repeats:
        assert r.meta["trimmed"]["keep_steps"] == [2]  # what it still had of the steps kept
        assert r.trace_bytes < 0.7 * sizes[r.trace_path]
        assert [st.name for st in r.trace().steps] == ["ProfilerStep#2"]
    assert retrim([Path("05_llm_decode")], root)  # a trimmed trace trims to itself
    assert [r.meta["trimmed"] for r in s.repeats] == [
        r.meta["trimmed"]
        for r in record.load("05_llm_decode", "loop_untuned_8b", root).sessions[0].repeats
    ]


def test_recording_again_keeps_the_last_session_the_plan_keeps(tmp_path, monkeypatch):
    """A variant the plan names in keep_sessions keeps its last session when it is recorded
    again with the same code; recorded with other code, the last session goes, and the
    check flags the earlier ones until they say how their code differs."""
    pytest.importorskip("torch")
    monkeypatch.setenv("KINETO_LOG_LEVEL", "6")
    script = write(tmp_path, TINY, name="09_tiny.py")
    root = tmp_path / "recordings"
    write_plan(root, **{"09_tiny": {"cold_variants": ["cold"], "keep_sessions": {"warm_a": None}}})
    lines: list[str] = []

    def record_it(**kw: object) -> None:
        took = recorder.record_examples(
            [script], repeats=1, root=root, log=lambda line, **_: lines.append(line), **kw
        )
        assert not isinstance(took["09_tiny"], record.RecordingError)

    record_it()
    first = record.load("09_tiny", "warm_a", root, CPU).repeats[0].env["recorded_at"]
    record_it()  # the whole example again: warm_a's last session stays, beside the new one
    record_it()  # and again: both earlier sessions outlive the folder's replacement
    warm_a = record.load("09_tiny", "warm_a", root, CPU)
    assert len(warm_a.sessions) == 2 and warm_a.sessions[0].repeats[0].env["recorded_at"] == first
    assert warm_a.sessions[0].name.startswith(first[:16].replace(":", "-"))
    assert record.load("09_tiny", "warm_b", root, CPU).sessions == []  # not in keep_sessions
    assert sum("last session kept in sessions/" in line for line in lines) == 2
    assert record.check_examples(tmp_path, root=root) == []
    # Other code: its last session is not kept, and the earlier ones are flagged.
    script.write_text(
        TINY.replace(
            '"warm_a": (profile_tiny, {"size": 8})', '"warm_a": (profile_tiny, {"size": 16})'
        )
    )
    record_it(only={"09_tiny": ["warm_a"]})
    assert any("its last session ran other code; not kept" in line for line in lines)
    assert len(record.load("09_tiny", "warm_a", root, CPU).sessions) == 2
    problems = record.check_examples(tmp_path, root=root)
    assert len(problems) == 2 and all("was recorded with other code" in p for p in problems)
