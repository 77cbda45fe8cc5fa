"""Fixtures for the browser checks: the built site, a local server, Chromium, and the
page-weight table printed at the end of the run (and written to artifacts/)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # sitecheck.py, next to this file

import sitecheck  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = pytest.StashKey[dict]()
STARTED = pytest.StashKey[float]()


def pytest_addoption(parser):
    group = parser.getgroup("browser", "checks of the built site in headless Chromium")
    group.addoption(
        "--artifacts",
        default=str(ROOT / "artifacts"),
        help="where screenshots and page-weights.json go (default: artifacts/)",
    )


def pytest_configure(config):
    config.stash[WEIGHTS] = {}
    config.stash[STARTED] = time.monotonic()


def _site(config) -> Path:
    return Path(config.getoption("--site")).resolve()


def pytest_generate_tests(metafunc):
    if "page_path" in metafunc.fixturenames:
        site = _site(metafunc.config)
        # Without a build, still collect the home page: its tests then fail, saying so.
        pages = sitecheck.list_pages(site) if (site / "index.html").exists() else ["index.html"]
        metafunc.parametrize("page_path", pages)


@pytest.fixture(scope="session")
def site_root(pytestconfig) -> Path:
    site = _site(pytestconfig)
    if not (site / "index.html").exists():
        pytest.fail(f"no built site at {site}: build it with `python -m nox -s docs` first")
    return site


@pytest.fixture(scope="session")
def artifacts(pytestconfig) -> Path:
    path = Path(pytestconfig.getoption("--artifacts")).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def base_url(site_root):
    with sitecheck.serve(site_root) as url:
        yield url


@pytest.fixture(scope="session")
def chromium(request):
    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.fail("playwright is not installed: pip install playwright (nox -s browser does)")
    if not Path(sitecheck.CHROMIUM).exists():
        pytest.fail(
            f"{sitecheck.CHROMIUM} is missing: apt-get install chromium (nox -s browser does)"
        )
    # tests/conftest.py's: the one Playwright this process may run
    browser = sitecheck.launch(request.getfixturevalue("playwright"))
    yield browser
    browser.close()


def _offline(ctx) -> None:
    """Nothing leaves the machine; check_page additionally reports what tried to."""
    ctx.route(lambda url: not sitecheck.is_local(url), lambda route: route.abort())


@pytest.fixture(scope="session")
def context(chromium):
    ctx = chromium.new_context(viewport=sitecheck.DESKTOP, color_scheme="light")
    _offline(ctx)
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def dark_context(chromium):
    ctx = chromium.new_context(viewport=sitecheck.DESKTOP, color_scheme="dark")
    ctx.add_init_script(sitecheck.DARK_INIT)
    _offline(ctx)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context):
    p = context.new_page()
    yield p
    p.close()


@pytest.fixture
def dark_page(dark_context):
    p = dark_context.new_page()
    yield p
    p.close()


@pytest.fixture(scope="session")
def fetched() -> dict:
    """Download checks shared by every page (a zip linked from three pages is fetched once)."""
    return {}


@pytest.fixture(scope="session")
def weights(pytestconfig) -> dict:
    """page -> sitecheck.Weight, filled by the desktop check of each page."""
    return pytestconfig.stash[WEIGHTS]


def pytest_sessionfinish(session):
    """In a pytest-xdist worker: hand this worker's page weights to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        weights = session.config.stash.get(WEIGHTS, {})
        output["page_weights"] = [[w.page, [list(i) for i in w.items]] for w in weights.values()]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """In pytest-xdist's controller: gather each worker's page weights for the table."""
    weights = node.config.stash.get(WEIGHTS, None)
    if weights is None:
        return
    for page, items in getattr(node, "workeroutput", {}).get("page_weights", []):
        weights[page] = sitecheck.Weight(page, [tuple(i) for i in items])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    weights: dict = config.stash.get(WEIGHTS, {})
    if not weights:
        return
    elapsed = time.monotonic() - config.stash[STARTED]
    budget = sitecheck.BUDGET_BYTES
    fmt = sitecheck.fmt_bytes
    rows = sorted(weights.values(), key=lambda w: -w.total)
    width = max(len(w.page) for w in rows)
    tr = terminalreporter
    tr.section(
        f"page weight (HTML + images + linked downloads; budget {fmt(budget)} a page; "
        "linked recorded traces and source archives listed apart, budgeted in total by "
        "the recordings test and test_site.py)"
    )
    tr.write_line(
        f"{'page':<{width}}  {'html':>9}  {'images':>9}  {'downloads':>9}  {'total':>9}"
        f"  {'traces':>9}  {'archives':>9}"
    )
    for w in rows:
        flag = "  OVER BUDGET" if w.total > budget else ""
        tr.write_line(
            f"{w.page:<{width}}  {fmt(w.by_kind('html')):>9}  {fmt(w.by_kind('image')):>9}  "
            f"{fmt(w.by_kind('download')):>9}  {fmt(w.total):>9}  {fmt(w.by_kind('trace')):>9}"
            f"  {fmt(w.by_kind('archive')):>9}{flag}"
        )
    heaviest = rows[0]
    tr.write_line(
        f"{len(rows)} pages checked in {elapsed:.1f} s; heaviest: {heaviest.page} "
        f"({fmt(heaviest.total)})"
    )
    out = Path(config.getoption("--artifacts")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "site": str(_site(config)),
        "budget_bytes": budget,
        "pages_checked": len(rows),
        "seconds": round(elapsed, 1),
        "pages": [w.as_dict() for w in rows],
    }
    (out / "page-weights.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    tr.write_line(f"written: {out / 'page-weights.json'}")
