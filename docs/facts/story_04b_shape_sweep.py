"""Story 04b's claims (examples/04_attention/04b_shape_sweep.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs (``sweep`` is recorded on both).
A sentence about one GPU's repeats together ("on the H200, in every repeat, ...") is checked
once per GPU, over all of that GPU's repeats, under ``if f.gpu == ...``. It pastes nothing:
the story prints its numbers from the replay.

The sweep's table, its ranking beyond the spread and its rates come from
:mod:`part3_measures` (``sweep_table``, ``faster``, ``tflops``, ``region_ops``), which Part 3
reads the same recording with. Story 04a's naive trace (variant ``naive`` of the same
example, recorded in the same process) is the softmax it compares with.
"""

from __future__ import annotations

from typing import Any

import part3_measures as m
from tracesite import words
from tracesite.facts import Facts, claim

import tracereader
from tracereader import Kind, Trace, link

EXAMPLE = "04_attention"
GPUS = ("h200", "h100")

SWEEP_IMPLS = ("naive", "math", "efficient", "flash", "cudnn", "default")
#: The ranking the story states, fastest first (``default`` aside).
ORDER = ("cudnn", "flash", "efficient", "naive", "math")
FUSED = ("cudnn", "flash", "efficient")
SEQS = (512, 1024, 2048, 4096, 8192)
LAST = (128, 8192)  # (head_dim, seq) of the last shape, the profiled one
#: The shapes where, on the H200 in every repeat, every default group was slower than
#: every cuDNN group; and the one the story names as not among them.
SLOWER = {(64, 8192), (128, 4096), (128, 8192)}
NOT_SLOWER = (64, 4096)
OUT_BYTES = 16384 * 2048 * 2  # the output: tokens × model width, bf16


def issuer(tr: Trace, row: int) -> str:
    """The op that launched GPU operation ``row``."""
    lk = link(tr)
    return tr.name(int(lk.issuer[lk.launch[row]]))


def slower_shapes(t: m.Sweep) -> set[tuple[int, int]]:
    """The shapes where every ``default`` group was slower than every cuDNN group."""
    return {
        (d, s) for (impl, d, s) in t if impl == "default" and m.faster(t, "cudnn", "default", d, s)
    }


