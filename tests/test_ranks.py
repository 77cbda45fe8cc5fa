"""Several ranks: loading a directory, the per-rank summary against an independent count and
against HTA's numbers on the same two files, stragglers, annotations, and the command line."""

from __future__ import annotations

import bisect
import gzip
import json
import shutil
from pathlib import Path

import pytest
from _builders import call, doc, ev, gpu, step

from tracereader import TraceError, load, load_ranks, rank_summary
from tracereader.cli import main

HTA_2RANK = Path(__file__).resolve().parent / "data" / "hta_2rank"
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


# ------------------------------------------------------------------ an independent count
def _merged(intervals):
    out: list[list[float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _length(intervals):
    return sum(e - s for s, e in _merged(intervals))


def _covered(merged, t):
    k = bisect.bisect_right([s for s, _ in merged], t) - 1
    return k >= 0 and merged[k][0] <= t < merged[k][1]


def _both(a, b):
    """Time covered by both sets, summed over elementary segments (no union formula)."""
    ma, mb = _merged(a), _merged(b)
    cuts = sorted({x for s, e in a + b for x in (s, e)})
    return sum(
        hi - lo
        for lo, hi in zip(cuts, cuts[1:], strict=False)
        if _covered(ma, (lo + hi) / 2) and _covered(mb, (lo + hi) / 2)
    )


def count(path: Path, drop_last_step: bool) -> dict:
    """Per-rank numbers from the raw JSON, with plain Python only."""
    with gzip.open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in events if e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])  # fmt: skip
    ops = [e for e in events if e.get("cat") in GPU_CATS]
    if drop_last_step:  # as HTA: only GPU ops whose launch call began before the last step
        launch = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"
                  and "correlation" in e.get("args", {})}  # fmt: skip
        ops = [e for e in ops if launch.get(e["args"]["correlation"], 1e300) < steps[-1]["ts"]]
        steps = steps[:-1]
    iv = [(e["ts"], e["ts"] + e["dur"]) for e in ops]
    kernels = [(i, "nccl" in o["name"].lower()) for i, o in zip(iv, ops, strict=True)
               if o["cat"] == "kernel"]  # fmt: skip
    comm = [i for i, is_comm in kernels if is_comm]
    comp = [i for i, is_comm in kernels if not is_comm]
    span = max(e for _, e in iv) - min(s for s, _ in iv)
    streams = {}
    for o in sorted(ops, key=lambda o: o["ts"]):
        st = streams.setdefault(o["tid"], {"gaps": 0, "end": None})
        if st["end"] is not None:
            st["gaps"] += max(0, o["ts"] - st["end"])
        st["end"] = o["ts"] + o["dur"] if st["end"] is None else max(st["end"], o["ts"] + o["dur"])
    return {
        "steps": {e["name"]: e["dur"] for e in steps},
        "gpu_ops": len(ops),
        "span_us": span,
        "busy_us": _length(iv),
        "idle_us": span - _length(iv),
        "comp_us": _length(comp),
        "comm_us": _length(comm),
        "overlap_us": _both(comm, comp),
        "stream_idle_us": {tid: st["gaps"] for tid, st in streams.items()},
    }


# HTA (traceinsight 0.6.1) on the same two files: get_temporal_breakdown() and
# get_comm_comp_overlap(), with its default (last step dropped) and include_last_profiler_step.
HTA = {
    True: {0: (600_058, 321_378, 106_252, 172_428, 11.81),
           1: (600_674, 328_671, 135_548, 136_455, 20.05)},
    False: {0: (1_222_847, 675_191, 210_320, 337_336, 14.95),
            1: (1_231_186, 651_136, 271_973, 308_077, 19.93)},
}  # fmt: skip
# get_idle_time_breakdown(ranks=[0]), summed over its categories, per stream.
HTA_STREAM_IDLE_RANK0 = {
    True: {7: 477_550, 23: 596_141, 25: 47_874, 84: 148_940, 203: 0},
    False: {7: 1_000_017, 23: 1_214_987, 25: 660_568, 84: 798_049, 203: 558_073},
}


@pytest.fixture(scope="module")
def hta_ranks():
    return load_ranks(HTA_2RANK)


