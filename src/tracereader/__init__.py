"""tracereader: read torch.profiler traces.

The pipeline runs one way: :func:`load` (bytes -> columns) -> events
(:class:`Trace`, lanes, steps, regions) -> link -> measure -> tables -> draw
-> cli. Importing this package never imports torch, and matplotlib only when
a figure is drawn.
"""

from ._datasheet import DATASHEETS, Datasheet, datasheet
from ._draw import alt_text, compare_timelines, timeline
from ._draw_layout import Callout
from ._events import Kind, Lane, Region, Trace
from ._gaps import CAUSES, Gap, gaps
from ._link import Links, link
from ._load import TraceError, load
from ._measure import LaunchTable, StepTime, gpu_busy_us, launches, step_times, summary
from ._names import shorten_kernel_name
from ._ranks import RankSummary, load_ranks, rank_summary
from ._regions import RegionTime, region_table, region_times
from ._tables import Comparison, Table, compare, kernel_table, op_table
from ._validate import Finding, validate

__all__ = [
    "CAUSES",
    "Callout",
    "Comparison",
    "DATASHEETS",
    "Datasheet",
    "Finding",
    "Gap",
    "Kind",
    "Lane",
    "LaunchTable",
    "Links",
    "RankSummary",
    "Region",
    "RegionTime",
    "StepTime",
    "Table",
    "Trace",
    "TraceError",
    "alt_text",
    "compare",
    "compare_timelines",
    "datasheet",
    "gaps",
    "gpu_busy_us",
    "kernel_table",
    "launches",
    "link",
    "load",
    "load_ranks",
    "op_table",
    "rank_summary",
    "region_table",
    "region_times",
    "shorten_kernel_name",
    "step_times",
    "summary",
    "timeline",
    "validate",
]
__version__ = "0.1.0"
