"""``tracereader report A --against B``: the diff of two traces, and its page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _builders import call, doc, gpu, make, op, step
from _offline_page import offline_page, outside

from tracereader import compare, load
from tracereader._diff import CHANGED, ONE_STEP, SAME, WITHIN, diff, verdict, what_changed
from tracereader._diff_html import diff_report
from tracereader._report import report
from tracereader.cli import main

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "tests" / "data" / "h200"
SYNTH = ROOT / "tests" / "data" / "synthetic"
EAGER, COMPILED, STACK = (H200 / f"{n}.json.gz" for n in ("train_eager", "compile", "train_stack"))
REMOTE = re.compile(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|url\(|@import""", re.I)


def _stepped(steps, step_us=100):
    """One ProfilerStep per entry of ``steps``: a list of (kernel name, µs), launched in order."""
    evs, corr = [], 0
    for s, kernels in enumerate(steps):
        t0 = s * step_us
        evs.append(step(s + 1, t0, step_us))
        evs.append(op("aten::work", t0 + 1, 10 * len(kernels) + 2))
        for j, (name, dur) in enumerate(kernels):
            corr += 1
            evs.append(call("cudaLaunchKernel", t0 + 2 + 10 * j, 0.5, corr=corr))
            evs.append(gpu(name, t0 + 20 + 20 * j, dur, corr))
    return make(evs)


def _rows(table):
    return {r[0]: dict(zip(table.columns[1:], r[1:], strict=True)) for r in table.rows}


# ------------------------------------------------------------------ the verdict
@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([10.0, 20.0], [14.0, 22.0], WITHIN),  # means 15 and 18: 3 < the range 10
        ([10.0, 11.0], [20.0, 21.0], CHANGED),  # 10 > the range 1
        ([10.0, 11.0], [11.0, 12.0], WITHIN),  # 1 is not more than the range 1
        ([5.0, 5.0], [5.0, 5.0], SAME),
        ([5.0, 5.0], [6.0, 6.0], CHANGED),  # no spread at all: any difference
        ([10.0], [20.0], ONE_STEP),
        ([10.0], [10.0], SAME),
    ],
)
def test_verdict_beats_the_spread(a, b, expected):
    assert verdict(a, b) == expected


# ------------------------------------------------------------------ synthetic traces
def test_first_step_left_out_and_numbers_per_step():
    warm = [("init", 30.0)]  # only in each first step: left out by default
    a = _stepped([[("sgemm", 10.0), ("add", 4.0), *warm], [("sgemm", 10.0), ("add", 4.0)],
                  [("sgemm", 11.0), ("add", 4.0)]])  # fmt: skip
    b = _stepped([[("sgemm", 6.0), *warm], [("sgemm", 6.0)], [("sgemm", 6.5)]])
    d = diff("a.json", a, "b.json", b)
    assert d.a.steps == d.b.steps == ["ProfilerStep#2", "ProfilerStep#3"]
    assert any("first (warm-up) step of each trace is left out" in n for n in d.notes)
    k = _rows(d.kernels)
    assert set(k) == {"sgemm", "add"}  # no "init"
    assert k["sgemm"]["a_gpu_us"] == 21.0 and k["sgemm"]["b_gpu_us"] == 12.5
    assert k["sgemm"]["diff_us"] == -8.5 and k["sgemm"]["ratio"] == pytest.approx(12.5 / 21)
    assert k["sgemm"]["spread_us"] == 1.0 and k["sgemm"]["verdict"] == CHANGED
    assert k["add"]["a_calls"] == 2 and k["add"]["b_calls"] == 0 and k["add"]["ratio"] == 0.0
    assert d.only_a == [("add", 8.0)] and d.only_b == []
    t = _rows(d.totals)
    assert t["computation"]["a_us"] == 29.0 and t["computation"]["b_us"] == 12.5
    assert t["computation"]["a_per_step_us"] == 14.5 and t["computation"]["verdict"] == CHANGED
    assert t["memcpy"]["verdict"] == SAME
    assert t["CPU (step range)"]["a_us"] == 200.0 and t["CPU (step range)"]["verdict"] == SAME
    classes = _rows(d.classes)
    assert classes["GEMM"]["a_gpu_us"] == 21.0 and classes["GEMM"]["b_gpu_us"] == 12.5
    ops = _rows(d.ops_gpu)
    assert ops["aten::work"]["a_gpu_us"] == 29.0 and ops["aten::work"]["diff_us"] == -16.5
    assert "ProfilerStep#2" not in _rows(d.ops_cpu)
    changed = what_changed(d)
    assert "Less GPU time in B: sgemm: 21.0 µs → 12.5 µs (×0.60, -8.5 µs): changed" in changed
    assert "1 GPU op name(s) only in A (gone in B), by class: other 1 (8.0 µs)." in changed
    assert changed[0] == "B takes as long per step as A."

    kept = diff("a.json", a, "b.json", b, keep_first=True)
    assert kept.a.steps == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    assert _rows(kept.kernels)["init"]["a_gpu_us"] == 30.0


