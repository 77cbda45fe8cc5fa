"""The site's own viewer of a CUDA memory snapshot: one self-contained HTML page.

``torch.cuda.memory._snapshot()`` (or ``_dump_snapshot``'s pickle) holds the caching
allocator's segments at the moment it was taken and, with ``_record_memory_history`` on,
its trace: every ``alloc``, ``free_requested`` and ``free_completed`` (and
``segment_alloc``/``segment_free``...) with its address, size, CPU time (``time_us``) and
the Python frames that asked for it. :func:`reduce_snapshot` turns that into what the
page draws: the bytes allocated after each event (``alloc`` adds a block's size,
``free_completed`` takes it away), the part of them allocated before the trace began (the
blocks in use at the end, walked back through the trace), the peak and the blocks alive at
it. :func:`render_page` writes the page: CSS, script and data inline, no request outside
the file, so it opens from disk offline. The snapshot is plain dicts and lists (pickle or
JSON): torch is not needed.

Command line: ``python docs/_ext/memory_page.py memory_snapshot.pickle -o memory.html``.
"""

from __future__ import annotations

import argparse
import html
import json
import pickle
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

GIB = 2**30
GB = 10**9
#: Block states (``segments[i]["blocks"][j]["state"]``) whose bytes are allocated.
ACTIVE_STATES = ("active_allocated", "active_pending_free")
#: The most points the chart gets; a longer trace keeps each bucket's lowest and highest.
MAX_POINTS = 6000
#: Rows of the "largest allocations alive at the peak" table.
TOP_BLOCKS = 20
#: Rows of the "alive at the peak, by allocating line" table.
TOP_LINES = 10
#: Frames shown per allocation (innermost first).
FRAMES_SHOWN = 4
PYTORCH_VIEWER_URL = "https://pytorch.org/memory_viz"


@dataclass(frozen=True)
class Frame:
    """One Python frame of an allocation's stack."""

    filename: str
    line: int
    name: str

    def label(self) -> str:
        """``name (file.py:line)``, the file relative to site-packages where it is there."""
        return f"{self.name} ({short_path(self.filename)}:{self.line})"


@dataclass(frozen=True)
class Block:
    """An allocation: ``alloc_time_us``/``free_time_us`` are µs since the trace's first
    event, ``None`` where it was allocated before the trace began / never freed in it."""

    addr: int
    size_bytes: int
    alloc_time_us: int | None
    free_time_us: int | None
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class Phase:
    """A ``record_function``-style annotation of the trace (``external_annotations``)."""

    name: str
    start_us: int
    end_us: int
    depth: int


@dataclass(frozen=True)
class MemoryView:
    """What the page draws, reduced from one device's trace."""

    device: int
    events: int  # trace events of every action
    actions: dict[str, int]
    duration_us: int
    #: One point after each event that changed the allocated bytes (and one at the start).
    time_us: list[int]
    total_bytes: list[int]
    before_bytes: list[int]  # of which allocated before the trace began
    delta_bytes: list[int]  # the event's change: +size (alloc), -size (free_completed)
    stack_ids: list[int]  # index into ``stacks``; -1: the start point
    stacks: list[tuple[Frame, ...]]
    downsampled: bool
    peak_bytes: int
    peak_time_us: int
    peak_point: int  # index into the point lists
    peak_before_bytes: int
    alive_at_peak: list[Block]  # every block allocated during the trace, largest first
    before_at_peak: list[Block]  # those allocated before it, largest first
    end_bytes: int
    reserved_bytes: int
    segments: int
    phases: list[Phase]


def short_path(filename: str) -> str:
    """A frame's file as a reader recognises it: from the package on for an installed
    one (``torch/nn/functional.py``), else its folder and name."""
    parts = PurePosixPath(filename.replace("\\", "/")).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(marker) :])
    return "/".join(parts[-2:])


