"""The "Open in Perfetto" button (``docs/_static/perfetto.js``), end to end in Chromium.

The machine running the checks is offline, so every request to https://ui.perfetto.dev
is answered by Playwright with a stub page that plays Perfetto's side of the documented
postMessage handshake: it answers ``"PING"`` with ``"PONG"`` (to ``event.source``, at
``event.origin``) and records each ``{perfetto: {buffer, title, fileName}}`` it is sent,
with a SHA-256 of the buffer, in ``window.__received`` and through a binding to Python.

Run after a docs build::

    python -m pytest -q -m browser tests/browser/test_perfetto.py --site docs/_build/html
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
import sitecheck

pytestmark = pytest.mark.browser

PAGE = "auto_examples/01_matmul_add/01a_table_and_timeline.html"
PERFETTO = "https://ui.perfetto.dev"
BUTTON = "button.tr-perfetto[data-trace]"
TIMEOUT_MS = 15_000

# Perfetto's side of the handshake. SILENT is replaced by "true" for a Perfetto that
# never answers (the tab-closed and give-up paths).
STUB = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Perfetto UI (test stub)</title></head>
<body><p id="state">waiting for a trace</p>
<script>
(function () {
  "use strict";
  var silent = SILENT;
  window.__pings = [];
  window.__received = [];
  function report(kind, data) {
    if (typeof window.__perfettoStub === "function") window.__perfettoStub(kind, data);
  }
  window.addEventListener("message", function (event) {
    if (event.data === "PING") {
      window.__pings.push(event.origin);
      if (window.__pings.length === 1) report("ping", {origin: event.origin});
      if (!silent) event.source.postMessage("PONG", event.origin);
      return;
    }
    var p = event.data && event.data.perfetto;
    if (!p) {
      report("other", {origin: event.origin, data: String(event.data)});
      return;
    }
    var buf = p.buffer;
    var rec = {
      origin: event.origin,
      keys: Object.keys(p).sort(),
      isArrayBuffer: buf instanceof ArrayBuffer,
      byteLength: buf instanceof ArrayBuffer ? buf.byteLength : -1,
      title: p.title,
      fileName: p.fileName,
      sha256: ""
    };
    var done = function () {
      window.__received.push(rec);
      document.title = "Perfetto: " + rec.title;
      document.getElementById("state").textContent = "received " + rec.fileName;
      report("trace", rec);
    };
    if (!rec.isArrayBuffer) { done(); return; }
    crypto.subtle.digest("SHA-256", buf).then(function (digest) {
      rec.sha256 = Array.from(new Uint8Array(digest), function (b) {
        return b.toString(16).padStart(2, "0");
      }).join("");
      done();
    });
  });
})();
</script></body></html>
"""


@dataclass
class Session:
    """One browser context with Perfetto stubbed and everything else off the network."""

    ctx: object
    requests: list[str] = field(default_factory=list)  # every URL any page asked for
    blocked: list[str] = field(default_factory=list)  # non-local, non-Perfetto: aborted
    reports: list[tuple[str, dict]] = field(default_factory=list)  # from the stub
    console_errors: list[str] = field(default_factory=list)  # (page url) text
    page_errors: list[str] = field(default_factory=list)  # uncaught exceptions
    silent: bool = False  # the stub never answers PONG

    def stub_hits(self) -> list[str]:
        return [u for u in self.requests if u.startswith(PERFETTO + "/")]

    def traces(self) -> list[dict]:
        return [data for kind, data in self.reports if kind == "trace"]


@pytest.fixture
def session(chromium):
    ctx = chromium.new_context(viewport=sitecheck.DESKTOP, color_scheme="light")
    s = Session(ctx=ctx)

    def on_console(msg):
        if msg.type == "error":
            where = (msg.page.url if msg.page else "") or (msg.location or {}).get("url", "")
            s.console_errors.append(f"({where}) {msg.text}")

    ctx.on("request", lambda request: s.requests.append(request.url))
    ctx.on("console", on_console)
    ctx.on("weberror", lambda err: s.page_errors.append(str(err.error)))
    ctx.expose_binding("__perfettoStub", lambda source, kind, data: s.reports.append((kind, data)))

    def block(route):
        s.blocked.append(route.request.url)
        route.abort("blockedbyclient")

    def perfetto(route):
        body = STUB.replace("SILENT", "true" if s.silent else "false")
        route.fulfill(status=200, content_type="text/html; charset=utf-8", body=body)

    # Later routes win: Perfetto gets the stub, any other origin is refused.
    ctx.route(lambda url: not _local(url), block)
    ctx.route(PERFETTO + "/**", perfetto)
    yield s
    ctx.close()


def _local(url: str) -> bool:
    """The local server, or the built site read from disk (the file:// check)."""
    return sitecheck.is_local(url) or urlsplit(url).scheme == "file"


def _open_page(session: Session, url: str):
    page = session.ctx.new_page()
    page.goto(url, wait_until="load")
    return page


