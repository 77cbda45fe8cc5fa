"""Facts as data: each page's numbers and claims, computed once, outside the notebook.

A page's facts live in ``docs/facts/<page>.py``: one function, ``facts(f)``, that reads
recordings through ``f`` (:class:`Facts`) and hands every number and phrase the page
quotes to ``f.num`` / ``f.md``, checking each claim beside the sentence it guards with
:func:`claim`. The runner (:func:`page_facts`, ``python -m tracesite facts [PAGE ...]``)
calls it and writes what it produced to ``docs/_generated/facts/<page>.json``: the page's
glue, key by key, exactly as the page pastes it. The page's first hidden cell then only
pastes (:func:`glue_facts`); its ``{glue:...}`` references are those keys.

Repeats. ``f.repeats(fn)`` runs ``fn()`` once per recorded repeat (the drawn repeat, r0,
last), with ``f.rec`` / ``f.trace`` reading that repeat, so every claim in ``fn`` is
checked on every repeat. Each ``f.num(key, v)`` inside it is pasted as the median over the
repeats, with ``key_lo`` and ``key_hi`` beside it; ``f.md`` text is the drawn repeat's;
``f.put`` of a :class:`Fmt` is the median, written by its function. Outside ``f.repeats``
the helpers read the drawn repeat.

Cache. The JSON records a hash of what the run read: the facts module and the modules it
imports from ``docs/``, the library's source, and the ``meta.json`` of every recording the
run opened. While that hash holds, the runner does not run the page again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .recordings import Recording, Session, Variant, load, recordings_root

__all__ = [
    "ClaimError",
    "Facts",
    "Fmt",
    "claim",
    "glue_facts",
    "main",
    "page_facts",
    "page_claims",
    "page_words",
    "pages",
]

DOCS = Path(__file__).resolve().parents[2]
#: Where the facts modules live, one per page (``part5.py`` for ``chapters/part5.md``).
FACTS_DIR = DOCS / "facts"
#: Where the runner writes each page's facts.
GENERATED = DOCS / "_generated" / "facts"
#: Bumped when the JSON's shape changes, so that old files are recomputed.
FORMAT = 2


class ClaimError(AssertionError):
    """A sentence of a page that its recordings do not support."""


#: While a survey runs (:func:`survey`), failed claims are listed here instead of raised.
_failed: list[str] | None = None
_current: Facts | None = None

#: While the runner computes a page: each claim's sentence, with the words
#: (:mod:`tracesite.words`) checked since the claim before it, which its check called.
_claims: dict[str, set[str]] | None = None
_called: list[tuple[str, tuple[Any, ...]]] = []
_seen = 0


def claim(ok: object, sentence: str) -> None:
    """Check the claim ``sentence`` (the words the page says); fail the run if ``ok`` is false.

    The runner adds the page, and the repeat where it failed, to the message.
    """
    global _seen
    if _claims is not None:
        _claims.setdefault(sentence, set()).update(w for w, _ in _called[_seen:])
        _seen = len(_called)
    if ok:
        return
    if _failed is None:
        raise ClaimError(sentence)
    where = "" if _current is None else f"{_current.gpu} r{_current.repeat}: "
    _failed.append(where + sentence)


class Fmt:
    """A number with the function that writes it for the prose (``us(3.2)`` -> "3.20 µs").

    Inside :meth:`Facts.repeats`, :meth:`Facts.put` pastes the median of the repeats'
    values, written by that function.
    """

    def __init__(self, value: float, write: Callable[[float], str]) -> None:
        self.value, self.write = float(value), write

    def __str__(self) -> str:
        return str(self.write(self.value))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def pages() -> list[str]:
    """Every page that has a facts module (``docs/facts/<page>.py``; ``_*.py`` are shared)."""
    return sorted(p.stem for p in FACTS_DIR.glob("*.py") if not p.name.startswith("_"))


class Facts:
    """What a page's ``facts(f)`` reads and writes: its recordings, and the page's glue."""

    def __init__(self, page: str, example: str, gpu: str = "h200") -> None:
        self.page, self.example, self.gpu = page, example, gpu
        self.repeat = 0
        self.glue: dict[str, list[Any]] = {}
        self._variants: dict[tuple[str, str], Variant] = {}
        self._extra: list[Recording] = []
        self._others: list[Facts] = []
        #: Each word's check a run made (:mod:`tracesite.words`), with its arguments.
        self.words: list[tuple[str, tuple[Any, ...]]] = []
        #: Each claim's sentence, with the words its check called (over every repeat and GPU).
        self.claims: dict[str, set[str]] = {}
        self._collect: dict[str, list[Any]] | None = None
        self._collect_md: dict[str, list[Any]] | None = None

    # -- reading ------------------------------------------------------------------------
    def variant(self, name: str, example: str | None = None) -> Variant:
        """Every repeat of one variant of the page's example (or of ``example``), on this
        run's GPU."""
        key = (example or self.example, name)
        if key not in self._variants:
            self._variants[key] = load(key[0], name, gpu=self.gpu)
        return self._variants[key]

    def rec(self, name: str, example: str | None = None) -> Recording:
        """The current repeat of ``name`` (the drawn one, r0, outside :meth:`repeats`)."""
        return self.variant(name, example).repeats[self.repeat]

    def recs(self, name: str, example: str | None = None) -> list[Recording]:
        """Every repeat of ``name``."""
        return self.variant(name, example).repeats

    def trace(self, name: str, example: str | None = None) -> Any:
        """The :class:`tracereader.Trace` of the current repeat of ``name``."""
        return self.rec(name, example).trace()

    def sessions(self, name: str, example: str | None = None) -> list[Session]:
        """The earlier recording sessions the plan keeps of ``name``, oldest first."""
        return self.variant(name, example).sessions

    def stamp(self, example: str | None = None) -> str:
        """Where and when every recording of the page's example on this run's GPU was made
        (one setup, asserted)."""
        from .notebook import stamp

        return stamp(example or self.example, gpu=self.gpu)

    def on(self, gpu: str, example: str | None = None) -> Facts:
        """A reader of another GPU's recordings of the page's example (or of ``example``),
        for a comparison of the GPUs made in one run; what it reads counts as read."""
        other = Facts(self.page, example or self.example, gpu)
        self._others.append(other)
        return other

    def every_recording(self) -> list[Recording]:
        """Every recording the site holds, of every example (counted as read)."""
        from .recordings import iter_recordings

        found = list(iter_recordings())
        self._extra.extend(found)
        return found

    def read(self) -> list[Recording]:
        """Every recording this run opened (for the cache's hash)."""
        mine = [r for v in self._variants.values() for r in _all_repeats(v)] + self._extra
        return mine + [r for other in self._others for r in other.read()]

    # -- writing ------------------------------------------------------------------------
    def _paste(self, key: str, kind: str, value: Any) -> None:
        if key in self.glue:
            raise ValueError(f"{self.page}: the key {key!r} is produced twice")
        self.glue[key] = [kind, value]

    def num(self, key: str, value: Any) -> Any:
        """Paste a number under ``key`` and return it (inside :meth:`repeats`: the median,
        with ``key_lo`` and ``key_hi``)."""
        value = value.item() if hasattr(value, "item") else value
        if self._collect is None:
            self._paste(key, "num", value)
        else:
            self._collect.setdefault(key, []).append(value)
        return value

    def md(self, key: str, text: str) -> str:
        """Paste Markdown under ``key`` (inside :meth:`repeats`: the drawn repeat's)."""
        if self._collect is None or self.repeat == 0:
            self._paste(key, "md", str(text))
        return text

    def put(self, key: str, value: Any) -> None:
        """Paste ``value`` as Markdown: a :class:`Fmt` or a number inside :meth:`repeats` as
        the median over the repeats, text as the drawn repeat's."""
        if self._collect_md is None:
            self._paste(key, "md", str(value))
        else:
            self._collect_md.setdefault(key, []).append(value)

    def num_from(self, values: dict[str, Any], keys: str) -> None:
        """:meth:`num` for each of the space-separated ``keys``, the value under the same key
        in ``values``: ``f.num_from(off, "off_warm l2s_warm")``, each key spelled whole so
        that a search for it finds where it is pasted."""
        for key in keys.split():
            self.num(key, values[key])

    def md_from(self, values: dict[str, Any], keys: str) -> None:
        """:meth:`md` for each of the space-separated ``keys``, the text under the same key in
        ``values``: the Markdown twin of :meth:`num_from`."""
        for key in keys.split():
            self.md(key, values[key])

    def nums(self, values: dict[str, Any]) -> None:
        """:meth:`num` for each key and value: ``f.nums({"s_step_ms": s["step_ms"], ...})``,
        each key spelled whole so that a search for it finds where it is made. Numbers are
        pasted as floats (a count as ``17.0``), as a page's ``{glue:text}`key:.0f``` reads them."""
        for key, value in values.items():
            number = value.item() if hasattr(value, "item") else value
            isnum = isinstance(number, (int, float)) and not isinstance(number, bool)
            self.num(key, float(number) if isnum else number)

    def n_repeats(self, name: str | None = None) -> int:
        """How many repeats :meth:`repeats` runs: the fewest any variant of the example has
        (or that ``name`` has)."""
        if name is not None:
            return len(self.recs(name))
        folder = _example_folder(self.example, self.gpu)
        counts = [len(list(v.glob("r*/meta.json"))) for v in folder.iterdir() if v.is_dir()]
        return min(c for c in counts if c)

    def repeats(self, fn: Callable[[], Any], n: int | None = None) -> Any:
        """Run ``fn()`` once per repeat, the drawn repeat last; paste medians of its numbers.

        Returns what ``fn`` returned on the drawn repeat.
        """
        if self._collect is not None:
            raise RuntimeError("f.repeats inside f.repeats")
        n = n or self.n_repeats()
        collected: dict[str, list[Any]] = {}
        collected_md: dict[str, list[Any]] = {}
        self._collect, self._collect_md = collected, collected_md
        drawn = None
        try:
            for k in [*range(1, n), 0]:
                self.repeat = k
                try:
                    out = fn()
                except AssertionError as exc:
                    raise ClaimError(f"on repeat {k + 1} of {n}: {exc}") from exc
                drawn = out if k == 0 else drawn
        finally:
            self.repeat, self._collect, self._collect_md = 0, None, None
        for key, values in collected.items():
            self._paste(key, "num", statistics.median(values))
            self._paste(f"{key}_lo", "num", min(values))
            self._paste(f"{key}_hi", "num", max(values))
        for key, values in collected_md.items():
            last = values[-1]
            if isinstance(last, Fmt):
                text = last.write(statistics.median(v.value for v in values))
            elif isinstance(last, (int, float)) and not isinstance(last, bool):
                text = str(statistics.median(values))
                text = text[:-2] if text.endswith(".0") else text
            else:
                text = str(last)
            self._paste(key, "md", text)
        return drawn


