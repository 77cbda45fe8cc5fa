"""Re-record the examples on a machine with a CUDA GPU.

Each example's variants are recorded as independent repeats (see
``docs/_ext/tracesite/recorder.py`` for the plan: a fresh process for every
cold-start variant, one shared fresh process per repeat for the others) into
``docs/recordings/<example>/<variant>/r<k>/``. Needs only torch and this
repository (no nox, no Sphinx). With several GPUs visible it records several
examples at once, each on a GPU of its own (``CUDA_VISIBLE_DEVICES`` set per
example), the longest first by the wall times its last recordings stamped::

    python scripts/record.py                   # every example
    python scripts/record.py 01_matmul_add     # one example
    python scripts/record.py --repeats 5       # more repeats
    python scripts/record.py --gpus 1          # one example at a time, on the first GPU
    python scripts/record.py --tests           # also the traces under tests/data/h200
"""

from __future__ import annotations

import argparse
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from tracesite._source import RecordingError  # noqa: E402
from tracesite.recorder import DEFAULT_REPEATS, record_example  # noqa: E402
from tracesite.recordings import iter_recordings  # noqa: E402

#: Seconds a fresh recording process takes to start (torch, CUDA) and finish, on an H200.
PROCESS_START_S = 6.0


def last_wall_s(example: str) -> float:
    """About how long the example's last recording took: the harness times its
    recordings stamped, plus ``PROCESS_START_S`` for each fresh process (0 when it has
    none). The order of a parallel recording."""
    total = 0.0
    for rec in iter_recordings():
        if rec.example == example and "wall_s" in rec.env:
            shared_by = len(rec.meta.get("process", {}).get("variants_in_it", [])) or 1
            total += float(rec.env["wall_s"]) + PROCESS_START_S / shared_by
    return total


def record_in_parallel(scripts: list[Path], gpus: list[str], repeats: int) -> int:
    """Record each example in a child ``record.py`` on one GPU of its own, as many at a
    time as there are GPUs, the longest first; return how many failed."""
    todo: queue.Queue[Path] = queue.Queue()
    for script in sorted(scripts, key=lambda s: -last_wall_s(s.stem)):
        todo.put(script)
    failed: list[str] = []
    lock = threading.Lock()

    def worker(gpu: str) -> None:
        while True:
            try:
                script = todo.get_nowait()
            except queue.Empty:
                return
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
            done = subprocess.run(
                [sys.executable, __file__, script.stem, "--repeats", str(repeats), "--gpus", "1"],
                env=env, capture_output=True, text=True,
            )
            with lock:
                print(f"-- GPU {gpu}: {script.name}", flush=True)
                print(done.stdout, end="", flush=True)
                print(done.stderr, end="", file=sys.stderr, flush=True)
                if done.returncode != 0:
                    failed.append(script.name)

    threads = [threading.Thread(target=worker, args=(gpu,)) for gpu in gpus]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(failed)


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
                        help="record this many examples at once, one per GPU; default: every GPU")
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
    gpus = visible_gpus(min(args.gpus or torch.cuda.device_count(), len(scripts)))
    start = time.perf_counter()
    if len(gpus) > 1:
        print(f"== {len(scripts)} examples on {len(gpus)} GPUs at once", flush=True)
        failed = record_in_parallel(scripts, gpus, args.repeats)
    else:
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
    if len(scripts) > 1:
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
