"""Part 3's lab notes' facts (``chapters/part3-notes.md``): the evidence behind Part 3.

Every number the notes quote and every claim they make about the recordings of
``04_attention``, computed with :mod:`part3_measures` and checked on every repeat.
Numbers are medians over the repeats, with their range beside them.
"""

from __future__ import annotations

import statistics

import numpy as np
import part3_measures as m
from tracesite import words
from tracesite.facts import Facts, claim

from tracereader import Kind

EXAMPLE = "04_attention"
GPUS = ("h200", "h100")


def facts(f: Facts) -> None:
    rec, recs, trace, num, md = f.rec, f.recs, f.trace, f.num, f.md

    num("n_repeats", len(recs("naive")))
    md("stamp", rec("naive").stamp_line().split(" (repeat")[0])

    # Each repeat's value of a number the page pastes as a median alone, without its range
    # (its key ends in _lo or _hi already): pasted by paste_alone() after the repeats.
    alone: dict[str, list[float]] = {}

    def median_alone(key: str, value: float) -> None:
        alone.setdefault(key, []).append(value)

    def paste_alone() -> None:
        for key, values in alone.items():
            num(key, statistics.median(values))
        alone.clear()

    # Occupancy, by hand
    def occupancy() -> None:
        recs_ = {
            k: m.kernel_record(trace(v))
            for k, v in (("c", "sdpa_cudnn"), ("f", "sdpa_flash"), ("e", "sdpa_efficient"))
        }
        hand = {f"{k}_{name}": x for k, r in recs_.items() for name, x in m.by_hand(r).items()}
        f.num_from(
            hand,
            "c_shared_mem c_grid c_block c_theory c_blocks f_registers f_occupancy_pct f_block "
            "f_theory f_blocks f_block_regs e_registers e_shared_mem e_occupancy_pct e_theory",
        )
        claim(
            recs_["f"]["registers"] == 255 and recs_["f"]["shared_mem"] == 48 * 1024,
            "flash's kernel uses 255 registers per thread and 48 KiB of shared memory",
        )
        for key in ("f", "e"):
            claim(
                abs(m.theoretical_pct(recs_[key]) - recs_[key]["occupancy_pct"]) <= 1,
                "flash's and efficient's occupancy by hand is the trace's",
            )
        claim(
            m.theoretical_pct(recs_["c"]) == 18.75 and recs_["c"]["occupancy_pct"] == 0,
            "cuDNN's kernel: by hand 18.75 %, but the trace says 0 %",
        )
        # every large kernel over 48 KB reads 0 %, every other one a value
        big: list[int] = []
        small: list[int] = []
        for v in (
            "naive",
            "naive_compile",
            "sdpa_cudnn",
            "sdpa_flash",
            "sdpa_efficient",
            "sdpa_math",
        ):
            tr = trace(v)
            for g in tr.where(kind=Kind.KERNEL):
                if tr.extra["grid"][g] >= 132:
                    (big if tr.extra["shared_mem"][g] > 49152 else small).append(
                        int(tr.extra["occupancy_pct"][g])
                    )
        claim(
            set(big) == {0} and min(small) > 0,
            "every large kernel above that limit reads 0 % and every one at or below it "
            "reads a value",
        )
        for r in recs_.values():  # Kineto's cap min(blocks, grid / SMs) does not bind
            claim(
                r["grid"] / 132 >= m.blocks_per_sm(r) or r["occupancy_pct"] == 0,
                "for these three kernels Kineto's cap of the blocks per SM does not bind",
            )

    f.repeats(occupancy)

    # The sweep: method, rates and memory
    def sweep() -> None:
        t = m.sweep_table(rec("sweep").timings())  # type: ignore[arg-type]
        shapes = sorted({(d, s) for (_, d, s) in t})
        for lo, hi, a, b in (
            ("sw_flash_lo", "sw_flash_hi", "flash", "cudnn"),
            ("sw_eff_lo", "sw_eff_hi", "efficient", "flash"),
            ("sw_math_naive_lo", "sw_math_naive_hi", "math", "naive"),
            ("sw_naive_cudnn_lo", "sw_naive_cudnn_hi", "naive", "cudnn"),
        ):
            r = [t[a, d, s][0] / t[b, d, s][0] for d, s in shapes]
            median_alone(lo, min(r))
            median_alone(hi, max(r))
        best = max(shapes, key=lambda ds: m.tflops(t, "cudnn", *ds))
        num("sw_best", m.tflops(t, "cudnn", *best))
        num("sw_best_pct", 100 * m.tflops(t, "cudnn", *best) / m.PEAKS[f.gpu][0])
        for impl in ("cudnn", "flash", "efficient"):
            for d in (64, 128):
                claim(
                    m.tflops(t, impl, d, 8192) > 1.1 * m.tflops(t, impl, d, 512),
                    "the fused backends' rates grow with the sequence",
                )
            claim(
                all(m.tflops(t, impl, 128, s) > m.tflops(t, impl, 64, s) for _, s in shapes),
                "and with head dimension 128",
            )
        claim(
            all(m.tflops(t, "naive", d, 8192) < m.tflops(t, "naive", d, 512) for d in (64, 128)),
            "the naive version's rate falls",
        )
        d_ratio = [t["default", d, s][0] / t["cudnn", d, s][0] for d, s in shapes]
        median_alone("sw_def_lo", min(d_ratio))
        median_alone("sw_def_hi", max(d_ratio))
        claim(
            max(d_ratio) < min(t["flash", d, s][0] / t["cudnn", d, s][0] for d, s in shapes),
            "the default call took sw_def_lo-sw_def_hi times pinned cuDNN's time, nearer to it "
            "than flash at every shape",
        )
        tr = rec("sweep").trace()  # the default ran cuDNN's kernel at the last shape
        claim(
            {tr.name(i) for i in tr.where(kind=Kind.KERNEL) if "cudnn" in tr.name(i)}
            and m.region_ops(tr, "default", "aten::_scaled_dot_product")
            == {"aten::_scaled_dot_product_cudnn_attention"},
            "at the profiled last shape the default call ran cuDNN's op",
        )
        out_bytes = 16384 * 2048 * 2
        claim(
            all(
                out_bytes <= t[i, d, s][3] < out_bytes + 4 * 2**20
                for i in ("cudnn", "efficient", "default", "flash")
                for d, s in shapes
            ),
            "the fused backends hold the output and under 4 MiB more",
        )
        md("sw_mem_table", m.sweep_memory_rows(t))

    f.repeats(sweep)
    paste_alone()

    # The CPU side of one forward
    def cpu_side() -> None:
        for v, transposes, launch in (
            ("sdpa_cudnn", "cudnn_transposes", "cudnn_launch"),
            ("sdpa_flash", "flash_transposes", "flash_launch"),
            ("sdpa_efficient", "eff_transposes", "eff_launch"),
        ):
            cpu_ops, calls = m.forward_cpu(trace(v))
            num(transposes, cpu_ops.count("aten::transpose"))
            apis = m.launch_apis(trace(v), lambda n: not n.startswith("Memset"))
            claim(len(apis) == 1, "each fused backend's kernel is launched by one launch call")
            md(launch, f"`{apis.pop()}`")
        claim(
            "cudaFuncSetAttribute" in m.forward_cpu(trace("sdpa_flash"))[1],
            "flash also calls cudaFuncSetAttribute",
        )
        cud_ops, cud_calls = m.forward_cpu(trace("sdpa_cudnn"))  # no plan search on a warm call
        claim(
            len(cud_ops) <= 8
            and sum(c.startswith(("cuLaunch", "cudaLaunch")) for c in cud_calls) == 1,
            "each cuDNN call is a handful of CPU ops and one launch, with nothing like a plan "
            "search",
        )
        claim(
            m.launch_apis(trace("naive"), lambda n: n.startswith("nvjet")) == {"cuLaunchKernelEx"},
            "cuBLAS's nvjet GEMMs use cuLaunchKernelEx",
        )
        claim(
            m.launch_apis(trace("sdpa_math"), lambda n: "xmma_gemm" in n)
            == {"cudaLaunchKernelExC"},
            "cuBLAS's fp32 xmma GEMMs use cudaLaunchKernelExC",
        )
        fused = [
            us
            for v in ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient")
            for us in m.profiled_forward_us(trace(v))
        ]
        claim(
            max(fused) < min(m.profiled_forward_us(trace("sdpa_math"))),
            "each fused forward's attention range was shorter than any math forward's",
        )

    f.repeats(cpu_side)

    # Why same-backend bursts
    first_lo: list[float] = []  # each repeat's; the page pastes their lowest and highest
    first_hi: list[float] = []

    def interleaved() -> None:
        il = rec("interleaved_backends").timings()["calls"]  # type: ignore[index]
        n_il = len({n for n, _ in il})
        after = m.after_effect([(n, us) for n, us in il], cycle=n_il * (n_il - 1))
        num("il_after_max", max(after.values()))
        claim(
            max(after.values()) > 1.2,  # what ran just before changes a call's CPU time
            "a call's CPU time depended on the version that ran just before it",
        )
        first = m.first_call_ratio(rec("streams_backends").timings())  # type: ignore[arg-type]
        first_lo.append(min(first.values()))
        first_hi.append(max(first.values()))

    f.repeats(interleaved)
    num("st_first_lo_lo", min(first_lo))
    num("st_first_hi_hi", max(first_hi))

    def bursts() -> None:
        num("calls_per_stream", rec("streams_backends").timings()["calls_per_stream"])  # type: ignore[index]
        rows = []
        for r in recs("streams_backends"):
            s = m.stream_stats(r.timings())  # type: ignore[arg-type]
            rows.append({v: s[v].cpu_us for v in m.STREAM_VERSIONS})

        def line(v: str) -> str:
            vals = [row[v] for row in rows]
            return f"| {v} | {np.median(vals):.0f} | {min(vals):.0f}–{max(vals):.0f} |"

        md(
            "st_table",
            "\n".join(
                [
                    "| version | CPU µs per call (median of processes) | range over processes |",
                    "|---|---|---|",
                    *map(line, m.STREAM_VERSIONS),
                ]
            ),
        )
        small = [m.stream_stats(r.timings()) for r in recs("streams_small")]  # type: ignore[arg-type]
        md(
            "sm_table",
            "\n".join(
                [
                    "| version | CPU µs per call, each process | wall µs per call, each process |",
                    "|---|---|---|",
                    *(
                        f"| {v} | "
                        + " / ".join(f"{s[v].cpu_us:.0f}" for s in small)
                        + " | "
                        + " / ".join(f"{s[v].wall_us:.0f}" for s in small)
                        + " |"
                        for v in m.STREAM_VERSIONS
                    ),
                ]
            ),
        )
        ratio = [s["cudnn"].wall_us / s["efficient"].wall_us for s in small]
        median_alone("sm_ratio_lo", min(ratio))
        median_alone("sm_ratio_hi", max(ratio))
        cpu_eff = [s["efficient"].cpu_us for s in small]
        num("sm_spread", max(cpu_eff) / min(cpu_eff))
        claim(
            max(ratio) / min(ratio) < max(cpu_eff) / min(cpu_eff),
            "the times moved from process to process, while the ratio the lesson quotes held",
        )

    f.repeats(bursts)
    paste_alone()

    # The A100 beside the H200
    def a100() -> None:
        A100 = {
            "eff": 277.9,
            "flash": 146.8,
            "cudnn": 186.3,
        }  # the series' CUDA time per forward, µs
        gpu = {
            k: m.gpu_us(trace(v))
            for k, v in (
                ("eff", "sdpa_efficient"),
                ("flash", "sdpa_flash"),
                ("cudnn", "sdpa_cudnn"),
            )
        }
        num("a100_eff_x", A100["eff"] / gpu["eff"])
        num("a100_flash_x", A100["flash"] / gpu["flash"])
        num("a100_cudnn_x", A100["cudnn"] / gpu["cudnn"])
        num("peak_x", m.PEAKS[f.gpu][0] / 312)  # A100 SXM dense bf16: 312 TFLOP/s
        names = {
            k: next(o.name for o in m.last_step_ops(trace(v)) if not o.name.startswith("Memset"))
            for k, v in (
                ("eff", "sdpa_efficient"),
                ("flash", "sdpa_flash"),
                ("cudnn", "sdpa_cudnn"),
            )
        }
        claim(
            "sm90" in names["cudnn"] and "wgmma" in names["cudnn"],
            "on the H200 (and the H100) cuDNN runs a kernel generated for Hopper (sm90, wgmma)",
        )
        claim(
            "Sm80" in names["eff"] and "pytorch_flash::flash_fwd_kernel" in names["flash"],
            "flash is FlashAttention-2's kernel and efficient CUTLASS's Sm80 kernel",
        )
        claim(
            words.about(A100["cudnn"] / gpu["cudnn"], m.PEAKS[f.gpu][0] / 312),
            "cuDNN's forward got about the ratio of the two GPUs' dense bf16 peaks faster",
        )

    f.repeats(a100)
