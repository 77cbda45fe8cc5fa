"""``tracereader``: read a torch.profiler trace from the command line.

::

    tracereader summary trace.json.gz            # what is in it, GPU busy, steps
    tracereader summary traces/                  # ranks: communication, stragglers
    tracereader summary decode.json.gz --bytes-per-step 15.03e9 --peak-tbs 4.8
    tracereader kernels trace.json.gz --step 2   # per-kernel times
    tracereader ops trace.json.gz --top 20       # self/total CPU and GPU time per op
    tracereader launches trace.json.gz           # launch latency per launch API
    tracereader gaps trace.json.gz               # GPU idle gaps and their CPU-side cause
    tracereader regions train.json.gz            # time per record_function region (forward, ...)
    tracereader compare eager.json.gz compiled.json.gz
    tracereader validate trace.json.gz           # what could mislead an analysis
    tracereader render trace.json.gz --out step.png --step 2
    tracereader report trace.json.gz -o report.html   # one self-contained HTML file
    tracereader report eager.json.gz --against compiled.json.gz -o diff.html  # two traces

Every subcommand takes ``--format text|json|markdown``; ``tracereader
--version`` prints the version. Bad input prints one line, ``tracereader:
<why>``, on stderr and exits with status 2. A table with no rows prints one
line saying why instead (JSON prints an empty list).

``summary`` gives each step a verdict from the GPU's idle time inside it (see
:class:`tracereader.StepTime`): ``GPU-bound`` when a GPU was busy for at least
95 % of the step's span, ``CPU-bound`` under 50 %, ``balanced`` in between.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from ._errors import UserError
from ._events import Trace
from ._load import TraceError, load

__all__ = ["main", "run"]


def _emit(obj: Any, fmt: str, empty: str = "") -> None:
    """Print ``obj`` in ``fmt``.

    A table without rows prints ``empty`` instead (one line saying why), except
    as JSON (an empty list).
    """
    if empty and fmt != "json" and hasattr(obj, "rows") and not obj.rows:
        print(empty)
        return
    if fmt == "json":
        text = obj.to_json(indent=2) if hasattr(obj, "to_json") else json.dumps(obj, indent=2)
    elif fmt == "markdown":
        text = obj.to_markdown()
    else:
        text = obj.to_text()
    print(text)


def _load(path: str) -> Trace:
    return load(path)


def _version() -> str:
    """The installed distribution's version; the package's own when not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tracereader")
    except PackageNotFoundError:
        from . import __version__

        return __version__


def _no_gpu(trace: Trace) -> bool:
    from ._link import link

    return not len(link(trace).gpu_ops)


def _why_empty(trace: Trace, step: int | None, what: str, launched: bool = True) -> str:
    """One line for a table without rows: no GPU activity at all, or none of ``what``.

    ``launched``: ``what`` are GPU ops, which belong to the step that launched them.
    """
    from ._measure import NO_GPU_ACTIVITY

    if what != "CPU op" and _no_gpu(trace):
        return NO_GPU_ACTIVITY
    if step is None:
        return f"no {what} in this trace"
    return f"no {what} {'launched ' * launched}in ProfilerStep#{step}"


def _window(trace: Trace, step: int | None) -> tuple[int, int] | None:
    if step is None:
        return None
    try:
        s = trace.step(step)
    except KeyError as exc:
        raise UserError(str(exc.args[0])) from None
    return (s.start_ns, s.end_ns)


# ---------------------------------------------------------------- subcommands
def _summary(args: argparse.Namespace) -> int:
    if len(args.file) > 1 or os.path.isdir(args.file[0]):
        return _summary_ranks(args)
    from ._cli_summary import summary_one

    return summary_one(args)


def _summary_ranks(args: argparse.Namespace) -> int:
    from ._cli_summary import summary_repeats
    from ._overview import ranks_or_repeats
    from ._ranks import _expand, rank_summary, ranks_of

    loaded = [(path, load(path)) for path in _expand(args.file)]
    are_ranks, why = ranks_or_repeats({str(path): trace for path, trace in loaded})
    if not are_ranks:  # repeats of one run, or unrelated runs: one summary each
        return summary_repeats(args, {str(path): trace for path, trace in loaded}, why)
    if args.bytes_per_step is not None or args.peak_tbs is not None:
        raise UserError("--bytes-per-step and --peak-tbs take one trace, not several ranks")
    _emit(rank_summary(ranks_of(loaded), drop_last_step=args.drop_last_step), args.format)
    return 0


