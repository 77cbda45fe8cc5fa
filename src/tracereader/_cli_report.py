"""``tracereader report``: one trace or folder, or a trace ``--against`` another.

The command line's body; :mod:`tracereader.cli` declares the arguments and
dispatches here. The HTML comes from :mod:`tracereader._report` (one trace or
a folder) and :mod:`tracereader._diff_html` (two traces).
"""

from __future__ import annotations

import argparse
import os

from ._errors import UserError

__all__ = ["report_command"]

_PEAKS = ("peak_tflops", "peak_tbs", "bytes_per_step")


def _html(args: argparse.Namespace) -> str:
    if args.against is not None:
        from ._diff_html import diff_report

        given = [f"--{n.replace('_', '-')}" for n in _PEAKS if getattr(args, n) is not None]
        if given:
            raise UserError(f"{', '.join(given)}: for one trace's report, not with --against")
        if os.path.isdir(args.file):
            raise UserError(f"{args.file}: --against compares two trace files, not a folder")
        return diff_report(args.file, args.against, keep_first=args.keep_first)
    from ._report import Peaks, report

    if args.keep_first:
        raise UserError("--keep-first applies with --against OTHER")
    for name in _PEAKS:
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UserError(f"--{name.replace('_', '-')} must be a positive number")
    peaks = Peaks(args.peak_tflops, args.peak_tbs, args.bytes_per_step)
    return report(args.file, peaks, draw=not args.no_picture)


def report_command(args: argparse.Namespace) -> int:
    """Write the report (or the diff) to ``args.output``; the exit status."""
    text = _html(args)
    output = args.output or ("diff.html" if args.against is not None else "report.html")
    try:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise UserError(f"cannot write {output}: {exc.strerror or exc}") from None
    print(f"wrote {output}")
    return 0
