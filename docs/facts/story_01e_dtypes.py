"""Story 01e's claims (examples/01_matmul_add/01e_dtypes.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. It pastes nothing: the story
prints its numbers from the replay.

Its three variants (``4096_bf16_20steps``, ``4096_fp32``, ``4096_fp32_tf32``) are recorded
on the H200 and the H100; the sentences the story says of the H200 only are claimed under
``f.gpu == "h200"``. The dtypes' kernels and median times are Part 1's
:func:`part1_measures.dtype_facts` (given the story's bf16 run, the 20-step one), the large
GEMM's rate :func:`part1_measures.gemm_tflops` on ``peaks``, both imported. The story's
datasheet figures for fp32 (67) and TF32 (494.7) are NVIDIA's, not in the recordings: the
shares are checked against them as the story computes them.
"""

from __future__ import annotations

from typing import Any

import part1_measures as m
from tracesite import profiler_table
from tracesite.facts import Facts, claim
from tracesite.recordings import Recording
from tracesite.words import about, most, no_outlier, times

import tracereader
from tracereader import Kind, Trace, kernel_table, launches, link, shorten_kernel_name

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")
BF16, FP32, TF32 = "4096_bf16_20steps", "4096_fp32", "4096_fp32_tf32"
VARIANTS = (BF16, FP32, TF32)
N = 4096
#: The datasheet peaks the story divides by (TFLOP/s): dense bf16, plain fp32, dense TF32.
PEAKS = {BF16: 989.0, FP32: 67.0, TF32: 494.7}
#: How the profiler's table cuts a long name (``max_name_column_width=48``).
CUT = 48


def gemm_row(tr: Trace) -> dict[str, Any]:
    """The story's ``gemm_rate`` pick: the first row of ``kernel_table`` that is neither a
    copy nor a memset."""
    rows = [
        r
        for r in kernel_table(tr).to_records()
        if not str(r["name"]).startswith(("Memcpy", "Memset"))
    ]
    claim(len(rows), "the trace has a GPU kernel that is neither a copy nor a memset")
    return rows[0]


def gemm_kernels(tr: Trace) -> list[int]:
    """The GEMM kernels: every kernel but the elementwise add."""
    return [int(i) for i in tr.where(kind=Kind.KERNEL) if "elementwise" not in tr.name(int(i))]


def printed_names(rec: Recording) -> list[str]:
    """The name column of the profiler's table as its text prints it."""
    return [row["Name"] for row in profiler_table.cells(rec.table)]


def tflops(us: float) -> float:
    return 2 * N**3 / (us * 1e-6) / 1e12


