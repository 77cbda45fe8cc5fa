"""tracesite: the site's own glue between the GPU recordings and the pages.

It is not part of :mod:`tracereader` (the trace library readers install) and is
never shipped to readers. It holds:

* :mod:`.recordings`: the recorded repeats of every example variant on each GPU, and the
  earlier recording sessions the plan keeps, read back; staleness checks against the
  example's current code;
* :mod:`.recorder`: recording an example on a GPU (``scripts/record.py``);
* :mod:`.trim` and :mod:`.retrim`: what of a trace the plan keeps, and applying it to files;
* :mod:`.gallery`: what an example page shows when the site is built;
* :mod:`.notebook`: the pages' helpers for the drawn repeat, pictures and links;
* :mod:`.facts` and :mod:`.words`: each page's facts, its claims and the words they use;
* :mod:`.html` and :mod:`.profiler_table`: trace links, figures, the profiler's table.

Examples look for this package in ``sys.modules`` and never import it, so a
downloaded example runs with torch alone.
"""

from ._source import RecordingError, StaleRecordingError, code_hash, load_definitions
from .gallery import Replayed, all_recordings_html, replayer
from .html import FigureHTML, Snippet, format_size, trace_links_html
from .recordings import (
    PRIMARY_GPU,
    RECORD_COMMAND,
    Recording,
    Session,
    Variant,
    check_examples,
    gpu_slug,
    gpus,
    iter_recordings,
    iter_variants,
    load,
    load_sessions,
    plan_settings,
    recordings_root,
)

__all__ = [
    "PRIMARY_GPU",
    "RECORD_COMMAND",
    "FigureHTML",
    "Recording",
    "RecordingError",
    "Replayed",
    "Session",
    "Snippet",
    "StaleRecordingError",
    "Variant",
    "all_recordings_html",
    "check_examples",
    "code_hash",
    "format_size",
    "gpu_slug",
    "gpus",
    "iter_recordings",
    "iter_variants",
    "load",
    "load_definitions",
    "load_sessions",
    "plan_settings",
    "recordings_root",
    "replayer",
    "trace_links_html",
]
