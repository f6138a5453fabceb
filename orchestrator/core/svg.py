"""A few SVG pieces for server-drawn charts (pure): safe text, shapes, axes, numbers.

Every string that reaches a document goes through :func:`text_of`: a pod's name, a model's
or a state's comes from configs and sessions a repository may have written, so it is data,
escaped for XML, with the characters XML 1.0 cannot hold at all (controls, lone surrogates)
replaced, so no name can break the picture or add markup to it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape

__all__ = [
    "BACKGROUND",
    "FOREGROUND",
    "MUTED_TEXT",
    "Svg",
    "compact_number",
    "duration",
    "nice_ceiling",
    "text_of",
]

BACKGROUND = "#1E1E1E"
"""The charts' ground: the TUI theme's ``surface``."""
FOREGROUND = "#E0E0E0"
"""Text: the TUI theme's ``foreground``."""
MUTED_TEXT = "#9A9A9A"
"""Axis labels and notes."""
GRID = "#3A3A3A"

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]")
MAX_TEXT = 80
"""The longest text a chart shows (a longer name is cut, with an ellipsis)."""


def text_of(value: object, *, limit: int = MAX_TEXT) -> str:
    """``value`` as XML-safe text for an element or an attribute (quotes escaped too)."""
    text = _NOT_XML.sub("\N{REPLACEMENT CHARACTER}", str(value))
    if len(text) > limit:
        text = text[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"
    return escape(text, quote=True)


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def compact_number(value: float) -> str:
    """``1234`` → ``1.2k``, ``3400000`` → ``3.4M``: an axis label."""
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".rstrip("0").rstrip(".") + unit
    return _number(value)


def duration(seconds: float) -> str:
    """``75.2`` → ``1m 15s``; ``4000`` → ``1h 6m``; under ten seconds with a decimal."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 × 10ⁿ at or above ``value`` (an axis's top); 1 for 0."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value * (1 - 1e-9):
            return float(step * power)
    return float(10 * power)


@dataclass
class Svg:
    """An SVG document being drawn, sized by its viewBox only (it scales to any width)."""

    width: int
    height: int
    title: str
    parts: list[str] = field(default_factory=list)

    def add(self, element: str) -> None:
        """Add a piece already made of safe parts."""
        self.parts.append(element)

    def rect(
        self,
        x: float,
        y: float,
        w: float,
        h: float,
        fill: str,
        *,
        stroke: str | None = None,
        **data: object,
    ) -> None:
        """A rectangle; ``data`` become ``data-*`` attributes (what the tests read)."""
        attrs = "".join(f' data-{k.replace("_", "-")}="{text_of(v)}"' for k, v in data.items())
        if stroke is not None:
            attrs += f' stroke="{stroke}" stroke-opacity="0.5" stroke-width="1"'
        self.add(
            f'<rect x="{_number(x)}" y="{_number(y)}" width="{_number(max(w, 0))}" '
            f'height="{_number(max(h, 0))}" fill="{fill}"{attrs}/>'
        )

    def text(
        self,
        x: float,
        y: float,
        value: object,
        *,
        size: int = 12,
        fill: str = FOREGROUND,
        anchor: str = "start",
        weight: str = "normal",
    ) -> None:
        """A line of text, escaped."""
        self.add(
            f'<text x="{_number(x)}" y="{_number(y)}" font-size="{size}" fill="{fill}" '
            f'text-anchor="{anchor}" font-weight="{weight}">{text_of(value)}</text>'
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = GRID) -> None:
        """A thin line (a grid line, an axis)."""
        self.add(
            f'<line x1="{_number(x1)}" y1="{_number(y1)}" x2="{_number(x2)}" '
            f'y2="{_number(y2)}" stroke="{stroke}" stroke-width="1"/>'
        )

    def polyline(self, points: Iterable[tuple[float, float]], stroke: str, **data: object) -> None:
        """A line through ``points``."""
        joined = " ".join(f"{_number(x)},{_number(y)}" for x, y in points)
        attrs = "".join(f' data-{k.replace("_", "-")}="{text_of(v)}"' for k, v in data.items())
        self.add(
            f'<polyline points="{joined}" fill="none" stroke="{stroke}" stroke-width="2" '
            f'stroke-linejoin="round"{attrs}/>'
        )

    def legend(self, x: float, y: float, entries: Iterable[tuple[str, str]]) -> float:
        """Colour swatches and their names in a row, wrapping before the right edge; the
        baseline of its last row."""
        at_x, at_y = x, y
        for colour, name in entries:
            width = 22 + 7.5 * len(name)
            if at_x + width > self.width - 8 and at_x > x:
                at_x, at_y = x, at_y + 19
            self.add(
                f'<rect x="{_number(at_x)}" y="{_number(at_y - 10)}" width="12" height="12" '
                f'rx="2" fill="{colour}"/>'
            )
            self.text(at_x + 16, at_y, name, size=13, fill=MUTED_TEXT)
            at_x += width + 10
        return at_y

    def render(self) -> str:
        """The document: no fixed size (``viewBox`` only), a title for screen readers."""
        title = text_of(self.title)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" '
            f'role="img" aria-label="{title}" '
            f'font-family="system-ui, -apple-system, Segoe UI, sans-serif">'
            f"<title>{title}</title>"
            f'<rect x="0" y="0" width="{self.width}" height="{self.height}" rx="8" '
            f'fill="{BACKGROUND}"/>' + "".join(self.parts) + "</svg>"
        )
