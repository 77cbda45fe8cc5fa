"""The checker itself: a copy of a real page, broken on purpose, is reported element by
element, with the page's path on every line, and nothing else new is reported: by the
hand-written checks and by the tools (lychee for links, axe-core for accessibility)."""

from __future__ import annotations

import re
import shutil
import struct
import zlib

import pytest
import sitecheck

pytestmark = pytest.mark.browser

PAGE = "chapters/part1.html"  # a real page of the build, theme and all

# Injected at the top of the article. Each line is one thing a reader would trip over.
BROKEN = """
<p><img src="../_images/no-such-figure.png" alt="a figure that was never built"></p>
<p><img src="../_images/selftest-noalt.png"></p>
<p><img src="../_images/selftest-transparent.png" alt="dark lines on a transparent PNG"
        style="background-color: transparent"></p>
<p><a href="../index.html#no-such-anchor">a stale anchor</a>
   <a href="../no-such-page.html">a page that does not exist</a>
   <a href="../_downloads/selftest/missing.json.gz">a trace that is not there</a>
   <a href="../_downloads/selftest/empty.py">an empty script</a>
   <a href="../_downloads/selftest/big.zip">a heavy zip</a></p>
<script src="https://cdn.example.com/lib.js"></script>
<script>console.error("self-test boom")</script>
<div style="width: 900px; height: 4px">a strip too wide for a phone</div>
<p style="color: #333">grey text for a light page only</p>
<figure class="tr-figure"><img src="../_images/selftest-figure.png" alt="a planted figure"
  width="600" height="60" data-min-text-px="7.5" data-width-1x="600" data-text-overlaps="2"
  data-text-clipped="1" data-text-issues="'aten::mm' overlaps 'cudaLaunchKernel'"></figure>
<figure class="tr-figure"><img src="../_images/selftest-figure.png" alt="a hand-made figure"
  width="600" height="60"></figure>
<style>nav.page-toc { display: none; }</style>
"""
# Outside the article: a second search box in the page's frame, and a favicon that 404s.
FRAME = [
    (
        '<div class="article-header-buttons">',
        '<div class="article-header-buttons"><input type="search" name="q" size="8" '
        'aria-label="a second search box">',
    ),
    ('href="../_static/favicon.svg"', 'href="../_static/no-such-favicon.svg"'),
]

# (what must be reported, as a regex over the problem lines)
EXPECTED = [
    r"^chapters/part1\.html: <img src=\"\.\./_images/no-such-figure\.png\"> did not load",
    r"^chapters/part1\.html: request for _images/no-such-figure\.png: GET -> HTTP 404",
    r"^chapters/part1\.html: axe image-alt: <img src=\"\.\./_images/selftest-noalt\.png\">",
    r"^chapters/part1\.html: link to index\.html#no-such-anchor: Cannot find fragment",
    r"^chapters/part1\.html: link to no-such-page\.html: File not found",
    r"^chapters/part1\.html: link to _images/no-such-figure\.png: File not found",
    r"^chapters/part1\.html: link to _downloads/selftest/missing\.json\.gz: File not found",
    r"^chapters/part1\.html: link to _static/no-such-favicon\.svg: File not found",
    r"^chapters/part1\.html: download \.\./_downloads/selftest/missing\.json\.gz: HTTP 404",
    r"^chapters/part1\.html: download \.\./_downloads/selftest/empty\.py: empty body",
    r"^chapters/part1\.html: weighs .* over the 1\.50 MB budget; biggest: _downloads/selftest/big\.zip",
    r"^chapters/part1\.html: needs the network: script request to https://cdn\.example\.com/lib\.js",
    r"^chapters/part1\.html: console error: self-test boom",
    r"^chapters/part1\.html: at 390 px <div>a strip too wide for a phone reaches 9\d\d px",
    r"^chapters/part1\.html \(dark\): axe color-contrast: <p style=\"color: #333\">grey text",
    r"^chapters/part1\.html \(dark\): <img src=\"\.\./_images/selftest-transparent\.png\"> is transparent",
    r"^chapters/part1\.html: figure \"a planted figure\": its smallest text shows at 7\.5 px \(< 10 px\)",
    r"^chapters/part1\.html: figure \"a planted figure\": 2 overlapping label pairs, 1 labels cut off "
    r"\('aten::mm' overlaps 'cudaLaunchKernel'\)",
    r"^chapters/part1\.html: figure \"a hand-made figure\": not measured",
    r"^chapters/part1\.html: 2 visible search controls at 1280 px, not 1: .*<input>",
    r"^chapters/part1\.html: favicon _static/no-such-favicon\.svg: HTTP 404",
    # the browser asks for the icon as it loads the page: the request watcher sees it too
    r"^chapters/part1\.html: request for _static/no-such-favicon\.svg: GET -> HTTP 404",
    r"^chapters/part1\.html: no \"on this page\" contents visible at 1280 px",
]
# Also acceptable among the new lines: the page-level consequence of the wide strip.
CONSEQUENCES = [r"^chapters/part1\.html: at 390 px the page scrolls sideways"]


