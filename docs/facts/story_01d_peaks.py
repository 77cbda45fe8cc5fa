"""Story 01d's claims (examples/01_matmul_add/01d_peaks.py): each sentence its text says about
the recordings, checked on every repeat of both GPUs. It pastes nothing: the story prints its
numbers from the replay.

Its one variant (``peaks``) is recorded on the H200 and the H100. The rates its conclusion
compares (the 64x64 and 4096x4096 GEMMs and the 4096x4096 add of ``64_bf16`` and
``4096_bf16_20steps`` against the 8192 GEMM and the 2 GiB copy) are Part 1's
:func:`part1_measures.speed_facts`, imported; its own claims run with it. The sentence the
story says of the H200 alone is claimed on the H200's recordings only.
"""

from __future__ import annotations

import part1_measures as m
from tracesite.facts import Facts, claim
from tracesite.words import about, few_bytes, tiny

from tracereader import Kind, gpu_busy_us, link

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")

MEMCPY_ROW = "Memcpy DtoD (Device -> Device)"


def peaks(f: Facts) -> None:
    rec = f.rec("peaks")
    tr = rec.trace()
    p = rec.params
    # Part 1's measures of the same recordings (their claims are the chapter's).
    speed = m.speed_facts(
        tr, f.trace("64_bf16"), f.trace("4096_bf16_20steps"), f.trace("4096_bf16")
    )

    # -- the docstring, the harness, the variant ----------------------------------------
    gemms = [int(i) for i in tr.where(kind=Kind.KERNEL)]
    copies = [int(i) for i in tr.where(kind=Kind.MEMCPY)]
    claim(
        p["size"] == 8192
        and p["copy_mib"] == 2048
        and p["calls"] == 10
        and len(gemms) == len(copies) == 10
        and all(tr.name(g).startswith("nvjet") for g in gemms)
        and all(tr.extra["bytes"][c] == 2**31 for c in copies)
        and max(tr.ts_ns[gemms]) < min(tr.ts_ns[copies]),
        "10 GEMMs of 8192x8192 bf16, then 10 device-to-device copies of 2 GiB, each timed by "
        "the profiler",
    )
    lk = link(tr)
    labels = {n: tr.where(name=n, kind=Kind.USER_ANNOTATION) for n in ("gemm", "copy")}
    claim(
        not tr.steps
        and all(len(rows) == 10 for rows in labels.values())
        and all(lk.gpu_ops_inside[i] >= 1 for rows in labels.values() for i in rows),
        "it profiles calls GEMMs and calls copies, each labelled with record_function, with no "
        "schedule: every call is kept",
    )
    claim(
        not len(tr.where(contains="Malloc")) and not len(tr.where(name="cudaFree")),
        "Writing into preallocated outputs keeps the memory allocator out of the measurement",
    )
    if f.gpu == "h200":
        claim(
            "H200" in str(rec.env["gpu"]) and f.n_repeats("peaks") > 1,
            "One variant, recorded on an NVIDIA H200 several times",
        )

    # -- the table ------------------------------------------------------------------------
    table = rec.table_rows()
    by_name = {str(r["name"]): r for r in table}
    gemm_rows = [r for r in table if str(r["name"]).startswith("nvjet")]
    memsets = [int(i) for i in tr.where(kind=Kind.MEMSET)]
    claim(
        len(gemm_rows) == 1
        and gemm_rows[0]["calls"] == 10
        and by_name[MEMCPY_ROW]["calls"] == 10
        and by_name["Memset (Device)"]["calls"] == len(memsets)
        and all(few_bytes(int(tr.extra["bytes"][s])) for s in memsets)
        and tiny(by_name["Memset (Device)"]["cuda_avg_us"], gemm_rows[0]["cuda_avg_us"]),
        "The profiler's table lists the GEMM kernel (an nvjet kernel), the Memcpy DtoD and a "
        "tiny memset, each with its number of calls",
    )
    spans = [r for r in table if r["name"] in ("gemm", "copy") and r["cpu_total_us"] == 0]
    claim(
        len(spans) == 2
        and all(len(tr.where(name=n, kind=Kind.GPU_ANNOTATION)) == 10 for n in ("gemm", "copy")),
        "The gemm and copy rows with no CPU time are the labels' GPU-side spans",
    )
    syncs = [int(i) for i in tr.where(name="cudaDeviceSynchronize")]
    longest = max(syncs, key=lambda s: int(tr.dur_ns[s]))
    busy = gpu_busy_us(tr, window=(int(tr.ts_ns[longest]), int(tr.end_ns[longest])))
    claim(
        "cudaDeviceSynchronize" in by_name and busy > 0.9 * m.dur_us(tr, longest),
        "The cudaDeviceSynchronize row is the CPU waiting for the GPU, not work",
    )

    # -- what the chapter concluded -------------------------------------------------------
    claim(
        float(speed["add_tbs"]) > float(speed["peak_tbs"]),
        "measured references, not limits (a kernel can pass them, as the add below does)",
    )
    claim(
        about(float(speed["r4k_tflops"]), float(speed["peak_tflops"]))
        and about(float(speed["r4k_pct"]), 80),
        "the 4096x4096 GEMM of the matmul-add step ran about as fast as the 8192 one, at about "
        "four fifths of the datasheet's peak",
    )
    claim(
        tiny(float(speed["r64_pct"]), 100.0)
        and float(speed["blocks64"]) < m.N_SMS
        and float(speed["add64_us"]) > 0.4 * float(speed["g64_us"]),
        "the 64x64 GEMM used a tiny fraction of the GPU: its grid had too few thread blocks to "
        "fill the H200's 132 SMs, and a kernel that short is in large part the fixed cost of starting "
        "and finishing (the 64x64 add took over 40 % of the GEMM's time)",
    )
    claim(
        float(speed["peak_tbs"]) < float(speed["add_tbs"]) < 1.15 * float(speed["peak_tbs"]),
        "the 4096x4096 add ran at the speed of the GPU's memory ... It even moved its bytes "
        "faster than the copy, by under 15 %",
    )


def facts(f: Facts) -> None:
    f.repeats(lambda: peaks(f), n=f.n_repeats("peaks"))