def _kernels(args: argparse.Namespace) -> int:
    from ._tables import kernel_table

    trace = _load(args.file)
    table = kernel_table(trace, _window(trace, args.step), top=args.top)
    _emit(table, args.format, empty=_why_empty(trace, args.step, "GPU op"))
    return 0


def _ops(args: argparse.Namespace) -> int:
    from ._tables import op_table

    trace = _load(args.file)
    table = op_table(trace, _window(trace, args.step), top=args.top, sort=args.sort)
    _emit(table, args.format, empty=_why_empty(trace, args.step, "CPU op", launched=False))
    return 0


def _launches(args: argparse.Namespace) -> int:
    from ._measure import launches
    from ._tables import Table

    trace = _load(args.file)
    lt = launches(trace, _window(trace, args.step))
    if args.ops:
        recs = lt.to_records()
        cols = ["name", "api", "op", "step", "launch_to_start_us", "queue_delay_us", "call_us",
                "graph"]  # fmt: skip
        table = Table(cols, [[r[c] for c in cols] for r in recs], "Launch latency per GPU op")
    else:
        recs = lt.by_api()
        cols = list(recs[0]) if recs else ["api"]
        table = Table(cols, [[r[c] for c in cols] for r in recs], "Launch latency per launch API "
                      "(one row per call; graph launches: first kernel)", name_columns=())  # fmt: skip
    what = "GPU op" if args.ops else "GPU op with a recorded launch call"
    _emit(table.head(args.top), args.format, empty=_why_empty(trace, args.step, what))
    return 0


def _gaps(args: argparse.Namespace) -> int:
    from ._gaps import CAUSES, gaps
    from ._tables import Table

    trace = _load(args.file)
    found = gaps(trace, _window(trace, args.step), min_gap_us=args.min_gap_us)
    total = sum(g.gap_us for g in found)
    by_cause = []
    for cause in CAUSES:
        mine = [g.gap_us for g in found if g.cause == cause]
        if mine:
            by_cause.append([cause, len(mine), sum(mine), 100 * sum(mine) / total])
    causes = Table(["cause", "gaps", "idle_us", "pct"], by_cause,
                   f"GPU idle gaps >= {args.min_gap_us:g} us by CPU-side cause", ())  # fmt: skip
    largest = sorted(found, key=lambda g: (-g.gap_us, g.start_ns))
    rows = [
        [round(float(trace.rel_us(g.start_ns)), 3), g.gap_us, g.device, g.cause,
         trace.name(g.cause_event) if g.cause_event >= 0 else "", trace.name(g.next_op)]
        for g in largest
    ]  # fmt: skip
    cols = ["start_us", "gap_us", "device", "cause", "cause_event", "next_gpu_op"]
    detail = Table(cols, rows, "Largest gaps", ("next_gpu_op",), 40, 40).head(args.top)
    if not found and args.format != "json":
        print(_why_empty(trace, args.step, f"GPU idle gap >= {args.min_gap_us:g} us", False))
    elif args.format == "json":
        print(json.dumps({"by_cause": causes.to_records(),
                          "gaps": [g.to_dict(trace) for g in largest[: args.top or None]]},
                         indent=2))  # fmt: skip
    elif args.format == "markdown":
        print(causes.to_markdown() + "\n\n" + detail.to_markdown())
    else:
        print(causes.to_text() + "\n\n" + detail.to_text())
    return 0


