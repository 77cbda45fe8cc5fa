"""The cheatsheet's facts (``cheatsheet.md``): what each entry sees in a trace, on our recordings.

Every number the page quotes and every claim it makes about the recordings of
``01_matmul_add`` (and, in its later sections, of the other parts' examples), checked on
every repeat: the page's opening here (:func:`intro`), each entry by its function in
:mod:`_cheatsheet_matmul` (Part 1's recordings) or :mod:`_cheatsheet_parts` (the other
parts'), run in the page's order. The pictures are drawn on the page, from the drawn
repeat, by ``docs/cheatsheet_pictures.py`` and ``docs/cheatsheet_parts_pictures.py``.
"""

from __future__ import annotations

import _cheatsheet_common as common
import _cheatsheet_matmul as m
import _cheatsheet_parts as p
from _cheatsheet_common import EXAMPLE, HF, NAMES, REC, code, param, put, recs, their
from tracesite.facts import Facts

__all__ = ["EXAMPLE", "GPUS", "facts", "intro"]

#: Every claim is checked on both GPUs' recordings; Parts 4 and 5 (05_llm_decode,
#: 06_train_step) are recorded on the H200 only, so their entries run on the H200 only.
GPUS = ("h200", "h100")

#: The entries, in the page's order, up to the one that reads every repeat itself
#: (:func:`_cheatsheet_parts.llm_tuning`), and after it. Each runs in ``f.repeats``.
ENTRIES = [
    m.overhead, m.compute, m.hotspot, m.selftotal, m.calls, m.gpuannot,  # the profiler table
    m.firststep, m.firstgap, m.silentself, m.occupancy, m.launchapi, m.memset, m.sync64,
    m.syncbig,  # the CPU lane
    m.empty, m.latency, m.kernelgap, m.variance, m.names, m.footprint, m.tf32,
    m.dtod,  # the GPU lane
    m.chain, m.batched, m.addmm,  # the dispatch chain
    m.dynamo, m.region, m.hash, m.samekernel, m.tax, m.graphs,  # torch.compile
    p.bias, p.views, p.fused, p.graph,  # Part 2
    p.att_copy, p.att_cudnn, p.att_occupancy, p.att_cudnn_self,  # Part 3
    m.schedule, m.abr, m.lazy,  # the profiler's own artifacts
]  # fmt: skip
ENTRIES_H200 = [p.llm_eager, p.llm_graph]  # Part 4: recorded on the H200 only
ENTRIES_AFTER = [p.train_backward_thread, p.train_data_gap]  # Part 5: the H200 only


def intro() -> None:
    """The page's opening: the recordings' names and stamps, and the post's figures."""
    # The text names each recording by its size and dtype: check the names say what was run.
    for n in NAMES[:-1]:
        assert param(n, "size") == int(n.split("_")[0]), n
        assert param(n, "dtype") == ("float32" if "_fp32" in n else "bfloat16"), n
    env = REC["64_bf16"].env
    for r in (rep for n in NAMES for rep in recs(n)):  # one machine and software stack
        assert all(r.env.get(k) == env.get(k) for k in ("gpu", "driver", "torch", "cuda")), (
            r.variant
        )
    for key in ("gpu", "torch", "cuda", "driver"):
        put(key, env[key])
    put("n_recordings", len(NAMES))
    put("n_repeats", len(recs("64_bf16")))
    for k, v in HF.items():
        if k not in ("cpu_64_us", "cuda_64_us"):  # the page quotes only their ratio
            put("hf_" + k, their(v) if k.endswith("_us") else code(v) if isinstance(v, str) else v)


def facts(f: Facts) -> None:
    common.bind(f)  # the entries read f's current repeat and put into f
    try:
        intro()
        for entry in ENTRIES:
            f.repeats(entry)
        if f.gpu == "h200":  # 05_llm_decode and 06_train_step: recorded on the H200 only
            for entry in ENTRIES_H200:
                f.repeats(entry)
            p.llm_tuning()  # across the repeats itself (one process each): read once
            for entry in ENTRIES_AFTER:
                f.repeats(entry)
    finally:
        common.bind(None)
