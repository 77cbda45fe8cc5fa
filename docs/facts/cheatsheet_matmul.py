"""The matmul details' facts (``cheatsheet-matmul.md``): what each entry sees in a trace of
Part 1's ``torch.add(torch.matmul(x, w), b)``, on our recordings.

Every number the page quotes and every claim it makes about the recordings of
``01_matmul_add``, checked on every repeat of both GPUs: the page's opening here
(:func:`intro`), each entry by its function in :mod:`_cheatsheet_matmul` or
:mod:`_cheatsheet_matmul_code`, run in the page's order. The pictures are drawn on the page, from the drawn repeat, by
``docs/cheatsheet_pictures.py``. The cheatsheet itself (``cheatsheet.md``, facts in
:mod:`cheatsheet`) holds the entries about real models.
"""

from __future__ import annotations

import _cheatsheet_common as common
import _cheatsheet_matmul as m
import _cheatsheet_matmul_code as mc
from _cheatsheet_common import EXAMPLE, HF, NAMES, REC, code, param, put, recs, their
from tracesite.facts import Facts, claim

__all__ = ["EXAMPLE", "GPUS", "facts", "intro"]

#: Every claim is checked on both GPUs' recordings.
GPUS = ("h200", "h100")

#: The entries, in the page's order. Each runs in ``f.repeats``.
ENTRIES = [
    m.overhead, m.compute, m.hotspot, m.selftotal, m.calls, m.gpuannot,  # the profiler table
    m.firststep, m.firstgap, m.silentself, m.occupancy, m.launchapi, m.memset, m.sync64,
    m.syncbig,  # the CPU lane
    m.empty, m.latency, m.kernelgap, m.variance, m.names, m.footprint, m.tf32,
    m.dtod,  # the GPU lane
    mc.chain, mc.batched, mc.addmm,  # the dispatch chain
    mc.dynamo, mc.region, mc.hash, mc.samekernel, mc.tax, mc.graphs,  # torch.compile
    mc.schedule, mc.abr, mc.lazy,  # the profiler's own artifacts
]  # fmt: skip


def intro() -> None:
    """The page's opening: the recordings' names and stamps, and the post's figures."""
    # The text names each recording by its size and dtype: check the names say what was run.
    for n in NAMES[:-1]:
        claim(param(n, "size") == int(n.split("_")[0]), f"{n}: the name gives the recording's size")
        claim(
            param(n, "dtype") == ("float32" if "_fp32" in n else "bfloat16"),
            f"{n}: the name gives the recording's dtype",
        )
    env = REC["64_bf16"].env
    for r in (rep for n in NAMES for rep in recs(n)):  # one machine and software stack
        claim(
            all(r.env.get(k) == env.get(k) for k in ("gpu", "driver", "torch", "cuda")),
            f"{r.variant}: one GPU, driver, torch and CUDA for every recording",
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
    finally:
        common.bind(None)
