"""Story 02a's claims (examples/02_linear/02a_one_linear.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. It pastes nothing: the story
prints its numbers from the replay.

Its four variants are recorded on the H200 and the H100; the sentences the story says of
the H200 only are claimed under ``f.gpu == "h200"``. The Linear's structure (the views that
launch nothing, one GEMM with the bias in its name) is Part 2's
:func:`part2_measures.linear`, what compiling changes its :func:`part2_measures.linear_compile`,
the profiler's closing synchronize Part 1's :func:`part1_measures.sync_window`, all imported.
These recordings have no ``table.json``: the table's columns are read with
:func:`tracereader.op_table`, which computes the same table from the trace.
"""

from __future__ import annotations

from typing import Any

import part1_measures as p1
import part2_measures as m
from tracesite.facts import Facts, claim
from tracesite.words import about, tiny

from tracereader import Kind, Trace, kernel_table, link, op_table
from tracereader._link import SYNC_APIS

EXAMPLE = "02_linear"
GPUS = ("h200", "h100")
VARIANTS = ("small", "big", "small_compile", "big_compile")
SHAPES = {"small": (1024, 32, 64), "big": (8192, 4096, 4096)}


def step_gpu_ops(tr: Trace, step: int) -> list[int]:
    """The GPU operations launched inside step ``step``, in the order they ran."""
    lk = link(tr)
    mine = [int(i) for i in lk.gpu_ops if lk.launch[i] >= 0 and lk.step[i] == step % len(tr.steps)]
    return sorted(mine, key=lambda i: int(tr.ts_ns[i]))


def last_step_op(tr: Trace, name: str) -> int:
    """The op ``name`` of the last step."""
    return p1.first(tr, name=name, within=p1.in_step(tr))


