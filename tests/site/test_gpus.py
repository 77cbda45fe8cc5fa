"""The GPU as a dimension of a recording, like its example, variant and repeat.

Recordings are filed as ``docs/recordings/<gpu>/<example>/<variant>/r<k>/``; the pages read
the H200's unless told otherwise, and the check reads every GPU's. A second GPU is made
here as an H100 copy of one small H200 variant, in a folder of its own
(``TRACESITE_RECORDINGS``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tracesite as record
from tracesite import recorder

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE, SMALL = "02_linear", "small"
H100 = "NVIDIA H100 80GB HBM3"


def test_a_gpus_name_becomes_a_short_folder_name():
    assert record.gpu_slug("NVIDIA H200") == "h200"
    assert record.gpu_slug(H100) == "h100"
    assert record.gpu_slug("NVIDIA H100 PCIe") == "h100"
    assert record.gpu_slug("NVIDIA H100 NVL") == "h100"
    assert record.gpu_slug("CPU only") == "cpu"  # what the recorder stamps without a GPU
    # Any other name: lowercase letters, digits and dashes, without the vendor.
    assert record.gpu_slug("NVIDIA A100-SXM4-80GB") == "a100-sxm4-80gb"
    assert record.gpu_slug("NVIDIA GeForce RTX 4090") == "geforce-rtx-4090"
    assert record.gpu_slug("  Tesla  V100/PCIE ") == "tesla-v100-pcie"
    with pytest.raises(record.RecordingError, match="no folder name"):
        record.gpu_slug("***")
    assert record.PRIMARY_GPU == "h200"


def test_the_recordings_are_filed_by_gpu():
    top = record.recordings_root()
    assert record.gpus()[0] == "h200"  # the pages' GPU first
    assert sorted(p.name for p in top.iterdir()) == sorted([*record.gpus(), "plan.json"])
    for rec in record.iter_recordings():
        assert rec.trace_path.relative_to(top).parts[:3] == (rec.gpu, rec.example, rec.variant)
        assert record.gpu_slug(rec.env["gpu"]) == rec.gpu
    rec = record.load("01_matmul_add", "64_bf16").rep
    assert (
        rec.gpu == "h200" and rec.trace_path == top / "h200/01_matmul_add/64_bf16/r0/trace.json.gz"
    )
    assert rec.trace_url() == "../traces/h200/01_matmul_add/64_bf16/r0.json.gz"


@pytest.fixture
def two_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Recordings of 02_linear on the H200 (a copy of the real ones), and an H100 copy of
    its variant ``small``: stamped as recorded on an H100, at twice the H200's wall time."""
    root = tmp_path / "recordings"
    real = record.recordings_root()
    shutil.copytree(real / "h200" / EXAMPLE, root / "h200" / EXAMPLE)
    shutil.copy(real / "plan.json", root / "plan.json")
    shutil.copytree(root / "h200" / EXAMPLE / SMALL, root / "h100" / EXAMPLE / SMALL)
    for path in (root / "h100").rglob("meta.json"):
        meta = json.loads(path.read_text(encoding="utf-8"))
        meta["env"].update(gpu=H100, wall_s=2 * meta["env"]["wall_s"])
        path.write_text(json.dumps(meta), encoding="utf-8")
    monkeypatch.setenv("TRACESITE_RECORDINGS", str(root))
    return root


def _examples(tmp_path: Path) -> Path:
    """A folder of examples holding only 02_linear (the example the fixture recorded)."""
    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples" / EXAMPLE, examples / EXAMPLE)
    return examples


