"""Tests for tracereader._validate: one finding per check, in a fixed order."""

from __future__ import annotations

import json

import pytest
from _builders import H200_TRACES, ROOT

from tracereader import Finding, load, validate

SYNTH = ROOT / "tests" / "data" / "synthetic"
CHECKS = ["parser", "versions", "options", "counts", "python", "gpu", "zero_dur", "overlap"]


def findings(name: str | bytes) -> dict[str, list[Finding]]:
    source = name if isinstance(name, bytes) else SYNTH / name
    out: dict[str, list[Finding]] = {}
    for finding in validate(load(source)):
        out.setdefault(finding.check, []).append(finding)
    return out


def only(found: dict[str, list[Finding]], check: str) -> Finding:
    (finding,) = found[check]
    return finding


def test_modern_trace_is_all_ok():
    found = findings("modern.json")
    assert list(found) == [*CHECKS, "last_step"]
    assert {f.level for fs in found.values() for f in fs} == {"ok"}
    assert only(found, "parser").message == "read by the fast parser, no repairs"
    assert only(found, "versions").message == (
        "CUDA runtime 13.0, driver 13.0, CUPTI 130001; "
        "relative timestamps + baseTimeNanoseconds (torch >= 2.4)"
    )
    assert only(found, "options").message == "profiler options on: record_shapes, with_stack"
    assert only(found, "counts").message == (
        "17 complete events (3 cpu_op, 1 user_annotation, 2 python, 3 runtime, 1 driver, "
        "2 kernel, 1 memcpy, 1 gpu_annotation, 1 sync, 1 overhead, 1 other), "
        "5 flow events, 3 instants, 6 lanes (2 GPU streams)"
    )
    assert only(found, "python").message == "12% of complete events are python_function frames"
    assert only(found, "gpu").message == "3 GPU ops (kernels, copies, memsets)"
    assert only(found, "last_step").message == "1 step; the last, ProfilerStep#1, looks complete"


def test_repairs_are_listed_one_per_finding():
    found = findings("nan.json")
    assert [(f.level, f.message) for f in found["parser"]] == [
        ("warn", "read by the tolerant parser after repairs"),
        ("warn", "repaired: accepted 3 Infinity/NaN tokens (not valid JSON)"),
        ("warn", "repaired: skipped 1 complete event without a usable ts/dur"),
    ]


def test_cpu_only_trace():
    found = findings("cpu_only.json")
    assert only(found, "gpu") == Finding(
        "warn", "no GPU events: a CPU-only trace (was ProfilerActivity.CUDA in activities?)", "gpu"
    )
    assert "zero_dur" not in found and "overlap" not in found
    assert only(found, "versions").level == "warn"
    assert only(found, "options").message.startswith("profiler options on: none of record_shapes")
    assert only(found, "last_step").level == "ok"


def test_zero_duration_and_same_stream_overlap():
    found = findings("overlap.json")
    zero, overlap = only(found, "zero_dur"), only(found, "overlap")
    assert zero.level == overlap.level == "warn"
    assert zero.message.startswith("1 GPU op lasts 0 ns")
    assert overlap.message == (
        "1 GPU op overlaps an earlier op on the same stream (1 stream); Perfetto drops such slices"
    )


def test_cut_off_last_step():
    last = only(findings("cut_step.json"), "last_step")
    assert last == Finding(
        "warn",
        "last step ProfilerStep#1 looks cut off: it ends with the trace (the profiler stopped "
        "inside it); 1 of its 2 launch calls had no GPU op recorded",
        "last_step",
    )


def test_launches_without_gpu_ops_are_an_error():
    doc = json.loads((SYNTH / "cut_step.json").read_text())
    doc["traceEvents"] = [ev for ev in doc["traceEvents"] if ev["cat"] != "kernel"]
    gpu = only(findings(json.dumps(doc).encode()), "gpu")
    assert gpu.level == "error" and gpu.message.startswith("3 launch calls but no GPU ops")


def test_python_heavy_trace_warns():
    doc = json.loads((SYNTH / "cpu_only.json").read_text())
    frame = {"ph": "X", "cat": "python_function", "pid": 100, "tid": 100, "dur": 1.0}
    doc["traceEvents"] += [dict(frame, name=f"f{i}", ts=5e12 + i) for i in range(6)]
    python = only(findings(json.dumps(doc).encode()), "python")
    assert python.level == "warn" and python.message.startswith("55% of complete events")


def test_no_steps_and_legacy_layout():
    found = findings("legacy.json")
    assert only(found, "last_step").message.startswith("no ProfilerStep spans")
    assert "absolute timestamps" in only(found, "versions").message


def test_validate_is_pure(capsys):
    trace = load(SYNTH / "modern.json")
    first, second = validate(trace), validate(trace)
    assert first == second and all(isinstance(f, Finding) for f in first)
    assert {f.level for f in first} <= {"ok", "warn", "error"}
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("path", H200_TRACES, ids=[p.name for p in H200_TRACES])
def test_real_traces_have_no_errors(path):
    found = validate(load(path))
    assert [f.check for f in found][: len(CHECKS)] == CHECKS
    assert not [f for f in found if f.level == "error"]
    by_check = {f.check: f for f in found}
    assert by_check["overlap"].level == by_check["zero_dur"].level == "ok"
    assert (by_check["python"].level == "warn") == (path.name == "train_stack.json.gz")
