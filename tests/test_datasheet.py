"""The datasheet table: device names as torch reports them find their row, others none."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from tracereader._datasheet import DATASHEETS, datasheet, trace_datasheet

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L40", "L40"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
        ("NVIDIA GeForce RTX 5090", "GeForce RTX 5090"),
        (" NVIDIA GeForce RTX 4090 ", "GeForce RTX 4090"),  # stray spaces
    ],
)
def test_names_torch_reports_find_their_row(name: str, row: str) -> None:
    found = datasheet(name)
    assert found is not None and found.gpu == row


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA A10G",  # AWS's part: no vendor figure (the module's docstring says why)
        "NVIDIA GeForce RTX 4090 D",  # 114 SMs to the 4090's 128: not the 4090's row
        "NVIDIA GeForce RTX 5090 D",
        "NVIDIA GeForce RTX 3090 Ti",
        "NVIDIA GeForce RTX 4090 Laptop GPU",
        "NVIDIA GH200 480GB",  # not the H200
        "NVIDIA GB200",  # not the B200
        "NVIDIA H800",
        "Tesla T4",
        "",
    ],
)
def test_other_gpus_have_no_row(name: str) -> None:
    assert datasheet(name) is None


@pytest.mark.parametrize(
    ("name", "tflops", "tbs"),
    [
        ("NVIDIA H100 NVL", 835, 3.9),  # not the SXM's 989 and 3.35
        ("NVIDIA H200 NVL", 835, 4.8),  # not the SXM's 989
        ("NVIDIA GeForce RTX 4090", 165.2, 1.008),  # FP32 accumulate, not FP16's 330.3
        ("NVIDIA B200", 2250, 7.7),  # dense: half the 4.5 PFLOP/s with sparsity
    ],
)
def test_a_row_holds_the_dense_fp32_accumulate_rate(name: str, tflops: float, tbs: float) -> None:
    found = datasheet(name)
    assert found is not None and (found.bf16_tflops, found.hbm_tbs) == (tflops, tbs)


def test_every_row_is_reachable_and_positive() -> None:
    for row in DATASHEETS:
        assert row.bf16_tflops > 0 and row.hbm_tbs > 0
    assert len({r.gpu for r in DATASHEETS}) == len(DATASHEETS)


def test_a_trace_without_a_gpu_has_no_row() -> None:
    assert trace_datasheet([]) == ("", None)
    assert trace_datasheet([{"id": 0, "name": "NVIDIA H200"}])[1] == datasheet("NVIDIA H200")


def _helper(example: str, name: str) -> Any:
    """An example's helper module (it imports torch), loaded from its file."""
    pytest.importorskip("torch")
    path = EXAMPLES / example / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"datasheet_test_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_downloads_carry_the_library_table() -> None:
    """A download runs with only torch, so 05 and 06 carry their column of the table."""
    tbs = _helper("05_llm_decode", "_05_common").DATASHEET_TBS
    tflops = _helper("06_train_step", "_06_common").DATASHEET_TFLOPS
    assert list(tbs) == [(r.gpu, r.pattern, r.hbm_tbs) for r in DATASHEETS]
    assert list(tflops) == [(r.gpu, r.pattern, r.bf16_tflops) for r in DATASHEETS]


def _decode_results(path: Path, **more: Any) -> Path:
    path.write_text(
        json.dumps({"achieved_tbs": 2.666, "hbm_fraction_spec": 0.5554, "copy_tbs": 3.0, **more})
    )
    return path


def test_a_decode_download_divides_by_its_own_gpu(tmp_path: Path) -> None:
    """The issue's H100 run: 2.666 TB/s is 0.796 of the H100's 3.35, not 0.555 of 4.8."""
    judge = _helper("05_llm_decode", "_05_common").judge_bandwidth
    path = _decode_results(tmp_path / "results.json")
    line = judge(path, "NVIDIA H100 80GB HBM3")
    results = json.loads(path.read_text())
    assert results["hbm_fraction_spec"] == 0.7958 and results["spec_gpu"] == "H100 SXM"
    assert results["spec_source"] == "datasheet" and results["spec_hbm_tbs"] == 3.35
    assert "0.796 of the 3.35 TB/s in the H100 SXM datasheet" in line
    assert "0.889 of the 3.0 TB/s a copy reached" in line


