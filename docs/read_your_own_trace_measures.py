"""The computations behind "Read your own trace" (docs/read-your-own-trace.md).

The page runs every ``tracereader`` command it shows in a scratch folder (:data:`WORK`)
that holds the bundled recordings under short names, so that each command reads as a
reader would type it. After each command, a hidden cell calls this module's function for
its section: it reads the command's JSON output (or the library's answer), checks every
claim the text makes about it and glues the numbers the text shows
(:func:`tracesite.notebook.num` for numbers, :func:`tracesite.notebook.md` for text).
The commands run on the first recorded repeat of each variant; claims the text makes in
general are checked on every repeat, in loops here. Nothing here is typed by hand: every
number is read from a recording or from a run made while the page is built.
"""

from __future__ import annotations

import gzip
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from IPython.display import HTML, Markdown
from tracesite import load, notebook, words
from tracesite.facts import claim
from tracesite.html import FigureHTML, trace_links_html
from tracesite.notebook import md, num, report_of

import tracereader

EXAMPLE = "01_matmul_add"
# The commands run on the first recorded repeat of each variant; claims about the data
# that the text makes in general are checked on every repeat.
VARIANTS = {n: load(EXAMPLE, n) for n in ("64_bf16", "64_bf16_compile", "4096_bf16")}
RECS = {n: v.rep for n, v in VARIANTS.items()}
EAGER, COMPILED, BIG = "64_bf16.json.gz", "64_bf16_compile.json.gz", "4096_bf16.json.gz"
#: Section 14's recording: one eager training step of the Part 5 example.
TRAIN = load("06_train_step", "eager")
#: Section 13's two ranks: a training job's traces that HTA ships as test data.
HTA_SET = Path(tracereader.__file__).resolve().parents[2] / "tests" / "data" / "hta_2rank"
#: The scratch folder the page works in (its commands' file names are relative to it).
WORK = Path(tempfile.mkdtemp(prefix="tracereader-page-"))

#: What each profiler option adds to the trace, as section 1's table says.
ADDS = {
    "none": "ops, runtime calls, your ranges",
    "record_shapes": "input shapes, dtypes, strides in op args",
    "profile_memory": "a `[memory]` instant per alloc and free",
    "with_stack": "a `python_function` event per Python call",
    "with_flops": "the same shape args (its formulas need them)",
    "with_modules": "nothing, in eager mode",
}


