"""Tests for tracereader._load: the fast and tolerant paths, quirks, errors."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import pickle
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _builders import H200_TRACES, REAL, RECORDINGS, ROOT

import tracereader
from tracereader import Kind, TraceError, _columns, _fast, _tolerant, load
from tracereader import _load as loader
from tracereader._columns import unpack_xyz

SYNTH = ROOT / "tests" / "data" / "synthetic"
BASE_NS = 1_790_857_026_000_000_000
T_NS = 5_000_000_000_000_000  # the synthetic traces' T (µs) in ns
COLUMNS = ("ts_ns", "dur_ns", "kind", "name_id", "cat_id", "lane", "correlation", "external_id")


def assert_same(a, b) -> None:
    """Two traces hold the same columns, tables, lanes and counts."""
    for col in COLUMNS:
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col), err_msg=col)
    assert a.extra.keys() == b.extra.keys()
    for key in a.extra:
        np.testing.assert_array_equal(a.extra[key], b.extra[key], err_msg=key)
    assert (a.names, a.cats, a.lanes, a.meta) == (b.names, b.cats, b.lanes, b.meta)
    assert (a.n_flows, a.n_instants, a.repairs) == (b.n_flows, b.n_instants, b.repairs)
    assert (a.memory_events, a.comm_args) == (b.memory_events, b.comm_args)


def row(trace, name: str) -> int:
    (index,) = trace.where(name=name)
    return int(index)


# ----------------------------------------------------------------------- modern trace quirks
@pytest.fixture(scope="module")
def modern():
    return load(SYNTH / "modern.json")


def test_modern_counts(modern):
    assert (modern.parser, modern.repairs) == ("fast", [])
    assert (len(modern), modern.n_flows, modern.n_instants) == (17, 5, 3)
    counts = {Kind(k).name: int(n) for k, n in enumerate(np.bincount(modern.kind)) if n}
    assert counts == {
        "CPU_OP": 3, "USER_ANNOTATION": 1, "PYTHON": 2, "RUNTIME": 3, "DRIVER": 1, "KERNEL": 2,
        "MEMCPY": 1, "GPU_ANNOTATION": 1, "SYNC": 1, "OVERHEAD": 1, "OTHER": 1,
    }  # fmt: skip


def test_modern_time_order_and_exact_ns(modern):
    """Out-of-order events come back sorted; ts_ns = base + round(ts * 1000)."""
    assert np.all(np.diff(modern.ts_ns) >= 0)
    assert modern.name(0) == "PyTorch Profiler (0)"  # the Trace span starts first
    k = row(modern, "gemm_kernel")
    assert modern.ts_ns[k] == BASE_NS + T_NS + 16_499
    assert modern.dur_ns[k] == 4_250
    gpu_span = modern.where(kind=Kind.GPU_ANNOTATION)[0]
    assert modern.ts_ns[gpu_span] == BASE_NS + T_NS + 16_498


def test_modern_lanes(modern):
    """GPU lanes are (device, stream); names from the last thread_name, stripped."""
    lanes = {(ln.pid, ln.tid, ln.is_gpu): ln.name for ln in modern.lanes}
    assert lanes == {
        (0, 7, True): "stream 7",
        (0, 20, True): "stream 20",
        (100, 100, False): "thread 100 (python3)",
        (100, 101, False): "thread 101 (pt_autograd_0)",
        ("Spans", "PyTorch Profiler", False): "",
        (-1, 0, False): "",
    }  # no lanes for the 15 placeholder GPUs
    assert [ln.index for ln in modern.lanes] == list(range(6))
    sync = modern.where(kind=Kind.SYNC)[0]
    assert modern.lanes[modern.lane[sync]].is_gpu


def test_modern_args(modern):
    k = row(modern, "gemm_kernel")
    assert (modern.correlation[k], modern.external_id[k]) == (11, 2)
    got = {key: int(modern.extra[key][k]) for key in modern.extra}
    assert got == {
        "bytes": -1, "registers": 74, "shared_mem": 20480, "occupancy_pct": 2, "python_id": -1,
        "python_parent_id": -1, "seq": -1, "stream": 7, "grid": 32, "block": 128,
        "grid_xyz": 8 << 32 | 1 << 16 | 4, "block_xyz": 128 << 32 | 1 << 16 | 1,
        "input_dims": -1,
    }  # fmt: skip
    assert unpack_xyz(int(modern.extra["grid_xyz"][k])) == (8, 1, 4)
    triton = modern.where(kind=Kind.CPU_OP, name="triton_poi_fused_0")[0]
    assert not modern.lanes[modern.lane[triton]].is_gpu  # args.stream = 0 is a CPU op
    assert modern.extra["stream"][triton] == 0
    copy = modern.where(kind=Kind.MEMCPY)[0]
    assert (modern.extra["bytes"][copy], modern.extra["stream"][copy]) == (4096, 20)
    root, child = row(modern, "train.py(10): step"), row(modern, "nn.Module: Linear_0")
    assert modern.extra["python_parent_id"][[root, child]].tolist() == [-1, 1]
    assert modern.extra["python_id"][[root, child]].tolist() == [1, 2]
    backward = row(modern, "autograd::engine::evaluate_function: AddmmBackward0")
    assert modern.extra["seq"][[row(modern, "aten::addmm"), backward]].tolist() == [7, 7]
    assert modern.correlation[row(modern, "cudaDeviceSynchronize")] == 15
    assert modern.external_id[row(modern, "cudaDeviceSynchronize")] == -1


def test_extra_columns_are_built_when_first_read():
    """Trace.extra holds every arg column as a key; each is built once, on first read."""
    trace = load(SYNTH / "modern.json")
    names = [*_columns.EXTRA_ARGS.values(), "grid", "block", "grid_xyz", "block_xyz", "input_dims"]
    assert list(trace.extra) == names and len(trace.extra) == len(names)
    assert "bytes" in trace.extra and "correlation" not in trace.extra
    with pytest.raises(KeyError):
        trace.extra["correlation"]  # an id: a column of its own (trace.correlation)
    assert "built: none yet" in repr(trace.extra)
    stream = trace.extra["stream"]
    assert trace.extra["stream"] is stream and stream.dtype == np.int64
    assert len(stream) == len(trace) and "built: stream" in repr(trace.extra)
    copy = pickle.loads(pickle.dumps(trace))
    assert {k: v.tolist() for k, v in copy.extra.items()} == {
        k: v.tolist() for k, v in trace.extra.items()
    }


def test_modern_meta(modern):
    """Everything but traceEvents, including keys that follow it."""
    assert "traceEvents" not in modern.meta
    assert modern.meta["distributedInfo"]["pg_config"][0]["ranks"] == [0]
    assert modern.meta["traceName"] == "modern.json"
    assert modern.meta["baseTimeNanoseconds"] == BASE_NS
    assert modern.device_properties[0]["numSms"] == 132


def test_legacy_absolute_microseconds():
    trace = load(SYNTH / "legacy.json")
    assert trace.parser == "fast"
    assert trace.ts_ns[0] == 1_669_783_687_389_324_000  # exact, though above 2**53
    assert trace.dur_ns.tolist() == [30_000, 9_000, 40_000, 2_000]
    assert [Kind(k) for k in trace.kind] == [Kind.CPU_OP, Kind.RUNTIME, Kind.KERNEL, Kind.MEMCPY]
    assert trace.n_flows == 1
    assert {(ln.pid, ln.tid, ln.is_gpu) for ln in trace.lanes} == {(7, 7, False), (0, 7, True)}


def test_bare_array():
    trace = load(SYNTH / "bare_array.json")
    assert (trace.parser, len(trace), trace.meta) == ("fast", 4, {})


# ----------------------------------------------------------------------- repairs
@pytest.mark.parametrize(
    ("name", "parser", "repairs", "n_events"),
    [
        ("control_chars.json", "tolerant", ["accepted raw control characters in strings"], 4),
        ("invalid_utf8.json", "tolerant", ["replaced 3 invalid UTF-8 bytes"], 4),
        (
            "nan.json",
            "tolerant",
            [
                "accepted 3 Infinity/NaN tokens (not valid JSON)",
                "skipped 1 complete event without a usable ts/dur",
            ],
            4,
        ),
        (
            "bigint.json",
            "fast",
            [
                "1 integer wider than 64 bits in args.External id kept out of columns",
                "1 integer outside the int64 range in args.correlation kept out of columns",
            ],
            5,
        ),
    ],
)
def test_repairs(name, parser, repairs, n_events):
    trace = load(SYNTH / name)
    assert (trace.parser, trace.repairs, len(trace)) == (parser, repairs, n_events)


def test_repaired_values():
    bad = load(SYNTH / "invalid_utf8.json")
    assert "aten::caf\ufffd \ufffd\ufffd" in bad.names
    ctrl = load(SYNTH / "control_chars.json")
    assert "aten::\x01tab\there\x1f" in ctrl.names
    big = load(SYNTH / "bigint.json")
    assert big.external_id[row(big, "aten::op0")] == -1  # 2**70: absent, never a float
    assert big.correlation[row(big, "cudaEventRecord")] == -1
    assert big.external_id.dtype == np.int64


def test_tolerant_path_reports_the_same_wide_ints():
    data = (SYNTH / "bigint.json").read_bytes()
    assert_same(_tolerant.load_tolerant(data, "x"), load(data))


def test_non_numeric_args_cost_their_field_not_the_fast_path():
    doc = json.loads((SYNTH / "cpu_only.json").read_text())
    doc["traceEvents"][1]["args"]["External id"] = "seven"
    doc["traceEvents"][2]["pid"] = 1.5
    data = json.dumps(doc).encode()
    trace = load(data)
    assert trace.parser == "fast"  # only the piece holding the float pid is read leniently
    assert trace.repairs == ["treated 1 non-numeric value in args.External id as absent"]
    assert trace.external_id[row(trace, "aten::op0")] == -1
    assert "1.5" in {ln.pid for ln in trace.lanes}
    assert_same(trace, _tolerant.load_tolerant(data, "x"))


# ----------------------------------------------------------------------- fast == tolerant
#: A trace with communication kernels and record_param_comms ops (their args are kept).
COMM_TRACE = ROOT / "tests" / "data" / "hta_2rank" / "sampled_rank-0.json.gz"
MEMORY_TRACE = (
    ROOT / "docs" / "recordings" / "h200" / "06_train_step" / "memory" / "r0" / "trace.json.gz"
)


@pytest.mark.parametrize(
    "path",
    [SYNTH / "modern.json", SYNTH / "legacy.json", *REAL[:5], COMM_TRACE, MEMORY_TRACE],
)
def test_fast_and_tolerant_paths_agree(path):
    data, label = loader._read_bytes(path)
    fast, tolerant = load(path), _tolerant.load_tolerant(data, label)
    assert (fast.parser, tolerant.parser) == ("fast", "tolerant")
    assert_same(fast, tolerant)


def test_plain_records_mirror_the_msgspec_structs():
    """The stdlib stand-ins have the structs' fields and defaults, in order."""
    import msgspec

    for plain, struct in [
        (_columns.PlainArgs, _fast.ArgsRecord),
        (_columns.PlainEvent, _fast.EventRecord),
    ]:
        absent = msgspec.Raw(b"")  # msgspec cannot union Raw with None: empty is absent

        assert [(f.name, f.default) for f in dataclasses.fields(plain)] == [
            (f.name, None if f.default == absent else f.default)
            for f in msgspec.structs.fields(struct)
        ]
    json_keys = {f.encode_name: f.name for f in msgspec.structs.fields(_fast.ArgsRecord)}
    assert _columns.INT_ARGS.items() <= json_keys.items()


