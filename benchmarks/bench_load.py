"""Time ``tracereader summary`` against Holistic Trace Analysis on one big trace.

Run ``python benchmarks/bench_load.py`` (the ``bench`` nox session does). It

1. builds a trace of at least ``--size-mb`` MB of JSON (default 520) under
   ``benchmarks/_data/`` by replicating a real recorded trace: each copy is
   shifted in time and gets its own correlation, External id, flow, Python id
   and step numbers, so every link stays valid and the result looks like one
   long profiling session. The file is written in Kineto's indented layout;
2. runs each contender ``--runs`` times (default 3), each run in a fresh
   process, alternating which goes first:

   * tracereader: ``tracereader summary FILE`` as a user runs it (the
     console script's code: ``tracereader.cli.run``), timed from outside,
     from process start to exit, so interpreter start-up, imports, loading,
     linking, the summary's analysis, printing and exit all count;
   * HTA: ``TraceAnalysis(trace_files={0: name}, trace_dir=dir)``, its full
     parse (events to a DataFrame, correlation index, iterations), timed
     inside its process from before ``import hta`` to the end of the
     constructor (so HTA's interpreter start-up and exit do *not* count);

3. times the stages of one more summary run in-process (where the time goes);
4. prints every run, the median speed-up (HTA's median time over
   tracereader's), tracereader's peak memory (``ru_maxrss`` of the process
   plus that of its forked decode helper, summed, worst run) over the file
   size, and writes it all to ``benchmarks/_data/results.json``.

Targets (issue 14): median speed-up at least 15x, peak memory at most 2x the
file. Missing one exits with status 1 and a one-line reason.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "_data"
SOURCES = [
    ROOT / "tests" / "data" / "h200" / "train_stack.json.gz",
    *sorted((ROOT / "docs" / "recordings").glob("*/*/*/r*/trace.json.gz")),
]
ID_ARGS = ("correlation", "External id", "Python id", "Python parent id", "Sequence number")
SPEEDUP_TARGET = 20.0
MEMORY_TARGET = 2.0  # peak RSS / file size
REPORT_TARGET = 2.0  # median `tracereader report` / median `tracereader summary`

# Each child prints one JSON line on stderr, last. "cpu_seconds" adds the CPU
# time of the child and of every process it forked and waited for
# (tracereader's decode helper, HTA's parsing pool); "peak_rss_bytes" adds the
# child's ru_maxrss and its children's (the largest of them), which counts the
# pages they share (the file's page cache) twice: an upper bound.
FOOTER = r"""
self, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
result.update(cpu_seconds=self.ru_utime + self.ru_stime + kids.ru_utime + kids.ru_stime,
              own_peak_rss_bytes=self.ru_maxrss * 1024, helper_peak_rss_bytes=kids.ru_maxrss * 1024,
              peak_rss_bytes=(self.ru_maxrss + kids.ru_maxrss) * 1024)
sys.stdout.flush()
print(json.dumps(result), file=sys.stderr)
"""
# What the `tracereader` console script runs (`from tracereader.cli import run`),
# with the process's resource use reported on stderr at the end.
CHILD_SUMMARY = (
    r"""
import json, resource, sys, time
t0 = time.perf_counter()
sys.argv = ["tracereader", "summary", sys.argv[1]]
from tracereader.cli import main
status = main(sys.argv[1:])
result = {"inside_seconds": time.perf_counter() - t0, "status": status}
"""
    + FOOTER
)
# `tracereader report FILE -o report.html`: the whole HTML report, picture included.
CHILD_REPORT = (
    r"""
