"""The computations behind Part 2 (``part2.md`` and ``part2-notes.md``).

Each function takes the traces (or recorder files) of one repeat, checks every claim the
pages make about them with :func:`tracesite.facts.claim` (a false one raises its
:class:`~tracesite.facts.ClaimError`, an :class:`AssertionError`), and returns
the numbers and names the prose quotes, as ``{key: value}`` (``str`` values are Markdown).
The pages' facts modules (``docs/facts/part2.py``, ``part2_notes.py``) call them once per
repeat (``f.repeats``), so a claim holds on every repeat or the build fails. Statements the
pages take from source code (PyTorch, Triton, Liger) rather than from a trace live here as
named constants, so that they are visibly *not* measurements.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from tracesite import words
from tracesite.facts import claim

from tracereader import Kind, Trace, link

Values = dict[str, Any]

#: H200 SXM datasheet: dense bf16 TFLOP/s and HBM3e TB/s.
SPEC_TFLOPS, SPEC_TBS = 989, 4.8
#: Each recorded GPU's datasheet memory bandwidth, TB/s (H200 SXM HBM3e, H100 SXM HBM3); both
#: have the same dense bf16 peak, :data:`SPEC_TFLOPS`.
HBM_TBS = {"h200": 4.8, "h100": 3.35}
#: What the Hugging Face series reports for its A100-SXM4-80GB (times), and that GPU's datasheet.
A100 = {"gate_us": 190.0, "down_us": 170.0, "fused_us": 89.4, "liger_us": 92.8,
        "bf16_tflops": 312.0, "hbm_tbs": 2.039}  # fmt: skip
#: From Inductor's source (``triton_heuristics.pointwise``), not from a trace: a 1-D pointwise
#: kernel of this size has two candidate launch configurations, ``XBLOCK`` elements per block
#: in so many threads (4 warps or 8 warps): {threads per block: elements per block}.
POINTWISE_CANDIDATES = {128: 1024, 256: 512}
SMALL = {"rows": 8192, "dim": 768, "hidden": 3072}
BIG = {"rows": 4096, "dim": 4096, "hidden": 11008}
#: An ``nvjet`` GEMM kernel name, field by field (NVIDIA does not document it; our reading).
NVJET = re.compile(
    r"nvjet_sm(?P<arch>\d+)_(?P<kind>[a-z]+)_(?P<tile>\d+x\d+)_(?P<k_stages>\d+x\d+)"
    r"_(?P<cluster>\dx\d)_(?P<hv>[hv])_(?P<beta>bz|badd)(?:_(?P<coop>coop[AB]))?"
    r"(?:_(?P<bias>bias))?_(?P<layout>[TN]{3})$"
)
VIEWS = ("aten::t", "aten::transpose", "aten::as_strided", "aten::reshape", "aten::view",
         "aten::_unsafe_view")  # fmt: skip


def kernels(tr: Trace) -> dict[str, float]:
    """``{name: median µs}`` of every kernel in the trace."""
    out: dict[str, list[float]] = {}
    for i in tr.where(kind=Kind.KERNEL):
        out.setdefault(tr.name(int(i)), []).append(float(tr.dur_ns[i]) / 1e3)
    return {k: float(np.median(v)) for k, v in out.items()}


def step_ops(tr: Trace, step: int = -1) -> list[str]:
    """The CPU-side events of one step, in order: ops, ranges and runtime calls."""
    s = tr.steps[step]
    keep = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.RUNTIME, Kind.DRIVER)
    return [tr.name(int(i)) for i in tr.where(within=(s.start_ns, s.end_ns)) if tr.kind[i] in keep]


def gpu_ops_per_step(tr: Trace) -> float:
    return len(link(tr).gpu_ops) / len(tr.steps)


def tflops(flop: float, us: float) -> float:
    return flop / (us * 1e-6) / 1e12


def tbs(nbytes: float, us: float) -> float:
    return nbytes / (us * 1e-6) / 1e12


def per_step(tr: Trace, name: str) -> float:
    return len(tr.where(kind=Kind.KERNEL, name=name)) / len(tr.steps)


def launch_config(tr: Trace, name: str) -> tuple[int, int]:
    """(blocks in the grid, threads per block) of every launch of kernel ``name``: one pair."""
    rows = tr.where(kind=Kind.KERNEL, name=name)
    pairs = {(int(tr.extra["grid"][i]), int(tr.extra["block"][i])) for i in rows}
    claim(len(pairs) == 1, f"{name}: one launch configuration, got {pairs}")
    return pairs.pop()


def pick(names: Iterable[str], test: Callable[[str], bool]) -> str:
    found = [n for n in names if test(n)]
    claim(len(found) == 1, f"exactly one kernel, got {found}")
    return found[0]


def code(name: str) -> str:
    return f"`{name}`"


# ------------------------------------------------------------------ section 1-2: one Linear
def linear(small: Trace, big: Trace, part1: Trace) -> Values:
    """nn.Linear: the views launch nothing, one GEMM with the bias in its epilogue."""
    ops = step_ops(small)
    aten = [n for n in ops if n.startswith("aten::")]
    claim(
        aten == ["aten::linear", "aten::t", "aten::transpose", "aten::as_strided", "aten::addmm"],
        str(aten),
    )
    claim(gpu_ops_per_step(small) == 1, "one GPU op per forward")
    lk = link(small)
    nest = {small.name(int(i)): small.name(int(lk.parent[i])) for i in small.where(prefix="aten::")}
    claim(
        nest == {"aten::linear": "linear_fwd", "aten::t": "aten::linear",
                 "aten::transpose": "aten::t", "aten::as_strided": "aten::transpose",
                 "aten::addmm": "aten::linear"},
        f"aten::linear holds aten::t (and its chain) and aten::addmm: {nest}",
    )  # fmt: skip
    ks, kb = kernels(small), kernels(big)
    claim(len(ks) == 1 and len(kb) == 1, "one kernel at each size")
    name_s, name_b = next(iter(ks)), next(iter(kb))
    fs, fb = NVJET.fullmatch(name_s), NVJET.fullmatch(name_b)
    claim(
        fs is not None and fb is not None and fs["bias"] == fb["bias"] == "bias"
        and fs["beta"] == "bz" and fs["layout"][:2] == fb["layout"][:2] == "TN",
        f"the Linear's GEMM: bias in the name, layouts starting TN: {name_s}, {name_b}",
    )  # fmt: skip
    p1 = {n for n in kernels(part1) if n.startswith("nvjet")}
    m1 = NVJET.fullmatch(next(iter(p1))) if len(p1) == 1 else None
    claim(m1 is not None and m1["layout"][:2] == "NN", f"Part 1's x @ w, layouts NN: {p1}")
    claim(not len(small.where(kind=Kind.MEMCPY)), "no copy of the bias")
    for op in ("aten::t", "aten::transpose", "aten::as_strided"):
        claim(
            all(len(lk.gpu_ops_of(int(r))) == 0 for r in small.where(name=op)),
            f"{op} launches nothing",
        )
    flop_big = 2 * 8192 * 4096 * 4096
    claim(tflops(flop_big, kb[name_b]) > 0.6 * SPEC_TFLOPS, "the big GEMM near the spec")
    return {"k_small": code(name_s),
            "k_big": code(name_b), "small_us": ks[name_s], "big_us": kb[name_b],
            "small_tflops": tflops(2 * 1024 * 32 * 64, ks[name_s]),
            "big_tflops": tflops(flop_big, kb[name_b]),
            "big_pct": 100 * tflops(flop_big, kb[name_b]) / SPEC_TFLOPS}  # fmt: skip


def linear_compile(pairs: Sequence[tuple[Trace, Trace]]) -> Values:
    """Compiling one Linear: the same kernel, the views gone from the CPU side."""
    for te, tc in pairs:
        claim(set(kernels(te)) == set(kernels(tc)), "compile runs the same GEMM")
        claim(gpu_ops_per_step(te) == gpu_ops_per_step(tc), "and nothing else")
    (small_c_e, small_c), (big_e, big_c) = pairs
    ops = step_ops(small_c)
    claim([n for n in ops if n.startswith("aten::")] == ["aten::addmm"], "the views are gone")
    frames = [n for n in dict.fromkeys(ops)
              if not n.startswith(("aten::", "cu", "ProfilerStep", "linear_fwd"))]  # fmt: skip
    name = next(iter(kernels(big_e)))
    ratio = kernels(big_c)[name] / kernels(big_e)[name]
    claim(0.95 < ratio < 1.05, f"the big GEMM takes the same time compiled: {ratio:.3f}")
    return {"compile_frames": ", ".join(code(f) for f in frames), "big_comp_ratio": ratio}


# ------------------------------------------------------------------ section 3: the eager MLP
def gemm_roles(tr: Trace) -> tuple[str, str]:
    """(the kernel gate and up ran, the kernel down ran): two launches a step against one."""
    gemms = [n for n in kernels(tr) if n.startswith("nvjet")]
    claim(len(gemms) == 2, f"two GEMM kernels: {gemms}")
    twice, once = sorted(gemms, key=lambda n: -per_step(tr, n))
    claim(per_step(tr, twice) > per_step(tr, once), "gate and up share one kernel")
    return twice, once


def mlp_eager(te: Trace, tb: Trace, spec_tbs: float = SPEC_TBS) -> Values:
    """The eager MLP: 5 kernels and 2 memsets, two GEMM kernels, memory-bound pointwise ops."""
    k = kernels(te)
    gelu = pick(k, lambda n: "Gelu" in n)
    mul = pick(k, lambda n: "MulFunctor" in n or "BinaryFunctor" in n)
    claim(len(k) == 4, f"four kernel names: {k}")
    n_memset = len(te.where(kind=Kind.MEMSET)) / len(te.steps)
    claim(gpu_ops_per_step(te) == 5 + n_memset, "5 kernels plus the memsets")
    claim(step_ops(te).count("cudaMemsetAsync") == n_memset == 2, "two memsets a forward")
    claim(
        all(words.few_bytes(int(n)) for n in te.extra["bytes"][te.where(kind=Kind.MEMSET)]),
        "memsets of a few bytes",
    )
    lm = link(te)
    claim({te.name(int(lm.issuer[i])) for i in te.where(name="cudaMemsetAsync")} == {"aten::mm"},
          "the memsets come from inside aten::mm")  # fmt: skip
    claim("BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16" in mul
          and "MulFunctor<float>" in mul, "bf16 data, float arithmetic")  # fmt: skip
    mem_bytes = {int(te.extra["bytes"][i]) for i in te.where(kind=Kind.MEMSET)}
    claim(len(mem_bytes) == 1, str(mem_bytes))
    claim(
        step_ops(tb).count("cudaMemsetAsync") == step_ops(tb).count("aten::mm") == 3,
        "every big GEMM",
    )
    gate, down = gemm_roles(te)
    gate_big, down_big = gemm_roles(tb)
    claim(
        down_big == gate, "at the big shape, down runs the kernel gate and up ran at the small one"
    )
    for tr in (te,):
        sms = tr.device_properties[0]["numSms"]
        claim(all(132 <= int(tr.extra["grid"][i]) <= 140 and words.about(int(tr.extra["grid"][i]), sms)
                  for i in tr.where(kind=Kind.KERNEL)
                  if tr.name(int(i)).startswith("nvjet")), "about one block per SM")  # fmt: skip
    lk = link(te)
    for op in VIEWS:
        rows = te.where(name=op)
        claim(
            len(rows) and all(len(lk.gpu_ops_of(int(r))) == 0 for r in rows),
            f"{op} launches nothing",
        )
    # The order Python runs them: gate GEMM, gelu, up GEMM, mul, down GEMM.
    last = te.steps[-1].name
    mine = [int(g) for g in te.where(kind=Kind.KERNEL)
            if lk.launch[g] >= 0 and (s := lk.step_of(int(g))) is not None and s.name == last]  # fmt: skip
    order = [te.name(g) for g in sorted(mine, key=lambda g: int(te.ts_ns[g]))]
    claim(order == [gate, gelu, gate, mul, down], f"kernel order {order}")
    # One kernel name, two jobs: `gate` at the small shape and as down at the big one.
    g_small = launch_config(te, gate)
    g_big = launch_config(tb, down_big)
    kb = kernels(tb)
    claim(words.much(kb[down_big], k[gate]), "the same code, a much longer job")
    claim(g_small == g_big, "the same grid and block for both jobs: a persistent kernel")
    lb, last_b = link(tb), tb.steps[-1]
    during = [int(i) for i in tb.where(kind=Kind.KERNEL)
              if tb.ts_ns[i] < last_b.end_ns and tb.ts_ns[i] + tb.dur_ns[i] > last_b.start_ns]  # fmt: skip
    claim(any((s := lb.step_of(i)) is not None and s.name != last_b.name for i in during),
          "the GPU runs earlier steps' kernels during the last step")  # fmt: skip
    claim(tb.where(name="cudaDeviceSynchronize")[-1] > tb.where(within=(last_b.start_ns, last_b.end_ns))[-1],
          "the final synchronize comes after the step")  # fmt: skip
    flop = 2 * 8192 * 768 * 3072
    t_bytes = 8192 * 3072 * 2
    claim(0.5 < tbs(3 * t_bytes, k[mul]) / spec_tbs < 1.0, "mul is memory-bound, near the limit")
    return {"mlp_kernels": gpu_ops_per_step(te) - n_memset, "mlp_memsets": n_memset,
            "mlp_gpu_ops": gpu_ops_per_step(te), "memset_bytes": mem_bytes.pop(),
            "big_memsets": step_ops(tb).count("cudaMemsetAsync"),
            "k_gate": code(gate), "k_down": code(down), "k_gate_big": code(gate_big),
            "k_down_big": code(down_big), "gemm_gflop": flop / 1e9,
            "gate_us": k[gate], "down_us": k[down], "gate_tflops": tflops(flop, k[gate]),
            "down_tflops": tflops(flop, k[down]), "gelu_us": k[gelu], "mul_us": k[mul],
            "pair_us": k[gelu] + k[mul], "t_mib": t_bytes / 2**20,
            "gelu_tbs": tbs(2 * t_bytes, k[gelu]), "mul_tbs": tbs(3 * t_bytes, k[mul]),
            "mul_pct": 100 * tbs(3 * t_bytes, k[mul]) / spec_tbs,
            "same_name_small_us": k[gate], "same_name_big_us": kb[down_big],
            "same_name_small_grid": g_small[0], "same_name_big_grid": g_big[0],
            "same_name_block": g_small[1], "views": ", ".join(code(v) for v in VIEWS)}  # fmt: skip


def nvjet_fields(names: Iterable[str]) -> list[dict[str, str | None]]:
    """Each ``nvjet`` name split into its fields; every name must fit :data:`NVJET`."""
    out = []
    for n in names:
        m = NVJET.fullmatch(n)
        claim(m, f"{n} fits the nvjet pattern")
        out.append(m.groupdict() if m else {})
    claim(
        {f["kind"] for f in out} == {"tst"} and {f["hv"] for f in out} == {"h", "v"}, "tst; h and v"
    )
    claim({f["arch"] for f in out} == {"90"}, "all sm90")
    return out


# ------------------------------------------------------------------ the first forward
def occupancy_issuers(tr: Trace) -> set[str]:
    """The operators that issued each ``cudaOccupancy…`` call of the trace."""
    lk = link(tr)
    return {
        tr.name(int(lk.issuer[i])) if lk.issuer[i] >= 0 else "(none)"
        for i in tr.where(contains="Occupancy")
    }


def first_forward(tc: Trace, warm: Sequence[Trace]) -> Values:
    """The first forward of a fresh process: occupancy queries only inside the first GEMM."""
    for tr in warm:
        claim(not len(tr.where(contains="Occupancy")), "no occupancy query in warm forwards")
    lk = link(tc)
    first, rest = tc.steps[0], tc.steps[1:]
    for s in rest:
        claim(
            not len(tc.where(contains="Occupancy", within=(s.start_ns, s.end_ns))),
            "only the first asks",
        )
    occ = [
        int(i)
        for i in tc.where(within=(first.start_ns, first.end_ns))
        if "Occupancy" in tc.name(int(i))
    ]
    claim({tc.name(int(lk.issuer[i])) for i in occ} == {"aten::mm"}, "cuBLAS's queries only")
    mms = [
        int(i)
        for i in tc.where(name="aten::mm", kind=Kind.CPU_OP, within=(first.start_ns, first.end_ns))
    ]
    claim(len(mms) == 3, "gate, up, down")

    def inside(i: int) -> list[int]:
        return [
            int(j)
            for j in tc.where(within=(int(tc.ts_ns[i]), int(tc.ts_ns[i] + tc.dur_ns[i])))
            if j != i
        ]

    def n_occ(i: int) -> int:
        return sum("Occupancy" in tc.name(j) for j in inside(i))

    claim([n_occ(i) for i in mms] == [len(occ), 0, 0], "all in the first GEMM")
    out: Values = {"cold_fwd_ms": (first.end_ns - first.start_ns) / 1e6, "cold_occ": len(occ),
                   "warm_fwd_us": float(np.median([(s.end_ns - s.start_ns) / 1e3 for s in rest])),
                   "cold_clusters": sum(tc.name(i) == "cudaOccupancyMaxActiveClusters" for i in occ)}  # fmt: skip
    for key, i in zip(("gate", "up", "down"), mms, strict=True):
        out[f"cold_{key}_ms"] = float(tc.dur_ns[i]) / 1e6
    for op in ("aten::gelu", "aten::mul"):
        rows = tc.where(name=op, kind=Kind.CPU_OP, within=(first.start_ns, first.end_ns))
        claim(len(rows) == 1 and n_occ(int(rows[0])) == 0, f"{op} asks nothing")
        i = int(rows[0])
        claim({"Lazy Function Loading", "cudaMalloc"} <= {tc.name(j) for j in inside(i)}, op)
        rec = sum(int(tc.dur_ns[j]) for j in inside(i)
                  if lk.parent[j] == i or tc.name(j) == "Lazy Function Loading")  # fmt: skip
        claim(
            words.most(tc.dur_ns[i] - rec, tc.dur_ns[i]), f"most of {op}'s first call is unlabelled"
        )
        out[f"cold_{op[6:]}_ms"], out[f"cold_{op[6:]}_rec_ms"] = (
            float(tc.dur_ns[i]) / 1e6,
            rec / 1e6,
        )
    occ_us = float(sum(int(tc.dur_ns[i]) for i in occ)) / 1e3
    claim(
        words.most(sum(tc.dur_ns[i] < 1000 for i in occ), len(occ)), "most queries under 1 µs each"
    )
    claim(occ_us < 0.01 * tc.dur_ns[mms[0]] / 1e3, "the queries are cheap")
    claim("Lazy Function Loading" in {tc.name(j) for j in inside(mms[2])}, "down's kernel loads")
    for mm, which in ((mms[0], "the first GEMM's"), (mms[2], "down's")):
        under = sum(int(tc.dur_ns[j]) for j in inside(mm) if lk.parent[j] == mm)
        claim(
            words.most(tc.dur_ns[mm] - under, tc.dur_ns[mm]),
            f"{which} first call mostly unrecorded: most of it has nothing recorded under it",
        )
    out["cold_occ_us"] = occ_us
    return out


# ------------------------------------------------------------------ section 4: fusion
def fused_name(tr: Trace) -> str:
    return pick(kernels(tr), lambda n: n.startswith("triton_poi"))


def fused_launch(tr: Trace, numel: int) -> Values:
    """The fused kernel's launch: grid, block, elements per thread = numel / (grid x block)."""
    name = fused_name(tr)
    grid, block = launch_config(tr, name)
    claim(numel % (grid * block) == 0, f"{numel} elements over {grid} x {block} threads")
    return {
        "grid": grid,
        "block": block,
        "per_thread": numel // (grid * block),
        "us": kernels(tr)[name],
    }