def setup(downloads: str) -> None:
    """Fill the scratch folder, make it the working directory and glue the page's opening
    (``downloads``: the Markdown list of the site's downloads, which the build made).

    Every subprocess the page starts (the CLI, and the reader's own ``subprocess.run`` in
    section 8) reads the same tracereader that the page imported.
    """
    for name, r in RECS.items():
        shutil.copyfile(r.trace_path, WORK / f"{name}.json.gz")
    shutil.copytree(HTA_SET, WORK / "ranks", ignore=shutil.ignore_patterns("*.md"))
    shutil.copyfile(TRAIN.rep.trace_path, WORK / "eager.json.gz")
    here = str(Path(tracereader.__file__).parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    os.chdir(WORK)  # file names on this page are relative to the scratch folder

    md("downloads", downloads)
    first = RECS["64_bf16"]
    claim(
        all(r.env["gpu"] == first.env["gpu"] for r in RECS.values()),
        "every command here runs on a recording from one GPU",
    )
    md("stamp", first.stamp_line())
    md("gpu", first.env["gpu"])


def tracereader_cli(*args: str, show: bool = True, status: int = 0) -> Any:
    """Run ``tracereader ARGS`` in the scratch folder; print it like a terminal."""
    return notebook.tracereader_cli(*args, cwd=WORK, show=show, status=status)


def cli_json(*args: str) -> Any:
    """What ``tracereader ARGS --format json`` prints, parsed."""
    return json.loads(tracereader_cli(*args, "--format", "json", show=False).stdout)


# --------------------------------------------------------------------------- 1. Record


def options(profile_training: Callable[..., Any]) -> dict[str, dict[str, Any]]:
    """Section 1: the reader's trace (``mine.json.gz``), then the recipe run once per
    profiler option; claims what each option adds, as the table and the text say."""
    mine = tracereader.load(WORK / "mine.json.gz")
    claim(
        (WORK / "mine.json.gz").read_bytes()[:2] == b"\x1f\x8b",
        "a file name ending in .gz is written gzipped",
    )
    names = [s.name for s in mine.steps]
    md("mine_steps", ", ".join(f"`{n}`" for n in names))
    claim(
        names == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"],
        f"the trace it wrote holds three steps, ProfilerStep#2 to #4 ({names})",
    )
    claim(
        {r.name for r in mine.regions("forward")} == {"forward"},
        'record_function("forward") wraps the forward phase in spans named forward',
    )
    claim(
        len(mine.regions("forward")) == 3, "the trace holds one forward span per step, three in all"
    )

    runs = {}
    for opt in ADDS:
        path = WORK / f"mine_{opt}.json.gz"
        p = profile_training(path, device="cpu", **({} if opt == "none" else {opt: True}))
        with gzip.open(path) as f:
            raw = json.loads(f.read())
        tr = tracereader.load(path)
        cpu_ops = [e for e in raw["traceEvents"] if e.get("cat") == "cpu_op"]
        runs[opt] = {
            "kib": path.stat().st_size / 1024,
            "events": len(tr),
            "instants": tr.n_instants,
            "python_pct": 100 * float(np.mean(tr.kind == tracereader.Kind.PYTHON)),
            "arg_keys": {k for e in cpu_ops for k in e.get("args", {})},
            "instant_names": {
                e["name"] for e in raw["traceEvents"] if e.get("cat") == "cpu_instant_event"
            },
            "findings": {f.check: f for f in tracereader.validate(tr)},
            "table": p.key_averages().table(row_limit=1),
            "flops_args": [e for e in raw["traceEvents"] if "flops" in e.get("args", {})],
        }
    base = runs["none"]
    # Each option announces itself in the file, and `tracereader validate` reads it.
    for opt, r in runs.items():
        if opt != "none":
            claim(
                opt in r["findings"]["options"].message,
                f"{opt}: validate names which profiler options were on",
            )
    # What each row of the table says it adds:
    shapes, memory, stack = runs["record_shapes"], runs["profile_memory"], runs["with_stack"]
    flops, modules = runs["with_flops"], runs["with_modules"]
    claim(
        "Input Dims" in shapes["arg_keys"] and "Input Dims" not in base["arg_keys"],
        "record_shapes adds input shapes, dtypes, strides in op args",
    )
    claim(shapes["events"] == base["events"], "record_shapes adds no events, only op args")
    claim(memory["instants"] > base["instants"], "profile_memory added memory events")
    claim(
        memory["instant_names"] == {"[memory]"} and not base["instant_names"],
        "profile_memory adds a [memory] instant per alloc and free, and no other instant",
    )
    claim(
        stack["events"] > 2 * base["events"],
        "with_stack is the expensive one for the file: over twice the events",
    )
    claim(
        words.most(stack["python_pct"], 100) and stack["findings"]["python"].level == "warn",
        "with_stack: most events are Python frames, and validate warns about them",
    )
    claim(
        stack["kib"] == max(r["kib"] for r in runs.values()),
        "with_stack is the expensive one for the file: the largest file",
    )
    claim(
        "Input Dims" in flops["arg_keys"] and flops["events"] == base["events"],
        "with_flops adds the same shape args (its formulas need them)",
    )
    flops_col = re.search(r"Total [KMGTP]?FLOPs", flops["table"])
    claim(
        flops_col and "FLOPs" not in base["table"],
        "with_flops puts its estimates in a column of prof.key_averages().table()",
    )
    assert flops_col is not None  # for the type checker: the claim above holds it
    md("flops_col", f"`{flops_col.group(0)}`")
    claim(flops["flops_args"] == [], "with_flops puts its estimates in the table, not in the trace")
    claim(modules["arg_keys"] == base["arg_keys"], "with_modules adds no op args, in eager mode")
    claim(
        (modules["events"], modules["instants"]) == (base["events"], base["instants"]),
        "with_modules adds no events or instants, in eager mode",
    )
    num("stack_x", stack["events"] / base["events"])
    num("stack_kib_x", stack["kib"] / base["kib"])
    num("stack_pct", stack["python_pct"])
    num("mem_instants", memory["instants"] - base["instants"])
    return runs


def options_table(runs: dict[str, dict[str, Any]]) -> Any:
    """Section 1's table: what each option added to the trace, as Markdown."""
    base = runs["none"]
    rows = "\n".join(
        f"| {'(none)' if o == 'none' else f'`{o}`'} | {ADDS[o]} | {r['events']:,} "
        f"| {r['instants'] - base['instants']:,} | {r['python_pct']:.0f} | {r['kib']:.1f} |"
        for o, r in runs.items()
    )
    return Markdown(
        "| option | adds to the trace | events | extra instants | % Python | KiB (gzip) |\n"
        "|:---|:---|---:|---:|---:|---:|\n" + rows
    )


def links(name: str) -> Any:
    """The recording's stamp, its download link, its report and its Perfetto button."""
    rec = RECS[name]
    report = report_of(rec, "")
    return HTML(
        f'<div class="tr-recording"><p class="tr-stamp">{html.escape(rec.stamp_line())}</p>'
        + trace_links_html(
            rec.trace_url(""), rec.trace_bytes, f"{rec.example} {rec.name}", report=report
        )
        + "</div>"
    )


# --------------------------------------------------------------------------- 3. summary


def check_verdicts(step_times: list[dict[str, Any]]) -> None:
    """Each step's verdict follows the rule the text gives, on the GPU's busy share of the
    step's span: GPU-bound from 95 %, CPU-bound under 50 %, balanced in between; and the
    idle time is the span's rest."""
    for st in step_times:
        share = st["busy_share"]
        rule = "GPU-bound" if share >= 0.95 else "CPU-bound" if share < 0.5 else "balanced"
        claim(
            st["verdict"] == rule,
            f"{st['name']}: GPU busy for {100 * share:.1f} % of its span reads {rule}, "
            f"not {st['verdict']}",
        )
        claim(
            abs(st["gpu_idle_us"] - (1 - share) * st["span_us"]) <= 1e-3 * st["span_us"],
            "gpu_idle_us is the part of the step's span in which no GPU op ran",
        )
        claim(st["span_us"] >= st["cpu_us"], "a step's span is at least its CPU time")


def check_launch_apis(per_op: list[dict[str, Any]]) -> None:
    """Section 3's launch APIs, op by op (``launches --ops``): every GEMM was launched by
    cuLaunchKernelEx, every add by cudaLaunchKernel, and no other kernel ran."""
    kernel = {"nvjet": "GEMM", "CUDAFunctor_add": "add"}
    api_of = {
        next((v for n, v in kernel.items() if n in r["name"]), r["name"]) + " via " + r["api"]
        for r in per_op
    }
    claim(
        api_of == {"GEMM via cuLaunchKernelEx", "add via cudaLaunchKernel"},
        f"the GEMM goes through cuLaunchKernelEx, the add through cudaLaunchKernel ({api_of})",
    )


def summary_facts() -> dict[str, Any]:
    """Section 3: ``summary`` of the 64x64 recording (and of the 4096x4096 one); returns
    the JSON the later sections compare with."""
    s = cli_json("summary", EAGER)
    lib = tracereader.summary(tracereader.load(WORK / EAGER))
    # the CLI prints the library's dict
    claim(
        s == json.loads(json.dumps({**lib, "source": s["source"]})),
        "summary prints what the library's summary() returns",
    )
    num("events", s["events"])
    num("duration", s["duration_us"])
    num("busy", s["gpu_busy_us"])
    num("busy_pct", 100 * s["gpu_busy_us"] / s["duration_us"])
    num("l2s_med", s["launch_to_start_us_median"])
    num("n_gpu_ops", s["gpu_ops"])
    num("n_steps", len(s["steps"]))
    claim(
        s["linked_gpu_ops"] == s["gpu_ops"],
        "here all GPU ops are linked to the launch call that queued them",
    )
    claim(
        s["issuer_methods"]["external_id"] == s["gpu_ops"],
        "every launch call's issuing op was found by external_id",
    )
    per_op = tracereader.launches(tracereader.load(WORK / EAGER)).to_records()
    check_launch_apis(per_op)
    claim(
        s["launch_apis"] == dict(Counter(r["api"] for r in per_op)),
        "launch APIs counts GPU ops per launch call",
    )
    claim(
        s["graph_launches"] == 0 and s["cpu_threads"] == 1 and s["gpu_streams"] == 1,
        "the events are on one CPU thread and one GPU stream, with no graph launches",
    )
    check_verdicts(s["step_times"])
    claim(
        all(st["verdict"] == "CPU-bound" for st in s["step_times"]),
        "a workload where the GPU waits on the CPU: every step is CPU-bound",
    )
    num("max_step_pct", max(100 * st["busy_share"] for st in s["step_times"]))
    claim(
        all(st["gpu_busy_us"] <= st["cpu_us"] for st in s["step_times"]),
        "in every step the GPU was busy for no longer than the step's CPU time",
    )
    big = cli_json("summary", BIG)
    check_verdicts(big["step_times"])
    big_pct = [100 * st["busy_share"] for st in big["step_times"]]
    md("big_pcts", ", ".join(f"{p:.0f} %" for p in big_pct))
    md("big_verdicts", ", ".join(st["verdict"] for st in big["step_times"]))
    # the first step's span opens on an idle GPU; each later one as the step before it
    # finishes on the GPU (the CPU ran ahead: its own GEMMs already queued)
    claim(
        big["step_times"][0]["verdict"] != "GPU-bound",
        "4096x4096: the first step's span opens on an idle GPU, so it is not GPU-bound",
    )
    claim(
        all(st["verdict"] == "GPU-bound" for st in big["step_times"][1:]),
        "4096x4096: each step after the first is GPU-bound",
    )
    t_big = tracereader.load(WORK / BIG)
    spans = tracereader.step_times(t_big)
    claim(
        all(
            b.window[0] == a.window[1] > b.start_ns and b.gpu_ops > 0
            for a, b in zip(spans, spans[1:], strict=False)
        ),
        "a later step's span opens as the step before it ends on the GPU",
    )
    lead_ns = int(t_big.ts_ns[tracereader.link(t_big).gpu_ops].min()) - t_big.steps[0].start_ns
    claim(
        words.most(lead_ns / 1e3, big["step_times"][0]["gpu_idle_us"]),
        "4096x4096: the first step's GPU idles mostly waiting for its first launch",
    )
    return dict(s)


# --------------------------------------------------------------------------- 4-6.


def kernels_facts(s: dict[str, Any], summary_out: str) -> tuple[list[dict[str, Any]], str]:
    """Section 4: ``kernels``; returns its rows and the add kernel's full name."""
    k = cli_json("kernels", EAGER)
    claim(
        k == tracereader.kernel_table(tracereader.load(WORK / EAGER)).to_records(),
        "kernels prints what the library's kernel_table() returns",
    )
    gemm_row = next(r for r in k if r["name"].startswith("nvjet"))
    num("gemm_pct", gemm_row["pct"])
    num("gemm_med", gemm_row["median_us"])
    claim(
        k[0] is gemm_row and abs(sum(r["pct"] for r in k) - 100) < 1e-6,
        "the nvjet GEMM heads the table, and pct is each row's share of the summed durations",
    )
    claim(all(r["calls"] == len(s["steps"]) for r in k), "each kernel ran once per step")
    add_full = next(str(r["name"]) for r in k if "elementwise" in r["name"])
    claim(
        add_full.startswith("void at::native::") and "at::native" not in summary_out,
        "the add kernel's full name has void and namespaces, which text output drops",
    )
    kernels_text = tracereader_cli("kernels", EAGER, show=False).stdout
    claim(
        "vectorized_elementwise_kernel<CUDAFunctor_add<BFloat16>>" in kernels_text,
        "text output shortens the add kernel's name",
    )
    claim(add_full not in kernels_text, "long C++ kernel names are shortened in text output")
    md("add_full", f"`{add_full}`")
    k2 = cli_json("kernels", EAGER, "--step", s["steps"][0].split("#")[1])
    claim(
        [r["calls"] for r in k2] == [1, 1],
        "--step 2 keeps only the kernels launched in ProfilerStep#2, here one of each",
    )
    return list(k), add_full


def ops_facts(k: list[dict[str, Any]]) -> None:
    """Section 5: ``ops``, self and total CPU and GPU time."""
    o = {r["name"]: r for r in cli_json("ops", EAGER)}
    mm, matmul = o["aten::mm"], o["aten::matmul"]
    claim(
        mm["self_gpu_us"] == mm["total_gpu_us"] > 0,
        "aten::mm has self GPU time, all of its total",
    )
    claim(
        matmul["self_gpu_us"] == 0 and matmul["total_gpu_us"] == mm["total_gpu_us"],
        "aten::matmul has the same amount as total, none as self",
    )
    claim(
        abs(o["matmul_add"]["total_gpu_us"] - sum(r["total_us"] for r in k)) < 1e-6,
        "your matmul_add range totals every kernel",
    )
    claim(
        o["cuLaunchKernelEx"]["total_gpu_us"] == 0 and o["cudaDeviceSynchronize"]["calls"] == 1,
        "launch calls carry no GPU time of their own; the trace ends with one synchronize",
    )
    num("mm_gpu", mm["self_gpu_us"])
    num("matmul_self_cpu", matmul["self_cpu_us"])
    num("matmul_total_cpu", matmul["total_cpu_us"])


def check_launch_sum(per_op: list[dict[str, Any]]) -> None:
    """launch-to-start = call cost + queue delay, for every GPU op (to the JSON's rounding)."""
    for r in per_op:
        total = r["call_us"] + r["queue_delay_us"]
        claim(
            abs(r["launch_to_start_us"] - total) < 2e-3,
            f"{r['name']}: launch-to-start {r['launch_to_start_us']} µs is not "
            f"call {r['call_us']} µs + queue delay {r['queue_delay_us']} µs",
        )


def launches_facts() -> None:
    """Section 6: ``launches`` and ``launches --ops``; the queue delays on every repeat, and
    the two launch APIs' cost in Part 1's interleaved recording."""
    lt = {r["api"]: r for r in cli_json("launches", EAGER)}
    per_op = cli_json("launches", EAGER, "--ops")
    check_launch_sum(per_op)
    num("ex_qd", lt["cuLaunchKernelEx"]["queue_delay_us_median"])
    num("ex_call", lt["cuLaunchKernelEx"]["call_us_median"])
    num("rt_call", lt["cudaLaunchKernel"]["call_us_median"])
    num("n_ops", len(per_op))
    # On every repeat: each kernel starts within a few µs of its launch call's return.
    qd = [
        abs(r["queue_delay_us"])
        for rep in VARIANTS["64_bf16"].repeats
        for r in tracereader.launches(rep.trace()).to_records()
    ]
    num("qd_max", max(qd))
    claim(
        words.few_us(max(qd)),
        "in every recorded repeat, each kernel started within a few µs of its call's return",
    )
    # The two launches with more calls: Part 1's interleaved recording, inside its eager
    # calls only (the same GEMM and add every time), 24 calls of each per process.
    ratios = []
    spans: list[tuple[int, int]] = []
    for rep in load(EXAMPLE, "interleaved_64").repeats:
        t = rep.trace()
        spans = [
            (int(t.ts_ns[i]), int(t.ts_ns[i] + t.dur_ns[i]))
            for i in t.where(name="eager", kind=tracereader.Kind.USER_ANNOTATION)
        ]
        med = {
            api: float(
                np.median(np.concatenate([t.dur_ns[t.where(name=api, within=w)] for w in spans]))
            )
            for api in ("cuLaunchKernelEx", "cudaLaunchKernel")
        }
        ratios.append(med["cuLaunchKernelEx"] / med["cudaLaunchKernel"])
    num("api_ratio", float(np.median(ratios)))
    num("api_ratio_lo", min(ratios))
    num("api_ratio_hi", max(ratios))
    num("n_interleaved", len(ratios))
    num("n_eager_calls", len(spans))
    claim(
        min(ratios) > 1,
        "the GEMM's cuLaunchKernelEx cost more than the add's cudaLaunchKernel in every process",
    )


# --------------------------------------------------------------------------- 7. gaps


def check_gaps(gs: list[dict[str, Any]]) -> None:
    """Section 7's claims on one repeat's gaps (as ``gaps --format json`` lists them): the
    gaps before the adds are launch; those before the GEMMs are launch or nothing recorded,
    and each of them is longer than every other gap."""
    claim(
        {x["cause"] for x in gs if "elementwise" in x["next_op_name"]} == {"launch"},
        "in every repeat, the gaps before the adds are launch",
    )
    gemm = [x for x in gs if x["next_op_name"].startswith("nvjet")]
    claim(
        {x["cause"] for x in gemm} <= {"launch", "nothing recorded"},
        "in every repeat, the gaps before the GEMMs split between launch and nothing recorded",
    )
    others = [x["gap_us"] for x in gs if not x["next_op_name"].startswith("nvjet")]
    claim(
        bool(gemm) and bool(others) and min(x["gap_us"] for x in gemm) > max(others),
        "in every repeat, the gaps before the GEMMs are the longest",
    )


def gaps_facts(s: dict[str, Any]) -> dict[str, Any]:
    """Section 7: ``gaps``, their causes, and the shares of ``nothing recorded`` over every
    repeat; returns the JSON."""
    g = cli_json("gaps", EAGER)
    causes = {r["cause"]: r for r in g["by_cause"]}
    top = g["gaps"][0]
    num("n_gaps", len(g["gaps"]))
    num("idle_total", sum(x["gap_us"] for x in g["gaps"]))
    num("top_gap", top["gap_us"])
    md("top_cause_event", f"`{top['cause_name']}`")
    num("top_nothing", top["breakdown_us"]["nothing recorded"])
    num("nothing_pct", causes["nothing recorded"]["pct"])
    claim(len(g["gaps"]) == s["gpu_ops"] - 1, "the GPU idled before every kernel but the first")
    claim(
        top["cause"] in {"launch", "nothing recorded"},
        "the largest gap is launch or nothing recorded",
    )  # the event it names is glued in
    md("top_cause", f"`{top['cause']}`")
    claim(
        {x["cause"] for x in g["gaps"] if "elementwise" in x["next_op_name"]} == {"launch"},
        "the gaps before the adds are launch",
    )
    launch_events = {"aten::add", "aten::mm", "cudaLaunchKernel", "cuLaunchKernelEx"}
    claim(
        {x["cause_name"] for x in g["gaps"] if x["cause"] == "launch"} <= launch_events,
        "the launch gaps are spent inside aten::add or aten::mm, or their launch calls",
    )
    claim(not {"sync", "python"} & set(causes), "no gap is caused by a sync or by Python")
    shares = []
    for rep in VARIANTS["64_bf16"].repeats:  # the same reading holds on every repeat
        gs = [x.to_dict(rep.trace()) for x in tracereader.gaps(rep.trace())]
        claim(
            len(gs) == s["gpu_ops"] - 1,
            "in every repeat, the GPU idled before every kernel but the first",
        )
        check_gaps(gs)
        idle = sum(x["gap_us"] for x in gs)
        nothing = sum(x["breakdown_us"].get("nothing recorded", 0) for x in gs)
        shares.append(100 * nothing / idle)
    num("nothing_pct_lo", min(shares))
    num("nothing_pct_hi", max(shares))
    claim(min(shares) > 25, "in every repeat, nothing recorded held over 25 % of the idle time")
    return dict(g)


# --------------------------------------------------------------------------- 8-10.


def bad_input() -> None:
    """Section 8: three bad inputs, each exit status 2 and one line on stderr."""
    (WORK / "notes.txt").write_text("not a trace\n")
    bad = [
        tracereader_cli(*args, status=2)
        for args in (
            ("summary", "notes.txt"),
            ("summary", "missing.json.gz"),
            ("kernels", EAGER, "--step", "9"),
        )
    ]
    claim(
        all(len(b.stderr.splitlines()) == 1 and not b.stdout for b in bad),
        "bad input prints one line on stderr, never a traceback",
    )


def compare_facts(k: list[dict[str, Any]]) -> None:
    """Section 9: ``compare``, eager against compiled."""
    c = cli_json("compare", EAGER, COMPILED, "--labels", "eager,compiled")
    m = {r["metric"]: r for r in c["metrics"]}
    kernels, ops, cpu = m["kernels per step"], m["GPU ops per step"], m["CPU time per step (us)"]
    num("k_e", kernels["eager"])
    num("k_c", kernels["compiled"])
    num("ops_c", ops["compiled"])
    num("cpu_e", cpu["eager"])
    num("cpu_c", cpu["compiled"])
    num("cpu_x", cpu["compiled"] / cpu["eager"])
    claim(kernels["compiled"] < kernels["eager"], "compiling cut the kernels per step")
    claim(ops["compiled"] == ops["eager"], "compiling did not cut the GPU ops per step")
    claim(
        any("badd" in n for n in c["only_b"]),
        "compiled, a GEMM adds the bias itself (badd in its name)",
    )
    claim(
        any(n.startswith("Memcpy DtoD") for n in c["only_b"]),
        "compiled, a device-to-device copy puts b in the output first",
    )
    claim(sorted(c["only_a"]) == sorted(r["name"] for r in k), "both eager kernels are gone")


def validate_facts() -> None:
    """Section 10: ``validate`` passes every check on the 64x64 recording."""
    v = cli_json("validate", EAGER)
    claim(
        all(f["level"] == "ok" for f in v),
        "validate passes every check on the 64x64 recording",
    )
    claim(
        [f["check"] for f in v] == [
            "parser", "versions", "options", "counts", "python", "gpu", "zero_dur", "overlap",
            "last_step",
        ],
        "validate checks the parser, versions, options, events, Python, GPU work, 0 ns ops, "
        "overlaps and the last step, in that order",
    )  # fmt: skip


def after_last_step(tr: tracereader.Trace) -> set[str]:
    """The names of the events recorded after the trace's last step (annotations aside)."""
    last = tr.steps[-1]
    later = (tr.ts_ns >= last.end_ns) & (tr.kind != tracereader.Kind.OTHER)
    return {tr.name(int(i)) for i in np.flatnonzero(later)}


def cpu_only_facts() -> None:
    """Section 10: ``validate`` on section 1's CPU-only trace, the counter-example."""
    w = cli_json("validate", "mine_none.json.gz")
    warned = [f["check"] for f in w if f["level"] != "ok"]
    # A CPU build of torch writes no CUDA versions; a CUDA build writes them even here.
    claim(
        "gpu" in warned and set(warned) <= {"versions", "gpu"},
        f"validate warns the CPU-only trace has no GPU events, and at most on versions ({warned})",
    )
    md("cpu_only_warned", "Two warnings" if "versions" in warned else "One warning")
    messages = {f["check"]: f["message"] for f in w}
    claim("CPU-only" in messages["gpu"], "validate calls the trace without GPU events CPU-only")
    claim(
        "cannot show a cut-off step" in messages["last_step"],
        "the last-step line says what it cannot know",
    )
    # The last-step check needs something recorded after the last step. A GPU trace has
    # the profiler's closing cudaDeviceSynchronize there; the CPU-only trace has nothing.
    claim(
        "cudaDeviceSynchronize" in after_last_step(tracereader.load(WORK / EAGER)),
        "in a GPU trace the profiler's closing cudaDeviceSynchronize is after the last step",
    )
    claim(
        after_last_step(tracereader.load(WORK / "mine_none.json.gz")) == set(),
        "in a CPU-only trace nothing is recorded after the last step",
    )


# --------------------------------------------------------------------------- 11-12.


def render_facts(shown: subprocess.CompletedProcess[str]) -> str:
    """Section 11: what ``render`` printed, the file's name and its alt text; returns the alt."""
    out_name, alt = shown.stdout.splitlines()
    claim(
        out_name == "step.png" and (WORK / "step.png").read_bytes()[:4] == b"\x89PNG",
        "render writes the PNG and prints the file's name",
    )
    claim(
        "2 kernels" in alt and "2 arrows" in alt and "GPU idle gap" in alt,
        "the alt text names the step's 2 kernels, their 2 arrows and its GPU idle gap",
    )
    return alt


def render_figure(s: dict[str, Any], last_step: str, alt: str) -> FigureHTML:
    """Section 11's picture: the step that ``render`` drew, drawn by the library."""
    return FigureHTML(
        tracereader.timeline(tracereader.load(WORK / EAGER), step=int(last_step)),
        alt=alt,
        caption=f"{s['steps'][-1]} as tracereader render draws it: the CPU thread on top, "
        "the GPU stream below, an arrow from each launch call to its kernel, the idle gap "
        "shaded.",
    )


def python_facts(
    facts: dict[str, Any],
    longest: tracereader.Gap,
    trace: tracereader.Trace,
    kt: tracereader.Table,
    fig: Any,
    s: dict[str, Any],
    g: dict[str, Any],
    alt: str,
    add_full: str,
) -> None:
    """Section 12: the library's answers are the CLI's (``s``, ``g``, ``alt``, ``add_full``)."""
    claim(
        facts["gpu_busy_us"] == s["gpu_busy_us"],
        "the library's summary gives the GPU busy time that summary printed",
    )
    claim(
        longest.to_dict(trace) == g["gaps"][0],
        "the longest gap from Python is the first one gaps printed",
    )
    drawn: Any = tracereader.timeline(trace, step=s["steps"][-1])
    claim(drawn.tracereader_alt == alt, "timeline carries the alt text that render printed")
    claim(kt.to_records()[1]["name"] == add_full, "records keep the full name")
    info = fig.tracereader_info  # what the caption and the comment say was drawn
    claim(
        info["counts"]["synchronize calls"] == 1 and info["counts"]["kernels"] == 6,
        "the whole trace is drawn: its six kernels and the final sync",
    )
    claim(
        len(info["gaps"]) == len(g["gaps"]) and len(trace.steps) == 3,
        "the whole trace is drawn: its three steps and every idle gap",
    )


# --------------------------------------------------------------------------- 13-14.


def ranks_facts() -> None:
    """Section 13: ``summary ranks/``, and HTA's numbers with ``--drop-last-step``."""
    r = cli_json("summary", "ranks/")
    r0, r1 = r["ranks"]
    num("r_ov0", r0["overlap_pct"])
    num("r_ov1", r1["overlap_pct"])
    num("r_idle0", 100 * r0["idle_us"] / r0["span_us"])
    slow = r["steps"][-1]
    md("r_slow_step", slow["step"])
    num("r_slow", slow["slowest_rank"])
    num("r_behind", slow["behind_us"])
    h = {x["rank"]: x for x in cli_json("summary", "ranks/", "--drop-last-step")["ranks"]}
    claim((h[0]["idle_us"], h[0]["comp_us"], round(h[0]["overlap_pct"], 2)) == (
        321378, 106252, 11.81,
    ), "HTA gives the same numbers on rank 0 with --drop-last-step")  # fmt: skip
    claim((h[1]["idle_us"], h[1]["comp_us"], round(h[1]["overlap_pct"], 2)) == (
        328671, 135548, 20.05,
    ), "HTA gives the same numbers on rank 1 with --drop-last-step")  # fmt: skip
    claim(
        r0["overlap_pct"] < r1["overlap_pct"] and words.most(r0["idle_us"], r0["span_us"]),
        "computation hid less of rank 0's communication than rank 1's; rank 0 mostly idled",
    )
    claim(
        slow["slowest_rank"] == 1 and slow["behind_us"] > 0,
        "in the last step, rank 1 is the slowest rank, behind by some µs",
    )
    lib = tracereader.rank_summary(tracereader.load_ranks(WORK / "ranks"))
    claim(
        lib.ranks.to_records() == r["ranks"],
        'rank_summary(load_ranks("ranks/")) gives the rows summary ranks/ printed',
    )


PHASES = ["data", "forward", "loss", "backward", "optimizer"]


def check_regions(tr: tracereader.Trace) -> dict[str, float]:
    """Section 14's claims on one training step: the backward's GPU time, the thread its
    launches came from, and what ``ops`` sees of it. Returns the glued numbers, in µs."""
    rows = {r.name: r for r in tracereader.region_times(tr)}
    claim(list(rows) == PHASES, f"expected the regions {PHASES}, found {list(rows)}")
    fwd, bwd = rows["forward"], rows["backward"]
    claim(
        bwd.gpu_busy_us > 2 * fwd.gpu_busy_us,
        "the backward kept the GPU busy for more than twice the forward's time",
    )
    region = tr.regions("backward")[0]
    main = tr.lane[region.event]
    ln = tracereader.link(tr)
    calls = [int(i) for i in ln.launch_calls if region.start_ns <= tr.ts_ns[i] < region.end_ns]
    on_main = [i for i in calls if tr.lane[i] == main]
    # all from another thread but one: the fill of the loss's gradient, where backward starts
    claim(len(calls) > 100, "the backward made over 100 launch calls")
    claim(
        [tr.name(int(ln.issuer[i])) for i in on_main] == ["aten::fill_"],
        "all the backward's launch calls but one (the fill seeding the loss's gradient) came "
        "from another thread",
    )
    ops_bwd = next(r for r in tracereader.op_table(tr).to_records() if r["name"] == "backward")
    claim(
        ops_bwd["total_gpu_us"] < 0.01 * bwd.gpu_busy_us,
        "ops gives the backward row almost none (under 1 %) of its GPU time",
    )
    return {
        "bwd_us": bwd.gpu_busy_us,
        "fwd_us": fwd.gpu_busy_us,
        "ops_bwd_us": float(ops_bwd["total_gpu_us"]),
    }


def regions_facts() -> None:
    """Section 14: ``regions`` on one eager training step; the claims on every repeat, the
    numbers from the first (the one the command read)."""
    for k, rep in enumerate(TRAIN.repeats):  # the same reading on every repeat
        f = check_regions(rep.trace())
        if k == 0:
            num("tr_bwd_ms", f["bwd_us"] / 1e3)
            num("tr_fwd_ms", f["fwd_us"] / 1e3)
            num("tr_ops_bwd_us", f["ops_bwd_us"])