@pytest.mark.parametrize("drop", [False, True])
def test_hta_set_matches_an_independent_count_and_hta(hta_ranks, drop):
    s = rank_summary(hta_ranks, drop_last_step=drop)
    rows = {r["rank"]: r for r in s.ranks.to_records()}
    assert sorted(rows) == [0, 1]
    for rank in (0, 1):
        want = count(HTA_2RANK / f"sampled_rank-{rank}.json.gz", drop)
        got = rows[rank]
        for key in ("gpu_ops", "span_us", "busy_us", "idle_us", "comp_us", "comm_us", "overlap_us"):
            assert got[key] == want[key], (rank, key)
        assert got["comm_kernels"] == (5 if drop else 10)
        assert got["steps"] == len(want["steps"])
        span, idle, compute, non_compute, overlap_pct = HTA[drop][rank]
        assert (got["span_us"], got["idle_us"], got["comp_us"]) == (span, idle, compute)
        assert got["busy_us"] - got["comp_us"] == non_compute
        assert round(got["overlap_pct"], 2) == overlap_pct
        streams = {r["stream"]: r["idle_us"] for r in s.streams.to_records() if r["rank"] == rank}
        assert streams == want["stream_idle_us"]
        if rank == 0:
            assert streams == HTA_STREAM_IDLE_RANK0[drop]


def test_hta_set_steps_and_straggler(hta_ranks):
    s = rank_summary(hta_ranks)
    spans = {r: count(HTA_2RANK / f"sampled_rank-{r}.json.gz", False)["steps"] for r in (0, 1)}
    recs = s.steps.to_records()
    assert [r["step"] for r in recs] == ["ProfilerStep#551", "ProfilerStep#552"]
    for r in recs:
        per = {k: spans[k][r["step"]] for k in (0, 1)}
        assert r["slowest_rank"] == max(per, key=per.get)
        assert r["behind_us"] == max(per.values()) - min(per.values())
        assert r["ranks"] == 2
    assert [r["slowest_rank"] for r in recs] == [1, 1]
    assert s.by_rank.to_records()[1] == {"step": "ProfilerStep#552", "rank0_us": 622_928.0,
                                         "rank1_us": 630_639.0}  # fmt: skip
    assert "2 of 128 ranks (distributedInfo.world_size)" in s.notes
    names = {r["annotation"] for r in s.annotations.to_records() if r["rank"] == 0}
    assert {"## forward ##", "nccl:all_to_all"} <= names
    assert not any(n.startswith("ProfilerStep#") for n in names)


# ------------------------------------------------------------------ synthetic ranks
def _rank_doc(rank: int | None, gemm_us: float, step_us: float, world: int = 2) -> dict:
    events = [
        step(1, 0, step_us),
        ev("## fwd ##", 0, 30, "user_annotation"),
        call("cudaLaunchKernel", 1, 2, corr=1),
        call("cudaLaunchKernel", 40, 2, corr=2),
        gpu("sm90_gemm", 10, gemm_us, corr=1),
        gpu("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 100, corr=2, stream=20),
        gpu("## fwd ##", 10, gemm_us, corr=-1, cat="gpu_user_annotation"),
    ]
    d = doc(events)
    if rank is not None:
        d["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
    return d


def _write(folder: Path, name: str, d: dict) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps(d))
    return folder / name


def test_rank_from_distributed_info_then_file_name_then_order(tmp_path):
    a = _write(tmp_path, "a.json", _rank_doc(1, 100, 500))  # distributedInfo says 1
    b = _write(tmp_path, "b.json", _rank_doc(0, 200, 600))
    assert list(load_ranks([a, b])) == [0, 1]
    c = _write(tmp_path / "n", "job_rank3.json", _rank_doc(None, 100, 500))
    d = _write(tmp_path / "n", "job_rank-7.json", _rank_doc(None, 100, 500))
    ranks = load_ranks(tmp_path / "n")
    assert list(ranks) == [3, 7] and ranks[3].meta["rank_from"] == "file name"
    e = _write(tmp_path / "o", "x.json", _rank_doc(None, 100, 500))
    f = _write(tmp_path / "o", "y.json", _rank_doc(None, 100, 500))
    ranks = load_ranks([f, e])
    assert [Path(t.source).name for t in ranks.values()] == ["y.json", "x.json"]
    assert ranks[0].meta["rank_from"] == "order"
    assert c.exists() and d.exists()


def test_two_traces_of_one_rank_and_empty_folders_are_one_line_errors(tmp_path):
    a = _write(tmp_path, "a.json", _rank_doc(0, 100, 500))
    with pytest.raises(TraceError, match="both rank 0"):
        load_ranks([a, a])
    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match="no .json or .json.gz files"):
        load_ranks(tmp_path / "empty")


