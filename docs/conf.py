"""Sphinx configuration: sphinx-gallery for examples, MyST-NB for chapters."""

import os
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).parent
# torch's Kineto prints "profiler_start/stop" lines to C-level stderr; level 6 silences
# them, and must be set before torch is imported (notebook kernels inherit it).
os.environ.setdefault("KINETO_LOG_LEVEL", "6")
# The site's own glue (tracesite: recordings, replay, page helpers) lives in _ext; the
# chapters' Jupyter kernels inherit PYTHONPATH, so they find it too.
sys.path.insert(0, str(HERE / "_ext"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(HERE / "_ext"), os.environ.get("PYTHONPATH")])
)
# A quiet build log. The chapters' Jupyter kernels run with an IPython profile of the
# build's own, which logs errors only: ipykernel's warning that a local kernel talks to
# Sphinx over TCP without encryption, once per chapter, says nothing about the site.
_IPYTHON = HERE / "_build" / ".ipython" / "profile_default"
_IPYTHON.mkdir(parents=True, exist_ok=True)
(_IPYTHON / "ipython_kernel_config.py").write_text('c.IPKernelApp.log_level = "ERROR"\n')
os.environ["IPYTHONDIR"] = str(_IPYTHON.parent)
# Every build, with or without a GPU, renders from the recordings: the GPU build runner
# re-records first (`nox -s gpu-build`), then builds like any other machine.

project = "Reading PyTorch Profiler Traces"
author = "The Reading PyTorch Profiler Traces authors"
copyright = "2026, " + author

extensions = [
    "sphinx_gallery.gen_gallery",
    "myst_nb",
    "site_hooks",
    "site_downloads",  # the tracereader wheel and the source archive, as site downloads
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = [
    "_build",
    "jupyter_execute",
    "_generated",
    "auto_examples/**.ipynb",
    "**/.ipynb_checkpoints",
    "auto_examples/*.md5",
]

sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/\d\d_",
    # A set's helper module (_NN_*.py) is not a story: its stories' downloads paste it in.
    "ignore_pattern": r"__init__\.py|^_\d\d_\w*\.py$",  # (matched against the file name)
    "within_subsection_order": "FileNameSortKey",
    "reset_modules": ("matplotlib", "site_hooks.reset_example"),
    "reset_modules_order": "before",
    "image_scrapers": ("site_hooks.gallery_scraper",),
    "capture_repr": ("_repr_html_", "__repr__"),
    "ignore_repr_types": r"profiler_util\.EventList|matplotlib\.(text|axes|figure|lines|container)",
    "first_notebook_cell": (
        "# Needs only torch. With tracereader and matplotlib installed it also draws timelines."
    ),
    "remove_config_comments": True,
    "min_reported_time": 1,
    "download_all_examples": True,
    "backreferences_dir": "gen_modules/backreferences",
    "doc_module": ("tracereader",),
    # Recordings change without the example text changing: always re-run (replay is fast).
    "run_stale_examples": True,
    "abort_on_example_error": True,
    # The timing pages load jQuery/DataTables from a CDN: the site must read offline.
    "write_computation_times": False,
    # Each figure also at twice the resolution, for sharp pictures on high-density screens
    # and the zoom overlay (the page lays it out at the 1x size).
    "image_srcset": ["2x"],
    # An example without a figure of its own: a small sketch of a trace, CPU over GPU
    # (sphinx-gallery's own default weighs 27 kB a copy, once per such example).
    "default_thumb_file": str(HERE / "_static" / "thumb_default.png"),
}

myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "substitution", "attrs_inline"]
myst_heading_anchors = 3
nb_execution_mode = os.environ.get("NB_EXECUTION_MODE", "force")
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True  # a failing page prints its traceback in the build log
nb_execution_excludepatterns = ["auto_examples/*"]
nb_merge_streams = True
nb_output_stderr = "remove-warn"

if os.environ.get("DOCS_FAST") == "1":  # prose-only build: nothing executed
    sphinx_gallery_conf["plot_gallery"] = "False"
    nb_execution_mode = "off"
    suppress_warnings = ["mystnb.glue", "image.not_readable"]

html_theme = "sphinx_book_theme"
html_title = project
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": True,
    # One search control: the field at the top of the sidebar. pydata's header bar would
    # add a second one (the article header's icon shows only when the sidebar is folded).
    "navbar_persistent": [],
}
html_static_path = ["_static"]
html_css_files = ["custom.css", "home.css", "zoom.css"]
# Static scripts, no inline JavaScript: perfetto.js opens traces in the Perfetto UI,
# zoom.js shows a figure at full resolution in an overlay.
html_js_files = ["perfetto.js", "zoom.js"]
html_favicon = "_static/favicon.svg"
html_extra_path = ["_generated/extra"]
html_last_updated_fmt = None
# Without it, a first-time visitor's console logs "Got invalid theme mode".
html_context = {"default_mode": "auto"}
# The Python module index adds nothing to the API page (and its letter rows are unreadable
# in dark mode).
html_domain_indices = False

# API reference (api.md): autodoc reads the numpy-style docstrings through napoleon.
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
# Result classes (Trace, Links...) are made by the library, not by callers: no long
# dataclass signature on the class line, and no inherited __init__/__new__ entries.
autodoc_class_signature = "separated"
autodoc_default_options = {"exclude-members": "__init__, __new__"}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# "ts_ns, dur_ns : int64 arrays" is a numpy-style shared entry: render Attributes like
# Parameters, which napoleon splits correctly (its :ivar: form garbles shared names).
napoleon_custom_sections = [("Attributes", "params_style")]


def _quiet_sphinx_deprecations(*_: object) -> None:
    """Sphinx 9 warns, once per use, where napoleon, MyST and the theme call API it will
    remove in Sphinx 11: nothing this site can act on. Set just before the sources are
    read: set when this file loads, it did not hold."""
    from sphinx import deprecation

    category = getattr(deprecation, "RemovedInSphinx11Warning", None)
    if category is not None:  # Sphinx 9; Sphinx 8 has no such warning
        warnings.filterwarnings("ignore", category=category)


def setup(app: object) -> None:
    """Sphinx's hook for conf.py: the filter goes in just before the sources are read."""
    app.connect("env-before-read-docs", _quiet_sphinx_deprecations)  # type: ignore[attr-defined]
