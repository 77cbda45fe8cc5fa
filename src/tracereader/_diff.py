"""What ``tracereader report A --against B`` compares: two traces of the same code.

The numbers only; :mod:`tracereader._diff_html` lays them out. Steps are
paired in order (the ``k``-th step of A with the ``k``-th of B) over the
steps both traces have; each trace's first (warm-up) step is left out when
both have more than one (:func:`~tracereader._tables.warmup_steps`), unless
``keep_first``. Every quantity is measured per compared step, then summed.

A difference counts as a change only where it beats the spread: the
per-step means differ by more than the range (largest minus smallest
per-step value) of either trace. With one compared step there is no spread
to judge by, and the verdict says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._classify import class_table, kernel_class
from ._errors import UserError
from ._events import Trace
from ._intervals import Window
from ._link import link
from ._overview import SPLIT_KINDS, GpuSplit, gpu_split
from ._tables import Table, kernel_table, op_table, warmup_steps
from ._waits import WAITING, is_wait, waits

__all__ = ["CHANGED", "Diff", "diff", "verdict"]

#: The verdict of a difference larger than the steps' spread.
CHANGED = "changed"
SAME = "no change"
WITHIN = "within the steps' spread"
ONE_STEP = "one step: no spread"
TOP = 20
CPU = "CPU (step range)"
BUSY = "GPU busy"


def verdict(a_us: Sequence[float], b_us: Sequence[float]) -> str:
    """Whether per-step values ``b_us`` differ from ``a_us`` by more than their spread.

    ``changed`` when the means differ by more than the larger of the two
    ranges (max - min); ``within the steps' spread`` otherwise; ``no change``
    when they are equal; ``one step: no spread`` when either side has fewer
    than two values (one step cannot show how much a step varies).
    """
    mean_a = sum(a_us) / len(a_us) if a_us else 0.0
    mean_b = sum(b_us) / len(b_us) if b_us else 0.0
    if abs(mean_b - mean_a) <= 1e-9 * max(abs(mean_a), abs(mean_b), 1.0):
        return SAME
    if min(len(a_us), len(b_us)) < 2:
        return ONE_STEP
    spread = max(max(a_us) - min(a_us), max(b_us) - min(b_us))
    return CHANGED if abs(mean_b - mean_a) > spread else WITHIN


def _spread(a_us: Sequence[float], b_us: Sequence[float]) -> float | None:
    if min(len(a_us), len(b_us)) < 2:
        return None
    return max(max(a_us) - min(a_us), max(b_us) - min(b_us))


def _ratio(a: float, b: float) -> float | None:
    return b / a if a else None


@dataclass
class Side:
    """One trace of the pair: its file name, the compared steps' windows and GPU split."""

    name: str
    trace: Trace
    steps: list[str]
    windows: list[Window | None]
    split: list[GpuSplit]
    all_steps: int
    gpu: bool


@dataclass
class Diff:
    """Two traces side by side; every table has ``a_*``, ``b_*``, ``diff`` and a verdict."""

    a: Side
    b: Side
    notes: list[str]
    steps: Table
    totals: Table
    classes: Table
    kernels: Table
    ops_gpu: Table
    ops_cpu: Table
    only_a: list[tuple[str, float]] = field(default_factory=list)
    only_b: list[tuple[str, float]] = field(default_factory=list)
    #: Self CPU time per op name, host syncs left out (they are ``waits_*``).
    ops_self: Table | None = None
    #: Per compared step, the time the CPU waited for the GPU in sync calls (µs).
    waits_a: list[float] = field(default_factory=list)
    waits_b: list[float] = field(default_factory=list)
    #: Kernel class of every GPU op name only in one trace.
    classes_of: dict[str, str] = field(default_factory=dict)


