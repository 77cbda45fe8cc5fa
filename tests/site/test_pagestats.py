"""scripts/pagestats.py, the page-statistics tool, on a small built page made here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import pagestats  # noqa: E402

# A lesson page as the theme builds one: the frame around the article is not counted;
# inside it, folded blocks, code, tables and scripts hold no prose a reader meets.
PAGE = """<!DOCTYPE html><html><head><title>Part 1</title>
<script>var words = "none of these count";</script></head>
<body><nav><a href="../index.html">Home page words outside the article</a>
<img src="../_static/logo.svg" alt="the theme's logo"></nav>
<article class="bd-article" role="main">
<h1>Part 1: one matmul</h1>
<section><h2>The table</h2>
<p>Read the <a class="reference internal" href="../glossary.html#term-Self-CPU">self
time</a> first &amp; then the total.</p>
<figure class="tr-figure"><img src="../_images/one.png" alt="a timeline"></figure>
<div class="cell docutils container"><div class="cell_input docutils container">
<div class="highlight-python notranslate"><div class="highlight"><pre>import torch
x = torch.ones(4)
print(x)
</pre></div></div></div></div>
<table><tr><td>table words do not count</td></tr></table>
<div class="admonition-what-to-do admonition"><p class="admonition-title">What to do</p>
<p>Sort by self time.</p></div>
</section>
<section><h2>Evidence</h2>
<details><summary>Folded evidence words</summary><img src="../_images/two.png" alt="x">
<p>These words are folded away.</p></details>
<p>See the <a href="../glossary.html">glossary</a>, the
<a href="../_downloads/abc/01a_table.py" download>script</a>, its
<a href="../traces/01_matmul_add/4096/r1.json.gz">trace</a> and the
<a href="../downloads/site-src.tar.gz">source</a>.</p>
</section>
</article></body></html>
"""

# Files the page uses, with their sizes: the page's weight counts the image it shows and
# the script it links, and leaves the theme, the trace and the source archive out.
FILES = {
    "_static/logo.svg": 50,
    "_images/one.png": 1000,
    "_images/two.png": 200,
    "_downloads/abc/01a_table.py": 300,
    "traces/01_matmul_add/4096/r1.json.gz": 4000,
    "downloads/site-src.tar.gz": 7000,
}


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "html"
    for rel, size in FILES.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(b"x" * size)
    (site / "chapters").mkdir()
    (site / "chapters" / "part1.html").write_text(PAGE, encoding="utf-8")
    return site


# The visible prose, word by word (a number or "&" is no word): "Part 1: one matmul" (3),
# "The table" (2), the paragraph (8), the box's title and text (3 + 4), "Evidence" (1),
# the links' sentence (10).
WORDS = 3 + 2 + 8 + 3 + 4 + 1 + 10


def test_the_counts_of_a_small_lesson_page(tmp_path):
    site = _site(tmp_path)
    page = site / "chapters" / "part1.html"
    stats = pagestats.page_stats(page)
    html_bytes = page.stat().st_size
    assert stats["page"] == "chapters/part1.html"
    assert stats["words"] == WORDS
    assert stats["reading_min"] == 1
    assert stats["figures"] == 1  # the folded one and the theme's logo are not the lesson's
    assert stats["what_to_do"] == 1
    assert stats["code_lines"] == 3
    assert stats["sections"] == 2
    assert stats["glossary_links"] == 2
    assert stats["weight_bytes"] == html_bytes + 1000 + 200 + 300
    assert stats["apart_bytes"] == 4000 + 7000
    assert stats["problems"] == [
        f"chapters/part1.html: 1 figures, under {pagestats.LESSON_MIN_FIGURES}"
    ]


def test_the_browser_checks_count_the_same_way(tmp_path):
    """The lesson rules' counts are the ones the browser check imports."""
    measures = pagestats.lesson_measures(PAGE)
    assert measures == {"words": WORDS, "figures": 1, "what_to_do": 1}
    assert pagestats.download_kind("/traces/05/x/r1.json.gz") == "trace"
    assert pagestats.download_kind("/downloads/src.tar.gz") == "archive"
    assert pagestats.download_kind("/_downloads/abc/story.ipynb") == "download"
    assert pagestats.download_kind("/chapters/part2.html") is None


def test_the_command_prints_each_page(tmp_path):
    site = _site(tmp_path)
    script = ROOT / "scripts" / "pagestats.py"
    page = site / "chapters" / "part1.html"
    done = subprocess.run(
        [sys.executable, str(script), str(page)], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("chapters/part1.html\n")
    assert f"{WORDS:>9,} words, about 1 min to read" in done.stdout
    assert "BREAKS         chapters/part1.html: 1 figures, under 6" in done.stdout
    as_json = subprocess.run(
        [sys.executable, str(script), "--json", "--check", str(page)],
        capture_output=True,
        text=True,
    )
    assert as_json.returncode == 1  # --check: the lesson has too few figures
    assert json.loads(as_json.stdout)["words"] == WORDS


def test_a_page_outside_a_built_site_is_one_line(tmp_path):
    stray = tmp_path / "stray.html"
    stray.write_text(PAGE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "pagestats.py"), str(stray)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip().endswith("not inside a built site (no _static folder above it)")
