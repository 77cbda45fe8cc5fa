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