def _side(path: Path, trace: Trace, skip: int, count: int | None) -> Side:
    split = gpu_split(trace)
    gpu = bool(len(link(trace).gpu_ops))
    if trace.steps:
        steps = trace.steps[skip : skip + (count or len(trace.steps))]
        windows: list[Window | None] = [(s.start_ns, s.end_ns) for s in steps]
        per = split[skip : skip + len(steps)] if gpu else []
        names = [s.name for s in steps]
    else:
        windows, per, names = [None], split[-1:], ["whole trace"]
    if not gpu:  # no GPU op: the split is CPU time alone
        per = [GpuSplit(n, 0.0, _cpu_us(trace, w), 0.0, dict.fromkeys(SPLIT_KINDS, 0.0))
               for n, w in zip(names, windows, strict=True)]  # fmt: skip
    return Side(path.name, trace, names, windows, per, len(trace.steps), gpu)


def _names(a: Path, b: Path) -> tuple[str, str]:
    """The files' names, with as many parent folders as it takes to tell them apart."""
    pa, pb = a.resolve().parts, b.resolve().parts
    for k in range(1, max(len(pa), len(pb)) + 1):
        na, nb = "/".join(pa[-k:]), "/".join(pb[-k:])
        if na != nb:
            return na, nb
    return a.name, b.name


def _cpu_us(trace: Trace, window: Window | None) -> float:
    if window is not None:
        return (window[1] - window[0]) / 1e3
    return float(trace.end_ns.max() - trace.ts_ns.min()) / 1e3 if len(trace) else 0.0


def _pair(
    a_path: Path, a: Trace, b_path: Path, b: Trace, keep_first: bool
) -> tuple[Side, Side, list[str]]:
    """The two sides' compared steps, and notes on how they were chosen."""
    na, nb = len(a.steps), len(b.steps)
    if bool(na) != bool(nb):
        has, hasnt = (a_path, b_path) if na else (b_path, a_path)
        raise UserError(f"no common step: {has.name} has {max(na, nb)} ProfilerStep(s), "
                        f"{hasnt.name} has none (mark steps in both with prof.step())")  # fmt: skip
    notes = []
    skip = warmup_steps([na, nb], not keep_first)
    count = min(na, nb) - skip if na else None
    sa, sb = _side(a_path, a, skip, count), _side(b_path, b, skip, count)
    sa.name, sb.name = _names(a_path, b_path)
    if not na:
        notes.append("Neither trace marks a ProfilerStep: each is compared whole, as one step.")
    elif na != nb:
        notes.append(f"The step counts differ: A has {na} steps, B has {nb}. Like is compared "
                     f"with like: the first {count} compared step(s) of each, paired in order; "
                     "the rest are left out.")  # fmt: skip
    if skip:
        notes.append("The first (warm-up) step of each trace is left out: a cold first step "
                     "(allocations, autotuning, compilation) distorts a comparison. "
                     "--keep-first keeps it.")  # fmt: skip
    elif na and not keep_first:
        one = " and ".join(k for k, n in (("A", na), ("B", nb)) if n == 1)
        notes.append(f"{one} recorded one step only, so no warm-up step could be left out: "
                     "the first recorded steps are compared, a cold start included if they "
                     "hold one.")  # fmt: skip
    elif na:
        notes.append("Every step counts, the first (warm-up) one included (--keep-first).")
    pairs = ", ".join(f"{x} with {y}" for x, y in zip(sa.steps, sb.steps, strict=True))
    if na:
        notes.append(f"Compared: {pairs}.")
    if len(sa.steps) < 2:
        notes.append("One compared step cannot show the spread between steps, so no difference "
                     "is called a change: record more steps to judge one.")  # fmt: skip
    else:
        notes.append("A difference is called a change only where the per-step means differ by "
                     "more than the range of the per-step values of either trace.")  # fmt: skip
    return sa, sb, notes


def _metrics(s: GpuSplit) -> dict[str, float]:
    """The times the step tables list, by name (µs)."""
    kinds = {k: s.by_kind[k] for k in SPLIT_KINDS}
    return {"span": s.span_us, CPU: s.cpu_us, BUSY: s.busy_us, **kinds, "idle": s.idle_us}