NO_MSGSPEC = """
import pickle, sys
sys.modules["msgspec"] = None  # as if msgspec were not installed
import tracereader
out = [tracereader.load(path) for path in sys.argv[2:]]
with open(sys.argv[1], "wb") as fh:
    pickle.dump(out, fh)
"""


def test_without_msgspec_import_works_and_load_uses_the_stdlib(tmp_path):
    """The recording machine has no msgspec: importing works, loading is "stdlib"."""
    paths = [SYNTH / "modern.json", SYNTH / "control_chars.json", *REAL[:1]]
    env = {**os.environ, "PYTHONPATH": str(Path(tracereader.__file__).parents[1])}
    out = tmp_path / "traces.pickle"
    cmd = [sys.executable, "-c", NO_MSGSPEC, str(out), *map(str, paths)]
    subprocess.run(cmd, check=True, env=env, capture_output=True, timeout=120)
    traces = pickle.loads(out.read_bytes())
    for path, trace in zip(paths, traces, strict=True):
        reference = load(path)
        assert trace.parser == "stdlib"
        assert_same(trace, reference)


def test_small_pieces_quick_split_and_mmap_agree(monkeypatch):
    """Cutting the array into tiny pieces, the full-scan locator and mmap change nothing."""
    reference = load(SYNTH / "modern.json")
    monkeypatch.setattr(_fast, "PIECE_BYTES", 64)
    assert_same(load(SYNTH / "modern.json"), reference)
    monkeypatch.setattr(_fast, "_split_top", lambda data: None)
    assert_same(load(SYNTH / "modern.json"), reference)
    monkeypatch.setattr(loader, "MMAP_BYTES", 1)
    assert_same(load(SYNTH / "modern.json"), reference)
    assert load(SYNTH / "control_chars.json").parser == "tolerant"  # str() of a mmap


