"""What an example page shows when the site is built: the recordings, not a live run.

An example defines ``run(name)``, which profiles one of its ``VARIANTS`` live.
While the site builds (sphinx-gallery runs the example inside Sphinx, where
this package is imported), the example swaps it for :func:`replayer`'s version,
which returns the H200's recording of that variant instead. A reader's
downloaded copy never sees this module and always runs live.
"""

from __future__ import annotations

import html
import os
import statistics
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._source import (
    RecordingError,
    StaleRecordingError,
    code_hash,
    example_name,
    load_definitions,
)
from .html import Snippet, format_size, trace_links_html
from .recordings import RECORD_COMMAND, Recording, Variant, gpus, iter_variants, load

__all__ = ["Pending", "Replayed", "all_recordings_html", "replayer"]

#: The example sphinx-gallery is running (set by the build's reset hook).
CURRENT_EXAMPLE: Path | None = None


def _current() -> Path:
    if CURRENT_EXAMPLE is None:
        raise RuntimeError("no example is being built (site_hooks.reset_example sets it)")
    return CURRENT_EXAMPLE


class Replayed:
    """A variant's recording as an example page shows it: like the example's ``Run``
    (``table``, ``trace_path``), plus the stamp and the links to every repeat."""

    def __init__(self, variant: Variant, root: str = "../") -> None:
        self.variant, self.root = variant, root
        self.name = variant.name
        rep = variant.rep
        self.table, self.trace_path = rep.table, rep.trace_path

    def stamp_line(self) -> str:
        return self.variant.rep.stamp_line()

    def _repr_html_(self) -> str:
        n = len(self.variant.repeats)
        links = "".join(
            f"<li>repeat {r.repeat + 1}: "
            + trace_links_html(
                r.trace_url(self.root),
                r.trace_bytes,
                f"{r.example} {r.variant} r{r.repeat}",
                r.download_name,
            )
            + "</li>"
            for r in self.variant.repeats
        )
        return (
            f'<div class="tr-recording"><p class="tr-stamp">{html.escape(self.stamp_line())}.'
            f" The variant was recorded {n} times, each in a process of its own; this page"
            f' prints the first. Every trace:</p><ul class="tr-repeats">{links}</ul></div>'
        )

    def __repr__(self) -> str:
        return f"{self.name}: {self.stamp_line()}"


class Pending:
    """A variant with no recording yet, as an example page shows it (a non-strict build
    only): its table and its text name the command that records it."""

    def __init__(self, name: str, reason: str) -> None:
        self.name, self.reason, self.trace_path = name, reason, None
        self.table = f"Recording pending: {reason}"

    def _repr_html_(self) -> str:
        return f'<div class="tr-recording"><p class="tr-stamp">{html.escape(self.table)}</p></div>'

    def __repr__(self) -> str:
        return f"{self.name}: {self.table}"


def _site_root(source: Path) -> str:
    """From an example's page to the top of the site: a script in an example's folder
    (``examples/05_llm_decode/05a_generate.py``, whatever its name) is built one folder
    deeper (``auto_examples/<folder>/<script>.html``) than a lone script."""
    return "../../" if example_name(source) == source.parent.name else "../"


def _strict() -> bool:
    return os.environ.get("TRACEREADER_STRICT", "").strip() in {"1", "true", "yes"}


def results_line(rec: Recording) -> str | None:
    """The recording's own numbers (``results.json``, which a story's run writes: tokens
    per second, time per token or step...) as one line naming the GPU and the repeat;
    None where it has none. Lists (per-position checks) are left to the chapters."""
    found = rec.meta.get("results") or {}
    scalars = {k: v for k, v in found.items() if isinstance(v, (bool, int, float))}
    if not scalars:
        return None

    def fmt(v: bool | int | float) -> str:
        return str(v) if isinstance(v, bool) else f"{v:,}" if isinstance(v, int) else f"{v:g}"

    shown = ", ".join(f"{k} {fmt(v)}" for k, v in scalars.items())
    where = f"{rec.env.get('gpu', '?')}, repeat r{rec.repeat} of {rec.meta.get('repeats', '?')}"
    return f"{rec.variant}, recorded on the {where}: {shown}"