def _button_info(page, site_root: Path, index: int = 0) -> dict:
    """What the index-th button points to, and the trace file it names in the site."""
    button = page.locator(BUTTON).nth(index)
    trace = button.get_attribute("data-trace")
    title = button.get_attribute("data-title")
    absolute = urljoin(page.url, trace)
    path = site_root / unquote(urlsplit(absolute).path).lstrip("/")
    return {
        "button": button,
        "trace": trace,
        "url": absolute,
        "title": title,
        "fileName": posixpath.basename(urlsplit(trace).path),
        "path": path,
    }


def _status(page, index: int = 0):
    return page.locator(".tr-trace-links").nth(index).locator(".tr-perfetto-status")


def _wait_closed(popup) -> bool:
    """True once the tab is closed. (The sync API handles events only inside its own
    calls, so no close can slip between the check and the wait.)"""
    if not popup.is_closed():
        try:
            popup.wait_for_event("close", timeout=TIMEOUT_MS)
        except Exception:
            return False
    return popup.is_closed()


def _unexpected_console(session: Session, allowed: tuple[str, ...] = ()) -> list[str]:
    return [e for e in session.console_errors if not any(a in e for a in allowed)]


def _click_until_pinged(page, more_than: int):
    """Click the page's first button, with a Perfetto that never answers: the tab opens,
    the page says it waits, and pings the tab more than ``more_than`` times. The button
    and the tab."""
    from playwright.sync_api import expect

    button = page.locator(BUTTON).first
    expect(button).to_be_visible(timeout=TIMEOUT_MS)
    with page.expect_popup(timeout=TIMEOUT_MS) as popup_info:
        button.click()
    popup = popup_info.value
    expect(_status(page)).to_have_text("Waiting for Perfetto…", timeout=TIMEOUT_MS)
    popup.wait_for_function(f"() => window.__pings.length > {more_than}", timeout=TIMEOUT_MS)
    return button, popup


def _ends_clean(session: Session, button, allowed: tuple[str, ...] = ()) -> None:
    """The button works again; no trace reached the stub; no uncaught error and no
    console error but the ``allowed`` ones."""
    from playwright.sync_api import expect

    expect(button).to_be_enabled()
    assert not session.traces(), session.reports
    assert not session.page_errors, session.page_errors
    assert not _unexpected_console(session, allowed), session.console_errors


def _open_and_check(page, session: Session, info: dict, expected_bytes: bytes, n: int) -> None:
    """Click the button, catch the Perfetto tab, check what it received (n-th trace)."""
    from playwright.sync_api import expect

    with page.expect_popup(timeout=TIMEOUT_MS) as popup_info:
        info["button"].click()
    popup = popup_info.value
    popup.wait_for_function(
        "() => window.__received && window.__received.length > 0", timeout=TIMEOUT_MS
    )
    received = popup.evaluate("window.__received")
    pings = popup.evaluate("window.__pings")
    assert popup.url.startswith(PERFETTO + "/"), popup.url
    assert len(received) == 1, f"the Perfetto tab got {len(received)} traces: {received}"
    got = received[0]
    site_origin = "{0.scheme}://{0.netloc}".format(urlsplit(page.url))
    assert got["origin"] == site_origin, got
    assert got["keys"] == ["buffer", "fileName", "title"], got
    assert got["isArrayBuffer"], f"buffer is not an ArrayBuffer: {got}"
    assert got["byteLength"] == len(expected_bytes), (
        f"Perfetto got {got['byteLength']} bytes, {info['path']} has {len(expected_bytes)}"
    )
    assert got["sha256"] == hashlib.sha256(expected_bytes).hexdigest(), "bytes differ"
    assert got["title"] == info["title"], got
    assert got["fileName"] == info["fileName"], got
    assert pings and set(pings) == {site_origin}, pings
    assert len(session.traces()) == n, session.reports
    expect(_status(page)).to_have_text("Opened in the Perfetto tab.", timeout=TIMEOUT_MS)
    expect(info["button"]).to_be_enabled()
    popup.close()


