"""The built site's memory snapshot viewers (docs/_ext/memory_page.py, written by
site_hooks.copy_traces): each opens offline, clean and accessible, and its raw snapshot is
there to download. The page-by-page checks (test_site.py) leave ``traces/`` out."""

from __future__ import annotations

import pytest
import sitecheck

pytestmark = pytest.mark.browser


def test_memory_viewers_open_offline_and_clean(site_root, base_url, context):
    viewers = sorted(site_root.glob("traces/*/*/*/r0.memory_viz.html"))
    if not viewers:
        pytest.skip("the built site has no memory snapshot viewer (no recording kept a snapshot)")
    problems: list[str] = []
    for path in viewers:
        rel = path.relative_to(site_root).as_posix()
        requests: list[str] = []
        errors: list[str] = []
        page = context.new_page()
        page.on("request", lambda r, seen=requests: seen.append(r.url))
        page.on(
            "console", lambda m, seen=errors: seen.append(m.text) if m.type == "error" else None
        )
        page.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
        try:
            page.goto(base_url + rel, wait_until="load")
            problems += [
                f"{rel}: asked the network for {u}" for u in requests if not sitecheck.is_local(u)
            ]
            problems += [f"{rel}: browser error: {e}" for e in errors]
            if not (
                page.locator("#chart path").count() == 3 and page.locator("#peak-label").count()
            ):
                problems.append(f"{rel}: the chart was not drawn")
            problems += sitecheck.check_axe(page, base_url + rel)
        finally:
            page.close()
        if not path.with_name("r0.memory_snapshot.pickle").is_file():
            problems.append(f"{rel}: its raw snapshot (r0.memory_snapshot.pickle) is missing")
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
