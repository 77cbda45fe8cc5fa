"""tracereader: read torch.profiler traces.

The pipeline runs one way: :func:`load` (bytes -> columns) -> events
(:class:`Trace`, lanes, steps, regions) -> link -> measure -> tables -> draw
-> cli. Importing this package never imports torch; only
:mod:`tracereader.record` touches torch, and only when it runs a workload.
"""

from ._draw import Callout, alt_text, compare_timelines, timeline
from ._events import Kind, Lane, Region, Trace
from ._gaps import Gap, gaps
from ._link import Links, link
from ._load import TraceError, load
from ._measure import LaunchTable, StepTime, gpu_busy_us, launches, step_times, summary
from ._names import shorten_kernel_name
from ._tables import Comparison, Table, compare, kernel_table, op_table

__all__ = [
    "Kind",
    "Lane",
    "Region",
    "Trace",
    "TraceError",
    "load",
    # link -> measure -> tables
    "Links",
    "link",
    "Gap",
    "LaunchTable",
    "StepTime",
    "gaps",
    "gpu_busy_us",
    "launches",
    "step_times",
    "summary",
    "Comparison",
    "Table",
    "compare",
    "kernel_table",
    "op_table",
    "shorten_kernel_name",
    # draw (matplotlib is imported only when a figure is made)
    "Callout",
    "alt_text",
    "compare_timelines",
    "timeline",
]
__version__ = "0.1.0"