import json, resource, sys, time
t0 = time.perf_counter()
from tracereader.cli import main
status = main(["report", sys.argv[1], "-o", "report.html"])
result = {"inside_seconds": time.perf_counter() - t0, "status": status}
"""
    + FOOTER
)
# One summary run with each stage timed: where tracereader's time goes.
CHILD_STAGES = (
    r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
import tracereader.cli as cli
from tracereader import _columns, _fast
from tracereader._link import link
from tracereader._load import load
from tracereader._measure import summary
stages = {"imports (numpy, tracereader)": time.perf_counter() - t0}
spent = {"decode": 0.0, "finish": 0.0, "msgspec": 0.0, "add": 0.0}
def timed(key, func):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - t
    return wrapper
class TimedDecoder:
    def __init__(self, decoder):
        self.decode = timed("msgspec", decoder.decode)
# Private names, used here only to split `load` up (each wrapped only if it exists).
if hasattr(_fast, "_decode_spans"):
    _fast._decode_spans = timed("decode", _fast._decode_spans)
for name in ("_EVENTS", "_IDS_EVENTS"):  # the full args, and the ids alone (summary's)
    if hasattr(_fast, name):
        setattr(_fast, name, TimedDecoder(getattr(_fast, name)))
for name in ("add", "finish"):
    if hasattr(_columns.Columns, name):
        setattr(_columns.Columns, name, timed(name, getattr(_columns.Columns, name)))
import inspect
# As `tracereader summary` loads: without the args it never reads, where load can.
ids_only = {"extra_args": False} if "extra_args" in inspect.signature(load).parameters else {}
t = time.perf_counter()
trace = load(sys.argv[1], **ids_only)
t_load = time.perf_counter() - t
stages["load: map the file, find the event array"] = t_load - spent["decode"] - spent["finish"]
workers = _fast._workers(None) if hasattr(_fast, "_workers") else 1
stages[f"load: decode to columns ({workers} processes), gather them"] = spent["decode"]
stages["load: concatenate, ns, time sort, args columns"] = spent["finish"]
t = time.perf_counter(); link(trace); stages["link"] = time.perf_counter() - t
t = time.perf_counter(); summary(trace); stages["summary analysis"] = time.perf_counter() - t
import tracereader._cli_summary as cli_summary
cli._load = cli_summary.load = lambda path, **kw: trace  # the same CLI run on the loaded trace
with open(os.devnull, "w") as sink:
    stdout, sys.stdout = sys.stdout, sink
    t = time.perf_counter(); cli.main(["summary", sys.argv[1]])
    sys.stdout = stdout
stages["text output"] = max(0.0, time.perf_counter() - t - stages["summary analysis"])
detail = {  # this process's part of the decode stage; a forked helper does the same meanwhile
    "msgspec: JSON pieces to records": spent["msgspec"],
    "records to column chunks (Columns.add)": spent["add"],
    "the rest: copy pieces, free records, receive the helper's columns, merge": spent["decode"]
    - spent["msgspec"] - spent["add"],
}
result = {"stages": stages, "decode_detail": detail, "inside_seconds": sum(stages.values()),
          "events": len(trace), "parser": trace.parser, "workers": workers}
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
result = {"inside_seconds": time.perf_counter() - t0, "rows": int(len(analysis.t.get_trace(0)))}
"""
    + FOOTER
)


def source_trace(chosen: str | None) -> Path:
    """The real trace to replicate: ``chosen``, else the H200 ``train_stack`` one."""
    if chosen:
        path = Path(chosen).resolve()
        if not path.is_file():
            raise SystemExit(f"bench: no such trace: {chosen}")
        return path
    for path in SOURCES:
        if path.exists():
            return path
    raise SystemExit("bench: no recorded trace to replicate (tests/data/h200 or docs/recordings)")


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
        "source": str(source.relative_to(ROOT) if source.is_relative_to(ROOT) else source),
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


