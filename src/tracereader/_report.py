"""``tracereader report``: one self-contained HTML file from a trace or a folder of traces.

This module only formats: the numbers come from :mod:`tracereader._overview`,
:mod:`tracereader._classify`, :mod:`tracereader._symptoms`, the tables, gaps
and ranks modules, and the picture from :func:`tracereader.timeline`.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ._classify import class_table
from ._datasheet import trace_datasheet
from ._events import Trace, arg_column
from ._fork import side_by_side
from ._gaps import CAUSES_HELP, gaps, prepare_causes
from ._headline import cpu_headline, headline
from ._kernel_view import OCCUPANCY_NOTE, launch_table, weighted_occupancy_pct
from ._link import link
from ._load import load
from ._measure import NO_GPU_ACTIVITY, StepTime, step_times
from ._memory import keep_memory_view, memory_view
from ._overview import SPLIT_KINDS, GpuSplit, gpu_split, kernel_detail, ranks_or_repeats
from ._ranks import _expand, _rank_of, rank_summary
from ._regions import region_table
from ._report_html import bar, esc, ms_columns, page, picture, table, unit
from ._report_views import comm_section, memory_charts, memory_section
from ._symptoms import Symptom, symptoms
from ._tables import Table, op_table
from ._trimmed import trimmed_note
from ._waits import WAITING, is_wait, waits

__all__ = ["Peaks", "report"]

TOP = 20
#: The ``Trace.extra`` columns the report reads: its traces are loaded with these
#: alone (``load(..., extra_args=REPORT_ARGS)``), every other arg skipped unread.
REPORT_ARGS = ("registers", "shared_mem", "occupancy_pct", "grid", "block", "input_dims")
#: Most rows of a folded full table.
FOLDED = 100


@dataclass(frozen=True)
class Peaks:
    """The GPU's peaks the user gave, and the bytes each step must read (or ``None``)."""

    tflops: float | None = None
    tbs: float | None = None
    bytes_per_step: float | None = None


def _peaks_of(trace: Trace, peaks: Peaks) -> tuple[Peaks, str]:
    """The peaks to judge against, and a sentence saying where they came from.

    Each peak the user gave, else the datasheet row of the trace's GPU.
    """
    name, row = trace_datasheet(trace.device_properties)
    if peaks.tflops and peaks.tbs:
        return peaks, "Peaks given on the command line."
    if row is None:
        gpu = f"This trace's GPU ({name})" if name else "This trace names no GPU; it"
        return peaks, (f"{gpu} is not in tracereader's datasheet table: give "
                       "--peak-tflops and --peak-tbs to judge rates against its peaks.")  # fmt: skip
    filled = replace(peaks, tflops=peaks.tflops or row.bf16_tflops, tbs=peaks.tbs or row.hbm_tbs)
    return filled, (f"Peaks not given are the datasheet's for {name} (the {row.gpu} row: "
                    f"{row.bf16_tflops:g} TFLOP/s dense bf16, {row.hbm_tbs:g} TB/s); a "
                    "clock or power limit below the datasheet's lowers what the GPU can reach.")  # fmt: skip