def facts(f: Facts) -> None:
    def sweep() -> None:
        timings: Any = f.rec("sweep").timings()
        rows = timings["sweep"]
        t = m.sweep_table(timings)
        shapes = sorted({(d, s) for (_, d, s) in t})
        claim(
            shapes == [(d, s) for d in (64, 128) for s in SEQS],
            "at ten shapes: sequences from 512 to 8192 tokens, each with head dimension 64 and 128",
        )
        claim(
            all(
                r["batch"] * r["seq"] == 16384 and r["heads"] * r["head_dim"] == 2048 for r in rows
            ),
            "every call holds the same number of tokens, batch × sequence = 16,384, and the same "
            "model width, heads × head dimension = 2048",
        )
        claim(
            all(len(r["ms"]) == 5 for r in rows),
            "groups = 5 groups: one value per group",
        )
        claim(
            [r["impl"] for r in rows] == list(SWEEP_IMPLS) * len(shapes),
            "six versions, in SWEEP_IMPLS, which each shape runs in this order",
        )
        claim(
            all(
                len({r["useful_flop"] / r["seq"] for r in rows if r["head_dim"] == d}) == 1
                and len({r["batch"] * r["heads"] * r["seq"] for r in rows if r["head_dim"] == d})
                == 1
                for d in (64, 128)
            ),
            "with the tokens per call fixed its score matrix grows only as fast as its work "
            "(both in proportion to the sequence)",
        )

        # The sweep's table.
        claim(
            all(
                [t[i, d, s][0] for i in ORDER] == sorted(t[i, d, s][0] for i in ORDER)
                for d, s in shapes
            ),
            "in this table the order is the same at every shape: cuDNN, flash, efficient, the "
            "five steps, math",
        )
        grows = [
            m.tflops(t, i, d, b) > m.tflops(t, i, d, a)
            for i in FUSED
            for d in (64, 128)
            for a, b in zip(SEQS, SEQS[1:], strict=False)
        ]
        wider = [m.tflops(t, i, 128, s) > m.tflops(t, i, 64, s) for i in FUSED for s in SEQS]
        claim(
            words.most(sum(grows), len(grows)) and words.most(sum(wider), len(wider)),
            "the fused backends' rates mostly grow with the sequence and with head dimension 128",
        )
        claim(
            all(
                m.tflops(t, "naive", d, a) > m.tflops(t, "naive", d, b)
                for d in (64, 128)
                for a, b in zip(SEQS[1:], SEQS[2:], strict=False)
            ),
            "the naive version's rate falls from sequence 1024 on",
        )
        claim(
            all(
                m.faster(t, a, b, d, s)
                for d, s in shapes
                for a, b in zip(ORDER, ORDER[1:], strict=False)
            )
            and f.rec("sweep").env["torch"].startswith("2.11"),
            "on the H200 and on the H100 (PyTorch 2.11), in every repeat, the ranking held at "
            "every shape",
        )

        # The kernels, at the last shape.
        tr = f.trace("sweep")
        kernel = {
            v: [tr.name(i) for i in m.region_gpu_ops(tr, v) if tr.kind[i] == Kind.KERNEL]
            for v in SWEEP_IMPLS
        }
        claim(
            "sm90" in kernel["cudnn"][0] and "wgmma" in kernel["cudnn"][0],
            "cuDNN's kernel: sm90 in its name, and wgmma",
        )
        claim("sm80" in kernel["efficient"][0].lower(), "efficient's kernel name carries sm80")
        gpu = next((p["name"] for p in tr.device_properties if p.get("name")), "")
        sheet = tracereader.datasheet(gpu)
        claim(sheet is not None, "the GPU's name comes from the trace, its datasheet's peak")
        assert sheet is not None  # for the type checker: the claim above holds it
        rates = {key: m.tflops(t, *key) for key in t}
        best = max(rates, key=lambda key: rates[key])
        claim(
            best == ("cudnn", *LAST) and words.about(rates[best] / sheet.bf16_tflops, 0.60),
            "on both GPUs, in every repeat, the best rate was cuDNN's at sequence 8192 and head "
            "dimension 128, at about 60 % of that peak",
        )

        # default against pinned cuDNN.
        claim(
            m.region_ops(tr, "default", "aten::_scaled_dot_product")
            == {"aten::_scaled_dot_product_cudnn_attention"},
            "default ran cuDNN's op at the profiled shape",
        )
        claim(f.rec("sweep").env["cudnn"] == 91900, "its cuDNN 9.15.1 or newer, here 9.19 (91900)")
        claim(
            all(
                words.about(t["default", d, s][0], t["cudnn", d, s][0])
                for d, s in shapes
                if s <= 2048
            ),
            "its median time was about pinned cuDNN's up to sequence 2048 on both GPUs",
        )
        order = [r["impl"] for r in rows]
        claim(
            all(order[k - 1] == "cudnn" for k, impl in enumerate(order) if impl == "default"),
            "default always ran right after cuDNN",
        )
        cudnn, default = (t_rows[0]["ms"] for t_rows in (
            [r for r in rows if (r["impl"], r["head_dim"], r["seq"]) == ("cudnn", *LAST)],
            [r for r in rows if (r["impl"], r["head_dim"], r["seq"]) == ("default", *LAST)],
        ))  # fmt: skip
        claim(
            cudnn[-1] > cudnn[0] and default[-1] > default[0] and default[-1] > cudnn[-1],
            "in the groups printed above cuDNN's own climbed from first to last, and default's "
            "went on climbing",
        )
        cud_ops = m.region_ops_rows(tr, "cudnn", "aten::_scaled_dot_product_cudnn_attention")
        def_ops = m.region_ops_rows(tr, "default", "aten::_scaled_dot_product_cudnn_attention")
        cud_k = [i for i in m.region_gpu_ops(tr, "cudnn") if tr.kind[i] == Kind.KERNEL]
        def_k = [i for i in m.region_gpu_ops(tr, "default") if tr.kind[i] == Kind.KERNEL]
        claim(
            len(cud_ops) == len(def_ops) == 1
            and tr.extra["input_dims"][cud_ops[0]] >= 0
            and tr.texts[int(tr.extra["input_dims"][cud_ops[0]])]
            == tr.texts[int(tr.extra["input_dims"][def_ops[0]])]
            and len(cud_k) == len(def_k) == 1
            and tr.name(cud_k[0]) == tr.name(def_k[0])
            and words.about(float(tr.dur_ns[def_k[0]]), float(tr.dur_ns[cud_k[0]])),
            "its one profiled call of each ran the same cuDNN op with the same arguments, and "
            "the same kernel for about the same time",
        )
        peaks = {key: v[3] for key, v in t.items()}
        claim(
            len({peaks["cudnn", d, s] for d, s in shapes}) == 1
            and words.a_little(peaks["cudnn", 64, 512], OUT_BYTES),
            "cuDNN's extra memory is the same at every shape, the output and little more",
        )
        claim(
            all(
                peaks[i, d, a] < peaks[i, d, b]
                for i in ("naive", "math")
                for d in (64, 128)
                for a, b in zip(SEQS, SEQS[1:], strict=False)
            ),
            "while the naive and math versions' grows with the sequence",
        )

        # The trace: one forward of each version at the last shape, each in its range.
        claim(
            all(len(tr.regions(v)) == 1 for v in SWEEP_IMPLS)
            and all(
                len(m.region_ops_rows(tr, v, "aten::scaled_dot_product_attention")) == 1
                for v in SWEEP_IMPLS
                if v != "naive"
            )
            and len(m.region_ops_rows(tr, "naive", "aten::_softmax")) == 1
            and {
                tr.texts[int(tr.extra["input_dims"][i])]
                for i in m.region_ops_rows(tr, "cudnn", "aten::scaled_dot_product_attention")
            }
            == {"[[2,16,8192,128],[2,16,8192,128],[2,16,8192,128],[],[],[],[],[]]"},
            "the profiler records only one forward of each version at the last shape, each "
            "inside a range named after the version",
        )
        for v in ("cudnn", "flash", "efficient", "default"):
            gpu_ops = m.region_gpu_ops(tr, v)
            kinds = [int(tr.kind[i]) for i in gpu_ops]
            want = [Kind.MEMSET, Kind.KERNEL] if v in ("cudnn", "default") else [Kind.KERNEL]
            claim(
                kinds == want,
                f"under each fused backend, its one attention kernel (cuDNN's, and so "
                f"default's, comes after a memset) ({v}: {kinds})",
            )
        naive = m.region_gpu_ops(tr, "naive")
        steps = [(issuer(tr, i), int(tr.kind[i])) for i in naive]
        K, MS, MC = Kind.KERNEL, Kind.MEMSET, Kind.MEMCPY
        claim(
            steps
            == [
                ("aten::bmm", MS),
                ("aten::bmm", K),
                ("aten::mul", K),
                ("aten::mul", K),
                ("aten::fill_", K),
                ("aten::triu", K),
                ("aten::copy_", MC),
                ("aten::masked_fill_", K),
                ("aten::masked_fill_", K),
                ("aten::_softmax", K),
                ("aten::bmm", MS),
                ("aten::bmm", K),
            ],
            "under naive, the five steps' twelve GPU operations: a memset and a GEMM; two "
            "elementwise kernels; a fill and a triu kernel, a copy of the scores and two "
            "elementwise kernels; one kernel; a memset and a GEMM",
        )
        names = [tr.name(i) for i in naive]
        claim(
            names[1].startswith("nvjet")
            and names[11].startswith("nvjet")
            and all("MulFunctor" in n for n in names[2:4])
            and "FillFunctor" in names[4]
            and "triu" in names[5]
            and names[6].startswith("Memcpy DtoD")
            and all("masked_fill_kernel" in n for n in names[7:9]),
            "a GEMM; two elementwise kernels (MulFunctor); a fill and a triu kernel, a copy of "
            "the scores (Memcpy DtoD) and two elementwise kernels that write -inf "
            "(masked_fill_kernel)",
        )
        b, h = 16384 // LAST[1], 2048 // LAST[0]
        scores = b * h * LAST[1] * LAST[1]
        ops04a = m.last_step_ops(f.trace("naive"))
        claim(
            len(m.region_ops_rows(tr, "naive", "aten::mul")) == 1
            and len(m.region_ops_rows(tr, "naive", "aten::masked_fill_")) == 1
            and scores == 2**31
            and sum(o.issuer == "aten::mul" for o in ops04a) == 1
            and sum(o.issuer == "aten::masked_fill_" for o in ops04a) == 1,
            "the scale and the -inf writes are one op each, in two kernels: the scores' 2³¹ "
            "elements (story 04a's trace, at sequence 1024, has one of each)",
        )
        soft = naive[9]
        dur = [float(tr.dur_ns[i]) for i in naive]
        claim(
            dur[9] == max(dur) and dur[9] > sum(dur) / 3 and "cunn_SoftMaxForwardReg" in names[9],
            "the softmax, naive's longest kernel (over a third of its GPU time), is "
            "cunn_SoftMaxForwardReg",
        )
        claim(
            tr.extra["grid"][soft] == b * h * LAST[1],
            "cunn_SoftMaxForwardReg at rows this long, one block of threads per row",
        )
        soft04a = [o for o in ops04a if o.issuer == "aten::_softmax"]
        scores04a = 8 * 16 * 1024 * 1024
        claim(
            len(soft04a) == 1
            and "softmax_warp_forward" in soft04a[0].name
            and words.times(dur[9] / 1e3 / scores, soft04a[0].us / scores04a, 2),
            "per score it takes over twice as long as the softmax_warp_forward of story 04a's "
            "trace, at rows of 1024",
        )

    f.repeats(sweep, n=f.n_repeats("sweep"))

    # The GPUs' repeats together: default against cuDNN, beyond the spread.
    per_repeat = [slower_shapes(m.sweep_table(r.timings())) for r in f.recs("sweep")]  # type: ignore[arg-type]
    every, some = set.intersection(*per_repeat), set.union(*per_repeat)
    if f.gpu == "h200":
        claim(
            every == SLOWER and NOT_SLOWER not in some,
            "on the H200, in every repeat, every default group was slower than every cuDNN group "
            "at three shapes: head dimension 64 at sequence 8192, and 128 at 4096 and 8192 (not "
            "64 at 4096)",
        )
    if f.gpu == "h100":
        claim(
            some and some <= SLOWER and not every,
            "on the H100, at some of those shapes, not in every repeat",
        )
