"""Story 03a's claims (examples/03_mlp/03a_eager_mlp.py): each sentence its text says about
the recordings, checked on every repeat of both GPUs. It pastes nothing: the story prints
its numbers from the replay.

Both variants (``eager``, ``eager_big``) are recorded on the H200 and the H100. The eager
MLP's structure (five kernels and two memsets a forward, the views that launch nothing,
one GEMM name for two jobs) is Part 2's :func:`part2_measures.mlp_eager`, imported. The
sentences about "this picture" (the H200's r0, which the page draws) are claimed on that
recording only. The helpers here (:func:`table_rows`, :func:`step_kernels`) are shared by
the other stories of ``03_mlp``.
"""

from __future__ import annotations

import part2_measures as m
from tracesite import profiler_table
from tracesite.facts import Facts, claim
from tracesite.recordings import Recording
from tracesite.words import about, few_bytes, much, no_outlier

import tracereader
from tracereader import Kind, Trace, link, step_times
from tracereader._columns import unpack_xyz
from tracereader._draw import resolve_window

EXAMPLE = "03_mlp"
GPUS = ("h200", "h100")


def table_rows(rec: Recording) -> list[dict[str, str]]:
    """The profiler's table as its text shows it: one dict a row, ``{column: text}``, in the
    table's order (names as printed, cut names ending in ``...``)."""
    return profiler_table.cells(rec.table)


def step_kernels(tr: Trace, step: int) -> list[int]:
    """The kernels (not memsets) launched inside step ``step``, in the order they ran."""
    lk, name = link(tr), tr.steps[step].name
    mine = [
        int(k)
        for k in tr.where(kind=Kind.KERNEL)
        if lk.launch[k] >= 0 and (s := lk.step_of(int(k))) is not None and s.name == name
    ]
    return sorted(mine, key=lambda k: int(tr.ts_ns[k]))


def dims(tr: Trace, op: int) -> str:
    """The op's input shapes as the trace recorded them (``record_shapes=True``)."""
    return str(tr.texts[tr.extra["input_dims"][op]])


