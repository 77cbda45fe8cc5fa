"""Part 5's facts (``chapters/part5.md``): one training step of a 1.24 B Llama.

Every number the page quotes and every claim it makes about the recordings of
``06_train_step``, computed by :mod:`part5_measures` and checked on every repeat.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import _peers
import numpy as np
import part5_measures as m
from tracesite.facts import Facts, claim
from tracesite.words import about, beyond_spread, few, most, nearly_all, times

import tracereader
from tracereader import Kind

EXAMPLE = "06_train_step"
#: Every claim is checked on both GPUs' recordings; the H100's keys are pasted as h100_*.
GPUS = ("h200", "h100")


def facts(f: Facts) -> None:
    # Any: a recording's results and timings are optional in general, present in 06's.
    rec: Any = f.rec
    recs: Any = f.recs
    num, md, nums = f.num, f.md, f.nums

    md("stamp", f.stamp())
    if f.gpu == "h200":
        beside_torchtitan(f, two_gpus(f))
    num("n_repeats", len(recs("eager")))
    rows = {
        v: m.results_row(
            [r.results for r in recs(v)],
            [r.timings() for r in recs(v)],
            recs(v)[0].params.get("weights", "fp32"),
        )
        for v in m.ATTEMPTS
    }
    nums(
        {
            "eager_step_ms": rows["eager"]["step_ms"],
            "eager_peak_gib": rows["eager"]["peak_gib"],
            "eager_foreach_step_ms": rows["eager_foreach"]["step_ms"],
            "eager_bf16_peak_gib": rows["eager_bf16"]["peak_gib"],
            "eager_bf16_step_ms": rows["eager_bf16"]["step_ms"],
            "eager_checkpoint_step_ms": rows["eager_checkpoint"]["step_ms"],
            "eager_checkpoint_peak_gib": rows["eager_checkpoint"]["peak_gib"],
            "loader_inline_step_ms": rows["loader_inline"]["step_ms"],
            "loader_async_step_ms": rows["loader_async"]["step_ms"],
            "compile_step_ms": rows["compile"]["step_ms"],
            "compile_peak_gib": rows["compile"]["peak_gib"],
            "compile_mfu": rows["compile"]["mfu"],
            "causal_tokens_per_s": rows["causal"]["tokens_per_s"],
            "causal_mfu": rows["causal"]["mfu"],
            "final_tokens_per_s": rows["final"]["tokens_per_s"],
            "final_mfu": rows["final"]["mfu"],
        }
    )
    if f.gpu == "h200":  # the same variants on the H100, beside: tokens/s and MFU
        other: Any = f.on("h100")  # a recording's results are optional in general
        h100_rows = {
            v: m.results_row(
                [r.results for r in other.recs(v)],
                [r.timings() for r in other.recs(v)],
                other.recs(v)[0].params.get("weights", "fp32"),
            )
            for v in m.ATTEMPTS
        }
        md("results_table", m.results_table(rows, beside=("H100", h100_rows)))
    else:
        md("results_table", m.results_table(rows))
    m.check_attempts(rows)  # every claim of the goal's section, on every repeat
    every = [r for v in (*m.ATTEMPTS, "memory") for r in recs(v)]
    env = [r.meta["env"] for r in every]
    claim(
        len({e["gpu_uuid"] for e in env}) == 1
        and not any(w in k for e in env for k in e for w in ("clock", "power"))
        and not any(
            r.meta["process"]["fresh_compile_cache"]
            for v in m.ATTEMPTS[m.ATTEMPTS.index("compile") :]
            for r in recs(v)
        ),
        "every recording on one GPU, no record of clocks or power; compiled repeats share a cache",
    )
    step = {v: [r.results["step_ms"] for r in recs(v)] for v in m.ATTEMPTS}
    tokens = {v: [r.results["tokens_per_s"] for r in recs(v)] for v in m.ATTEMPTS}
    num("loader_workers_step_ms", rows["loader_workers"]["step_ms"])
    claim(
        beyond_spread(step["loader_workers"], step["loader_async"])
        and beyond_spread(step["eager"], step["loader_async"]),
        "loader_async's step is shorter than the workers' and eager's in every repeat",
    )
    num(
        "b16_gain_pct",
        100 * (rows["causal_b16"]["tokens_per_s"] / rows["causal"]["tokens_per_s"] - 1),
    )
    claim(
        beyond_spread(tokens["causal_b16"], tokens["causal"]),
        "batch 16 trains more tokens per second than causal, in every repeat",
    )
    # What to do, ranked: each change's step time before and after (same batch), by the
    # share of the step it saved
    changes = {
        "workers": ("loader_inline", "loader_workers"),
        "compile": ("eager", "compile"),
        "causal": ("compile_b8_bf16", "causal"),
        "bf16": ("eager", "eager_bf16"),
        "fused": ("eager_foreach", "eager"),
    }
    gains = {}
    for key, (before, after) in changes.items():
        claim(
            rows[before]["batch"] == rows[after]["batch"]
            and beyond_spread(step[before], step[after]),
            f"{after}'s step is shorter than {before}'s in every repeat",
        )
        gains[key] = 100 * (1 - rows[after]["step_ms"] / rows[before]["step_ms"])
        nums(
            {
                f"g_{key}_before": rows[before]["step_ms"],
                f"g_{key}_after": rows[after]["step_ms"],
                f"g_{key}_pct": gains[key],
            }
        )
    claim(list(gains) == sorted(gains, key=lambda k: -gains[k]), "the changes ranked by gain")
    first = [x.results["first_step_s"] for x in recs("compile")]
    num("first_lo", min(first))
    num("first_hi", max(first))
    claim(max(first) > 5 * min(first), "the first compiled step takes many times the others")
    params = recs("eager")[0].timings()["params"]
    num("credit_2048", m.credit_pct(cast(int, rows["causal"]["seq"]), params))
    num("credit_8192", m.credit_pct(cast(int, rows["final"]["seq"]), params))
    # bf16 weights with no fp32 copy: rounding to nearest keeps an update only if it is
    # larger than half the gap to the neighbouring bf16 value. An Adam update is of the
    # order of the learning rate. At 1.0, where the RMSNorm weights start, half the gap is
    # far above it; near the initial weights' spread, it is below it.
    story = Path(__file__).resolve().parents[2] / "examples" / EXAMPLE / f"{EXAMPLE}.py"
    (lr_text,) = re.findall(r"AdamW\(.*?\blr=([0-9.e-]+)", story.read_text(encoding="utf-8"))
    lr = float(lr_text)
    half_one, half_std = m.bf16_gap(1.0) / 2, m.bf16_gap(m.INIT_STD) / 2
    nums(
        {
            "init_std": m.INIT_STD,
            "half_gap_std_e4": half_std * 1e4,
            "half_gap_one_e3": half_one * 1e3,
            "adam_lr_e4": lr * 1e4,
        }
    )
    half_below = m.bf16_gap(1.0 - 1e-6) / 2  # the gap to the next value down is half as wide
    num("half_gap_below_e3", half_below * 1e3)
    claim(
        times(half_below, lr, 19) and half_one > half_below,
        "at 1.0 half the bf16 gap, up or down, is at least 19 times the learning rate",
    )
    claim(half_std < lr, "near the initial weights' spread, half the gap is below lr")
    claim(
        beyond_spread(
            [rows["eager"]["step_ms_min"], rows["eager"]["step_ms_max"]],
            [rows["eager_bf16"]["step_ms_min"], rows["eager_bf16"]["step_ms_max"]],
        ),
        "bf16 weights shorten the eager step beyond the spread",
    )

    eager_steps: list[dict[str, Any]] = []  # each repeat's m.step_facts

    def each_repeat() -> None:
        s = m.step_facts(f.trace("eager"))
        eager_steps.append(s)
        nums(
            {
                "s_forward_cpu_ms": s["forward_cpu_ms"],
                "s_forward_kernels": s["forward_kernels"],
                "s_forward_gpu_ms": s["forward_gpu_ms"],
                "s_loss_cpu_ms": s["loss_cpu_ms"],
                "s_loss_kernels": s["loss_kernels"],
                "s_loss_gpu_ms": s["loss_gpu_ms"],
                "s_backward_cpu_ms": s["backward_cpu_ms"],
                "s_backward_kernels": s["backward_kernels"],
                "s_backward_gpu_ms": s["backward_gpu_ms"],
                "s_optimizer_cpu_ms": s["optimizer_cpu_ms"],
                "s_optimizer_kernels": s["optimizer_kernels"],
                "s_optimizer_gpu_ms": s["optimizer_gpu_ms"],
                "s_step_kernels": s["step_kernels"],
                "s_evaluate_ops": s["evaluate_ops"],
                "s_accumulate_grads": s["accumulate_grads"],
                "s_bwd_over_fwd_loss": s["bwd_over_fwd_loss"],
                "s_gpu_busy_pct": s["gpu_busy_pct"],
                "s_launch_done_ms": s["launch_done_ms"],
                "s_item_ms": s["item_ms"],
                "s_first_kernel_ms": s["first_kernel_ms"],
                "s_tail_ms": s["tail_ms"],
                "s_n_gaps": s["n_gaps"],
            }
        )
        fused, foreach, forloop = (
            m.optimizer_facts(f.trace(v)) for v in ("eager", "eager_foreach", "eager_forloop")
        )
        nums(
            {
                "fused_kernels": fused["kernels"],
                "fused_cpu_ms": fused["cpu_ms"],
                "fused_gpu_ms": fused["gpu_ms"],
                "foreach_kernels": foreach["kernels"],
                "foreach_cpu_ms": foreach["cpu_ms"],
                "foreach_gpu_ms": foreach["gpu_ms"],
                "forloop_kernels": forloop["kernels"],
                "forloop_cpu_ms": forloop["cpu_ms"],
                "forloop_gpu_ms": forloop["gpu_ms"],
                "forloop_queue_ms": forloop["queue_ms"],
            }
        )
        claim(
            few(round(forloop["kernels"] / s["accumulate_grads"])),
            "for-loop AdamW updates one parameter at a time, a few kernels each",
        )
        c32 = m.cast_facts(f.trace("eager"))
        c16 = m.cast_facts(f.trace("eager_bf16"))
        nums(
            {
                "c32_casts": c32["casts"],
                "c32_linear_casts": c32["linear_casts"],
                "c32_weight_casts": c32["weight_casts"],
                "c32_input_casts": c32["input_casts"],
                "c32_sdpa_casts": c32["sdpa_casts"],
                "c32_own_casts": c32["own_casts"],
                "c32_cast_ms": c32["cast_ms"],
                "c16_casts": c16["casts"],
                "c16_linear_casts": c16["linear_casts"],
                "c16_own_casts": c16["own_casts"],
                "c16_cast_ms": c16["cast_ms"],
            }
        )
        claim(
            c16["internal_ops"] == c32["internal_ops"] == "aten::cumsum"
            and c16["own_casts"] == c16["casts"] - 1
            and c32["sdpa_casts"] > 0,
            "with bf16 weights one cast is the model's own, the rest aten::cumsum's; "
            "under autocast attention's arguments are cast",
        )
        claim(
            c32["input_casts"] == 5 * 16
            and c16["linear_casts"] == 0 < c32["linear_casts"]
            and c32["own_casts"] < c16["own_casts"] / 10,
            "autocast casts 5 inputs a layer inside aten::linear; bf16 weights cast none there",
        )
        claim(s["backward_cpu_ms"] < s["backward_gpu_ms"], "the backward outlasts its CPU time")
        k32, k16 = m.cast_phases(f.trace("eager")), m.cast_phases(f.trace("eager_bf16"))
        nums(
            {
                "k32_loss_casts": k32["loss_casts"],
                "k32_loss_ms": k32["loss_cast_ms"],
                "k32_bwd_casts": k32["backward_casts"],
                "k32_bwd_ms": k32["backward_cast_ms"],
                "k32_total_ms": k32["cast_ms"],
                "k32_own_ms": k32["own_ms"],
                "k32_autocast_ms": k32["autocast_ms"],
                "k32_autocast_pct": 100 * k32["autocast_ms"] / rec("eager").results["step_ms"],
            }
        )
        claim(
            abs(k32["forward_cast_ms"] - c32["cast_ms"]) < 1e-3
            and k32["loss_casts"] > 0
            and k32["backward_casts"] > 0
            and k32["backward_cast_ms"] > k32["forward_cast_ms"] + k32["loss_cast_ms"]
            and most(k32["loss_own_ms"], k32["loss_cast_ms"])
            and k32["autocast_ms"] > fused["gpu_ms"],
            "casts in the loss and the backward too, the backward most; the loss's own "
            ".float() is most of the loss's; autocast's take longer than fused AdamW's kernels",
        )
        claim(
            k16["loss_ops"] == 0 == k16["backward_nodes"] and k32["loss_ops"] > 0,
            "the eager_bf16 recordings keep only the forward: no loss or backward to count",
        )
        mem = m.memory_facts(
            str(rec("memory").trace_path),
            rec("memory").results["peak_gib"],
            rec("memory").timings()["params"],
        )
        nums(
            {
                "mem_start_gib": mem["start_gib"],
                "mem_peak_gib": mem["peak_gib"],
                "mem_state_saved_gib": mem["state_saved_gib"],
                "mem_lin_copies_gib": mem["lin_copies_gib"],
                "mem_lin_weight_gib": mem["lin_weight_gib"],
                "mem_lin_input_gib": mem["lin_input_gib"],
            }
        )
        drop = rec("eager").results["peak_gib"] - rec("eager_bf16").results["peak_gib"]
        claim(
            most(mem["lin_copies_gib"], drop - mem["state_saved_gib"])
            and mem["lin_copies_gib"] < drop - mem["state_saved_gib"],
            "most of the peak's fall beyond the state is autocast's copies",
        )
        pickle = str(rec("memory").trace_path.parent / "memory_snapshot.pickle")
        snap, alive = m.snapshot_at_peak(pickle)
        num("snap_gib", snap)
        md("snap_table", m.snapshot_table(alive))
        mt = rec("memory").timings()  # one fp32 copy of the logits: batch x tokens x vocabulary
        scores_gib = mt["batch"] * mt["seq"] * (mt["embedding_params"] // m.HIDDEN) * 4 / 2**30
        claim(
            abs(alive[1][1] - 2 * scores_gib) < 1e-6 and abs(alive[2][1] - scores_gib) < 1e-6,
            "the loss holds three fp32 copies of the logits at the peak",
        )
        num("snap_scores_gib", alive[1][1] + alive[2][1])
        claim(
            all(abs(c[-1]) < 1e-9 for c in m.snapshot_timeline(pickle, [])[1].values()),
            "all the step allocated is freed by its end",
        )
        claim(
            [k.split(":")[0] for k, _ in alive[:3]]
            == ["`forward` (linear.py", "no Python frame", "`cross_entropy` (functional.py"],
            "Linear, no Python frame and cross_entropy hold the most at the peak",
        )
        claim(
            abs(snap + mem["start_gib"] - mem["peak_gib"]) < 0.05
            and abs(alive[0][1] - mem["lin_copies_gib"] - mem["lin_output_gib"]) < 1e-6,
            "the snapshot's peak and Linear's share agree with the profiler's memory events",
        )
        li, lw, la = (
            m.loader_facts(f.trace(v)) for v in ("loader_inline", "loader_workers", "loader_async")
        )
        nums(
            {"li_data_ms": li["data_ms"], "lw_data_ms": lw["data_ms"], "lw_sync_us": lw["sync_us"]}
        )
        claim(
            lw["sync_us"] < 100
            and la["syncs"] == 0
            and la["pinned"] == 1
            and la["busy_frac"] > 0.9,
            "workers leave a short sync; async copies from pinned memory with no sync",
        )
        opt = {v: rec(v).results["step_ms"] for v in ("eager", "eager_foreach", "eager_forloop")}
        claim(
            opt["eager"] < min(opt["eager_forloop"], opt["eager_foreach"])
            and m.overlap(rows["eager_forloop"], rows["eager_foreach"]),
            "fused AdamW's step is the fastest; foreach and for-loop overlap",
        )
        cc, c8, fc, fb, fs, ff = (
            m.compile_facts(f.trace(v))  # each asserts cuDNN's SDPA only
            for v in ("compile", "compile_b8_bf16", "causal", "causal_b16", "causal_s4096", "final")
        )
        nums(
            {
                "cc_kernels": cc["kernels"],
                "cc_triton": cc["triton"],
                "cc_weight_casts": cc["weight_casts"],
                "c8_attn_ms": c8["attn_ms"],
                "fc_attn_ms": fc["attn_ms"],
            }
        )
        claim(
            fc["kernels"] == fs["kernels"] == ff["kernels"]
            and fc["kernels"] <= c8["kernels"] < cc["kernels"]
            and cc["kernels"] < s["step_kernels"],
            "the compiled step launches fewer kernels than eager's, and bf16 weights fewer still",
        )
        claim(
            cc["grad_casts"] == 7 * 16 + 1
            and cc["weight_casts"] == 2 * cc["grad_casts"]
            and c8["grad_casts"] == 0
            and fc["attn_ms"] < 0.5 * c8["attn_ms"]
            and set(c8["attn_names"]) < set(fc["attn_names"]),
            "compile's casts are per weight; bf16 weights have none; causal attention "
            "takes under half the time",
        )
        claim(
            all("fmha_reduce_head" in n for n in set(fc["attn_names"]) - set(c8["attn_names"])),
            "causal attention adds only cuDNN's head-reduction kernels",
        )
        flex = m.attention_facts(f.trace("causal_flex"))
        num("flex_attn_ms", flex["attn_ms"])
        claim(flex["attn_ms"] > fc["attn_ms"], "flex attention is slower than cuDNN's causal")
        a = m.account(
            f.trace("causal"), str(rec("causal").trace_path), cast(int, rows["causal"]["seq"])
        )
        fin = m.account(
            f.trace("final"), str(rec("final").trace_path), cast(int, rows["final"]["seq"])
        )
        nums(
            {
                "acc_pct_GEMM": a["pct_GEMM"],
                "acc_pct_attention": a["pct_attention"],
                "acc_pct_Triton": a["pct_Triton"],
                "acc_pct_AdamW": a["pct_AdamW"],
                "acc_idle_pct": a["idle_pct"],
                "acc_head_pct": a["head_pct"],
                "acc_gemm_tflops": a["gemm_tflops"],
                "acc_gemm_pct_of_spec": a["gemm_pct_of_spec"],
                "acc_attn_tflops": a["attn_tflops"],
                "acc_attn_pct_of_spec": 100 * a["attn_tflops"] * 1e12 / m.SPEC_FLOPS,
                "fin_pct_GEMM": fin["pct_GEMM"],
                "fin_pct_attention": fin["pct_attention"],
                "fin_pct_Triton": fin["pct_Triton"],
                "fin_pct_AdamW": fin["pct_AdamW"],
                "fin_idle_pct": fin["idle_pct"],
                "fin_gemm_tflops": fin["gemm_tflops"],
                "fin_attn_tflops": fin["attn_tflops"],
            }
        )
        claim(
            most(a["pct_GEMM"], 100)
            and a["idle_pct"] < 3
            and fin["idle_pct"] < 3
            and all(nearly_all(100 - x["idle_pct"], 100) for x in (a, fin))
            and 15 < a["head_pct"] < 25,
            "GEMMs take most of causal's step, the GPU idles under 3 % (almost never idle), the "
            "head is a fifth",
        )
        claim(
            a["gemm_pct_of_spec"] > 2 * 100 * a["attn_tflops"] * 1e12 / m.SPEC_FLOPS,
            "the GEMMs run nearer the datasheet peak than attention",
        )
        claim(
            fin["pct_attention"] > 2 * a["pct_attention"] and fin["pct_GEMM"] < a["pct_GEMM"] - 10,
            "longer sequences double attention's share",
        )

    f.repeats(each_repeat)

    # Across the repeats: the forward's kernels take the same time, the CPU's launching of
    # them varies around it, and the repeat whose CPU was slowest is the one whose GPU
    # idled most.
    gpu, cpu = ([s[k] for s in eager_steps] for k in ("forward_gpu_ms", "forward_cpu_ms"))
    claim(
        len(eager_steps) == len(recs("eager")) and max(gpu) - min(gpu) < 1,
        "the forward's kernels take the same time in every repeat",
    )
    if f.gpu == "h200":
        claim(
            min(cpu) < min(gpu) <= max(gpu) < max(cpu),
            "on the H200, launching the forward took the CPU less and more than its kernels",
        )
    if f.gpu == "h100":
        claim(max(cpu) < min(gpu), "on the H100, the CPU launched the forward faster, every repeat")
    claim(
        min(eager_steps, key=lambda s: s["gpu_busy_pct"])
        is max(eager_steps, key=lambda s: s["forward_cpu_ms"]),
        "the repeat whose CPU was slowest is the one whose GPU idled most",
    )

    md(
        "repeats_table",
        m.repeats_table(
            [
                m.repeat_row(
                    e.trace(),
                    {
                        "causal": m.account(
                            c.trace(), str(c.trace_path), cast(int, rows["causal"]["seq"])
                        ),
                        "final": m.account(
                            fin.trace(), str(fin.trace_path), cast(int, rows["final"]["seq"])
                        ),
                    },
                )
                for e, c, fin in zip(recs("eager"), recs("causal"), recs("final"), strict=True)
            ]
        ),
    )


def two_gpus(f: Facts) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Your GPU, not ours: the same steps on the H200 and the H100, kernel class by kernel
    class (every repeat of both GPUs), in the H200's run."""
    readers = {"h200": f, "h100": f.on("h100")}
    peaks = {
        g: tracereader.datasheet(str(r.recs("eager")[0].meta["env"]["gpu"]))
        for g, r in readers.items()
    }
    claim(
        all(p is not None for p in peaks.values())
        and len({p.bf16_tflops for p in peaks.values() if p}) == 1
        and {p.bf16_tflops for p in peaks.values() if p} == {m.SPEC_FLOPS / 1e12},
        "both datasheets give the same dense bf16 peak, the one the MFU divides by",
    )
    seqs = {"eager": 2048, "causal": 2048}
    per: dict[tuple[str, str], list[dict[str, float]]] = {}
    for v, seq in seqs.items():
        for g, r in readers.items():
            per[(v, g)] = [
                {
                    **m.account(x.trace(), str(x.trace_path), seq),
                    "tps": _results(x)["tokens_per_s"],
                }
                for x in r.recs(v)
            ]

    def col(v: str, g: str, key: str) -> list[float]:
        return [float(a[key]) for a in per[(v, g)]]

    compute, memory = ("ms_GEMM", "ms_attention"), ("ms_other", "ms_Triton", "ms_AdamW")
    slow: dict[str, list[float]] = {}
    for v in seqs:
        for key in compute:
            claim(
                about(m.median(col(v, "h100", key)), m.median(col(v, "h200", key))),
                "GEMMs and attention took about as long on both GPUs",
            )
        busy = [k for k in memory if m.median(col(v, "h200", k)) > 1]  # eager has no Triton
        claim(
            all(beyond_spread(col(v, "h100", k), col(v, "h200", k)) for k in busy),
            "the memory-bound kernels took longer on the H100, in every repeat",
        )
        claim(
            beyond_spread(col(v, "h200", "tps"), col(v, "h100", "tps")),
            "the H200 trained more tokens per second, in every repeat",
        )
        slow[v] = [m.median(col(v, "h100", k)) / m.median(col(v, "h200", k)) for k in busy]
    bw_ratio = (
        peaks["h200"].hbm_tbs / peaks["h100"].hbm_tbs if peaks["h200"] and peaks["h100"] else 0
    )
    every = [x for v in seqs for x in slow[v]]
    claim(
        min(every) > 1 and max(every) < bw_ratio,
        "the memory-bound classes slowed by less than the gap in datasheet bandwidth",
    )
    f.nums(
        {
            "gpu_mem_slow_lo_pct": 100 * (min(every) - 1),
            "gpu_mem_slow_hi_pct": 100 * (max(every) - 1),
            "gpu_bw_gap_pct": 100 * (bw_ratio - 1),
        }
    )
    loss = {
        v: [1 - b / a for a in col(v, "h200", "tps") for b in col(v, "h100", "tps")] for v in seqs
    }
    claim(
        min(loss["eager"]) > max(loss["causal"]),
        "eager lost more of its tokens/s on the H100 than causal, whichever repeats are paired",
    )
    f.nums(
        {
            "gpu_eager_loss_pct": 100 * m.median(loss["eager"]),
            "gpu_causal_loss_pct": 100 * m.median(loss["causal"]),
            "gpu_hbm_h200": peaks["h200"].hbm_tbs if peaks["h200"] else 0,
            "gpu_hbm_h100": peaks["h100"].hbm_tbs if peaks["h100"] else 0,
        }
    )
    names = {
        "ms_GEMM": "GEMM (cuBLAS)",
        "ms_attention": "attention (cuDNN)",
        "ms_other": "other kernels (in eager: its element-wise ops)",
        "ms_Triton": "Triton (Inductor's fused kernels)",
        "ms_AdamW": "AdamW",
    }
    head = (
        "| GPU time per class in the profiled step, ms | `eager` H200 | `eager` H100 "
        "| `causal` H200 | `causal` H100 |"
    )
    rows = [head, "|:---|--:|--:|--:|--:|"]
    cells = [(v, g) for v in seqs for g in readers]
    for key, name in names.items():
        rows.append(
            f"| {name} | " + " | ".join(_ms(m.median(col(v, g, key))) for v, g in cells) + " |"
        )
    rows.append(
        "| tokens/s, timed without the profiler | "
        + " | ".join(f"{m.median(col(v, g, 'tps')):,.0f}" for v, g in cells)
        + " |"
    )
    f.md("gpu_table", "\n".join(rows))
    return per


