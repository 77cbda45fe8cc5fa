"""Story 04a's claims (examples/04_attention/04a_naive_and_sdpa.py): each sentence its text
says about the recordings, checked on every repeat of both GPUs (all eight variants are
recorded on both). A sentence about the H200 alone sits under ``if f.gpu == "h200":``. It
pastes nothing: the story prints its numbers from the replay.

The GPU times, the issuing ops and the op chains come from :mod:`part3_measures` (Part 3
reads the same recordings). :func:`table` reads the profiler's table as the page prints it
(``table.txt``: these recordings have no ``table.json``); stories 04c and 04d read theirs
with it too.
"""

from __future__ import annotations

from typing import Any

import part3_measures as m
from tracesite import profiler_table, words
from tracesite.facts import Facts, claim

from tracereader import Kind, Trace, link

EXAMPLE = "04_attention"
GPUS = ("h200", "h100")

#: The series' shape: batch, heads, sequence, head_dim.
SHAPE = (8, 16, 1024, 64)
MIB = 2**20
#: One bf16 score matrix, (batch, heads, seq, seq), and one of q, k, v, in bytes.
SCORE_BYTES = SHAPE[0] * SHAPE[1] * SHAPE[2] * SHAPE[2] * 2
QKV_BYTES = SHAPE[0] * SHAPE[1] * SHAPE[2] * SHAPE[3] * 2
VARIANTS = (
    "naive",
    "naive_inplace",
    "naive_compile",
    "sdpa_default",
    "sdpa_math",
    "sdpa_efficient",
    "sdpa_flash",
    "sdpa_cudnn",
)
#: The op under aten::scaled_dot_product_attention that names each pinned backend.
BACKEND_OP = {
    "sdpa_cudnn": "aten::_scaled_dot_product_cudnn_attention",
    "sdpa_flash": "aten::_scaled_dot_product_flash_attention",
    "sdpa_efficient": "aten::_scaled_dot_product_efficient_attention",
    "sdpa_math": "aten::_scaled_dot_product_attention_math",
}


def table(text: str) -> list[dict[str, Any]]:
    """The profiler's table as the page prints it (:func:`tracesite.profiler_table.rows`:
    ``name``, cut to 48 characters and ending in ``...``, and the numbers)."""
    return profiler_table.rows(text)


def named(row: dict[str, Any], name: str) -> bool:
    """The table's row is ``name`` (whole, or cut to 45 characters and ``...``)."""
    shown: str = row["name"]
    return shown == name or (shown.endswith("...") and name.startswith(shown[:-3]))


def sorted_by_gpu_time(rows: list[dict[str, Any]], n: int = 15) -> bool:
    """The table keeps ``n`` rows, the most GPU time (``CUDA total``) first."""
    total = [r["cuda_total_us"] for r in rows]
    return len(rows) == n and total == sorted(total, reverse=True)


def child_ops(tr: Trace, parent: str) -> set[str]:
    """Names of the CPU ops directly under the ops called ``parent``."""
    lk = link(tr)
    return {
        tr.name(int(i))
        for i in tr.where(kind=Kind.CPU_OP)
        if lk.parent[i] >= 0 and tr.name(int(lk.parent[i])) == parent
    }


def gpu_spans_are_their_ops(tr: Trace, name: str) -> bool:
    """Each GPU-side span of the ``name`` ranges (``gpu_user_annotation``) runs from the first
    GPU operation launched inside its range to the end of the last (within 1 µs)."""
    lk = link(tr)
    spans = tr.where(kind=Kind.GPU_ANNOTATION, name=name)
    regions = tr.regions(name)
    if not len(spans) or len(spans) != len(regions):
        return False
    for span, reg in zip(spans, regions, strict=True):
        ops = [
            int(g)
            for g in lk.gpu_ops
            if lk.launch[g] >= 0 and reg.start_ns <= tr.ts_ns[lk.launch[g]] < reg.end_ns
        ]
        first = min(int(tr.ts_ns[g]) for g in ops)
        last = max(int(tr.end_ns[g]) for g in ops)
        if abs(int(tr.ts_ns[span]) - first) > 1000 or abs(int(tr.end_ns[span]) - last) > 1000:
            return False
    return True