def test_within_the_spread_is_not_a_change():
    a = _stepped([[("mm", 50.0)], [("mm", 10.0)], [("mm", 20.0)]])
    b = _stepped([[("mm", 50.0)], [("mm", 14.0)], [("mm", 22.0)]])
    k = _rows(diff("a", a, "b", b).kernels)["mm"]
    assert (k["diff_us"], k["spread_us"], k["verdict"]) == (6.0, 10.0, WITHIN)
    assert not any(x.startswith("More GPU time") for x in what_changed(diff("a", a, "b", b)))


def test_step_counts_differ_compares_like_with_like():
    a = _stepped([[("mm", 10.0)]] * 4)
    b = _stepped([[("mm", 12.0)]] * 3)
    d = diff("a", a, "b", b)
    assert d.a.steps == d.b.steps == ["ProfilerStep#2", "ProfilerStep#3"]
    assert "The step counts differ: A has 4 steps, B has 3." in " ".join(d.notes)
    assert "The step count changed: A has 4 step(s), B has 3." in what_changed(d)
    k = _rows(d.kernels)["mm"]
    assert (k["a_calls"], k["b_calls"], k["a_gpu_us"], k["b_gpu_us"]) == (2, 2, 20.0, 24.0)
    assert k["verdict"] == CHANGED  # 2 µs more per step, both ranges 0


def test_one_step_each_cannot_show_the_spread():
    a, b = _stepped([[("mm", 10.0)]]), _stepped([[("mm", 12.0)]])
    d = diff("a", a, "b", b)
    assert d.a.steps == ["ProfilerStep#1"]
    assert any("One compared step cannot show the spread" in n for n in d.notes)
    assert any(n.startswith("A and B recorded one step only, so no warm-up") for n in d.notes)
    k = _rows(d.kernels)["mm"]
    assert k["verdict"] == ONE_STEP and k["spread_us"] is None and k["diff_us"] == 2.0


def test_no_steps_in_either_compares_whole_traces():
    a = make([call("cudaLaunchKernel", 0, 1, corr=1), gpu("k", 5, 5, 1)])
    b = make([call("cudaLaunchKernel", 0, 1, corr=1), gpu("k", 5, 7, 1)])
    d = diff("a", a, "b", b)
    assert d.a.steps == ["whole trace"] and "compared whole" in d.notes[0]
    assert _rows(d.kernels)["k"]["diff_us"] == 2.0


def test_both_cpu_only_compares_cpu_time(tmp_path):
    text = diff_report(SYNTH / "cpu_only.json", SYNTH / "cpu_only.json")
    assert 'id="ops"' in text and 'id="kernels"' not in text and "no change" in text


# ------------------------------------------------------------------ real traces
def test_eager_against_compiled_matches_compare():
    a, b = load(EAGER), load(COMPILED)
    for keep, steps in ((False, ["ProfilerStep#2"]), (True, ["ProfilerStep#1", "ProfilerStep#2"])):
        d = diff(EAGER, a, COMPILED, b, keep_first=keep)
        assert d.a.steps == d.b.steps == steps
        m = {r[0]: r[1:] for r in compare(a, b, skip_first=not keep).metrics.rows}
        cpu = _rows(d.totals)["CPU (step range)"]
        assert cpu["a_per_step_us"] == pytest.approx(m["CPU time per step (us)"][0])
        assert cpu["b_per_step_us"] == pytest.approx(m["CPU time per step (us)"][1])
        got = {r[0]: (r[1], r[3]) for r in d.kernels.rows}
        per = compare(a, b, skip_first=not keep).kernels.rows
        for name, a_calls, a_us, _, _ in per[:5]:
            assert got[name][0] == round(a_calls * len(steps))
            assert got[name][1] == pytest.approx(a_us * len(steps))
    t = _rows(diff(EAGER, a, COMPILED, b).totals)
    assert t["GPU busy"]["a_us"] == pytest.approx(78.72, abs=0.01)
    assert t["GPU busy"]["b_us"] == pytest.approx(21.02, abs=0.01)
    assert t["GPU busy"]["verdict"] == ONE_STEP
    t = _rows(diff(EAGER, a, COMPILED, b, keep_first=True).totals)
    assert t["GPU busy"]["verdict"] == CHANGED  # 58 µs per step, spread 0.57 µs
    assert t["GPU busy"]["spread_us"] == pytest.approx(0.57, abs=0.01)
    assert len(diff(EAGER, a, COMPILED, b).only_a) == 21