def mlp_compile(te: Trace, tc: Trace, tl: Trace) -> Values:
    """The compiled MLP: one fused Triton kernel where eager ran gelu and mul."""
    ke, kc = kernels(te), kernels(tc)
    fused = fused_name(tc)
    claim(fused.startswith("triton_poi_fused_") and "gelu" in fused and "mul" in fused, fused)
    claim(len([n for n in kc if n.startswith("triton_")]) == 1, "one Triton kernel")
    claim(
        {n for n in kc if n.startswith("nvjet")} == {n for n in ke if n.startswith("nvjet")},
        "same GEMMs",
    )
    claim(gpu_ops_per_step(tc) == gpu_ops_per_step(te) - 1, "one GPU op fewer")

    def apis(tr: Trace, test: Callable[[str], bool]) -> set[str]:
        lk = link(tr)
        return {
            tr.name(int(lk.launch[i])) for i in tr.where(kind=Kind.KERNEL) if test(tr.name(int(i)))
        }

    claim(apis(tc, lambda n: n == fused) == {"cuLaunchKernel"}, "Inductor's launcher")
    claim(apis(tl, lambda n: "geglu" in n) == {"cuLaunchKernelEx"}, "Triton's launcher")
    claim(apis(te, lambda n: "Gelu" in n) == {"cudaLaunchKernel"}, "PyTorch's launcher")
    t_mib = 8192 * 3072 * 2 / 2**20
    return {"k_fused": code(fused), "bytes_eager": 5 * t_mib, "bytes_fused": 3 * t_mib}