def load_snapshot(path: Path) -> dict[str, Any]:
    """A snapshot file: ``_dump_snapshot``'s pickle, or the same as JSON."""
    data = path.read_bytes()
    loaded: Any = json.loads(data) if data.lstrip()[:1] == b"{" else pickle.loads(data)
    if not isinstance(loaded, dict) or "segments" not in loaded:
        raise ValueError(f"{path.name}: not a CUDA memory snapshot (no 'segments')")
    return loaded


def _frames(entry: dict[str, Any]) -> tuple[Frame, ...]:
    return tuple(
        Frame(str(f.get("filename", "?")), int(f.get("line", 0)), str(f.get("name", "?")))
        for f in entry.get("frames") or ()
    )


def _end_blocks(snapshot: dict[str, Any], device: int) -> dict[int, tuple[int, tuple[Frame, ...]]]:
    """The blocks allocated when the snapshot was taken: address -> (bytes, frames)."""
    live: dict[int, tuple[int, tuple[Frame, ...]]] = {}
    for segment in snapshot["segments"]:
        if segment.get("device", device) != device:
            continue
        addr = int(segment.get("address", 0))
        for block in segment.get("blocks", ()):
            size = int(block["size"])
            addr = int(block.get("address", addr))
            if block.get("state") in ACTIVE_STATES:
                live[addr] = (size, _frames(block))
            addr += size
    return live


def _phases(snapshot: dict[str, Any], device: int, t0_us: int, end_us: int) -> list[Phase]:
    """The annotations (START/END pairs, nested), in µs since ``t0_us``, clipped to the trace."""
    phases: list[Phase] = []
    open_: list[tuple[str, int]] = []
    for a in snapshot.get("external_annotations") or ():
        if a.get("device", device) != device:
            continue
        t = int(a["time_us"]) - t0_us
        if a.get("stage") == "START":
            open_.append((str(a.get("name", "")), t))
        elif a.get("stage") == "END" and open_:
            names = [n for n, _ in open_]
            k = len(names) - 1 - names[::-1].index(a["name"]) if a.get("name") in names else -1
            name, start = open_.pop(k)
            start, end = max(start, 0), min(t, end_us)
            if end > start:
                phases.append(Phase(name, start, end, len(open_)))
    return sorted(phases, key=lambda p: (p.depth, p.start_us))