def _regions(args: argparse.Namespace) -> int:
    from ._regions import region_table

    trace = _load(args.file)
    names = [n for n in args.name.split(",") if n] if args.name else None
    table = region_table(trace, names, _window(trace, args.step))
    if names and not len(table):
        raise UserError(f"no region named {', '.join(names)} in {args.file}")
    where = f"in ProfilerStep#{args.step}" if args.step is not None else "in this trace"
    why = f"no record_function region {where}: add one with torch.profiler.record_function(name)"
    _emit(table.head(args.top), args.format, empty=why)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ._tables import compare

    if "," not in args.labels:
        raise UserError("--labels takes two names separated by a comma, e.g. eager,compiled")
    first, second = args.labels.split(",", 1)
    table = compare(_load(args.a), _load(args.b), (first, second), skip_first=args.skip_first)
    _emit(table, args.format)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from ._validate import validate

    findings = validate(_load(args.file))
    if args.format == "json":
        recs = [{"level": f.level, "check": f.check, "message": f.message} for f in findings]
        print(json.dumps(recs, indent=2))
    elif args.format == "markdown":
        print("\n".join(f"- **{f.level}** {f.message}" for f in findings))
    else:
        print("\n".join(f"{f.level:<5}  {f.message}" for f in findings))
    return 1 if any(f.level == "error" for f in findings) else 0


def _render(args: argparse.Namespace) -> int:
    from . import _render as render

    parser = argparse.ArgumentParser(prog="tracereader render", description="Draw a trace window.")
    render.add_arguments(parser)
    return int(render.run(parser.parse_args(args.rest)))


def _report(args: argparse.Namespace) -> int:
    from ._cli_report import report_command

    return report_command(args)


