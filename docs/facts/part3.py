"""Part 3's facts (``chapters/part3.md``): attention, from five kernels to one.

Every number the page quotes and every claim it makes about the recordings of
``04_attention``, computed by :mod:`part3_measures` (whose asserts check the claims) and
checked on every repeat. Numbers are medians over the repeats.
"""

from __future__ import annotations

from typing import Any

import part3_measures as m
from tracesite.facts import Facts, claim

EXAMPLE = "04_attention"


def facts(f: Facts) -> None:
    rec, recs, trace, num, md = f.rec, f.recs, f.trace, f.num, f.md

    num("n_repeats", len(recs("naive")))
    md("stamp", f.stamp())
    SHAPE = B, H, S, D = 8, 16, 1024, 64
    claim(
        [rec("naive").params[k] for k in ("batch", "heads", "seq", "head_dim")] == list(SHAPE),
        "the tensors have the shape the Hugging Face series used, (8, 16, 1024, 64)",
    )
    OUT_MIB = B * H * S * D * 2 / 2**20

    def glue(key: str, value: Any) -> None:  # a number: the median over the repeats; text: Markdown
        if isinstance(value, str):
            md(key, value)
        else:
            num(key, value)

    def peak_mib(v: str) -> float:  # extra memory of one forward: torch.cuda.max_memory_allocated
        return rec(v).timings()["peak_extra_bytes"] / 2**20  # type: ignore[index, no-any-return]

    # Where does attention written by hand spend its time?
    def naive() -> None:
        for key, value in m.naive_facts(
            trace("naive"),
            trace("naive_inplace"),
            peak_mib("naive"),
            peak_mib("naive_inplace"),
            SHAPE,
        ).items():
            glue(key, value)

    f.repeats(naive)

    # What does SDPA run, and which backend did PyTorch pick?
    def backends() -> None:
        BACKENDS = (
            "naive",
            "sdpa_default",
            "sdpa_math",
            "sdpa_efficient",
            "sdpa_flash",
            "sdpa_cudnn",
        )
        for key, value in m.backend_facts(
            {v: trace(v) for v in BACKENDS},
            {v: peak_mib(v) for v in BACKENDS},
            OUT_MIB,
            rec("sdpa_default").env["cudnn"],
        ).items():
            glue(key, value)

    f.repeats(backends)

    # Why is the math backend slower than writing it by hand?
    def math() -> None:
        for key, value in m.math_facts(trace("sdpa_math"), trace("naive")).items():
            glue(key, value)

    f.repeats(math)

    # What does torch.compile make of the five steps?
    def compiled() -> None:
        for key, value in m.compile_facts(
            trace("naive_compile"),
            trace("naive"),
            trace("sdpa_cudnn"),
            peak_mib("naive_compile"),
            SHAPE,
        ).items():
            glue(key, value)

    f.repeats(compiled)

    # Why does the fastest kernel read 0 % occupancy?
    def occupancy() -> None:
        for key, value in m.occupancy_facts(trace("sdpa_cudnn"), trace("sdpa_flash")).items():
            glue(key, value)

    f.repeats(occupancy)

    # Which backend is fastest, and when does the CPU decide?
    def sweep() -> None:
        for key, value in m.sweep_facts(m.sweep_table(rec("sweep").timings())).items():  # type: ignore[arg-type]
            glue(key, value)

    f.repeats(sweep)

    def streams() -> None:
        kernel_us = {v: m.gpu_us(trace(f"sdpa_{v}")) for v in ("cudnn", "flash", "efficient")}
        for key, value in m.stream_facts(
            rec("streams_backends").timings(),  # type: ignore[arg-type]
            rec("streams_small").timings(),  # type: ignore[arg-type]
            trace("streams_small"),
            kernel_us,
        ).items():
            glue(key, value)
        sb, ss = rec("streams_small").params, rec("streams_backends").params
        claim(
            [ss[k] for k in ("batch", "heads", "seq", "head_dim")] == list(SHAPE),
            "streams_backends times the calls at the series' shape",
        )
        md("small_shape", f"batch {sb['batch']}, {sb['heads']} heads, sequence {sb['seq']}")

    f.repeats(streams)
