"""A small SVG writer for the reference's pictures: boxes, text, lines and arrows, nothing else.

The pictures of ``kafkalog_pictures`` are drawn with it rather than with matplotlib: their text stays text
(crisp at any zoom, searchable, a few kilobytes a picture) and a picture takes milliseconds to draw.
Coordinates are pixels at the picture's natural size; the page scales the whole picture down when its
column is narrower.  Every picture has a white background, so it stays readable in the theme's dark
scheme too.  Text is measured (:func:`text_width`) in the widest of the fonts a page may draw it in, so that
a box sized from it holds its text, and a picture widens to hold its rightmost text.
"""

from __future__ import annotations

import functools
from html import escape
from pathlib import Path
from typing import Any

from matplotlib import font_manager
from matplotlib.ft2font import FT2Font, LoadFlags

SANS = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', 'DejaVu Sans', sans-serif"
MONO = "ui-monospace, 'SFMono-Regular', Menlo, Consolas, 'DejaVu Sans Mono', monospace"

#: Fills the pictures share, so one colour means one thing across them.
COLOURS = {
    "header": "#dbe7f5", "header2": "#c3d6ee", "record": "#fbe6cc", "record2": "#f6d2a6", "key": "#d8eed2",
    "value": "#fff3b8", "headers": "#ead9f0", "index": "#fbe3c8", "chosen": "#ffd166", "bad": "#f4a6a6",
    "gone": "#e6e6e6", "ok": "#cfe8c9", "ink": "#1f2933", "muted": "#5f6b76", "accent": "#c0392b",
    "link": "#2b6cb0",
}


@functools.cache
def _face(mono: bool, bold: bool) -> Any:
    """DejaVu Sans (Mono), as matplotlib ships it: the fonts' last fallback, and wider than the system fonts
    before it, so text measured in it fits in whichever of them the browser picks."""
    family = "DejaVu Sans Mono" if mono else "DejaVu Sans"
    found = font_manager.findfont(font_manager.FontProperties(family=family, weight="bold" if bold else "normal"),
                                  fallback_to_default=False)
    return FT2Font(found)


def text_width(text: str, size: float, mono: bool = False, bold: bool = False) -> float:
    """How wide ``text`` renders at ``size`` pixels (its advance, in pixels), measured in DejaVu Sans or
    DejaVu Sans Mono: a box drawn this wide around it, or a picture this wide, holds it."""
    if not text:
        return 0.0
    face = _face(mono, bold)
    face.set_size(size, 72)  # 72 dpi: one point is one pixel
    face.set_text(text, 0.0, flags=LoadFlags.NO_HINTING)
    return float(face.get_width_height()[0]) / 64  # 26.6 fixed point


def extent(x: float, text: str, size: float, anchor: str, mono: bool = False,
           bold: bool = False) -> tuple[float, float]:
    """The left and right edges of ``text`` drawn at ``x`` with ``anchor`` (start, middle or end)."""
    w = text_width(text, size, mono, bold)
    left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
    return left, left + w


#: The room left between the rightmost text and the picture's right edge, as on its left.
MARGIN = 16
#: The least room between a text and the sides of the box it is written in.
PADDING = 3


class Svg:
    """An SVG picture built element by element; :meth:`save` writes it with the size it was given."""

    def __init__(self, width: float, height: float, title: str) -> None:
        self.width = width
        self.height = height
        self.title = title
        self.parts: list[str] = []
        self.arrow_colours: set[str] = set()
        #: The right edge of the rightmost text drawn: the picture widens to hold it.
        self.right = 0.0

    def _arrow(self, colour: str) -> str:
        self.arrow_colours.add(colour)
        return f' marker-end="url(#arrow-{colour.lstrip("#")})"'

    def rect(self, x: float, y: float, w: float, h: float, fill: str, *, stroke: str = "#4a5560",
             width: float = 0.8, dash: str | None = None, tip: str | None = None, radius: float = 2) -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        body = f"<title>{escape(tip)}</title>" if tip else ""
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" height="{h:.1f}" rx="{radius}" '
                          f'fill="{fill}" stroke="{stroke}" stroke-width="{width}"{extra}>{body}</rect>')

    def text(self, x: float, y: float, text: str, *, size: float = 12, anchor: str = "start", bold: bool = False,
             mono: bool = False, colour: str = COLOURS["ink"], italic: bool = False, vertical: bool = False) -> None:
        """``text`` with its baseline at ``y``; ``anchor`` is start, middle or end; ``vertical`` turns it a
        quarter left about its anchor (read bottom to top)."""
        if not vertical:
            self.right = max(self.right, extent(x, text, size, anchor, mono, bold)[1])
        style = ((' font-weight="bold"' if bold else "") + (' font-style="italic"' if italic else "")
                 + (f' transform="rotate(-90 {x:.1f} {y:.1f})"' if vertical else ""))
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                          f'font-family="{MONO if mono else SANS}" fill="{colour}"{style}>{escape(text)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, *, colour: str = COLOURS["muted"],
             width: float = 1.2, dash: str | None = None, arrow: bool = False) -> None:
        extra = (f' stroke-dasharray="{dash}"' if dash else "") + (self._arrow(colour) if arrow else "")
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" '
                          f'stroke-width="{width}"{extra}/>')

    def path(self, d: str, *, colour: str = COLOURS["muted"], width: float = 1.2, arrow: bool = False,
             dash: str | None = None) -> None:
        extra = (f' stroke-dasharray="{dash}"' if dash else "") + (self._arrow(colour) if arrow else "")
        self.parts.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}"{extra}/>')

    def brace(self, x: float, y1: float, y2: float, label: str, *, colour: str = COLOURS["muted"],
              size: float = 11) -> None:
        """A square bracket on the right of the rows from ``y1`` to ``y2``, labelled on its right."""
        self.path(f"M{x:.1f},{y1:.1f} h6 V{y2:.1f} h-6", colour=colour)
        for i, part in enumerate(label.split("\n")):
            self.text(x + 10, (y1 + y2) / 2 + 4 + (i - label.count("\n") / 2) * (size + 2), part, size=size,
                      colour=colour)

    def render(self) -> str:
        """The SVG document, as wide as it was made or as its rightmost text needs (with :data:`MARGIN`)."""
        self.width = max(self.width, self.right + MARGIN)
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:.0f}" height="{self.height:.0f}" '
                f'viewBox="0 0 {self.width:.0f} {self.height:.0f}" role="img" aria-label="{escape(self.title)}">'
                f"<title>{escape(self.title)}</title>"
                "<defs>" + "".join(
                    f'<marker id="arrow-{c.lstrip("#")}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                    f'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
                    for c in sorted(self.arrow_colours)) + "</defs>"
                '<rect width="100%" height="100%" fill="#ffffff"/>')
        return head + "\n".join(self.parts) + "</svg>\n"

    def save(self, path: Path) -> None:
        path.write_text(self.render(), encoding="utf-8")