def test_a_list_after_trace_events_does_not_fool_the_quick_split():
    doc = json.loads((SYNTH / "cpu_only.json").read_text())
    doc["ranks"] = [0, 1]  # its "]" is the last one in the file
    trace = load(json.dumps(doc).encode())
    assert (trace.parser, len(trace), trace.meta["ranks"]) == ("fast", 5, [0, 1])


def test_a_cut_inside_a_string_falls_back_to_one_piece(monkeypatch):
    doc = json.loads((SYNTH / "cpu_only.json").read_text())
    doc["traceEvents"][1]["name"] = 'tricky},{"name": "x'
    data = json.dumps(doc, indent=1).encode()
    reference = load(data)
    monkeypatch.setattr(_fast, "PIECE_BYTES", 16)
    trace = load(data)
    assert trace.parser == "fast" and 'tricky},{"name": "x' in trace.names
    assert_same(trace, reference)


@pytest.fixture
def tiny_pieces(monkeypatch):
    """Make modern.json big enough to be cut into ~20 pieces and shared by workers.

    Earlier tests may leave idle Python threads behind (torch.compile's compile pool),
    which rightly stops the loader from forking; these tests are about forking, so they
    see a single thread. The guard itself is tested below.
    """
    monkeypatch.setattr(_fast, "PIECE_BYTES", 512)
    monkeypatch.setattr(_fast, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(_fast.threading, "active_count", lambda: 1)
    return monkeypatch


def test_no_forking_while_other_threads_run(monkeypatch):
    monkeypatch.setattr(_fast.threading, "active_count", lambda: 2)
    assert _fast._workers(None) == 1 and _fast._workers(4) == 1


@pytest.mark.parametrize("workers", [2, 3])
def test_forked_workers_give_the_same_trace(tiny_pieces, workers):
    reference = load(SYNTH / "modern.json", workers=1)
    forks, fork = [], _fast._fork
    tiny_pieces.setattr(_fast, "_fork", lambda *args: forks.append(1) or fork(*args))
    assert_same(load(SYNTH / "modern.json", workers=workers), reference)
    assert len(forks) == workers - 1


def test_a_failed_worker_is_redone_by_the_parent(tiny_pieces):
    parent, decode_into = os.getpid(), _fast._decode_into

    def dies_in_helpers(*args):
        if os.getpid() != parent:
            os._exit(3)
        return decode_into(*args)

    tiny_pieces.setattr(_fast, "_decode_into", dies_in_helpers)
    assert_same(load(SYNTH / "modern.json", workers=2), load(SYNTH / "modern.json", workers=1))


def test_a_decode_error_in_a_worker_reaches_the_tolerant_path(tiny_pieces):
    data = (SYNTH / "modern.json").read_bytes().replace(b'"stream 20 "', b'"stream \xff "')
    assert data.index(b"\xff") > len(data) // 2  # in the helper's share
    trace = load(data, workers=2)
    assert (trace.parser, trace.repairs) == ("tolerant", ["replaced 1 invalid UTF-8 byte"])


def test_gzip_detected_by_content(tmp_path):
    data = (SYNTH / "modern.json").read_bytes()
    path = tmp_path / "plain_name.json"
    path.write_bytes(gzip.compress(data[:5000]) + gzip.compress(data[5000:]))  # two members
    assert_same(load(path), load(SYNTH / "modern.json"))


def test_time_order_matches_lexsort():
    rng = np.random.default_rng(1)
    ts = rng.integers(0, 50, 2000)
    dur = rng.integers(0, 5, 2000)
    np.testing.assert_array_equal(_columns._time_order(ts, dur), np.lexsort((-dur, ts)))


def test_us_to_ns_matches_python_round():
    rng = random.Random(2)
    values = [rng.randrange(10**16) / 1000 for _ in range(5000)]
    values += [float(rng.randrange(2**52)) for _ in range(100)]  # absolute integer µs
    got = _columns._us_to_ns(np.array(values))
    exact = [v.is_integer() and v * 1000 >= 2**53 for v in values]  # integer µs: exact
    expected = [int(v) * 1000 if e else round(v * 1000) for v, e in zip(values, exact, strict=True)]
    assert got.tolist() == expected


# ----------------------------------------------------------------------- errors
CUT_JSON = (SYNTH / "modern.json").read_bytes()[:7000]
ERRORS = {
    "empty": (b"", "empty file"),
    "blank": (b"  \n\t", "empty file"),
    "empty_gzip": (gzip.compress(b""), "empty file"),
    "cut_gzip": (gzip.compress(b'{"traceEvents": []}' * 50)[:30], "truncated gzip data (the file was cut off)"),
    "bad_gzip": (b"\x1f\x8b\x08\x00garbage-garbage", "corrupt gzip data"),
    "cut_json": (CUT_JSON, "JSON ends early (the file was cut off)"),
    "cut_array": (b'[{"ph": "X", "ts": 1, "dur": 2}, {"ph"', "JSON ends early (the file was cut off)"),
    "no_events": (b'{"schemaVersion": 1}', "JSON but not a trace (no traceEvents list)"),
    "events_not_list": (b'{"traceEvents": {"ph": "X"}}', "JSON but not a trace (traceEvents is not a list)"),
    "random": (bytes(range(256)) * 4, "not a JSON trace (starts with b'\\x00\\x01\\x02"),
    "png": (b"\x89PNG\r\n\x1a\n" + bytes(100), "not a JSON trace (starts with b'\\x89PNG"),
    "string": (b'"traceEvents"', "not a JSON trace (starts with b'\"traceEv"),
    "garbage_object": (b"{not json at all}", "not valid JSON (Expecting property name"),
    "no_complete": (b'{"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 1}]}', "a trace with no complete events"),
    "empty_list": (b'{"traceEvents": []}', "a trace with no complete events"),
    "numbers": (b"[1, 2, 3]", "a trace with no complete events"),
    "no_ts": (b'{"traceEvents": [{"ph": "X", "name": "a", "dur": 1}]}', "a trace with no complete events"),
}  # fmt: skip


def one_line_error(source, label: str) -> str:
    with pytest.raises(TraceError) as info:
        load(source)
    message = str(info.value)
    assert type(info.value) is TraceError and isinstance(info.value, ValueError)
    assert "\n" not in message and message.startswith(f"{label}: ")
    return message[len(label) + 2 :]


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_are_one_line(tmp_path, case):
    data, reason = ERRORS[case]
    path = tmp_path / f"{case}.json"
    path.write_bytes(data)
    assert one_line_error(path, str(path)).startswith(reason)
    assert one_line_error(data, "<bytes>").startswith(reason)


def test_missing_file_and_directory(tmp_path):
    assert one_line_error(tmp_path / "nope.json", str(tmp_path / "nope.json")) == "no such file"
    assert one_line_error(tmp_path, str(tmp_path)) == "is a directory, not a trace file"


def test_mangled_input_never_raises_anything_else():
    """Cut or flip bytes of a good trace: the result is a Trace or a TraceError."""
    good = (SYNTH / "modern.json").read_bytes()
    rng = random.Random(3)
    outcomes = Counter()
    for _ in range(300):
        data = bytearray(good if rng.random() < 0.5 else good[: rng.randrange(len(good) + 1)])
        for _ in range(rng.randrange(4)):
            if data:
                data[rng.randrange(len(data))] = rng.choice(b'{}[]",:0.-e \x00\xff\\')
        try:
            load(bytes(data))
            outcomes["trace"] += 1
        except TraceError:
            outcomes["error"] += 1
    assert outcomes["trace"] > 20 and outcomes["error"] > 20


# ----------------------------------------------------------------------- real traces
def test_the_recordings_are_found():
    """The real-trace tests here and in test_measure and test_draw never run on an empty list."""
    assert len(RECORDINGS) >= 10
    assert all(p.is_file() for p in H200_TRACES)


@pytest.mark.parametrize("path", REAL, ids=[str(p.relative_to(ROOT)) for p in REAL])
def test_real_trace_counts_match_plain_json(path):
    """Counts per category, flows, instants and ids against an independent json read."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    complete = [ev for ev in events if ev.get("ph") == "X"]
    phases = Counter(ev.get("ph") for ev in events)
    trace = load(path)
    assert (trace.parser, trace.repairs) == ("fast", [])
    assert Counter(trace.cats[c] for c in trace.cat_id) == Counter(ev["cat"] for ev in complete)
    assert trace.n_flows == phases["s"] + phases["f"] + phases["t"]
    assert trace.n_instants == phases["i"] + phases["I"]
    assert sorted(trace.dur_ns.tolist()) == sorted(round(ev["dur"] * 1000) for ev in complete)
    kernels = [ev for ev in complete if ev["cat"] == "kernel"]
    got = trace.where(kind=Kind.KERNEL)
    assert sorted(trace.correlation[got].tolist()) == sorted(
        ev["args"]["correlation"] for ev in kernels
    )
    assert sorted(trace.extra["grid"][got].tolist()) == sorted(
        int(np.prod(ev["args"]["grid"])) for ev in kernels
    )
    lanes = {(ev["pid"], ev["tid"]) for ev in complete}
    assert {(ln.pid, ln.tid) for ln in trace.lanes} == lanes


def test_input_dims_and_3d_sizes_read_alike_on_both_paths(tmp_path):
    """record_shapes' Input Dims become one text per distinct value; grid keeps x, y, z."""
    doc = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5,
         "args": {"External id": 1, "Input Dims": [[8192, 8192], [8192, 2048]]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 6, "dur": 5,
         "args": {"External id": 2, "Input Dims": [[8192, 2048], [2048, 2048]]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 12,
         "dur": 1, "args": {"External id": 3}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 2, "dur": 1,
         "args": {"correlation": 1, "grid": [2, 66, 1], "block": [384, 1, 1]}},
    ]}  # fmt: skip
    text = json.dumps(doc, indent=1).encode()  # spaces inside the lists, as Kineto writes
    fast, slow = load(text), _tolerant.load_tolerant(text, "x")
    for t in (fast, slow):
        dims = t.extra["input_dims"][t.where(kind=Kind.CPU_OP)]
        assert [t.texts[d] if d >= 0 else None for d in dims] == [
            "[[8192,8192],[8192,2048]]",
            "[[8192,2048],[2048,2048]]",
            None,
        ]
        k = t.where(kind=Kind.KERNEL)[0]
        assert unpack_xyz(int(t.extra["grid_xyz"][k])) == (2, 66, 1)
        assert unpack_xyz(int(t.extra["block_xyz"][k])) == (384, 1, 1)
        assert int(t.extra["grid"][k]) == 132