def test_two_steps_against_one_compares_the_first_steps():
    d = diff(EAGER, load(EAGER), STACK, load(STACK))
    assert d.a.steps == d.b.steps == ["ProfilerStep#1"]
    assert any(n.startswith("B recorded one step only") for n in d.notes)
    assert "The step count changed: A has 2 step(s), B has 1." in what_changed(d)


# ------------------------------------------------------------------ the command
def test_cli_writes_one_offline_page(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = main(["report", str(EAGER), "--against", str(COMPILED)])
    assert rc == 0 and capsys.readouterr().out.strip() == "wrote diff.html"
    text = (tmp_path / "diff.html").read_text(encoding="utf-8")
    assert not REMOTE.search(text) and "http://" not in text and "https://" not in text
    for section in ("changed", "steps", "classes", "kernels", "ops"):
        assert f'id="{section}"' in text
    assert text.count('<table class="sortable">') == 7  # with the self CPU table
    assert "train_eager.json.gz → compile.json.gz" in text
    assert 'data-v="-57.69' in text  # GPU busy, B - A, in the totals
    # the bars share one scale: A's span 2,251 µs is 320 px, B's 596 µs is 85 px
    assert 'class="bar" style="width:320px"' in text and 'style="width:85px"' in text


def _cpu_only_copy(tmp_path):
    data = json.loads((SYNTH / "cpu_only.json").read_text())
    (tmp_path / "cpu.json").write_text(json.dumps(data))
    return tmp_path / "cpu.json"


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("missing", "no such file"),
        ("not a trace", "not a JSON trace"),
        ("cpu only", "has no GPU activity and the other trace has"),
        ("no common step", "no common step: train_eager.json.gz has 2 ProfilerStep(s)"),
        ("folder", "--against compares two trace files, not a folder"),
        ("peaks", "--peak-tbs: for one trace's report, not with --against"),
    ],
)
def test_bad_input_is_one_line(tmp_path, capsys, case, why):
    other = str(COMPILED)
    extra: list[str] = []
    base = str(EAGER)
    if case == "missing":
        other = str(tmp_path / "nope.json.gz")
    elif case == "not a trace":
        (tmp_path / "x.json").write_text("hello")
        other = str(tmp_path / "x.json")
    elif case == "cpu only":
        other = str(_cpu_only_copy(tmp_path))
    elif case == "no common step":
        (tmp_path / "flat.json").write_text(
            json.dumps(doc([call("cudaLaunchKernel", 0, 1, corr=1), gpu("k", 5, 5, 1)]))
        )
        other = str(tmp_path / "flat.json")
    elif case == "folder":
        base = str(H200)
    else:
        extra = ["--peak-tbs", "4.8"]
    out = tmp_path / "d.html"
    rc = main(["report", base, "--against", other, "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("tracereader: ") and err.count("\n") == 1, err
    assert why in err and "Traceback" not in err and not out.exists()


def test_keep_first_needs_against(tmp_path, capsys):
    rc = main(["report", str(EAGER), "--keep-first", "-o", str(tmp_path / "r.html")])
    assert rc == 2 and "--keep-first applies with --against" in capsys.readouterr().err


def test_compare_skip_first_on_the_command_line(capsys):
    assert main(["compare", str(EAGER), str(COMPILED), "--skip-first"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("eager vs compiled (first step left out)")
    assert "CPU time per step (us)  2,251.11    596.43  x0.26" in out


# ------------------------------------------------------------------ in a browser
def test_diff_page_sorts_offline_in_chromium(tmp_path, playwright):
    out = tmp_path / "d.html"
    out.write_text(diff_report(EAGER, COMPILED, keep_first=True), encoding="utf-8")
    with offline_page(out, playwright) as (page, requests, errors):
        table = page.locator("#kernels + div table")
        th = table.locator("th", has_text="diff_us")
        th.click()  # ascending: the largest gain first
        first = table.locator("tbody tr").first.locator("td").nth(5).get_attribute("data-v")
        th.click()
        last = table.locator("tbody tr").first.locator("td").nth(5).get_attribute("data-v")
    assert float(first) < 0 < float(last)
    assert errors == [] and outside(requests) == []


def test_files_of_one_name_are_told_apart_by_their_folders(tmp_path):
    for run in ("eager", "compiled"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "trace.json.gz").write_bytes(EAGER.read_bytes())
    text = diff_report(
        tmp_path / "eager" / "trace.json.gz", tmp_path / "compiled" / "trace.json.gz"
    )
    assert "tracereader diff: eager/trace.json.gz → compiled/trace.json.gz" in text
    assert "no change" in text and "changed</td>" not in text  # a trace against itself


def test_one_trace_report_says_its_total_includes_the_first_step():
    note = "The total includes the first step"
    assert note in report(EAGER, draw=False)  # two steps
    assert note not in report(STACK, draw=False)  # one step: nothing else to compare


def test_diff_sees_the_8b_decode_regression_the_overlapping_spans_hid():
    """Untuned -> tuned 8B decode (R-E2): each step launches ~4,100 then ~5,140 us of GPU
    work, a few µs apart. The old overlapping spans counted later steps' work again
    (8,854 -> 11,802 us per step, spread 3,612 us): "within the steps' spread"."""
    rec = ROOT / "docs" / "recordings" / "h200" / "05_llm_decode"
    a, b = (rec / v / "r0" / "trace.json.gz" for v in ("loop_untuned_8b", "loop_tuned_8b"))
    d = diff(a, load(a), b, load(b))
    busy = _rows(d.totals)["GPU busy"]
    assert busy["a_per_step_us"] == pytest.approx(4102.82, abs=0.01)
    assert busy["b_per_step_us"] == pytest.approx(5140.14, abs=0.01)
    assert busy["spread_us"] < 10.0
    assert busy["verdict"] == CHANGED
    changed = what_changed(d)
    assert changed[0] == ("B is 26 % slower per step (4,273.2 µs → 5,369.4 µs), more than the "
                          "spread between its 2 compared steps: a change.")  # fmt: skip
    assert changed[1].startswith("GPU busy per step: 4,102.8 µs → 5,140.1 µs (×1.25")


def test_eager_vs_compile_verdict_first_syncs_once_as_waiting():
    """B-R5 and R-E11 on Part 5's training step, eager -> compiled (one step each)."""
    rec = ROOT / "docs" / "recordings" / "h200" / "06_train_step"
    a, b = (rec / v / "r0" / "trace.json.gz" for v in ("eager", "compile"))
    if not a.exists():
        pytest.skip(f"{a} is not in this checkout")
    d = diff(a, load(a), b, load(b))
    changed = what_changed(d)
    assert changed[0] == ("B is 17 % faster per step (186.4 ms → 153.8 ms); one step each, so "
                          "the spread is unknown: record 5 or more steps (no line below can "
                          "be called a change).")  # fmt: skip
    assert not any(ONE_STEP in x for x in changed[1:])  # said once, in the verdict
    # the one .item() wait: once, as waiting, not three "More CPU time" rows
    assert ("CPU waiting for the GPU (host syncs: aten::item, .cpu(), synchronize) per step: "
            "59.9 ms → 89.0 ms. Waiting, not work:") in " ".join(changed)  # fmt: skip
    assert not any(n in x for x in changed if x.startswith("More")
                   for n in ("item", "_local_scalar_dense", "Synchronize"))  # fmt: skip
    # regressions first: attention x2.76 leads the list of changes
    first = next(x for x in changed if x.startswith(("More", "Less")))
    assert first == "More GPU time in B: class attention: 12.5 ms → 34.5 ms (×2.76, +22.0 ms)"
    assert changed.index(first) < min(k for k, x in enumerate(changed) if x.startswith("Less"))
    assert ("57 GPU op name(s) only in A (gone in B), by class: elementwise 35 (58.2 ms), "
            "reduction 16 (9,928.1 µs)") in " ".join(changed)  # fmt: skip
    assert d.waits_a == [pytest.approx(59927.2, abs=0.1)]  # the steps' syncs


def test_diff_page_says_which_side_looks_trimmed():
    """R-E12 on the diff page: loader_inline lost its loss and optimizer kernels."""
    rec = ROOT / "docs" / "recordings" / "h200" / "06_train_step"
    a, b = (rec / v / "r0" / "trace.json.gz" for v in ("eager", "loader_inline"))
    if not a.exists():
        pytest.skip(f"{a} is not in this checkout")
    text = diff_report(a, b)
    head = text[: text.index('id="changed"')]
    assert head.count("Incomplete: it looks trimmed") == 1
    b_side = head[head.index("<li><b>B</b>") :]
    assert "looks trimmed: 2 GPU-side record_function range(s) (loss 12.7 ms" in b_side
