"""Story 01f's claims (examples/01_matmul_add/01f_compile.py): each sentence its text says
about the recordings, checked on every repeat of both GPUs. It pastes nothing: the story
prints its numbers from the replay.

Its six variants are recorded on the H200 and the H100; the sentences the story says of the
H200 only are claimed under ``f.gpu == "h200"``. What compiling changes (the same two GPU
operations, one ``aten::addmm``, the new frames, the 32 MiB copy, reduce-overhead's graph)
is Part 1's :func:`part1_measures.compile_facts`; the fused Triton GEMM against cuBLAS and
the copy is its notes' :func:`part1_notes.fused_facts`; CPU time compared fairly is the
interleaved run of story 01g (:func:`story_01g_cpu_time.ratios`, and its
:func:`~story_01g_cpu_time.eager_spread`): all imported. The eager step the story
describes is ``64_bf16``, recorded in the same process.
"""

from __future__ import annotations

from typing import Any

import part1_measures as m
import part1_notes
import part2_measures as p2
import story_01g_cpu_time as g
from tracesite.facts import Facts, claim
from tracesite.words import about, tiny

from tracereader import Kind, Trace, kernel_table, link

EXAMPLE = "01_matmul_add"
GPUS = ("h200", "h100")
VARIANTS = (
    "64_bf16_compile",
    "64_bf16_addmm",
    "64_bf16_reduce_overhead",
    "4096_bf16_compile",
    "4096_bf16_autotune",
    "4096_bf16_triton_gemm",
)
COMPILE_FRAMES = ("TorchDynamo Cache Lookup", "Torch-Compiled Region", "## Call CompiledFxGraph")


def step_gpu_ops(tr: Trace) -> list[list[str]]:
    """Each step's GPU operations (by the step their launch call sits in), in the order they
    ran."""
    lk = link(tr)
    out: list[list[str]] = [[] for _ in tr.steps]
    for i in sorted(lk.gpu_ops, key=lambda i: int(tr.ts_ns[i])):
        if lk.launch[i] >= 0 and lk.step[i] >= 0:
            out[int(lk.step[i])].append(tr.name(int(i)))
    return out


def gemm_stack(tr: Trace) -> list[str]:
    """The CPU stack that launched the last step's GEMM, outermost first."""
    lk = link(tr)
    gemm = m.first(tr, kind=Kind.KERNEL, prefix="nvjet", within=m.in_step(tr, -1, 100_000))
    return [tr.name(i) for i in lk.stack(gemm)]