def _downsample(n: int, values: Sequence[int], max_points: int) -> list[int]:
    """Indices of the points kept: all of them, or each bucket's lowest and highest (so
    the peak stays), with the first and the last."""
    if n <= max_points:
        return list(range(n))
    buckets = max(1, (max_points - 2) // 2)
    keep = {0, n - 1}
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        if hi > lo:
            chunk = range(lo, hi)
            keep.add(min(chunk, key=lambda k: values[k]))
            keep.add(max(chunk, key=lambda k: values[k]))
    return sorted(keep)


def reduce_snapshot(
    snapshot: dict[str, Any], device: int | None = None, max_points: int = MAX_POINTS
) -> MemoryView:
    """Reduce a snapshot to what the page draws (see the module's docstring).

    ``device``: the trace to read; by default the device with the most trace events.
    """
    traces: list[list[dict[str, Any]]] = snapshot.get("device_traces") or []
    if device is None:
        device = max(range(len(traces)), key=lambda k: len(traces[k]), default=0)
    events = traces[device] if device < len(traces) else []
    end_live = _end_blocks(snapshot, device)
    # Walk back from the end: what was allocated before the trace's first event.
    live: dict[int, tuple[int, tuple[Frame, ...]]] = dict(end_live)
    for e in reversed(events):
        if e["action"] == "alloc":
            live.pop(int(e["addr"]), None)
        elif e["action"] == "free_completed":
            live[int(e["addr"])] = (int(e["size"]), _frames(e))
    t0_us = int(events[0]["time_us"]) if events else 0
    duration_us = int(events[-1]["time_us"]) - t0_us if events else 0
    # Blocks as [addr, bytes, alloc µs or None, free µs or None, frames, alloc point, free point].
    blocks: list[list[Any]] = [[a, s, None, None, f, 0, None] for a, (s, f) in live.items()]
    by_addr = {b[0]: k for k, b in enumerate(blocks)}
    stack_index: dict[tuple[Frame, ...], int] = {}
    total = before = sum(b[1] for b in blocks)
    time_us, totals, befores, deltas, stack_ids = [0], [total], [before], [0], [-1]
    for e in events:
        action, addr = e["action"], int(e["addr"]) if "addr" in e else 0
        t = int(e["time_us"]) - t0_us
        if action == "alloc":
            frames = _frames(e)
            size = int(e["size"])
            by_addr[addr] = len(blocks)
            blocks.append([addr, size, t, None, frames, len(time_us), None])
            total += size
        elif action == "free_completed":
            k = by_addr.pop(addr, -1)
            if k < 0:  # a trace that does not add up: count the event's own size
                blocks.append([addr, int(e["size"]), None, t, _frames(e), 0, len(time_us)])
                k = len(blocks) - 1
            else:
                blocks[k][3], blocks[k][6] = t, len(time_us)
            size, frames = -blocks[k][1], blocks[k][4]
            total += size
            if blocks[k][2] is None:
                before += size
        else:
            continue
        time_us.append(t)
        totals.append(total)
        befores.append(before)
        deltas.append(size)
        stack_ids.append(stack_index.setdefault(frames, len(stack_index)))
    peak_point = max(range(len(totals)), key=lambda k: totals[k])  # the first highest
    alive = [
        Block(b[0], b[1], b[2], b[3], b[4])
        for b in blocks
        if b[5] <= peak_point and (b[6] is None or b[6] > peak_point)
    ]
    alive.sort(key=lambda b: (-b.size_bytes, b.alloc_time_us or 0))
    keep = _downsample(len(totals), totals, max_points)
    reserved = [s for s in snapshot["segments"] if s.get("device", device) == device]
    return MemoryView(
        device=device,
        events=len(events),
        actions=dict(Counter(str(e["action"]) for e in events)),
        duration_us=duration_us,
        time_us=[time_us[k] for k in keep],
        total_bytes=[totals[k] for k in keep],
        before_bytes=[befores[k] for k in keep],
        delta_bytes=[deltas[k] for k in keep],
        stack_ids=[stack_ids[k] for k in keep],
        stacks=list(stack_index),
        downsampled=len(keep) < len(totals),
        peak_bytes=totals[peak_point],
        peak_time_us=time_us[peak_point],
        peak_point=keep.index(peak_point),
        peak_before_bytes=befores[peak_point],
        alive_at_peak=[b for b in alive if b.alloc_time_us is not None],
        before_at_peak=[b for b in alive if b.alloc_time_us is None],
        end_bytes=sum(s for s, _ in end_live.values()),
        reserved_bytes=sum(int(s.get("total_size", 0)) for s in reserved),
        segments=len(reserved),
        phases=_phases(snapshot, device, t0_us, duration_us),
    )


def fmt_bytes(n: int) -> str:
    """Binary units, as the site writes memory (GiB, MiB, KiB)."""
    for unit, scale in (("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def fmt_ms(t_us: int | None, missing: str) -> str:
    return missing if t_us is None else f"{t_us / 1e3:.3f} ms"


def _frames_html(frames: Sequence[Frame]) -> str:
    if not frames:
        return '<span class="muted">no Python frame (C++ code, such as autograd\'s)</span>'
    shown = "".join(
        f"<li><code>{html.escape(f.label())}</code></li>" for f in frames[:FRAMES_SHOWN]
    )
    return f'<ol class="frames">{shown}</ol>'


def _block_rows(blocks: Sequence[Block]) -> str:
    rows = []
    for k, b in enumerate(blocks[:TOP_BLOCKS], 1):
        rows.append(
            f'<tr data-t0="{b.alloc_time_us}" data-t1="{"" if b.free_time_us is None else b.free_time_us}">'
            f'<td class="num">{k}</td><td class="num">{fmt_bytes(b.size_bytes)}</td>'
            f'<td class="num">{fmt_ms(b.alloc_time_us, "before")}</td>'
            f'<td class="num">{fmt_ms(b.free_time_us, "not freed")}</td>'
            f"<td>{_frames_html(b.frames)}</td></tr>"
        )
    return "\n".join(rows)


def _line_rows(blocks: Sequence[Block]) -> str:
    bytes_by: Counter[str] = Counter()
    count_by: Counter[str] = Counter()
    for b in blocks:
        label = b.frames[0].label() if b.frames else "no Python frame"
        bytes_by[label] += b.size_bytes
        count_by[label] += 1
    return "\n".join(
        f'<tr><td><code>{html.escape(label)}</code></td><td class="num">{count_by[label]}</td>'
        f'<td class="num">{fmt_bytes(n)}</td></tr>'
        for label, n in bytes_by.most_common(TOP_LINES)
    )


def _phase_at(view: MemoryView, t_us: int) -> str:
    inner = [p for p in view.phases if p.start_us <= t_us <= p.end_us]
    return max(inner, key=lambda p: p.depth).name if inner else ""


def page_data(view: MemoryView) -> dict[str, Any]:
    """The JSON the page's script draws from: columns of ints, stacks as frame labels."""
    frames: dict[str, int] = {}
    stacks = [
        [frames.setdefault(f.label(), len(frames)) for f in s[:FRAMES_SHOWN]] for s in view.stacks
    ]
    return {
        "t_us": view.time_us,
        "total_bytes": view.total_bytes,
        "before_bytes": view.before_bytes,
        "delta_bytes": view.delta_bytes,
        "stack": view.stack_ids,
        "stacks": stacks,
        "frames": list(frames),
        "peak": view.peak_point,
        "duration_us": view.duration_us,
        "phases": [[p.name, p.start_us, p.end_us, p.depth] for p in view.phases],
    }


def render_page(view: MemoryView, *, source: str, title: str, raw_href: str | None) -> str:
    """The viewer page: ``source`` names the snapshot file; ``raw_href`` links its copy."""
    data = json.dumps(page_data(view), separators=(",", ":")).replace("<", "\\u003c")
    step_bytes = view.peak_bytes - view.peak_before_bytes
    phase = _phase_at(view, view.peak_time_us)
    at = f"{fmt_ms(view.peak_time_us, '')}" + (
        f", in <code>{html.escape(phase)}</code>" if phase else ""
    )
    before_line = ""
    if view.before_at_peak:
        before_line = (
            f"<p>Also alive at the peak: {len(view.before_at_peak)} blocks allocated before the "
            f"trace began, {fmt_bytes(view.peak_before_bytes)} (weights, gradients, optimizer "
            "state and whatever else the program held; the trace has no stack for them). "
            "The largest: "
            + ", ".join(fmt_bytes(b.size_bytes) for b in view.before_at_peak[:8])
            + ".</p>"
        )
    raw = (
        f'<a href="{html.escape(raw_href)}" download>download the snapshot</a>'
        if raw_href
        else "take the snapshot file"
    )
    actions = ", ".join(f"{n:,} {a}" for a, n in sorted(view.actions.items()))
    downsampled = (
        f" The chart keeps {len(view.time_us):,} of the points (each stretch's lowest and "
        "highest); the peak and the tables use every event."
        if view.downsampled
        else ""
    )
    alive_bytes = sum(b.size_bytes for b in view.alive_at_peak)
    subst = {
        "TITLE": html.escape(title),
        "SOURCE": html.escape(source),
        "RAW": raw,
        "PYTORCH": PYTORCH_VIEWER_URL,
        "PEAK_GIB": f"{view.peak_bytes / GIB:.2f} GiB",
        "PEAK_GB": f"{view.peak_bytes / GB:.2f} GB",
        "PEAK_AT": at,
        "STEP_GIB": fmt_bytes(step_bytes),
        "BEFORE_GIB": fmt_bytes(view.peak_before_bytes),
        "EVENTS": f"{view.events:,}",
        "ACTIONS": html.escape(actions),
        "DURATION": fmt_ms(view.duration_us, ""),
        "DEVICE": str(view.device),
        "END_GIB": fmt_bytes(view.end_bytes),
        "RESERVED_GIB": fmt_bytes(view.reserved_bytes),
        "SEGMENTS": f"{view.segments:,}",
        "DOWNSAMPLED": downsampled,
        "ALIVE_N": f"{len(view.alive_at_peak):,}",
        "ALIVE_GIB": fmt_bytes(alive_bytes),
        "TOP_N": str(min(TOP_BLOCKS, len(view.alive_at_peak))),
        "BLOCK_ROWS": _block_rows(view.alive_at_peak),
        "LINE_ROWS": _line_rows(view.alive_at_peak),
        "BEFORE_LINE": before_line,
        "DATA": data,
    }
    return re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: subst[m.group(1)], TEMPLATE)


def write_page(
    snapshot_path: Path,
    dest: Path,
    *,
    source: str | None = None,
    title: str | None = None,
    raw_href: str | None = None,
) -> MemoryView:
    """Read ``snapshot_path``, write its viewer page to ``dest``; the view it drew."""
    view = reduce_snapshot(load_snapshot(snapshot_path))
    page = render_page(
        view,
        source=source or snapshot_path.name,
        title=title or f"Memory snapshot: {snapshot_path.name}",
        raw_href=raw_href,
    )
    dest.write_text(page, encoding="utf-8")
    return view


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("snapshot", type=Path, help="memory_snapshot.pickle (or .json)")
    parser.add_argument("-o", "--output", type=Path, default=Path("memory.html"))
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    view = write_page(args.snapshot, args.output, title=args.title)
    print(f"{args.output}: peak {fmt_bytes(view.peak_bytes)} at {fmt_ms(view.peak_time_us, '')}")
    return 0


TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<link rel="icon" href="data:,">
<style>
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #ffffff;
  --grid: #d8dee4; --area: #9ec5f4; --line: #0b5cad; --before: #c9ced6; --peak: #b3261e;
  --band: #eef1f4; --band2: #e2e7ec; --hl: rgba(230, 140, 0, 0.28); }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --grid: #30363d; --area: #1f4f82;
    --line: #79b8ff; --before: #3b424b; --peak: #ff7b72; --band: #161b22; --band2: #21262d;
    --hl: rgba(255, 166, 0, 0.3); }
}
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); margin: 0 auto; max-width: 1100px; padding: 1rem 1.25rem 3rem; }
h1 { font-size: 1.45rem; margin: 0.4rem 0; } h2 { font-size: 1.15rem; margin: 1.8rem 0 0.4rem; }
a { color: var(--line); }
code { font: 0.86em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.muted, .note { color: var(--muted); } .note { font-size: 0.9rem; }
.peak { font-size: 1.1rem; } .peak strong { color: var(--peak); }
figure { margin: 1rem 0; }
#chart { width: 100%; height: auto; display: block; touch-action: none; }
#chart:focus { outline: 2px solid var(--line); outline-offset: 2px; }
#chart text { fill: var(--fg); font: 12px system-ui, sans-serif; }
#chart .tick line, #chart .grid { stroke: var(--grid); }
#readout { min-height: 3.2em; margin: 0.3rem 0 0; padding: 0.4rem 0.6rem;
  border-left: 3px solid var(--line); background: var(--band); }
