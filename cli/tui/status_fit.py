"""The status line in one row: its parts give up words, then whole parts, by priority.

At 80 columns the status line used to wrap onto a second row (and push the conversation up
by one); it now shortens. The state and its keys matter most, then the pod's name; the
tokens, context share and children first take shorter words, the count of web searches,
the model (``/model`` says it) and the cost go early. The rows below it (running jobs, the last alert) are each cut to
one row too.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len

from cli.tui.entries import cut_end

__all__ = ["SHRINK_ORDER", "StatusPart", "fit_row", "fit_status"]

SEPARATOR = " · "


@dataclass
class StatusPart:
    """One part of the status line: its forms, longest first (``""``: left out)."""

    key: str
    forms: list[str]
    level: int = 0

    @property
    def shown(self) -> str:
        """The form in use."""
        return self.forms[min(self.level, len(self.forms) - 1)]


SHRINK_ORDER = (
    "searches",
    "tokens",
    "context",
    "children",
    "offline",
    "model",
    "cost",
    "mode",
    "mode",
    "mode",
    "tokens",
    "children",
    "state",
    "context",
    "offline",
    "name",
    "mode",
    "state",
    "name",
    "mode",
)
"""What gives way, in turn, while the line is too wide: each step takes the part's next
shorter form (the last is usually to leave it out). The state keeps its keys longest."""


def _line(parts: list[StatusPart]) -> str:
    return SEPARATOR.join(p.shown for p in parts if p.shown)


def fit_status(parts: list[StatusPart], width: int | None) -> str:
    """The parts joined with ``·``, shortened in :data:`SHRINK_ORDER` until they fit
    ``width`` cells (None: no limit); cut at the end, marked ``…``, if nothing else helps."""
    line = _line(parts)
    if width is None or cell_len(line) <= width:
        return line
    by_key = {p.key: p for p in parts}
    for key in SHRINK_ORDER:
        part = by_key.get(key)
        if part is None or part.level >= len(part.forms) - 1:
            continue
        part.level += 1
        line = _line(parts)
        if cell_len(line) <= width:
            return line
    return cut_end(line, width)


def fit_row(text: str, width: int | None, *, keep_end: str = "") -> str:
    """One of the rows below: cut to ``width`` cells, ``keep_end`` (a pointer such as
    ``(/jobs)``) kept after the cut."""
    if width is None or cell_len(text) <= width:
        return text
    if keep_end and text.endswith(keep_end) and cell_len(keep_end) + 2 <= width:
        body = text[: -len(keep_end)].rstrip()
        return cut_end(body, width - cell_len(keep_end) - 1) + " " + keep_end
    return cut_end(text, width)