def _all_repeats(v: Variant) -> Iterable[Recording]:
    yield from v.repeats
    for s in v.sessions:
        yield from s.repeats


def _example_folder(example: str, gpu: str) -> Path:
    return recordings_root() / gpu / example


def _module(page: str) -> Any:
    for path in (str(FACTS_DIR), str(DOCS / "chapters"), str(DOCS)):
        if path not in sys.path:
            sys.path.insert(0, path)
    return importlib.import_module(page)


def _source_hash(page: str) -> str:
    """The facts module, every module beside the pages it may import, and the library."""
    import tracereader

    h = hashlib.sha256(f"format {FORMAT}".encode())
    files = sorted(FACTS_DIR.glob("*.py")) + sorted(DOCS.glob("**/*_measures.py"))
    files += sorted(Path(tracereader.__file__).parent.glob("*.py"))
    files += sorted(Path(__file__).parent.glob("*.py"))
    files += sorted(DOCS.parent.glob("examples/*/*.py"))  # pages read SHAPES, VARIANTS, ...
    files += sorted(p for p in (DOCS / "peers").rglob("*") if p.is_file())  # other trainers' runs
    for path in files:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _reads_hash(paths: Iterable[str]) -> str:
    """The ``meta.json`` of every recording read, and the list of all recordings (so that
    a recording added or removed anywhere counts as a change)."""
    h = hashlib.sha256()
    for path in sorted(recordings_root().glob("**/meta.json")):
        h.update(str(path.relative_to(recordings_root())).encode())
    for rel in sorted(paths):
        path = recordings_root() / rel
        h.update(rel.encode())
        h.update(path.read_bytes() if path.exists() else b"missing")
    return h.hexdigest()[:16]