def _overview(trace: Trace, split: list[GpuSplit], peaks: Peaks) -> str:
    peaks, source = _peaks_of(trace, peaks)
    u, div = unit([s.span_us for s in split[:-1]] or [split[-1].span_us])
    cols = ["step", f"cpu_{u}", f"span_{u}", *(f"{k}_{u}" for k in SPLIT_KINDS), f"idle_{u}",
            "busy_pct", "verdict"]  # fmt: skip
    rows: list[list[Any]] = [[s.name, s.cpu_us / div, s.span_us / div,
                              *(s.by_kind[k] / div for k in SPLIT_KINDS), s.idle_us / div,
                              100 * s.busy_share, s.step.verdict if s.step else ""]
                             for s in split]  # fmt: skip
    extra = ""
    if peaks.bytes_per_step and split and split[0].step is not None:
        cols.append("busy_tb_per_s")
        for r, s in zip(rows, split, strict=True):
            busy = s.step.gpu_busy_us if s.step else 0.0
            r.append(peaks.bytes_per_step / busy / 1e6 if busy and s.step else None)
        if peaks.tbs:
            cols.append("pct_of_peak_tbs")
            for r in rows:
                tb = r[-1]
                r.append(100 * tb / peaks.tbs if tb else None)
    given = [f"{peaks.tflops:g} TFLOP/s" if peaks.tflops else "",
             f"{peaks.tbs:g} TB/s" if peaks.tbs else ""]  # fmt: skip
    given = [g for g in given if g]
    if given:
        can = " (TB/s from --bytes-per-step: see the table)" if peaks.bytes_per_step else ""
        extra = (f"<p>Peaks: {esc(', '.join(given))}{esc(can)}. {esc(source)} The trace "
                 "records no FLOP count, so achieved TFLOP/s cannot be computed from it, and "
                 "the trace cannot tell whether arithmetic or memory limits a GPU-bound "
                 "step.</p>")  # fmt: skip
    else:
        extra = f"<p>{esc(source)}</p>"
    t = Table(cols, rows, f"GPU time per step by kind of work ({u.replace('us', 'µs')}; the "
              f"verdict reads idle_{u})", ())  # fmt: skip
    if len(split) > 2:  # two steps or more, and the total
        extra += ('<p class="note">The total includes the first step, which a cold start '
                  "(allocations, autotuning, compilation) can make slower than the rest; "
                  "<code>report A --against B</code> leaves it out.</p>")  # fmt: skip
    total = split[-1]
    parts = {**total.by_kind, "idle": total.idle_us}
    legend = ", ".join(f"{k} {v / div:,.{2 if div > 1 else 0}f} {u.replace('us', 'µs')}"
                       for k, v in parts.items())  # fmt: skip
    foot = 1 if split[-1].step is None and len(split) > 1 else 0
    return (f"<h2 id=\"overview\">Overview</h2>{table(t, footer_rows=foot)}<p>Total: "
            f"{bar(parts)}{esc(legend)}"
            "</p><p class=\"note\">Kinds are unions of GPU intervals; two kinds at once both "
            "count. GPU-bound: busy ≥ 95 % of the step's span; CPU-bound: under 50 %; "
            f"balanced in between.</p>{extra}")  # fmt: skip


def _folded(t: Table, what: str) -> str:
    """``t``'s first :data:`TOP` rows, then every row folded under a summary line."""
    top = t.head(TOP)
    shown = table(ms_columns(top))
    if len(t) <= TOP:
        return shown
    some = f"The first {FOLDED:,} of {len(t):,}" if len(t) > FOLDED else f"All {len(t):,}"
    rows = replace(t, title=f"{t.title} ({some.lower()} rows)").head(FOLDED)
    return (shown + f"<details><summary>{some} {esc(what)}</summary>"
            f"{table(ms_columns(rows, decide_on=top))}</details>")  # fmt: skip


def _waiting(trace: Trace) -> tuple[Table, str]:
    """The ops by CPU time, host syncs labelled, and a line on the GPU meanwhile (B-R3)."""
    ops = op_table(trace, sort="total_cpu_us", per_call=True, waits=True)
    keep = [k for k, c in enumerate(ops.columns) if "gpu" not in c]  # in the GPU table
    k = ops.columns.index("cpu_waiting_us")
    rows = [[r[0], WAITING if is_wait(r[0]) else "partly waiting" if r[k] > 0 else "",
             *(r[j] for j in keep[1:])] for r in ops.rows]  # fmt: skip
    cols = [ops.columns[0], "what", *(ops.columns[j] for j in keep[1:])]
    ops = replace(ops, columns=cols, rows=rows, title="Top ops by CPU time")
    w = waits(trace)
    if not w.calls:
        return ops, "No host sync: the CPU never waited for the GPU."
    busy = w.gpu_busy_pct
    if busy >= 50:
        meaning = ("it ran work the CPU had queued, so the wait cost the GPU nothing then; "
                   "the GPU idles after it, while the CPU launches again (the gap table's "
                   "sync cause)")  # fmt: skip
    else:
        meaning = "the GPU had little queued: both sides waited"
    line = (f"{WAITING}: {w.wait_us / 1e3:,.1f} ms in {w.calls} synchronize call(s) "
            "(cudaStreamSynchronize under aten::item and .cpu() copies, "
            "cudaDeviceSynchronize...); cpu_waiting_us is that time inside each op. The GPU "
            f"was busy {busy:.1f} % of the wait: {meaning}.")  # fmt: skip
    return ops, line