.legend span { display: inline-block; margin-right: 1.2rem; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: -0.1em;
  margin-right: 0.3em; border: 1px solid var(--grid); }
table { border-collapse: collapse; width: 100%; margin: 0.4rem 0; }
th, td { text-align: left; vertical-align: top; padding: 0.3rem 0.5rem;
  border-bottom: 1px solid var(--grid); }
th { font-weight: 600; } td.num, th.num { text-align: right; white-space: nowrap; }
tbody tr:hover, tbody tr.on { background: var(--hl); }
ol.frames { margin: 0; padding-left: 1.4em; font-size: 0.92em; line-height: 1.3; }
</style>
</head>
<body>
<main>
<h1>{{TITLE}}</h1>
<p class="note">This page is the site's own viewer of <code>{{SOURCE}}</code>: its data were
reduced from that file when the site was built, and it loads nothing from the network. For
PyTorch's own viewer (segments, every stack, the allocator's state), {{RAW}} and open it at
<a href="{{PYTORCH}}">pytorch.org/memory_viz</a>.</p>

<p class="peak">Peak: <strong>{{PEAK_GIB}}</strong> allocated ({{PEAK_GB}}) at {{PEAK_AT}}:
{{STEP_GIB}} allocated during the trace on top of {{BEFORE_GIB}} allocated before it.</p>

