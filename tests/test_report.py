"""``tracereader report``: one self-contained HTML file, and what it is built from."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest
from _builders import call, doc, ev, gpu, make, op, step
from _offline_page import offline_page, outside

from tracereader import load
from tracereader._classify import class_table, kernel_class
from tracereader._headline import cpu_headline
from tracereader._overview import gpu_split, ranks_or_repeats
from tracereader._report import Peaks, report
from tracereader._symptoms import symptoms
from tracereader.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
RECORDINGS = ROOT / "docs" / "recordings" / "h200"
TRACES = sorted(
    p for p in DATA.rglob("*") if p.name.endswith((".json", ".json.gz")) and p.name != "env.json"
)
SECTIONS = ('id="overview"', 'id="kernels"', 'id="slowest"', 'id="next"')
# A resource the page would fetch: src=, a stylesheet or script href, url(), @import.
REMOTE = re.compile(
    r"""(src\s*=\s*["']?\s*(https?:)?//)|(<link[^>]*href\s*=\s*["']?(https?:)?//)"""
    r"""|(url\(\s*["']?(https?:)?//)|(@import)""",
    re.I,
)


def _offline(text: str) -> None:
    assert not REMOTE.search(text), REMOTE.search(text)
    assert "http://" not in text and "https://" not in text


def _recording(*parts: str) -> Path:
    path = RECORDINGS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    return path


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(DATA)))
def test_every_test_trace_builds(path):
    text = report(path, draw=False)
    _offline(text)
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    if "no gpu activity" not in text.lower():
        assert all(s in text for s in SECTIONS)


@pytest.mark.parametrize(
    "parts",
    [
        ("06_train_step", "eager", "r0", "trace.json.gz"),
        ("06_train_step", "loader_inline", "r0", "trace.json.gz"),
        ("05_llm_decode", "generate_static_compiled_1b", "r0", "trace.json.gz"),
    ],
)
def test_recordings_build_with_picture(parts):
    pytest.importorskip("matplotlib")
    text = report(_recording(*parts))
    _offline(text)
    assert all(s in text for s in SECTIONS)
    assert 'src="data:image/png;base64,' in text


def test_dataloader_wait_is_a_symptom():
    trace = load(_recording("06_train_step", "loader_inline", "r0", "trace.json.gz"))
    assert "dataloader" in {s.key for s in symptoms(trace)}


def test_symptoms_of_a_training_step():
    keys = {s.key for s in symptoms(load(DATA / "h200" / "train_eager.json.gz"))}
    assert {"gpu-idle", "host-sync", "tiny-kernels"} <= keys


def _compiled_steps():
    """Three steps: the first one slow; the last runs two compiled graphs, one recompiled."""
    events = []
    for n, (ts, dur) in enumerate([(0, 3000), (3000, 500), (3500, 500)], start=1):
        events += [step(n, ts, dur), call("cudaLaunchKernel", ts + 10, 5, corr=n),
                   gpu("triton_poi_fused_0", ts + 20, 100, corr=n)]  # fmt: skip
    events += [ev("Torch-Compiled Region: 0/0", 3510, 50, "user_annotation"),
               ev("Torch-Compiled Region: 1/1", 3600, 50, "user_annotation")]  # fmt: skip
    return make(events)


def test_slow_first_step_and_graph_breaks():
    found = {s.key: s for s in symptoms(_compiled_steps())}
    assert "slow-first" in found and "6.0x" in found["slow-first"].what
    assert "graph breaks" in found["compile"].what and "1/1" in found["compile"].what


def test_one_compiled_forward_and_backward_is_no_symptom():
    events = [step(1, 0, 1000), call("cudaLaunchKernel", 10, 5, corr=1),
              gpu("triton_poi_fused_0", 20, 100, corr=1),
              op("Torch-Compiled Region: 0/0", 100, 300),
              op("## Call CompiledFxGraph fabc ##", 110, 100),
              op("CompiledFunctionBackward", 500, 300),
              op("## Call CompiledFxGraph fdef ##", 510, 100)]  # fmt: skip
    assert "compile" not in {s.key for s in symptoms(make(events))}


def test_cpu_only():
    text = report(DATA / "synthetic" / "cpu_only.json")
    assert "No GPU activity in this trace" in text
    assert "Operators" in text and "record_function" in text
    assert 'id="slowest"' not in text and "self_gpu_us" not in text


