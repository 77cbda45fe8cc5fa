"""``tracereader render`` (tracereader._render) and the Perfetto button's script."""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import pytest
from _builders import make_doc

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


def test_render_without_matplotlib_is_one_line(trace_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert render(trace_file, "--out", tmp_path / "x.png") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tracereader render: drawing needs matplotlib")
    # both ways: the extra from an index, and plain matplotlib for the wheel from the site
    assert "pip install 'tracereader[draw]'" in err and "pip install matplotlib" in err
    assert not (tmp_path / "x.png").exists()


def test_step_region_window_are_exclusive(trace_file, tmp_path):
    with pytest.raises(SystemExit):
        render(trace_file, "--out", tmp_path / "x.png", "--step", "1", "--region", "block")


# ---------------------------------------------------------------------- JS


def test_perfetto_js_follows_the_postmessage_handshake():
    js = PERFETTO_JS.read_text()
    for needle in (
        '"https://ui.perfetto.dev"',
        'window.open("")',
        "win.location.href = ORIGIN",
        'postMessage("PING", ORIGIN)',
        '"PONG"',
        "perfetto: { buffer: buffer, title: title, fileName: fileName }",
        "arrayBuffer()",
        "DOMContentLoaded",
        "button.tr-perfetto[data-trace]",
        "event.origin !== ORIGIN",
    ):
        assert needle in js, needle
    # The tab must open inside the click handler, before the (async) fetch; it goes to
    # Perfetto only once the trace is in (a failed fetch closes a tab that never left).
    assert js.index('window.open("")') < js.index("fetch(url)")
    assert js.index("fetch(url)") < js.index("win.location.href = ORIGIN")
