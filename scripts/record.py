"""Re-record the examples on a machine with a CUDA GPU.

Each example's variants are recorded as independent repeats (see
``docs/_ext/tracesite/recorder.py`` for the plan: a fresh process for every
cold-start variant, one shared fresh process per repeat for the others) into
``docs/recordings/<example>/<variant>/r<k>/``. Needs only torch and this
repository (no nox, no Sphinx). With several GPUs visible it runs one recording
process per GPU at a time (``CUDA_VISIBLE_DEVICES`` set per process), all the
examples' processes from one queue, the longest first by the wall times the last
recordings stamped::

    python scripts/record.py                   # every example
    python scripts/record.py 01_matmul_add     # one example
    python scripts/record.py --repeats 5       # more repeats
    python scripts/record.py --gpus 1          # one process at a time, on the first GPU
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
from tracesite.recorder import DEFAULT_REPEATS, record_examples  # noqa: E402


def visible_gpus(count: int) -> list[str]:
    """The ids to put in CUDA_VISIBLE_DEVICES for each of the ``count`` visible GPUs."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [g.strip() for g in given.split(",") if g.strip()] if given else []
    return ids[:count] if len(ids) >= count else [str(i) for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="*", help="example stems; default: all")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--gpus", type=int, default=0,
                        help="run this many recording processes at once, one per GPU; default: every GPU")
    parser.add_argument("--limit-s", type=float, default=540,
                        help="fail a recording process that runs longer than this (default 540)")
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
    gpus = visible_gpus(args.gpus or torch.cuda.device_count())
    start = time.perf_counter()
    print(f"== {len(scripts)} example(s), {args.repeats} repeats, on {len(gpus)} GPU(s)", flush=True)
    try:
        took = record_examples(scripts, repeats=args.repeats, gpus=gpus if len(gpus) > 1 else None,
                               limit_s=args.limit_s)
    except RecordingError as exc:
        print(f"record: {exc}", file=sys.stderr)
        return 1
    failed = 0
    for name, result in took.items():
        if isinstance(result, RecordingError):
            print(f"record: {result}", file=sys.stderr)
            failed += 1
        else:
            print(f"== {name}: {result['variants']} variants x {result['repeats']} repeats in "
                  f"{result['processes']} processes, {result['busy_s']} s of process time", flush=True)
    print(f"== recorded {len(scripts) - failed} of {len(scripts)} examples in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
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
