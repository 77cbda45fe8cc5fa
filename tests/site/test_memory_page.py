"""The site's own memory snapshot viewer (docs/_ext/memory_page.py): the numbers it reduces
a snapshot to, and the page it writes (self-contained, offline)."""

from __future__ import annotations

import json
import pickle
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import memory_page as mp
import pytest
from _offline_page import offline_page, outside

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20
T0_US = 1_000_000  # the first event's CPU time


def frame(name: str, line: int, filename: str = "/env/lib/python3.12/site-packages/m/x.py") -> dict:
    return {"filename": filename, "line": line, "name": name}


def event(
    action: str, addr: int, size_mib: float, t_us: int, frames: list[dict] | None = None
) -> dict:
    return {"action": action, "addr": addr, "size": int(size_mib * MIB), "stream": 0,
            "time_us": T0_US + t_us, "frames": frames or []}  # fmt: skip


def synthetic() -> dict:
    """Two blocks allocated before the trace (P1: 1000 MiB, alive to the end; P2: 500 MiB,
    freed at 45 µs), and three allocated in it. By hand, in MiB after each event:

    =====  ======================  =====
    t, µs  event                   total
    =====  ======================  =====
    0      alloc A 100             1600
    10     alloc B 300             1900   <- the peak: A, B, P1, P2 alive; 400 of it in the trace
    15     free_requested A        1900   (no change: A still allocated)
    20     free_completed A        1800
    30     segment_alloc (4096)    1800   (reserved, not allocated)
    40     alloc C 50              1850
    45     free_completed P2       1350
    50     free_completed B        1050
    =====  ======================  =====

    At the end P1 and C are allocated (1050 MiB), as the segments say.
    """
    lin = [frame("forward", 134, "/env/lib/python3.12/site-packages/torch/nn/modules/linear.py"),
           frame("step", 319, "/home/me/examples/06_train_step/_06_common.py")]  # fmt: skip
    trace = [
        event("alloc", 0xA000, 100, 0, lin),
        event("alloc", 0xB000, 300, 10),  # C++ code: no Python frame
        event("free_requested", 0xA000, 100, 15, lin),
        event("free_completed", 0xA000, 100, 20, lin),
        event("segment_alloc", 0x90000000, 4096, 30),
        event("alloc", 0xC000, 50, 40, [frame("silu", 2397)]),
        event("free_completed", 0x2000, 500, 45),
        event("free_completed", 0xB000, 300, 50),
    ]
    blocks = [
        {"address": 0x1000, "size": 1000 * MIB, "state": "active_allocated", "frames": []},
        {"address": 0xC000, "size": 50 * MIB, "state": "active_allocated", "frames": []},
        {"address": 0xD000, "size": 3046 * MIB, "state": "inactive", "frames": []},
    ]
    return {
        "segments": [{"device": 0, "address": 0x1000, "total_size": 4096 * MIB, "blocks": blocks}],
        "device_traces": [trace],
        "external_annotations": [
            {"stage": "START", "name": "forward", "device": 0, "time_us": T0_US - 5},
            {"stage": "END", "name": "forward", "device": 0, "time_us": T0_US + 12},
            {"stage": "START", "name": "backward", "device": 0, "time_us": T0_US + 12},
            {"stage": "END", "name": "backward", "device": 0, "time_us": T0_US + 50},
        ],
    }