def config_outcomes(runs: dict[str, list[Trace]], numel: int) -> list[Values]:
    """Every repeat's fused-kernel launch, per variant: checked against Inductor's candidates
    where the variant compiled in the default mode."""
    out = []
    for variant, traces in runs.items():
        for k, tr in enumerate(traces):
            row = fused_launch(tr, numel) | {"variant": variant, "repeat": k}
            if not variant.startswith("autotune"):
                claim(
                    POINTWISE_CANDIDATES.get(row["block"]) == row["per_thread"] * row["block"],
                    f"{variant} r{k}: one of the default mode's two candidates, got {row}",
                )
            out.append(row)
    return out


def saving(pair_us: float, fused_us: float) -> float:
    return 100 * (1 - fused_us / pair_us)


def verdict_ratio(
    ratios: Sequence[float], more: str, less: str, same: str, margin: float = 0.05
) -> str:
    if min(ratios) > 1 + margin:
        return more
    if max(ratios) < 1 - margin:
        return less
    return same


def median(values: Iterable[float]) -> float:
    return float(statistics.median(list(values)))


def big_shape(eb: Trace, cb: Trace, lb: Trace, liger_params: dict[str, Any]) -> Values:
    """The larger shape: the fusion still saves; Liger's kernel saves nothing on eager's pair."""
    kb = kernels(eb)
    pair = sum(us for n, us in kb.items() if not n.startswith("nvjet"))
    numel = BIG["rows"] * BIG["hidden"]
    fb = fused_launch(cb, numel)
    claim(fb["us"] < 0.95 * pair, "fused beats the pair at the big shape")
    lg = pick(kernels(lb), lambda n: "geglu" in n)
    lus = kernels(lb)[lg]
    grid, block = launch_config(lb, lg)
    hidden = int(liger_params["hidden"])
    claim(hidden == BIG["hidden"], "the larger shape's hidden size")
    block_elems = 1 << (hidden - 1).bit_length()  # Liger's source: the power of two at or above
    claim(grid == BIG["rows"], "one block per row")
    return {"pair_big_us": pair, "fused_big_us": fb["us"], "fused_big_block": fb["block"],
            "fused_big_per_thread": fb["per_thread"], "liger_big_us": lus,
            "liger_big_vs_pair": lus / pair, "liger_big_grid": grid, "liger_big_block": block,
            "liger_block": block_elems, "liger_masked_pct": 100 * (1 - hidden / block_elems),
            "fused_big_saving": saving(pair, fb["us"]),
            "liger_small_block": 1 << (SMALL["hidden"] - 1).bit_length(),
            "liger_small_masked_pct": 100 * (1 - SMALL["hidden"] / (1 << (SMALL["hidden"] - 1).bit_length()))}  # fmt: skip


