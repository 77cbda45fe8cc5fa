"""Part 1's facts (``chapters/part1.md``): one matmul and one add, read on an H200.

Every number the page quotes and every claim it makes about the recordings of
``01_matmul_add``, computed by :mod:`part1_measures` (each ``*_facts`` function checks
its claims) and checked on every repeat. :func:`check_op_table`, which only this page
uses, lives here, and the readers of the measures its notes read too (:func:`offsets`...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import part1_measures as m
from tracesite import words
from tracesite.facts import Facts, claim

import tracereader
from tracereader import Kind, Trace, link, op_table, step_times

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")


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
    claim(
        top["name"] == "matmul_add" and top["self_cpu_us"] == 0,
        "its first row, matmul_add with no CPU time, is not GPU work",
    )
    claim(
        top["self_cuda_us"] > totals["self_cuda_us"],
        "its Self CUDA exceeds the table's GPU total",
    )
    claim(
        len(t64.where(kind=Kind.GPU_ANNOTATION, name="matmul_add")) == len(t64.steps),
        "it is your label's GPU-side span (a gpu_user_annotation), one per step",
    )
    ops = {row["name"]: row for row in op_table(t64).to_records()}
    claim(
        ops["matmul_add"]["self_gpu_us"] == 0,
        "tracereader computes the same table from the trace file alone (without the label row)",
    )
    theirs = {
        str(r["name"]): float(r["self_cpu_us"])
        for r in profiler_rows
        if str(r["name"]).startswith("aten::")
        or r["name"] in ("cudaLaunchKernel", "cuLaunchKernelEx")
    }
    claim(len(theirs) >= 4, "the profiler's table has at least four aten:: and launch rows")
    for name, self_us in theirs.items():
        claim(
            abs(ops[name]["self_cpu_us"] - self_us) < 0.01,
            f"{name}: tracereader computes the same table from the trace file alone",
        )


# Measures the page and its notes both read, on the same recordings of this repeat: each
# page pastes its own keys of what they return.


def offsets(f: Facts) -> dict[str, Any]:
    """The GPU lane's late start, warm, cold and unwaited (``offset_facts``)."""
    t = f.trace
    return m.offset_facts(
        t("64_bf16"), t("64_bf16_cold"), t("64_bf16_nowait"), t("64_bf16_20steps_cold")
    )


def lane_offset(f: Facts) -> dict[str, Any]:
    """This repeat's late GPU lane, in one dict: the lane offset (:func:`offsets`), the
    Activity Buffer Request's share of it (``request_share_facts``) and what every
    recording's profiled window shows (``window_facts``)."""
    return {
        **offsets(f),
        **m.request_share_facts(f.trace("peaks")),
        **m.window_facts(recordings=[(f.trace(n), f.rec(n).meta) for n in m.VARIANTS]),
    }


def call_chain(f: Facts) -> dict[str, Any]:
    """From the Python call to the kernel, plain and batched (``chain_facts``)."""
    return m.chain_facts(f.trace("64_bf16"), f.trace("64_bf16_batch8"))


def launch_calls(f: Facts) -> dict[str, Any]:
    """The calls before each GEMM launch (``launch_call_facts``)."""
    t = f.trace
    others = [t(n) for n in ("4096_fp32_tf32", "4096_bf16_compile", "peaks")]
    return m.launch_call_facts(
        t("64_bf16"), t("4096_bf16"), t("4096_fp32"), t("4096_fp32_tf32"), others=others
    )


def gemm_speed(f: Facts) -> dict[str, Any]:
    """The kernels' rates against the peaks (``speed_facts``)."""
    t = f.trace
    return m.speed_facts(t("peaks"), t("64_bf16"), t("4096_bf16_20steps"), t("4096_bf16"))


def first_step_costs(f: Facts) -> dict[str, Any]:
    """The first step against the later ones, cold and warm (``first_step_facts``)."""
    t = f.trace
    return m.first_step_facts(
        t("64_bf16_20steps_cold"),
        t("64_bf16_20steps"),
        t("64_bf16_cold"),
        warm_meta=f.rec("64_bf16_20steps").meta,
    )


def closing_sync(f: Facts) -> dict[str, Any]:
    """The closing synchronize of each step (``sync_facts``)."""
    t = f.trace
    return m.sync_facts(t("64_bf16"), t("4096_bf16"), t("4096_fp32"), t("64_bf16_cold"))


