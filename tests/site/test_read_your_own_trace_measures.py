"""docs/read_your_own_trace_measures.py against the real recordings: the page's cells run in
order, as the build runs them, on the module (every claim holds and every number the text
shows is glued); the checks the module runs on every repeat, repeat by repeat; and those
checks failing, with a message that says why, on data that breaks the claim."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import tracesite.notebook as nb
from tracesite.recordings import load

import tracereader

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = DOCS / "read-your-own-trace.md"


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def rt(monkeypatch_module: pytest.MonkeyPatch) -> Any:
    monkeypatch_module.syspath_prepend(str(DOCS))
    import read_your_own_trace_measures

    return read_your_own_trace_measures


@pytest.fixture(scope="module")
def page(rt: Any, monkeypatch_module: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every code cell of the page, in order, in one namespace (as the build's kernel runs
    them); returns that namespace and what the cells glued."""
    import matplotlib
    import site_downloads
    from myst_nb.core.read import read_myst_markdown_notebook

    matplotlib.use("Agg")
    mp = monkeypatch_module
    mp.chdir(DOCS)  # where the page runs; put back after (setup() moves to its scratch folder)
    mp.setenv("PYTHONPATH", "")  # likewise: setup() adds the tracereader the page imported
    # The downloads are built by the docs build, not here.
    mp.setattr(site_downloads, "links_markdown", lambda site_root: "- the downloads")
    glued: dict[str, Any] = {}
    mp.setattr(nb, "_glue", glued.__setitem__)  # no notebook to glue into
    cells = read_myst_markdown_notebook(PAGE.read_text(encoding="utf-8")).cells
    ns: dict[str, Any] = {"__name__": "__page__"}
    for cell in cells:
        if cell.cell_type == "code":
            exec(compile(cell.source, str(PAGE), "exec"), ns)
    return ns, glued


def test_the_page_runs_and_glues_every_number_it_shows(page, rt):
    ns, glued = page
    text = PAGE.read_text(encoding="utf-8")
    shown = set(re.findall(r"\{glue:(?:text|md)\}`([a-z0-9_]+)", text))
    shown |= set(re.findall(r"```\{glue:md\} ([a-z0-9_]+)", text))
    assert shown and shown <= set(glued), sorted(shown - set(glued))
    assert glued["downloads"].data == "- the downloads"
    assert glued["mine_steps"].data == "`ProfilerStep#2`, `ProfilerStep#3`, `ProfilerStep#4`"
    assert glued["n_steps"] == 3 and glued["n_gaps"] == glued["n_gpu_ops"] - 1
    assert glued["big_verdicts"].data == "balanced, GPU-bound, GPU-bound"
    # The names the reader's own cells left behind are the ones the module checked.
    assert ns["facts"]["gpu_busy_us"] == ns["S"]["gpu_busy_us"]
    assert ns["longest"].to_dict(ns["trace"]) == ns["G"]["gaps"][0]
    assert set(ns["runs"]) == set(rt.ADDS)
    assert Path.cwd() == rt.WORK


def test_options_table_has_a_row_per_option(page, rt):
    ns, _ = page
    table = rt.options_table(ns["runs"]).data.splitlines()
    assert len(table) == 2 + len(rt.ADDS)
    assert table[2].startswith("| (none) | ops, runtime calls, your ranges | ")
    assert table[5].startswith("| `with_stack` | a `python_function` event per Python call | ")


@pytest.mark.parametrize("name", ["64_bf16", "4096_bf16"])
def test_verdicts_follow_the_rule_on_every_repeat(rt, name):
    for rep in load(rt.EXAMPLE, name).repeats:
        rt.check_verdicts(tracereader.summary(rep.trace())["step_times"])


def test_a_verdict_against_the_rule_fails_clearly(rt):
    steps = copy.deepcopy(tracereader.summary(rt.RECS["64_bf16"].trace())["step_times"])
    steps[1]["verdict"] = "GPU-bound"
    with pytest.raises(AssertionError, match=r"ProfilerStep#3: GPU busy for [0-9.]+ % of its "
                       r"span reads CPU-bound, not GPU-bound"):  # fmt: skip
        rt.check_verdicts(steps)


def test_launch_to_start_is_call_plus_queue_on_every_repeat(rt):
    for rep in rt.VARIANTS["64_bf16"].repeats:
        per_op = tracereader.launches(rep.trace()).to_records()
        assert len(per_op) == 6
        rt.check_launch_sum(per_op)
    per_op[0]["queue_delay_us"] += 1.0
    with pytest.raises(AssertionError, match=r"launch-to-start .* µs is not call .* µs \+ queue"):
        rt.check_launch_sum(per_op)


def test_launch_apis_by_kernel_on_every_repeat(rt):
    for rep in rt.VARIANTS["64_bf16"].repeats:
        per_op = tracereader.launches(rep.trace()).to_records()
        rt.check_launch_apis(per_op)
    gemm = next(r for r in per_op if r["name"].startswith("nvjet"))
    gemm["api"] = "cudaLaunchKernel"  # one GEMM through the add's API: both APIs still appear
    with pytest.raises(AssertionError, match=r"the GEMM goes through cuLaunchKernelEx, the add"):
        rt.check_launch_apis(per_op)


def test_gaps_claims_on_every_repeat(rt):
    for rep in rt.VARIANTS["64_bf16"].repeats:
        gs = [x.to_dict(rep.trace()) for x in tracereader.gaps(rep.trace())]
        rt.check_gaps(gs)
    # the longest gap still comes before a GEMM, but an add's gap outgrows the other GEMM's
    gemm = sorted(x["gap_us"] for x in gs if x["next_op_name"].startswith("nvjet"))
    add = next(x for x in gs if "elementwise" in x["next_op_name"])
    add["gap_us"] = (gemm[0] + gemm[-1]) / 2
    with pytest.raises(AssertionError, match=r"the gaps before the GEMMs are the longest"):
        rt.check_gaps(gs)


def test_regions_claims_on_every_repeat(rt):
    for rep in rt.TRAIN.repeats:
        f = rt.check_regions(rep.trace())
        assert f["bwd_us"] > 2 * f["fwd_us"] > 0
        assert 0 <= f["ops_bwd_us"] < 0.01 * f["bwd_us"]


def test_regions_on_a_trace_without_a_training_step_fails_clearly(rt):
    with pytest.raises(AssertionError, match=r"expected the regions \['data', 'forward', "):
        rt.check_regions(rt.RECS["64_bf16"].trace())


def test_after_last_step(rt):
    assert "cudaDeviceSynchronize" in rt.after_last_step(rt.RECS["64_bf16"].trace())
    assert "cudaDeviceSynchronize" in rt.after_last_step(rt.RECS["4096_bf16"].trace())
