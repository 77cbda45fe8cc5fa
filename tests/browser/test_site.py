"""The built site, page by page, in headless Chromium.

Run after a docs build::

    python -m nox -s browser
    # or, by hand, on any built copy of the site:
    python -m pytest -q -m browser tests/browser --site docs/_build/html

Each failure names the page and the element (see sitecheck.py). The page-weight table
is printed at the end of the run and written to artifacts/page-weights.json; the
screenshots for reviewers go to artifacts/screenshots/.
"""

from __future__ import annotations

import pytest
import sitecheck

pytestmark = pytest.mark.browser

#: Pages photographed for reviewers at desktop and phone width.
SCREENSHOTS = {
    "home": "index.html",
    "quickstart": "quickstart.html",
    "part1": "chapters/part1.html",
    "example01": "auto_examples/01_matmul_add/01a_table_and_timeline.html",
}


def _fail(problems: list[str]) -> None:
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_lessons_within_their_rules(site_root):
    """Each lesson: at most 2,500 words of visible prose, 6 figures, a "What to do" box."""
    assert list(site_root.glob("chapters/part[0-9].html")), "no lesson pages built"
    _fail(sitecheck.check_lessons(site_root))


def test_links(site_root):
    """lychee, offline: every link, image and anchor of every page resolves."""
    _fail(sitecheck.check_links(site_root))


def test_page(page_path, page, site_root, base_url, weights, fetched):
    """Loads clean and offline; images load; downloads answer; within the weight budget;
    and axe-core finds no violation (alt text, names, language, title, ids, contrast)."""
    url = base_url + page_path
    report = sitecheck.check_page(page, url, site_root, fetched=fetched)
    if report.weight is not None:
        weights[report.page] = report.weight
    problems = report.problems
    if report.weight is not None:  # the page loaded: axe checks it as it stands
        problems += sitecheck.check_axe(page, url)
    _fail(problems)


def test_at_1280(page_path, page, base_url):
    """At 1280 px, on one load: every figure's smallest text shows at >= 10 px, no label
    overlaps another or is cut off, and each figure is a focusable, labelled zoom button;
    the frame has a favicon that loads, exactly one search control, and "on this page"
    contents (>= 2 entries) on every chapter and example page; the first figure opens
    large on a click and on Enter, and Escape or a click closes it."""
    _fail(sitecheck.check_laptop(page, base_url + page_path))


def test_phone_width(page_path, page, base_url):
    """At 390 px nothing scrolls sideways but tables and code in their own scroller."""
    _fail(sitecheck.check_phone(page, base_url + page_path))


def test_dark_mode(page_path, dark_page, base_url):
    """With the theme in dark mode, figures stay visible and text keeps its contrast (axe)."""
    url = base_url + page_path
    problems = sitecheck.check_dark(dark_page, url)
    if not problems or "did not switch on" not in problems[0]:
        problems += sitecheck.check_axe(dark_page, url, only=sitecheck.AXE_DARK, mode="dark")
    _fail(problems)


def test_search_finds_part1(page, base_url):
    """Searching a launch call every Part 1 trace has finds the Part 1 pages."""
    _fail(
        sitecheck.check_search(
            page, base_url, "cudaLaunchKernel", ["chapters/part1", "auto_examples/01_matmul_add/"]
        )
    )


@pytest.mark.parametrize("width", [1366, sitecheck.PHONE_WIDTH], ids=["desktop", "phone"])
@pytest.mark.parametrize("name", list(SCREENSHOTS))
def test_screenshot(name, width, page, site_root, base_url, artifacts):
    """Full-page screenshots for reviewers: artifacts/screenshots/<page>-<width>.png."""
    rel = SCREENSHOTS[name]
    if not (site_root / rel).exists():
        pytest.fail(f"{rel}: not in the built site, nothing to photograph", pytrace=False)
    out = artifacts / "screenshots" / f"{name}-{width}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900 if width > 800 else 844})
    page.goto(base_url + rel, wait_until="load")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 1000


@pytest.mark.parametrize("name", list(SCREENSHOTS))
def test_screenshot_dark(name, dark_page, site_root, base_url, artifacts):
    """The same pages in dark mode at desktop width: <page>-1366-dark.png."""
    rel = SCREENSHOTS[name]
    if not (site_root / rel).exists():
        pytest.fail(f"{rel}: not in the built site, nothing to photograph", pytrace=False)
    out = artifacts / "screenshots" / f"{name}-1366-dark.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    dark_page.set_viewport_size({"width": 1366, "height": 900})
    dark_page.goto(base_url + rel, wait_until="load")
    dark_page.wait_for_load_state("networkidle")
    assert dark_page.evaluate("document.documentElement.dataset.theme") == "dark"
    dark_page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 1000


