"""Build hooks: recording checks, trace downloads, and a clean state per example."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

from tracereader import record

logger = logging.getLogger(__name__)
DOCS = Path(__file__).resolve().parent.parent
EXTRA = DOCS / "_generated" / "extra"


def reset_example(gallery_conf, fname):
    """Before each example: fixed seeds, one CPU thread, no stale warnings filters."""
    warnings.resetwarnings()
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(0)
    torch.set_num_threads(1)


def check_recordings(app):
    """Fail a strict build (TRACEREADER_STRICT=1) on any stale recording."""
    problems = record.check_examples(DOCS.parent / "examples")
    strict = os.environ.get("TRACEREADER_STRICT", "") == "1"
    for line in problems:
        if strict:
            raise ExtensionError(line)
        logger.info("[tracereader] %s", line)


def copy_traces(app):
    """Put every recorded trace where pages link to it: /traces/<example>/<name>.json.gz."""
    target = EXTRA / "traces"
    shutil.rmtree(target, ignore_errors=True)
    for rec in record.iter_recordings():
        dest = target / rec.example / f"{rec.name}.json.gz"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rec.trace_path, dest)


def setup(app):
    EXTRA.mkdir(parents=True, exist_ok=True)
    # Run before sphinx-gallery (priority 500) executes the examples.
    app.connect("builder-inited", check_recordings, priority=100)
    app.connect("builder-inited", copy_traces, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