def facts(f: Facts) -> None:
    def each() -> None:
        t = f.trace
        eager, comp, addmm, ro = (
            t(v) for v in ("64_bf16", "64_bf16_compile", "64_bf16_addmm", "64_bf16_reduce_overhead")
        )
        comp4k, tuned, fused = (
            t(v) for v in ("4096_bf16_compile", "4096_bf16_autotune", "4096_bf16_triton_gemm")
        )
        c: dict[str, Any] = m.compile_facts(eager, comp, addmm, ro, comp4k)  # its own claims

        # The variants
        if f.gpu == "h200":
            claim(
                all("H200" in f.rec(v).env["gpu"] and f.n_repeats(v) > 1 for v in VARIANTS),
                "The recordings this page shows were made on an NVIDIA H200, each variant "
                "several times",
            )

        # The compiled step
        eager_steps = step_gpu_ops(eager)
        claim(
            all(
                len(s) == 2 and s[0].startswith("nvjet") and "elementwise" in s[1]
                for s in eager_steps
            )
            and not len(eager.where(kind=(Kind.MEMCPY, Kind.MEMSET))),
            "In eager mode (plain PyTorch, not compiled) each step runs two kernels: the GEMM, "
            "then the add",
        )
        claim(
            c["c_ops"] == 2 and all(len(s) == 2 for s in step_gpu_ops(comp)),
            "Compiled, the step still runs two GPU operations",
        )
        comp_steps = step_gpu_ops(comp)
        claim(
            all(
                s[0].startswith("Memcpy DtoD") and s[1].startswith("nvjet") and "_badd_" in s[1]
                for s in comp_steps
            ),
            "a Memcpy DtoD first seeds the output with b, and the GEMM (badd in its name) adds "
            "its product onto it",
        )
        comp_names = {comp.name(int(i)) for i in comp.where(within=m.in_step(comp))}
        claim(
            "TorchDynamo Cache Lookup" in comp_names
            and any(n.startswith("Torch-Compiled Region") for n in comp_names),
            "What did change is on the CPU: new frames around the call, among them guards",
        )
        rec = f.rec("64_bf16_compile")
        top = rec.table_rows()[0]
        claim(
            top["name"] == "matmul_add"
            and top["self_cpu_us"] == 0
            and len(comp.where(kind=Kind.GPU_ANNOTATION, name="matmul_add")) == len(comp.steps)
            and top["self_cuda_us"] > rec.table_totals_us()["self_cuda_us"],
            "The matmul_add row with no CPU time is the label's GPU-side span ... so its Self "
            "CUDA % can pass 100 %",
        )
        stack = gemm_stack(comp)
        region = [i for i, n in enumerate(stack) if n.startswith("Torch-Compiled Region")]
        fx = [i for i, n in enumerate(stack) if n.startswith("## Call CompiledFxGraph")]
        claim(
            len(region) == 1
            and len(fx) == 1
            and region[0] < fx[0] < stack.index("aten::addmm")
            and "TorchDynamo Cache Lookup" in comp_names,
            "the timeline shows the new frames on the CPU lane: Torch-Compiled Region around "
            "the call, the guard checks, and a CompiledFxGraph call that runs Inductor's "
            "generated code, which in turn calls aten::addmm",
        )

        # torch.addmm by hand
        addmm_names = {addmm.name(int(i)) for i in range(len(addmm))}
        claim(
            step_gpu_ops(addmm) == comp_steps
            and not any(n.startswith(COMPILE_FRAMES) for n in addmm_names)
            and len(gemm_stack(addmm)) < len(stack),
            "It gives the compiled program without the compile frames: the same copy, the same "
            "badd GEMM, and a shorter CPU stack",
        )

        # CUDA graphs: reduce-overhead
        lro = link(ro)
        graph_ops = [
            sorted(ro.name(int(i)) for i in lro.gpu_ops_of_call(int(call)))
            for call in ro.where(name="cudaGraphLaunch")
        ]
        claim(
            len(graph_ops) == len(ro.steps)
            and all(ops == sorted(comp_steps[0]) for ops in graph_ops),
            "one cudaGraphLaunch per step releases the copy and the GEMM",
        )
        copy_kernel = m.input_copy_kernel(ro)
        gemm = m.first(ro, kind=Kind.KERNEL, prefix="nvjet", within=m.in_step(ro, -1, 100_000))
        claim(
            c["r_ops"] == 3 and ro.dur_ns[copy_kernel] < ro.dur_ns[gemm],
            "each call first copies your inputs into the graph's own buffers: one more small "
            "kernel, three GPU operations per step",
        )
        inter = g.ratios(f.rec(g.VARIANT))  # CPU time per call, interleaved in one process
        claim(
            inter["uir_us"] > inter["uic_us"] and inter["uir_us"] > inter["uie_us"],
            "A graph saves the launches of many kernels, and here there are only two, so it "
            "does not save CPU time either",
        )

        # At 4096x4096: the copy costs GPU time
        claim(c["cp_mb"] == 32, "the Memcpy DtoD that seeds the output moves a 32 MiB matrix")
        big_steps = step_gpu_ops(comp4k)
        rows = kernel_table(comp4k).to_records()
        gemm_us = next(float(r["median_us"]) for r in rows if str(r["name"]).startswith("nvjet"))
        memset_us = next(float(r["median_us"]) for r in rows if str(r["name"]).startswith("Memset"))
        claim(
            all(
                len(s) == 3
                and s[0].startswith("Memcpy DtoD")
                and s[1].startswith("Memset")
                and s[2].startswith("nvjet")
                for s in big_steps
            )
            and tiny(memset_us, gemm_us)
            and not len(comp.where(kind=Kind.MEMSET)),
            "kernel_table lists both, with a tiny memset that cuBLAS queues before every GEMM "
            "this large",
        )
        if f.gpu == "h200":
            claim(
                c["cp_us"] < m.A100["copy_us"],
                "The Hugging Face post timed the same copy on its A100; on the H200 it was quicker "
                "than that",
            )

        # A truly fused kernel
        fz: dict[str, Any] = part1_notes.fused_facts(t("4096_bf16"), comp4k, fused, tuned)
        claim(
            all(
                len(s) == 1 and s[0].startswith("triton_tem_fused_addmm")
                for s in step_gpu_ops(fused)
            ),
            "the compiler writes one: a single triton_tem_fused_addmm kernel per step",
        )
        if f.gpu == "h200":
            claim(
                about(fz["fused_us"], fz["cublas_us"] + fz["copy_us4k"]),
                "On the H200 it took about as long as cuBLAS's GEMM and the copy together",
            )
            per_step = [fz[f"step_gpu_{k}"] for k in ("eager", "cublas", "fused")]
            claim(
                about(max(per_step), min(per_step)),
                "so per step eager, compiled and fused kept the GPU busy for about the same time",
            )
        else:
            ratio = fz["fused_us"] / (fz["cublas_us"] + fz["copy_us4k"])
            claim(
                1 < ratio < 1.2,
                "on the H100 it took longer than the two together, by under a fifth",
            )
            per_step = [fz[f"step_gpu_{k}"] for k in ("eager", "cublas", "fused")]
            claim(
                max(per_step) == fz["step_gpu_fused"],
                "on the H100 the fused kernel kept the GPU busy longest per step",
            )

        claim(
            fz["step_gpu_fused"] >= fz["step_gpu_cublas"],
            "Fusing saved a copy, not time",
        )

        # max-autotune
        claim(
            all(not r.meta["process"]["fresh_compile_cache"] for r in f.recs("4096_bf16_autotune")),
            "Our repeats shared one compile cache, so they are not independent draws",
        )
        # The CPU side of each step (a queued GPU op may start after its step ends).
        per_step_names = [p2.step_ops(tuned, k)[1:] for k in range(len(tuned.steps))]
        claim(
            all(n == per_step_names[0] for n in per_step_names)
            and len({tuned.name(int(i)) for i in tuned.where(kind=Kind.KERNEL)}) == 1,
            "the harness's five untimed calls keep that out of the profile, as for every "
            "compiled variant",
        )

        # What the chapter concluded
        claim(
            c["c_ops"] == c["e_ops"] and "aten::addmm" in comp_names,
            "it rewrote them as addmm ... as many GPU operations per step as eager ran",
        )
        claim(
            inter["u_c_over_e"] > 1 + g.MARGIN,
            "Here the count did not drop, and the compiled call cost more CPU time than the "
            "eager one",
        )
        claim(
            g.eager_spread(f) > 0.1,
            "How much more cannot be read from runs profiled one after the other, since CPU "
            "time moves between runs",
        )

    f.repeats(each, n=min(f.n_repeats(v) for v in VARIANTS))