def liger(tl: Trace, tc: Trace) -> Values:
    """Liger's GEGLU kernel: one kernel, no compile frames; its CPU call against the preops."""
    lg = pick(kernels(tl), lambda n: "geglu" in n)
    ops = step_ops(tl)
    claim(
        "LigerGELUMulFunction" in ops and "TorchDynamo Cache Lookup" not in ops, "no compile frames"
    )
    claim(gpu_ops_per_step(tl) == gpu_ops_per_step(tc), "the compiled MLP's GPU op count")
    claim(launch_config(tl, lg)[0] == SMALL["rows"], "one block per row")
    rows = tl.where(name="LigerGELUMulFunction", kind=Kind.CPU_OP)
    cpu = float(np.median(tl.dur_ns[rows])) / 1e3
    pre = [int(r) for n in ("TorchDynamo Cache Lookup", "Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue")
           for r in tc.where(name=n)]  # fmt: skip
    pre_us = float(tc.dur_ns[pre].sum()) / 1e3 / len(tc.steps)
    # Two separate recordings: the page calls this rough and asserts only the direction.
    claim(cpu > pre_us, "Liger's call took longer than the compiled forward's preops")
    return {
        "k_liger": code(lg),
        "liger_us": kernels(tl)[lg],
        "liger_cpu_us": cpu,
        "preops_us": pre_us,
    }


