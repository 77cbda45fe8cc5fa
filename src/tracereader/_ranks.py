"""Several ranks of one distributed job, side by side.

:func:`load_ranks` reads a directory (or a list) of traces, one per rank, with
the existing :func:`~tracereader.load`, one after the other; each trace's rank
comes from its ``distributedInfo.rank``, else from its file name
(``rank-3.json.gz``, ``trace_rank_3...``), else from the order given.

:func:`rank_summary` measures each rank with :mod:`tracereader._comm`
(communication, computation, their overlap, idle time per stream), names the
slowest rank of every profiler step, and adds a GPU-time breakdown per
``record_function`` annotation. Ranks run on separate clocks, so nothing here
compares timestamps across ranks: only durations.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._columns import TraceError
from ._comm import COMP, comm_times, op_classes, stream_idle
from ._events import Kind, Trace
from ._intervals import launched_in, union
from ._link import link
from ._load import load
from ._tables import Table, op_table

__all__ = ["RankSummary", "load_ranks", "rank_summary", "ranks_of"]

_Source = str | os.PathLike[str]
_RANK_IN_NAME = re.compile(r"rank[-_.]?(\d+)", re.IGNORECASE)
_TRACE_SUFFIXES = (".json", ".json.gz")
#: Ranks up to this many get a column each in the per-step view.
WIDE_RANKS = 8
#: Annotations per rank shown as text and Markdown (JSON has them all).
TOP_ANNOTATIONS = 10
#: Per-rank columns left to JSON (text and Markdown list the files below the tables).
_JSON_ONLY = ("source", "rank_from", "gpu_ops", "exposed_comm_us")


def _natural(p: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)]


def _expand(sources: _Source | Sequence[_Source]) -> list[Path]:
    items = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    paths: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            found = [p for p in item.iterdir() if p.is_file() and p.name.endswith(_TRACE_SUFFIXES)]
            if not found:
                raise TraceError(f"{item}: no .json or .json.gz files in this directory")
            paths += sorted(found, key=_natural)
        else:
            paths.append(item)
    if not paths:
        raise TraceError("no trace files given")
    return paths


def _rank_of(trace: Trace, path: Path) -> tuple[int | None, str]:
    info = trace.meta.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
        return rank, "distributedInfo"
    m = _RANK_IN_NAME.search(path.name)
    return (int(m.group(1)), "file name") if m else (None, "order")


def load_ranks(sources: _Source | Sequence[_Source]) -> dict[int, Trace]:
    """Load one trace per rank, keyed by rank, in rank order.

    Parameters
    ----------
    sources
        A directory (every ``.json`` and ``.json.gz`` file in it, not its
        subdirectories), a file, or a list of either.

    Returns
    -------
    dict
        ``{rank: Trace}``. The rank is the trace's ``distributedInfo.rank``,
        else the number after ``rank`` in its file name, else its position in
        the list. ``trace.meta["rank_from"]`` says which.

    Raises
    ------
    TraceError
        A file is not a trace, a directory holds no trace files, or two traces
        claim the same rank.
    """
    return ranks_of([(path, load(path)) for path in _expand(sources)])


def ranks_of(loaded: Sequence[tuple[Path, Trace]]) -> dict[int, Trace]:
    """:func:`load_ranks` of traces already loaded: ``(path, trace)`` pairs, in order."""
    out: dict[int, Trace] = {}
    where: dict[int, Path] = {}
    for i, (path, trace) in enumerate(loaded):
        rank, how = _rank_of(trace, path)
        rank = i if rank is None else rank
        if rank in out:
            raise TraceError(f"{where[rank]} and {path} are both rank {rank} (from {how})")
        trace.meta["rank_from"] = how
        out[rank], where[rank] = trace, path
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- measures
def _rows(trace: Trace, drop_last_step: bool) -> tuple[Any, tuple[int, int] | None]:
    rows = link(trace).gpu_ops
    if not drop_last_step or not trace.steps:
        return rows, None
    window = (trace.t0_ns, trace.steps[-1].start_ns)
    return rows[launched_in(trace, rows, window)], window


def _per_step(trace: Trace, n_steps: int) -> dict[str, tuple[float, float]]:
    """Step name -> (CPU span, computation GPU time launched in it), µs."""
    ln = link(trace)
    ops = ln.gpu_ops
    comp = ops[op_classes(trace, ops) == COMP]
    out = {}
    for k, st in enumerate(trace.steps[:n_steps]):
        mine = comp[ln.step[comp] == k]
        a, b = union(trace.ts_ns[mine], trace.end_ns[mine])
        out[st.name] = (st.dur_us, float((b - a).sum()) / 1e3)
    return out


def _annotations(trace: Trace, rank: int, window: tuple[int, int] | None) -> list[list[Any]]:
    """Per ``record_function`` name (not ProfilerStep#): calls, GPU time launched, GPU span."""
    marks = {trace.names[i] for i in np.unique(trace.name_id[trace.kind == Kind.USER_ANNOTATION])}
    marks = {n for n in marks if not n.startswith("ProfilerStep#")}
    gpu = trace.where(kind=Kind.GPU_ANNOTATION, within=window)
    spans: dict[str, float] = {}
    for i in gpu:
        spans[trace.name(i)] = spans.get(trace.name(i), 0.0) + float(trace.dur_ns[i]) / 1e3
    if not marks and not spans:
        return []
    ops = op_table(trace, window).to_records()
    rows = [[rank, r["name"], r["calls"], r["total_gpu_us"], spans.pop(r["name"], None)]
            for r in ops if r["name"] in marks]  # fmt: skip
    rows += [[rank, name, None, None, span] for name, span in spans.items()]
    rows.sort(key=lambda r: (-(r[3] or 0.0), -(r[4] or 0.0), r[1]))
    return rows


@dataclass
class RankSummary:
    """Several ranks side by side: one row per rank, per step and per stream.

    Attributes
    ----------
    ranks : Table
        One row per rank: ``rank``, ``source`` (file name), ``rank_from``,
        ``steps``, ``gpu_ops``, ``comm_kernels``, ``span_us``, ``busy_us``,
        ``idle_us``, ``comp_us``, ``comm_us``, ``overlap_us``, ``overlap_pct``,
        ``exposed_comm_us`` and ``step_us_median`` (each defined in
        :func:`rank_summary`).
    steps : Table
        One row per profiler step found on any rank: the fastest and slowest
        rank by the step's CPU span, ``behind_us`` (slowest minus fastest) and
        ``behind_pct`` (of the fastest), and the rank whose step launched the
        most computation (GPU time, µs), which the others wait for at the next
        collective.
    by_rank : Table
        The compare-style view: per step, each rank's step time (µs); only
        when there are at most ``WIDE_RANKS`` ranks (else empty).
    streams : Table
        Per rank and GPU stream: GPU ops, busy, span and idle time (µs).
    annotations : Table
        Per rank and ``record_function`` name: calls, ``gpu_us`` (GPU ops
        launched inside it, summed as in :func:`~tracereader.op_table`'s
        ``total_gpu_us``) and ``gpu_span_us`` (its ``gpu_user_annotation``
        spans, where the trace has them).
    notes : list of str
        What to know when reading the tables (ranks missing from the job,
        the last step dropped).
    """

    ranks: Table
    steps: Table
    by_rank: Table
    streams: Table
    annotations: Table
    notes: list[str] = field(default_factory=list)

    def _tables(self) -> list[Table]:
        """What text and Markdown show: the per-rank table without its file columns."""
        keep = [c for c in self.ranks.columns if c not in _JSON_ONLY]
        at = [self.ranks.columns.index(c) for c in keep]
        ranks = dataclasses.replace(self.ranks, columns=keep,
                                    rows=[[r[k] for k in at] for r in self.ranks.rows])  # fmt: skip
        return [t for t in (ranks, self.steps, self.by_rank, self.streams) if len(t)]

    def _sources(self) -> list[str]:
        return [f"rank {r[0]}: {r[1]} (rank from {r[2]})" for r in self.ranks.rows]

    def _top_annotations(self, n: int = TOP_ANNOTATIONS) -> Table:
        seen: dict[int, int] = {}
        rows = []
        for r in self.annotations.rows:  # sorted within each rank, largest first
            seen[r[0]] = seen.get(r[0], 0) + 1
            if seen[r[0]] <= n:
                rows.append(r)
        more = len(self.annotations) - len(rows)
        title = self.annotations.title + (
            f" (top {n} per rank; {more} more in JSON)" if more else ""
        )
        return dataclasses.replace(self.annotations, rows=rows, title=title)

    def to_text(self) -> str:
        """The tables as aligned plain text (annotations: the top ones per rank)."""
        parts = [t.to_text() for t in self._tables()]
        if len(self.annotations):
            parts.append(self._top_annotations().to_text())
        return "\n\n".join([*parts, "\n".join(self._sources() + self.notes)])

    def to_markdown(self) -> str:
        """The tables as Markdown pipe tables."""
        parts = [t.to_markdown() for t in self._tables()]
        if len(self.annotations):
            parts.append(self._top_annotations().to_markdown())
        return "\n\n".join([*parts, "\n".join(f"- {n}" for n in self._sources() + self.notes)])

    def to_dict(self) -> dict[str, Any]:
        """Every table as a list of records (all annotations), and the notes."""
        return {"ranks": self.ranks.to_records(), "steps": self.steps.to_records(),
                "by_rank": self.by_rank.to_records(), "streams": self.streams.to_records(),
                "annotations": self.annotations.to_records(), "notes": self.notes}  # fmt: skip

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as JSON."""
        return json.dumps(self.to_dict(), indent=indent)

    def __repr__(self) -> str:
        return self.to_text()


def rank_summary(
    traces: Mapping[int, Trace] | Sequence[Trace], *, drop_last_step: bool = False
) -> RankSummary:
    """Per rank: steps, GPU busy and idle, communication, computation, their overlap.

    Each GPU op is *communication* (a kernel whose name contains ``nccl`` or
    ``rccl``, any case), *memory* (a memcpy or memset) or *computation* (any
    other kernel). Times are lengths of unions of intervals per device (two
    kernels at once on two streams count once), summed over the rank's devices:

    * ``span_us``: first GPU op's start to the last one's end;
    * ``busy_us``: all GPU ops; ``idle_us = span_us - busy_us``;
    * ``comp_us``, ``comm_us``: computation and communication kernels;
    * ``overlap_us``: when a communication kernel runs while a computation
      kernel runs, on any stream; ``overlap_pct`` is its share of ``comm_us``
      and ``exposed_comm_us = comm_us - overlap_us``;
    * per stream, ``idle_us`` is the stream's span minus its busy time (the
      gaps between its GPU ops).

    Parameters
    ----------
    traces
        ``{rank: Trace}`` (as :func:`load_ranks` returns) or a list, whose
        positions are the ranks.
    drop_last_step
        Count only the GPU ops launched before the last ``ProfilerStep``
        begins, and leave that step out, as Holistic Trace Analysis does by
        default (the profiler often stops inside the last step).

    Returns
    -------
    RankSummary
        Tables per rank, per step (with its slowest rank), per stream and per
        annotation.
    """
    items = sorted(traces.items()) if isinstance(traces, Mapping) else list(enumerate(traces))
    rank_rows, stream_rows, worlds, marks = [], [], [], []
    steps: dict[str, dict[int, tuple[float, float]]] = {}
    for rank, trace in items:
        rows, window = _rows(trace, drop_last_step)
        n_steps = len(trace.steps) - (1 if window else 0)
        ct = comm_times(trace, rows)
        for name, vals in _per_step(trace, n_steps).items():
            steps.setdefault(name, {})[rank] = vals
        spans = [st.dur_us for st in trace.steps[:n_steps]]
        rank_rows.append([rank, Path(trace.source).name, trace.meta.get("rank_from", "order"),
                          n_steps, ct.gpu_ops, ct.comm_kernels, ct.span_us, ct.busy_us, ct.idle_us,
                          ct.comp_us, ct.comm_us, ct.overlap_us, ct.overlap_pct,
                          ct.exposed_comm_us, statistics.median(spans) if spans else None])  # fmt: skip
        stream_rows += [[rank, *r.values()] for r in stream_idle(trace, rows)]
        marks += _annotations(trace, rank, window)
        info = trace.meta.get("distributedInfo")
        if isinstance(info, dict) and isinstance(info.get("world_size"), int):
            worlds.append(int(info["world_size"]))
    rcols = ["rank", "source", "rank_from", "steps", "gpu_ops", "comm_kernels", "span_us",
             "busy_us", "idle_us", "comp_us", "comm_us", "overlap_us", "overlap_pct",
             "exposed_comm_us", "step_us_median"]  # fmt: skip
    notes = []
    if worlds and max(worlds) > len(items):
        notes.append(f"{len(items)} of {max(worlds)} ranks (distributedInfo.world_size)")
    if drop_last_step:
        notes.append("last profiler step dropped, and the GPU ops launched in it")
    step_names = sorted(steps, key=lambda s: int(s.rsplit("#", 1)[1]))
    srows, wide = [], []
    for name in step_names:
        per = steps[name]
        fast = min(per, key=lambda r: (per[r][0], r))
        slow = max(per, key=lambda r: (per[r][0], -r))
        busy = max(per, key=lambda r: (per[r][1], -r))
        behind = per[slow][0] - per[fast][0]
        srows.append([name, len(per), fast, per[fast][0], slow, per[slow][0], behind,
                      100 * behind / per[fast][0] if per[fast][0] else None, busy, per[busy][1]])  # fmt: skip
        wide.append([name, *(per[r][0] if r in per else None for r, _ in items)])
    scols = ["step", "ranks", "fastest_rank", "fastest_us", "slowest_rank", "slowest_us",
             "behind_us", "behind_pct", "most_compute_rank", "compute_us"]  # fmt: skip
    wcols = ["step", *(f"rank{r}_us" for r, _ in items)]
    scol_stream = ["rank", "device", "stream", "gpu_ops", "comm_kernels", "busy_us", "span_us",
                   "idle_us", "idle_pct"]  # fmt: skip
    return RankSummary(
        ranks=Table(
            rcols,
            rank_rows,
            "Per rank (GPU time in us; overlap: communication while computation runs)",
            name_columns=(),
        ),  # fmt: skip
        steps=Table(scols, srows, "Per step: slowest rank by the step's CPU span", ()),
        by_rank=Table(
            wcols, wide if len(items) <= WIDE_RANKS else [], "Step time per rank (us)", ()
        ),  # fmt: skip
        streams=Table(scol_stream, stream_rows, "Idle time per GPU stream", ()),
        annotations=Table(
            ["rank", "annotation", "calls", "gpu_us", "gpu_span_us"],
            marks,
            "GPU time per record_function annotation",
            (),
            text_width=50,
        ),  # fmt: skip
        notes=notes,
    )
