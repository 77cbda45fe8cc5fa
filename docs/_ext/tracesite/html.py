"""HTML for the pages: trace links with an "Open in Perfetto" button, figures with alt text.

The button carries the trace's URL in a data attribute; ``_static/perfetto.js``
binds it on ``DOMContentLoaded``. When clicked, the script opens
https://ui.perfetto.dev, fetches the ``.json.gz`` from the site, waits for
Perfetto's ``PONG`` to its ``PING`` messages, then posts the bytes (Perfetto's
documented postMessage handshake; it reads gzipped JSON as it is). Nothing
is fetched until the reader clicks, the trace never leaves the reader's
browser except to the Perfetto tab, and there is no inline script.

The button is rendered ``hidden`` and the script reveals it, so a reader
without JavaScript sees only the download link, never a dead button.
"""

from __future__ import annotations

import html
import posixpath
from urllib.parse import urlsplit

__all__ = ["FigureHTML", "Snippet", "trace_links_html", "format_size"]


def format_size(nbytes: int) -> str:
    """``"740 B"``, ``"12 KiB"``, ``"1.4 MiB"``."""
    if nbytes < 1024:
        return f"{nbytes} B"
    if nbytes < 1024 * 1024:
        return f"{max(round(nbytes / 1024), 1)} KiB"
    return f"{nbytes / (1024 * 1024):.1f} MiB"


def trace_links_html(url: str, nbytes: int, title: str) -> str:
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

    Returns
    -------
    str
        A ``<div class="tr-trace-links">`` fragment. Include
        ``_static/perfetto.js`` on the page (``html_js_files`` in ``conf.py``).
    """
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    name = posixpath.basename(urlsplit(url).path) or "trace.json.gz"
    kind = ".json.gz" if name.endswith(".gz") else posixpath.splitext(name)[1] or "file"
    href, label = html.escape(url, quote=True), html.escape(title, quote=True)
    return (
        '<div class="tr-trace-links">'
        f'<a class="tr-download" href="{href}" download="{html.escape(name, quote=True)}">'
        f"Download trace ({kind}, {format_size(nbytes)})</a> "
        f'<button type="button" class="tr-perfetto" data-trace="{href}" data-title="{label}" '
        f'title="Open {label} in the Perfetto UI (ui.perfetto.dev)" hidden>'
        "Open in Perfetto</button>"
        '<span class="tr-perfetto-status" role="status" aria-live="polite"></span>'
        "</div>"
    )


class FigureHTML:
    """A figure as an ``<img>`` with its generated alt text, for executed pages.

    Notebook renderers (MyST-NB) write a displayed matplotlib figure as an
    image without alt text. This wraps the PNG in HTML instead, with the alt
    text :func:`tracereader.timeline` generated (``fig.tracereader_alt``) or the
    one given, so every picture on a page says what it shows.
    """

    def __init__(self, fig, alt: str | None = None, caption: str = "", dpi: int = 96) -> None:
        import base64
        import io

        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        self.png = buf.getvalue()
        self.alt = alt or getattr(fig, "tracereader_alt", "") or caption
        if not self.alt:
            raise ValueError("a figure on a page needs alt text: pass alt=")
        self.caption = caption
        self._b64 = base64.b64encode(self.png).decode("ascii")

    def _repr_html_(self) -> str:
        cap = f"<figcaption>{html.escape(self.caption)}</figcaption>" if self.caption else ""
        return (
            f'<figure class="tr-figure"><img src="data:image/png;base64,{self._b64}" '
            f'alt="{html.escape(self.alt, quote=True)}" style="max-width:100%;height:auto">'
            f"{cap}</figure>"
        )

    def __repr__(self) -> str:
        return f"<figure: {self.alt}>"


class Snippet:
    """A ready-made piece of HTML that notebooks and sphinx-gallery display as such."""

    def __init__(self, html_text: str, text: str) -> None:
        self.html, self.text = html_text, text

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text
