"""What the report advises: symptoms ranked by time at stake, and the headline."""

from __future__ import annotations

from pathlib import Path

import pytest
from _builders import call, gpu, make, op, step

from tracereader import load
from tracereader._headline import headline
from tracereader._report import report
from tracereader._symptoms import symptoms

ROOT = Path(__file__).resolve().parent.parent
REC = ROOT / "docs" / "recordings" / "h200"
EAGER = ROOT / "tests" / "data" / "h200" / "train_eager.json.gz"
LOADER = REC / "06_train_step" / "loader_inline" / "r0" / "trace.json.gz"
DECODE = REC / "05_llm_decode" / "loop_untuned_8b" / "r0" / "trace.json.gz"
MATMUL20 = REC / "01_matmul_add" / "4096_bf16_20steps" / "r0" / "trace.json.gz"


def _sync_step():
    """One step: two .item() calls, each aten::item > _local_scalar_dense > sync."""
    events = [step(1, 0, 1000)]
    for k, t0 in enumerate((100, 500)):
        events += [
            op("aten::add", t0, 10, ext=10 + k),
            call("cudaLaunchKernel", t0 + 2, 5, corr=k + 1, ext=10 + k),
            gpu(f"k{k}", t0 + 10, 50, k + 1),
            op("aten::item", t0 + 20, 60, ext=20 + k),
            op("aten::_local_scalar_dense", t0 + 21, 58, ext=30 + k),
            call("cudaStreamSynchronize", t0 + 22, 50),
        ]
    return make(events)


def test_a_nested_item_sync_counts_once():
    """R-E9: aten::item > aten::_local_scalar_dense > cudaStreamSynchronize is one sync."""
    (sync,) = [s for s in symptoms(_sync_step()) if s.key == "host-sync"]
    assert sync.what.startswith("2 host sync(s) in 1 step(s) (aten::item; nested calls")
    assert "the CPU waited 120 µs" in sync.what


def test_real_syncs_count_once_per_item():
    # 10 nested sync events in the steps: 6 syncs (it said 10)
    (sync,) = [s for s in symptoms(load(EAGER)) if s.key == "host-sync"]
    assert sync.what.startswith("6 host sync(s) in 2 step(s)")
    (sync,) = [s for s in symptoms(load(LOADER)) if s.key == "host-sync"]
    assert sync.what.startswith("2 host sync(s) in 1 step(s)")  # it said 4


def test_symptoms_are_ranked_by_time_at_stake():
    found = symptoms(load(LOADER))
    assert [s.key for s in found] == ["gpu-idle", "dataloader", "host-sync"]
    stakes = [s.stake_us for s in found]
    assert stakes == sorted(stakes, reverse=True)
    assert stakes[0] == pytest.approx(313390.25, abs=0.1)
    assert stakes[1] == pytest.approx(172285.0, abs=1.0)
    assert [s.small for s in found] == [False, False, True]
    assert found[1].share == pytest.approx(0.484, abs=0.001)


def test_no_compile_or_graph_advice_on_a_compiled_graphed_trace():
    """R-E8: the 8B decode loop is compiled and replays CUDA graphs; its later steps are
    GPU-bound. It was told "1,173 kernels, median 2.6 µs: torch.compile, CUDA graphs",
    and its idle symptom read the cold first step alone."""
    found = symptoms(load(DECODE))
    assert [s.key for s in found] == ["cold-first"]
    (cold,) = found
    assert "first step only (ProfilerStep#1, a cold start)" in cold.what
    assert cold.stake_us == pytest.approx(2671.09, abs=0.01)
    assert not any("torch.compile" in s.todo or "CUDA graphs" in s.todo for s in found)


def test_the_tiny_kernel_check_weighs_kernels_by_time():
    # the eager step is CPU-bound and half its kernel time is in kernels under 3.5 us
    (tiny,) = [s for s in symptoms(load(EAGER)) if s.key == "tiny-kernels"]
    assert "half the kernel time in kernels under 3.5 µs" in tiny.what
    # 20 GPU-bound matmul steps: no tiny-kernel advice, only the cold first step (small)
    found = symptoms(load(MATMUL20))
    assert [(s.key, s.small) for s in found] == [("cold-first", True)]


def test_headline_names_the_step_time_busy_share_and_biggest_loss():
    """B-R1: the first sentence of the report."""
    line = headline(load(LOADER))
    assert line.startswith("Step time 356.0 ms (ProfilerStep#2, the only step); the GPU was "
                           "busy 12.0 % of it: CPU-bound.")  # fmt: skip
    assert "Biggest loss: waiting for the DataLoader, 172.3 ms (48 % of the steps' time)" in line
    assert "Fix: load data ahead: DataLoader(num_workers>0" in line
    line = headline(load(DECODE))
    assert line.startswith("Step time 4.3 ms (median of 2 steps, the first (cold) one left "
                           "out); the GPU was busy 96.0 % of it: GPU-bound.")  # fmt: skip
    assert "No loss found beyond the cold first step (ProfilerStep#1: 2.7 ms)" in line
    html = report(LOADER, draw=False)
    assert html.index('class="headline"') < html.index('id="overview"')
    assert "At stake: 172.3 ms (48.4 % of the steps&#x27; time)" in html


def test_no_cold_first_symptom_or_bound_verdict_when_later_steps_run_no_gpu_work():
    """The MI250 trace: the first step ran GPU work, the later ones none."""
    t = load(ROOT / "tests" / "data" / "other" / "hta_mi250_rocm6_2.json.gz")
    assert symptoms(t) == []
    line = headline(t)
    assert ": no GPU work. No loss found." in line and "CPU-bound" not in line