def _png(width: int, height: int, pixel) -> bytes:
    """A small RGBA PNG, written by hand (no imaging library needed)."""
    rows = b"".join(
        b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _all_checks(browser, base_url: str, site) -> list[str]:
    url = base_url + PAGE
    light = browser.new_context(color_scheme="light")
    dark = browser.new_context(color_scheme="dark")
    dark.add_init_script(sitecheck.DARK_INIT)
    for ctx in (light, dark):  # check_page reports external requests; elsewhere just drop them
        ctx.route(lambda url: not sitecheck.is_local(url), lambda route: route.abort())
    try:
        page = light.new_page()
        problems = sitecheck.check_links(site)
        problems += sitecheck.check_page(page, url, site).problems
        problems += sitecheck.check_axe(page, url)
        problems += sitecheck.check_phone(page, url)
        dark_page = dark.new_page()
        problems += sitecheck.check_dark(dark_page, url)
        problems += sitecheck.check_axe(dark_page, url, only=sitecheck.AXE_DARK, mode="dark")
        problems += sitecheck.check_figures(page, url)
        problems += sitecheck.check_chrome(page, url)
    finally:
        light.close()
        dark.close()
    return problems


def test_broken_copy_is_reported_by_page_and_element(tmp_path, site_root, chromium):
    site = tmp_path / "site"
    shutil.copytree(site_root, site)
    with sitecheck.serve(site) as base_url:
        before = set(_all_checks(chromium, base_url, site))

        images = site / "_images"
        images.mkdir(exist_ok=True)
        (images / "selftest-noalt.png").write_bytes(_png(8, 8, lambda x, y: (40, 90, 200, 255)))
        (images / "selftest-figure.png").write_bytes(_png(60, 6, lambda x, y: (200, 200, 200, 255)))
        (images / "selftest-transparent.png").write_bytes(
            _png(32, 32, lambda x, y: (0, 0, 0, 255) if x == y else (0, 0, 0, 0))
        )
        downloads = site / "_downloads" / "selftest"
        downloads.mkdir(parents=True)
        (downloads / "empty.py").write_bytes(b"")
        (downloads / "big.zip").write_bytes(b"\x00" * 1_600_000)
        page_file = site / PAGE
        html = page_file.read_text(encoding="utf-8")
        marker = '<article class="bd-article">'
        assert marker in html, f"{PAGE}: the theme's article element moved; update the self-test"
        html = html.replace(marker, marker + BROKEN, 1)
        for old, new in FRAME:
            assert old in html, f"{PAGE}: {old!r} moved; update the self-test"
            html = html.replace(old, new, 1)
        page_file.write_text(html, encoding="utf-8")

        after = _all_checks(chromium, base_url, site)

    new = [line for line in after if line not in before]
    missing = [rx for rx in EXPECTED if not any(re.search(rx, line) for line in new)]
    unexplained = [
        line for line in new if not any(re.search(rx, line) for rx in EXPECTED + CONSEQUENCES)
    ]
    assert not missing, "not reported:\n" + "\n".join(missing) + "\n\nreported:\n" + "\n".join(new)
    assert not unexplained, "reported but not planted:\n" + "\n".join(unexplained)


def test_list_pages_skips_theme_templates(site_root):
    pages = sitecheck.list_pages(site_root)
    assert "index.html" in pages
    assert not [p for p in pages if p.startswith("_static/")]