def test_forked_workers_keep_input_dims(tiny_pieces, tmp_path):
    """Helpers' texts are merged: each row keeps its Input Dims text (ids may differ)."""
    shapes = [[[4, 8]], [[8, 8], [8]], [[4, 8]], [[2]]] * 40
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": k,
               "dur": 1, "args": {"External id": k, "Input Dims": d}}
              for k, d in enumerate(shapes)]  # fmt: skip
    path = tmp_path / "shapes.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=1))
    one, two = load(path, workers=1), load(path, workers=3)
    for t in (one, two):
        dims = t.extra["input_dims"]
        assert [t.texts[d] for d in dims] == [json.dumps(d, separators=(",", ":")) for d in shapes]
        assert len(t.texts) == 3


def test_communication_args_whole_piece_fallback_agrees(monkeypatch):
    """Each communication event decoded alone, or its piece decoded whole: the same args."""
    reference = load(COMM_TRACE)
    assert len(reference.comm_args) == 28
    monkeypatch.setattr(_fast, "_COMM_NAME", re.compile(rb"(?!)"))  # finds none: the fallback
    assert load(COMM_TRACE).comm_args == reference.comm_args


@pytest.mark.parametrize("path", [SYNTH / "modern.json", *REAL[:5], COMM_TRACE, MEMORY_TRACE])
def test_without_extra_args_the_columns_and_ids_are_the_same(path):
    """extra_args=False (tracereader summary) reads only the ids: the rest is the same."""
    from tracereader._measure import summary

    full, ids_only = load(path), load(path, extra_args=False)
    for col in COLUMNS:
        np.testing.assert_array_equal(getattr(full, col), getattr(ids_only, col), err_msg=col)
    assert (full.names, full.cats, full.lanes, full.repairs) == (
        ids_only.names, ids_only.cats, ids_only.lanes, ids_only.repairs)  # fmt: skip
    assert (dict(ids_only.extra), ids_only.memory_events, ids_only.comm_args) == ({}, [], [])
    assert summary(full) == summary(ids_only)
    data, label = loader._read_bytes(path)
    tolerant = _tolerant.load_tolerant(data, label, extra_args=False)
    assert {**summary(tolerant), "parser": "fast"} == summary(ids_only)
    assert dict(tolerant.extra) == {}