#: Pages that must offer the wheel and the source archive (what a reader leaves with).
OFFER_DOWNLOADS = ("index.html", "quickstart.html", "read-your-own-trace.html")


@pytest.mark.parametrize("rel", OFFER_DOWNLOADS)
def test_offers_wheel_and_source(rel, page, site_root, base_url, fetched):
    """The page links the tracereader wheel and the source archive, and both download."""
    page.goto(base_url + rel, wait_until="load")
    hrefs = page.eval_on_selector_all("article a[href]", "els => els.map(a => a.href)")
    wheels = [h for h in hrefs if "/downloads/" in h and h.endswith(".whl")]
    archives = [h for h in hrefs if "/downloads/" in h and h.endswith(".tar.gz")]
    problems = [
        f"{rel}: no link to the {what}"
        for what, found in (("tracereader wheel", wheels), ("source archive", archives))
        if not found
    ]
    for url in wheels + archives:
        if url not in fetched:
            fetched[url] = sitecheck._fetch_problem(page, url)
        if fetched[url]:
            problems.append(f"{rel}: download {url}: {fetched[url]}")
    _fail(problems)


def test_archives_within_their_budget(site_root):
    """The source archives, which pages link but whose weight they leave out, stay within
    their own total budget."""
    archives = sorted((site_root / "downloads").glob("*.tar.gz"))
    assert archives, f"no source archive under {site_root / 'downloads'}"
    total = sum(p.stat().st_size for p in archives)
    assert total <= sitecheck.ARCHIVE_BUDGET_BYTES, (
        f"source archives weigh {sitecheck.fmt_bytes(total)}, over their "
        f"{sitecheck.fmt_bytes(sitecheck.ARCHIVE_BUDGET_BYTES)} budget"
    )


def _article(site_root, rel: str) -> str:
    import re

    text = (site_root / rel).read_text(encoding="utf-8")
    found = re.search(r'<article class="bd-article"[^>]*>(.*)</article>', text, re.S)
    assert found, f"{rel}: no article"
    return found.group(1)


def test_quickstart_is_short_and_shows_traces(site_root):
    """The quick start: at most 900 words of prose (it ends in an action and says what a
    CPU-only trace shows), at least two annotated trace pictures,
    and it comes first: before Part 1 in the home page's path and in the chapters' list."""
    import re

    article = _article(site_root, "quickstart.html")
    words = sitecheck.lesson_measures(article)["words"]  # what scripts/pagestats.py counts
    assert words <= 900, words
    alts = re.findall(r'<figure class="tr-figure">\s*<img [^>]*alt="([^"]+)"', article)
    assert len(alts) >= 2 and all(len(a) > 40 for a in alts), alts
    home = (site_root / "index.html").read_text(encoding="utf-8")
    links = re.findall(
        r'href="(quickstart|chapters/part\d)\.html"', _article(site_root, "index.html")
    )
    assert links and links[0] == "quickstart", links
    nav = re.findall(
        r'href="(quickstart|chapters/part\d)\.html"', home.split('class="bd-article"')[0]
    )
    assert nav and nav[0] == "quickstart", nav


def test_cheatsheet_opens_with_its_table(site_root):
    """The cheatsheet's table (>= 20 rows, each linking its entry, on the page or on the
    matmul details' page) comes before any picture, its rows about real models first, and
    the page stays short (at most 2,300 words of visible prose)."""
    import re

    article = _article(site_root, "cheatsheet.html")
    table = re.search(r"<table\b.*?</table>", article, re.S)
    assert table and table.start() < article.find("<img"), "no table before the first picture"
    rows = re.findall(r"<tr\b.*?</tr>", table.group(0), re.S)[1:]  # less the header
    links = [re.search(r'href="(cheatsheet-matmul\.html)?#[^"]+"', r) for r in rows]
    assert len(rows) >= 20 and all(links), len(rows)
    here = [m is not None and m.group(1) is None for m in links]
    assert any(here) and here == sorted(here, reverse=True), "the page's own rows come first"
    words = sitecheck.lesson_measures(article)["words"]  # what scripts/pagestats.py counts
    assert words <= 2300, f"the cheatsheet reads in under ten minutes: {words} words"
