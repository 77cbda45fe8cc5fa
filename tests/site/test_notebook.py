"""Page helpers that turn repeats into prose: medians per version, verdicts on ratios."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracesite.notebook import check_callouts, medians, unprofiled_calls, verdict
from tracesite.recordings import Recording

WORDS = ("dearer", "cheaper", "not told apart")


def test_a_difference_is_claimed_only_when_every_repeat_agrees_beyond_the_margin():
    assert verdict([1.19, 1.22, 1.20], *WORDS) == "dearer"
    assert verdict([0.80, 0.90, 0.94], *WORDS) == "cheaper"
    assert verdict([0.98, 1.08, 1.00], *WORDS) == "not told apart"
    assert verdict([1.10, 1.20, 1.04], *WORDS) == "not told apart"  # one repeat inside 5 %
    assert verdict([1.10, 1.20, 1.04], *WORDS, margin=0.02) == "dearer"


def test_medians_per_version():
    calls = [("a", 1.0), ("b", 10.0), ("a", 3.0), ("b", 30.0), ("a", 2.0)]
    assert medians(calls) == {"a": 2.0, "b": 20.0}


def _recording(folder: Path) -> Recording:
    return Recording("ex", "v", 0, "", {}, folder / "trace.json.gz")


def test_unprofiled_calls_read_timings_json(tmp_path):
    (tmp_path / "timings.json").write_text(json.dumps({"calls": [["a", 1.5], ["b", 2]]}))
    assert unprofiled_calls(_recording(tmp_path)) == [("a", 1.5), ("b", 2.0)]


def test_a_recording_without_timings_says_so(tmp_path):
    with pytest.raises(ValueError, match="no timings.json"):
        unprofiled_calls(_recording(tmp_path))


def test_facts_repeats_paste_medians_and_the_drawn_repeats_text():
    """``f.repeats(fn)`` runs ``fn`` once per repeat, the drawn repeat (r0) last: a number
    is pasted as the median with its range, text as the drawn repeat's, and a claim that
    fails names the repeat."""
    from tracesite.facts import ClaimError, Facts, Fmt, claim

    f = Facts("page", "ex")
    seen = []

    def each():
        k = f.repeat
        seen.append(k)
        f.num("x", [10, 20, 30][k])
        f.md("text", f"repeat {k}")
        f.put("fmt", Fmt([1.0, 5.0, 9.0][k], lambda v: f"{v:.1f} µs"))
        return k

    assert f.repeats(each, n=3) == 0
    assert seen == [1, 2, 0]
    assert {k: v[1] for k, v in f.glue.items()} == {
        "x": 20,
        "x_lo": 10,
        "x_hi": 30,
        "text": "repeat 0",
        "fmt": "5.0 µs",
    }
    with pytest.raises(ClaimError, match="on repeat 3 of 3: no repeat is 2"):
        f.repeats(lambda: claim(f.repeat != 2, "no repeat is 2"), n=3)
    with pytest.raises(ValueError, match="produced twice"):
        f.num("x", 1)


def test_reader_files_lays_out_every_repeat_under_its_download_name(monkeypatch):
    import gzip

    from tracesite.notebook import reader_files, setup
    from tracesite.recordings import iter_recordings

    monkeypatch.chdir(Path.cwd())  # reader_files changes directory; put it back after
    setup("01_matmul_add")
    folder = reader_files()
    assert Path.cwd() == folder
    ours = [r for r in iter_recordings(gpu="h200") if r.example == "01_matmul_add"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(r.download_name for r in ours)
    assert (folder / "64_bf16.json.gz").resolve() == next(
        r.trace_path.resolve() for r in ours if r.variant == "64_bf16" and r.repeat == 0
    )
    assert "64_bf16-r1.json.gz" in {p.name for p in folder.iterdir()}
    with gzip.open(folder / "64_bf16.json.gz") as fh:
        assert fh.read(1) == b"{"


def test_stamp_spans_every_recording_of_the_example():
    from tracesite import iter_recordings
    from tracesite.notebook import stamp

    line = stamp("06_train_step")
    times = sorted(
        str(r.env["recorded_at"])[:16].replace("T", " ")
        for r in iter_recordings(gpu="h200")
        if r.example == "06_train_step"
    )
    assert line.startswith("Recorded on NVIDIA H200 (driver ")
    assert line.endswith(f"from {times[0]} to {times[-1]} UTC") and times[0] != times[-1]


def test_a_step_picture_fails_when_a_callout_found_another_steps_event_by_name():
    from _builders import ADD_KERNEL, make_doc

    from tracereader import Callout, load, timeline

    doc = make_doc(steps=2)  # step 1's add kernel runs late, inside step 2's window
    next(e for e in doc["traceEvents"] if e["name"] == ADD_KERNEL)["ts"] = 1005.0
    tr = load(json.dumps(doc).encode())
    bare = timeline(tr, step=2, callouts=[Callout("the add", name=ADD_KERNEL)])
    with pytest.raises(ValueError, match="of ProfilerStep#1, in a picture of ProfilerStep#2"):
        check_callouts(bare)
    check_callouts(timeline(tr, step=2, callouts=[Callout("the add", name=ADD_KERNEL, step=2)]))
    late = int(tr.where(name=ADD_KERNEL)[0])  # a row the page chose: its own business
    check_callouts(timeline(tr, step=2, callouts=[Callout("the last step's add", event=late)]))