@pytest.mark.parametrize("path", [SYNTH / "modern.json", *REAL[:5], COMM_TRACE, MEMORY_TRACE])
def test_extra_args_names_keep_those_columns_as_a_full_load_reads_them(path):
    """extra_args=(names) (tracereader report) keeps those columns only, the rest the same."""
    from tracereader._report import REPORT_ARGS

    full, some = load(path), load(path, extra_args=REPORT_ARGS)
    kept = ("registers", "shared_mem", "occupancy_pct", "grid", "block", "grid_xyz",
            "block_xyz", "input_dims")  # fmt: skip
    assert tuple(some.extra) == tuple(k for k in full.extra if k in kept)
    for key in some.extra:
        np.testing.assert_array_equal(full.extra[key], some.extra[key], err_msg=key)
    for col in COLUMNS:
        np.testing.assert_array_equal(getattr(full, col), getattr(some, col), err_msg=col)
    assert (full.names, full.cats, full.lanes, full.texts, full.repairs) == (
        some.names, some.cats, some.lanes, some.texts, some.repairs)  # fmt: skip
    assert (full.memory_events, full.comm_args) == (some.memory_events, some.comm_args)
    data, label = loader._read_bytes(path)
    tolerant = _tolerant.load_tolerant(data, label, extra_args=REPORT_ARGS)
    assert tuple(tolerant.extra) == tuple(some.extra)
    for key in some.extra:
        np.testing.assert_array_equal(tolerant.extra[key], some.extra[key], err_msg=key)
    assert (tolerant.memory_events, tolerant.comm_args) == (some.memory_events, some.comm_args)


def test_extra_args_names_are_checked_and_read_together():
    """An unknown column fails before the file is read; grid and grid_xyz come together."""
    with pytest.raises(ValueError, match="no such column 'regs'"):
        load(SYNTH / "no_such_file.json", extra_args=["registers", "regs"])
    assert _columns.extra_columns(True) == _columns.EXTRA_COLUMNS
    assert _columns.extra_columns(False) == _columns.extra_columns(()) == ()
    assert _columns.extra_columns("grid_xyz") == ("grid", "grid_xyz")
    assert _columns.extra_columns({"block", "bytes"}) == ("bytes", "block", "block_xyz")
    trace = load(SYNTH / "modern.json", extra_args=["grid_xyz"])
    assert tuple(trace.extra) == ("grid", "grid_xyz")
    assert trace.memory_events == load(SYNTH / "modern.json").memory_events