def facts(f: Facts) -> None:
    def each() -> None:
        recs = {v: f.rec(v) for v in VARIANTS}
        t16, t32, ttf = (recs[v].trace() for v in VARIANTS)

        # The docstring and the variants
        claim(
            len(t16.where(kind=Kind.KERNEL, prefix="nvjet")) == 20
            and len(gemm_kernels(t32)) == 3
            and len(gemm_kernels(ttf)) == 3,
            "This experiment times the GEMM twenty times in bfloat16, then three times in "
            "float32 with TF32 off (torch's default) and three times with it on",
        )
        claim(
            all(f.n_repeats(v) == 3 for v in VARIANTS)
            and all(f.gpu.upper() in r.env["gpu"] for r in recs.values())
            and all(r.meta["process"]["fresh"] for r in recs.values()),
            "Every variant was recorded three times on an NVIDIA H200 and three times on an "
            "NVIDIA H100, each repeat in a fresh process",
        )

        claim(
            m.gemm_tflops(f.trace("64_bf16"), 64) < m.gemm_tflops(t16, N),
            "Smaller GEMMs run further from the peak",
        )

        # The yardstick
        for v, tr in zip(VARIANTS, (t16, t32, ttf), strict=True):
            row = gemm_row(tr)
            others = [
                r["total_us"]
                for r in kernel_table(tr).to_records()
                if not str(r["name"]).startswith(("Memcpy", "Memset"))
            ]
            claim(
                ("gemm" in row["name"] or row["name"].startswith("nvjet"))
                and row["total_us"] == max(others),
                f"gemm_rate reads the GEMM's kernel from a trace (the GPU op that is neither a "
                f"copy nor a memset and took the most time) ({v})",
            )
        sheet = tracereader.datasheet(str(recs[BF16].env["gpu"]))
        claim(
            sheet is not None
            and sheet.bf16_tflops == PEAKS[BF16]
            and sheet.gpu == {"h200": "H200 SXM", "h100": "H100 SXM"}[f.gpu],
            "989 TFLOP/s of dense bf16 on an H200 ... NVIDIA's dense figures, the same for the "
            "H200 and for the H100 SXM recorded here",
        )

        # One GEMM, twenty times
        dist = m.distribution_facts(t16)  # its own claims: 20 runs, no outlier
        claim(dist["k20_n"] == 20, "Twenty active steps give twenty runs of the 4096 bf16 GEMM")
        add = int(t16.where(kind=Kind.KERNEL, contains="elementwise")[0])
        lk = link(t16)
        claim(
            t16.name(lk.issuing_op(add)) == "aten::add"
            and t16.name(add).startswith("void at::native::vectorized_elementwise_kernel")
            and shorten_kernel_name(t16.name(add))
            == "vectorized_elementwise_kernel<CUDAFunctor_add<BFloat16>>"
            and "vectorized_elementwise_kernel<CUDAFunctor_add<BFloat16>>"
            in kernel_table(t16).to_text(),
            "It shortens kernel names: vectorized_elementwise_kernel<CUDAFunctor_add<BFloat16>> "
            "is the add's kernel, whose full name starts "
            "void at::native::vectorized_elementwise_kernel",
        )
        full = [str(r["name"]) for r in recs[FP32].table_rows()]
        shown = printed_names(recs[FP32])
        claim(
            len(full) == len(shown)
            and any(len(n) > CUT for n in full)
            and all(
                s == n if len(n) <= CUT else s == n[: CUT - 3] + "..."
                for n, s in zip(full, shown, strict=True)
            ),
            "the profiler's tables cut names at 48 characters",
        )
        if f.gpu == "h200":
            runs = t16.dur_ns[t16.where(kind=Kind.KERNEL, prefix="nvjet")] / 1e3
            claim(
                no_outlier([float(v) for v in runs]),
                "On the H200 the slowest run stayed close to the median, with no outlier",
            )
            claim(
                about(m.gemm_tflops(t16, N), m.gemm_tflops(f.trace("peaks"), 8192)),
                "On the H200 ... the GEMM ran at about the rate of the large GEMM of the peaks "
                "experiment",
            )

        # Float32, TF32 off and on
        dt: dict[str, Any] = m.dtype_facts(t16, t32, ttf)  # its own claims: one GEMM each
        g16, g32, gtf = (str(dt[k]).strip("`") for k in ("g16", "g32", "gtf"))
        u16, u32, utf = (float(dt[k]) for k in ("g16_us", "g32_us", "gtf_us"))
        claim("ffma" in g32, "the GEMM runs on the ordinary FMA units: its kernel's name says ffma")
        claim("tf32" in gtf, "With TF32 on ... the name says tf32")
        claim(
            times(u32, u16, 15),
            "In every repeat on both GPUs, plain fp32 took over 15 times as long as bf16",
        )
        claim(about(utf, 2 * u16), "and TF32 about twice as long")
        shares = [tflops(u) / PEAKS[v] for u, v in zip((u16, u32, utf), VARIANTS, strict=True)]
        claim(
            all(s > 0.75 for s in shares),
            "yet no kernel is slow: each reached over three quarters of its own peak",
        )

        # Reading the kernel names
        claim(
            g32.startswith("sm80_") and gtf.startswith("sm90_"),
            "sm80 or sm90 is the GPU generation the kernel was designed for (cuBLAS still serves "
            "Hopper an fp32 FMA kernel of Ampere's design)",
        )
        claim(
            all(k in g for g in (g32, gtf) for k in ("xmma_gemm", "tilesize", "nn_n"))
            and "f32f32_tf32f32" in gtf
            and "warpgroupsize" in gtf
            and "segment_k_off" in gtf,
            "xmma_gemm a cuBLAS GEMM, then the types (f32f32_tf32f32: float32 data, TF32 "
            "arithmetic), then the tile sizes; the rest (nn_n, warpgroupsize, segment_k_off)",
        )
        claim(g16.startswith("nvjet"), "The bf16 GEMM is an nvjet kernel")

        # The fp32 run's queue
        rows = {str(r["name"]): r for r in recs[FP32].table_rows()}
        add_rows = [r for n, r in rows.items() if n.startswith("void at::native::vectorized")]
        claim(
            len(add_rows) == 1 and add_rows[0]["calls"] == 4 and rows["aten::add"]["calls"] == 3,
            "the add kernel (void at::native::vectorized_elementwise_kerne...) has 4 calls but "
            "aten::add only 3",
        )
        l32 = link(t32)
        orphans = [int(i) for i in l32.gpu_ops if l32.launch[i] < 0]
        claim(
            t32.steps[0].name == "ProfilerStep#2"
            and len(orphans) == 1
            and "elementwise" in t32.name(orphans[0])
            and int(t32.ts_ns[orphans[0]]) > t32.steps[0].start_ns,
            "The extra add is that of ProfilerStep#1, the profiler's warm-up step, still waiting "
            "on the GPU when the kept steps began: its kernel ran inside the recorded window, its "
            "launch call before it",
        )
        gemms = gemm_kernels(t32)
        claim(
            len(gemms) == len(t32.steps) and all(l32.launch[g] >= 0 for g in gemms),
            "the warm-up step's GEMM started before the window and is not in the trace at all",
        )
        waits = [
            float(r["launch_to_start_us"])
            for r in launches(t32).to_records()
            if r["step"] and "gemm" in str(r["name"])
        ]
        claim(
            len(waits) == 3
            and waits[0] > 1000
            and all(b > a for a, b in zip(waits, waits[1:], strict=False)),
            "the first kept step's GEMM started milliseconds after its launch call, and each "
            "later one waited longer",
        )
        totals = recs[FP32].table_totals_us()
        claim(
            most(rows["cudaDeviceSynchronize"]["self_cpu_us"], totals["self_cpu_us"]),
            "the profiler's closing cudaDeviceSynchronize takes most of Self CPU time total",
        )
        claim(
            all(l32.launch_api(g) == "cudaLaunchKernelExC" for g in gemms),
            "cudaLaunchKernelExC is the runtime's launch call that cuBLAS used for this GEMM",
        )
        asked = []
        for g in gemms:
            mm = [s for s in l32.stack(g) if t32.name(s) == "aten::mm"]
            window = (int(t32.ts_ns[mm[-1]]), int(t32.ts_ns[l32.launch[g]])) if mm else (0, 0)
            asked.append(len(t32.where(name="cudaFuncGetAttributes", within=window)) >= 1)
        claim(
            all(asked),
            "cudaFuncGetAttributes asks the runtime about a kernel before it is launched",
        )

        # What the chapter concluded
        if f.gpu == "h200":
            claim(
                t16.device_properties[0]["numSms"] == m.N_SMS,
                "multiprocessors (132 on the H200)",
            )
        claim(
            about(u32, 8 * utf),
            "the GEMM ran about 8 times as fast here, in every repeat on both GPUs",
        )
        claim(
            about(utf, 2 * u16),
            "bf16 halved its time again (about twice as fast as TF32)",
        )

    f.repeats(each, n=min(f.n_repeats(v) for v in VARIANTS))