# ---------------------------------------------------------------- parser
def _parser() -> argparse.ArgumentParser:
    from ._cli_summary import summary_epilog
    from ._gaps import CAUSES_HELP

    parser = argparse.ArgumentParser(
        prog="tracereader", description="Read torch.profiler (Kineto) trace files."
    )
    parser.add_argument("--version", action="version", version=f"tracereader {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str,
        func: Callable[[argparse.Namespace], int],
        help: str,
        *,
        step: bool = True,
        top: bool = True,
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        if name == "summary":
            p.add_argument("file", nargs="+", help="trace file, or a directory or several files: "
                           "ranks of one job (told by distributedInfo.rank or by each trace's "
                           "own GPU) get the rank view, repeats of one run a summary each")  # fmt: skip
        elif name == "compare":
            p.add_argument("a", help="first trace (.json or .json.gz)")
            p.add_argument("b", help="second trace")
        else:
            p.add_argument("file", help="trace file (.json or .json.gz)")
        p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
        if step:
            p.add_argument("--step", type=int, help="only ProfilerStep#N (GPU ops by launch)")
        if top:
            p.add_argument("--top", type=int, default=None, help="only the first N rows")
        p.set_defaults(func=func)
        return p

    p = add("summary", _summary, "What the trace holds: GPU ops, launch paths, busy time, steps",
            step=False, top=False)  # fmt: skip
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = summary_epilog()
    p.add_argument("--bytes-per-step", type=float, default=None, metavar="BYTES",
                   help="bytes each step must read (an LLM decode token: its weights and KV cache);"
                        " adds the rate they were read at while the step's GPU ops ran (TB/s)")  # fmt: skip
    p.add_argument(
        "--peak-tbs",
        type=float,
        default=None,
        metavar="TBS",
        help="the GPU's memory bandwidth (TB/s); adds that rate as a fraction of it",
    )
    p.add_argument(
        "--drop-last-step",
        action="store_true",
        help="several ranks: leave out the last step and what it launched (as HTA)",
    )
    add("kernels", _kernels, "Per-kernel calls and durations (us)")
    p = add("ops", _ops, "Per-op self/total CPU and GPU time (us), from the trace")
    p.add_argument("--sort", default="total_gpu_us",
                   choices=("self_cpu_us", "total_cpu_us", "self_gpu_us", "total_gpu_us", "calls"))  # fmt: skip
    p = add("launches", _launches, "Launch latency: launch-to-start, queue delay, call cost")
    p.add_argument("--ops", action="store_true", help="one row per GPU op instead of per API")
    p = add("gaps", _gaps, "GPU idle gaps and what the launching CPU thread was doing")
    p.add_argument("--min-gap-us", type=float, default=1.0, help="ignore shorter gaps")
    p.formatter_class, p.epilog = argparse.RawDescriptionHelpFormatter, CAUSES_HELP
    p.set_defaults(top=20)
    p = add(
        "regions", _regions, "Time per record_function region: CPU time open, GPU work launched"
    )
    p.add_argument("--name", default=None, help="only these regions, comma-separated "
                   "(default: every outermost region)")  # fmt: skip
    p = add("compare", _compare, "Compare two traces per step (means; every step counts unless "
            "--skip-first)", step=False, top=False)  # fmt: skip
    p.add_argument("--labels", default="eager,compiled", help="two names, comma-separated")
    p.add_argument("--skip-first", action="store_true", help="leave out each trace's first "
                   "(warm-up) step, when both have more than one; by default every step counts, "
                   "and a cold first step weighs on the means")  # fmt: skip
    add("validate", _validate, "Check what could mislead an analysis (exit 1 on errors)",
        step=False, top=False)  # fmt: skip
    p = sub.add_parser("report", help="One self-contained HTML report of a trace or a folder, "
                       "or of a trace against another (--against)",
                       description="Write one self-contained HTML report (overview, kernels and "
                       "ops, the slowest step, what to look at next; ranks of a folder). With "
                       "--against OTHER: the diff of two traces of the same code (time per step "
                       "by kind, kernel classes, the kernels and ops that changed most), steps "
                       "paired in order and the first (warm-up) step left out.")  # fmt: skip
    p.add_argument("file", help="trace file, or a folder of traces (ranks or repeats); with "
                   "--against: the baseline trace (A)")  # fmt: skip
    p.add_argument("-o", "--output", default=None, help="where to write the HTML (default: "
                   "report.html, or diff.html with --against)")  # fmt: skip
    p.add_argument("--against", default=None, metavar="OTHER", help="compare the trace with "
                   "OTHER (B): every difference is B - A, and is called a change only where it "
                   "beats the spread of the per-step values")  # fmt: skip
    p.add_argument("--keep-first", action="store_true", help="with --against: keep each trace's "
                   "first step (by default it is left out, as a cold warm-up step distorts a "
                   "comparison, when both traces have more than one)")  # fmt: skip
    p.add_argument("--peak-tflops", type=float, default=None, metavar="TFLOPS",
                   help="the GPU's peak arithmetic rate, for achieved against peak")  # fmt: skip
    p.add_argument("--peak-tbs", type=float, default=None, metavar="TBS",
                   help="the GPU's memory bandwidth (TB/s)")  # fmt: skip
    p.add_argument("--bytes-per-step", type=float, default=None, metavar="BYTES",
                   help="bytes each step must read: adds the read rate per step (TB/s)")  # fmt: skip
    p.add_argument("--no-picture", action="store_true", help="leave out the timeline picture")
    p.set_defaults(func=_report)
    p = sub.add_parser("diff", help="The HTML diff of two traces (report A --against B)",
                       description="Write the diff of two traces of the same code as one "
                       "self-contained HTML page: the same as `report A --against B`.")  # fmt: skip
    p.add_argument("file", help="the baseline trace (A)")
    p.add_argument("against", metavar="other", help="the trace compared with it (B)")
    p.add_argument("-o", "--output", default=None, help="where to write it (default: diff.html)")
    p.add_argument("--keep-first", action="store_true", help="keep each trace's first step")
    p.set_defaults(func=_report, peak_tflops=None, peak_tbs=None, bytes_per_step=None)
    r = sub.add_parser("render", help="Draw a trace window to PNG/SVG (needs matplotlib)",
                       add_help=False)  # fmt: skip
    r.add_argument("rest", nargs=argparse.REMAINDER)
    r.set_defaults(func=_render)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 validation errors, 2 bad input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["render"]:  # its options belong to _render, parsed there
            return _render(argparse.Namespace(rest=argv[1:]))
        args = _parser().parse_args(argv)
        return int(args.func(args))
    except SystemExit as exc:  # argparse: usage errors and --help
        return exc.code if isinstance(exc.code, int) else 2
    except (TraceError, UserError) as exc:
        print(f"tracereader: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tracereader ... | head`
        return 0


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())


if __name__ == "__main__":
    run()