def run_child(code: str, path: Path, env: dict[str, str]) -> dict:
    """Run ``code`` in a fresh Python process; its JSON report plus outside wall time."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=DATA,
    )
    wall = time.perf_counter() - t0
    lines = proc.stderr.strip().splitlines()
    if proc.returncode != 0 or not lines:
        failed = f"bench: a child failed (status {proc.returncode}):"
        raise SystemExit(f"{failed}\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1])
    return {**result, "wall_seconds": wall, "stdout": proc.stdout}


def warm_page_cache(path: Path) -> None:
    """Read the file once, so every run finds it in the page cache."""
    with path.open("rb") as fh:
        while fh.read(64 << 20):
            pass


def fmt_run(run: dict, size: int) -> str:
    mem = f"peak {run['peak_rss_bytes'] / 1e9:.2f} GB = {run['peak_rss_bytes'] / size:.2f}x file"
    if run["helper_peak_rss_bytes"]:
        mem += (
            f" ({run['own_peak_rss_bytes'] / 1e9:.2f} GB process + "
            f"{run['helper_peak_rss_bytes'] / 1e9:.2f} GB children)"
        )
    return f"{run['seconds']:6.2f} s  (CPU {run['cpu_seconds']:6.2f} s, {mem})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=520.0)
    parser.add_argument("--steps", type=int, default=10, help="ProfilerStep spans in the trace")
    parser.add_argument("--runs", type=int, default=3, help="runs of each contender (median kept)")
    parser.add_argument("--skip-hta", action="store_true", help="time tracereader only")
    parser.add_argument(
        "--source", help="recorded trace to replicate (default: tests/data/h200/train_stack)"
    )
    opts = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    source = source_trace(opts.source)
    stem = source.name.removesuffix(".gz").removesuffix(".json")
    if source.name == "trace.json.gz":  # docs/recordings/<gpu>/<example>/<variant>/r<k>/...
        stem = "_".join(source.parts[-5:-1])
    target = DATA / f"{stem}_x_{int(opts.size_mb)}mb_{opts.steps}steps.json"
    info_path = target.with_suffix(".info.json")
    if target.exists() and info_path.exists():
        info = json.loads(info_path.read_text())
    else:
        t0 = time.perf_counter()
        info = build(source, target, opts.size_mb, opts.steps)
        info_path.write_text(json.dumps(info))
        print(f"built {target.name} in {time.perf_counter() - t0:.1f} s")
    size = info["bytes"]
    # The working tree's tracereader, whatever the environment has installed.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}  # fmt: skip
    load_before = os.getloadavg()
    print(
        f"trace: {target.relative_to(ROOT)}, {size / 1e6:.0f} MB, {info['events']:,} events, "
        f"{info['steps']} steps ({info['copies']} copies of {info['source']})\n"
        f"machine: {os.cpu_count()} CPUs, load average {load_before[0]:.2f} before the runs"
    )
    warm_page_cache(target)
    contenders = {"tracereader summary": CHILD_SUMMARY, "tracereader report": CHILD_REPORT}
    if not opts.skip_hta:
        contenders["HTA TraceAnalysis"] = CHILD_HTA
    runs: dict[str, list[dict]] = {name: [] for name in contenders}
    for k in range(opts.runs):
        names = list(contenders) if k % 2 == 0 else list(contenders)[::-1]
        for name in names:
            run = run_child(contenders[name], target, env)
            # tracereader: the whole process as the user waits for it; HTA: import + parse.
            run["seconds"] = run["wall_seconds"] if name.startswith("tracereader") else run[
                "inside_seconds"]  # fmt: skip
            runs[name].append(run)
            print(f"run {k + 1} {name:<20} {fmt_run(run, size)}", flush=True)
    ours = runs["tracereader summary"]
    output = ours[0].pop("stdout")
    if any(run.pop("status") != 0 for run in ours) or not output.startswith("trace"):
        raise SystemExit(f"bench: `tracereader summary` failed on {target.name}")
    (DATA / "summary.txt").write_text(output)
    stages = run_child(CHILD_STAGES, target, env)
    stages.pop("stdout")
    median = statistics.median(run["seconds"] for run in ours)
    peak = max(run["peak_rss_bytes"] for run in ours) / size
    results: dict = {
        "file": {**info, "path": str(target.relative_to(ROOT))},
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "tracereader_runs": ours,
        "tracereader_median_seconds": median,
        "tracereader_peak_over_file": peak,
        "stages": stages,
        "targets": {
            "speedup": SPEEDUP_TARGET,
            "peak_over_file": MEMORY_TARGET,
            "report_over_summary": REPORT_TARGET,
        },
    }
    print(
        f"tracereader summary: median {median:.2f} s of {len(ours)} runs; "
        f"peak memory {peak:.2f}x the file (worst run)"
    )
    print("where one summary run's time goes (in-process timers):")
    for stage, seconds in stages["stages"].items():
        print(f"  {seconds:6.3f} s  {stage}")
        if stage.startswith("load: decode"):
            print("           of which in this process (its share of the pieces):")
            for part, part_seconds in stages["decode_detail"].items():
                print(f"           {part_seconds:6.3f} s  {part}")
    outside = stages["wall_seconds"] - stages["inside_seconds"]
    print(f"  {outside:6.3f} s  start-up and exit (this run's wall time minus the rest)")
    print(f"  {stages['wall_seconds']:6.3f} s  in all (this run)")
    failures = []
    report = runs["tracereader report"]
    if any(run.pop("status") != 0 for run in report):
        raise SystemExit(f"bench: `tracereader report` failed on {target.name}")
    for run in report:
        run.pop("stdout", None)
    report_ratio = statistics.median(run["seconds"] for run in report) / median
    results.update(report_runs=report, report_over_summary=report_ratio)
    print(
        f"tracereader report: median {statistics.median(r['seconds'] for r in report):.2f} s, "
        f"{report_ratio:.2f}x summary's (target <= {REPORT_TARGET:g}x)"
    )
    if report_ratio > REPORT_TARGET:
        failures.append(f"report {report_ratio:.2f}x summary's time > {REPORT_TARGET:g}x")
    if not opts.skip_hta:
        hta = runs["HTA TraceAnalysis"]
        hta_median = statistics.median(run["seconds"] for run in hta)
        speedup = hta_median / median
        results.update(
            hta_runs=hta,
            hta_median_seconds=hta_median,
            speedup_median=speedup,
            hta_peak_over_file=max(run["peak_rss_bytes"] for run in hta) / size,
        )
        print(
            f"HTA TraceAnalysis: median {hta_median:.2f} s of {len(hta)} runs; peak memory "
            f"{results['hta_peak_over_file']:.2f}x the file (worst run)\n"
            f"speed-up (median HTA / median tracereader): {speedup:.1f}x "
            f"(target >= {SPEEDUP_TARGET:g}x)"
        )
        if speedup < SPEEDUP_TARGET:
            failures.append(f"median speed-up {speedup:.1f}x < {SPEEDUP_TARGET:g}x")
    if peak > MEMORY_TARGET:
        failures.append(f"peak memory {peak:.2f}x the file > {MEMORY_TARGET:g}x")
    results["failures"] = failures
    (DATA / "results.json").write_text(json.dumps(results, indent=2))
    print(f"wrote {(DATA / 'results.json').relative_to(ROOT)}")
    if failures:
        print(f"bench: target missed: {'; '.join(failures)}", file=sys.stderr)
        return 1
    checked = "report and memory" if opts.skip_hta else "speed-up, report and memory"
    print(f"bench: {checked} targets met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
