"""Build hooks: recording checks, trace downloads, and a clean state per example."""

from __future__ import annotations

import os
import re
import shutil
import warnings
from pathlib import Path

import memory_page
import tracesite  # examples find it in sys.modules and replay the recordings
from sphinx.errors import ExtensionError
from sphinx.util import logging
from tracesite import notebook

logger = logging.getLogger(__name__)
DOCS = Path(__file__).resolve().parent.parent
EXTRA = notebook.EXTRA  # what html_extra_path copies into the site


def reset_example(gallery_conf, fname):
    """Before each example: fixed seeds, one CPU thread, no stale warnings filters, and
    the example's path for :func:`tracesite.replayer` (sphinx-gallery defines no
    ``__file__`` inside an example)."""
    warnings.resetwarnings()
    # sphinx-gallery names the script within its sub-gallery; story names are unique.
    found = sorted((DOCS.parent / "examples").rglob(Path(fname).name))
    tracesite.gallery.CURRENT_EXAMPLE = found[0] if found else None
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(0)
    torch.set_num_threads(1)


def gallery_scraper(block, block_vars, gallery_conf):
    """sphinx-gallery's matplotlib scraper, with tracereader's generated alt text.

    The stock scraper uses a figure's titles as alt text; a timeline knows better
    (its lanes, window and event counts), so each ``:alt:`` line is replaced, in
    figure order, by the figure's ``tracereader_alt`` where it has one.
    """
    import re

    import matplotlib.pyplot as plt
    from sphinx_gallery.scrapers import matplotlib_scraper

    alts = [getattr(plt.figure(num), "tracereader_alt", None) for num in plt.get_fignums()]
    rst = matplotlib_scraper(block, block_vars, gallery_conf)
    found = iter(alts)

    def swap(match):
        alt = next(found, None)
        if not alt:
            return match.group(0)
        return match.group(1) + " ".join(alt.split())

    return re.sub(r"^(\s*:alt: ).*$", swap, rst, flags=re.M)


def check_recordings(app):
    """Fail a strict build (TRACEREADER_STRICT=1) on any stale recording."""
    problems = tracesite.check_examples(DOCS.parent / "examples")
    strict = os.environ.get("TRACEREADER_STRICT", "") == "1"
    for line in problems:
        if strict:
            raise ExtensionError(line)
        logger.info("[tracereader] %s", line)


def copy_traces(app):
    """Put every recorded trace of every GPU where pages link to it
    (:meth:`tracesite.Recording.trace_url`): /traces/<gpu>/<example>/<variant>/r<k>.json.gz;
    and, for a first repeat that recorded a CUDA memory snapshot, the site's own viewer of
    it (:mod:`memory_page`: one self-contained page, offline) and the snapshot itself, for
    PyTorch's viewer: /traces/<gpu>/<example>/<variant>/r0.memory_viz.html and
    r0.memory_snapshot.pickle."""
    target = EXTRA / "traces"
    # The reports pages wrote (tracesite.notebook.report_of) stay: a page that an
    # incremental build does not execute again still links to its report.
    reports = {p: p.read_bytes() for p in target.glob("**/*.report.html")}
    shutil.rmtree(target, ignore_errors=True)
    for path, text in reports.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
    for rec in tracesite.iter_recordings():
        dest = target / rec.trace_url("")[len("traces/") :]
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rec.trace_path, dest)
        snapshot = rec.trace_path.parent / "memory_snapshot.pickle"
        if rec.repeat == 0 and snapshot.is_file():
            raw = dest.with_name("r0.memory_snapshot.pickle")
            shutil.copyfile(snapshot, raw)
            try:
                source = snapshot.resolve().relative_to(DOCS.parent).as_posix()
            except ValueError:
                source = snapshot.name
            memory_page.write_page(
                snapshot,
                dest.with_name("r0.memory_viz.html"),
                source=source,
                title=f"Memory over one step: {rec.example}, {rec.variant}, on the "
                f"{rec.env.get('gpu', rec.gpu)}",
                raw_href=raw.name,
            )


def thumbnail_alt(app, doctree, docname):
    """sphinx-gallery writes its thumbnails with an empty alt: name the example."""
    from docutils import nodes

    for img in doctree.findall(nodes.image):
        name = Path(img.get("uri", "")).name
        if img.get("alt") or not (name.startswith("sphx_glr_") and name.endswith("_thumb.png")):
            continue
        example = name[len("sphx_glr_") : -len("_thumb.png")]
        title = app.env.titles.get(f"auto_examples/{example}")
        img["alt"] = f"Thumbnail of the example: {title.astext() if title else example}"


#: What sphinx-gallery (0.22) writes into every gallery index for its tag filter.
TAG_LIST = "\n\n.. raw:: html\n\n  <div id='sg-tag-list' class='sphx-glr-tag-list'></div>"


def one_tag_list(app, docname, source):
    """The top gallery index takes in each sub-gallery's index, and with each one more
    empty ``<div id="sg-tag-list">``: one id, seven times (axe's ``duplicate-id``). Keep
    the first, the one sphinx-gallery's tag script fills (``getElementById``)."""
    if not docname.startswith("auto_examples/"):
        return
    first = source[0].find(TAG_LIST)
    if first >= 0:
        cut = first + len(TAG_LIST)
        source[0] = source[0][:cut] + source[0][cut:].replace(TAG_LIST, "")


