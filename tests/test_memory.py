"""Memory view: [memory] instant events of profile_memory=True traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from _builders import call, doc, ev, gpu, make, step

from tracereader import _load as loader
from tracereader import _tolerant, load
from tracereader._memory import GIB, memory_view

RECORDING = (Path(__file__).parent.parent / "docs" / "recordings" / "h200" / "06_train_step"
             / "memory" / "r0" / "trace.json.gz")  # fmt: skip
GIB_INT = 1 << 30


def mem(ts, nbytes, allocated, reserved, addr, device=0, dtype=1, tid=1):
    """One [memory] instant event (ts in µs)."""
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 4242,
            "tid": tid, "ts": ts,
            "args": {"Total Reserved": reserved, "Total Allocated": allocated, "Bytes": nbytes,
                     "Device Id": device if dtype else -1, "Device Type": dtype,
                     "Addr": addr}}  # fmt: skip


# 1 GiB was allocated before the trace (addr 9, freed at 450). Step 1: 2 GiB at 100
# (forward), 3 GiB at 200 (forward, inside aten::empty): the peak, 1 + 2 + 3 = 6 GiB;
# 3 GiB freed at 300. Step 2: 4 GiB at 600 (backward), 5 GiB in all. The events are
# written out of time order, as torch writes them.
EVENTS = [
    step(1, 0, 500),
    ev("forward", 50, 200, "user_annotation"),
    ev("aten::empty", 190, 20, "cpu_op"),
    ev("backward", 260, 200, "user_annotation"),
    step(2, 500, 500),
    ev("backward", 550, 100, "user_annotation"),
    call("cudaLaunchKernel", 10, 2, corr=1),
    gpu("sm90_gemm", 20, 10, corr=1),
    mem(600, 4 * GIB_INT, 5 * GIB_INT, 8 * GIB_INT, 4),
    mem(100, 2 * GIB_INT, 3 * GIB_INT, 4 * GIB_INT, 1),
    mem(200, 3 * GIB_INT, 6 * GIB_INT, 8 * GIB_INT, 2),
    mem(300, -3 * GIB_INT, 3 * GIB_INT, 8 * GIB_INT, 2),
    mem(450, -1 * GIB_INT, 2 * GIB_INT, 8 * GIB_INT, 9),
    mem(120, 64, 64, 0, 5, dtype=0),
    mem(130, -64, 0, 0, 5, dtype=0),
]


def _write(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "mem.json"
    path.write_text(json.dumps(doc(events)))
    return path


def test_peaks_steps_and_regions(tmp_path):
    m = memory_view(load(_write(tmp_path, EVENTS)))
    assert m is not None
    cuda, cpu = m.devices
    assert (cuda.device, cpu.device) == ("cuda:0", "cpu")
    assert cuda.events == 5 and cpu.events == 2
    assert cuda.ts_ns.tolist() == [100_000, 200_000, 300_000, 450_000, 600_000]  # sorted
    assert cuda.before_bytes == GIB_INT
    assert cuda.peak["bytes"] == 6 * GIB_INT and cuda.peak["ts_ns"] == 200_000
    assert cuda.peak["step"] == "ProfilerStep#1" and cuda.peak["region"] == "forward"
    assert cuda.peak["op"] == "aten::empty"
    assert cuda.peak_reserved["bytes"] == 8 * GIB_INT and cuda.peak_reserved["ts_ns"] == 200_000
    rec = m.peaks().to_records()[0]
    assert rec["peak_allocated_gib"] == 6 and rec["at_ms"] == pytest.approx(0.2)
    assert rec["allocated_before_trace_gib"] == 1
    # Blocks alive at the peak: 3 GiB (200) and 2 GiB (100); 1 GiB is from before the trace.
    assert [b["bytes"] for b in cuda.blocks] == [3 * GIB_INT, 2 * GIB_INT]
    assert [b["region"] for b in cuda.blocks] == ["forward", "forward"]
    assert "5.00 GiB (rebuilt from Addr/Bytes pairs)" in cuda.blocks_note
    assert "the other 1.00 GiB was allocated before the trace" in cuda.blocks_note
    steps = m.steps.to_records()
    assert [(s["device"], s["step"], s["peak_allocated_gib"]) for s in steps] == [
        ("cuda:0", "ProfilerStep#1", 6), ("cuda:0", "ProfilerStep#2", 5),
        ("cpu", "ProfilerStep#1", 64 / GIB)]  # fmt: skip
    assert steps[0]["allocated_in_step_gib"] == 5
    series = m.series(cuda, points=4).to_records()
    assert sum(r["events"] for r in series) == 5
    assert max(r["max_allocated_gib"] for r in series) == 6


def test_no_memory_events(tmp_path):
    events = [e for e in EVENTS if e["name"] != "[memory]"]
    assert memory_view(load(_write(tmp_path, events))) is None
    from_bytes = memory_view(make(EVENTS))  # the loader kept them: no file to read again
    assert from_bytes is not None and [d.events for d in from_bytes.devices] == [5, 2]


def test_tolerant_path_gives_the_same_view(tmp_path):
    path = _write(tmp_path, EVENTS)
    fast = memory_view(load(path))
    slow = memory_view(_tolerant.load_tolerant(*loader._read_bytes(path)))
    assert fast is not None and slow is not None
    assert fast.peaks().to_records() == slow.peaks().to_records()


def _independent() -> dict:
    """Recompute from the raw JSON: [memory] events of the GPU, in time order."""
    with gzip.open(RECORDING) as fh:
        events = json.load(fh)["traceEvents"]
    m = [e for e in events if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1]
    m.sort(key=lambda e: e["ts"])
    top = max(m, key=lambda e: e["args"]["Total Allocated"])
    regions = [e for e in events if e.get("cat") == "user_annotation"
               and e["ts"] <= top["ts"] < e["ts"] + e["dur"]]  # fmt: skip
    return {"n": len(m), "peak": top["args"]["Total Allocated"],
            "reserved": max(e["args"]["Total Reserved"] for e in m),
            "before": m[0]["args"]["Total Allocated"] - m[0]["args"]["Bytes"],
            "open": {e["name"] for e in regions}}  # fmt: skip


def test_real_recording():
    """R-E4: 06_train_step/memory holds 4,740 [memory] events; the GPU peaks at 43.91 GiB."""
    want = _independent()
    m = memory_view(load(RECORDING))
    assert m is not None
    cuda = m.devices[0]
    assert cuda.device == "cuda:0" and cuda.events == want["n"] == 4464
    assert sum(d.events for d in m.devices) == 4740
    assert cuda.peak["bytes"] == want["peak"] == 47_142_883_328  # 43.91 GiB
    assert cuda.peak_reserved["bytes"] == want["reserved"] == 47_779_414_016
    assert cuda.before_bytes == want["before"]
    assert {cuda.peak["step"], cuda.peak["region"]} <= want["open"]
    assert cuda.peak["step"] == "ProfilerStep#2" and cuda.peak["region"] == "backward"
    in_trace = sum(b["bytes"] for b in cuda.blocks)
    assert 0 < in_trace <= cuda.peak["bytes"] - cuda.before_bytes
    assert cuda.blocks[0]["bytes"] == max(b["bytes"] for b in cuda.blocks)


def test_report_section(tmp_path):
    from tracereader._report_views import memory_section

    html = memory_section(load(RECORDING), draw=False)
    assert html.startswith('<h2 id="memory">Memory</h2>')
    assert "cuda:0: peak allocated 43.91 GiB at 60.9 ms (ProfilerStep#2, in backward)" in html
    assert "Memory over time (cuda:0, highest per bin)" in html  # the table, not drawn
    assert "Largest blocks alive at the peak (cuda:0)" in html
    assert "stack of every allocation" in html  # what a memory snapshot adds
    assert memory_section(load(_write(tmp_path, EVENTS[:8]))) == ""


def test_report_section_chart():
    pytest.importorskip("matplotlib")
    from tracereader._report_views import memory_section

    html = memory_section(load(RECORDING), draw=True)
    assert '<img alt="Memory of cuda:0 over time' in html and "data:image/png;base64," in html
    assert "highest per bin" not in html


def test_report_has_memory_section_and_contents_link():
    from tracereader._report import report

    html = report(RECORDING, draw=False)
    assert '<a href="#memory">Memory</a>' in html and '<h2 id="memory">Memory</h2>' in html
    assert html.index('id="memory"') < html.index('id="next"')


def test_instants_that_are_not_memory_give_no_view(tmp_path):
    other = [dict(e, name="[other]") if e["name"] == "[memory]" else e for e in EVENTS]
    trace = load(_write(tmp_path, other))
    assert trace.n_instants == 7 and memory_view(trace) is None
