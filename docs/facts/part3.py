"""Part 3's facts (``chapters/part3.md``): attention, from five kernels to one.

Every number the page quotes and every claim it makes about the recordings of
``04_attention``, computed by :mod:`part3_measures` (whose asserts check the claims) and
checked on every repeat. Numbers are medians over the repeats.
"""

from __future__ import annotations

import statistics
from typing import Any

import part3_measures as m
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

    # Where does attention written by hand spend its time?
    def naive() -> None:
        nf = m.naive_facts(
            trace("naive"),
            trace("naive_inplace"),
            peak_mib("naive"),
            peak_mib("naive_inplace"),
            SHAPE,
        )
        num("naive_ops", nf["naive_ops"])
        num("score_mib", nf["score_mib"])
        num("naive_us", nf["naive_us"])
        num("naive_gemm_pct", nf["naive_gemm_pct"])
        num("fill_tbs", nf["fill_tbs"])
        num("mul_tbs", nf["mul_tbs"])
        num("naive_peak_mib", nf["naive_peak_mib"])
        num("ip_us", nf["ip_us"])
        num("ip_saved_pct", nf["ip_saved_pct"])

    f.repeats(naive)

    # What does SDPA run, and which backend did PyTorch pick?
    def backends() -> None:
        BACKENDS = (
            "naive",
            "sdpa_default",
            "sdpa_math",
            "sdpa_efficient",
            "sdpa_flash",
            "sdpa_cudnn",
        )
        b: dict[str, Any] = m.backend_facts(
            {v: trace(v) for v in BACKENDS},
            {v: peak_mib(v) for v in BACKENDS},
            OUT_MIB,
            rec("sdpa_default").env["cudnn"],
        )
        num("naive_x", b["naive_x"])
        num("cudnn_us", b["cudnn_us"])
        num("cudnn_peak", b["cudnn_peak"])
        num("flash_us", b["flash_us"])
        num("flash_peak", b["flash_peak"])
        num("flash_x", b["flash_x"])
        num("eff_us", b["eff_us"])
        num("eff_peak", b["eff_peak"])
        num("eff_x", b["eff_x"])
        num("math_us", b["math_us"])
        num("math_peak", b["math_peak"])
        num("math_x", b["math_x"])
        md("cudnn_version", b["cudnn_version"])
        md("cudnn_kernel", b["cudnn_kernel"])
        md("flash_kernel", b["flash_kernel"])
        md("eff_kernel", b["eff_kernel"])
        md("math_kernel", b["math_kernel"])

    f.repeats(backends)

    # Why is the math backend slower than writing it by hand?
    def math() -> None:
        mf = m.math_facts(trace("sdpa_math"), trace("naive"))
        num("math_gap_us", mf["math_gap_us"])
        num("math_gemm_gap_pct", mf["math_gemm_gap_pct"])
        num("math_gemm_us", mf["math_gemm_us"])
        num("math_gemm_naive_us", mf["math_gemm_naive_us"])
        num("math_gemm_diff_us", mf["math_gemm_diff_us"])
        num("math_safe_us", mf["math_safe_us"])
        num("math_safe_naive_us", mf["math_safe_naive_us"])
        num("math_safe_diff_us", mf["math_safe_diff_us"])
        num("math_mask_us", mf["math_mask_us"])
        num("math_mask_naive_us", mf["math_mask_naive_us"])
        num("math_mask_diff_us", mf["math_mask_diff_us"])
        num("math_conv_us", mf["math_conv_us"])
        num("math_conv_naive_us", mf["math_conv_naive_us"])
        num("math_conv_diff_us", mf["math_conv_diff_us"])
        num("math_rest_us", mf["math_rest_us"])
        num("math_rest_naive_us", mf["math_rest_naive_us"])
        num("math_rest_diff_us", mf["math_rest_diff_us"])
        gemm, safe = float(mf["math_gemm_diff_us"]), float(mf["math_safe_diff_us"])
        if f.gpu == "h200":
            claim(gemm > safe, "on the H200 the fp32 GEMMs' share of the gap was the larger")
        if f.gpu == "h100":
            claim(safe > gemm, "on the H100 the safe softmax's share was the larger")

    f.repeats(math)

    # What does torch.compile make of the five steps?
    def compiled() -> None:
        c = m.compile_facts(
            trace("naive_compile"),
            trace("naive"),
            trace("sdpa_cudnn"),
            peak_mib("naive_compile"),
            SHAPE,
        )
        num("c_total_us", c["c_total_us"])
        num("c_vs_naive", c["c_vs_naive"])
        num("c_vs_cudnn", c["c_vs_cudnn"])
        num("c_peak", c["c_peak"])

    f.repeats(compiled)

    # Why does the fastest kernel read 0 % occupancy?
    def occupancy() -> None:
        occ = m.occupancy_facts(trace("sdpa_cudnn"), trace("sdpa_flash"))
        num("c_smem_kib", occ["c_smem_kib"])
        num("f_occ", occ["f_occ"])

    f.repeats(occupancy)

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
        num("calls_per_stream", st["calls_per_stream"])
        num("profiled_calls", st["profiled_calls"])
        num("st_cudnn_cpu", st["st_cudnn_cpu"])
        num("st_cudnn_wall", st["st_cudnn_wall"])
        num("sm_cudnn_cpu", st["sm_cudnn_cpu"])
        num("sm_cudnn_wall", st["sm_cudnn_wall"])
        num("sm_cudnn_kernel", st["sm_cudnn_kernel"])
        num("st_flash_cpu", st["st_flash_cpu"])
        num("st_flash_wall", st["st_flash_wall"])
        num("sm_flash_cpu", st["sm_flash_cpu"])
        num("sm_flash_wall", st["sm_flash_wall"])
        num("sm_flash_kernel", st["sm_flash_kernel"])
        num("st_efficient_cpu", st["st_efficient_cpu"])
        num("st_efficient_wall", st["st_efficient_wall"])
        num("sm_efficient_cpu", st["sm_efficient_cpu"])
        num("sm_efficient_wall", st["sm_efficient_wall"])
        num("sm_efficient_kernel", st["sm_efficient_kernel"])
        num("st_math_cpu", st["st_math_cpu"])
        num("st_math_wall", st["st_math_wall"])
        num("sm_math_cpu", st["sm_math_cpu"])
        num("sm_math_wall", st["sm_math_wall"])
        num("sm_math_kernel", st["sm_math_kernel"])
        num("st_default_cpu", st["st_default_cpu"])
        num("st_default_wall", st["st_default_wall"])
        num("sm_default_cpu", st["sm_default_cpu"])
        num("sm_default_wall", st["sm_default_wall"])
        num("sm_default_kernel", st["sm_default_kernel"])
        num("sm_cudnn_eff_x", st["sm_cudnn_eff_x"])
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
        mul_tbs = m.naive_facts(
            trace("naive"),
            trace("naive_inplace"),
            peak_mib("naive"),
            peak_mib("naive_inplace"),
            SHAPE,
        )["mul_tbs"]
        share = num("mul_bw_pct", 100 * float(mul_tbs) / tbs)
        claim(
            words.about(share, 90),
            "the scaling kernel moved the scores at about nine tenths of each GPU's "
            "datasheet bandwidth",
        )

    f.repeats(bandwidth)
    if f.gpu == "h100":  # every repeat of the H100 against every repeat of the H200
        h200 = Facts(f.page, EXAMPLE, "h200")

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