<figure>
<svg id="chart" viewBox="0 0 1000 380" role="img" tabindex="0"
  aria-label="Memory allocated over the trace, peak {{PEAK_GIB}} at {{PEAK_AT}}"></svg>
<div class="legend note"><span><i class="swatch" style="background:var(--before)"></i>allocated
before the trace began</span><span><i class="swatch" style="background:var(--area)"></i>allocated
during the trace</span><span><i class="swatch" style="background:var(--peak)"></i>peak</span></div>
<p id="readout" aria-live="polite">Hover over the chart (or click it, or focus it and use the
arrow keys; P jumps to the peak) for the time and the bytes after each event.</p>
<noscript><p>The chart needs JavaScript; the numbers above and the tables below do not.</p></noscript>
<figcaption class="note">Device {{DEVICE}}: {{EVENTS}} trace events ({{ACTIONS}}) over
{{DURATION}}. Allocated bytes: an <code>alloc</code> adds a block's size, a
<code>free_completed</code> takes it away; times are the CPU time of each request, since the
trace's first event. At the snapshot's end, {{END_GIB}} was allocated and the caching
allocator held {{RESERVED_GIB}} reserved in {{SEGMENTS}} segments.{{DOWNSAMPLED}}</figcaption>
</figure>

<h2>Largest allocations alive at the peak</h2>
<p>{{ALIVE_N}} blocks allocated during the trace are alive at the peak, {{ALIVE_GIB}} in all;
the {{TOP_N}} largest, with the innermost frames that allocated them (pointing at a row marks
its lifetime on the chart):</p>
<table id="blocks">
<thead><tr><th class="num">#</th><th class="num">size</th><th class="num">allocated at</th>
<th class="num">freed at</th><th>allocated by (innermost frame first)</th></tr></thead>
<tbody>
{{BLOCK_ROWS}}
</tbody>
</table>
{{BEFORE_LINE}}