def recordings_table(app, docname, source):
    """Every story's page ends with the table of every recording of its variants
    (:func:`tracesite.all_recordings_html`), above sphinx-gallery's download buttons.

    The page's source is sphinx-gallery's rst of the story. A story cannot print the
    table itself in a last cell hidden from its reader: sphinx-gallery drops a last
    code block that its ignore markers leave empty, and that block's output with it.
    """
    parts = docname.split("/")
    if len(parts) != 3 or parts[0] != "auto_examples" or parts[2] == "index":
        return
    script = DOCS.parent / "examples" / parts[1] / f"{parts[2]}.py"
    anchor = f"\n.. _sphx_glr_download_{'_'.join(parts)}.py:"
    at = source[0].find(anchor)
    if not script.is_file() or at < 0:
        return
    table = tracesite.all_recordings_html(script).html
    source[0] = f"{source[0][:at]}\n.. raw:: html\n\n    {table}\n\n{source[0][at:]}"


def label_nav_toggles(app, pagename, templatename, context, doctree):
    """pydata-sphinx-theme's sidebar folds each page's sub-pages under a ``<summary>``
    that holds only a chevron icon: a control with no name for a screen reader (axe's
    ``summary-name``). Name each one after the page whose sub-pages it shows."""
    generate = context.get("generate_toctree_html")
    if generate is None or getattr(generate, "labels_toggles", False):
        return

    def labelled(*args, **kwargs):
        out = generate(*args, **kwargs)  # a BeautifulSoup tree (the theme caches it)
        for summary in out.find_all("summary") if hasattr(out, "find_all") else ():
            if summary.get_text(strip=True) or summary.get("aria-label"):
                continue
            item = summary.find_parent("li")
            link = item.find("a", recursive=False) if item else None
            name = link.get_text(" ", strip=True) if link else "this section"
            summary["aria-label"] = f"Pages under {name}"
        return out

    labelled.labels_toggles = True
    context["generate_toctree_html"] = labelled


#: A helper's hidden block (``# sphinx_gallery_start_ignore`` ... ``end_ignore``, indented
#: or not): left out of a notebook, as sphinx-gallery leaves a story's own out of it.
_HIDDEN = re.compile(
    r"^[ \t]*# sphinx_gallery_start_ignore\n.*?^[ \t]*# sphinx_gallery_end_ignore\n", re.M | re.S
)


def inline_helpers(app):
    """Each story that imports its set's helper module (``examples/NN_name/_NN_*.py``) is
    offered as one file: its ``.py`` and ``.ipynb`` downloads get the helper's code pasted
    where the story imports it, so a download runs with only torch (R9); its zip is made
    again from those two files. The gallery's zips of every example keep the stories as
    they are and get each helper once, beside its stories (as in the repository)."""
    import json
    import zipfile

    from sphinx_gallery.utils import zip_files
    from tracesite._source import inlined_source

    conf = app.config.sphinx_gallery_conf
    if str(conf.get("plot_gallery", True)) == "False":
        return
    gallery = Path(app.srcdir) / conf["gallery_dirs"][0]
    helpers = set()
    for story in sorted((DOCS.parent / "examples").glob("*/[0-9]*.py")):
        found = inlined_source(story)
        target = gallery / story.parent.name / story.name
        if found is None or not target.exists():
            continue
        text, swaps = found
        target.write_text(text, encoding="utf-8")
        notebook = target.with_suffix(".ipynb")
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        for old, new, _ in swaps:
            old, new = old.rstrip("\n"), _HIDDEN.sub("", new).rstrip("\n")  # as a cell has it
            cells = [
                c for c in nb["cells"] if c["cell_type"] == "code" and old in "".join(c["source"])
            ]
            if len(cells) != 1:
                raise ExtensionError(f"{notebook.name}: no one code cell holds {old.strip()!r}")
            source = "".join(cells[0]["source"]).replace(old, new)
            cells[0]["source"] = source.splitlines(keepends=True)
        notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        zip_files([target, notebook], target.with_suffix(".zip"), target.parent)
        helpers |= {helper for _, _, helper in swaps}
    for kind in ("python", "jupyter"):
        bundle = gallery / f"{gallery.name}_{kind}.zip"
        if helpers and bundle.exists():
            with zipfile.ZipFile(bundle, "a") as zf:
                have = set(zf.namelist())
                for helper in sorted(helpers):
                    name = f"{helper.parent.name}/{helper.name}"
                    if name not in have:
                        zf.write(helper, name)
    if helpers:
        logger.info(f"downloads: {len(helpers)} helper modules pasted into their stories")


def setup(app):
    EXTRA.mkdir(parents=True, exist_ok=True)
    # Run before sphinx-gallery (priority 500) executes the examples.
    app.connect("builder-inited", check_recordings, priority=100)
    app.connect("builder-inited", copy_traces, priority=100)
    # After sphinx-gallery (priority 500) has written the downloads.
    app.connect("builder-inited", inline_helpers, priority=900)
    app.connect("doctree-resolved", thumbnail_alt)
    app.connect("source-read", one_tag_list)
    app.connect("source-read", recordings_table)
    # After the theme's own handler (priority 500) has put generate_toctree_html in place.
    app.connect("html-page-context", label_nav_toggles, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