def _generated(page: str) -> Path:
    return GENERATED / f"{page}.json"


def _cached(page: str) -> dict[str, list[Any]] | None:
    path = _generated(page)
    if not path.exists():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    if saved.get("source") != _source_hash(page):
        return None
    if saved.get("recordings") != _reads_hash(saved.get("read", [])):
        return None
    glue: dict[str, list[Any]] = saved["glue"]
    return glue


def run_page(page: str) -> Facts:
    """Run ``docs/facts/<page>.py``'s ``facts(f)`` on each GPU its ``GPUS`` names (default
    the primary GPU, ``("h200",)``); a failed claim names the page and the GPU.

    The first GPU's keys are the page's keys as they are; another GPU's keys get its name
    in front (``h100_pct64``). Every claim is checked on every GPU: a claim about one GPU
    only says so in its code (``if f.gpu == "h200": claim(...)``) and in its words.
    """
    from . import words

    global _claims, _called, _seen
    module = _module(page)
    gpus = tuple(getattr(module, "GPUS", ("h200",)))
    first: Facts | None = None
    claims: dict[str, set[str]] = {}
    for gpu in gpus:
        f = Facts(page, module.EXAMPLE, gpu)
        f.words = _called = words.recording()
        _claims, _seen = claims, 0
        try:
            module.facts(f)
        except AssertionError as exc:
            raise ClaimError(f"{page}: a claim fails on the {gpu} recordings {exc}") from exc
        finally:
            words.stop()
            _claims, _called = None, []
        f.claims = claims
        if first is None:
            first = f
            continue
        for key, value in f.glue.items():
            first.glue[f"{gpu}_{key}"] = value
        first.words += f.words
        first._extra += f.read()
    assert first is not None, f"{page}: GPUS names no GPU"
    return first


