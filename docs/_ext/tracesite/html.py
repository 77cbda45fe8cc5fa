"""HTML for the pages: trace links with an "Open in Perfetto" button, figures with alt text
(sharp at 2x, measured for small, overlapping and clipped text, zoomable).

The button carries the trace's URL in a data attribute; ``_static/perfetto.js``
binds it on ``DOMContentLoaded``. When clicked, the script opens a blank tab,
fetches the ``.json.gz`` from the site, sends the tab to https://ui.perfetto.dev
(or closes it if the fetch failed), waits for Perfetto's ``PONG`` to its
``PING`` messages, then posts the bytes (Perfetto's
documented postMessage handshake; it reads gzipped JSON as it is). Nothing
is fetched until the reader clicks, the trace never leaves the reader's
browser except to the Perfetto tab, and there is no inline script.

The button is rendered ``hidden`` and the script reveals it, so a reader
without JavaScript sees only the download link, never a dead button.
"""

from __future__ import annotations

import html
import math
import posixpath
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "COLUMN_PX",
    "DENSITY",
    "MIN_TEXT_PX",
    "FigureHTML",
    "Snippet",
    "format_size",
    "trace_links_html",
]


def format_size(nbytes: int) -> str:
    """``"740 B"``, ``"12 KiB"``, ``"1.4 MiB"``."""
    if nbytes < 1024:
        return f"{nbytes} B"
    if nbytes < 1024 * 1024:
        return f"{max(round(nbytes / 1024), 1)} KiB"
    return f"{nbytes / (1024 * 1024):.1f} MiB"


def trace_links_html(
    url: str,
    nbytes: int,
    title: str,
    filename: str | None = None,
    report: tuple[str, int] | None = None,
) -> str:
    """The download link and Perfetto button for one trace.

    Parameters
    ----------
    url
        Where the page can fetch the trace, relative to the page or absolute
        (``../_static/traces/64_bf16.json.gz``).
    nbytes
        Size of the file, shown next to the link.
    title
        Title Perfetto shows for the trace (and the button's tooltip).
    filename
        The name the download is saved under; default: the URL's last part.
    report
        The URL and size of ``tracereader report``'s page of the same trace, if the
        site wrote one: a link to it follows the download link.

    Returns
    -------
    str
        A ``<div class="tr-trace-links">`` fragment. Include
        ``_static/perfetto.js`` on the page (``html_js_files`` in ``conf.py``).
    """
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    name = filename or posixpath.basename(urlsplit(url).path) or "trace.json.gz"
    kind = ".json.gz" if name.endswith(".gz") else posixpath.splitext(name)[1] or "file"
    href, label = html.escape(url, quote=True), html.escape(title, quote=True)
    report_link = (
        f'<a class="tr-report" href="{html.escape(report[0], quote=True)}">'
        f"Its report (<code>tracereader report</code>, {format_size(report[1])})</a> "
        if report
        else ""
    )
    return (
        '<div class="tr-trace-links">'
        f'<a class="tr-download" href="{href}" download="{html.escape(name, quote=True)}">'
        f"Download trace ({kind}, {format_size(nbytes)})</a> "
        f"{report_link}"
        f'<button type="button" class="tr-perfetto" data-trace="{href}" data-title="{label}" '
        f'title="Open {label} in the Perfetto UI (ui.perfetto.dev)" hidden>'
        "Open in Perfetto</button>"
        '<span class="tr-perfetto-status" role="status" aria-live="polite"></span>'
        "</div>"
    )


#: Width of the text column a figure sits in, in CSS pixels, with the browser window
#: 1280 px wide (the theme's sidebars and the cell's padding taken off).
COLUMN_PX = 672
#: The smallest text a figure may show, in CSS pixels, at that width.
MIN_TEXT_PX = 10.0
#: Image pixels per CSS pixel: sharp on high-density screens and in the zoom overlay.
DENSITY = 2