def test_a_decode_download_takes_the_flag_then_the_table_then_the_copy(tmp_path: Path) -> None:
    judge = _helper("05_llm_decode", "_05_common").judge_bandwidth
    path = _decode_results(tmp_path / "results.json")
    line = judge(path, "NVIDIA H100 80GB HBM3", peak_tbs=3.0)  # the flag beats the table
    results = json.loads(path.read_text())
    assert (results["spec_source"], results["spec_gpu"], results["spec_hbm_tbs"]) == (
        "flag", "NVIDIA H100 80GB HBM3", 3.0,
    )  # fmt: skip
    assert results["hbm_fraction_spec"] == 0.8887
    assert "0.889 of the 3.0 TB/s given by --peak-tbs for NVIDIA H100 80GB HBM3" in line
    line = judge(path, "NVIDIA A10G")  # no row: the copy the run measured, named so
    results = json.loads(path.read_text())
    assert (results["spec_source"], results["spec_gpu"], results["spec_hbm_tbs"]) == (
        "measured copy", "NVIDIA A10G", 3.0,
    )  # fmt: skip
    assert "0.889 of the 3.0 TB/s a device-to-device copy reached on NVIDIA A10G, measured" in line
    assert line.count("copy reached") == 1  # not said twice
    _decode_results(path, copy_tbs=None)  # and without a copy (the CPU): no denominator
    line = judge(path, "the CPU")
    results = json.loads(path.read_text())
    assert results["spec_source"] is None and results["hbm_fraction_spec"] is None
    assert "no peak bandwidth known for the CPU" in line


def test_a_training_download_divides_by_its_own_gpu(tmp_path: Path) -> None:
    judge = _helper("06_train_step", "_06_common").judge_flops
    results, timings = tmp_path / "results.json", tmp_path / "timings.json"
    results.write_text(json.dumps({"tokens_per_s": 50000, "mfu_spec": 0.3}))
    timings.write_text(json.dumps({"flops_per_token": 6e9}))
    never = lambda: pytest.fail("a GPU with a datasheet row measures no GEMM")  # noqa: E731
    line = judge(results, timings, "NVIDIA A100-SXM4-80GB", measure=never)
    judged = json.loads(results.read_text())
    assert judged["mfu_spec"] == round(300 / 312, 4) and judged["spec_source"] == "datasheet"
    assert (judged["spec_gpu"], judged["spec_tflops"]) == ("A100 SXM 80GB", 312)
    assert "of the 312 TFLOP/s dense bf16 in the A100 SXM 80GB datasheet" in line
    line = judge(results, timings, "NVIDIA A100-SXM4-80GB", peak_tflops=250.0, measure=never)
    judged = json.loads(results.read_text())
    assert judged["spec_source"] == "flag" and judged["spec_tflops"] == 250.0
    assert judged["mfu_spec"] == 1.2
    assert "MFU 1.200 of the 250.0 TFLOP/s given by --peak-tflops" in line
    line = judge(results, timings, "NVIDIA A10G", measure=lambda: 60.0)
    judged = json.loads(results.read_text())
    assert (judged["spec_source"], judged["spec_gpu"], judged["spec_tflops"]) == (
        "measured GEMM", "NVIDIA A10G", 60.0,
    )  # fmt: skip
    assert judged["mfu_spec"] == 5.0 and "a bf16 GEMM reached on NVIDIA A10G, measured" in line
    line = judge(results, timings, "NVIDIA A10G", measure=None)
    assert json.loads(results.read_text())["spec_source"] is None
    assert "no peak known for NVIDIA A10G" in line


@pytest.mark.parametrize(
    ("example", "helper", "flag"),
    [
        ("05_llm_decode", "_05_common", "--peak-tbs"),
        ("06_train_step", "_06_common", "--peak-tflops"),
    ],
)
def test_the_peak_flag_reaches_the_judge_for_one_run(
    example: str, helper: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--variant NAME --peak-... X``, in either order: the run sees X; bad flags are one
    usage line and exit status 2."""
    module = _helper(example, helper)
    key = "tbs" if flag == "--peak-tbs" else "tflops"
    seen = []

    def run(name: str) -> Any:
        seen.append((name, module.PEAK_BY_HAND[key]))
        return type("Run", (), {"table": "TABLE"})

    variants = {"a": None, "b": None}
    assert module.command_line(variants, run, ["--variant", "a"]) == 0
    assert module.command_line(variants, run, [flag, "2.5", "--variant", "b"]) == 0
    assert seen == [("a", None), ("b", 2.5)] and module.PEAK_BY_HAND[key] is None
    capsys.readouterr()
    for argv in (
        ["--variant", "c"], ["--variant", "a", flag], ["--variant", "a", flag, "x"],
        ["--variant", "a", flag, "0"], ["--variant", "a", flag, "nan"],
        ["--variant", "a", "--variant", "b"], ["--variant", "a", "--peak", "1"], ["a"],
    ):  # fmt: skip
        assert module.command_line(variants, run, argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and flag in err, err
    assert len(seen) == 2
