"""Re-record every example (and the test traces) on a GPU machine.

Runs each ``examples/NN_*.py`` as a plain script with ``TRACEREADER_RECORD=1``,
so every ``run_or_replay`` call in it profiles live and replaces its bundled
recording under ``src/tracereader/recordings/``. Needs only torch and this
repository (no nox, no Sphinx)::

    python scripts/record.py                 # every example
    python scripts/record.py 01_matmul_add   # one example
    python scripts/record.py --tests         # also the traces under tests/data/h200
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", help="example stems; default: all")
    parser.add_argument("--tests", action="store_true", help="also record tests/data/h200")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("record: torch is not installed here", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("record: no CUDA device here; recordings left unchanged", file=sys.stderr)
        return 2
    env = dict(os.environ, TRACEREADER_RECORD="1", KINETO_LOG_LEVEL="6", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    scripts = sorted((ROOT / "examples").glob("[0-9][0-9]_*.py"))
    if args.examples:
        scripts = [s for s in scripts if s.stem in args.examples]
    jobs = [[sys.executable, str(s)] for s in scripts]
    if args.tests:
        jobs.append([sys.executable, str(ROOT / "tests" / "data" / "make_h200_traces.py")])
    failed = 0
    for job in jobs:
        start = time.perf_counter()
        print(f"== {Path(job[1]).name}", flush=True)
        rc = subprocess.run(job, cwd=ROOT / "examples", env=env).returncode
        print(f"== {Path(job[1]).name}: exit {rc} in {time.perf_counter() - start:.1f} s", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
