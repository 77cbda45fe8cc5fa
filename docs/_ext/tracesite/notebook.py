"""Helpers for the executed pages: the drawn recording, pictures, links, reader files.

A page's numbers and claims come from its facts module (:mod:`tracesite.facts`); its cells
here only draw the drawn repeat (r0) of a recording, show the reader's own code and
outputs, and link the traces. :func:`num` and :func:`md` glue a value a page computes in a
cell of its own (a live run, a download the build made), outside the facts.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from .recordings import PRIMARY_GPU, Recording, Session, Variant, load

__all__ = [
    "check_callouts",
    "interleaved_calls",
    "links",
    "log_us_axis",
    "md",
    "medians",
    "num",
    "op_per_call",
    "reader_files",
    "rec",
    "recs",
    "sessions",
    "setup",
    "show",
    "trace",
    "tracereader_cli",
    "unprofiled_calls",
    "variant",
    "verdict",
]

_state: dict[str, Any] = {"example": None, "repeat": 0, "cache": {}}

#: What the build copies into the built site as it is (``html_extra_path`` in ``conf.py``).
EXTRA = Path(__file__).resolve().parents[2] / "_generated" / "extra"


def setup(example: str, site_root: str = "../") -> None:
    """Choose the example whose recordings this page reads.

    ``site_root`` is the way from the page up to the top of the built site, for the
    trace links under its figures (``"../"`` for a page in ``chapters/``).
    """
    _state["example"], _state["site_root"] = example, site_root


def variant(name: str, example: str | None = None) -> Variant:
    """Every repeat of one variant of the page's example (or of ``example``)."""
    example = example or _state["example"]
    cache, key = _state["cache"], (example, name)
    if key not in cache:
        cache[key] = load(example, name)
    found: Variant = cache[key]
    return found


def rec(name: str, example: str | None = None) -> Recording:
    """The drawn repeat (the first) of ``name``, of the page's example or of ``example``."""
    repeat: int = _state["repeat"]
    return variant(name, example).repeats[repeat]


def recs(name: str) -> list[Recording]:
    """Every repeat of ``name``."""
    return variant(name).repeats


def sessions(name: str, example: str | None = None) -> list[Session]:
    """The earlier recording sessions of ``name`` (of the page's example or of
    ``example``), oldest first: what ``docs/recordings/h200/<example>/<name>/sessions/`` holds."""
    return variant(name, example).sessions


def stamp(example: str | None = None, gpu: str = PRIMARY_GPU) -> str:
    """Where and when every recording of the page's example (or ``example``) on ``gpu`` was
    made: one GPU model, driver, torch and CUDA (asserted), and the span of their recording
    times."""
    from .recordings import iter_recordings

    example = example or _state["example"]
    found = [r for r in iter_recordings(gpu=gpu) if r.example == example]
    envs = {(r.env["gpu"], r.env["driver"], r.env["torch"], r.env["cuda"]) for r in found}
    assert len(envs) == 1, f"{example}'s recordings ran on several setups: {envs}"
    gpu, driver, torch, cuda = envs.pop()
    when = sorted(str(r.env["recorded_at"])[:16].replace("T", " ") for r in found)
    span = when[0] if when[0] == when[-1] else f"from {when[0]} to {when[-1]}"
    return f"Recorded on {gpu} (driver {driver}), torch {torch}, CUDA {cuda}, {span} UTC"


def trace(name: str) -> Any:
    """The :class:`tracereader.Trace` of the current repeat of ``name``."""
    return rec(name).trace()


def interleaved_calls(trace: Any, versions: Any) -> list[tuple[str, float]]:
    """The calls of an interleaved recording in the order they ran, as (version, µs).

    Each call is the CPU-side ``record_function`` span named after its version.
    """
    from tracereader import Kind

    rows = [int(i) for v in versions for i in trace.where(name=v, kind=Kind.USER_ANNOTATION)]
    rows.sort(key=lambda i: int(trace.ts_ns[i]))
    return [(trace.name(i), float(trace.dur_ns[i]) / 1e3) for i in rows]