<h2>Alive at the peak, by the line that allocated it</h2>
<table>
<thead><tr><th>innermost frame</th><th class="num">blocks</th><th class="num">size</th></tr></thead>
<tbody>
{{LINE_ROWS}}
</tbody>
</table>
</main>
<script type="application/json" id="memory-data">{{DATA}}</script>
<script>
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("memory-data").textContent);
  var svg = document.getElementById("chart"), readout = document.getElementById("readout");
  var NS = svg.namespaceURI, GIB = 1073741824;
  var n = D.t_us.length, tMax = Math.max(D.duration_us, 1), pk = D.peak;
  var W = 1000, H = 380, L = 64, R = 16, T = 40, B = 40;
  var yTop = 0;
  for (var i = 0; i < n; i++) yTop = Math.max(yTop, D.total_bytes[i]);
  var yStep = niceStep(yTop / GIB / 5) * GIB;
  var yMax = Math.max(yStep, Math.ceil(yTop * 1.08 / yStep) * yStep);
  var chosen = -1, pinned = false, cursor = null, dot = null, span = null;
  function x(t) { return L + (W - L - R) * t / tMax; }
  function y(b) { return H - B - (H - T - B) * b / yMax; }
  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function el(name, attrs, parent, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) {
      var v = attrs[k];
      if (typeof v === "string" && v.indexOf("var(") === 0) e.style.setProperty(k, v);
      else e.setAttribute(k, v);
    }
    if (text !== undefined) e.textContent = text;
    (parent || svg).appendChild(e);
    return e;
  }
  function bytes(b) {
    var a = Math.abs(b);
    if (a >= GIB) return (b / GIB).toFixed(2) + " GiB";
    if (a >= 1048576) return (b / 1048576).toFixed(2) + " MiB";
    if (a >= 1024) return (b / 1024).toFixed(2) + " KiB";
    return b + " B";
  }
  function ms(t) { return (t / 1000).toFixed(3) + " ms"; }
  function stepPath(values, closed) {
    var d = "M" + x(D.t_us[0]).toFixed(2) + "," + y(values[0]).toFixed(2);
    for (var i = 1; i < n; i++) d += "H" + x(D.t_us[i]).toFixed(2) + "V" + y(values[i]).toFixed(2);
    d += "H" + x(tMax).toFixed(2);
    if (closed) d += "V" + y(0) + "H" + x(D.t_us[0]).toFixed(2) + "Z";
    return d;
  }
  function draw() {
    W = Math.max(Math.round(svg.getBoundingClientRect().width) || 1000, 360);
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    // The trace's annotations (phases), one row per nesting depth, above the plot; every
    // other top-level phase shaded behind the plot.
    var top0 = 0;
    D.phases.forEach(function (p) {
      if (p[3] > 1) return;
      var x0 = x(p[1]), x1 = x(p[2]), top = 4 + 16 * p[3];
      var g = el("g", {});
      el("title", {}, g, p[0] + ": " + ms(p[1]) + " to " + ms(p[2]));
      el("rect", {x: x0, y: top, width: Math.max(x1 - x0, 1), height: 14,
        fill: p[3] ? "var(--band2)" : "var(--band)", stroke: "var(--grid)"}, g);
      if (p[3] === 0 && top0++ % 2 === 0) {
        el("rect", {x: x0, y: T, width: Math.max(x1 - x0, 1), height: H - T - B,
          fill: "var(--band)"}, g);
      }
      var label = p[0].split("#").pop();
      if (label.length * 6.6 + 6 < x1 - x0) el("text", {x: x0 + 3, y: top + 11}, g, label);
    });
    for (var v = 0; v <= yMax + 1; v += yStep) {
      el("line", {class: "grid", x1: L, x2: W - R, y1: y(v), y2: y(v)});
      el("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end"}, null, +(v / GIB).toFixed(2) + " GiB");
    }
    var tStep = niceStep(tMax / 1000 / Math.max(2, Math.floor((W - L - R) / 110))) * 1000;
    for (var t = 0; t <= tMax; t += tStep) {
      el("line", {class: "grid", x1: x(t), x2: x(t), y1: H - B, y2: H - B + 5});
      el("text", {x: x(t), y: H - B + 18, "text-anchor": "middle"}, null, String(+(t / 1000).toFixed(3)));
    }
    el("text", {x: W - R, y: H - 4, "text-anchor": "end"}, null, "ms since the trace's first event");
    // The memory: allocated before the trace (grey), during it (blue), the total (line).
    el("path", {d: stepPath(D.total_bytes, true), fill: "var(--area)"});
    el("path", {d: stepPath(D.before_bytes, true), fill: "var(--before)"});
    el("path", {d: stepPath(D.total_bytes, false), fill: "none", stroke: "var(--line)",
      "stroke-width": 1.4});
    span = el("rect", {x: 0, y: T, width: 0, height: H - T - B, fill: "var(--hl)",
      visibility: "hidden"});
    var px = x(D.t_us[pk]), py = y(D.total_bytes[pk]), right = px > L + (W - L - R) * 0.6;
    el("circle", {cx: px, cy: py, r: 5, fill: "var(--peak)"});
    el("text", {id: "peak-label", x: px + (right ? -9 : 9), y: Math.max(py - 8, T + 12),
      "text-anchor": right ? "end" : "start", "font-weight": "bold", fill: "var(--peak)"}, null,
      "peak " + (D.total_bytes[pk] / GIB).toFixed(2) + " GiB (" + (D.total_bytes[pk] / 1e9).toFixed(2) + " GB)");
    cursor = el("line", {x1: 0, x2: 0, y1: T, y2: H - B, stroke: "var(--fg)",
      "stroke-dasharray": "3 3", visibility: "hidden"});
    dot = el("circle", {r: 4, fill: "var(--line)", stroke: "var(--bg)", visibility: "hidden"});
    if (chosen >= 0) place(chosen);
  }
  function phaseAt(t) {
    var best = null;
    D.phases.forEach(function (p) { if (p[1] <= t && t <= p[2] && (!best || p[3] > best[3])) best = p; });
    return best ? best[0] : "";
  }
  function place(i) {
    var cx = x(D.t_us[i]);
    cursor.setAttribute("x1", cx); cursor.setAttribute("x2", cx);
    dot.setAttribute("cx", cx); dot.setAttribute("cy", y(D.total_bytes[i]));
    cursor.setAttribute("visibility", "visible"); dot.setAttribute("visibility", "visible");
  }
  function show(i) {
    chosen = Math.max(0, Math.min(n - 1, i));
    place(chosen);
    var t = D.t_us[chosen], b = D.total_bytes[chosen], before = D.before_bytes[chosen], what;
    if (D.stack[chosen] >= 0) {
      var d = D.delta_bytes[chosen], frames = D.stacks[D.stack[chosen]];
      what = (d >= 0 ? "alloc of " + bytes(d) : "free of " + bytes(-d)) + ", allocated by " +
        (frames.length ? frames.map(function (f) { return D.frames[f]; }).join(" \u2190 ")
          : "C++ code (no Python frame)");
    } else {
      what = "none (the trace's start: what was allocated before it)";
    }
    var phase = phaseAt(t);
    readout.textContent = "t = " + ms(t) + (phase ? " (" + phase + ")" : "") + ": " + bytes(b) +
      " allocated (" + (b / 1e9).toFixed(3) + " GB; " + bytes(b - before) + " of it during the trace)" +
      (chosen === pk ? ", the peak" : "") + ". Event: " + what +
      (pinned ? ". Pinned: click again to release." : ".");
  }
  function nearest(evt) {
    var box = svg.getBoundingClientRect();
    var t = ((evt.clientX - box.left) * W / box.width - L) / (W - L - R) * tMax, lo = 0, hi = n - 1;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (D.t_us[mid] <= t) lo = mid; else hi = mid - 1; }
    if (lo + 1 < n && Math.abs(D.t_us[lo + 1] - t) < Math.abs(D.t_us[lo] - t)) lo++;
    return lo;
  }
  svg.addEventListener("mousemove", function (e) { if (!pinned) show(nearest(e)); });
  svg.addEventListener("click", function (e) { pinned = !pinned; show(pinned ? nearest(e) : chosen); });
  svg.addEventListener("keydown", function (e) {
    var k = {ArrowRight: 1, ArrowLeft: -1, PageUp: 50, PageDown: -50}[e.key];
    if (k) show((chosen < 0 ? pk : chosen) + k);
    else if (e.key === "Home") show(0);
    else if (e.key === "End") show(n - 1);
    else if (e.key === "p" || e.key === "P") show(pk);
    else return;
    pinned = true;
    e.preventDefault();
  });
  document.querySelectorAll("#blocks tbody tr").forEach(function (row) {
    row.addEventListener("mouseenter", function () {
      var t0 = +row.dataset.t0, t1 = row.dataset.t1 === "" ? tMax : +row.dataset.t1;
      span.setAttribute("x", x(t0)); span.setAttribute("width", Math.max(x(t1) - x(t0), 1));
      span.setAttribute("visibility", "visible"); row.classList.add("on");
    });
    row.addEventListener("mouseleave", function () {
      span.setAttribute("visibility", "hidden"); row.classList.remove("on");
    });
  });
  var pending = 0;
  window.addEventListener("resize", function () {
    cancelAnimationFrame(pending); pending = requestAnimationFrame(draw);
  });
  draw();
})();
</script>
</body>
</html>
"""


if __name__ == "__main__":
    raise SystemExit(main())