def test_the_peak_and_what_is_alive_then_as_computed_by_hand():
    view = mp.reduce_snapshot(synthetic())
    mib = [b // MIB for b in view.total_bytes]
    assert mib == [1500, 1600, 1900, 1800, 1850, 1350, 1050]  # the start, then each change
    assert view.time_us == [0, 0, 10, 20, 40, 45, 50]
    assert view.peak_bytes == 1900 * MIB and view.peak_time_us == 10
    assert view.total_bytes[view.peak_point] == view.peak_bytes
    assert view.peak_before_bytes == 1500 * MIB  # P1 + P2
    assert [b.size_bytes // MIB for b in view.alive_at_peak] == [300, 100]  # B, then A
    assert [b.size_bytes // MIB for b in view.before_at_peak] == [1000, 500]
    b, a = view.alive_at_peak
    assert (b.alloc_time_us, b.free_time_us, b.frames) == (10, 50, ())
    assert (a.alloc_time_us, a.free_time_us) == (0, 20)
    assert [f.label() for f in a.frames] == [
        "forward (torch/nn/modules/linear.py:134)",
        "step (06_train_step/_06_common.py:319)",
    ]
    assert view.end_bytes == 1050 * MIB and view.reserved_bytes == 4096 * MIB
    assert view.duration_us == 50 and view.events == 8
    assert [(p.name, p.start_us, p.end_us) for p in view.phases] == [
        ("forward", 0, 12),
        ("backward", 12, 50),
    ]


def test_downsampling_keeps_the_peak():
    snap = synthetic()
    trace = snap["device_traces"][0]
    # A long saw-tooth after the synthetic events, lower than their peak but for one tooth.
    for k in range(5000):
        size = 2000 if k == 3333 else 1 + k % 7
        trace.append(event("alloc", 0x10000 + k, size, 100 + 2 * k))
        trace.append(event("free_completed", 0x10000 + k, size, 101 + 2 * k))
    full = mp.reduce_snapshot(snap, max_points=100_000)
    small = mp.reduce_snapshot(snap, max_points=200)
    assert not full.downsampled and small.downsampled and len(small.time_us) <= 200
    assert small.peak_bytes == full.peak_bytes == max(full.total_bytes) == (1050 + 2000) * MIB
    assert small.total_bytes[small.peak_point] == small.peak_bytes
    assert small.time_us[small.peak_point] == full.peak_time_us == 100 + 2 * 3333


class _Resources(HTMLParser):
    """Every URL the page would load (``src``, ``href`` but a link's, ``data``...), and the
    text of its ``<style>`` and ``<script>`` elements."""

    LOADING = ("src", "href", "data", "srcset", "poster", "action", "xlink:href", "background")

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[tuple[str, str, str]] = []
        self.links: list[str] = []
        self.code: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "href" and tag == "a":
                self.links.append(value or "")
            elif name in self.LOADING:
                self.loads.append((tag, name, value or ""))
        self._in = tag if tag in ("style", "script") else None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.code.append(data)


def _built(tmp_path: Path, name: str = "memory_snapshot.pickle") -> tuple[Path, str]:
    snap = tmp_path / name
    if name.endswith(".json"):
        snap.write_text(json.dumps(synthetic()), encoding="utf-8")
    else:
        snap.write_bytes(pickle.dumps(synthetic()))
    page = tmp_path / "r0.memory_viz.html"
    mp.write_page(snap, page, source=f"recordings/{name}", title="A synthetic step", raw_href=name)
    return page, page.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["memory_snapshot.pickle", "memory_snapshot.json"])
def test_the_page_loads_nothing_from_the_network(tmp_path, name):
    _, text = _built(tmp_path, name)
    found = _Resources()
    found.feed(text)
    remote = [r for r in found.loads if re.match(r"\s*(https?:)?//", r[2], re.I)]
    assert remote == [], remote
    code = "\n".join(found.code)
    for fetches in ("url(", "@import", "fetch(", "XMLHttpRequest", "import(", "WebSocket"):
        assert fetches not in code, fetches
    # The one address on the network is a link the reader may click: PyTorch's viewer.
    assert [u for u in found.links if "//" in u] == [mp.PYTORCH_VIEWER_URL]
    assert name in found.links  # the raw snapshot, next to the page
    assert f"<code>recordings/{name}</code>" in text and "site's own viewer" in text


def test_the_page_reports_the_peak_computed_by_hand(tmp_path):
    _, text = _built(tmp_path)
    peak = 1900 * MIB
    assert f"Peak: <strong>{peak / 2**30:.2f} GiB</strong> allocated ({peak / 1e9:.2f} GB)" in text
    assert "at 0.010 ms, in <code>forward</code>" in text
    data = json.loads(re.search(r'id="memory-data">(.*?)</script>', text, re.S).group(1))
    assert max(data["total_bytes"]) == data["total_bytes"][data["peak"]] == peak
    assert data["t_us"][data["peak"]] == 10
    # The table: B (300 MiB, no Python frame), then A with its frames.
    rows = re.findall(r"<tr data-t0.*?</tr>", text, re.S)
    assert len(rows) == 2 and "300.00 MiB" in rows[0] and "no Python frame" in rows[0]
    assert "100.00 MiB" in rows[1] and "forward (torch/nn/modules/linear.py:134)" in rows[1]


def test_opens_offline_in_chromium_and_answers_a_hover(tmp_path, playwright):
    page_path, _ = _built(tmp_path)
    with offline_page(page_path, playwright) as (page, requests, errors):
        assert page.locator("#chart path").count() == 3
        assert page.locator("#peak-label").text_content() == "peak 1.86 GiB (1.99 GB)"
        box = page.locator("#chart").bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.95, box["y"] + box["height"] / 2)
        assert page.locator("#readout").inner_text().startswith("t = 0.050 ms (backward): 1.03 GiB")
        page.locator("#chart").focus()
        page.keyboard.press("p")
        readout = page.locator("#readout").inner_text()
        assert (
            readout.startswith("t = 0.010 ms (forward): 1.86 GiB allocated")
            and "the peak" in readout
        )
        page.keyboard.press("ArrowLeft")
        assert (
            "alloc of 100.00 MiB, allocated by forward (torch/nn"
            in page.locator("#readout").inner_text()
        )
    assert outside(requests) == []
    assert errors == []


def test_site_hooks_write_the_viewer_and_the_snapshot_where_part5_links(tmp_path, monkeypatch):
    pytest.importorskip("sphinx")
    import site_hooks

    folder = tmp_path / "rec" / "h100" / "06_train_step" / "memory" / "r0"
    folder.mkdir(parents=True)
    (folder / "trace.json.gz").write_bytes(b"")
    (folder / "memory_snapshot.pickle").write_bytes(pickle.dumps(synthetic()))
    rec = SimpleNamespace(
        trace_path=folder / "trace.json.gz", repeat=0, example="06_train_step", variant="memory",
        gpu="h100", env={"gpu": "NVIDIA H100 80GB HBM3"},
        trace_url=lambda prefix="../": f"{prefix}traces/h100/06_train_step/memory/r0.json.gz",
    )  # fmt: skip
    monkeypatch.setattr(site_hooks, "EXTRA", tmp_path / "extra")
    monkeypatch.setattr(site_hooks.tracesite, "iter_recordings", lambda: [rec])
    site_hooks.copy_traces(None)
    out = tmp_path / "extra" / "traces" / "h100" / "06_train_step" / "memory"
    assert sorted(p.name for p in out.iterdir()) == [
        "r0.json.gz", "r0.memory_snapshot.pickle", "r0.memory_viz.html",
    ]  # fmt: skip
    text = (out / "r0.memory_viz.html").read_text(encoding="utf-8")
    assert "Memory over one step: 06_train_step, memory, on the NVIDIA H100 80GB HBM3" in text
    assert 'href="r0.memory_snapshot.pickle" download' in text
    part5 = (ROOT / "docs" / "chapters" / "part5.md").read_text(encoding="utf-8")
    assert '/r0"' in part5 and "}.memory_viz.html" in part5 and "}.memory_snapshot.pickle" in part5


SNAPSHOTS = sorted(
    (ROOT / "docs" / "recordings").glob("*/06_train_step/*/r0/memory_snapshot.pickle")
)


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.parts[-5])
def test_the_committed_snapshots_make_light_pages_that_agree_with_part5(tmp_path, path):
    """The part of the peak allocated during the step is Part 5's number (its own code,
    docs/chapters/part5_snapshot_measures.py); the page stays under 2 MB."""
    sys.path.insert(0, str(ROOT / "docs" / "chapters"))
    try:
        from part5_snapshot_measures import snapshot_at_peak
    finally:
        sys.path.remove(str(ROOT / "docs" / "chapters"))
    view = mp.write_page(path, tmp_path / "page.html")
    step_gib, _ = snapshot_at_peak(str(path))
    assert (view.peak_bytes - view.peak_before_bytes) / 2**30 == pytest.approx(step_gib, abs=1e-9)
    assert (tmp_path / "page.html").stat().st_size < 2_000_000
