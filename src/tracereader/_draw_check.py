"""Checks of a drawn figure's text: its smallest size, labels that overlap or are cut off.

:func:`text_layout` draws the figure once (Agg, off screen) and measures every text
matplotlib actually painted: tick labels, titles, legends, bar labels, callouts.
The site's figure wrapper records the result on each ``<img>`` (and a browser check
fails on it); the tests draw every recording with it. It works on any matplotlib
figure, not only timelines.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

__all__ = ["TextLayout", "text_layout"]

#: Boxes that share less than this (in points, in both directions) do not overlap.
TOLERANCE_PT = 0.5

_LOCK = threading.Lock()
_Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels


@dataclass(frozen=True)
class TextLayout:
    """The visible texts of a rendered figure.

    Attributes
    ----------
    texts : tuple of str
        Every visible, non-empty text, in drawing order.
    min_font_pt : float or None
        The smallest font size among them, in points (``None``: no text).
    overlaps : tuple of (str, str)
        Pairs of texts whose boxes (a callout's rounded box included) overlap.
    clipped : tuple of str
        Texts cut off: partly outside their clip box (an axes), or, with
        ``canvas=True``, partly outside the figure.
    drawn_in : (float, float)
        Width and height, in inches, of everything drawn (the figure's tight bounding
        box: what ``savefig(bbox_inches="tight")`` saves, less its padding).
    """

    texts: tuple[str, ...]
    min_font_pt: float | None
    overlaps: tuple[tuple[str, str], ...]
    clipped: tuple[str, ...]
    drawn_in: tuple[float, float]

    def min_text_px(self, dpi: float) -> float | None:
        """The smallest text's size in pixels when the figure is saved at ``dpi``."""
        return None if self.min_font_pt is None else self.min_font_pt * dpi / 72


@contextlib.contextmanager
def _recording_texts() -> Iterator[list[Text]]:
    """Collect every :class:`~matplotlib.text.Text` drawn inside the block.

    ``Text.draw`` is wrapped for the duration (annotations, tick labels and legend
    entries all go through it); a lock keeps two threads from nesting the wrapper, and
    :func:`text_layout` keeps only its own figure's texts.
    """
    from matplotlib.text import Text

    drawn: list[Text] = []
    original = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        drawn.append(self)
        original(self, renderer)

    with _LOCK:
        Text.draw = draw  # type: ignore[method-assign, assignment]
        try:
            yield drawn
        finally:
            Text.draw = original  # type: ignore[method-assign]


def text_layout(
    fig: Figure, *, canvas: bool = True, tolerance_pt: float = TOLERANCE_PT
) -> TextLayout:
    """Render ``fig`` off screen and report on its text.

    Parameters
    ----------
    fig
        Any matplotlib figure (it is drawn once, at its own dpi; nothing is saved).
    canvas
        Count text reaching outside the figure as clipped. Pass ``False`` for a
        figure that will be saved with ``bbox_inches="tight"``, which grows the
        picture to hold it.
    tolerance_pt
        Overlaps and clipping smaller than this, in points, are ignored.

    Returns
    -------
    TextLayout
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    own = fig.canvas
    agg = own if isinstance(own, FigureCanvasAgg) else FigureCanvasAgg(fig)
    try:
        with _recording_texts() as drawn:
            agg.draw()  # type: ignore[no-untyped-call]
        renderer = agg.get_renderer()  # type: ignore[no-untyped-call]
        tol = tolerance_pt * fig.dpi / 72
        frame = fig.bbox
        seen: set[int] = set()
        names: list[str] = []
        sizes: list[float] = []
        boxes: list[_Box] = []
        clipped: list[str] = []
        for t in drawn:
            text = t.get_text()
            if id(t) in seen or not t.get_visible() or not text.strip():
                continue
            if t.get_figure(root=True) is not fig:  # drawn by another thread meanwhile
                continue
            seen.add(id(t))
            box = Text.get_window_extent(t, renderer)  # the text itself, not an arrow
            patch = t.get_bbox_patch()  # a callout's rounded box hides what is under it
            if patch is not None:
                box = Bbox.union([box, patch.get_window_extent(renderer)])
            clip_box = t.get_clip_box() if t.get_clip_on() else None
            limits: list[Any] = [clip_box] if clip_box is not None else []
            limits += [frame] if canvas else []
            shown, cut = _clip((box.x0, box.y0, box.x1, box.y1), limits, tol)
            if shown is None:  # wholly outside its clip box or the figure: not seen
                continue
            label = " ".join(text.split())
            if cut:
                clipped.append(label)
            names.append(label)
            sizes.append(float(t.get_fontsize()))
            boxes.append(shown)
        tight = fig.get_tightbbox(renderer)
    finally:
        if agg is not own:
            fig.set_canvas(own)
    overlaps: list[tuple[str, str]] = []
    if boxes:
        b = np.asarray(boxes)
        w = np.minimum(b[:, None, 2], b[None, :, 2]) - np.maximum(b[:, None, 0], b[None, :, 0])
        h = np.minimum(b[:, None, 3], b[None, :, 3]) - np.maximum(b[:, None, 1], b[None, :, 1])
        hit = np.triu((w > tol) & (h > tol), k=1)
        overlaps = [(names[i], names[j]) for i, j in zip(*np.nonzero(hit), strict=True)]
    return TextLayout(
        texts=tuple(names),
        min_font_pt=min(sizes) if sizes else None,
        overlaps=tuple(overlaps),
        clipped=tuple(clipped),
        drawn_in=(float(tight.width), float(tight.height)),
    )


def _clip(box: _Box, limits: list[Any], tol: float) -> tuple[_Box | None, bool]:
    """The part of ``box`` inside every limit (``None`` if nothing is), and if any cut it.

    A limit cuts the box when more than ``tol`` of it lies outside.
    """
    x0, y0, x1, y1 = box
    if not np.all(np.isfinite(box)) or x1 - x0 <= 0 or y1 - y0 <= 0:
        return None, False
    cut = False
    for lim in limits:
        cut |= x0 < lim.x0 - tol or y0 < lim.y0 - tol or x1 > lim.x1 + tol or y1 > lim.y1 + tol
        x0, y0, x1, y1 = max(x0, lim.x0), max(y0, lim.y0), min(x1, lim.x1), min(y1, lim.y1)
        if x1 - x0 <= tol or y1 - y0 <= tol:
            return None, False
    return (x0, y0, x1, y1), cut