def a100(gate_us: float, down_us: float) -> Values:
    """The H200's GEMMs against the series' A100 times, and the two datasheets' ratios."""
    gx, dx = A100["gate_us"] / gate_us, A100["down_us"] / down_us
    peak = SPEC_TFLOPS / A100["bf16_tflops"]
    claim(all(words.about(x, peak) for x in (gx, dx)), "GEMMs gain about the compute ratio")
    return {"gate_x": gx, "down_x": dx, "peak_x": peak, "bw_x": SPEC_TBS / A100["hbm_tbs"]}


def bw_word(fused_us: float) -> str:
    """How the A100-to-H200 ratio of a fused kernel sits against the bandwidth ratio."""
    x, bw = A100["fused_us"] / fused_us, SPEC_TBS / A100["hbm_tbs"]
    return "near" if 0.8 * bw < x < 1.25 * bw else ("short of" if x < bw else "beyond")


# ------------------------------------------------------------------ notes: compile modes
def reduce_overhead(tro: Trace) -> Values:
    """reduce-overhead: one graph launch a step, an input copy, and no ``aten::mm`` event
    for the profiler's table to make a row of (the table sums the trace's events)."""
    lro = link(tro)
    graphs = tro.where(name="cudaGraphLaunch")
    claim(len(graphs) == len(tro.steps), "one graph launch a step")
    per_graph = {len(lro.gpu_ops_of_call(int(g))) for g in graphs}
    claim(len(per_graph) == 1, str(per_graph))
    copy_k = pick(kernels(tro), lambda n: "multi_tensor_apply" in n)
    claim("aten::_foreach_copy_" in step_ops(tro), "the input copy")
    claim(not len(tro.where(name="aten::mm")), "no aten::mm event")
    region = tro.where(name="Torch-Compiled Region: 0/0")
    claim(all(any(tro.ts_ns[r] <= tro.ts_ns[g] < tro.ts_ns[r] + tro.dur_ns[r] for r in region)
              for g in graphs), "each graph launch inside the compiled region")  # fmt: skip
    return {
        "ro_per_graph": per_graph.pop(),
        "ro_copy_us": kernels(tro)[copy_k],
        "ro_x_mib": 64 * 128 * 768 * 2 / 2**20,
    }


