"""Two pieces of work at once: one in a forked helper process, one here.

The report's sections are independent functions of a loaded trace; on a
machine with two cores, drawing the pictures (matplotlib) in a helper while
this process works out the rest shortens the wait by most of the shorter of
the two. The helper is forked (it shares the trace's columns, copy on write)
and sends its result back pickled through a pipe, as the loader's decode
helpers do (:mod:`tracereader._fast`).

Forking is used on Linux from a process with a single Python thread (not in
Jupyter, not under a threaded test runner); elsewhere, and whenever the helper
fails, its work runs here afterwards, with the same result.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["can_fork", "side_by_side"]

_A = TypeVar("_A")
_B = TypeVar("_B")


def can_fork() -> bool:
    """Whether a helper may be forked here: Linux, one Python thread, two CPUs or more."""
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return False
    return len(os.sched_getaffinity(0)) > 1


def side_by_side(there: Callable[[], _A], here: Callable[[], _B]) -> tuple[_A, _B]:
    """``(there(), here())``, ``there`` running in a forked helper meanwhile where possible.

    ``there``'s result must pickle. Neither may depend on what the other
    leaves behind (caches it fills, say): each sees the state from before.
    """
    if not can_fork():
        return there(), here()
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # see _fast._fork
        pid = os.fork()
    if not pid:  # the helper: work, send, and leave without any cleanup
        try:
            # It lives only until it sends: no cyclic garbage collection (each
            # pass over the new objects, matplotlib's at import, costs time and
            # writes to pages it shares with this process).
            gc.disable()
            os.close(read_fd)
            message: tuple[str, Any]
            try:
                message = ("ok", there())
            except BaseException:  # the parent runs it again, and meets what it raises
                message = ("failed", None)
            with os.fdopen(write_fd, "wb") as pipe:
                pickle.dump(message, pipe, protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        mine = here()
    except BaseException:
        os.close(read_fd)  # the helper's write fails, and it exits
        os.waitpid(pid, 0)
        raise
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            status, value = pickle.load(pipe)
    except Exception:  # a helper that died: its work is done here
        status, value = "failed", None
    os.waitpid(pid, 0)
    return (value if status == "ok" else there()), mine