def _step_tables(a: Side, b: Side) -> tuple[Table, Table]:
    names = list(_metrics(a.split[0])) if a.gpu else [CPU]
    rows: list[list[Any]] = []
    for sa, sb, na, nb in zip(a.split, b.split, a.steps, b.steps, strict=True):
        step = na if na == nb else f"{na} / {nb}"
        ma, mb = _metrics(sa), _metrics(sb)
        rows += [[step, n, ma[n], mb[n], mb[n] - ma[n], _ratio(ma[n], mb[n])] for n in names]
    cols = ["step", "time", "a_us", "b_us", "diff_us", "ratio"]
    steps = Table(cols, rows, "Per step: span, CPU and GPU time by kind (µs; B - A)", ())
    tot: list[list[Any]] = []
    for name in names:
        va = [_metrics(s)[name] for s in a.split]
        vb = [_metrics(s)[name] for s in b.split]
        ta, tb = sum(va), sum(vb)
        tot.append([name, ta, tb, tb - ta, _ratio(ta, tb), ta / len(va), tb / len(vb),
                    _spread(va, vb), verdict(va, vb)])  # fmt: skip
    cols = ["time", "a_us", "b_us", "diff_us", "ratio", "a_per_step_us", "b_per_step_us",
            "spread_us", "verdict"]  # fmt: skip
    return steps, Table(cols, tot, "Total over the compared steps (µs; B - A)", ())


def _per_name(
    a: Side, b: Side, each: Callable[[Trace, Window | None], dict[str, tuple[int, float]]]
) -> list[tuple[str, list[int], list[float], list[int], list[float]]]:
    """Per name: calls and µs in each compared step of A, then of B (0 where absent)."""
    got_a = [each(a.trace, w) for w in a.windows]
    got_b = [each(b.trace, w) for w in b.windows]
    names = sorted({n for g in got_a + got_b for n in g})
    zero = (0, 0.0)
    return [
        (n, [g.get(n, zero)[0] for g in got_a], [g.get(n, zero)[1] for g in got_a],
         [g.get(n, zero)[0] for g in got_b], [g.get(n, zero)[1] for g in got_b])
        for n in names
    ]  # fmt: skip


def _change_table(
    per: list[tuple[str, list[int], list[float], list[int], list[float]]], title: str, what: str
) -> Table:
    rows: list[list[Any]] = []
    for n, ca, va, cb, vb in per:
        ta, tb = sum(va), sum(vb)
        if not (ta or tb):
            continue
        rows.append([n, sum(ca), sum(cb), ta, tb, tb - ta, _ratio(ta, tb), _spread(va, vb),
                     verdict(va, vb)])  # fmt: skip
    rows.sort(key=lambda r: (-abs(r[5]), r[0]))
    cols = ["name", "a_calls", "b_calls", f"a_{what}_us", f"b_{what}_us", "diff_us", "ratio",
            "spread_us", "verdict"]  # fmt: skip
    return Table(cols, rows, title)


def _kernels_of(trace: Trace, window: Window | None) -> dict[str, tuple[int, float]]:
    return {r[0]: (r[1], r[2]) for r in kernel_table(trace, window).rows}


def _classes_of(trace: Trace, window: Window | None) -> dict[str, tuple[int, float]]:
    return {r[0]: (r[1], r[3]) for r in class_table(trace, window).rows}


def _ops_of(column: str) -> Callable[[Trace, Window | None], dict[str, tuple[int, float]]]:
    def get(trace: Trace, window: Window | None) -> dict[str, tuple[int, float]]:
        t = op_table(trace, window)
        k = t.columns.index(column)
        return {r[0]: (r[1], r[k]) for r in t.rows if not r[0].startswith("ProfilerStep#")}

    return get