def unprofiled_calls(recording: Recording) -> list[tuple[str, float]]:
    """The calls the harness timed without the profiler, in run order, as (version, µs)."""
    timings = recording.timings()
    if timings is None:
        raise ValueError(f"{recording.variant} r{recording.repeat} has no timings.json")
    return [(str(name), float(us)) for name, us in timings["calls"]]


def op_per_call(trace: Any, within: str, op: str) -> list[dict[str, Any]]:
    """``op``'s row of :func:`tracereader.op_table` for each ``within`` span of the trace
    (a ``record_function`` range, one per call): self and total CPU time of one call each."""
    from tracereader import Kind, op_table

    rows = []
    for span in trace.where(name=within, kind=Kind.USER_ANNOTATION):
        start = int(trace.ts_ns[span])
        table = op_table(trace, window=(start, start + int(trace.dur_ns[span])))
        rows += [r for r in table.to_records() if r["name"] == op]
    return rows


def log_us_axis(ax: Any, label: str) -> None:
    """A log-scale x axis of microseconds labelled 1, 2, 5, 10, ... (no overlapping minor labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(label)


def medians(calls: list[tuple[str, float]]) -> dict[str, float]:
    """The median duration of each version's calls."""
    by: dict[str, list[float]] = {}
    for name, us in calls:
        by.setdefault(name, []).append(us)
    return {name: statistics.median(v) for name, v in by.items()}


def verdict(ratios: list[float], more: str, less: str, same: str, margin: float = 0.05) -> str:
    """Word a ratio measured once per repeat, claiming a difference only beyond the spread.

    ``more`` when every repeat's ratio is above ``1 + margin``, ``less`` when every
    one is below ``1 - margin``, else ``same`` (the runs cannot tell them apart).
    """
    if min(ratios) > 1 + margin:
        return more
    if max(ratios) < 1 - margin:
        return less
    return same


def _glue(key: str, value: Any) -> None:
    from myst_nb import glue

    glue(key, value, display=False)


def num(key: str, value: Any) -> Any:
    """Glue a number a cell of the page computed under ``key``; return it."""
    value = value.item() if hasattr(value, "item") else value
    _glue(key, value)
    return value


def md(key: str, text: str) -> str:
    """Glue Markdown a cell of the page computed under ``key``; return it."""
    from IPython.display import Markdown

    _glue(key, Markdown(text))
    return text


def report_of(r: Recording, root: str) -> tuple[str, int]:
    """Write ``tracereader report``'s page of a recording beside its trace in the built
    site, once per build (``traces/<gpu>/<example>/<variant>/r<k>.report.html``), and
    return its URL from a page ``root`` below the top and its size."""
    from tracereader._report import report

    url = r.trace_url("").removesuffix(".json.gz") + ".report.html"
    out = EXTRA / url
    if not out.exists() or out.stat().st_mtime < r.trace_path.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report(r.trace_path), encoding="utf-8")
    return root + url, out.stat().st_size


def show(
    fig: Any,
    caption: str = "",
    alt: str | None = None,
    dpi: int = 88,
    traces: str | tuple[str, ...] | list[str] = (),
    report: bool = False,
) -> Any:
    """A matplotlib figure as an image with alt text and caption, for the page.

    ``traces`` names the variants the figure was drawn from; under the figure go the
    links to download the drawn repeat of each and open it in Perfetto, and with
    ``report`` a link to its ``tracereader report`` page (a chapter's main recordings).
    """
    from .html import FigureHTML, Snippet, trace_links_html

    check_callouts(fig)
    figure = FigureHTML(fig, alt=alt, caption=caption, dpi=dpi)
    names = [traces] if isinstance(traces, str) else list(traces)
    if not names:
        return figure
    root = _state.get("site_root", "../")
    links = "".join(
        trace_links_html(
            r.trace_url(root),
            r.trace_bytes,
            f"{r.example} {r.variant} r{r.repeat}",
            r.download_name,
            report_of(r, root) if report else None,
        )
        for r in (variant(n).repeats[0] for n in names)
    )
    return Snippet(figure._repr_html_() + links, repr(figure))


