"""What a reader meets on a built page: the numbers behind the page rules.

Run it on pages of a built site (``python -m nox -s docs`` builds one)::

    python scripts/pagestats.py docs/_build/html/chapters/part1.html
    python scripts/pagestats.py docs/_build/html/chapters/*.html --json
    python scripts/pagestats.py docs/_build/html/chapters/part*.html --check

For each page it prints the words of visible prose (the article as a reader sees it:
code, tables and folded blocks left out), the reading time, the figures, the "What to
do" boxes, the lines of code in visible cells, the sections, the links to the glossary
and the page's weight (its HTML, its images and the downloads its article links, less
the recorded traces and the source archive, which are budgeted apart). A lesson page
(``chapters/partN.html``) also gets the lesson rules it breaks; ``--check`` exits 1 when
a lesson breaks one or a page is over its weight budget.

The browser checks (``tests/browser/sitecheck.py``) import their counting and their
limits from this module, so what it prints is what ``python -m nox -s browser`` holds
the pages to. The weight here is read from the HTML file; the browser check weighs what
the browser actually loaded, which can differ for an image a script adds.

Only the standard library: it runs on any Python that can run the build.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from html import unescape
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

#: A lesson page (``chapters/partN.html``): at most this many words of visible prose...
LESSON_MAX_WORDS = 2500
#: ... and at least this many figures (annotated trace pictures).
LESSON_MIN_FIGURES = 6
#: Links whose target a page's weight counts as a download.
DOWNLOAD_SUFFIXES = (".py", ".ipynb", ".zip", ".json.gz", ".whl", ".tar.gz")
#: Per page: its HTML, images and the downloads its content links, except the recorded
#: traces (``traces/...``), whose total the recordings test budgets (tests/site), and the
#: source archive (``downloads/*.tar.gz``), budgeted on its own.
BUDGET_BYTES = 1_500_000
#: Kinds of download that a page links but its weight leaves out (budgeted apart).
APART = ("trace", "archive")
#: Reading speed for the reading time: a careful read of technical prose.
WORDS_PER_MINUTE = 200

_ARTICLE = re.compile(r'<article class="bd-article"[^>]*>(.*)</article>', re.S)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_WHAT_TO_DO = re.compile(r'class="admonition-title"[^>]*>\s*What to do')
_CELL_INPUT = re.compile(r'<div class="cell_input[^"]*"[^>]*>.*?<pre\b[^>]*>(.*?)</pre>', re.S)
_TAG = re.compile(r"<[^>]+>")


def article(page_html: str) -> str:
    """The page's article (what the theme shows between its sidebars); the whole text
    when there is none."""
    found = _ARTICLE.search(page_html)
    return found.group(1) if found else page_html


def _drop(text: str, *tags: str) -> str:
    for tag in tags:
        text = re.sub(rf"<{tag}\b[^>]*>.*?</{tag}>", " ", text, flags=re.S)
    return text


def _visible(page_html: str) -> str:
    """The article without folded blocks (``<details>``: evidence, hidden cells' inputs)
    and without scripts and styles, which hold no prose."""
    return _drop(article(page_html), "details", "script", "style")


def count_words(html_text: str) -> int:
    """Words of prose in an HTML fragment, leaving out code blocks and tables."""
    prose = unescape(_TAG.sub(" ", _drop(html_text, "pre", "table")))
    return len(_WORD.findall(prose))


def lesson_measures(page_html: str) -> dict[str, int]:
    """What a reader meets on a built page: the words of its visible prose (the article,
    leaving out code, tables and folded blocks), its figures and its "What to do" boxes."""
    text = _visible(page_html)
    return {
        "words": count_words(text),
        "figures": len(re.findall(r"<img\b", text)),
        "what_to_do": len(_WHAT_TO_DO.findall(text)),
    }


def lesson_problems(where: str, measures: dict[str, int]) -> list[str]:
    """The lesson rules a page's ``measures`` break, one line each, starting with ``where``."""
    problems = []
    if measures["words"] > LESSON_MAX_WORDS:
        problems.append(f"{where}: {measures['words']} words of prose, over {LESSON_MAX_WORDS}")
    if measures["figures"] < LESSON_MIN_FIGURES:
        problems.append(f"{where}: {measures['figures']} figures, under {LESSON_MIN_FIGURES}")
    if not measures["what_to_do"]:
        problems.append(f"{where}: no 'What to do' box")
    return problems


def is_lesson(page: str) -> bool:
    """``chapters/part1.html`` and its siblings: the pages the lesson rules apply to."""
    return re.fullmatch(r"chapters/part\d\.html", page) is not None


def download_kind(url_path: str) -> str | None:
    """How a page's weight counts a link it makes to ``url_path``: ``"trace"`` (a recorded
    trace) or ``"archive"`` (the source archive), both budgeted apart, ``"download"``, or
    None for a link that is not a download."""
    path = url_path.lower()
    if not (path.endswith(DOWNLOAD_SUFFIXES) or "/_downloads/" in path):
        return None
    if "/traces/" in path and path.endswith(".json.gz"):
        return "trace"
    if "/downloads/" in path and path.endswith(".tar.gz"):
        return "archive"
    return "download"


def site_root_of(page: Path) -> Path:
    """The built site a page belongs to: its nearest folder that holds ``_static``."""
    for folder in page.resolve().parents:
        if (folder / "_static").is_dir():
            return folder
    raise ValueError(f"{page}: not inside a built site (no _static folder above it)")


def weight_items(page: Path, site_root: Path) -> list[tuple[str, str, int]]:
    """What the page costs a reader, as ``(path in the site, kind, bytes)``: its HTML, the
    images it shows (anywhere on the page) and the downloads its article links. Files
    under ``_static/`` (the theme, shared by every page) are not counted."""
    rel = page.resolve().relative_to(site_root.resolve()).as_posix()
    page_html = page.read_text(encoding="utf-8")
    base = "http://site/"
    items: dict[str, tuple[str, int]] = {}

    def add(url: str, kind: str) -> None:
        absolute = urljoin(base + rel, url)
        if not absolute.startswith(base):
            return  # another site: the browser check blocks and reports it
        target = unquote(urlsplit(absolute).path).lstrip("/")
        if target.startswith("_static/") or target in items:
            return
        if (site_root / target).is_file():
            items[target] = (kind, (site_root / target).stat().st_size)

    add("/" + rel, "html")
    for src in re.findall(r'<img\b[^>]*?\bsrc="([^"]+)"', page_html):
        add(unescape(src), "image")
    for href in re.findall(r'<a\b[^>]*?\bhref="([^"]+)"', article(page_html)):
        href = unescape(href)
        kind = download_kind(urlsplit(urljoin(base + rel, href)).path)
        if kind:
            add(href.split("#")[0], kind)
    return [(path, kind, size) for path, (kind, size) in items.items()]


def page_stats(page: Path, site_root: Path | None = None) -> dict[str, object]:
    """Every measure of one built page (see the module's docstring), with the rules it
    breaks under ``"problems"``."""
    site_root = site_root_of(page) if site_root is None else site_root
    rel = page.resolve().relative_to(site_root.resolve()).as_posix()
    page_html = page.read_text(encoding="utf-8")
    visible = _visible(page_html)
    measures = lesson_measures(page_html)
    inputs = _CELL_INPUT.findall(visible)
    code_lines = sum(len(unescape(_TAG.sub("", p)).strip().splitlines()) for p in inputs)
    glossary = re.findall(r'<a\b[^>]*?\bhref="[./]*glossary\.html(?:#[^"]*)?"', visible)
    items = weight_items(page, site_root)
    weight = sum(size for _, kind, size in items if kind not in APART)
    problems = lesson_problems(rel, measures) if is_lesson(rel) else []
    if weight > BUDGET_BYTES:
        problems.append(f"{rel}: weighs {weight:,} bytes, over the {BUDGET_BYTES:,} budget")
    return {
        "page": rel,
        **measures,
        "reading_min": math.ceil(measures["words"] / WORDS_PER_MINUTE),
        "code_lines": code_lines,
        "sections": len(re.findall(r"<h2\b", visible)),
        "glossary_links": len(glossary),
        "weight_bytes": weight,
        "apart_bytes": sum(size for _, kind, size in items if kind in APART),
        "problems": problems,
    }


def _text(stats: dict[str, object]) -> str:
    lines = [
        f"{stats['page']}",
        f"  prose          {stats['words']:>9,} words, about {stats['reading_min']} min to read",
        f"  figures        {stats['figures']:>9}",
        f"  'What to do'   {stats['what_to_do']:>9}",
        f"  code in cells  {stats['code_lines']:>9} lines",
        f"  sections (h2)  {stats['sections']:>9}",
        f"  glossary links {stats['glossary_links']:>9}",
        f"  weight         {stats['weight_bytes']:>9,} bytes of {BUDGET_BYTES:,}"
        f" (traces and archive apart: {stats['apart_bytes']:,})",
    ]
    problems = stats["problems"]
    assert isinstance(problems, list)
    lines += [f"  BREAKS         {p}" for p in problems]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python scripts/pagestats.py",
        description="Page statistics of built HTML pages: prose, figures, boxes, weight.",
    )
    parser.add_argument("pages", nargs="+", type=Path, help="built pages (.html)")
    parser.add_argument("--site", type=Path, help="the built site's root (default: found)")
    parser.add_argument("--json", action="store_true", help="one JSON object per page")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a page breaks a rule it is held to"
    )
    args = parser.parse_args(argv)
    broken = False
    for page in args.pages:
        try:
            stats = page_stats(page, args.site)
        except (OSError, ValueError) as exc:
            print(f"{page}: {exc}", file=sys.stderr)
            return 2
        broken = broken or bool(stats["problems"])
        print(json.dumps(stats) if args.json else _text(stats))
    return 1 if args.check and broken else 0


if __name__ == "__main__":
    sys.exit(main())
