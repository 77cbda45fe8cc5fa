"""``tracereader render``: draw a trace window to a PNG or SVG file.

The CLI module registers this as a subcommand::

    sub = subparsers.add_parser("render", help=...)
    _render.add_arguments(sub)
    sub.set_defaults(func=_render.run)

Examples
--------
::

    tracereader render trace.json.gz --out step2.png --step 2
    tracereader render trace.json.gz --out fwd.svg --region forward
    tracereader render trace.json.gz --out zoom.png --window 1200 1450 --python

Errors (no such file, not a trace, no such step, no matplotlib) print one
line on stderr and return 2; there is never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from ._errors import UserError

__all__ = ["add_arguments", "run"]

FORMATS = (".png", ".svg", ".pdf")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``render`` options to an argparse (sub)parser."""
    parser.add_argument("file", help="trace file (.json or .json.gz)")
    parser.add_argument(
        "--out",
        "-o",
        required=True,
        help="image to write; the suffix picks the format (.png, .svg, .pdf)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--step", type=int, metavar="N", help="draw ProfilerStep#N")
    which.add_argument(
        "--region", metavar="NAME", help="draw the first record_function range called NAME"
    )
    which.add_argument(
        "--window",
        nargs=2,
        type=float,
        metavar=("T0", "T1"),
        help="draw from T0 to T1, in µs from the start of the trace",
    )
    parser.add_argument(
        "--python", action="store_true", help="also draw Python frames (traces taken with_stack)"
    )
    parser.add_argument("--no-arrows", action="store_true", help="leave out launch arrows")
    parser.add_argument("--no-gaps", action="store_true", help="leave out GPU idle shading")
    parser.add_argument("--title", help="title above the picture")
    parser.add_argument("--width", type=float, default=12.0, help="width in inches (default 12)")
    parser.add_argument(
        "--dpi", type=int, default=150, help="resolution of PNG output (default 150)"
    )


def run(args: argparse.Namespace) -> int:
    """Render the requested window; print the image path and its alt text.

    Returns
    -------
    int
        0 on success, 2 on a user error (message on stderr).
    """
    try:
        return _run(args)
    except UserError as exc:
        print(f"tracereader render: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from ._load import TraceError, load

    out = Path(args.out)
    if out.suffix.lower() not in FORMATS:
        raise UserError(f"--out {out}: use a .png, .svg or .pdf file name")
    if args.dpi <= 0 or args.width <= 0:
        raise UserError("--dpi and --width must be positive")
    from ._draw import alt_text, timeline

    try:  # _draw imports matplotlib only when it draws: check it is there first
        importlib.import_module("matplotlib")
    except ImportError:
        raise UserError(
            "drawing needs matplotlib: pip install 'tracereader[draw]' "
            "(or pip install matplotlib, for the wheel from the site)"
        ) from None
    try:
        trace = load(args.file)
    except TraceError as exc:
        raise UserError(str(exc)) from None

    window = None
    if args.window is not None:
        t0_us, t1_us = args.window
        if t1_us <= t0_us:
            raise UserError(f"--window {t0_us:g} {t1_us:g}: T1 must be after T0")
        window = (trace.t0_ns + round(t0_us * 1e3), trace.t0_ns + round(t1_us * 1e3))
    try:
        fig = timeline(
            trace,
            window,
            step=args.step,
            region=args.region,
            python=args.python,
            arrows=not args.no_arrows,
            gaps=not args.no_gaps,
            title=args.title,
            width_in=args.width,
        )
    except KeyError as exc:
        raise UserError(exc.args[0] if exc.args else "not found") from None
    except ValueError as exc:
        raise UserError(str(exc)) from None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=args.dpi, metadata=_metadata(out, alt_text(fig)))
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(out)
    print(alt_text(fig))
    return 0


def _metadata(out: Path, alt: str) -> dict[str, str]:
    """Embed the alt text in the image where the format has a place for it."""
    suffix = out.suffix.lower()
    if suffix == ".png":
        return {"Description": alt, "Software": "tracereader"}
    if suffix == ".svg":
        return {"Description": alt}
    return {"Subject": alt}