def _kernels(trace: Trace) -> str:
    ops_cpu, waited = _waiting(trace)
    ops_gpu = op_table(trace, sort="total_gpu_us")
    shapes = ""
    if (arg_column(trace, "input_dims") >= 0).any():
        by_shape = op_table(trace, sort="total_gpu_us", by_shape=True, per_call=True)
        shapes = _folded(replace(by_shape, title="Top ops by GPU time, grouped by name and "
                                 "input shapes (record_shapes)"), "ops and shapes")  # fmt: skip
    occ = weighted_occupancy_pct(trace)
    mean_occ = (f" Estimated occupancy weighted by kernel time: {occ[0]:.1f} % over all "
                f"kernels, {occ[1]:.1f} % over those above 0 % ({occ[2]:.1f} % of kernel "
                "time is at 0 %)." if occ is not None else "")  # fmt: skip
    return ("<h2 id=\"kernels\">Kernels and operators</h2>"
            + table(ms_columns(class_table(trace)))
            + _folded(kernel_detail(trace, top=None), "GPU ops")
            + table(ms_columns(launch_table(trace, top=TOP)))
            + f'<p class="note">{esc(OCCUPANCY_NOTE + mean_occ)}</p>'
            + table(ms_columns(ops_cpu.head(TOP))) + f'<p class="note">{esc(waited)}</p>'
            + _folded(replace(ops_gpu, title="Top ops by GPU time"), "ops (click a header to "
                      "sort by it)")
            + shapes
            + '<p class="note">Columns of long times are in ms (<code>_ms</code>), short '
            "ones in µs (<code>_us</code>); min and max: the shortest and longest call.</p>")  # fmt: skip


def _worst(trace: Trace) -> tuple[list[StepTime], StepTime | None]:
    """The steps, and the slowest one after the first (a cold first step is rarely the one)."""
    steps = step_times(trace)
    later = steps[1:] or steps
    return steps, max(later, key=lambda s: s.span_us) if steps else None


def _slowest_picture(trace: Trace, draw: bool) -> str:
    """The slowest step's timeline picture (``""`` without ``draw``), as an ``<img>``."""
    if not draw:
        return ""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return '<p class="note">(Install matplotlib for a timeline picture.)</p>'
    _, worst = _worst(trace)
    return _picture(trace, worst.name if worst else None)


def _slowest(trace: Trace) -> tuple[str, str]:
    """The "slowest step" section, before and after its picture (:func:`_slowest_picture`)."""
    steps, worst = _worst(trace)
    window: tuple[int, int] | None = None
    head = '<h2 id="slowest">The slowest step</h2><p>No ProfilerStep#N: the whole trace.</p>'
    if worst is not None:
        window = worst.window
        after = " after the first" if len(steps) > 1 else ""
        head = (f'<h2 id="slowest">The slowest step{after}: {esc(worst.name)} '
                f"({worst.span_us:,.0f} µs)</h2>")  # fmt: skip
        if len(steps) > 1:
            head += (f'<p class="note">The first step, {esc(steps[0].name)} '
                     f"({steps[0].span_us:,.0f} µs), is left out: it pays one-time costs.</p>")  # fmt: skip
    found = sorted(gaps(trace, window, edges=True), key=lambda g: -g.gap_us)[:10]
    where = {"start": "step start", "end": "step end", "": "between ops"}
    rows = [[round(float(trace.rel_us(g.start_ns)), 3), g.gap_us, where[g.edge], g.device,
             g.cause, trace.name(g.cause_event) if g.cause_event >= 0 else "",
             trace.name(g.next_op) if g.next_op >= 0 else ""]
            for g in found]  # fmt: skip
    t = Table(["start_us", "gap_us", "where", "device", "cause", "cpu_was_in", "next_gpu_op"],
              rows, "Largest GPU idle gaps in the step (its start and end included) and what "
              "the launching CPU thread was doing", ("next_gpu_op",), 40, 60)  # fmt: skip
    if not rows:
        return head, "<p>No GPU idle gap of 1 µs or more.</p>"
    causes = CAUSES_HELP.split("\n", 1)[1]
    return head, (table(t) + f"<details><summary>What the causes mean</summary><pre>"
                  f"{esc(causes)}</pre></details>")  # fmt: skip


def _picture(trace: Trace, step: str | None) -> str:
    from ._draw import alt_text, timeline

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyphs missing from the font for odd names
        fig = timeline(trace, step=step) if step else timeline(trace)
        fig.savefig(buf, format="png", dpi=80)  # a Figure of its own: nothing to close
    return picture(buf.getvalue(), alt_text(fig))