def check_callouts(fig: Any) -> None:
    """Fail a picture of one profiler step whose callout found its event by name alone in
    another step: a step's window also draws the GPU work the previous step left running,
    and a bare name matches that first. ``Callout(..., step=...)`` (or ``event=``, a row
    the page chose) says which step's event it means."""
    info = getattr(fig, "tracereader_info", None) or {}
    for panel in info.get("panels", [info]):
        drawn = panel.get("window", {}).get("what", "")
        if not str(drawn).startswith("ProfilerStep#"):
            continue
        for c in panel.get("callouts", []):
            if c.get("by") == "name" and c.get("step") != drawn:
                raise ValueError(
                    f"callout {c['text']!r} points at {c['name'][:60]!r} of {c['step']}, "
                    f"in a picture of {drawn}: give the Callout step={drawn!r}"
                )


def tracereader_cli(
    *args: str, cwd: Any, show: bool = True, status: int = 0, keep: Any = None
) -> Any:
    """Run ``tracereader ARGS`` in a fresh process, on the tracereader this page imported,
    and print it like a terminal (``keep``: print only the output lines it accepts after the
    three header lines). Asserts the exit status; returns the ``CompletedProcess``."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import tracereader

    here = str(Path(tracereader.__file__).parents[1])
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    )
    done = subprocess.run(
        [sys.executable, "-m", "tracereader.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if show:
        lines = done.stdout.splitlines()
        if keep is not None:
            lines = lines[:3] + [ln for ln in lines[3:] if keep(ln)]
        print("$ tracereader " + " ".join(args))
        print("\n".join(lines + done.stderr.splitlines()))
    assert done.returncode == status, (args, done.returncode, done.stderr)
    return done


def links(name: str, report: bool = False) -> Any:
    """The download link and Perfetto button for the drawn repeat of ``name`` (with
    ``report``, and a link to its ``tracereader report`` page)."""
    from .html import Snippet, trace_links_html

    r = variant(name).repeats[0]
    root = _state.get("site_root", "../")
    url = r.trace_url(root)
    return Snippet(
        trace_links_html(
            url,
            r.trace_bytes,
            f"{r.example} {r.variant} r{r.repeat}",
            r.download_name,
            report_of(r, root) if report else None,
        ),
        f"trace {r.variant} r{r.repeat}: {url}",
    )


def reader_files(*examples: str, gpu: str | None = PRIMARY_GPU) -> Path:
    """Let the page's visible cells load traces as a reader does, by their download names.

    Changes the working directory to a scratch folder holding, for every recording of
    ``examples`` (default: the page's example) on ``gpu`` (``None``: on every GPU), a link
    named :attr:`Recording.download_name` (``64_bf16.json.gz``, ``64_bf16-r1.json.gz``; on
    another GPU, ``64_bf16-h100.json.gz``) to its trace, the name the page's download links
    save it under. A visible ``tracereader.load("64_bf16.json.gz")`` then runs unchanged on
    a reader's download.
    """
    import os
    import tempfile

    from .recordings import iter_recordings

    wanted = set(examples or (_state["example"],))
    folder = Path(tempfile.mkdtemp(prefix="tracesite-reader-"))
    for r in iter_recordings(gpu=gpu):
        if r.example in wanted:
            link = folder / r.download_name
            if link.exists():
                raise ValueError(
                    f"two recordings download as {r.download_name}: "
                    f"rename a variant of {sorted(wanted)}"
                )
            link.symlink_to(r.trace_path.resolve())
    os.chdir(folder)
    return folder
