"""Write the tiny synthetic traces the loader and validator tests read.

Each file isolates trace quirks seen in real torch.profiler output, with
counts small enough to check by hand (the tests assert them exactly):

* ``modern.json``: a torch >= 2.4 trace: relative ``ts`` plus
  ``baseTimeNanoseconds``, events out of time order, a flow end before its
  start and an orphan one, metadata after the events, ``distributedInfo``
  after ``traceEvents``, string pids/tids (``"Spans"``), a ``thread_name``
  given twice (the last wins) and one with a trailing space, 16 placeholder
  GPU processes with no events, a Triton ``cpu_op`` with ``args.stream = 0``,
  a ``cuda_sync`` event, kernels with ``grid``/``block``, a memcpy with
  ``bytes``, Python frames whose root has ``"Python parent id": null``;
* ``legacy.json``: a torch 1.x trace: absolute integer µs, no base time,
  the old category names (``Operator``, ``Runtime``, ``Kernel``, ``Memcpy``);
* ``bare_array.json``: a generic Chrome trace that is only an event array;
* ``control_chars.json``: raw control characters inside a name;
* ``invalid_utf8.json``: three bytes that are not UTF-8 inside a name;
* ``nan.json``: ``NaN`` and ``Infinity`` tokens (one as a ``ts``);
* ``bigint.json``: an ``External id`` of 2**70, a correlation of 2**64 - 1
  and an unread arg (``Comms Id``) of 2**80;
* ``overlap.json``: two kernels that overlap on one stream, one 0 ns kernel;
* ``cut_step.json``: a last step that ends with the trace, holding a launch
  whose kernel never made it into the file;
* ``cpu_only.json``: no GPU events at all (and the base of the next four).

Run ``python tests/data/synthetic/make_synthetic.py`` to rewrite them.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
T = 5_000_000_000_000.0  # µs: the relative ts Kineto writes are about this big
BASE_NS = 1_790_857_026_000_000_000
CPU, AUTOGRAD, GPU = 100, 101, 0


def x(cat, name, ts, dur, args=None, pid=CPU, tid=CPU):
    """A complete event on a CPU thread (by default)."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args is not None:
        ev["args"] = args
    return ev


def kernel(name, ts, dur, corr, ext, stream=7, **more):
    args = {
        "External id": ext,
        "queued": 0,
        "device": 0,
        "context": 1,
        "stream": stream,
        "correlation": corr,
        "registers per thread": 32,
        "shared memory": 0,
        "blocks per SM": 0.03,
        "warps per SM": 0.12,
        "grid": [4, 1, 1],
        "block": [128, 1, 1],
        "est. achieved occupancy %": 1,
    }
    args.update(more)
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": GPU,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def meta(name, pid, tid, value):
    key = "labels" if name == "process_labels" else "name"
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "ts": T, "args": {key: value}}


def flow(ph, fid, pid, tid, ts, cat="ac2g"):
    ev = {"ph": ph, "id": fid, "pid": pid, "tid": tid, "ts": ts, "cat": cat, "name": cat}
    if ph == "f":
        ev["bp"] = "e"
    return ev