def replayer(
    live_run: Callable[..., Any], example_file: str | os.PathLike[str] | None = None
) -> Callable[..., Replayed | Pending]:
    """A stand-in for an example's ``run(name)`` that replays the recorded variant.

    It checks the recording against the example's current code: a stale one
    fails a strict build (``TRACEREADER_STRICT=1``) and is marked otherwise; so does
    a variant not recorded yet, which a non-strict build shows as :class:`Pending`.
    ``example_file`` defaults to the example being built.
    """
    source = Path(example_file) if example_file else _current()
    variants = load_definitions(source)["VARIANTS"]
    example = example_name(source)

    def replay(name: str, **overrides: Any) -> Replayed | Pending:
        if overrides:
            raise TypeError("a replayed run takes no overrides: run the example on a GPU")
        harness, params = variants[name]
        try:
            variant = load(example, name)
        except RecordingError:  # not recorded yet: a strict build fails, others say so
            if _strict():
                raise
            return Pending(
                name, f"{example}/{name} is not recorded yet; record it with {RECORD_COMMAND}"
            )
        digest = code_hash(source, harness.__name__, params)
        for rec in variant.repeats:
            if rec.meta.get("code_hash") != digest:
                message = (
                    f"recording {example}/{name} is stale: {source.name}:"
                    f"{harness.__name__} or its settings changed; re-record with {RECORD_COMMAND}"
                )
                if _strict():
                    raise StaleRecordingError(message)
                warnings.warn(message, stacklevel=2)
                rec.stale = True
        line = results_line(variant.rep)
        if line:  # what the live run prints of its results.json, from the recording's
            print(line)
        return Replayed(variant, _site_root(source))

    replay.__doc__ = live_run.__doc__
    replay.__wrapped__ = live_run  # type: ignore[attr-defined]
    return replay


def _tokens_per_s(reps: list[Recording]) -> str:
    """The repeats' recorded tokens per second as "median (lowest-highest)"; empty where
    a repeat wrote none (only the decode and training stories time tokens)."""
    found = [(r.results or {}).get("tokens_per_s") for r in reps]
    if not found or not all(isinstance(v, (int, float)) for v in found):
        return ""
    values = sorted(float(v) for v in found if isinstance(v, (int, float)))
    return f"{statistics.median(values):,.0f} ({values[0]:,.0f}\u2013{values[-1]:,.0f})"


def all_recordings_html(example_file: str | os.PathLike[str]) -> Snippet:
    """A table of every variant the story ``example_file`` shows: its settings and, for
    each GPU with recordings (:func:`~tracesite.recordings.gpus`, the one the page
    replays first), a link to each repeat's trace and, where the repeats timed tokens,
    their tokens per second. The build ends each story's page with it
    (``site_hooks.recordings_table``)."""
    source = Path(example_file)
    example, mine = example_name(source), load_definitions(source)["VARIANTS"]
    by_gpu: dict[str, dict[str, Variant]] = {}
    for variant in iter_variants():
        if variant.example == example and variant.name in mine:
            by_gpu.setdefault(variant.gpu, {})[variant.name] = variant
    slugs = [g for g in gpus() if g in by_gpu]
    timed = {g: any(_tokens_per_s(v.repeats) for v in by_gpu[g].values()) for g in slugs}
    rows, counts, total = [], dict.fromkeys(slugs, 0), 0
    for name in (n for n in mine if any(n in by_gpu[g] for g in slugs)):
        settings = next(by_gpu[g][name].rep.params for g in slugs if name in by_gpu[g])
        cells = [
            f"<td><code>{html.escape(name)}</code></td>",
            "<td><code>"
            + html.escape(", ".join(f"{k}={v!r}" for k, v in settings.items()))
            + "</code></td>",
        ]
        for g in slugs:
            reps = by_gpu[g][name].repeats if name in by_gpu[g] else []
            counts[g] += len(reps)
            total += sum(r.trace_bytes for r in reps)
            links = " ".join(
                f'<a href="{html.escape(r.trace_url(_site_root(source)))}" download>r{r.repeat}</a>'
                for r in reps
            )
            cells.append(f'<td data-gpu="{g}">{links or "not recorded"}</td>')
            if timed[g]:
                cells.append(f"<td>{_tokens_per_s(reps)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = "<th>variant</th><th>settings</th>"
    for g in slugs:
        head += f"<th>{g.upper()} traces (one per repeat)</th>"
        if timed[g]:
            head += f"<th>{g.upper()} tokens/s, median (lowest\u2013highest)</th>"
    traces = " and ".join(f"{counts[g]} on the {g.upper()}" for g in slugs)
    variants = f"{len(rows)} variant{'' if len(rows) == 1 else 's'}"
    text = f"{variants}, recorded traces: {traces}, {format_size(total)} gzipped"
    body = (
        f'<p class="tr-stamp">Every recording of this page: {text}.</p>'
        '<div class="pst-scrollable-table-container tr-scroll">'
        f'<table class="table tr-all-recordings"><tr>{head}</tr>{"".join(rows)}</table></div>'
    )
    return Snippet(body, text)