class FigureHTML:
    """A figure as a sharp ``<img>`` with its generated alt text, for executed pages.

    Notebook renderers (MyST-NB) write a displayed matplotlib figure as an
    image without alt text. This wraps the PNG in HTML instead, with the alt
    text :func:`tracereader.timeline` generated (``fig.tracereader_alt``) or the
    one given, so every picture on a page says what it shows.

    The picture is laid out at ``dpi`` (its "1x" size, given to the ``<img>`` as
    ``width`` and ``height``) and rendered at :data:`DENSITY` times that, for
    high-density screens and the click-to-zoom overlay (``_static/zoom.js``). The
    1x size is then adjusted so a reader can read it:

    * raised until the smallest text is :data:`MIN_TEXT_PX` pixels high;
    * lowered to the :data:`COLUMN_PX` column when wider (the page would shrink
      it anyway), which may bring the text under that size again: the figure
      must then be drawn with larger text (or narrower).

    What it measured is written on the ``<img>`` for the browser checks
    (``tests/browser/sitecheck.py``), from :func:`tracereader._draw_check.text_layout`:
    ``data-min-text-px`` (the smallest text, in pixels at the 1x size),
    ``data-width-1x``, ``data-text-overlaps`` (pairs of overlapping labels) and
    ``data-text-clipped`` (labels cut off), with ``data-text-issues`` naming them.
    """

    def __init__(
        self,
        fig: Any,
        alt: str | None = None,
        caption: str = "",
        dpi: int = 96,
        *,
        min_text_px: float = MIN_TEXT_PX,
        max_width_px: int = COLUMN_PX,
    ) -> None:
        import io

        import matplotlib as mpl

        from tracereader._draw_check import text_layout

        self.alt = alt or getattr(fig, "tracereader_alt", "") or caption
        if not self.alt:
            raise ValueError("a figure on a page needs alt text: pass alt=")
        self.caption = caption
        # Saved with bbox_inches="tight", which grows the picture to hold every text:
        # only text cut off by its own axes counts as clipped.
        self.layout = text_layout(fig, canvas=False)
        tight_in = self.layout.drawn_in[0] + 2 * float(mpl.rcParams["savefig.pad_inches"])
        dpi_1x = float(dpi)
        if self.layout.min_font_pt:  # a hair over, so rounding never lands under it
            dpi_1x = max(dpi_1x, min_text_px * 72 / self.layout.min_font_pt * 1.001)
        dpi_1x = min(dpi_1x, max_width_px / tight_in)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DENSITY * dpi_1x, bbox_inches="tight")
        self.png = _small_png(buf.getvalue())
        width_px, height_px = _png_size(self.png)
        self.width, self.height = round(width_px / DENSITY), round(height_px / DENSITY)
        self.dpi = dpi_1x
        self.min_text_px = self.layout.min_text_px(dpi_1x)

    def _img_attrs(self) -> str:
        """The ``<img>``'s size and what :func:`text_layout` measured, as attributes."""
        lay = self.layout
        attrs = {
            "width": self.width,
            "height": self.height,
            "data-width-1x": self.width,
            # rounded down: a check of it can only err on the safe side
            "data-min-text-px": ""
            if self.min_text_px is None
            else f"{math.floor(self.min_text_px * 10) / 10:.1f}",
            "data-text-overlaps": len(lay.overlaps),
            "data-text-clipped": len(lay.clipped),
        }
        issues = [f"{a!r} overlaps {b!r}" for a, b in lay.overlaps[:3]]
        issues += [f"{c!r} is cut off" for c in lay.clipped[:3]]
        if issues:
            attrs["data-text-issues"] = "; ".join(issues)[:300]
        return " ".join(f'{k}="{html.escape(str(v), quote=True)}"' for k, v in attrs.items())

    def _repr_html_(self) -> str:
        import base64

        b64 = base64.b64encode(self.png).decode("ascii")
        cap = f"<figcaption>{html.escape(self.caption)}</figcaption>" if self.caption else ""
        return (
            f'<figure class="tr-figure"><img src="data:image/png;base64,{b64}" '
            f'alt="{html.escape(self.alt, quote=True)}" {self._img_attrs()} '
            'style="max-width:100%;height:auto">'
            f"{cap}</figure>"
        )

    def __repr__(self) -> str:
        return f"<figure: {self.alt}>"


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height of a PNG, from its header."""
    import struct

    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


def _small_png(png: bytes, colors: int = 256) -> bytes:
    """The PNG reduced to a palette of ``colors`` (about a third of the bytes; a chart
    has few colours and their anti-aliased edges), or as it is without Pillow."""
    import io

    try:
        from PIL import Image
    except ImportError:  # matplotlib needs Pillow, so this is a fallback only
        return png
    img = Image.open(io.BytesIO(png)).convert("RGB")
    buf = io.BytesIO()
    img.quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(buf, "PNG", optimize=True)
    return buf.getvalue() if buf.tell() < len(png) else png


class Snippet:
    """A ready-made piece of HTML that notebooks and sphinx-gallery display as such."""

    def __init__(self, html_text: str, text: str) -> None:
        self.html, self.text = html_text, text

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text