def _stake(s: Symptom) -> str:
    if s.stake_us is None:
        return ""
    ms = s.stake_us / 1e3
    small = ": small" if s.small else ""
    return f" At stake: {ms:,.1f} ms ({100 * (s.share or 0):.1f} % of the steps' time{small})."


def _next(found: list[Symptom]) -> str:
    if not found:
        return '<h2 id="next">What to look at next</h2><p>No symptom found.</p>'
    items = "".join(f"<li><b>{esc(s.what)}</b>.{esc(_stake(s))} Do: {esc(s.todo)}. "
                    f"Read: {esc(s.page)}.</li>" for s in found)  # fmt: skip
    return (f'<h2 id="next">What to look at next</h2><p class="note">Most time at stake '
            f"first.</p><ul>{items}</ul>")  # fmt: skip


def _cpu_only(trace: Trace) -> str:
    why = NO_GPU_ACTIVITY[0].upper() + NO_GPU_ACTIVITY[1:] + "."
    ops = op_table(trace, top=TOP, sort="total_cpu_us")
    keep = [k for k, c in enumerate(ops.columns) if "gpu" not in c]
    ops = replace(ops, columns=[ops.columns[k] for k in keep], title="Top ops by CPU time",
                  rows=[[r[k] for k in keep] for r in ops.rows])  # fmt: skip
    steps = Table(["step", "cpu_us"], [[s.name, s.dur_us] for s in trace.steps],
                  "CPU time per step", ())  # fmt: skip
    regions = region_table(trace)
    keep = [
        k
        for k, c in enumerate(regions.columns)
        if c in ("step", "region", "thread", "start_us", "cpu_us")
    ]
    regions = replace(regions, columns=[regions.columns[k] for k in keep],
                      rows=[[r[k] for k in keep] for r in regions.rows])  # fmt: skip
    return (f'<h2 id="overview">Overview</h2><p>{esc(why)}</p>'
            + (table(steps) if len(steps) else "")
            + '<h2 id="kernels">Operators</h2>' + table(ops)
            + '<h2 id="regions">CPU time per record_function region</h2>'
            + (table(regions) if len(regions) else "<p>No record_function region.</p>"))  # fmt: skip


def _head(trace: Trace) -> str:
    """The line under the headline: the file, its events and steps, repairs, trimming."""
    trimmed = trimmed_note(trace)
    cut = f' <b class="verdict-CPU-bound">Incomplete: it {esc(trimmed)}.</b>' if trimmed else ""
    return (f"<p>Trace <code>{esc(Path(trace.source).name)}</code>: {len(trace):,} events, "
            f"{len(trace.steps)} step(s), repairs: {esc('; '.join(trace.repairs) or 'none')}."
            f"{cut}</p>")  # fmt: skip


def _one(trace: Trace, peaks: Peaks, draw: bool) -> str:
    if not len(link(trace).gpu_ops):
        mtia = trace.mtia_device_ops
        note = f"<p>{mtia:,} MTIA device ops are not read (MTIA is not supported yet).</p>"
        top = f'<p class="headline"><b>{esc(cpu_headline(trace))}</b></p>'
        return top + _head(trace) + (note if mtia else "") + _cpu_only(trace)
    step_times(trace)  # every section reads the steps: worked out once, kept with the trace
    # Two rounds, each with a forked helper (two cores): first what both sides of the
    # second read (the memory view there; here each event's gap cause), then the
    # pictures (matplotlib) there and the other numbers here.
    (view, head, overview, comm), _ = side_by_side(
        lambda: (memory_view(trace), _head(trace), _overview(trace, gpu_split(trace), peaks),
                 comm_section(trace)),
        lambda: prepare_causes(trace),
    )  # fmt: skip
    keep_memory_view(trace, view)
    (picture, charts), (found, kernels, (before, after)) = side_by_side(
        lambda: (_slowest_picture(trace, draw), memory_charts(trace, draw)),
        lambda: (symptoms(trace), _kernels(trace), _slowest(trace)),
    )
    top = f'<p class="headline"><b>{esc(headline(trace, found))}</b></p>'
    memory = memory_section(trace, draw, charts)
    body = overview + kernels + before + picture + after + comm + memory
    return top + head + body + _next(found)


