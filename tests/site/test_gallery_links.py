"""An example page's links to its traces climb back to the top of the built site."""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest
from tracesite._source import example_scripts, find_examples
from tracesite.gallery import _site_root

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCRIPTS = [s for e in find_examples(EXAMPLES) for s in example_scripts(e)]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.name)
def test_site_root_climbs_from_the_page_to_the_top(script):
    # sphinx-gallery builds examples/<a>/<b>.py into auto_examples/<a>/<b>.html
    page = Path("auto_examples") / script.relative_to(EXAMPLES).with_suffix(".html")
    top = posixpath.normpath(posixpath.join(page.parent.as_posix(), _site_root(script)))
    assert top == ".", f"{script.name}: {_site_root(script)} from {page} leads to {top}"


def test_a_lone_script_is_one_folder_down(tmp_path):
    lone = tmp_path / "07_lone.py"
    assert _site_root(lone) == "../"