@contextlib.contextmanager
def _one_at_a_time(page: str) -> Iterator[None]:
    """Hold the page's lock file while its facts are computed, so that several processes
    asking at once (pytest-xdist's workers) compute them once: the others wait, then read
    the cache. Where ``fcntl`` is missing (Windows) each computes; the write stays atomic."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    GENERATED.mkdir(parents=True, exist_ok=True)
    with open(GENERATED / f"{page}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def page_facts(page: str, refresh: bool = False) -> dict[str, list[Any]]:
    """The page's glue, ``{key: [kind, value]}`` (kind ``num`` or ``md``): from the cache
    while what it read is unchanged, else computed and written."""
    if not refresh:
        cached = _cached(page)
        if cached is not None:
            return cached
    with _one_at_a_time(page):
        # Another process may have written it while this one waited.
        cached = None if refresh else _cached(page)
        return cached if cached is not None else _compute(page)


def _compute(page: str) -> dict[str, list[Any]]:
    """Run the page's facts and write them to its cache (a whole file or none: a reader
    never meets half of one)."""
    f = run_page(page)
    root = recordings_root()
    read = sorted({str((r.trace_path.parent / "meta.json").relative_to(root)) for r in f.read()})
    out = {
        "page": page,
        "source": _source_hash(page),
        "read": read,
        "recordings": _reads_hash(read),
        "glue": f.glue,
        "words": [[word, list(args)] for word, args in f.words],
        "claims": {sentence: sorted(called) for sentence, called in sorted(f.claims.items())},
    }
    path = _generated(page)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    part.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(part, path)
    return f.glue


def page_words(page: str) -> list[tuple[str, tuple[Any, ...]]]:
    """Each word's check the page's facts made (:mod:`tracesite.words`), as
    ``(word, arguments)``: from the facts file, computed first if need be."""
    return [
        (w, tuple(tuple(a) if isinstance(a, list) else a for a in args))
        for w, args in _saved(page)["words"]
    ]


def page_claims(page: str) -> dict[str, list[str]]:
    """Each claim's sentence the page's facts made, with the words (:mod:`tracesite.words`)
    its check called: from the facts file, computed first if need be."""
    claims: dict[str, list[str]] = _saved(page)["claims"]
    return claims


def _saved(page: str) -> dict[str, Any]:
    """The page's facts file, computed first if need be."""
    page_facts(page)
    saved: dict[str, Any] = json.loads(_generated(page).read_text(encoding="utf-8"))
    return saved