def test_a_second_gpus_recordings_are_found_beside_the_first(two_gpus):
    assert record.gpus() == ["h200", "h100"]  # the pages' GPU first
    found = [(v.gpu, v.name) for v in record.iter_variants()]
    assert found == [
        ("h200", n) for n in sorted(["big", "big_compile", SMALL, "small_compile"])
    ] + [("h100", SMALL)]
    assert [v.name for v in record.iter_variants(gpu="h100")] == [SMALL]
    assert len(list(record.iter_recordings(gpu="h200"))) == 12
    assert len(list(record.iter_recordings())) == 15
    # The pages' default is the H200; another GPU is asked for by its slug.
    assert record.load(EXAMPLE, SMALL).rep.env["gpu"] == "NVIDIA H200"
    other = record.load(EXAMPLE, SMALL, gpu="h100")
    assert other.gpu == "h100" and all(r.gpu == "h100" for r in other.repeats)
    assert other.rep.env["gpu"] == H100
    assert other.rep.trace_url() == "../traces/h100/02_linear/small/r0.json.gz"
    assert other.rep.trace_path == two_gpus / "h100/02_linear/small/r0/trace.json.gz"
    with pytest.raises(record.RecordingError, match="no recording h100/02_linear/big "):
        record.load(EXAMPLE, "big", gpu="h100")


def test_the_check_reads_every_gpu_and_names_each_stale_recording_with_its_gpu(two_gpus, tmp_path):
    examples = _examples(tmp_path)
    assert record.check_examples(examples) == []
    path = two_gpus / "h100" / EXAMPLE / SMALL / "r1" / "meta.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["code_hash"] = "0123456789abcdef"
    path.write_text(json.dumps(meta), encoding="utf-8")
    (problem,) = record.check_examples(examples)
    assert problem.startswith("recording h100/02_linear/small is stale: ")
    assert "scripts/record.py" in problem


def test_the_check_command_counts_and_names_recordings_per_gpu(two_gpus, tmp_path):
    examples = _examples(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "docs" / "_ext"))
    run = [sys.executable, "-m", "tracesite", "check", str(examples)]
    fresh = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == (
        "recordings: all 15 recordings are fresh (12 on h200, 3 on h100)"
    )
    path = two_gpus / "h100" / EXAMPLE / SMALL / "r0" / "meta.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["code_hash"] = "0123456789abcdef"
    path.write_text(json.dumps(meta), encoding="utf-8")
    stale = subprocess.run(run, capture_output=True, text=True, env=env, timeout=300)
    lines = [ln for ln in stale.stderr.splitlines() if ln.startswith("recordings: recording")]
    assert stale.returncode == 1 and len(lines) == 1, stale.stderr
    assert lines[0].startswith("recordings: recording h100/02_linear/small is stale: ")


def test_recordings_outside_a_gpus_folder_are_flagged(two_gpus, tmp_path):
    """The layout before recordings were filed by GPU: no page would read them."""
    shutil.copytree(two_gpus / "h200" / EXAMPLE / SMALL, two_gpus / EXAMPLE / SMALL)
    (problem,) = record.check_examples(_examples(tmp_path))
    assert problem.startswith("recordings 02_linear/: a variant's repeats lie directly under it")


def test_download_names_and_site_paths_carry_any_gpu_but_the_pages_one(tmp_path):
    def named(repeat: int, gpu: str = "h200", session: str | None = None) -> record.Recording:
        trace = tmp_path / "trace.json.gz"
        return record.Recording(
            "01_matmul_add", "64_bf16", repeat, "", {}, trace, session=session, gpu=gpu
        )

    # The H200's names stay as the pages' visible cells load them.
    assert named(0).download_name == "64_bf16.json.gz"
    assert named(1).download_name == "64_bf16-r1.json.gz"
    assert named(0, "h100").download_name == "64_bf16-h100.json.gz"
    assert named(1, "h100").download_name == "64_bf16-h100-r1.json.gz"
    assert named(2, "h100", "2026-11-29T10-00").download_name == (
        "64_bf16-h100-2026-11-29T10-00-r2.json.gz"
    )
    assert named(1, "h200", "2026-11-29T10-00").download_name == (
        "64_bf16-2026-11-29T10-00-r1.json.gz"
    )
    assert named(1).trace_url() == "../traces/h200/01_matmul_add/64_bf16/r1.json.gz"
    assert named(0, "h100").trace_url("") == "traces/h100/01_matmul_add/64_bf16/r0.json.gz"