def test_open_in_perfetto(session, site_root, base_url):
    """Hidden until the script runs, then revealed; nothing fetched before the click;
    a click hands the exact bytes of the trace to the (stubbed) Perfetto tab with its
    title and file name; a second click does it again; no other origin is contacted;
    no console errors, no uncaught exceptions."""
    from playwright.sync_api import expect

    if not (site_root / PAGE).exists():
        pytest.fail(f"{PAGE}: not in the built site", pytrace=False)
    raw = (site_root / PAGE).read_text(encoding="utf-8")
    assert 'class="tr-perfetto"' in raw and " hidden>" in raw, "the button must ship hidden"

    page = _open_page(session, base_url + PAGE)
    buttons = page.locator(BUTTON)
    assert buttons.count() >= 1, f"{PAGE}: no Open in Perfetto button"
    info = _button_info(page, site_root)
    expect(info["button"]).to_be_visible(timeout=TIMEOUT_MS)
    expect(info["button"]).to_have_text("Open in Perfetto")
    assert info["title"], "the button has no data-title"
    assert info["fileName"].endswith(".json.gz"), info
    assert info["path"].is_file(), f"the button points to {info['trace']}: not in the site"
    expected = info["path"].read_bytes()
    assert expected[:2] == b"\x1f\x8b", f"{info['path']} is not gzip"

    page.wait_for_load_state("networkidle")
    assert info["url"] not in session.requests, "the trace was fetched before any click"
    assert not session.stub_hits(), "Perfetto was contacted before any click"

    _open_and_check(page, session, info, expected, n=1)
    _open_and_check(page, session, info, expected, n=2)  # a second click works too

    fetched = [u for u in session.requests if u == info["url"]]
    assert len(fetched) == 2, f"expected one fetch of the trace a click, got {fetched}"
    assert len({u for u in session.stub_hits()}) >= 1
    outside = [u for u in session.requests if not _local(u) and not u.startswith(PERFETTO + "/")]
    assert not outside, f"requests to other origins: {outside}"
    assert not session.blocked, session.blocked
    assert not session.page_errors, session.page_errors
    assert not _unexpected_console(session), session.console_errors


def test_missing_trace(session, site_root, base_url):
    """A trace that 404s: a readable message by the button, the blank tab closed before
    it ever went to Perfetto, the button usable again; no uncaught error."""
    from playwright.sync_api import expect

    page = _open_page(session, base_url + PAGE)
    button = page.locator(BUTTON).first
    expect(button).to_be_visible(timeout=TIMEOUT_MS)
    missing = "../../traces/h200/01_matmul_add/no-such-trace.json.gz"
    button.evaluate("(b, url) => b.setAttribute('data-trace', url)", missing)
    assert not (site_root / "traces/h200/01_matmul_add/no-such-trace.json.gz").exists()

    with page.expect_popup(timeout=TIMEOUT_MS) as popup_info:
        button.click()
    popup = popup_info.value
    expect(_status(page)).to_have_text(
        "Could not load no-such-trace.json.gz (HTTP 404).", timeout=TIMEOUT_MS
    )
    assert _wait_closed(popup), "the Perfetto tab was left open after the fetch failed"
    assert not session.stub_hits(), "the tab went to Perfetto with no trace to give it"
    # The browser's own line for the 404 is expected; nothing else is.
    _ends_clean(session, button, allowed=("status of 404",))


def test_file_url(session, site_root):
    """Opened from file://, the button explains instead of opening a tab that could
    never receive the trace."""
    from playwright.sync_api import expect

    page = _open_page(session, (site_root / PAGE).as_uri())
    button = page.locator(BUTTON).first
    expect(button).to_be_visible(timeout=TIMEOUT_MS)
    pages_before = len(session.ctx.pages)
    button.click()
    expect(_status(page)).to_contain_text("Serve the site over http", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    assert len(session.ctx.pages) == pages_before, "a tab was opened anyway"
    assert not session.stub_hits(), session.stub_hits()
    assert not session.page_errors, session.page_errors
    assert not _unexpected_console(session), session.console_errors


def test_popup_blocked(session, base_url):
    """window.open refused (a pop-up blocker): a readable message, no exception."""
    from playwright.sync_api import expect

    session.ctx.add_init_script("window.open = function () { return null; };")
    page = _open_page(session, base_url + PAGE)
    button = page.locator(BUTTON).first
    expect(button).to_be_visible(timeout=TIMEOUT_MS)
    button.click()
    expect(_status(page)).to_contain_text("The Perfetto tab was blocked", timeout=TIMEOUT_MS)
    assert not session.page_errors, session.page_errors
    assert not _unexpected_console(session), session.console_errors


def test_perfetto_tab_closed(session, base_url):
    """A Perfetto that never answers, closed by the reader: the script stops pinging,
    says so, and the button works again."""
    from playwright.sync_api import expect

    session.silent = True
    page = _open_page(session, base_url + PAGE)
    button, popup = _click_until_pinged(page, more_than=2)
    popup.close()
    expect(_status(page)).to_have_text("The Perfetto tab was closed.", timeout=TIMEOUT_MS)
    _ends_clean(session, button)


def test_perfetto_never_answers(session, base_url):
    """A Perfetto that never answers: after a minute (of a fake clock) the script gives
    up with a message pointing at the download link."""
    from playwright.sync_api import expect

    session.silent = True
    page = session.ctx.new_page()
    page.clock.install()
    page.goto(base_url + PAGE, wait_until="load")
    button, popup = _click_until_pinged(page, more_than=0)
    page.clock.fast_forward("01:01")
    expect(_status(page)).to_have_text(
        "Perfetto did not answer; download the trace and open it there.", timeout=TIMEOUT_MS
    )
    _ends_clean(session, button)
