"""Collectives table, exposed communication and the launched_by of shared kernel names."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
from _builders import call, doc, ev, gpu, op, step

from tracereader import load
from tracereader._collectives import (
    collective_of,
    collective_table,
    exposed_comm,
    message_bytes,
)
from tracereader._comm import comm_times
from tracereader._overview import kernel_detail

HTA = Path(__file__).parent / "data" / "hta_2rank"
SENDRECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
#: torch >= 2.3 writes these on the collective's kernel and on record_param_comms.
NEW_ARGS = {"Collective name": "allreduce", "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20,
            "dtype": "BFloat16", "Group size": 8, "Process Group Name": "0",
            "Process Group Description": "default_pg"}  # fmt: skip


def _load(tmp_path: Path, events: list[dict]) -> object:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc(events)))
    return load(path)


def _kernel(name: str, ts: float, dur: float, corr: int, stream: int = 20, **args: object):
    e = gpu(name, ts, dur, corr=corr, stream=stream)
    e["args"].update(args)
    return e


@pytest.mark.parametrize(
    ("name", "want"),
    [("nccl:all_to_all", "all_to_all"), ("c10d::allreduce_", "all_reduce"),
     ("nccl:_all_gather_base", "all_gather"), ("_reduce_scatter_base", "reduce_scatter"),
     ("reduce_scatter_tensor_coalesced", "reduce_scatter"), ("allgather", "all_gather"),
     (ALLREDUCE, "all_reduce"), ("ncclDevKernel_Broadcast_RING_LL", "broadcast"),
     (SENDRECV, "send/recv"), ("ncclDevKernel_ReduceScatter_Sum_f32", "reduce_scatter"),
     ("aten::mm", "")],
)  # fmt: skip
def test_collective_names(name, want):
    assert collective_of(name) == want


def test_message_bytes_from_new_and_old_args():
    assert message_bytes(NEW_ARGS) == (1 << 20) * 2
    gather = {"In msg nelems": 1000, "Out msg nelems": 8000, "dtype": "Float"}
    assert message_bytes(gather) == 32000  # the gathered output, the larger buffer
    old = {"Input Dims": [[419430400], [], []], "Input type": ["unsigned char", "Scalar", ""]}
    assert message_bytes(old) == 419430400
    assert message_bytes({"Input Dims": [[384]], "Input type": ["long"]}) == 384 * 8
    assert message_bytes({"Input Dims": [[], []], "Input type": ["TensorList", ""]}) is None


def test_synthetic_table_new_args_and_launching_op(tmp_path):
    """Sizes from the kernel's args; the collective of a bare kernel from its launching op."""
    events = [
        step(1, 0, 1000),
        op("nccl:all_reduce", 10, 20, ext=1, cat="user_annotation"),
        call("cudaLaunchKernel", 12, 5, corr=101, ext=1),
        op("nccl:all_reduce", 40, 20, ext=2, cat="user_annotation"),
        call("cudaLaunchKernel", 42, 5, corr=102, ext=2),
        op("nccl:all_to_all", 70, 20, ext=3, cat="user_annotation"),
        call("cudaLaunchKernel", 72, 5, corr=103, ext=3),
        op("aten::mm", 100, 10, ext=4),
        call("cudaLaunchKernel", 101, 5, corr=104, ext=4),
        _kernel(ALLREDUCE, 100, 200, 101, **NEW_ARGS),
        _kernel(ALLREDUCE, 400, 100, 102, **NEW_ARGS),
        _kernel(SENDRECV, 600, 50, 103),
        gpu("sm90_gemm", 120, 100, corr=104, stream=7),
    ]
    t = _load(tmp_path, events)
    rows = collective_table(t).to_records()
    assert [r["collective"] for r in rows] == ["all_reduce", "all_to_all"]
    ar, a2a = rows
    assert ar["calls"] == 2 and ar["msg_bytes"] == 2 << 20 and ar["group_size"] == 8
    assert ar["process_group"] == "0 (default_pg)" and ar["named_by"] == "kernel arg"
    assert ar["total_ms"] == pytest.approx(0.3) and ar["mean_us"] == pytest.approx(150)
    assert ar["algbw_gb_s"] == pytest.approx(2 * (2 << 20) / 300e3)  # bytes / µs / 1e3
    assert a2a["named_by"] == "launching op" and a2a["msg_bytes"] is None
    assert a2a["algbw_gb_s"] is None
    # Exposed: all-reduce [100, 300) under the GEMM [120, 220): 100 µs hidden.
    x = exposed_comm(t)
    assert x is not None
    assert x.comm_ms == pytest.approx(0.35) and x.overlap_ms == pytest.approx(0.1)
    assert x.exposed_ms == pytest.approx(0.25) and x.span_ms == pytest.approx(0.55)
    assert x.exposed_pct == pytest.approx(100 * 0.25 / 0.55) and x.flagged
    assert "Over 10 %: overlap communication" in x.sentence()