def facts(f: Facts) -> None:
    def each() -> None:
        rec, big_rec = f.rec("eager"), f.rec("eager_big")
        te, tb = rec.trace(), big_rec.trace()
        p, pb = rec.params, big_rec.params
        claim(
            p["batch"] * p["seq"] == 8192 and p["dim"] == 768 and p["hidden"] == 3072,
            "the small shape is the Hugging Face series' (8192 tokens of width 768), "
            "64 x 128 tokens, 768 -> 3072",
        )
        claim(
            pb["batch"] * pb["seq"] == 4096 and pb["dim"] == 4096 and pb["hidden"] == 11008,
            "the large one is a Llama-7B-sized MLP over 4096 tokens, 4096 -> 11008",
        )
        e = m.mlp_eager(te, tb, m.HBM_TBS[f.gpu])  # its own claims: Part 2's
        gate, down = m.gemm_roles(te)
        gate_big, down_big = m.gemm_roles(tb)
        claim(e["mlp_kernels"] == 5, "eager: five kernels")
        claim(len({gate, down}) == 2, "eager: two GEMM names")
        claim(down_big == gate, "eager_big: one name, a different job")

        # A forward: three GEMMs, a gelu and a multiply; one a step, three steps.
        claim(len(te.steps) == 3, "the tables below sum three forwards")
        for s in te.steps:
            ops = [
                te.name(int(i)) for i in te.where(kind=Kind.CPU_OP, within=(s.start_ns, s.end_ns))
            ]
            claim(
                ops.count("aten::mm") == 3
                and ops.count("aten::gelu") == ops.count("aten::mul") == 1,
                "a forward is three GEMMs, a gelu and a multiply",
            )
            claim(
                len(
                    te.where(
                        kind=Kind.USER_ANNOTATION, name="mlp_fwd", within=(s.start_ns, s.end_ns)
                    )
                )
                == 1,
                "each step is one forward",
            )

        lk = link(te)
        for i in te.where(name="aten::mm", kind=Kind.CPU_OP):
            chain = [te.name(int(j)) for j in (lk.parent[i], lk.parent[lk.parent[i]])]
            claim(
                chain == ["aten::matmul", "aten::linear"],
                "three GEMMs (aten::mm, each under an aten::linear): aten::linear over "
                "aten::matmul over aten::mm",
            )

        # The table and its key.
        rows = table_rows(rec)
        names = [r["Name"] for r in rows]
        calls = {r["Name"]: r["# of Calls"] for r in rows}
        claim(calls["aten::mm"] == "9", "# of Calls counts three forwards (three GEMMs each)")
        kernel_rows = [
            r for r in rows if r["Name"].startswith(("nvjet_", "void at::native::", "Memset"))
        ]
        claim(
            len(kernel_rows) == 5
            and all(r["Self CPU"] == r["CPU total"] == "0.000us" for r in kernel_rows),
            "the kernel rows (nvjet_..., void at::native::..., Memset) have no CPU time",
        )
        launched = {r["CUDA total"] for r in kernel_rows}
        claim(
            {r["CUDA total"] for r in rows if r["Name"] in ("aten::gelu", "aten::mul")} <= launched,
            "the op that launched each shows the same time in its CUDA columns",
        )
        claim(
            names.count("mlp_fwd") == 2
            and names[0] == "mlp_fwd"
            and rows[0]["Self CPU"] == "0.000us",
            "mlp_fwd has two rows: on the CPU, and on the GPU (the first row)",
        )
        for s, a in zip(te.steps, te.where(kind=Kind.GPU_ANNOTATION, name="mlp_fwd"), strict=True):
            ks = [
                k
                for k in lk.gpu_ops
                if (st := lk.step_of(int(k))) is not None and st.name == s.name
            ]
            claim(
                abs(int(te.ts_ns[a]) - int(min(te.ts_ns[ks]))) < 1000  # the clocks' rounding
                and abs(int(te.end_ns[a]) - int(max(te.end_ns[ks]))) < 1000,
                "the GPU row runs from the start of its first kernel to the end of its last",
            )

        # Five kernels a forward, in Python's order; the memsets.
        counts = sorted(len(te.where(kind=Kind.KERNEL, name=n)) for n in m.kernels(te))
        claim(counts == [3, 3, 3, 6], "this table's 6 + 3 + 3 + 3 kernel calls, over three steps")
        gelu = m.pick(m.kernels(te), lambda n: "Gelu" in n)
        mul = m.pick(m.kernels(te), lambda n: "MulFunctor" in n)
        for k in range(len(te.steps)):
            order = [te.name(i) for i in step_kernels(te, k)]
            claim(
                order == [gate, gelu, gate, mul, down],
                "in every repeat on both GPUs the answer was five kernels per forward: three "
                "nvjet GEMMs, the gelu and the multiply, in Python's order (gate GEMM, gelu, up "
                "GEMM, multiply, down GEMM)",
            )
        claim(
            e["mlp_memsets"] == 2 and few_bytes(e["memset_bytes"]),
            "aten::mm also issued two memsets of a few bytes per forward",
        )
        cut = [n for n in names if n.startswith("void at::native::vectorized_elementwise_kerne")]
        claim(
            len(cut) == 2 and all(n.endswith("...") for n in cut),
            "the table cuts the two elementwise kernels' names",
        )
        listed = [r["name"] for r in tracereader.kernel_table(te).to_records()]
        claim(
            len(set(listed)) == len(listed) == 5 and any("MulFunctor" in n for n in listed),
            "tracereader's list of the kernels shortens them to what tells them apart",
        )

        # The views; the table's bottom rows.
        claim(
            names[-2:] == ["aten::t", "aten::transpose"]
            and all(r["CUDA total"] == "0.000us" for r in rows[-2:]),
            "aten::t and aten::transpose are at the bottom of the table with no CUDA time",
        )
        claim(
            len(rows) == 15
            and not {"aten::reshape", "aten::view"} & set(names)
            and all(
                len(te.where(name=v, kind=Kind.CPU_OP)) for v in ("aten::reshape", "aten::view")
            ),
            "aten::reshape and aten::view, with none either, fell below its 15 rows",
        )

        # The gelu and the multiply: what they move.
        g_ops = te.where(name="aten::gelu", kind=Kind.CPU_OP)
        m_ops = te.where(name="aten::mul", kind=Kind.CPU_OP)
        claim(
            all(dims(te, int(i)) == "[[64,128,3072],[]]" for i in g_ops)
            and all(dims(te, int(i)) == "[[64,128,3072],[64,128,3072]]" for i in m_ops),
            "the gelu reads gate's output (8192 x 3072 values), the multiply that and up's output",
        )
        sheet = tracereader.datasheet(te.device_properties[0]["name"])
        claim(sheet is not None, "a datasheet row for this GPU")
        if sheet is not None:
            rows_k = tracereader.kernel_table(te).to_records()
            tensor, flop = 8192 * 3072 * 2, 2 * 8192 * 768 * 3072
            shares = []
            for r in rows_k:
                if "Gelu" in r["name"] or "Mul" in r["name"]:
                    n_tensors = 2 if "Gelu" in r["name"] else 3
                    shares.append(n_tensors * tensor / r["median_us"] / 1e6 / sheet.hbm_tbs)
                elif r["name"].startswith("nvjet"):
                    shares.append(flop / r["median_us"] / 1e6 / sheet.bf16_tflops)
            claim(
                len(shares) == 4 and min(shares) > 0.5,
                "in every repeat on both GPUs each of these kernels reached more than half of its peak",
            )
            pair = sum(r["total_us"] for r in rows_k if "elementwise" in r["name"])
            claim(
                pair > 0.25 * sum(r["total_us"] for r in rows_k),
                "the gelu and the multiply together took over a quarter of the GPU time",
            )
        claim(e["mul_pct"] > 80, "the multiply is memory-bound on both GPUs")

        # The GEMMs: the same FLOPs, two kernels.
        mm_dims = [dims(te, int(i)) for i in te.where(name="aten::mm", kind=Kind.CPU_OP)][:3]
        claim(
            mm_dims == ["[[8192,768],[768,3072]]"] * 2 + ["[[8192,3072],[3072,768]]"],
            "the three do the same number of FLOPs; down's output (8192 x 768) is narrower "
            "than gate's (8192 x 3072)",
        )

        # The last step on the timeline.
        last = te.steps[-1]
        inside = (last.start_ns, last.end_ns)
        lin = te.dur_ns[te.where(name="aten::linear", kind=Kind.CPU_OP, within=inside)]
        narrow = te.dur_ns[
            [int(i) for n in ("aten::gelu", "aten::mul") for i in te.where(name=n, within=inside)]
        ]
        claim(
            len(lin) == 3 and min(lin) > max(narrow),
            "the three wide blue groups are the Linears; the narrow ones between them the gelu "
            "and the multiply",
        )
        syncs = te.where(contains="Synchronize")
        claim(
            [te.name(int(i)) for i in syncs] == ["cudaDeviceSynchronize"]
            and te.ts_ns[syncs[0]] >= last.end_ns,
            "the red cudaDeviceSynchronize after the step is the profiler's own; the model does "
            "not synchronize",
        )
        if f.gpu == "h200" and f.repeat == 0:  # the picture
            start, end, _ = resolve_window(te, step=last.name)
            earlier = [
                int(k)
                for k in te.where(kind=(Kind.KERNEL, Kind.MEMSET))
                if te.ts_ns[k] < end
                and te.end_ns[k] > start
                and (st := lk.step_of(int(k))) is not None
                and st.name != last.name
            ]
            claim(
                [te.name(k) for k in sorted(earlier, key=lambda k: int(te.ts_ns[k]))]
                == [gate, mul, down]
                and te.ts_ns[min(earlier)] < start,
                "in this picture the first kernels on the GPU lane are the previous step's (the "
                "end of its up GEMM, its multiply and its down GEMM)",
            )
            mine = step_kernels(te, -1)
            label = te.where(name="mlp_fwd", kind=Kind.USER_ANNOTATION, within=inside)[0]
            drawn = step_times(te)[-1]
            claim(
                max(te.end_ns[mine]) - te.end_ns[label] > 0.5 * drawn.gpu_busy_us * 1e3,
                "the CPU finished mlp_fwd long before the GPU finished them",
            )
            claim(
                drawn.span_start_ns is not None and drawn.span_start_ns > drawn.start_ns,
                "the span starts where the previous step's kernels end, as in this picture",
            )

        # eager_big: kernels the window caught without their launch.
        lb = link(tb)
        n_mm = len(tb.where(name="aten::mm", kind=Kind.CPU_OP))
        gemms = len(tb.where(kind=Kind.KERNEL, prefix="nvjet"))
        mul_big = m.pick(m.kernels(tb), lambda n: "MulFunctor" in n)
        muls = len(tb.where(kind=Kind.KERNEL, name=mul_big))
        mm_cuda = sum(
            float(tb.dur_ns[lb.gpu_ops_of(int(i))].sum())
            for i in tb.where(name="aten::mm", kind=Kind.CPU_OP)
        )
        claim(
            n_mm == 9
            and gemms > n_mm
            and muls > len(tb.where(name="aten::mul", kind=Kind.CPU_OP)) == 3
            and len(tb.where(kind=Kind.MEMSET)) > n_mm
            and float(tb.dur_ns[tb.where(kind=Kind.KERNEL)].sum()) > mm_cuda,
            "this table's counts: more GEMM kernels than aten::mm calls, more multiply kernels "
            "than aten::mul calls, more memsets, and more kernel time than aten::mm's CUDA total",
        )
        claim(
            all(s.gpu_busy_us > 3 * s.cpu_us for s in step_times(tb)),
            "at this shape a step's kernels take several times longer than the CPU needs to "
            "launch them",
        )
        early = [int(i) for i in lb.gpu_ops if lb.launch[i] < 0]
        early_names = [tb.name(i) for i in early]
        early_gemms = [n for n in early_names if n.startswith("nvjet")]
        claim(
            gemms == n_mm + len(early_gemms)
            and muls == 3 + early_names.count(mul_big)
            and len(tb.where(kind=Kind.MEMSET)) == n_mm + early_names.count("Memset (Device)")
            and all(
                len(lb.gpu_ops_of(int(i))) for i in tb.where(name="aten::mm", kind=Kind.CPU_OP)
            ),
            "the last kernels of the forward before the window ran inside it, so the trace has "
            "them, but their launch calls came before it: they belong to no op of the table",
        )
        claim(
            {mul_big, down_big}
            <= set(early_names)
            <= {mul_big, down_big, gate_big, "Memset (Device)"}
            and early_names.count("Memset (Device)") == len(early_gemms)
            and sorted(early_gemms) in (sorted([down_big]), sorted([down_big, gate_big])),
            "in every repeat on both GPUs these were that forward's multiply and down GEMM, in "
            "some also its up GEMM, with their memsets",
        )
        claim(
            all(lk.launch[i] >= 0 for i in lk.gpu_ops),
            "at the small shape there were none",
        )
        if gate_big not in early_names:
            claim(
                min(tb.ts_ns[lb.gpu_ops]) > tb.steps[0].start_ns,
                "where the up GEMM is missing, the GPU looks idle at the start of the first step",
            )

        # One name, two jobs; persistent GEMMs.
        claim("192x192" in gate_big, "here gate and up ran a 192x192 kernel")
        claim(
            "256x128" in down_big and down_big == gate,
            "down ran the 256x128 one that gate and up ran at the small shape",
        )
        claim(
            m.launch_config(te, gate) == m.launch_config(tb, down_big)
            and m.kernels(tb)[down_big] > 5 * m.kernels(te)[gate],
            "in every repeat on both GPUs the 256x128 kernel ran the same grid and block for "
            "both jobs, and took many times as long on the larger",
        )
        sms = int(te.device_properties[0]["numSms"])
        for tr in (te, tb):
            nv = tr.where(kind=Kind.KERNEL, prefix="nvjet")
            claim(
                sms == 132
                and all(int(tr.extra["grid"][i]) == sms for i in nv)
                and {unpack_xyz(int(tr.extra["grid_xyz"][i])) for i in nv} == {(2, 66, 1)},
                "each starts one thread block per SM (these GPUs have 132); these GEMMs' grid is "
                "2 x 66 x 1, 132 blocks",
            )

    f.repeats(each, n=f.n_repeats("eager"))
    claim(
        f.n_repeats("eager") == f.n_repeats("eager_big") == 3,
        "the recorder ran each three times (repeats r0, r1 and r2) on an H200 and on an H100",
    )

    # Across the repeats of this GPU: the verdicts, the busy time, the CPU time.
    steps = [step_times(r.trace()) for r in f.recs("eager")]
    verdicts = {s.verdict for st in steps for s in st}
    claim(
        {"CPU-bound", "GPU-bound"} <= verdicts,
        "at this shape the verdict varies: on both GPUs the recorded steps range from CPU-bound "
        "to GPU-bound",
    )
    claim(
        no_outlier([s.span_busy_us for st in steps for s in st]),
        "the GPU's busy time was about the same in every step of every repeat",
    )
    cpu = [s.cpu_us for st in steps for s in st]
    claim(
        not no_outlier(cpu) and all(st[0].cpu_us == max(s.cpu_us for s in st) for st in steps),
        "the CPU's time is what changed, longest in the first recorded step of every repeat",
    )
    if f.gpu == "h200":  # sentences about both GPUs' recordings, checked once
        h100 = f.on("h100")

        def up_early(t: Trace) -> bool:
            lb = link(t)
            return m.gemm_roles(t)[0] in {t.name(int(i)) for i in lb.gpu_ops if lb.launch[i] < 0}

        claim(
            any(up_early(r.trace()) for reader in (f, h100) for r in reader.recs("eager_big")),
            "in some also its up GEMM",
        )
        mul: dict[str, list[float]] = {}
        gelu: dict[str, list[float]] = {}
        for gpu, reader in (("h200", f), ("h100", h100)):
            ks = [m.kernels(r.trace()) for r in reader.recs("eager")]
            mul[gpu] = [next(us for n, us in k.items() if "MulFunctor" in n) for k in ks]
            gelu[gpu] = [next(us for n, us in k.items() if "Gelu" in n) for k in ks]
        bw = m.HBM_TBS["h200"] / m.HBM_TBS["h100"]
        claim(
            all(about(b / a, bw) for a in mul["h200"] for b in mul["h100"]),
            "on the H100 the multiply took longer by about the ratio of the two bandwidths, in "
            "every repeat",
        )
        gelu_grew = [b / a - 1 for a in gelu["h200"] for b in gelu["h100"]]
        mul_grew = [b / a - 1 for a in mul["h200"] for b in mul["h100"]]
        claim(much(min(mul_grew), max(gelu_grew)), "the gelu's time grew much less there")