def cold_table(f: Facts) -> dict[str, Any]:
    """The cold process's op table (``cold_table_facts``)."""
    return m.cold_table_facts(
        f.trace("64_bf16_cold"), totals_cold=f.rec("64_bf16_cold").table_totals_us()
    )


def compiled(f: Facts) -> dict[str, Any]:
    """What torch.compile changes (``compile_facts``), its recordings checked to come from
    one process with the eager one's (``same_process``)."""
    t = f.trace
    m.same_process(
        [f.rec("64_bf16").meta, f.rec("64_bf16_compile").meta], "64_bf16", "64_bf16_compile"
    )
    return m.compile_facts(
        t("64_bf16"),
        t("64_bf16_compile"),
        t("64_bf16_addmm"),
        t("64_bf16_reduce_overhead"),
        t("4096_bf16_compile"),
    )


def interleaved(f: Facts) -> dict[str, Any]:
    """The versions' calls interleaved, profiled and as the harness timed them unprofiled
    (``interleaved_facts``)."""
    timings: Any = f.rec("interleaved_64").timings()
    return m.interleaved_facts(f.trace("interleaved_64"), bare=timings["calls"])


def facts(f: Facts) -> None:
    rec, recs, num, md, recorded = f.rec, f.recs, f.num, f.md, f.trace

    envs = {
        (r.env["gpu"], r.env["driver"], r.env["torch"], r.env["cuda"])
        for n in m.STAMPED
        for r in recs(n)
    }
    claim(len(envs) == 1, "every recording of the example ran on one GPU, driver, torch and CUDA")
    props = recorded("4096_bf16_20steps").device_properties[0]
    claim(props["numSms"] == m.N_SMS, "SMs: 132 on both our GPUs")
    sheet = tracereader.datasheet(str(props["name"]))
    claim(sheet is not None and sheet.bf16_tflops == 989, "989 TFLOP/s on the H200 and H100 SXM")
    assert sheet is not None  # (for the type checker: the claim above holds it)
    spec_tbs = sheet.hbm_tbs
    num("spec_tbs", spec_tbs)
    md("sheet_gpu", sheet.gpu)
    num("n_repeats", len(recs("64_bf16")))
    # f.stamp() reads the H200's folder whatever f.gpu is: the H100's line is its own.
    stamp_h100 = rec("64_bf16").stamp_line().split(" (repeat")[0]
    md("stamp", f.stamp() if f.gpu == "h200" else stamp_h100)
    md("gpu", rec("64_bf16").env["gpu"])

    # How do you profile one line of code? Is the step waiting for the GPU, or for the CPU?
    def table_and_lanes() -> None:
        export = m.export_facts(recorded("64_bf16"), recorded("64_bf16_export_after"))
        num("n_after", export["n_after"])
        table = m.table_facts(
            recorded("64_bf16"),
            recorded("4096_bf16"),
            totals64=rec("64_bf16").table_totals_us(),
            totals4k=rec("4096_bf16").table_totals_us(),
        )
        f.num_from(table, "cpu64 gpu64 gpu4k steps64 steps4k pct64 pct4k gpu_growth flops_ratio")
        check_op_table(
            recorded("64_bf16"), rec("64_bf16").table_rows(), rec("64_bf16").table_totals_us()
        )
        lane = m.lane_facts(recorded("64_bf16"))
        num("l2s_end", lane["l2s_end"])

    f.repeats(table_and_lanes)

    # Your GPU, not ours: the last 64x64 step on each GPU (pasted per GPU, h100_ for the
    # H100): the GPU's few µs against the step's CPU time.
    def small_step_by_gpu() -> None:
        st = step_times(recorded("64_bf16"))
        claim(
            all(s.verdict == "CPU-bound" for s in st),
            "the 64x64 run is CPU-bound: every step of every repeat, on both GPUs",
        )
        last = st[-1]
        claim(words.few_us(last.gpu_busy_us), "the GPU's kernels take a few µs of the small step")
        claim(
            last.gpu_idle_us > 0.9 * last.span_us,
            "the rest of the small step is the host CPU: the GPU idle over 90 % of it",
        )
        num("gpustep_cpu64", last.cpu_us)
        num("gpustep_busy64", last.gpu_busy_us)
        num("gpustep_idle64", 100 * last.gpu_idle_us / last.span_us)

    f.repeats(small_step_by_gpu)

    lanes = m.lane_facts(recorded("64_bf16"))  # the first recording: what the cells print
    num("step_cpu_first", lanes["step_cpu"])
    num("step_gpu_first", lanes["step_gpu"])
    num("l2s_end_first", lanes["l2s_end"])
    ops0 = {r["name"]: r for r in op_table(recorded("64_bf16")).to_records()}
    num("matmul_self_first", ops0["aten::matmul"]["self_cpu_us"])
    num("matmul_total_first", ops0["aten::matmul"]["total_cpu_us"])

    # How does a Python call become a kernel?
    def chain() -> None:
        ch = call_chain(f)
        md("chain", ch["chain"])
        md("add_chain", ch["add_chain"])
        md("batch_ops", ch["batch_ops"])
        num("batch_kernels", ch["batch_kernels"])
        calls = launch_calls(f)
        md("c64", calls["c64"])

    f.repeats(chain)

    # Is the kernel fast?
    def speed() -> None:
        sp = gemm_speed(f)
        f.num_from(
            sp,
            "peak_tflops peak_tbs peak_pct g64_us g4k_us gemm_time_ratio r64_tflops r4k_tflops "
            "r64_pct r4k_pct blocks64 sm_bound add64_us add_tbs",
        )
        # The H100's add beats its datasheet's bandwidth, so some of its bytes came from L2.
        beats = float(sp["add_tbs"]) > spec_tbs
        claim(
            beats == (f.gpu == "h100"),
            "the add moved less than the datasheet's memory bandwidth on the H200, more on the H100",
        )
        if f.gpu == "h200":  # the page's words for the H200's add; the H100's beat its copy more
            claim(
                words.a_little(sp["add_tbs"], sp["peak_tbs"]),
                "on the H200 the add moved a little more than the large copy",
            )
        dist = m.distribution_facts(recorded("4096_bf16_20steps"))
        f.num_from(dist, "k20_n k20_med k20_spread gemm_speedup a100_gemm")

    f.repeats(speed)

    # Why is the first step slow?
    def first_step() -> None:
        f.num_from(
            first_step_costs(f),
            "cold_first cold_rest warm_first warm_rest cold_ratio warm_ratio gap2 gap3",
        )

    f.repeats(first_step)

    # Is a late kernel the GPU's fault?
    def late_kernel() -> None:
        f.num_from(
            lane_offset(f), "off_warm l2s_warm n_abr pk_off_ms pk_share idle_sync_min idle_sync_max"
        )
        f.num_from(
            closing_sync(f),
            "s64_us s64_busy s4k_us s4k_busy s64c_us s64c_busy a100_sync_pct l2s32_ms",
        )

    f.repeats(late_kernel)

    off = offsets(f)
    num("off_warm_first", off["off_warm"])
    num("l2s_warm_first", off["l2s_warm"])

    # What does torch.compile change, and what does it not?
    def compile_() -> None:
        num("c_ops", compiled(f)["c_ops"])
        f.num_from(interleaved(f), "c_over_e u_c_over_e u_r_over_e")
        f.num_from(cold_table(f), "cold_pct_work a100_pct_work cold_cpu64")
        # What to do: compare GPU time per step, not the op count. At 4096 the fused Triton
        # GEMM runs fewer GPU ops per step than eager, yet no less GPU time (more, on the H100).
        eager, fused = recorded("4096_bf16"), recorded("4096_bf16_triton_gemm")
        n_eager = len(link(eager).gpu_ops) / len(eager.steps)
        n_fused = len(link(fused).gpu_ops) / len(fused.steps)
        claim(
            n_fused < n_eager and m.gpu_us_per_step(fused) > 0.97 * m.gpu_us_per_step(eager),
            "fewer GPU operations per step did not mean less GPU time per step: the count "
            "only tells whether anything was fused",
        )

    f.repeats(compile_)

    # Cold against warm Self CPU totals (P1-7): the totals include the closing synchronize
    # and move between processes; over the repeats the two ranges overlap on both GPUs.
    cold_tot = [r.table_totals_us()["self_cpu_us"] for r in recs("64_bf16_cold")]
    warm_tot = [r.table_totals_us()["self_cpu_us"] for r in recs("64_bf16")]
    claim(
        min(cold_tot) <= max(warm_tot) and min(warm_tot) <= max(cold_tot),
        "the cold and warm Self CPU totals' ranges over the repeats overlap",
    )
