"""Traces nobody here wrote: malformed values, other vendors, other torch versions (issue 27).

Each test builds the smallest trace of one shape that used to crash or give a
wrong figure; ``tests/data/other/`` holds real traces from other projects that
showed the same (see its README).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _builders import call, doc, ev, gpu, make, op, step

import tracereader
from tracereader import TraceError, load, validate
from tracereader import _tolerant as tolerant
from tracereader._gaps import gaps
from tracereader._measure import summary
from tracereader._tables import op_table
from tracereader.cli import main

OTHER = Path(__file__).resolve().parent / "data" / "other"
SRC = str(Path(tracereader.__file__).parents[1])

#: One step, one launch, one kernel: the base the tests below spoil.
BASE = [
    step(1, 0, 100),
    op("aten::add", 5, 30, ext=1),
    call("cudaLaunchKernel", 10, 5, corr=1, ext=1),
    gpu("add_kernel", 20, 10, corr=1),
]


def as_bytes(events, **meta) -> bytes:
    return json.dumps({**doc(events), **meta}).encode()


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a real process: stdout is UTF-8 bytes, as in a terminal."""
    env = {"PYTHONPATH": SRC, "PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "tracereader.cli", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


# ------------------------------------------------------------------ malformed input
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("where", ["args", "meta_before", "meta_after"])
def test_deep_nesting_is_one_clear_error(tmp_path, capsys, where):
    text = json.dumps(doc(BASE))
    if where == "args":
        text = text.replace('"args": {}', f'"args": {{"deep": {DEEP}}}', 1)
    elif where == "meta_before":
        text = '{"deep": ' + DEEP + ", " + text[1:]
    else:
        text = text[:-1] + ', "deep": ' + DEEP + "}"
    with pytest.raises(TraceError, match="nested too deeply"):
        load(text.encode())
    path = tmp_path / "deep.json"
    path.write_text(text)
    assert main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err


@pytest.mark.parametrize("pid", ["GPU 0", 1.5, 2**64 - 1, -3, True])
def test_a_gpu_pid_that_is_no_device_costs_that_event(tmp_path, capsys, pid):
    events = [*BASE, {**gpu("bad_kernel", 40, 10, corr=1), "pid": pid}]
    trace = make(events)
    assert trace.repairs == ["skipped 1 GPU event whose pid is not a device number"]
    assert trace.names[trace.name_id[trace.where(name="add_kernel")[0]]] == "add_kernel"
    assert len(trace.where(name="bad_kernel")) == 0
    s = summary(trace)
    assert (s["kernels"], s["devices"], s["gpu_busy_us"]) == (1, [0], 10.0)
    assert len(gaps(trace)) == 0
    findings = [f.message for f in validate(trace) if f.check == "parser"]
    assert "repaired: skipped 1 GPU event whose pid is not a device number" in findings
    path = tmp_path / "pid.json"
    path.write_bytes(as_bytes(events))
    for command in ("summary", "gaps", "validate", "kernels", "ops", "launches"):
        assert main([command, str(path)]) in (0, 1), command
    assert "Traceback" not in capsys.readouterr().err


def test_a_lone_surrogate_in_a_name_prints(tmp_path):
    text = json.dumps(doc(BASE)).replace("aten::add", "aten::add\\ud800")
    trace = load(text.encode())
    assert "aten::add\ufffd" in trace.names
    assert trace.repairs == ["replaced 1 lone surrogate escape in names with U+FFFD"]
    for name in trace.names:
        name.encode("utf-8")
    assert any(r["name"] == "aten::add\ufffd" for r in op_table(trace).to_records())
    path = tmp_path / "surrogate.json"
    path.write_text(text)
    for fmt in ("text", "markdown", "json"):
        done = run_cli("ops", str(path), "--format", fmt)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert "aten::add" in done.stdout


# ------------------------------------------------------------------ vendors and versions
def test_torch_1_8_steps_written_as_operators_are_found():
    old = [{**step(1, 0, 100), "cat": "Operator"}, {**step(2, 100, 100), "cat": "Operator"}]
    old += [
        {**call("cudaLaunchKernel", 110, 5, corr=1), "cat": "Runtime"},
        {**gpu("k", 120, 10, corr=1), "cat": "Kernel", "tid": "stream 7"},
    ]
    trace = make(old)
    assert [s.name for s in trace.steps] == ["ProfilerStep#1", "ProfilerStep#2"]
    assert trace.step(2).start_ns == trace.t0_ns + 100_000
    assert summary(trace)["step_times"][1]["kernels"] == 1
    assert trace.gpu_lanes()[0].stream == 7  # torch 1.x names the stream "stream 7"


def test_hip_graph_launches_are_counted():
    events = [
        step(1, 0, 100),
        call("hipGraphLaunch", 10, 5, corr=1),
        gpu("k1", 20, 10, corr=1),
        gpu("k2", 31, 10, corr=1),
        call("cudaGraphLaunch", 50, 5, corr=2),
        gpu("k3", 60, 10, corr=2),
    ]
    s = summary(make(events))
    assert s["graph_launches"] == 2
    assert s["launch_apis"] == {"hipGraphLaunch": 2, "cudaGraphLaunch": 1}


def _versions(trace) -> str:
    return next(f.message for f in validate(trace) if f.check == "versions")


def test_rocm_versions_are_described_as_rocm():
    meta = {"hip_runtime_version": 60342134, "hip_driver_version": 60342134,
            "roctracer_version": "4.1"}  # fmt: skip
    hip = [step(1, 0, 100), call("hipLaunchKernel", 10, 5, corr=1), gpu("k", 20, 10, corr=1)]
    message = _versions(load(as_bytes(hip, **meta)))
    assert message.startswith("HIP runtime 6.3, HIP driver 6.3, roctracer 4.1;")
    sdk = _versions(load(as_bytes(hip, **{"rocprofiler-sdk_version": "1.0"})))
    assert sdk.startswith("rocprofiler-sdk 1.0;")
    bare = _versions(make(hip))  # HTA's MI250 trace: no version keys at all
    assert bare.startswith("no HIP/ROCm versions in the file (a ROCm trace)")
    assert _versions(make(BASE)).startswith("no CUDA/CUPTI versions")


def test_mtia_traces_are_not_called_cpu_only():
    events = [
        step(1, 0, 1000),
        ev("runFunction - job_prep_and_submit_for_execution", 10, 5, "mtia_runtime",
           correlation=18),
        ev("fc-dtype_Float", 20, 100, "mtia_ccp_events", pid=9, tid=408, correlation=18,
           stream=102),
        ev("dma_request", 130, 10, "mtia_ccp_events", pid=9, tid=4, stream=102),
    ]  # fmt: skip
    trace = make(events)
    gpu_finding = next(f for f in validate(trace) if f.check == "gpu")
    assert gpu_finding.level == "warn"
    assert "2 MTIA device ops" in gpu_finding.message
    assert "not supported yet" in gpu_finding.message and "CPU-only" not in gpu_finding.message
    assert all("CPU-only" not in f.message for f in validate(trace))
    assert "an MTIA trace" in _versions(trace)
    assert summary(trace)["mtia_device_ops"] == 2


# ------------------------------------------------------------------ timestamps
TS_TEXT = ("1700000000000000.123", "1700000000000020.375", "1700000000000030.999")


def _absolute_with_fraction(fractions=TS_TEXT) -> bytes:
    """Absolute µs with a ns fraction and no baseTimeNanoseconds (torch about 2.2-2.3)."""
    events = [step(1, 1, 100), gpu("k1", 2, 10, corr=1), gpu("k2", 3, 10, corr=2)]
    text = json.dumps(doc(events))
    for placeholder, ts in zip(('"ts": 1,', '"ts": 2,', '"ts": 3,'), fractions, strict=True):
        text = text.replace(placeholder, f'"ts": {ts},')
    return text.encode()


def _exact(text: str) -> int:
    whole, frac = text.split(".")
    return int(whole) * 1000 + int(frac)


@pytest.mark.parametrize(
    "fractions",
    [TS_TEXT, ("1700000000000000.001", "1700000000000020.002", "1700000000000030.124")],
    ids=["fractions", "fractions_that_round_to_whole_floats"],
)
def test_absolute_microseconds_with_a_ns_fraction_stay_exact(fractions):
    data = _absolute_with_fraction(fractions)
    want = sorted(_exact(t) for t in fractions)
    for trace in (load(data), tolerant.load_tolerant(data, "x")):
        assert trace.ts_ns.tolist() == want
        assert trace.repairs == []
    gap = gaps(load(data), min_gap_us=0)
    k1, k2 = _exact(fractions[1]), _exact(fractions[2])
    assert [(g.start_ns, g.end_ns) for g in gap] == [(k1 + 10_000, k2)]


def test_absolute_ts_plus_base_time_does_not_wrap(tmp_path, capsys):
    events = [step(1, 8e15, 100), call("cudaLaunchKernel", 8e15 + 5, 5, corr=1),
              gpu("k1", 8e15 + 10, 10, corr=1), gpu("k2", 8e15 + 40, 10, corr=1)]  # fmt: skip
    data = as_bytes(events, baseTimeNanoseconds=1_790_857_026_000_000_000)
    trace = load(data)
    assert trace.t0_ns == 8 * 10**18 and (trace.ts_ns > 0).all()
    assert trace.repairs == [
        "ignored baseTimeNanoseconds: added to these ts (absolute already) "
        "it would pass the int64 range"
    ]
    path = tmp_path / "wrap.json"
    path.write_bytes(data)
    assert main(["gaps", str(path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [g["start_ns"] for g in out["gaps"]] == [8 * 10**18 + 20_000]


# ------------------------------------------------------------------ odd values, fast path
def test_a_string_where_a_number_belongs_keeps_the_fast_path():
    events = [
        *BASE,
        call("hipMemcpyWithStream", 40, 5, corr=2),
        gpu("Memcpy HtoD (Host -> Device)", 50, 5, corr=2, cat="gpu_memcpy"),
        gpu("k_odd_stream", 60, 5, corr=1),
    ]
    events[4]["args"]["stream"] = "0x0"  # recent ROCm Kineto, on the runtime call
    events[5]["args"]["bytes"] = "1"  # a number written as a string
    events[6]["args"]["stream"] = "0x7f"  # no number at all
    data = as_bytes(events)
    trace = load(data)
    assert trace.parser == "fast"
    assert trace.repairs == ["treated 1 non-numeric value in args.stream as absent"]
    memcpy = int(trace.where(prefix="Memcpy")[0])
    assert trace.extra["bytes"][memcpy] == 1
    assert trace.extra["stream"][int(trace.where(name="k_odd_stream")[0])] == -1
    slow = tolerant.load_tolerant(data, "x")
    assert (slow.repairs, slow.extra["bytes"].tolist()) == (
        trace.repairs,
        trace.extra["bytes"].tolist(),
    )


def test_an_odd_envelope_value_costs_one_piece_not_the_file(monkeypatch):
    from tracereader import _fast

    monkeypatch.setattr(_fast, "PIECE_BYTES", 300)  # many pieces
    events = [*BASE] + [op(f"aten::op{i}", 200 + 10 * i, 5) for i in range(60)]
    events[30]["name"] = 42  # not a string: read as text on the lenient path
    trace = load(as_bytes(events), workers=1)
    assert trace.parser == "fast"
    assert "42" in trace.names and len(trace) == len(events)
    assert trace.repairs == []
    assert np.array_equal(trace.ts_ns, tolerant.load_tolerant(as_bytes(events), "x").ts_ns)


# ------------------------------------------------------------------ real traces
REAL_OTHER = sorted(OTHER.glob("*.json.gz"))


def test_the_other_projects_traces_are_here():
    assert len(REAL_OTHER) >= 3


@pytest.mark.parametrize("path", REAL_OTHER, ids=lambda p: p.name)
def test_other_projects_traces_read_on_the_fast_path_without_a_traceback(path, capsys):
    trace = load(path)
    assert trace.parser == "fast"
    for command in ("summary", "kernels", "gaps", "validate", "ops", "launches"):
        assert main([command, str(path)]) in (0, 1), command
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "CPU-only" not in out.out


def test_hta_rocm_trace():
    trace = load(OTHER / "hta_mi250_rocm6_2.json.gz")
    assert (trace.parser, trace.repairs) == ("fast", [])
    assert _versions(trace).startswith("no HIP/ROCm versions in the file (a ROCm trace)")
    s = summary(trace)
    assert (s["kernels"], s["memcpys"], s["linked_gpu_ops"]) == (14, 2, 16)


def test_hta_mtia_trace():
    trace = load(OTHER / "hta_mtia_inference_rank_0.json.gz")
    gpu_finding = next(f for f in validate(trace) if f.check == "gpu")
    assert gpu_finding.message.startswith("401 MTIA device ops (mtia_ccp_events)")


def test_kineto_torch_1_8_trace():
    trace = load(OTHER / "kineto_tb_plugin_resnet50_torch1_8.json.gz")
    assert [s.name for s in trace.steps] == ["ProfilerStep#6"]
    assert [ln.stream for ln in trace.gpu_lanes()] == [7]
    assert summary(trace)["step_times"][0]["kernels"] == 1471