def test_reader_files_and_the_stamp_keep_to_the_pages_gpu(two_gpus, monkeypatch):
    from tracesite.notebook import reader_files, setup, stamp

    monkeypatch.chdir(Path.cwd())  # reader_files changes directory; put it back after
    setup(EXAMPLE)
    h200 = {p.name for p in reader_files().iterdir()}
    assert len(h200) == 12 and {"small.json.gz", "small-r1.json.gz"} <= h200
    assert not [n for n in h200 if "h100" in n]
    h100 = {p.name for p in reader_files(gpu="h100").iterdir()}
    assert h100 == {"small-h100.json.gz", "small-h100-r1.json.gz", "small-h100-r2.json.gz"}
    folder = reader_files(gpu=None)
    assert {p.name for p in folder.iterdir()} == h200 | h100
    assert (folder / "small-h100-r1.json.gz").resolve() == (
        two_gpus / "h100/02_linear/small/r1/trace.json.gz"
    ).resolve()
    assert stamp(EXAMPLE).startswith("Recorded on NVIDIA H200 (driver ")
    assert stamp(EXAMPLE, gpu="h100").startswith(f"Recorded on {H100} (driver ")


def test_the_site_serves_every_gpus_traces_where_the_pages_link(two_gpus, tmp_path, monkeypatch):
    pytest.importorskip("sphinx")
    import site_hooks

    monkeypatch.setattr(site_hooks, "EXTRA", tmp_path / "extra")
    site_hooks.copy_traces(None)
    served = {
        p.relative_to(tmp_path / "extra").as_posix()
        for p in (tmp_path / "extra").rglob("*")
        if p.is_file()
    }
    assert served == {r.trace_url("") for r in record.iter_recordings()}
    assert "traces/h100/02_linear/small/r2.json.gz" in served
    assert "traces/h200/02_linear/small/r2.json.gz" in served


def test_the_plan_estimates_from_the_gpus_own_stamps_and_says_where_it_borrows(two_gpus):
    walls = recorder.past_walls_s(gpu="h100")
    h200 = recorder.past_walls_s(gpu="h200")
    assert walls[(EXAMPLE, SMALL)] == pytest.approx(2 * h200[(EXAMPLE, SMALL)])
    assert walls[(EXAMPLE, "big")] == h200[(EXAMPLE, "big")]  # not recorded on h100: the H200's
    sources = recorder.wall_sources(gpu="h100")
    assert sources[(EXAMPLE, SMALL)] == "h100" and sources[(EXAMPLE, "big")] == "h200"
    assert set(recorder.wall_sources(gpu="h200").values()) == {"h200"}
    assert recorder.stale_variants(ROOT / "examples" / EXAMPLE, gpu="h100") == [
        v for v in recorder.load_example(ROOT / "examples" / EXAMPLE) if v != SMALL
    ]
    assert recorder.stale_variants(ROOT / "examples" / EXAMPLE) == []


def _record_py(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "record.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),  # as on a machine without a GPU
    )


def test_record_py_plans_for_the_gpu_it_is_told(two_gpus):
    pytest.importorskip("torch")
    on_h100 = _record_py("--plan", "--gpu", "h100", EXAMPLE)
    assert on_h100.returncode == 0, on_h100.stderr
    assert "(3 variant(s) not recorded on h100: estimated from h200's stamps)" in on_h100.stdout
    default = _record_py("--plan", EXAMPLE)  # no GPU here: the H200's, its own stamps
    assert default.returncode == 0 and "not recorded on" not in default.stdout, default.stderr
    stale = _record_py("--plan", "--stale", "--gpu", "h100", EXAMPLE)
    assert stale.stdout.startswith("== 02_linear: 3 stale variant(s): "), stale.stdout
    assert SMALL not in stale.stdout.splitlines()[0].split(": ")[-1].split(", ")
    assert _record_py("--plan", "--readme", "--gpu", "h100").returncode == 2