def modern() -> dict:
    """17 complete events, 5 flow events, 3 instants, 6 lanes."""
    events = [
        # GPU side first: the file is not in time order
        kernel(
            "gemm_kernel",
            T + 16.499,
            4.25,
            corr=11,
            ext=2,
            grid=[8, 1, 4],
            **{"registers per thread": 74, "shared memory": 20480, "est. achieved occupancy %": 2},
        ),
        flow("f", 11, GPU, 7, T + 16.499),  # flow end before its start
        kernel("triton_poi_fused_0", T + 40.0, 2.0, corr=12, ext=3),
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": GPU,
            "tid": 20,
            "ts": T + 52.0,
            "dur": 1.5,
            "args": {
                "External id": 4,
                "device": 0,
                "stream": 20,
                "correlation": 13,
                "bytes": 4096,
                "memory bandwidth (GB/s)": 2.7,
            },
        },
        {
            "ph": "X",
            "cat": "cuda_sync",
            "name": "Stream Sync",
            "pid": GPU,
            "tid": 7,
            "ts": T + 60.0,
            "dur": 1.0,
            "args": {"cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": 14, "device": 0},
        },
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "ProfilerStep#1",
            "pid": GPU,
            "tid": 7,
            "ts": T + 16.498,
            "dur": 25.504,
            "args": {"External id": 1},
        },
        # CPU side
        x("user_annotation", "ProfilerStep#1", T, 100.0, args={"External id": 1}),
        x(
            "python_function",
            "train.py(10): step",
            T + 1,
            90.0,
            args={"Python id": 1, "Python parent id": None, "Ev Idx": 0},
        ),
        x(
            "python_function",
            "nn.Module: Linear_0",
            T + 2,
            30.0,
            args={"Python id": 2, "Python parent id": 1, "Python module id": 0},
        ),
        x(
            "cpu_op",
            "aten::addmm",
            T + 5,
            20.0,
            args={"External id": 2, "Sequence number": 7, "Input Dims": [[4], [2, 4]]},
        ),
        x(
            "cuda_runtime",
            "cudaLaunchKernel",
            T + 10,
            5.0,
            args={"External id": 2, "cbid": 211, "correlation": 11},
        ),
        flow("s", 11, CPU, CPU, T + 10),
        x(
            "cpu_op",
            "triton_poi_fused_0",
            T + 30,
            10.0,
            args={"External id": 3, "kernel_backend": "triton", "stream": 0, "num_warps": 4},
        ),
        x(
            "cuda_driver",
            "cuLaunchKernel",
            T + 32,
            4.0,
            args={"External id": 3, "cbid": 307, "correlation": 12},
        ),
        x(
            "cuda_runtime",
            "cudaMemcpyAsync",
            T + 50,
            3.0,
            args={"External id": 4, "cbid": 41, "correlation": 13},
        ),
        x(
            "cpu_op",
            "autograd::engine::evaluate_function: AddmmBackward0",
            T + 70,
            10.0,
            tid=AUTOGRAD,
            args={"Sequence number": 7, "Fwd thread id": 1},
        ),
        flow("s", 1, CPU, CPU, T + 5, cat="fwdbwd"),
        flow("f", 1, CPU, AUTOGRAD, T + 70, cat="fwdbwd"),
        flow("f", 99, CPU, CPU, T + 80),  # orphan: no start anywhere
        x(
            "cuda_runtime",
            "cudaDeviceSynchronize",
            T + 104,
            2.0,
            args={"cbid": 165, "correlation": 15},
        ),  # after the last step, as in real traces
        x(
            "Trace",
            "PyTorch Profiler (0)",
            T - 1,
            110.0,
            pid="Spans",
            tid="PyTorch Profiler",
            args={"Op count": 0},
        ),
        x("overhead", "Activity Buffer Request", T + 95, 2.0, pid=-1, tid=0),
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": CPU,
            "tid": CPU,
            "ts": T + 6,
            "args": {"Addr": 1, "Bytes": 4096, "Total Allocated": 4096, "Device Type": 1},
        },
        {
            "ph": "i",
            "s": "g",
            "name": "Iteration Start: PyTorch Profiler",
            "pid": "Traces",
            "tid": "Trace PyTorch Profiler",
            "ts": T - 1,
        },
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": T + 109},
    ]
    events += [
        meta("process_name", CPU, 0, "python3"),
        meta("process_labels", CPU, 0, "CPU"),
        meta("thread_name", CPU, CPU, "thread 100 (python3)"),
        meta("thread_name", CPU, AUTOGRAD, "thread 101 (python3)"),
        meta("thread_name", CPU, AUTOGRAD, "thread 101 (pt_autograd_0)"),
    ]
    for device in range(16):  # Kineto names 16 GPUs even on a one-GPU run
        events += [
            meta("process_name", device, 0, "python3"),
            meta("process_labels", device, 0, f"GPU {device}"),
        ]
    events += [meta("thread_name", GPU, 7, "stream 7 "), meta("thread_name", GPU, 20, "stream 20 ")]
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {"id": 0, "name": "Synthetic GPU", "numSms": 132, "maxThreadsPerMultiprocessor": 2048}
        ],
        "record_shapes": 1,
        "with_stack": 1,
        "cuda_driver_version": 13000,
        "cuda_runtime_version": 13000,
        "cupti_version": 130001,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": BASE_NS,
        "traceEvents": events,
        "traceName": "modern.json",
        "distributedInfo": {
            "backend": "nccl",
            "rank": 0,
            "world_size": 1,
            "pg_config": [{"pg_name": "0", "ranks": [0]}],
        },
    }


