"""The command line's error for bad input: one line on stderr, exit status 2."""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(Exception):
    """A problem with what the user asked for, reported in one line (exit status 2).

    Raised by :mod:`tracereader.cli` and :mod:`tracereader._render`; unreadable
    files raise :class:`~tracereader.TraceError` instead.
    """
