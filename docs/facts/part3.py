"""Part 3's facts (``chapters/part3.md``): attention, from five kernels to one.

Every number the page quotes and every claim it makes about the recordings of
``04_attention``, computed by :mod:`part3_measures` (whose claim() calls check them) and
checked on every repeat. Numbers are medians over the repeats.
"""

from __future__ import annotations

import statistics
from typing import Any

import part3_measures as m
from _paste import paste_each_repeat
from tracesite import words
from tracesite.facts import Facts, claim

EXAMPLE = "04_attention"
GPUS = ("h200", "h100")


def facts(f: Facts) -> None:
    rec, recs, trace, num, md = f.rec, f.recs, f.trace, f.num, f.md

    num("n_repeats", len(recs("naive")))
    md("stamp", f.stamp())
    SHAPE = B, H, S, D = 8, 16, 1024, 64
    claim(
        [rec("naive").params[k] for k in ("batch", "heads", "seq", "head_dim")] == list(SHAPE),
        "the tensors have the shape the Hugging Face series used, (8, 16, 1024, 64)",
    )
    OUT_MIB = B * H * S * D * 2 / 2**20

    def peak_mib(v: str) -> float:  # extra memory of one forward: torch.cuda.max_memory_allocated
        return rec(v).timings()["peak_extra_bytes"] / 2**20  # type: ignore[index, no-any-return]

    def naive_facts() -> dict[str, Any]:  # this repeat's naive attention, by hand and in place
        return m.naive_facts(
            trace("naive"),
            trace("naive_inplace"),
            peak_mib("naive"),
            peak_mib("naive_inplace"),
            SHAPE,
        )

    # Where does attention written by hand spend its time?
    paste_each_repeat(
        f,
        naive_facts,
        num="naive_ops score_mib naive_us naive_gemm_pct fill_tbs mul_tbs naive_peak_mib ip_us "
        "ip_saved_pct",
    )

    # What does SDPA run, and which backend did PyTorch pick?
    BACKENDS = ("naive", "sdpa_default", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn")
    paste_each_repeat(
        f,
        lambda: m.backend_facts(
            {v: trace(v) for v in BACKENDS},
            {v: peak_mib(v) for v in BACKENDS},
            OUT_MIB,
            rec("sdpa_default").env["cudnn"],
        ),
        md="cudnn_version cudnn_kernel flash_kernel eff_kernel math_kernel",
        num="naive_x cudnn_us cudnn_peak flash_us flash_peak flash_x eff_us eff_peak eff_x "
        "math_us math_peak math_x",
    )

    # Why is the math backend slower than writing it by hand?
    def math() -> None:
        mf = m.math_facts(trace("sdpa_math"), trace("naive"))
        f.num_from(
            mf,
            "math_gap_us math_gemm_gap_pct math_gemm_us math_gemm_naive_us math_gemm_diff_us "
            "math_safe_us math_safe_naive_us math_safe_diff_us math_mask_us math_mask_naive_us "
            "math_mask_diff_us math_conv_us math_conv_naive_us math_conv_diff_us math_rest_us "
            "math_rest_naive_us math_rest_diff_us",
        )
        gemm, safe = float(mf["math_gemm_diff_us"]), float(mf["math_safe_diff_us"])
        if f.gpu == "h200":
            claim(gemm > safe, "on the H200 the fp32 GEMMs' share of the gap was the larger")
        if f.gpu == "h100":
            claim(safe > gemm, "on the H100 the safe softmax's share was the larger")

    f.repeats(math)

    # What does torch.compile make of the five steps?
    paste_each_repeat(
        f,
        lambda: m.compile_facts(
            trace("naive_compile"),
            trace("naive"),
            trace("sdpa_cudnn"),
            peak_mib("naive_compile"),
            SHAPE,
        ),
        num="c_total_us c_vs_naive c_vs_cudnn c_peak",
    )

    # Why does the fastest kernel read 0 % occupancy?
    paste_each_repeat(
        f,
        lambda: m.occupancy_facts(trace("sdpa_cudnn"), trace("sdpa_flash")),
        num="c_smem_kib f_occ",
    )

    # Which backend is fastest, and when does the CPU decide?
    sw_flash_lo: list[float] = []  # each repeat's; the page pastes their median, not its range

    def sweep() -> None:
        sw: dict[str, Any] = m.sweep_facts(m.sweep_table(rec("sweep").timings()))  # type: ignore[arg-type]
        num("n_shapes", sw["n_shapes"])
        sw_flash_lo.append(sw["sw_flash_lo"])

    f.repeats(sweep)
    num("sw_flash_lo", statistics.median(sw_flash_lo))

    def streams() -> None:
        kernel_us = {v: m.gpu_us(trace(f"sdpa_{v}")) for v in ("cudnn", "flash", "efficient")}
        st = m.stream_facts(
            rec("streams_backends").timings(),  # type: ignore[arg-type]
            rec("streams_small").timings(),  # type: ignore[arg-type]
            trace("streams_small"),
            kernel_us,
        )
        f.num_from(
            st,
            "calls_per_stream profiled_calls st_cudnn_cpu st_cudnn_wall sm_cudnn_cpu "
            "sm_cudnn_wall sm_cudnn_kernel st_flash_cpu st_flash_wall sm_flash_cpu sm_flash_wall "
            "sm_flash_kernel st_efficient_cpu st_efficient_wall sm_efficient_cpu "
            "sm_efficient_wall sm_efficient_kernel st_math_cpu st_math_wall sm_math_cpu "
            "sm_math_wall sm_math_kernel st_default_cpu st_default_wall sm_default_cpu "
            "sm_default_wall sm_default_kernel sm_cudnn_eff_x",
        )
        sb, ss = rec("streams_small").params, rec("streams_backends").params
        claim(
            [ss[k] for k in ("batch", "heads", "seq", "head_dim")] == list(SHAPE),
            "streams_backends times the calls at the series' shape",
        )
        md("small_shape", f"batch {sb['batch']}, {sb['heads']} heads, sequence {sb['seq']}")

    f.repeats(streams)

    # The two GPUs side by side: same Tensor Core peak and SMs, different memory bandwidth.
    tflops, tbs = m.PEAKS[f.gpu]
    num("peak_tflops", tflops)
    num("peak_tbs", tbs)

    def bandwidth() -> None:
        mul_tbs = naive_facts()["mul_tbs"]
        share = num("mul_bw_pct", 100 * float(mul_tbs) / tbs)
        claim(
            words.about(share, 90),
            "the scaling kernel moved the scores at about nine tenths of each GPU's "
            "datasheet bandwidth",
        )

    f.repeats(bandwidth)
    if f.gpu == "h100":  # every repeat of the H100 against every repeat of the H200
        h200 = f.on("h200")

        def each(fx: Facts, v: str) -> list[float]:
            return [m.gpu_us(r.trace()) for r in fx.recs(v)]

        for v in ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient"):
            claim(
                all(words.about(a, b) for a in each(f, v) for b in each(h200, v)),
                "each fused kernel took about the same time on both GPUs",
            )
        for v in ("naive", "naive_compile", "sdpa_math"):
            claim(
                words.beyond_spread(each(f, v), each(h200, v)),
                "the versions that write the scores to memory took longer on the H100, "
                "beyond the spread",
            )