def _ranks(traces: dict[str, Trace], why: str) -> str:
    by_rank = {}
    for i, (name, t) in enumerate(traces.items()):
        rank, how = _rank_of(t, Path(name))
        t.meta["rank_from"] = how if rank is not None else "order"
        by_rank[i if rank is None or rank in by_rank else rank] = t
    rs = rank_summary(dict(sorted(by_rank.items())))
    rows = []
    for r, t in sorted(by_rank.items()):
        total = gpu_split(t)
        if total:
            s = total[-1]
            rows.append([r, s.span_us, *(s.by_kind[k] for k in SPLIT_KINDS), s.idle_us,
                         100 * s.busy_share])  # fmt: skip
    per = Table(["rank", "span_us", *(f"{k}_us" for k in SPLIT_KINDS), "idle_us", "busy_pct"],
                rows, "Per-rank overview (all steps)", ())  # fmt: skip
    parts = [table(ms_columns(per)), table(rs.ranks), table(rs.steps)]
    parts += [table(t) for t in (rs.by_rank, rs.streams) if len(t)]
    notes = "".join(f"<li>{esc(n)}</li>" for n in rs.notes)
    return (f"<h2 id=\"ranks\">Several ranks</h2><p>{esc(why)}.</p>" + "".join(parts)
            + (f"<ul>{notes}</ul>" if notes else ""))  # fmt: skip


_SECTION_ID = re.compile(r'id="(overview|kernels|slowest|comm|memory|next|regions)"')
_CONTENTS = (("overview", "Overview"), ("kernels", "Kernels and operators"),
             ("slowest", "The slowest step"), ("comm", "Communication"), ("memory", "Memory"),
             ("next", "What to look at next"))  # fmt: skip


def _numbered(body: str, n: int) -> str:
    """``body`` with its section ids made unique to the ``n``-th trace of a folder."""
    return _SECTION_ID.sub(lambda m: f'id="{m.group(1)}-{n}"', body)


def _contents(body: str) -> str:
    links = " · ".join(f'<a href="#{k}">{v}</a>' for k, v in _CONTENTS if f'id="{k}"' in body)
    return f"<nav><p>{links}</p></nav>{body}" if links else body


def _several(traces: dict[str, Trace], peaks: Peaks, draw: bool) -> str:
    are_ranks, why = ranks_or_repeats(traces)
    names = list(traces)
    nav = "".join(f'<li><a href="#trace-{i}">{esc(n)}</a></li>' for i, n in enumerate(names))
    what = "Rank trace" if are_ranks else "Trace"
    each = "".join(
        f'<h2 id="trace-{i}">{what} {esc(n)}</h2>'
        + _numbered(_one(traces[n], peaks, draw and not are_ranks), i)
        for i, n in enumerate(names)
    )
    if are_ranks:
        return _ranks(traces, why) + f"<ul>{nav}</ul>" + each
    return f"<p>{esc(why)}: each trace is reported on its own.</p><ul>{nav}</ul>" + each


def report(source: str | Path, peaks: Peaks = Peaks(), *, draw: bool = True) -> str:
    """The HTML report of a trace file, or of a folder of traces (ranks or repeats).

    Parameters
    ----------
    source
        A trace file, or a folder of them: ranks of one job (a rank view, then
        each rank) or repeats of one run (each trace on its own), told apart
        by :func:`~tracereader._overview.ranks_or_repeats`.
    peaks
        The GPU's peaks and bytes per step the user gave, if any.
    draw
        Inline a timeline picture of the slowest step (needs matplotlib).

    Returns
    -------
    str
        One self-contained HTML document: inline CSS and JS, pictures as
        ``data:`` URIs, no request outside the file.

    Raises
    ------
    TraceError
        A file is not a trace, or a folder holds no trace files.
    """
    path = Path(source)
    if not path.is_dir():
        trace = load(path, extra_args=REPORT_ARGS)
        return page(f"tracereader report: {path.name}", _contents(_one(trace, peaks, draw)))
    traces = {p.name: load(p, extra_args=REPORT_ARGS) for p in _expand(path)}
    if len(traces) == 1:
        ((name, t),) = traces.items()
        return page(f"tracereader report: {name}", _contents(_one(t, peaks, draw)))
    body = _several(traces, peaks, draw)
    return page(f"tracereader report: {path.name}/", body)