def diff(
    a_path: str | Path, a: Trace, b_path: str | Path, b: Trace, *, keep_first: bool = False
) -> Diff:
    """Compare trace ``b`` with trace ``a`` (the baseline), step by step.

    Raises
    ------
    UserError
        One trace has GPU activity and the other none, or one marks
        ProfilerSteps and the other does not (no common step).
    """
    pa, pb = Path(a_path), Path(b_path)
    ga, gb = bool(len(link(a).gpu_ops)), bool(len(link(b).gpu_ops))
    if ga != gb:
        cpu = pa.name if gb else pb.name
        raise UserError(f"{cpu} has no GPU activity and the other trace has: a CPU-only trace "
                        "cannot be compared with a GPU trace")  # fmt: skip
    sa, sb, notes = _pair(pa, a, pb, b, keep_first)
    steps, totals = _step_tables(sa, sb)
    kernels = _per_name(sa, sb, _kernels_of)
    classes = _change_table(_per_name(sa, sb, _classes_of), "GPU time per kernel class", "gpu")
    classes.columns[0], classes.name_columns = "class", ()
    ops_gpu = _change_table(_per_name(sa, sb, _ops_of("total_gpu_us")),
                            "Ops with the largest change in total GPU time", "gpu")  # fmt: skip
    ops_cpu = _change_table(_per_name(sa, sb, _ops_of("total_cpu_us")),
                            "Ops with the largest change in total CPU time", "cpu")  # fmt: skip
    for t in (ops_gpu, ops_cpu):
        t.name_columns = ()
    only_a = sorted(((n, sum(va)) for n, _, va, cb, _ in kernels if not sum(cb)),
                    key=lambda x: (-x[1], x[0]))  # fmt: skip
    only_b = sorted(((n, sum(vb)) for n, ca, _, _, vb in kernels if not sum(ca)),
                    key=lambda x: (-x[1], x[0]))  # fmt: skip
    ktable = _change_table(kernels, "GPU ops with the largest change in total GPU time", "gpu")
    self_rows = [p for p in _per_name(sa, sb, _ops_of("self_cpu_us")) if not is_wait(p[0])]
    ops_self = _change_table(self_rows, "Ops with the largest change in self CPU time (host "
                             "syncs left out)", "cpu")  # fmt: skip
    ops_self.name_columns = ()
    waits_a = [waits(a, w).wait_us for w in sa.windows]
    waits_b = [waits(b, w).wait_us for w in sb.windows]
    classes_of = {n: _class_of(t, n) for names, t in ((only_a, a), (only_b, b))
                  for n, _ in names}  # fmt: skip
    return Diff(sa, sb, notes, steps, totals, classes, ktable.head(TOP),
                ops_gpu.head(TOP), ops_cpu.head(TOP), only_a, only_b, ops_self.head(TOP),
                waits_a, waits_b, classes_of)  # fmt: skip


def _class_of(trace: Trace, name: str) -> str:
    row = trace.where(name=name)
    return kernel_class(name, int(trace.kind[row[0]])) if len(row) else "other"


def _fmt_us(v: float, ms: bool | None = None) -> str:
    """``v`` µs in µs, or in ms when ``ms`` (by default: from 10 ms on)."""
    if ms is None:
        ms = abs(v) >= 1e4
    return f"{v / 1e3:,.1f} ms" if ms else f"{v:,.1f} µs"


def _line(name: str, row: list[Any], per_step: bool) -> str:
    """``name: A → B (ratio, diff): verdict`` from a totals or change-table row.

    The verdict is left out where it is ``one step: no spread``: the page's
    verdict line says that once.
    """
    a, b, d, r = (row[5], row[6], row[6] - row[5], row[4]) if per_step else (*row[3:6], row[6])
    how = "new, " if not a else "gone, " if not b else f"×{r:.2f}, "
    tail = "" if row[-1] == ONE_STEP else f": {row[-1]}"
    sign = "+" if d > 0 else "-"
    ms = max(abs(a), abs(b)) >= 1e4  # one unit per line
    return (f"{name}: {_fmt_us(a, ms)} → {_fmt_us(b, ms)} ({how}{sign}{_fmt_us(abs(d), ms)})"
            f"{tail}")  # fmt: skip