def test_cpu_only_regions(tmp_path):
    events = [step(1, 0, 100), ev("forward", 10, 40, "user_annotation"),
              op("aten::mm", 12, 30), ev("backward", 60, 30, "user_annotation")]  # fmt: skip
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(doc(events)))
    text = report(path)
    assert "No GPU activity" in text and "CPU time per step" in text
    regions = text[text.index('id="regions"') :]
    assert ">forward<" in regions and ">backward<" in regions and "aten::mm" in text
    assert "The region &#x27;forward&#x27; took 40 % of it: start there" in text


def test_cpu_only_headline_names_the_biggest_region_of_the_later_steps():
    events = [step(1, 0, 100), ev("forward", 10, 80, "user_annotation"),
              step(2, 100, 100), ev("forward", 110, 10, "user_annotation"),
              ev("optimizer", 130, 60, "user_annotation")]  # fmt: skip
    text = cpu_headline(make(events))
    assert "Step time 100.0 µs of CPU (ProfilerStep#2, the first step left out)" in text
    assert "'optimizer' took 60 %" in text
    assert "no verdict on the GPU" in cpu_headline(make([op("aten::mm", 0, 5)]))


def test_several_ranks():
    text = report(DATA / "hta_2rank")
    _offline(text)
    assert 'id="ranks"' in text and "distinct rank" in text
    assert "Per-rank overview" in text and "overlap" in text


def test_repeats_are_not_ranks(tmp_path):
    run = _recording("06_train_step", "eager")
    for r in ("r0", "r1", "r2"):
        shutil.copy(run / r / "trace.json.gz", tmp_path / f"{r}.json.gz")
    traces = {p.name: load(p) for p in sorted(tmp_path.iterdir())}
    assert ranks_or_repeats(traces)[0] is False
    text = report(tmp_path, draw=False)
    assert 'id="ranks"' not in text and "not ranks" in text
    assert [text.count(f'id="overview-{i}"') for i in range(3)] == [1, 1, 1]


def test_peaks_without_flops_say_so():
    path = DATA / "h200" / "train_eager.json.gz"
    text = report(path, Peaks(tflops=989.0, tbs=4.8), draw=False)
    assert "Peaks: 989 TFLOP/s, 4.8 TB/s" in text and "given on the command line" in text
    assert "cannot tell" in text
    text = report(path, Peaks(tbs=4.8, bytes_per_step=1e9), draw=False)
    assert "pct_of_peak_tbs" in text


def test_peaks_not_given_come_from_the_datasheet_of_the_trace_gpu(tmp_path):
    text = report(DATA / "h200" / "train_eager.json.gz", draw=False)
    assert "datasheet&#x27;s for NVIDIA H200 (the H200 SXM row: 989 TFLOP/s" in text
    data = doc([step(1, 0, 100), op("aten::mm", 5, 20, ext=1),
                call("cudaLaunchKernel", 6, 4, corr=9, ext=1), gpu("k", 12, 50, 9)])  # fmt: skip
    data["deviceProperties"] = [{"id": 0, "name": "NVIDIA A10G"}]  # no datasheet row
    (tmp_path / "t.json").write_text(json.dumps(data))
    text = report(tmp_path / "t.json", draw=False)
    assert "(NVIDIA A10G) is not in tracereader&#x27;s datasheet table" in text


def test_gpu_split_adds_up():
    split = gpu_split(load(DATA / "h200" / "train_eager.json.gz"))
    assert split[-1].name == "total"
    for s in split:
        assert s.busy_us + s.idle_us == pytest.approx(s.span_us)
        assert sum(s.by_kind.values()) >= s.busy_us - 1e-6


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "GEMM"),
        ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "GEMM"),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>", "attention"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", "communication"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
            "elementwise",
        ),
        ("triton_poi_fused_add_mul_0", "elementwise"),
        ("triton_red_fused_sum_1", "reduction"),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", "reduction"),
        ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<adam>", "optimizer"),
        (
            "void at::native::vectorized_elementwise_kernel<8, bfloat16_copy_kernel_cuda(lambda)>",
            "elementwise",
        ),
        ("split_embedding_codegen_forward_kernel<fbgemm_gpu::Half>", "elementwise"),
        ("Memcpy HtoD (Pageable -> Device)", "memcpy/memset"),
        ("some_custom_kernel", "other"),
    ],
)
def test_kernel_class(name, cls):
    assert kernel_class(name) == cls


