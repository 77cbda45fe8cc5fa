"""Time tracereader's load (+ link) against Holistic Trace Analysis on one big trace.

Run ``python benchmarks/bench_load.py`` (the ``bench`` nox session does). It

1. builds a trace of at least ``--size-mb`` MB of JSON (default 520) under
   ``benchmarks/_data/`` by replicating a real recorded trace: each copy is
   shifted in time and gets its own correlation, External id, flow, Python id
   and step numbers, so every link stays valid and the result looks like one
   long profiling session. The file is written in Kineto's indented layout;
2. runs each contender in a fresh subprocess, so that one's memory never
   counts against the other: (a) ``tracereader.load`` then
   ``tracereader._link.link`` (load only if the linker is missing), and
   (b) HTA's ``TraceAnalysis(trace_files={0: path}, trace_dir=dir)``, its full
   parse (events, correlation index, iterations);
3. prints the times, the speed-up, each peak RSS (``ru_maxrss`` of the child)
   and tracereader's peak relative to the file size, and writes them all to
   ``benchmarks/_data/results.json``.

Targets: at least 15x faster than HTA, peak RSS at most 2x the file size.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "_data"
SOURCES = [
    ROOT / "tests" / "data" / "h200" / "train_stack.json.gz",
    *sorted((ROOT / "docs" / "recordings").glob("*/*/r*/trace.json.gz")),
]
ID_ARGS = ("correlation", "External id", "Python id", "Python parent id", "Sequence number")

# Each child prints one JSON line. "cpu_seconds" adds the CPU time of the child
# and of any process it forked (tracereader's decode helpers): on a busy machine
# it is steadier than wall time. Peak RSS of helpers comes from RUSAGE_CHILDREN.
FOOTER = r"""
self, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
result.update(cpu_seconds=self.ru_utime + self.ru_stime + kids.ru_utime + kids.ru_stime,
              own_peak_rss_bytes=self.ru_maxrss * 1024, helper_peak_rss_bytes=kids.ru_maxrss * 1024,
              peak_rss_bytes=(self.ru_maxrss + kids.ru_maxrss) * 1024)
print(json.dumps(result))
"""
CHILD_TRACEREADER = (
    r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
t0 = time.perf_counter()
from tracereader import load
workers = int(sys.argv[3]) or None
trace = load(sys.argv[1], workers=workers)
t_load = time.perf_counter() - t0
try:
    from tracereader._link import link
except ImportError:
    link = None
if link is not None:
    link(trace)
result = {"seconds": time.perf_counter() - t0, "load_seconds": t_load,
          "linked": link is not None, "events": len(trace), "parser": trace.parser}
"""
    + FOOTER
)

CHILD_HTA = (
    r"""
import json, logging, os, resource, sys, time
logging.disable(logging.CRITICAL)
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_files={0: os.path.basename(sys.argv[1])},
                         trace_dir=os.path.dirname(sys.argv[1]))
result = {"seconds": time.perf_counter() - t0, "rows": int(len(analysis.t.get_trace(0)))}
"""
    + FOOTER
)


def source_trace() -> Path:
    """The real trace to replicate: the H200 ``train_stack`` one when present."""
    for path in SOURCES:
        if path.exists():
            return path
    raise SystemExit("no recorded trace to replicate (tests/data/h200 or recordings)")


