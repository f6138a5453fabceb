"""The colour of each public status, one table for the terminal UI and the web page.

The TUI paints its status line with its theme's colours (Textual's variables: ``$primary``
while running, ``$warning`` while paused); the web page cannot read a Textual theme, so each
entry names the variable and holds its value in the TUI's default theme (``textual-dark``).
A test checks the values against Textual's own, so the page and the terminal cannot drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = ["STATUS_COLOURS", "UNLOADED_COLOUR", "StatusColour", "status_colour"]


@dataclass(frozen=True, slots=True)
class StatusColour:
    """How one public status is painted."""

    theme: str
    """The Textual theme variable the TUI uses (``primary``); the TUI's backgrounds are its
    ``-muted`` variant."""
    strong: str
    """The variable's value in ``textual-dark`` (bars, borders, text on a dark ground)."""
    muted: str
    """The value of its ``-muted`` variant there (a pill's or a status line's ground)."""


STATUS_COLOURS: Final[Mapping[str, StatusColour]] = MappingProxyType(
    {
        # Idle is the TUI's plain status line: the panel, with nothing marked.
        "idle": StatusColour(theme="panel", strong="#242F38", muted="#242F38"),
        "running": StatusColour(theme="primary", strong="#0178D4", muted="#0C304C"),
        "paused": StatusColour(theme="warning", strong="#FEA62B", muted="#593E19"),
        "stopped": StatusColour(theme="error", strong="#B93C5B", muted="#441E27"),
    }
)
"""Each public status (``status`` of the protocol's ``status`` event) and its colour."""

UNLOADED_COLOUR: Final = StatusColour(theme="surface", strong="#1E1E1E", muted="#1E1E1E")
"""A host's pod that is not in memory (no status of its own: the host's ``unloaded``)."""


def status_colour(status: str) -> StatusColour:
    """The colour of a public status; an unknown one (a newer pod's) is painted unloaded."""
    return STATUS_COLOURS.get(status, UNLOADED_COLOUR)
