"""tracereader._fork: work split between a forked helper and this process."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from tracereader._fork import can_fork, side_by_side

FORKED = """
import os, sys
from tracereader._fork import can_fork, side_by_side
assert can_fork()
parent = os.getpid()
there, here = side_by_side(lambda: ("there", os.getpid()), lambda: ("here", os.getpid()))
assert there[0] == "there" and there[1] != parent, there  # ran in the helper
assert here == ("here", parent)
def fails():
    raise ValueError("boom")
try:
    side_by_side(fails, lambda: 1)  # the helper fails: run again here, and raise here
except ValueError as exc:
    assert str(exc) == "boom"
else:
    raise AssertionError("no ValueError")
print("ok")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="helpers are forked on Linux")
def test_the_helper_runs_in_another_process_and_failures_come_back():
    import os

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no helper")
    done = subprocess.run([sys.executable, "-c", FORKED], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_with_another_thread_both_run_here():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not can_fork()
        assert side_by_side(lambda: 1, lambda: 2) == (1, 2)
    finally:
        stop.set()
        thread.join()
