"""The cheatsheet's facts (``cheatsheet.md``): what each entry about a real model sees in a
trace, on our recordings.

Every number the page quotes and every claim it makes about the recordings of Parts 2 to 5
(``02_linear``, ``03_mlp``, ``04_attention``, ``05_llm_decode``, ``06_train_step``),
checked on every repeat: each entry by its function in :mod:`_cheatsheet_parts`, run in the
page's order. The pictures are drawn on the page, from the drawn repeat, by
``docs/cheatsheet_parts_pictures.py``. Part 1's matmul entries are on their own page,
``cheatsheet-matmul.md`` (facts in :mod:`cheatsheet_matmul`).
"""

from __future__ import annotations

import _cheatsheet_common as common
import _cheatsheet_parts as p
from _cheatsheet_common import EXAMPLE
from tracesite.facts import Facts

__all__ = ["EXAMPLE", "GPUS", "facts"]

#: Parts 2-5 (02_linear, 03_mlp, 04_attention, 05_llm_decode, 06_train_step) are recorded
#: on both GPUs, and their claims are checked on both; of 05_llm_decode the H100 has the
#: lesson's variants only, so the kernel-tuning entry runs on the H200 only. ``EXAMPLE`` (Part 1's) sets how
#: many repeats ``f.repeats`` reads, as it did when Part 1's entries shared this page.
GPUS = ("h200", "h100")

ENTRIES_DECODE = [p.llm_eager, p.llm_graph]  # Part 4, then p.llm_tuning across the repeats
ENTRIES_TRAIN = [p.train_backward_thread, p.train_data_gap, p.train_optimizer]  # Part 5
ENTRIES = [
    p.bias, p.views, p.fused, p.graph,  # Part 2
    p.att_copy, p.att_cudnn, p.att_occupancy, p.att_cudnn_self,  # Part 3
]  # fmt: skip


def facts(f: Facts) -> None:
    common.bind(f)  # the entries read f's current repeat and put into f
    try:
        for entry in ENTRIES_DECODE:  # Part 4's lesson variants, recorded on both GPUs
            f.repeats(entry)
        if f.gpu == "h200":  # the lab notes' kernel sweeps: recorded on the H200 only
            p.llm_tuning()  # across the repeats itself (one process each): read once
        for entry in ENTRIES_TRAIN:
            f.repeats(entry)
        for entry in ENTRIES:
            f.repeats(entry)
    finally:
        common.bind(None)
