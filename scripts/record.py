"""Re-record the examples on a machine with a CUDA GPU.

Each example's variants are recorded as independent repeats (see
``docs/_ext/tracesite/recorder.py`` for the plan: a fresh process for every
cold-start variant, one shared fresh process per repeat for the others) into
``docs/recordings/<gpu>/<example>/<variant>/r<k>/``, ``<gpu>`` the GPU's slug
(``h200``, ``h100``: ``tracesite.recordings.gpu_slug``). Needs only torch and this
repository (no nox, no Sphinx). With several GPUs visible it runs one recording
process per GPU at a time (``CUDA_VISIBLE_DEVICES`` set per process), all the
examples' processes from one queue, the longest first by the wall times the last
recordings stamped::

    python scripts/record.py                   # every example
    python scripts/record.py 01_matmul_add     # one example
    python scripts/record.py --repeats 5       # more repeats
    python scripts/record.py --gpus 1          # one process at a time, on the first GPU
    python scripts/record.py --tests           # also the traces under tests/data/h200
    python scripts/record.py 05_llm_decode --variants loop_untuned_8b,logits_check_8b
    python scripts/record.py --stale           # only variants whose code or settings changed
    python scripts/record.py --shard 2/4       # the 2nd of 4 balanced parts of the queue
    python scripts/record.py --older-than 2026-12-01T21:00 --max-min 8   # resume a full re-record
    python scripts/record.py --plan --shard 1/4   # what would run, and how long, without a GPU
    python scripts/record.py --plan --readme   # the full plan, written into README.md
    python scripts/record.py --retrim          # apply KEEP_* trimming to the recordings (no GPU)
    python scripts/record.py --plan --stale --gpu h100   # what an H100 machine would record

``--stale`` re-records the variants with missing repeats or whose code hash (entry
function, all it reaches, and the settings ``VARIANTS`` gives it now) differs from their
recordings. ``--shard K/N`` splits the queue of processes into N parts of about equal
length (by the wall times the last recordings stamped, longest first), so that N one-GPU
jobs together re-record everything; copying their ``docs/recordings`` over one another
merges them. ``--older-than T`` keeps only the variants with a repeat recorded before T
(UTC): a full re-record begun at T, resumed run after run until nothing is left, and
``--max-min M`` takes of those only as many as fit M minutes (by the stamped wall
times), so each run fits its time limit. ``--plan`` prints the queue and its estimated time on 1, 2, 4 and 8 GPUs. ``--retrim``
applies the plan's current trimming settings (``keep_steps``, ``keep_python_steps``,
``keep_regions`` in ``docs/recordings/plan.json``) to the recordings in place; it needs no
GPU and no torch.

A recording goes into the folder of the GPU it runs on. ``--gpu SLUG`` says which GPU's
recordings ``--plan``, ``--stale``, ``--older-than``, ``--max-min`` and ``--retrim``
consider (default: the GPU here, else ``h200``, the GPU the pages read); ``--plan``
estimates from that GPU's stamped wall times, and from another GPU's for the variants it
has not recorded (and says so). Recording with ``--gpu`` naming another GPU than the one
here is refused.
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

from tracesite._source import RecordingError, find_examples  # noqa: E402
from tracesite.recorder import (  # noqa: E402
    DEFAULT_REPEATS,
    estimate_s,
    load_example,
    past_walls_s,
    plan,
    record_examples,
    recorded_before,
    recording_gpu,
    shard_of,
    stale_variants,
    wall_sources,
    within_budget,
)  # fmt: skip
from tracesite.recordings import PRIMARY_GPU, plan_settings  # noqa: E402
from tracesite.retrim import retrim  # noqa: E402


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes K/N, e.g. 2/4, not {text!r}") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"--shard {text}: K must be between 1 and N")
    return k, n


def default_gpu() -> str:
    """The slug of the GPU here; without one (or without torch), the GPU the pages read."""
    try:
        import torch
    except ImportError:
        return PRIMARY_GPU
    return recording_gpu() if torch.cuda.is_available() else PRIMARY_GPU


def queue(
    scripts: list[Path], only: dict[str, list[str]] | None, repeats: int, gpu: str = PRIMARY_GPU
) -> list[tuple[float, str, list]]:
    """Every recording process: (estimated seconds, example, its (variant, repeat) jobs),
    in the order the recorder builds it (what --shard splits), estimated from ``gpu``'s
    stamped wall times (another GPU's where it has none, :func:`past_walls_s`)."""
    walls = past_walls_s(gpu=gpu)
    out = []
    for script in scripts:
        variants = load_example(script)
        chosen = list(variants) if only is None or script.stem not in only else only[script.stem]
        if not chosen:
            continue
        settings = plan_settings(script.stem)
        cold = tuple(c for c in settings["cold_variants"] if c in chosen)
        for jobs in plan({v: variants[v] for v in chosen}, cold, repeats):
            out.append((estimate_s(script.stem, jobs, walls), script.stem, jobs))
    return out


def borrowed_lines(todo: list[tuple[float, str, list]], gpu: str) -> list[str]:
    """One line per other GPU whose stamped wall times estimate variants of the queue that
    ``gpu`` has not recorded (none: every estimate is ``gpu``'s own, or a guess)."""
    sources = wall_sources(gpu=gpu)
    borrowed: dict[str, set[tuple[str, str]]] = {}
    for _, name, jobs in todo:
        for variant, _ in jobs:
            source = sources.get((name, variant), gpu)
            if source != gpu:
                borrowed.setdefault(source, set()).add((name, variant))
    return [
        f"({len(keys)} variant(s) not recorded on {gpu}: estimated from {other}'s stamps)"
        for other, keys in borrowed.items()
    ]


def plan_lines(
    todo: list[tuple[float, str, list]], shard: tuple[int, int] | None, gpu: str = PRIMARY_GPU
) -> list[str]:
    """The queue with its estimates on ``gpu``: per example, and the whole on 1, 2, 4 and
    8 GPUs; and which estimates come from another GPU's stamps."""
    lines = []
    if shard is not None:
        keep = set(shard_of([t[0] for t in todo], shard))
        todo = [t for i, t in enumerate(todo) if i in keep]
        lines.append(f"== shard {shard[0]}/{shard[1]}: {len(todo)} processes")
    per: dict[str, list[float]] = {}
    for est, name, _ in todo:
        per.setdefault(name, []).append(est)
    for name, ests in per.items():
        lines.append(
            f"{name:>16}  {len(ests):3d} processes  {sum(ests) / 60:6.1f} min  "
            f"(longest {max(ests):.0f} s)"
        )
    ests = [t[0] for t in todo]
    if shard is not None:
        lines.append(f"{'this shard':>16}  {sum(ests) / 60:6.1f} min on one GPU")
        return lines + borrowed_lines(todo, gpu)
    for n in (1, 2, 4, 8):
        span = (
            max(sum(ests[i] for i in shard_of(ests, (k, n))) for k in range(1, n + 1))
            if ests
            else 0
        )
        lines.append(
            f"{'on ' + str(n) + ' GPU' + ('s' if n > 1 else ''):>16}  {span / 60:6.1f} min "
            f"(the longest of {n} shard{'s' if n > 1 else ''})"
        )
    return lines + borrowed_lines(todo, gpu)


#: The README quotes the full plan between these lines (``--plan --readme`` rewrites it).
README_BEGIN, README_END = "<!-- record --plan: begin -->", "<!-- record --plan: end -->"


def write_readme(lines: list[str], readme: Path = ROOT / "README.md") -> None:
    """Put the plan into the README between its markers."""
    text = readme.read_text(encoding="utf-8")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    block = "\n```\n" + "\n".join(lines) + "\n```\n"
    readme.write_text(head + README_BEGIN + block + README_END + tail, encoding="utf-8")


def visible_gpus(count: int) -> list[str]:
    """The ids to put in CUDA_VISIBLE_DEVICES for each of the ``count`` visible GPUs."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [g.strip() for g in given.split(",") if g.strip()] if given else []
    return ids[:count] if len(ids) >= count else [str(i) for i in range(count)]


def announce(only: dict[str, list[str]], what: str) -> None:
    """One line per example: how many of its variants were chosen, and which."""
    for name, variants in only.items():
        print(f"== {name}: {len(variants)} {what}{': ' if variants else ''}{', '.join(variants)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "examples", nargs="*", help="example names (folders under examples/); default: all"
    )
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument(
        "--gpus",
        type=int,
        default=0,
        help="run this many recording processes at once, one per GPU; default: every GPU",
    )
    parser.add_argument(
        "--limit-s",
        type=float,
        default=540,
        help="fail a recording process that runs longer than this (default 540)",
    )
    parser.add_argument("--tests", action="store_true", help="also record tests/data/h200")
    parser.add_argument("--variants", help="comma-separated variant names (of the named examples)")
    parser.add_argument(
        "--stale",
        action="store_true",
        help="only variants with missing repeats or whose code or settings changed",
    )
    parser.add_argument(
        "--shard", type=parse_shard, help="K/N: the K-th of N balanced parts of the queue"
    )
    parser.add_argument(
        "--older-than",
        metavar="T",
        help="only variants with a repeat recorded before T (ISO 8601, UTC), or missing repeats",
    )
    parser.add_argument(
        "--max-min",
        type=float,
        metavar="M",
        help="of the chosen variants, only as many as fit M minutes of recording",
    )
    parser.add_argument(
        "--plan", action="store_true", help="print the queue and its estimated time; record nothing"
    )
    parser.add_argument(
        "--readme",
        action="store_true",
        help=f"with --plan: also write it into README.md (the plan on {PRIMARY_GPU})",
    )
    parser.add_argument(
        "--retrim",
        action="store_true",
        help="apply the trimming settings to the recordings; record nothing",
    )
    parser.add_argument(
        "--gpu",
        metavar="SLUG",
        help="whose recordings --plan, --stale, --older-than, --max-min and --retrim "
        f"consider (h200, h100, ...); default: the GPU here, else {PRIMARY_GPU}",
    )
    args = parser.parse_args(argv)
    # The README quotes the plan on the GPU the pages read, wherever it is written.
    gpu = args.gpu or (PRIMARY_GPU if args.readme else default_gpu())
    if args.readme and gpu != PRIMARY_GPU:
        print(f"record: --readme quotes the plan on {PRIMARY_GPU}, not {gpu}", file=sys.stderr)
        return 2
    if args.retrim:
        chosen = find_examples(ROOT / "examples")
        chosen = [s for s in chosen if not args.examples or s.stem in args.examples]
        for name, size in retrim(chosen, gpu=gpu).items():
            print(f"{name:>16}  {size / 1e6:5.2f} MB of traces")
        return 0
    try:
        import torch
    except ImportError:
        print("record: torch is not installed here", file=sys.stderr)
        return 2
    scripts = find_examples(ROOT / "examples")
    if args.examples:
        unknown = set(args.examples) - {s.stem for s in scripts}
        if unknown:
            print(f"record: no example named {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        scripts = [s for s in scripts if s.stem in args.examples]
    only: dict[str, list[str]] | None = None
    if args.variants:
        names = [v for v in args.variants.split(",") if v]
        only = {}
        for script in scripts:
            have = load_example(script)
            only[script.stem] = [v for v in names if v in have]
        missing = set(names) - {v for vs in only.values() for v in vs}
        if missing:
            print(
                f"record: no variant named {', '.join(sorted(missing))} in "
                f"{', '.join(s.stem for s in scripts)}",
                file=sys.stderr,
            )
            return 2
    if args.stale:
        only = {
            s.stem: [
                v
                for v in stale_variants(s, repeats=args.repeats, gpu=gpu)
                if only is None or v in only[s.stem]
            ]
            for s in scripts
        }
        announce(only, "stale variant(s)")
    if args.older_than:
        only = {
            s.stem: [
                v
                for v in recorded_before(s, args.older_than, repeats=args.repeats, gpu=gpu)
                if only is None or v in only[s.stem]
            ]
            for s in scripts
        }
    if args.max_min is not None:
        names = {s.stem: list(load_example(s)) if only is None else only[s.stem] for s in scripts}
        only = within_budget(names, args.max_min * 60, past_walls_s(gpu=gpu), args.repeats)
    if args.older_than or args.max_min is not None:
        announce(only or {}, "variant(s)")
    if args.plan:
        lines = plan_lines(queue(scripts, only, args.repeats, gpu), args.shard, gpu)
        print("\n".join(lines))
        if args.readme:
            write_readme(lines)
        return 0
    if not torch.cuda.is_available():
        print("record: no CUDA device here; recordings left unchanged", file=sys.stderr)
        return 2
    if gpu != recording_gpu():
        print(
            f"record: --gpu {gpu}, but the GPU here is {recording_gpu()}: a recording goes into "
            "the folder of the GPU it runs on; recordings left unchanged",
            file=sys.stderr,
        )
        return 2
    gpus = visible_gpus(args.gpus or torch.cuda.device_count())
    start = time.perf_counter()
    print(
        f"== {len(scripts)} example(s), {args.repeats} repeats, on {len(gpus)} GPU(s) "
        f"into docs/recordings/{gpu}/",
        flush=True,
    )
    try:
        took = record_examples(
            scripts,
            repeats=args.repeats,
            gpus=gpus if len(gpus) > 1 else None,
            limit_s=args.limit_s,
            only=only,
            shard=args.shard,
            gpu=gpu,
        )
    except RecordingError as exc:
        print(f"record: {exc}", file=sys.stderr)
        return 1
    failed = 0
    for name, result in took.items():
        if isinstance(result, RecordingError):
            print(f"record: {result}", file=sys.stderr)
            failed += 1
        else:
            print(
                f"== {name}: {result['variants']} variants x {result['repeats']} repeats in "
                f"{result['processes']} processes, {result['busy_s']} s of process time",
                flush=True,
            )
    print(
        f"== recorded {len(took) - failed} of {len(took)} examples in "
        f"{time.perf_counter() - start:.1f} s",
        flush=True,
    )
    if args.tests:
        start = time.perf_counter()
        env = dict(os.environ, KINETO_LOG_LEVEL="6", PYTHONPATH=str(ROOT / "src"))
        rc = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "data" / "make_h200_traces.py")],
            cwd=ROOT,
            env=env,
        ).returncode
        print(f"== tests/data/h200: exit {rc} in {time.perf_counter() - start:.1f} s", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
