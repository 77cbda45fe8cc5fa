"""Part 1's facts (``chapters/part1.md``): one matmul and one add, read on an H200.

Every number the page quotes and every claim it makes about the recordings of
``01_matmul_add``, computed by :mod:`part1_measures` (each ``*_facts`` function asserts
its claims) and checked on every repeat. :func:`check_op_table`, which only this page
uses, lives here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import part1_measures as m
from _part1_common import glue_measure
from tracesite.facts import Facts, claim

from tracereader import Kind, Trace, op_table

EXAMPLE = "01_matmul_add"


def check_op_table(
    t64: Trace, profiler_rows: Sequence[dict[str, Any]], totals: dict[str, float]
) -> None:
    """tracereader's op table, computed from the trace, agrees with the profiler's own.

    The profiler's first row is the label's GPU-side span (a ``gpu_user_annotation``): no
    CPU time, and more "Self CUDA" than the whole table's GPU total, since it runs from the
    first kernel the label launched to the last, idle time included. tracereader leaves it
    out of the GPU columns.
    """
    top = profiler_rows[0]
    assert top["name"] == "matmul_add" and top["self_cpu_us"] == 0
    assert top["self_cuda_us"] > totals["self_cuda_us"]
    assert len(t64.where(kind=Kind.GPU_ANNOTATION, name="matmul_add")) == len(t64.steps)
    ops = {row["name"]: row for row in op_table(t64).to_records()}
    assert ops["matmul_add"]["self_gpu_us"] == 0
    theirs = {
        str(r["name"]): float(r["self_cpu_us"])
        for r in profiler_rows
        if str(r["name"]).startswith("aten::")
        or r["name"] in ("cudaLaunchKernel", "cuLaunchKernelEx")
    }
    assert len(theirs) >= 4
    for name, self_us in theirs.items():
        assert abs(ops[name]["self_cpu_us"] - self_us) < 0.01, name


def facts(f: Facts) -> None:
    rec, recs, num, md, recorded = f.rec, f.recs, f.num, f.md, f.trace
    glue = glue_measure(f)  # the page's facts() helper: a measure's values under its keys

    envs = {
        (r.env["gpu"], r.env["driver"], r.env["torch"], r.env["cuda"])
        for n in m.STAMPED
        for r in recs(n)
    }
    claim(len(envs) == 1, "every recording of the example ran on one GPU, driver, torch and CUDA")
    num("n_repeats", len(recs("64_bf16")))
    md("stamp", f.stamp())
    md("gpu", rec("64_bf16").env["gpu"])

    # How do you profile one line of code? Is the step waiting for the GPU, or for the CPU?
    def table_and_lanes() -> None:
        glue(m.export_facts, "64_bf16", "64_bf16_export_after")
        glue(
            m.table_facts,
            "64_bf16",
            "4096_bf16",
            totals64=rec("64_bf16").table_totals_us(),
            totals4k=rec("4096_bf16").table_totals_us(),
        )
        check_op_table(
            recorded("64_bf16"), rec("64_bf16").table_rows(), rec("64_bf16").table_totals_us()
        )
        glue(m.lane_facts, "64_bf16")

    f.repeats(table_and_lanes)

    glue(m.lane_facts, "64_bf16", suffix="_first")  # the first recording: what the cells print
    ops0 = {r["name"]: r for r in op_table(recorded("64_bf16")).to_records()}
    num("matmul_self_first", ops0["aten::matmul"]["self_cpu_us"])
    num("matmul_total_first", ops0["aten::matmul"]["total_cpu_us"])

    # How does a Python call become a kernel?
    def chain() -> None:
        glue(m.chain_facts, "64_bf16", "64_bf16_batch8")
        others = [recorded(n) for n in ("4096_fp32_tf32", "4096_bf16_compile", "peaks")]
        glue(
            m.launch_call_facts,
            "64_bf16",
            "4096_bf16",
            "4096_fp32",
            "4096_fp32_tf32",
            others=others,
        )

    f.repeats(chain)

    # Is the kernel fast?
    def speed() -> None:
        glue(m.speed_facts, "peaks", "64_bf16", "4096_bf16_20steps", "4096_bf16")
        glue(m.distribution_facts, "4096_bf16_20steps")

    f.repeats(speed)

    # Why is the first step slow?
    def first_step() -> None:
        glue(
            m.first_step_facts,
            "64_bf16_20steps_cold",
            "64_bf16_20steps",
            "64_bf16_cold",
            warm_meta=rec("64_bf16_20steps").meta,
        )

    f.repeats(first_step)

    # Is a late kernel the GPU's fault?
    def late_kernel() -> None:
        glue(m.offset_facts, "64_bf16", "64_bf16_cold", "64_bf16_nowait", "64_bf16_20steps_cold")
        glue(m.sync_facts, "64_bf16", "4096_bf16", "4096_fp32", "64_bf16_cold")
        glue(m.window_facts, recordings=[(recorded(n), rec(n).meta) for n in m.VARIANTS])

    f.repeats(late_kernel)

    glue(
        m.offset_facts,
        "64_bf16",
        "64_bf16_cold",
        "64_bf16_nowait",
        "64_bf16_20steps_cold",
        suffix="_first",
    )

    # What does torch.compile change, and what does it not?
    def compile_() -> None:
        glue(
            m.compile_facts,
            "64_bf16",
            "64_bf16_compile",
            "64_bf16_addmm",
            "64_bf16_reduce_overhead",
            "4096_bf16_compile",
        )
        timings: Any = rec("interleaved_64").timings()  # what the harness timed, unprofiled
        glue(m.interleaved_facts, "interleaved_64", bare=timings["calls"])
        glue(m.cold_table_facts, "64_bf16_cold", totals_cold=rec("64_bf16_cold").table_totals_us())
        m.same_process(
            [rec("64_bf16").meta, rec("64_bf16_compile").meta], "64_bf16", "64_bf16_compile"
        )

    f.repeats(compile_)
