"""Part 1's interleaved calls (story 01g of ``01_matmul_add``): four versions of the step
(eager, addmm, compiled, reduce-overhead) called in turn in one process, each call a
``record_function`` span, timed under the profiler and without it (``timings.json``). Part 1,
the quick start and the timing page read them through :mod:`part1_measures`."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from tracesite.facts import claim
from tracesite.words import about

from tracereader import Kind, Trace

Facts = dict[str, float | str]


VERSIONS = ("eager", "addmm", "compiled", "reduce-overhead")


def calls_of(tr: Trace, versions: Sequence[str] = VERSIONS) -> list[tuple[str, float]]:
    """The interleaved calls in run order, as (version, µs): each a record_function span."""
    rows = sorted(
        (int(i) for v in versions for i in tr.where(name=v, kind=Kind.USER_ANNOTATION)),
        key=lambda i: int(tr.ts_ns[i]),
    )
    return [(tr.name(i), float(tr.dur_ns[i]) / 1e3) for i in rows]


def medians(calls: Iterable[tuple[str, float]]) -> dict[str, float]:
    """The median duration of each version's calls."""
    by: dict[str, list[float]] = {}
    for name, us in calls:
        by.setdefault(name, []).append(us)
    return {name: statistics.median(v) for name, v in by.items()}


def interleaved_facts(tr: Trace, bare: Sequence[tuple[str, float]]) -> Facts:
    """Four versions interleaved in one process, timed under the profiler and without it."""
    calls = calls_of(tr)
    rounds = sum(1 for name, _ in calls if name == "eager")
    claim(
        rounds >= 20 and all(sum(1 for n, _ in calls if n == v) == rounds for v in VERSIONS),
        "a balanced rotation: the same number of rounds of each version under the profiler, "
        "at least 20",
    )
    n_unprof = sum(1 for name, _ in bare if name == "eager")
    claim(
        n_unprof >= rounds and all(sum(1 for n, _ in bare if n == v) == n_unprof for v in VERSIONS),
        "the same number of calls of each version timed without the profiler, at least as "
        "many as under it",
    )
    med, umed = medians(calls), medians(bare)
    out: Facts = {"rounds": rounds, "n_unprof": n_unprof, "prof_cost": med["eager"] / umed["eager"]}
    for key, version in (
        ("ie", "eager"),
        ("ia", "addmm"),
        ("ic", "compiled"),
        ("ir", "reduce-overhead"),
    ):
        out |= {f"{key}_us": med[version], f"u{key}_us": umed[version]}
    # The figure's words, for its dots (no profiler) and its squares (under it): about twice
    # or more is at least about twice (within 10 % of it) or over it.
    for prefix, m, how in (("", med, "under the profiler"), ("u_", umed, "unprofiled")):
        for version in ("compiled", "reduce-overhead"):
            claim(
                about(m[version], 2 * m["eager"]) or m[version] > 2 * m["eager"],
                "both compiled versions sit at about twice eager or more in every process "
                f"({version}, {how})",
            )
        out |= {
            f"{prefix}c_over_e": m["compiled"] / m["eager"],
            f"{prefix}a_over_e": m["addmm"] / m["eager"],
            f"{prefix}r_over_c": m["reduce-overhead"] / m["compiled"],
            f"{prefix}r_over_e": m["reduce-overhead"] / m["eager"],
        }
    claim(
        med["eager"] > umed["eager"],
        "the profiler is not free: the same eager call took longer under it",
    )
    return out
