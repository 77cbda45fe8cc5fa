"""``tracereader render`` (tracereader._render) and the trace links HTML (tracereader._html)."""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from _builders import make_doc

from tracereader._html import format_size, trace_links_html
from tracereader._render import add_arguments, run

ROOT = Path(__file__).resolve().parents[1]
PERFETTO_JS = ROOT / "docs" / "_static" / "perfetto.js"


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps(make_doc()).encode()))
    return path


def render(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tracereader render")
    add_arguments(parser)
    return run(parser.parse_args([str(a) for a in argv]))


def test_render_step_to_png(trace_file, tmp_path, capsys):
    out = tmp_path / "pics" / "step.png"
    assert render(trace_file, "--out", out, "--step", "2") == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == str(out)
    assert "ProfilerStep#2" in printed[1] and "GPU 0 stream 7" in printed[1]
    assert b"Description" in out.read_bytes()  # alt text embedded in the PNG


def test_render_region_to_svg(trace_file, tmp_path, capsys):
    out = tmp_path / "block.svg"
    assert render(trace_file, "-o", out, "--region", "block", "--python", "--no-arrows") == 0
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    alt = capsys.readouterr().out.splitlines()[1]
    assert "Python frame" in alt and "0 arrows" in alt


def test_render_window_in_us_from_trace_start(trace_file, tmp_path, capsys):
    out = tmp_path / "w.png"
    assert render(trace_file, "--out", out, "--window", "1000", "1300", "--dpi", "80") == 0
    alt = capsys.readouterr().out.splitlines()[1]
    assert "starting 1 ms into the trace" in alt and "lasting 300 µs" in alt


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--step", "7"], "no step 'ProfilerStep#7'"),
        (["--region", "nope"], "no record_function region 'nope'"),
        (["--window", "50", "10"], "T1 must be after T0"),
    ],
)
def test_render_user_errors(trace_file, tmp_path, capsys, argv, message):
    assert render(trace_file, "--out", tmp_path / "x.png", *argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_render_rejects_bad_inputs(tmp_path, capsys, trace_file):
    assert render(tmp_path / "missing.json", "--out", tmp_path / "x.png") == 2
    assert "no such file" in capsys.readouterr().err
    notatrace = tmp_path / "n.json"
    notatrace.write_text('{"hello": 1}')
    assert render(notatrace, "--out", tmp_path / "x.png") == 2
    assert "not a trace" in capsys.readouterr().err
    assert render(trace_file, "--out", tmp_path / "x.jpg") == 2
    assert ".png, .svg or .pdf" in capsys.readouterr().err


def test_step_region_window_are_exclusive(trace_file, tmp_path):
    with pytest.raises(SystemExit):
        render(trace_file, "--out", tmp_path / "x.png", "--step", "1", "--region", "block")


# ---------------------------------------------------------------------- HTML + JS


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


def test_perfetto_js_follows_the_postmessage_handshake():
    js = PERFETTO_JS.read_text()
    for needle in (
        '"https://ui.perfetto.dev"',
        "window.open(ORIGIN)",
        'postMessage("PING", ORIGIN)',
        '"PONG"',
        "perfetto: { buffer: buffer, title: title, fileName: fileName }",
        "arrayBuffer()",
        "DOMContentLoaded",
        "button.tr-perfetto[data-trace]",
        "event.origin !== ORIGIN",
    ):
        assert needle in js, needle
    # The tab must open inside the click handler, before the (async) fetch.
    assert js.index("window.open(ORIGIN)") < js.index("fetch(url)")
