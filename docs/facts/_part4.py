"""What Part 4's three pages' facts modules (``part4``, ``part4_notes``, ``part4_kernels``)
share of the site: the example they read (:data:`EXAMPLE`, which the facts runner takes
from each) and the model shapes and prompt length its stories define in their shared
module, ``_05_common.py`` (:func:`shapes`, :func:`prompt_tokens`).

Those modules draw nothing: their pages draw the pictures, from the windows and events the
modules choose. They read the recordings through :mod:`tracereader`, numpy and the standard
library, and of the site only the facts runner (:mod:`tracesite.facts`, with its worded
claims, :mod:`tracesite.words`), :mod:`_paste` and this module; ``part4_notes`` also runs
the command line as its page shows it (:func:`tracesite.notebook.tracereader_cli`). The
analysis they share (:mod:`_decode`, :mod:`_chapter`, :mod:`_sessions`,
:mod:`_attention_kernels`) reads no site glue at all.
"""

from __future__ import annotations

from _decode import COMMON, EXAMPLE
from tracesite import load_definitions

__all__ = ["EXAMPLE", "prompt_tokens", "shapes"]


def shapes() -> dict[str, dict[str, int]]:
    """The model shapes the stories run, by name (``1b``, ``8b``): ``_05_common.SHAPES``."""
    found: dict[str, dict[str, int]] = load_definitions(COMMON)["SHAPES"]
    return found


def prompt_tokens() -> int:
    """The prompt's length, tokens: ``_05_common.PROMPT``."""
    return int(load_definitions(COMMON)["PROMPT"])