def test_straggler_overlap_and_annotations_on_synthetic_ranks(tmp_path):
    _write(tmp_path, "r0.json", _rank_doc(0, 100, 500))
    _write(tmp_path, "r1.json", _rank_doc(1, 200, 650))
    s = rank_summary(load_ranks(tmp_path))
    r0, r1 = s.ranks.to_records()
    # GEMM [10, 110) or [10, 210); all-reduce [50, 150): overlap 60 us or the whole 100.
    assert (r0["overlap_us"], r1["overlap_us"]) == (60.0, 100.0)
    assert (r0["overlap_pct"], r1["overlap_pct"]) == (60.0, 100.0)
    assert (r0["idle_us"], r1["idle_us"]) == (0.0, 0.0)
    (st,) = s.steps.to_records()
    assert (st["slowest_rank"], st["behind_us"], st["behind_pct"]) == (1, 150.0, 30.0)
    assert (st["most_compute_rank"], st["compute_us"]) == (1, 200.0)
    a1 = [r for r in s.annotations.to_records() if r["rank"] == 1]
    assert a1 == [{"rank": 1, "annotation": "## fwd ##", "calls": 1, "gpu_us": 200.0,
                   "gpu_span_us": 200.0}]  # fmt: skip
    assert not s.notes  # both ranks of a world of 2
    assert rank_summary([load(tmp_path / "r0.json")]).ranks.to_records()[0]["rank"] == 0


# ------------------------------------------------------------------ command line
def test_cli_summary_of_a_directory_in_every_format(capsys):
    assert main(["summary", str(HTA_2RANK)]) == 0
    text = capsys.readouterr().out
    assert "Per rank" in text and "slowest_rank" in text and "Idle time per GPU stream" in text
    assert "rank 1: sampled_rank-1.json.gz (rank from distributedInfo)" in text
    files = [str(HTA_2RANK / f"sampled_rank-{r}.json.gz") for r in (1, 0)]
    assert main(["summary", *files, "--format", "json", "--drop-last-step"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [round(r["overlap_pct"], 2) for r in data["ranks"]] == [11.81, 20.05]
    assert "last profiler step dropped, and the GPU ops launched in it" in data["notes"]
    assert main(["summary", str(HTA_2RANK), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("**Per rank") and "| rank | steps |" in md


def test_cli_summary_of_ranks_rejects_single_trace_options(tmp_path, capsys):
    assert main(["summary", str(HTA_2RANK), "--bytes-per-step", "1e9"]) == 2
    assert capsys.readouterr().err.startswith("tracereader: --bytes-per-step")
    one = str(HTA_2RANK / "sampled_rank-0.json.gz")
    assert main(["summary", one, "--drop-last-step"]) == 2
    assert "several ranks" in capsys.readouterr().err
    bad = tmp_path / "ranks"
    shutil.copytree(HTA_2RANK, bad)
    (bad / "notes.json").write_text("{}")
    assert main(["summary", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracereader: ") and err.count("\n") == 1 and "notes.json" in err


def test_cli_summary_of_repeats_gives_each_its_own_summary(tmp_path, capsys):
    one = HTA_2RANK.parent / "h200" / "train_eager.json.gz"
    for r in range(3):
        shutil.copy(one, tmp_path / f"r{r}.json.gz")
    assert main(["summary", str(one)]) == 0
    alone = capsys.readouterr().out
    assert main(["summary", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    first, *rest = text.split("\n\n== ")
    assert "not ranks" in first and "Per rank" not in text and len(rest) == 3
    # each repeat's summary is the one trace's own, under its path
    body = rest[0].split(" ==\n\n", 1)[1].rstrip("\n")
    assert body.replace(str(tmp_path / "r0.json.gz"), str(one)) == alone.rstrip("\n")
    assert main(["summary", str(tmp_path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ranks"] is False and "repeats" in data["why"] and len(data["traces"]) == 3
    assert main(["summary", str(tmp_path), "--drop-last-step"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracereader: --drop-last-step") and err.count("\n") == 1
