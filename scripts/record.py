"""Re-record the examples on a machine with a CUDA GPU.

Each example's variants are recorded as independent repeats (see
``docs/_ext/tracesite/recorder.py`` for the plan: a fresh process for every
cold-start variant, one shared fresh process per repeat for the others) into
``docs/recordings/<example>/<variant>/r<k>/``. Needs only torch and this
repository (no nox, no Sphinx), and records one example per call, so that each
call stays within a few minutes::

    python scripts/record.py                   # every example
    python scripts/record.py 01_matmul_add     # one example
    python scripts/record.py --repeats 5       # more repeats
    python scripts/record.py --tests           # also the traces under tests/data/h200
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from tracesite._source import RecordingError  # noqa: E402
from tracesite.recorder import DEFAULT_REPEATS, record_example  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", help="example stems; default: all")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
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
    scripts = sorted((ROOT / "examples").glob("[0-9][0-9]_*.py"))
    if args.examples:
        unknown = set(args.examples) - {s.stem for s in scripts}
        if unknown:
            print(f"record: no example named {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        scripts = [s for s in scripts if s.stem in args.examples]
    failed = 0
    for script in scripts:
        print(f"== {script.name}: {args.repeats} repeats", flush=True)
        try:
            took = record_example(script, repeats=args.repeats)
        except RecordingError as exc:
            print(f"record: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"== {script.name}: {took['variants']} variants x {took['repeats']} repeats in "
              f"{took['processes']} processes, {took['wall_s']} s", flush=True)
    if args.tests:
        start = time.perf_counter()
        env = dict(os.environ, KINETO_LOG_LEVEL="6", PYTHONPATH=str(ROOT / "src"))
        rc = subprocess.run([sys.executable, str(ROOT / "tests" / "data" / "make_h200_traces.py")],
                            cwd=ROOT, env=env).returncode
        print(f"== tests/data/h200: exit {rc} in {time.perf_counter() - start:.1f} s", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