def kernel_us_per_step(tr: Trace) -> float:
    return float(tr.dur_ns[tr.where(kind=Kind.KERNEL)].sum()) / 1e3 / len(tr.steps)


def autotune_warm(pairs: Sequence[tuple[Trace, Trace]]) -> tuple[list[str], list[str], list[float]]:
    """The warm max-autotune recording against the default mode, repeat by repeat: (Triton
    templates kept, cuBLAS kernels kept, GPU time per forward as a ratio to the default's)."""
    picks, ratios = set(), []
    for ta, tc in pairs:
        picks.add(frozenset(n for n in kernels(ta) if not n.startswith("triton_poi")))
        ratios.append(kernel_us_per_step(ta) / kernel_us_per_step(tc))
    claim(len(picks) == 1, "every repeat kept the same kernels")
    picked = next(iter(picks))
    templates = sorted(n for n in picked if n.startswith("triton_tem"))
    kept = sorted(n for n in picked if n.startswith("nvjet"))
    claim(len(templates) + len(kept) == len(picked), "every GEMM is a template or cuBLAS")
    return templates, kept, ratios


def autotune_cold(timings: dict[str, Any], cold_default: dict[str, Any], tr: Trace) -> Values:
    """One cold max-autotune compile: its AUTOTUNE report and what the forwards then ran."""
    claim(
        words.far(timings["first_call_s"], cold_default["first_call_s"]),
        "max-autotune compiles far longer",
    )
    claim(not cold_default["autotune"], "the default mode races nothing")
    blocks = timings["autotune"]
    claim(all(b["op"] == "mm" for b in blocks), "GEMM races only")
    claim(
        {b["sizes"] for b in blocks} == {"8192x768, 768x3072", "8192x3072, 3072x768"}, "two shapes"
    )
    claim(
        all(sum(c["name"] == "mm" for c in b["choices"]) == 1 for b in blocks),
        "cuBLAS in each race",
    )
    claim(
        all("out of resource" in f for b in blocks for f in b["failed"]), "failures: shared memory"
    )
    need = set()
    for b in blocks:
        for f in b["failed"]:
            m = re.search(r"Required: (\d+) Hardware limit: ?(\d+)", f)
            claim(m, f)
            need.add(m.groups() if m else ())
    claim(len(need) == 1, "one configuration, one limit")
    need_b, limit_b = map(int, need.pop())
    winners = [b["choices"][0]["name"] for b in blocks]
    ran = kernels(tr)
    claim(
        any(w.startswith("triton") for w in winners)
        == any(n.startswith("triton_tem") for n in ran),
        "ran",
    )
    claim(("mm" in winners) == any(n.startswith("nvjet") for n in ran), "the winners ran")
    races = [(b["sizes"], next(c["ms"] for c in b["choices"] if c["name"] == "mm"),
              min(c["ms"] for c in b["choices"] if c["name"].startswith("triton")), b["choices"][0]["name"])
             for b in blocks]  # fmt: skip
    return {"cold_compile_s": cold_default["first_call_s"], "cold_autotune_s": timings["first_call_s"],
            "autotune_x": timings["first_call_s"] / cold_default["first_call_s"], "n_races": len(blocks),
            "n_candidates": max(b["n_choices"] for b in blocks),
            "n_failed": sum(len(b["failed"]) for b in blocks), "smem_need_kib": need_b / 1024,
            "smem_limit_kib": limit_b / 1024,
            "race_s": sum(b["bench_s"] + b["precompile_s"] for b in blocks),
            "tri_example": code(next(c["name"] for c in blocks[0]["choices"] if c["name"].startswith("triton_mm"))),
            "races": races}  # fmt: skip