def verdict_line(d: Diff) -> str:
    """One sentence: how much faster or slower B is per step, and how sure that is."""
    totals = {r[0]: r for r in d.totals.rows}
    row = totals.get("span") or totals[CPU]
    a, b = row[5], row[6]
    n = len(d.a.steps)
    if not a or row[-1] == SAME:
        head = "B takes as long per step as A"
    else:
        pct = 100 * abs(b - a) / a
        ms = max(a, b) >= 1e4
        head = (f"B is {pct:.0f} % {'faster' if b < a else 'slower'} per step "
                f"({_fmt_us(a, ms)} → {_fmt_us(b, ms)})")  # fmt: skip
    if row[-1] == ONE_STEP:
        return (f"{head}; one step each, so the spread is unknown: record 5 or more steps "
                "(no line below can be called a change).")  # fmt: skip
    if row[-1] == CHANGED:
        return f"{head}, more than the spread between its {n} compared steps: a change."
    if row[-1] == WITHIN:
        return f"{head}, within the spread between its {n} compared steps: not a change."
    return f"{head}."


def _wait_line(d: Diff) -> list[str]:
    """The sync waits per step, as waiting (R-E11): not the CPU working more or less."""
    if not (any(d.waits_a) or any(d.waits_b)):
        return []
    a, b = d.waits_a, d.waits_b
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    v = verdict(a, b)
    why = (
        "it grows when the CPU gets further ahead (faster launches) or the GPU slows"
        if mb > ma
        else "it shrinks when the CPU falls behind or the GPU gets faster"
    )
    tail = "" if v == ONE_STEP else f": {v}"
    ms = max(ma, mb) >= 1e4
    return [f"{WAITING} (host syncs: aten::item, .cpu(), synchronize) per step: "
            f"{_fmt_us(ma, ms)} → {_fmt_us(mb, ms)}{tail}. Waiting, not work: {why}."]  # fmt: skip


def _by_class(d: Diff, names: list[tuple[str, float]]) -> str:
    groups: dict[str, list[float]] = {}
    for n, v in names:
        groups.setdefault(d.classes_of.get(n, "other"), []).append(v)
    order = sorted(groups.items(), key=lambda kv: -sum(kv[1]))
    return ", ".join(f"{c} {len(v)} ({_fmt_us(sum(v))})" for c, v in order)


def what_changed(d: Diff, top: int = 3) -> list[str]:
    """The page's opening list: the verdict, time per step, regressions, then gains.

    Host syncs count once, as waiting (:func:`_wait_line`); the CPU lines
    read self CPU time, so an op and the ops inside it never repeat one
    another's time.
    """
    from ._names import shorten_kernel_name as short

    out = [verdict_line(d)]
    if d.a.all_steps != d.b.all_steps:
        out.append(f"The step count changed: A has {d.a.all_steps} step(s), B has "
                   f"{d.b.all_steps}.")  # fmt: skip
    totals = {r[0]: r for r in d.totals.rows}
    for key in (BUSY, CPU, "idle"):
        if key in totals:
            out.append(_line(f"{key} per step", totals[key], per_step=True))
    out += _wait_line(d)
    cpu = d.ops_self if d.ops_self is not None else d.ops_cpu
    tables = [("GPU time", d.classes, "class "), ("GPU time", d.kernels, "")] if d.a.gpu else []
    tables.append(("self CPU time", cpu, ""))
    worse: list[str] = []
    better: list[str] = []
    for what, t, kind in tables:
        rows = [r for r in t.rows if r[-1] in (CHANGED, ONE_STEP)]
        gains = sorted((r for r in rows if r[5] < 0), key=lambda r: r[5])[:top]
        losses = sorted((r for r in rows if r[5] > 0), key=lambda r: -r[5])[:top]
        worse += [f"More {what} in B: {kind}" + _line(short(r[0]), r, False) for r in losses]
        better += [f"Less {what} in B: {kind}" + _line(short(r[0]), r, False) for r in gains]
    out += worse + better  # regressions first
    for names, where in ((d.only_a, "only in A (gone in B)"), (d.only_b, "only in B (new)")):
        if names:
            out.append(f"{len(names)} GPU op name(s) {where}, by class: {_by_class(d, names)}.")
    return out