def beside_torchtitan(f: Facts, accounts: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
    """A real trainer beside ours on the H100: torchtitan's runs (``_peers``), session by
    session, against our ``causal`` there, at the same shape, sequence length, batch and
    precision; ``accounts``: :func:`two_gpus`' kernel accounts, per variant and GPU, of
    every repeat. The first session ran beside the H100's recordings, in the same hour; the
    second recorded ours in its own call, on its machine."""
    causal = f.on("h100").recs("causal")
    first, second = _peers.sessions("h100")
    again = _peers.ours(second, "causal")
    by_session = {
        first: [(_timings(r), _results(r)["tokens_per_s"]) for r in causal],
        second: [(x["timings"], x["results"]["tokens_per_s"]) for x in again],
    }
    claim(
        all(t["seq"] == 2048 and t["batch"] == 8 for s in by_session.values() for t, _ in s),
        "causal trains batches of 8 sequences of 2,048 tokens, as the torchtitan runs",
    )
    claim(
        len(again) == 3
        and all(x["code_hash"] == causal[0].meta["code_hash"] for x in again)
        and all(x["env"]["gpu"] == "NVIDIA H100 80GB HBM3" for x in again),
        "the second session ran our causal's own code, three repeats, on an H100 80GB HBM3",
    )
    rows = [
        "| session | trainer | weights, gradients, AdamW states | runs "
        "| tokens/s: median (range over runs) |",
        "|:---|:---|:---|--:|--:|",
    ]
    ratios: list[float] = []
    gaps_ms: list[float] = []
    tt_all = {}
    for name, label in ((first, "first"), (second, "second, one call")):
        tt = _peers.runs(name, "h100")
        tt_all.update({f"{name}/{k}": v for k, v in tt.items()})
        by = {x: [r for r in tt.values() if r["letter"] == x] for x in "ABE"}
        claim(
            len(by["B"]) >= 2 and len(by["A"]) + len(by["E"]) >= 3,
            "torchtitan ran at least twice all in bf16 and three times with its defaults, "
            "in each session",
        )
        claim(
            all(r["env"].startswith("NVIDIA H100 80GB HBM3") for r in tt.values()),
            "every torchtitan run on an H100 80GB HBM3",
        )
        ours_tps = [tps for _, tps in by_session[name]]
        bf16_steps = [t for r in by["B"] for t in r["tps"]]
        claim(
            min(ours_tps) > max(bf16_steps),
            "each of our repeats' median beat every one of its bf16 steps, in each session",
        )
        default = [_peers.median(r["tps"]) for r in by["A"] + by["E"]]
        bf16 = [_peers.median(r["tps"]) for r in by["B"]]
        ratios.append(m.median(ours_tps) / _peers.median(bf16))
        tokens = 8 * 2048  # a step's, on both sides (claimed above)
        gaps_ms.append(1e3 * tokens / _peers.median(bf16) - 1e3 * tokens / m.median(ours_tps))
        ours_steps = [
            t["batch"] * t["seq"] / (ms / 1e3) for t, _ in by_session[name] for ms in t["step_ms"]
        ]
        claim(
            min(ours_steps) < max(bf16_steps),
            "step by step, ours and its bf16 steps overlap, in each session",
        )
        for who, weights, runs_n, values in (
            ("torchtitan, its defaults", "fp32, under bf16 autocast", len(default), default),
            ("torchtitan, `--training.dtype bfloat16`", "bf16", len(bf16), bf16),
            ("ours, `causal` (H100)", "bf16", f"{len(ours_tps)} repeats", ours_tps),
        ):
            rows.append(
                f"| {label} | {who} | {weights} | {runs_n} | {m.median(values):,.0f} "
                f"({min(values):,.0f}–{max(values):,.0f}) |"
            )
    f.md("tt_runs_table", "\n".join(rows))
    f.nums(
        {
            "tt_ratio": ratios[0],
            "tt_ratio_2": ratios[1],
            "tt_gap_ms": gaps_ms[0],
            "tt_gap_ms_2": gaps_ms[1],
            "tt_first_step": _peers.STEPS[0],
            "tt_last_step": _peers.STEPS[-1],
        }
    )
    # Its profiled step (default settings), read with tracereader, against our causal's
    profiled = [tracereader.load(str(r["trace"])) for r in tt_all.values() if r["trace"]]
    f.num("tt_profiled", len(profiled))
    theirs = [_peers.kernel_ms(tr) for tr in profiled]
    mine = accounts[("causal", "h100")]
    busy = []
    wait_ms, loader_ms, rope_n, rope_ms, other_ms = [], [], [], [], []
    for tr, classes in zip(profiled, theirs, strict=True):
        (step,) = tracereader.step_times(tr)
        busy.append(100 * step.gpu_busy_us * 1e3 / (step.end_ns - step.start_ns))
        kernels = tr.where(kind=Kind.KERNEL)
        first_kernel_ns = int(tr.ts_ns[kernels].min())
        wait_ms.append((first_kernel_ns - step.start_ns) / 1e6)
        in_step = np.flatnonzero((tr.ts_ns >= step.start_ns) & (tr.ts_ns < step.end_ns)).tolist()
        (loader,) = [
            i for i in in_step if "DataLoader" in tr.name(i) and tr.name(i).endswith("__next__")
        ]
        claim(
            tr.ts_ns[loader] - step.start_ns < 2e6
            and tr.ts_ns[loader] + tr.dur_ns[loader] <= first_kernel_ns,
            "its DataLoader's __next__ started within the step's first 2 ms and ended before "
            "the step's first kernel",
        )
        loader_ms.append(tr.dur_ns[loader] / 1e6)
        complex_kernels = [
            (i, _peers.kernel_class(tr.name(i)))
            for i in kernels.tolist()
            if "complex" in tr.name(i)
        ]
        rope = [i for i, c in complex_kernels if c == "other"]
        claim(
            any(c == "Triton" for _, c in complex_kernels),
            "Inductor compiles its RoPE's casts and reshapes into Triton kernels",
        )
        rope_n.append(len(rope))
        rope_ms.append(sum(int(tr.dur_ns[i]) for i in rope) / 1e6)
        other_ms.append(classes["other"])
    claim(min(wait_ms) > 10, "each of its profiled steps waited over 10 ms for its first kernel")
    claim(
        len(set(rope_n)) == 1
        and all(about(r, o / 2) for r, o in zip(rope_ms, other_ms, strict=True)),
        "its RoPE's complex-number ATen kernels, as many in each profiled step, took about "
        "half of its other kernels' time",
    )
    f.nums(
        {
            "tt_wait_lo": min(wait_ms),
            "tt_wait_hi": max(wait_ms),
            "tt_loader_lo": min(loader_ms),
            "tt_loader_hi": max(loader_ms),
            "tt_rope_kernels": rope_n[0],
            "tt_rope_ms": m.median(rope_ms),
        }
    )
    for k in ("GEMM", "attention"):
        claim(
            all(about(x[k], m.median([y[f"ms_{k}"] for y in mine])) for x in theirs),
            "its GEMMs and attention took about as long as ours",
        )
    claim(
        min(x["Triton"] for x in theirs) > max(y["ms_Triton"] for y in mine)
        and min(x["AdamW"] for x in theirs) > max(y["ms_AdamW"] for y in mine)
        and min(x["clipping"] for x in theirs) > 0,
        "its Triton kernels and AdamW took longer than ours, and it clips gradients",
    )
    rows = [
        "| GPU time per step, ms | torchtitan, defaults: fp32 weights and AdamW states "
        "(its profiled steps, median) | ours, `causal` on the H100: bf16 (first session) |",
        "|:---|--:|--:|",
    ]
    names = {
        "GEMM": "GEMM (cuBLAS)",
        "attention": "attention (cuDNN)",
        "Triton": "Triton (Inductor's fused kernels)",
        "AdamW": "AdamW (`multi_tensor_apply`): fp32 states against bf16",
        "clipping": "gradient clipping (`multi_tensor_apply`, not `FusedAdam`)",
        "other": "other kernels (its RoPE's complex multiply among them)",
    }
    for k, name in names.items():
        mine_k = m.median([y.get(f"ms_{k}", 0.0) for y in mine])
        rows.append(f"| {name} | {_ms(_peers.median([x[k] for x in theirs]))} | {_ms(mine_k)} |")
    rows.append(
        f"| GPU idle, share of the step | {100 - _peers.median(busy):.0f} % "
        f"| {m.median([y['idle_pct'] for y in mine]):.0f} % |"
    )
    f.md("tt_table", "\n".join(rows))
    f.num(
        "tt_adamw_ratio",
        _peers.median([x["AdamW"] for x in theirs]) / m.median([y["ms_AdamW"] for y in mine]),
    )


def _ms(value: float) -> str:
    """A table's milliseconds: one decimal, or a dash where a class launched nothing."""
    return f"{value:.1f}" if value >= 0.05 else "–"


def _results(r: Any) -> dict[str, Any]:
    """A recording's headline results (06's recordings all have them)."""
    out: dict[str, Any] = r.results
    return out


def _timings(r: Any) -> dict[str, Any]:
    """A recording's timings.json (06's recordings all have it)."""
    out: dict[str, Any] = r.timings()
    return out