def facts(f: Facts) -> None:
    def each() -> None:
        recs = {v: f.rec(v) for v in VARIANTS}
        small, big, small_c, big_c = (recs[v].trace() for v in VARIANTS)
        part1 = f.rec("64_bf16", "01_matmul_add").trace()
        lin: dict[str, Any] = m.linear(small, big, part1)  # its own claims
        comp: dict[str, Any] = m.linear_compile([(small, small_c), (big, big_c)])

        # The page's table, and the docstring
        claim(
            all(
                (r.params["batch"], r.params["in_dim"], r.params["out_dim"])
                == SHAPES[v.removesuffix("_compile")]
                and bool(r.params.get("compile")) == v.endswith("_compile")
                for v, r in recs.items()
            ),
            "small: 1024 x 32 -> 64; big: 8192 x 4096 -> 4096; the _compile variants compiled",
        )
        per_step = {
            v: [step_gpu_ops(t, k) for k in range(len(t.steps))]
            for v, t in (("small", small), ("big", big))
        }
        big_rows = kernel_table(big).to_records()
        gemm_us = next(
            float(r["median_us"]) for r in big_rows if str(r["name"]).startswith("nvjet")
        )
        memset_us = next(
            float(r["median_us"]) for r in big_rows if str(r["name"]).startswith("Memset")
        )
        claim(
            all(
                [small.name(i) for i in s] == [lin["k_small"].strip("`")] for s in per_step["small"]
            )
            and all(
                len(s) == 2
                and int(big.kind[s[0]]) == Kind.MEMSET
                and big.name(s[1]) == lin["k_big"].strip("`")
                for s in per_step["big"]
            )
            and tiny(memset_us, gemm_us),
            "there is one GEMM kernel (at the large shape a tiny memset runs before it)",
        )
        if f.gpu == "h200":
            claim(
                all("H200" in r.env["gpu"] and f.n_repeats(v) > 1 for v, r in recs.items()),
                "The recorder ran every one of them on an H200, several times",
            )
        lk = link(small)
        claim(
            all(
                len(
                    small.where(
                        kind=Kind.USER_ANNOTATION, name="linear_fwd", within=(s.start_ns, s.end_ns)
                    )
                )
                == 1
                for s in small.steps
            )
            and len(small.where(kind=Kind.GPU_ANNOTATION, name="linear_fwd")) == len(small.steps)
            and small.extra["input_dims"][last_step_op(small, "aten::addmm")] >= 0,
            'every forward runs inside record_function("linear_fwd"), so each step has a '
            "labelled range on the CPU lane, and on the GPU lane; record_shapes=True makes the "
            "trace carry each op's input shapes",
        )

        # The small Linear: the table
        ops = {r["name"]: r for r in op_table(small).to_records()}
        addmm = last_step_op(small, "aten::addmm")
        if f.gpu == "h200":
            kids = [
                small.name(int(i))
                for i in small.where(kind=Kind.CPU_OP)
                if lk.parent[i] >= 0 and small.name(int(lk.parent[i])) == "aten::linear"
            ]
            claim(
                set(kids) == {"aten::t", "aten::addmm"}
                and ops["aten::t"]["total_gpu_us"] == 0
                and ops["aten::t"]["gpu_ops"] == 0,
                "On the H200, aten::linear calls two ops. aten::t (which calls aten::transpose, "
                "which calls aten::as_strided) has no CUDA time at all ... and launches nothing",
            )
            claim(
                len(lk.gpu_ops_of(addmm)) == 1
                and small.name(int(lk.gpu_ops_of(addmm)[0])).startswith("nvjet")
                and small.name(int(lk.gpu_ops_of(addmm)[0])).endswith("bias_TNT"),
                "aten::addmm launches the one kernel of the step, an nvjet GEMM whose name ends "
                "in bias_TNT",
            )
        claim(
            m.gpu_ops_per_step(small) == 1,
            "So the transpose and the add cost no kernel: three operations on paper, one on the "
            "GPU",
        )

        # The large Linear: the table
        b, i, o = SHAPES["big"]
        claim(
            about(2 * b * i * o / 1e9, 275),
            "about 275 GFLOP (billion floating-point operations) per forward",
        )
        gemm_row = next(r for r in big_rows if str(r["name"]).startswith("nvjet"))
        aten_big = [n for n in m.step_ops(big) if n.startswith("aten::")]
        aten_small = [n for n in m.step_ops(small) if n.startswith("aten::")]
        claim(gemm_row["pct"] > 90, "The GEMM now dominates the GPU time")
        claim(
            gemm_row["median_us"] > big.steps[-1].dur_us,
            "at the big one the GEMM's time is no longer lost in launch costs",
        )
        claim(
            aten_big == aten_small
            and m.gpu_ops_per_step(big) == m.gpu_ops_per_step(small) + 1
            and m.NVJET.fullmatch(lin["k_big"].strip("`")) is not None
            and tiny(memset_us, gemm_us),
            "the same ops call the same kinds of kernel, with one more GPU operation per step: a "
            "tiny Memset (Device) before the GEMM",
        )
        claim(
            about(lin["big_tflops"], 0.8 * m.SPEC_TFLOPS),
            "this one ran at about four fifths of the H200's datasheet dense bf16 peak, "
            "989 TFLOP/s",
        )

        # One forward pass on the timeline
        for name, tr in (("small", small), ("big", big)):
            lt = link(tr)
            a = last_step_op(tr, "aten::addmm")
            t_op = last_step_op(tr, "aten::t")
            claim(
                any(int(tr.kind[g]) == Kind.KERNEL for g in lt.gpu_ops_of(a))
                and not len(lt.gpu_ops_of(t_op)),
                f"Follow the arrow from aten::addmm on the CPU lane to its kernel on the GPU lane: "
                f"aten::t has none ({name})",
            )
        lb = link(big)
        last = len(big.steps) - 1
        step = big.steps[-1]
        gemms = sorted(
            (int(g) for g in big.where(kind=Kind.KERNEL, prefix="nvjet")),
            key=lambda g: int(big.ts_ns[g]),
        )
        mine = [g for g in gemms if lb.step[g] == last]
        claim(
            len(mine) == 1 and big.ts_ns[mine[0]] > step.end_ns,
            "At the large shape the GPU runs behind the CPU",
        )
        running = [g for g in gemms if big.ts_ns[g] < step.start_ns < big.end_ns[g]]
        claim(
            len(running) == 1 and last - 2 <= lb.step[running[0]] < last,
            "The first GEMM on its lane is an earlier step's (one or two steps back), still "
            "running when this step begins",
        )
        before = gemms[gemms.index(mine[0]) - 1] if mine and gemms.index(mine[0]) else -1
        claim(
            before >= 0 and 0 <= big.ts_ns[mine[0]] - big.end_ns[before] < 5_000,
            "this step's GEMM, where the arrow ends, starts when the one before it finishes",
        )
        sync, (_, sync_end) = p1.sync_window(big)  # its own claims: the profiler's, after the step
        claim(
            big.name(sync) in SYNC_APIS and sync_end >= int(big.end_ns[lb.gpu_ops].max()),
            "The red bar after the step is the profiler's own cudaDeviceSynchronize as it stops: "
            "the CPU waiting for the GPU to finish",
        )

        # Can torch.compile help one Linear?
        kc = {
            v: set(m.kernels(t))
            for v, t in (("small", small), ("big", big), ("small_c", small_c), ("big_c", big_c))
        }
        claim(
            kc["small"] == kc["small_c"]
            and kc["big"] == kc["big_c"]
            and all(n.startswith("nvjet") for n in kc["small_c"] | kc["big_c"]),
            "The kernel is the same, name for name: in its default mode Inductor calls cuBLAS "
            "for every GEMM",
        )
        lc = link(small_c)
        c_ops = m.step_ops(small_c)
        a_c = last_step_op(small_c, "aten::addmm")
        claim(
            [n for n in c_ops if n.startswith("aten::")] == ["aten::addmm"]
            and small_c.name(int(lc.parent[a_c])).startswith("## Call CompiledFxGraph")
            and {"TorchDynamo Cache Lookup", "AOTDispatcher Runtime Wrapper Prologue"}
            <= set(c_ops),
            "What changed is the CPU side: the views are gone, aten::addmm is called directly ..., "
            "and the compiled-code runtime's frames take their place (the guards ..., and the "
            "wrappers around the compiled code)",
        )
        if f.gpu == "h200":
            claim(
                about(comp["big_comp_ratio"], 1),
                "At the big shape ... the compiled GEMM took about as long as the eager one on "
                "the H200",
            )

    f.repeats(each, n=min(f.n_repeats(v) for v in VARIANTS))