def facts(f: Facts) -> None:
    def peak(v: str) -> float:  # the extra GPU memory of one unprofiled forward, bytes
        return float(f.rec(v).timings()["peak_extra_bytes"])  # type: ignore[index]

    def each() -> None:
        naive = f.trace("naive")
        claim(
            all(
                [f.rec(v).params[k] for k in ("batch", "heads", "seq", "head_dim")] == list(SHAPE)
                for v in VARIANTS
            ),
            "the Hugging Face series' shape, batch 8, 16 heads, sequence 1024, head_dim 64; "
            "eight versions, all at the series' shape",
        )
        mm = naive.where(kind=Kind.CPU_OP, name="aten::matmul")
        claim(
            naive.texts[int(naive.extra["input_dims"][mm[0]])] == "[[8,16,1024,64],[8,16,64,1024]]",
            "q @ kᵀ: q of shape (batch, heads, seq, head_dim) against kᵀ",
        )
        ops = m.last_step_ops(naive)
        copy = [o for o in ops if naive.kind[o.row] == Kind.MEMCPY]
        claim(
            SCORE_BYTES == 256 * MIB
            and QKV_BYTES == 16 * MIB
            and len(copy) == 1
            and naive.extra["bytes"][copy[0].row] == SCORE_BYTES,
            "8 × 16 × 1024 × 1024 bf16 values, 256 MiB, against 16 MiB for each of q, k and v",
        )
        claim(
            m.op_chain(naive, copy[0].row)[:3]
            == ["aten::copy_", "aten::clone", "aten::masked_fill"]
            and copy[0].name.startswith("Memcpy DtoD"),
            "masked_fill returns a new tensor: it clones the scores, then fills the clone. The "
            "trace shows that clone as a Memcpy DtoD of the whole score matrix",
        )
        inplace = f.trace("naive_inplace")
        ip = m.last_step_ops(inplace)
        claim(
            not any(inplace.kind[o.row] == Kind.MEMCPY for o in ip)
            and not len(inplace.where(kind=Kind.CPU_OP, name="aten::clone"))
            and "aten::masked_fill_" in {o.issuer for o in ip},
            "masked_fill_, which writes the mask into the scores themselves. No copy of the "
            "score matrix",
        )

        # Attention in one call: the op under SDPA's names the backend that ran.
        for v, op in BACKEND_OP.items():
            claim(
                child_ops(f.trace(v), "aten::scaled_dot_product_attention") == {op},
                "in the trace, the op under aten::scaled_dot_product_attention names the one "
                f"that ran ({v}: {op})",
            )
        claim(
            all(peak(v) < SCORE_BYTES / 10 for v in ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn")),
            "three fused ones that never write the score matrix to memory",
        )

        # How one version is profiled.
        attention = naive.regions("attention")
        claim(
            [s.name for s in naive.steps] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
            and len(attention) == 3
            and all(
                sum(s.start_ns <= a.start_ns < s.end_ns for a in attention) == 1
                for s in naive.steps
            ),
            "its schedule skips one step (wait), records one and throws it away (warmup), and "
            "keeps active steps of one forward each, every forward inside "
            'record_function("attention") so it shows as one named range on the CPU lane',
        )
        bmm = naive.where(kind=Kind.CPU_OP, name="aten::bmm")
        claim(
            len(bmm) and all(naive.extra["input_dims"][i] >= 0 for i in bmm),
            "record_shapes=True keeps each op's input shapes in the trace",
        )

        # Naive attention: the table.
        rows = table(f.rec("naive").table)
        claim(sorted_by_gpu_time(rows), "sorted by GPU time and cut to its top 15 rows")
        label = [r for r in rows if r["name"] == "attention"]
        claim(
            len(label) == 2
            and any(r["self_cpu_us"] == r["cpu_total_us"] == 0 and r["calls"] == 3 for r in label),
            "summed over the three profiled steps; the attention row with no CPU time is the "
            "label's GPU-side span",
        )
        claim(
            gpu_spans_are_their_ops(naive, "attention"),
            "the label's GPU-side span, from its first kernel to its last, idle time included",
        )
        if f.gpu == "h200":
            soft_k = [
                r for r in rows if named(r, "void (anonymous namespace)::softmax_warp_forward")
            ]
            soft_op = [r for r in rows if r["name"] == "aten::_softmax"]
            claim(
                len(soft_k) == 1 and soft_k[0]["calls"] == 4 and soft_op[0]["calls"] == 3,
                "on the H200, the softmax kernel's 4 against aten::_softmax's 3",
            )

        # One forward, op by op.
        kinds = [int(naive.kind[o.row]) for o in ops]
        claim(
            len(ops) == 9
            and kinds.count(Kind.KERNEL) == 7
            and kinds.count(Kind.MEMSET) == 1
            and kinds.count(Kind.MEMCPY) == 1,
            "on the H200, and on the H100, one forward ran nine GPU operations: seven kernels, "
            "a memset and a copy",
        )
        total = sum(o.us for o in ops)
        gemms = [o for o in ops if o.issuer == "aten::bmm" and naive.kind[o.row] == Kind.KERNEL]
        claim(
            len(gemms) == 2
            and all(o.name.startswith("nvjet") for o in gemms)
            and words.small_share(sum(o.us for o in gemms), total)
            and sum(o.us for o in gemms) < 0.3 * total,
            "the two GEMMs (the nvjet kernels) were a small share of the time (under 30 %)",
        )
        # The five steps' GPU time: q @ kᵀ (its memset and GEMM), the scale, the mask's
        # building (the `causal` line), masked_fill (the copy and the fill), the softmax, @ v.
        by = m.by_issuer(ops)
        first_gemm = ops.index(gemms[0]) + 1
        mask_us = by["aten::copy_"] + by["aten::masked_fill_"]
        others = [
            sum(o.us for o in ops[:first_gemm]),
            by["aten::mul"],
            by["aten::fill_"] + by["aten::triu"],
            by["aten::_softmax"],
            gemms[1].us,
        ]
        claim(
            mask_us > max(others),
            "the slowest step was the mask (masked_fill: its copy and its fill)",
        )
        fill = [o for o in ops if o.issuer == "aten::masked_fill_"]
        claim(
            len(fill) == 1
            and fill[0].name.startswith("void at::native::elementwise_kernel<")
            and ops[ops.index(fill[0]) - 1] == copy[0],
            "masked_fill runs PyTorch's general elementwise_kernel, after a Memcpy DtoD that "
            "clones the scores",
        )
        claim(
            len(ip) == len(ops) - 1 and m.gpu_us(inplace) < m.gpu_us(naive),
            "naive_inplace drops that copy (less GPU time)",
        )
        claim(
            peak("naive_inplace") == peak("naive") and peak("naive_inplace") > 2 * SCORE_BYTES,
            "but not the peak memory: two score matrices are still alive at once",
        )
        compiled = f.trace("naive_compile")
        cops = m.last_step_ops(compiled)
        triton = [o for o in cops if o.name.startswith("triton_")]
        claim(
            len(triton) == 1
            and [o.name.startswith("nvjet") for o in cops if compiled.kind[o.row] == Kind.KERNEL]
            == [True, False, True]
            and "triu" in triton[0].name,
            "compiled (naive_compile), the three steps between the GEMMs become one Triton "
            "kernel that builds the mask itself",
        )
        claim(
            peak("naive_compile") >= SCORE_BYTES,
            "yet the scores still go to memory and back",
        )

        # SDPA, PyTorch's choice.
        sdpa_rows = table(f.rec("sdpa_default").table)
        claim(
            [r["name"] for r in sdpa_rows if r["name"].startswith("aten::_scaled_dot_product")]
            == ["aten::_scaled_dot_product_cudnn_attention"]
            and child_ops(f.trace("sdpa_default"), "aten::scaled_dot_product_attention")
            == {BACKEND_OP["sdpa_cudnn"]},
            "look for the aten::_scaled_dot_product_… row: its name is the backend PyTorch chose",
        )
        claim(
            any(r["name"] == "attention" and r["self_cuda_pct"] > 100 for r in sdpa_rows),
            "so its Self CUDA % can pass 100 % (the SDPA table's attention span does)",
        )
        if f.gpu == "h200":
            claim(
                f.rec("sdpa_default").env["torch"].startswith("2.11"),
                "on the H200 with PyTorch 2.11 the choice was cuDNN",
            )
        dops = m.last_step_ops(f.trace("sdpa_default"))
        claim(
            [int(f.trace("sdpa_default").kind[o.row]) for o in dops] == [Kind.MEMSET, Kind.KERNEL]
            and dops[0].us < 0.05 * dops[1].us,
            "its one kernel (after a short memset)",
        )
        us = {v: m.gpu_us(f.trace(v)) for v in ("sdpa_default", *BACKEND_OP)}
        claim(
            max(us["sdpa_default"], us["sdpa_cudnn"])
            < min(us["sdpa_flash"], us["sdpa_efficient"], us["sdpa_math"]),
            "cuDNN's one kernel was the fastest of the backends",
        )
        claim(
            words.nearly_all(QKV_BYTES, peak("sdpa_default")) and peak("sdpa_default") >= QKV_BYTES,
            "with the output's 16 MiB as nearly all its extra memory",
        )
        claim(
            all(words.hundreds(int(peak(v) // MIB)) for v in ("naive", "naive_inplace")),
            "where the five steps needed hundreds of MiB",
        )
        claim(us["sdpa_math"] > m.gpu_us(naive), "the math backend was slower than the five steps")
        math = f.trace("sdpa_math")
        mgemms = [o.name for o in m.last_step_ops(math) if "gemm" in o.name]
        claim(
            len(mgemms) == 2 and all("f32f32" in n and "ffma" in n for n in mgemms),
            "it multiplies in fp32 without Tensor Cores",
        )
        claim(
            len(math.where(kind=Kind.CPU_OP, name="aten::_safe_softmax"))
            and len(math.where(kind=Kind.CPU_OP, name="aten::isneginf")),
            "and runs a safe softmax that checks every row for being fully masked",
        )

    f.repeats(each, n=f.n_repeats("naive"))