def test_no_communication(tmp_path):
    t = _load(tmp_path, [step(1, 0, 100), call("cudaLaunchKernel", 1, 2, corr=1),
                         gpu("sm90_gemm", 5, 50, corr=1)])  # fmt: skip
    assert exposed_comm(t) is None and len(collective_table(t)) == 0


def test_small_exposure_is_not_flagged(tmp_path):
    events = [step(1, 0, 2000), call("cudaLaunchKernel", 1, 2, corr=1),
              call("cudaLaunchKernel", 3, 2, corr=2), gpu("sm90_gemm", 10, 1000, corr=1, stream=7),
              _kernel(ALLREDUCE, 900, 150, 2)]  # fmt: skip
    x = exposed_comm(_load(tmp_path, events))
    assert x is not None and x.exposed_ms == pytest.approx(0.04)
    assert not x.flagged and "Over" not in x.sentence()


def _hta_raw(rank: int) -> tuple[dict[str, float], dict[str, int]]:
    """Independent: NCCL kernel time per collective named by the record_function around it."""
    with gzip.open(HTA / f"sampled_rank-{rank}.json.gz") as fh:
        events = json.load(fh)["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    marks = [e for e in events if e.get("name", "").startswith("nccl:")]
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for k in events:
        if k.get("cat") != "kernel" or "nccl" not in k["name"]:
            continue
        c = calls[k["args"]["correlation"]]
        outer = [m for m in marks if m["tid"] == c["tid"]
                 and m["ts"] <= c["ts"] <= m["ts"] + m["dur"]]  # fmt: skip
        name = collective_of(min(outer, key=lambda m: m["dur"])["name"])
        total[name] += k["dur"]
        count[name] += 1
    return dict(total), dict(count)


def test_hta_rank0_split_by_collective():
    """R-E7: 396,199 µs of NCCL kernels are all_to_all 182,403, all_reduce 107,656 and
    all_gather 106,140 µs (not all all_to_all)."""
    t = load(HTA / "sampled_rank-0.json.gz")
    rows = collective_table(t).to_records()
    got: dict[str, float] = defaultdict(float)
    for r in rows:
        got[r["collective"]] += r["total_ms"] * 1e3
    total, _ = _hta_raw(0)
    assert got == pytest.approx(total)
    assert got == pytest.approx({"all_to_all": 182403, "all_reduce": 107656,
                                 "all_gather": 106140})  # fmt: skip
    big = next(r for r in rows if r["msg_bytes"] == 419430400)  # record_param_comms Input Dims
    assert big["collective"] == "all_to_all" and big["calls"] == 2
    assert big["algbw_gb_s"] == pytest.approx(2 * 419430400 / ((62783 + 67827) * 1e3))


@pytest.mark.parametrize("rank", [0, 1])
def test_hta_exposed_reuses_comm_times(rank):
    t = load(HTA / f"sampled_rank-{rank}.json.gz")
    x = exposed_comm(t)
    ct = comm_times(t)
    assert x is not None
    assert x.exposed_ms == pytest.approx(ct.exposed_comm_us / 1e3)
    assert x.span_ms == pytest.approx(ct.span_us / 1e3)
    if rank == 0:  # the expert's numbers: 336,983 µs exposed, 27.6 % of 1,222,847 µs
        assert x.exposed_ms == pytest.approx(336.983) and x.exposed_pct == pytest.approx(
            27.557, abs=1e-3
        )
    assert x.flagged


def test_launched_by_names_every_launching_op():
    """R-E7: one SendRecv kernel name serves three collectives; launched_by said only
    the most common (nccl:all_to_all) for all 10 kernels."""
    t = load(HTA / "sampled_rank-0.json.gz")
    row = next(r for r in kernel_detail(t, top=None).to_records() if "nccl" in r["name"])
    _, count = _hta_raw(0)
    assert count == {"all_to_all": 4, "all_reduce": 4, "all_gather": 2}
    assert row["calls"] == 10
    assert row["launched_by"] == "nccl:all_to_all ×4, nccl:all_reduce ×4, nccl:_all_gather_base ×2"


def test_launched_by_single_op_unchanged(tmp_path):
    events = [step(1, 0, 100), op("aten::mm", 1, 10, ext=1),
              call("cudaLaunchKernel", 2, 2, corr=1, ext=1), gpu("sm90_gemm", 5, 50, corr=1),
              ev("aten::mm", 20, 10, "cpu_op", **{"External id": 2}),
              call("cudaLaunchKernel", 21, 2, corr=2, ext=2), gpu("sm90_gemm", 60, 50, corr=2)]  # fmt: skip
    row = kernel_detail(_load(tmp_path, events)).to_records()[0]
    assert row["launched_by"] == "aten::mm"


def test_report_section(tmp_path):
    from tracereader._report_views import comm_section

    html = comm_section(load(HTA / "sampled_rank-0.json.gz"))
    assert html.startswith('<h2 id="comm">Communication</h2><p class="verdict-CPU-bound">')
    assert "Exposed communication: 337.0 ms of 396.2 ms" in html and "27.6 %" in html
    assert "Over 10 %: overlap communication with computation" in html
    assert "<td>all_to_all</td>" in html and "419,430,400" in html
    assert "<th>mean_ms</th>" in html  # 65.3 ms calls read in ms
    assert "<th>process_group</th>" not in html  # this trace never names its groups
    plain = [
        step(1, 0, 100),
        call("cudaLaunchKernel", 1, 2, corr=1),
        gpu("sm90_gemm", 5, 50, corr=1),
    ]
    assert comm_section(_load(tmp_path, plain)) == ""


def test_report_folder_has_a_communication_section_per_rank():
    from tracereader._report import report

    html = report(HTA, draw=False)
    assert '<h2 id="comm-0">Communication</h2>' in html
    assert '<h2 id="comm-1">Communication</h2>' in html
    assert 'id="memory' not in html  # no [memory] events in these traces


def test_exposed_communication_is_ranked_among_the_losses():
    """R2-4: a rank whose communication no computation hides is told so first, not only
    in the communication section (HTA's rank 0: 337 ms exposed, 27.6 % of the GPU span)."""
    from tracereader._headline import headline
    from tracereader._symptoms import symptoms

    t = load(Path(__file__).parent / "data" / "hta_2rank" / "sampled_rank-0.json.gz")
    found = {s.key: s for s in symptoms(t)}
    assert round(found["exposed-comm"].stake_us or 0) == 336_983
    assert "27.6 % of the GPU span" in found["exposed-comm"].what
    assert "Biggest loss: communication no computation hides, 337.0 ms" in headline(t)
    single = load(Path(__file__).parent / "data" / "h200" / "train_eager.json.gz")
    assert "exposed-comm" not in {s.key for s in symptoms(single)}