def legacy() -> dict:
    """torch 1.x: 4 complete events at absolute integer µs, 1 flow."""
    t = 1_669_783_687_389_324
    return {
        "schemaVersion": 1,
        "traceEvents": [
            {
                "ph": "X",
                "cat": "Operator",
                "name": "aten::mm",
                "pid": 7,
                "tid": 7,
                "ts": t,
                "dur": 30,
                "args": {"External id": 5, "Trace name": "PyTorch Profiler"},
            },
            {
                "ph": "X",
                "cat": "Runtime",
                "name": "cudaLaunchKernel",
                "pid": 7,
                "tid": 7,
                "ts": t + 3,
                "dur": 9,
                "args": {"correlation": 42, "external id": 42, "cbid": 211},
            },
            {
                "ph": "X",
                "cat": "Kernel",
                "name": "sgemm",
                "pid": 0,
                "tid": 7,
                "ts": t + 15,
                "dur": 40,
                "args": {"correlation": 42, "stream": 7, "device": 0},
            },
            {
                "ph": "X",
                "cat": "Memcpy",
                "name": "Memcpy DtoH (Device -> Pageable)",
                "pid": 0,
                "tid": 7,
                "ts": t + 60,
                "dur": 2,
                "args": {"correlation": 43, "bytes": 16},
            },
            {
                "ph": "f",
                "id": 42,
                "pid": 0,
                "tid": 7,
                "ts": t + 15,
                "cat": "async",
                "name": "launch",
            },
        ],
    }


def cpu_only(n_ops: int = 3) -> dict:
    """A CPU-only trace: one step holding ``n_ops`` ops, then one op after it."""
    ops = [
        x("cpu_op", f"aten::op{i}", T + 10 * i + 1, 5.0, args={"External id": i + 2})
        for i in range(n_ops)
    ]
    step = x("user_annotation", "ProfilerStep#0", T, 10.0 * n_ops + 5, args={"External id": 1})
    after = x("cpu_op", "aten::item", T + 10.0 * n_ops + 10, 1.0, args={"External id": 99})
    return {"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS, "traceEvents": [step, *ops, after]}


def overlap() -> dict:
    """3 kernels on stream 7: the 2nd starts before the 1st ends; the 3rd lasts 0 ns."""
    doc = cpu_only(1)
    doc["traceEvents"] += [
        kernel("k0", T + 20, 10.0, corr=1, ext=2),
        kernel("k1", T + 25, 10.0, corr=2, ext=2),
        kernel("k2", T + 40, 0.0, corr=3, ext=2),
    ]
    return doc


def cut_step() -> dict:
    """Two steps; the last ends with the trace, and 1 of its 2 launches has no kernel."""
    launch = "cudaLaunchKernel"
    events = [
        x("user_annotation", "ProfilerStep#0", T, 50.0, args={"External id": 1}),
        x("cuda_runtime", launch, T + 5, 5.0, args={"correlation": 1}),
        kernel("k0", T + 12, 5.0, corr=1, ext=-1),
        x("user_annotation", "ProfilerStep#1", T + 60, 40.0, args={"External id": 2}),
        x("cuda_runtime", launch, T + 65, 5.0, args={"correlation": 2}),
        kernel("k1", T + 72, 5.0, corr=2, ext=-1),
        x("cuda_runtime", launch, T + 80, 5.0, args={"correlation": 3}),
    ]  # its kernel is lost
    return {"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS, "traceEvents": events}


def write(name: str, doc: object, raw: dict[str, bytes] | None = None) -> None:
    """Write ``doc`` indented like Kineto; ``raw`` swaps placeholders for raw bytes."""
    data = json.dumps(doc, indent=2).encode()
    for placeholder, value in (raw or {}).items():
        data = data.replace(placeholder.encode(), value)
    (HERE / name).write_bytes(data + b"\n")


def main() -> None:
    write("modern.json", modern())
    write("legacy.json", legacy())
    write("bare_array.json", cpu_only(2)["traceEvents"])
    write("cpu_only.json", cpu_only())
    write("overlap.json", overlap())
    write("cut_step.json", cut_step())

    doc = cpu_only(2)
    doc["traceEvents"][1]["name"] = "aten::@CTRL@"
    write("control_chars.json", doc, {"@CTRL@": b"\x01tab\there\x1f"})
    doc = cpu_only(2)
    doc["traceEvents"][1]["name"] = "aten::@BAD@"
    write("invalid_utf8.json", doc, {"@BAD@": b"caf\xe9 \xff\xfe"})
    doc = cpu_only(3)
    doc["traceEvents"][1]["args"]["flops"] = float("nan")
    doc["traceEvents"][2]["args"]["flops"] = float("inf")
    doc["traceEvents"][3]["ts"] = float("nan")  # unusable: this event is skipped
    write("nan.json", doc)
    doc = cpu_only(2)
    doc["traceEvents"][1]["args"]["External id"] = 2**70
    doc["traceEvents"][2]["args"]["Comms Id"] = 2**80  # never read: no repair needed
    doc["traceEvents"].append(
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaEventRecord",
            "pid": CPU,
            "tid": CPU,
            "ts": T + 40,
            "dur": 1.0,
            "args": {"correlation": 2**64 - 1, "External id": 9},
        }
    )
    write("bigint.json", doc)


if __name__ == "__main__":
    main()