def test_class_table_covers_every_gpu_op():
    trace = load(DATA / "h200" / "train_eager.json.gz")
    t = class_table(trace)
    assert sum(r[1] for r in t.rows) == sum(r[1] for r in t.rows if r[0]) > 0
    assert sum(r[4] for r in t.rows) == pytest.approx(100)


# ------------------------------------------------------------------ the command
def test_cli_writes_one_file(tmp_path, capsys):
    out = tmp_path / "r.html"
    rc = main(["report", str(DATA / "h200" / "compile.json.gz"), "-o", str(out), "--no-picture"])
    assert rc == 0 and out.exists()
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    _offline(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize("content", ['{"traceEvents": [', "hello", ""])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    rc = main(["report", str(bad), "-o", str(tmp_path / "r.html")])
    out, err = capsys.readouterr()
    assert rc == 2 and err.startswith("tracereader: ") and err.count("\n") == 1
    assert "Traceback" not in err and not (tmp_path / "r.html").exists()


def test_empty_folder_is_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc = main(["report", str(tmp_path / "empty"), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "no .json" in err


# ------------------------------------------------------------------ in a browser
def test_opens_offline_in_chromium(tmp_path, playwright):
    out = tmp_path / "r.html"
    out.write_text(report(DATA / "h200" / "train_eager.json.gz"), encoding="utf-8")
    with offline_page(out, playwright) as (page, requests, errors):
        th = page.locator("table.sortable th").nth(1)
        th.click()
        assert th.get_attribute("class") == "asc"
        if 'src="data:image/png' in out.read_text(encoding="utf-8"):
            assert page.eval_on_selector("img", "i => i.complete && i.naturalWidth > 0")
    assert outside(requests) == []
    assert errors == []


def test_the_gap_table_explains_its_causes():
    text = report(DATA / "h200" / "train_eager.json.gz", draw=False)
    assert "What the causes mean" in text and "nothing recorded    code the profiler" in text


def test_kernel_view_launch_configuration():
    """R-E6: grid and block as [x,y,z], registers, shared memory, blocks/SM, occupancy."""
    from tracereader._kernel_view import launch_table, weighted_occupancy_pct

    cfg = {"grid": [2, 66, 1], "block": [384, 1, 1], "registers per thread": 168,
           "shared memory": 213188, "est. achieved occupancy %": 0}  # fmt: skip
    small = {"grid": [264, 1, 1], "block": [128, 1, 1], "registers per thread": 32,
             "shared memory": 0, "est. achieved occupancy %": 100}  # fmt: skip
    events = [op("aten::mm", 0, 10, ext=1), call("cudaLaunchKernel", 1, 2, corr=1),
              op("aten::add", 20, 10, ext=2), call("cudaLaunchKernel", 21, 2, corr=2),
              {**gpu("nvjet_gemm", 5, 300, corr=1), "args": {**gpu("x", 0, 0, 1)["args"], **cfg}},
              {**gpu("add_kernel", 400, 100, corr=2),
               "args": {**gpu("x", 0, 0, 2)["args"], **small}}]  # fmt: skip
    d = doc(events)
    d["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100", "numSms": 132}]
    t = load(json.dumps(d).encode())
    tab = launch_table(t)
    assert tab.rows == [["nvjet_gemm", 1, 300.0, "[2,66,1]", "[384,1,1]", 168, 213188, 1.0, 0.0],
                        ["add_kernel", 1, 100.0, "[264,1,1]", "[128,1,1]", 32, 0, 2.0, 100.0]]  # fmt: skip
    assert weighted_occupancy_pct(t) == (25.0, 100.0, 75.0)
    bare = dataclasses.replace(t, extra={}, _cache={})  # a trace built without arg columns
    assert launch_table(bare).rows[0][3:] == ["", "", None, None, None, None]
    assert weighted_occupancy_pct(bare) is None


def test_report_kernel_and_operator_views_on_a_real_trace():
    """R-E5, R-E6 on the eager training step (record_shapes on)."""
    text = report(_recording("06_train_step", "eager", "r0", "trace.json.gz"), draw=False)
    kernels = text[text.index('id="kernels"') : text.index('id="slowest"')]
    # the GEMM that runs from 84.5 to 5,245 µs behind a 299.7 µs mean
    assert re.search(r"299\.72</td>[^\n]*?84\.51</td>[^\n]*?5,245\.20</td>", kernels)
    assert "[2,66,1]" in kernels and "[384,1,1]" in kernels and ">168<" in kernels
    assert "44.7 % over all kernels, 89.3 % over those above 0 % (49.9 %" in kernels
    assert "does not record Tensor Core use" in kernels
    assert "grouped by name and input shapes" in kernels
    assert "[[8192,8192],[8192,2048]]" in kernels
    assert (
        "The first 100 of 386 ops and shapes" in kernels and "The first 100 of 138 ops" in kernels
    )


def test_host_syncs_read_as_the_cpu_waiting_for_the_gpu():
    """B-R3: sync ops labelled as waiting, with the GPU's busy share during the wait."""
    text = report(_recording("06_train_step", "eager", "r0", "trace.json.gz"), draw=False)
    kernels = text[text.index('id="kernels"') : text.index('id="slowest"')]
    cpu = kernels[kernels.index("Top ops by CPU time") :]
    row = cpu[cpu.index("<td>cudaStreamSynchronize</td>") :].split("</tr>")[0]
    assert "<td>CPU waiting for the GPU</td>" in row and 'data-v="59877.868">59,877.87</td>' in row
    assert "<td>aten::item</td><td>CPU waiting for the GPU</td>" in cpu
    assert "<td>forward</td><td>partly waiting</td>" in cpu
    assert ("CPU waiting for the GPU: 59.9 ms in 4 synchronize call(s)" in kernels
            and "The GPU was busy 97.1 % of the wait" in kernels)  # fmt: skip


def test_waits_count_the_gpu_busy_during_a_sync():
    from tracereader._waits import waits

    t = make([op("aten::item", 0, 100, ext=1), call("cudaStreamSynchronize", 10, 80),
              call("cudaLaunchKernel", 0, 5, corr=1), gpu("k", 6, 44, corr=1)])  # fmt: skip
    w = waits(t)
    assert (w.calls, w.wait_us, w.gpu_busy_us, w.gpu_busy_pct) == (1, 80.0, 40.0, 50.0)


def test_trimmed_trace_is_flagged_in_the_header():
    """R-E12: GPU annotations with no GPU op under them: the file lost its kernels."""
    from tracereader._trimmed import empty_annotations

    ann = {"device": 0, "stream": 7}
    events = [op("loss", 0, 50, ext=1), call("cudaLaunchKernel", 1, 2, corr=1),
              gpu("k", 10, 20, corr=1),
              ev("forward", 5, 300, "gpu_user_annotation", pid=0, tid=7, **ann),  # holds k
              ev("loss", 400, 12_700, "gpu_user_annotation", pid=0, tid=7, **ann),  # empty
              ev("tiny", 13_200, 50, "gpu_user_annotation", pid=0, tid=7, **ann)]  # fmt: skip
    t = make(events)
    assert empty_annotations(t) == [("loss", 12_700.0)]  # "tiny" is under 100 µs
    text = report(_recording("06_train_step", "loader_inline", "r0", "trace.json.gz"), draw=False)
    assert ("repairs: none. <b class=\"verdict-CPU-bound\">Incomplete: it looks trimmed: 2 "
            "GPU-side record_function range(s) (loss 12.7 ms, Optimizer.step#AdamW.step "
            "10.1 ms) hold no GPU op") in text  # fmt: skip
    whole = report(_recording("06_train_step", "eager", "r0", "trace.json.gz"), draw=False)
    assert "looks trimmed" not in whole and "repairs: none.</p>" in whole
    # a range that lies mostly before the kept steps is not a sign (the decode's generate)
    tuned = load(_recording("05_llm_decode", "loop_tuned_8b", "r0", "trace.json.gz"))
    assert empty_annotations(tuned) == []


def test_the_slowest_step_shown_is_not_the_cold_first_one(tmp_path):
    assert len(load(DATA / "h200" / "train_eager.json.gz").steps) == 2
    text = report(DATA / "h200" / "train_eager.json.gz", draw=False)
    assert "The slowest step after the first: ProfilerStep#" in text and "is left out" in text
    (tmp_path / "one.json").write_text(json.dumps(doc([
        step(1, 0, 100), op("aten::mm", 5, 20, ext=1),
        call("cudaLaunchKernel", 6, 4, corr=9, ext=1), gpu("k", 12, 50, 9)])))  # fmt: skip
    text = report(tmp_path / "one.json", draw=False)
    assert "The slowest step: ProfilerStep#1" in text and "is left out" not in text