def glue_facts(page: str) -> dict[str, Any]:
    """In a page's first hidden cell: paste every fact of ``page`` under its key.

    Numbers are glued as numbers, Markdown as Markdown, as ``myst_nb.glue`` would have
    glued them in the notebook. Returns the plain values by key.
    """
    from IPython import display
    from myst_nb import glue

    markdown: Any = display.Markdown  # untyped where IPython is installed, Any where not
    _module(page)  # its folders on sys.path, for the page's picture cells too
    found = page_facts(page)
    for key, (kind, value) in found.items():
        glue(key, markdown(value) if kind == "md" else value, display=False)
    return {key: value for key, (_, value) in found.items()}


def survey(page: str, gpu: str) -> tuple[list[str], str | None]:
    """Run ``page``'s facts on ``gpu``'s recordings, listing every failed :func:`claim`
    instead of stopping at the first (an exception, such as a missing recording or code
    that a failed claim left without its data, still stops it: its message is the second
    value). Writes nothing: for rewording a page for another GPU."""
    global _failed, _current
    module = _module(page)
    f = Facts(page, module.EXAMPLE, gpu)
    _failed, _current = [], f
    stopped = None
    try:
        module.facts(f)
    except Exception as exc:  # a missing recording, or code after a failed claim
        import traceback

        last = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(last.filename).name}:{last.lineno}"
        stopped = f"r{f.repeat} at {where}: {type(exc).__name__} {exc}".rstrip()
    finally:
        failed, _failed, _current = _failed, None, None
    return list(dict.fromkeys(failed)), stopped


def main(argv: list[str]) -> int:
    """``python -m tracesite facts [PAGE ...] [--refresh] [--survey=GPU]``: compute pages'
    facts; ``--survey=h100`` lists every claim that fails on that GPU's recordings."""
    if "-h" in argv or "--help" in argv:
        print(main.__doc__)
        return 0
    options = [a for a in argv if a.startswith("-")]
    odd = [a for a in options if a != "--refresh" and not a.startswith("--survey=")]
    if odd:
        print(f"facts: unknown option {odd[0]} (known: --refresh, --survey=GPU)", file=sys.stderr)
        return 2
    refresh = "--refresh" in argv
    gpu = next((a.split("=", 1)[1] for a in argv if a.startswith("--survey=")), None)
    names = [a for a in argv if not a.startswith("-")] or pages()
    if gpu is not None:  # every failed claim of each page on that GPU, nothing written
        for name in names:
            failed, stopped = survey(name, gpu)
            print(
                f"{name} on {gpu}: {len(failed)} failed claims"
                + (f"; stopped at {stopped}" if stopped else "")
            )
            for line in failed:
                print(f"  {line}")
        return 0
    unknown = sorted(set(names) - set(pages()))
    if unknown:
        print(f"facts: no facts module for {', '.join(unknown)} in {FACTS_DIR}", file=sys.stderr)
        return 2
    status = 0
    for name in names:
        try:
            found = page_facts(name, refresh=refresh)
        except ClaimError as exc:
            print(f"facts: {exc}", file=sys.stderr)
            status = 1
            continue
        print(f"facts: {name}: {len(found)} keys -> {_generated(name).relative_to(DOCS.parent)}")
    return status