def build(source: Path, target: Path, size_mb: float, n_steps: int) -> dict:
    """Write ``target``: ``source``'s events replicated until the file holds ``size_mb`` MB.

    The per-copy ``ProfilerStep#N`` spans are replaced by ``n_steps`` long
    steps, each covering a run of consecutive copies: a real 500 MB trace
    holds a few big steps, not thousands of tiny ones (and HTA assigns
    iterations with a loop over every step for every event).
    """
    doc = json.loads(gzip.decompress(source.read_bytes()))
    events = doc.pop("traceEvents")
    meta_events = [ev for ev in events if ev.get("ph") == "M"]
    steps = [ev for ev in events if str(ev.get("name", "")).startswith("ProfilerStep#")]
    body = [
        ev for ev in events if ev.get("ph") != "M" and ev.get("cat") != "Trace" and ev not in steps
    ]
    start = min(ev["ts"] for ev in body if "ts" in ev)
    span_us = max(ev["ts"] + ev.get("dur", 0) for ev in body if "ts" in ev) - start + 100.0
    id_step = 1 + max(
        [ev.get("id", 0) for ev in body if isinstance(ev.get("id"), int)]
        + [
            v
            for ev in body
            for k, v in (ev.get("args") or {}).items()
            if k in ID_ARGS and isinstance(v, int)
        ]
    )
    per_event = len(_indented(body)) / len(body)
    copies_needed = int(size_mb * 1e6 / per_event / len(body)) + 1
    per_step = -(-copies_needed // n_steps)
    cpu_step = next((ev for ev in steps if ev.get("cat") == "user_annotation"), None)

    head = msgspec.json.format(msgspec.json.encode(doc), indent=2)[:-2].rstrip()
    copies = n_events = 0
    with target.open("wb") as out:
        out.write(head + b',\n  "traceEvents": [\n')
        out.write(_indented(meta_events))
        while out.tell() < size_mb * 1e6:
            shifted = [_shift(ev, copies, span_us, id_step) for ev in body]
            if cpu_step is not None and copies % per_step == 0:
                step = dict(cpu_step, name=f"ProfilerStep#{copies // per_step + 1}")
                step["ts"] = round(start + copies * span_us, 3)
                step["dur"] = round(per_step * span_us - 50.0, 3)
                step["args"] = {"External id": -1 - copies}
                shifted.append(step)
            out.write(b",\n" + _indented(shifted))
            copies += 1
            n_events += len(shifted)
        out.write(b"\n  ]\n}\n")
    return {
        "source": str(source.relative_to(ROOT)),
        "copies": copies,
        "steps": -(-copies // per_step) if cpu_step is not None else 0,
        "events": n_events + len(meta_events),
        "bytes": target.stat().st_size,
    }


def _shift(ev: dict, k: int, span_us: float, id_step: int) -> dict:
    ev = dict(ev)
    if "ts" in ev:
        ev["ts"] = round(ev["ts"] + k * span_us, 3)
    if isinstance(ev.get("id"), int):
        ev["id"] += k * id_step
    if ev.get("args"):
        args = ev["args"] = dict(ev["args"])
        for key in ID_ARGS:
            if isinstance(args.get(key), int) and args[key] >= 0:
                args[key] += k * id_step
    return ev


def _indented(events: list[dict]) -> bytes:
    """Events as Kineto lays them out: one indented object after another."""
    text = msgspec.json.format(msgspec.json.encode(events), indent=2)
    return text[1:-1].strip(b"\n").replace(b"\n", b"\n  ")


def run_child(code: str, *args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def best_of(repeat: int, code: str, *args: str) -> dict:
    """The fastest of ``repeat`` runs (each in a fresh process), with all times kept."""
    runs = [run_child(code, *args) for _ in range(repeat)]
    best = min(runs, key=lambda run: run["seconds"])
    return {**best, "all_seconds": [round(run["seconds"], 2) for run in runs]}


def report(name: str, run: dict, size: int) -> None:
    print(
        f"{name}: {run['seconds']:.2f} s wall (best of {run['all_seconds']}), "
        f"{run['cpu_seconds']:.2f} s CPU, peak RSS {run['peak_rss_bytes'] / 1e9:.2f} GB "
        f"= {run['peak_rss_bytes'] / size:.2f}x the file"
        + (
            f" ({run['own_peak_rss_bytes'] / 1e9:.2f} GB main process + "
            f"{run['helper_peak_rss_bytes'] / 1e9:.2f} GB decode helper)"
            if run["helper_peak_rss_bytes"]
            else ""
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=520.0)
    parser.add_argument("--steps", type=int, default=10, help="ProfilerStep spans in the trace")
    parser.add_argument("--repeat", type=int, default=3, help="tracereader runs (best kept)")
    parser.add_argument("--hta-repeat", type=int, default=1, help="HTA runs (best kept)")
    parser.add_argument("--skip-hta", action="store_true", help="time tracereader only")
    parser.add_argument(
        "--workers", type=int, default=0, help="tracereader decode processes (0: its default)"
    )
    opts = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    target = DATA / f"replicated_{int(opts.size_mb)}mb_{opts.steps}steps.json"
    info_path = target.with_suffix(".info.json")
    if target.exists() and info_path.exists():
        info = json.loads(info_path.read_text())
    else:
        t0 = time.perf_counter()
        info = build(source_trace(), target, opts.size_mb, opts.steps)
        info_path.write_text(json.dumps(info))
        print(f"built {target.name} in {time.perf_counter() - t0:.1f} s")
    size = info["bytes"]
    print(
        f"trace: {size / 1e6:.0f} MB, {info['events']:,} events, {info['steps']} steps "
        f"({info['copies']} copies of {info['source']}); {os.cpu_count()} CPUs"
    )
    args = (str(target), str(ROOT / "src"), str(opts.workers))
    ours = best_of(opts.repeat, CHILD_TRACEREADER, *args)
    what = "load + link" if ours["linked"] else "load only (tracereader._link missing)"
    report(f"tracereader {what}", ours, size)
    results = {
        "file": info,
        "tracereader": ours,
        "tracereader_peak_over_file": ours["peak_rss_bytes"] / size,
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    if not opts.skip_hta:
        hta = best_of(opts.hta_repeat, CHILD_HTA, str(target))
        report("HTA TraceAnalysis", hta, size)
        results.update(
            hta=hta,
            speedup_wall=hta["seconds"] / ours["seconds"],
            speedup_cpu=hta["cpu_seconds"] / ours["cpu_seconds"],
            memory_ratio_hta_over_tracereader=hta["peak_rss_bytes"] / ours["peak_rss_bytes"],
        )
        print(
            f"speed-up: {results['speedup_wall']:.1f}x wall, {results['speedup_cpu']:.1f}x CPU "
            f"(target >= 15x); HTA's peak memory is "
            f"{results['memory_ratio_hta_over_tracereader']:.1f}x ours"
        )
    (DATA / "results.json").write_text(json.dumps(results, indent=2))
    print(f"wrote {DATA / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