# ------------------------------------------------------------------ the launch configurations
#: How each variant compiled: (mode, compile cache). See the recorder's docs: the plan's
#: cold_variants run in a fresh process with an empty Inductor cache; the others share one
#: process per repeat and the machine's cache.
HOW = {"compile": ("default", "machine's"), "reduce_overhead": ("reduce-overhead", "machine's"),
       "compile_cold": ("default", "empty"), "autotune": ("max-autotune", "machine's"),
       "autotune_cold": ("max-autotune", "empty")}  # fmt: skip


def group_outcomes(rows: Sequence[Values]) -> list[Values]:
    """The launch configurations that occurred, per variant: how many repeats, median µs."""
    groups: dict[tuple[str, int, int], list[Values]] = {}
    for r in rows:
        groups.setdefault((r["variant"], r["block"], r["grid"]), []).append(r)
    out = []
    for (variant, block, grid), rs in groups.items():
        n_all = sum(r["variant"] == variant for r in rows)
        out.append({"variant": variant, "block": block, "grid": grid, "per_thread": rs[0]["per_thread"],
                    "n": len(rs), "of": n_all, "us": median(r["us"] for r in rs)})  # fmt: skip
    return out


def outcome_table(groups: Sequence[Values]) -> str:
    """The groups as a Markdown table."""
    lines = ["| variant | mode | compile cache | threads per block | blocks | elements per thread "
             "| repeats | kernel, median |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for g in groups:
        mode, cache = HOW[g["variant"]]
        lines.append(f"| `{g['variant']}` | {mode} | {cache} | {g['block']} | {g['grid']:,} | "
                     f"{g['per_thread']} | {g['n']} of {g['of']} | {g['us']:.1f} µs |")  # fmt: skip
    return "\n".join(lines)


def only_outcome(groups: Sequence[Values], variant: str) -> Values:
    """The one configuration every repeat of ``variant`` kept."""
    mine = [g for g in groups if g["variant"] == variant]
    claim(len(mine) == 1, f"{variant}: one configuration in every repeat, got {mine}")
    return mine[0]


def fusion_outcomes(
    runs: dict[str, list[Trace]], eager: Sequence[Trace], liger: Sequence[Trace]
) -> Values:
    """The fused kernel's configurations over every repeat, and what each saved.

    ``runs`` maps each variant of :data:`HOW` to its repeats' traces; ``eager`` and ``liger``
    are the repeats of those variants, paired with the compiled ones by repeat number.
    """
    numel = SMALL["rows"] * SMALL["hidden"]
    groups = group_outcomes(config_outcomes(runs, numel))
    warm, cold = only_outcome(groups, "compile"), only_outcome(groups, "compile_cold")
    fused = {
        v: [fused_launch(t, numel)["us"] for t in runs[v]] for v in ("compile", "compile_cold")
    }
    pair = [sum(us for n, us in kernels(t).items() if not n.startswith("nvjet")) for t in eager]
    lig = [pick(kernels(t), lambda n: "geglu" in n) for t in liger]
    lig_us = [kernels(t)[n] for t, n in zip(liger, lig, strict=True)]
    claim(all(lg < 0.95 * p for lg, p in zip(lig_us, pair, strict=True)), "Liger beats the pair")
    out: Values = {"outcome_table": outcome_table(groups), "a100_fused_us": A100["fused_us"],
                   "bw_x": SPEC_TBS / A100["hbm_tbs"], "cold_vs_warm_x": cold["us"] / warm["us"],
                   "groups": groups, "fused": fused}  # fmt: skip
    for key, g, variant in (("warm", warm, "compile"), ("cold", cold, "compile_cold")):
        claim(
            all(f < 0.95 * p for f, p in zip(fused[variant], pair, strict=True)),
            "fusion saves, every repeat",
        )
        out |= {f"{key}_n": g["n"], f"{key}_of": g["of"], f"{key}_us": g["us"], f"{key}_block": g["block"],
                f"{key}_per_thread": g["per_thread"],
                f"{key}_saving": median(saving(p, f) for p, f in zip(pair, fused[variant], strict=True)),
                f"{key}_a100_x": A100["fused_us"] / g["us"], f"{key}_bw_word": bw_word(g["us"]),
                f"liger_vs_{key}": verdict_ratio([lg / f for lg, f in zip(lig_us, fused[variant], strict=True)],
                                                 "slower than", "faster than", "not told apart from")}  # fmt: skip
    return out
