"""tracereader: read torch.profiler traces.

The pipeline runs one way: :func:`load` (bytes -> columns) -> events
(:class:`Trace`, lanes, steps, regions) -> link -> measure -> tables -> draw
-> cli. Importing this package never imports torch; only
:mod:`tracereader.record` touches torch, and only when it runs a workload.
"""

from ._events import Kind, Lane, Region, Trace
from ._load import TraceError, load

__all__ = ["Kind", "Lane", "Region", "Trace", "TraceError", "load"]
__version__ = "0.1.0"
