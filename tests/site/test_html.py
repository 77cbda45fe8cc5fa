"""The site's trace links HTML (tracesite.html)."""

from __future__ import annotations

import re

import pytest
from tracesite.html import format_size, trace_links_html


def test_trace_links_html():
    html = trace_links_html("../_static/traces/64_bf16.json.gz", 12_800, "64×64 bf16 <eager>")
    assert 'href="../_static/traces/64_bf16.json.gz"' in html
    assert 'download="64_bf16.json.gz"' in html
    assert "Download trace (.json.gz, 12 KiB)" in html
    button = re.search(r"<button[^>]*>", html).group(0)
    assert 'class="tr-perfetto"' in button
    assert 'data-trace="../_static/traces/64_bf16.json.gz"' in button
    assert 'data-title="64×64 bf16 &lt;eager&gt;"' in button
    assert " hidden" in button  # revealed by perfetto.js, so no dead button without JS
    assert "<script" not in html and "onclick" not in html


def test_trace_links_html_offers_the_report_when_given():
    plain = trace_links_html("t/r0.json.gz", 10, "x")
    assert "tr-report" not in plain
    html = trace_links_html("t/r0.json.gz", 10, "x", report=("t/r0.report.html", 120_000))
    link = re.search(r'<a class="tr-report"[^>]*>.*?</a>', html).group(0)
    assert 'href="t/r0.report.html"' in link and "117 KiB" in link
    assert html.index("tr-download") < html.index("tr-report") < html.index("tr-perfetto")


def test_report_of_writes_the_report_beside_the_trace_in_the_built_site(tmp_path, monkeypatch):
    from tracesite import load, notebook

    monkeypatch.setattr(notebook, "EXTRA", tmp_path)
    r = load("01_matmul_add", "64_bf16").rep
    url, size = notebook.report_of(r, "../")
    written = tmp_path / "traces" / r.gpu / "01_matmul_add" / "64_bf16" / f"r{r.repeat}.report.html"
    assert url == f"../traces/{r.gpu}/01_matmul_add/64_bf16/r{r.repeat}.report.html"
    assert size == written.stat().st_size > 10_000
    assert "<html" in written.read_text(encoding="utf-8")[:200].lower()


def test_trace_links_html_escapes_attributes():
    html = trace_links_html('a"b.json.gz', 10, 'x" onmouseover="alert(1)')
    assert 'onmouseover="' not in html
    assert "&quot;" in html


def test_format_size():
    assert format_size(740) == "740 B"
    assert format_size(12_800) == "12 KiB"
    assert format_size(3 * 1024 * 1024 // 2) == "1.5 MiB"
    with pytest.raises(ValueError):
        trace_links_html("t.json.gz", -1, "t")


def _attrs(html_text: str) -> dict[str, str]:
    img = re.search(r"<img [^>]*>", html_text).group(0)
    return dict(re.findall(r'([\w-]+)="([^"]*)"', img))


def _png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _figure(width_in: float, fontsize: float, overlap: bool = False):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, 2), layout="constrained")
    ax = fig.subplots()
    ax.tick_params(labelsize=fontsize)
    ax.set_xlabel("time (µs)", fontsize=fontsize)
    if overlap:
        ax.text(0.2, 0.5, "a label", fontsize=fontsize)
        ax.text(0.22, 0.5, "another label", fontsize=fontsize)
    return fig


def test_figure_is_sharp_at_2x_and_laid_out_at_1x():
    from tracesite.html import DENSITY, FigureHTML

    fig = FigureHTML(_figure(5, 10), alt="a plot", caption="A plot.", dpi=96)
    attrs = _attrs(fig._repr_html_())
    width, height = _png_size(fig.png)
    assert (int(attrs["width"]), int(attrs["height"])) == (fig.width, fig.height)
    assert abs(width - DENSITY * fig.width) <= 1 and abs(height - DENSITY * fig.height) <= 1
    assert 5 * 96 * 0.9 < fig.width <= 5.2 * 96  # tight: the 5 in figure, 0.1 in pad a side
    assert attrs["data-width-1x"] == attrs["width"]
    assert attrs["data-min-text-px"] == "13.3"  # 10 pt at 96 dpi, rounded down
    assert attrs["data-text-overlaps"] == attrs["data-text-clipped"] == "0"
    assert "data-text-issues" not in attrs
    assert attrs["alt"] == "a plot" and "<figcaption>A plot.</figcaption>" in fig._repr_html_()


def test_figure_text_never_under_10_px_unless_too_wide():
    from tracesite.html import COLUMN_PX, FigureHTML

    small = FigureHTML(_figure(5, 6), alt="small text", dpi=80)  # 6 pt at 80 dpi: 6.7 px
    assert small.min_text_px >= 10 and small.dpi > 80  # shown larger instead
    wide = FigureHTML(_figure(14, 8), alt="wide", dpi=96)  # 1344 px: the page would shrink it
    assert wide.width <= COLUMN_PX
    assert wide.min_text_px < 10  # 8 pt over 14 in, in a column: the check fails it
    assert float(_attrs(wide._repr_html_())["data-min-text-px"]) < 10


def test_figure_records_overlapping_labels():
    from tracesite.html import FigureHTML

    fig = FigureHTML(_figure(5, 10, overlap=True), alt="two labels on top of each other")
    attrs = _attrs(fig._repr_html_())
    assert attrs["data-text-overlaps"] == "1"
    assert "&#x27;a label&#x27; overlaps &#x27;another label&#x27;" in attrs["data-text-issues"]


def test_figure_png_can_be_replaced_by_a_subclass():
    """A subclass that re-encodes ``self.png`` (the cheatsheet's palette PNG) is shown."""
    import base64

    from tracesite.html import FigureHTML

    fig = FigureHTML(_figure(5, 10), alt="a plot")
    fig.png = fig.png + b"extra"
    assert base64.b64encode(fig.png).decode("ascii") in fig._repr_html_()


def test_figure_needs_alt_text():
    from tracesite.html import FigureHTML

    with pytest.raises(ValueError, match="alt text"):
        FigureHTML(_figure(5, 10))
