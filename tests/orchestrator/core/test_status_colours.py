"""The page's status colours are the TUI's: each one is its theme variable's value in the
default Textual theme, and the TUI's status line paints with the same variables."""

from __future__ import annotations

from textual.theme import BUILTIN_THEMES

from cli.tui.status_bar import StatusBar
from orchestrator.core.status_colours import STATUS_COLOURS, status_colour
from states.lifecycle import PUBLIC_STATUS


def test_every_public_status_has_the_tui_theme_colour() -> None:
    system = BUILTIN_THEMES["textual-dark"].to_color_system().generate()
    assert set(STATUS_COLOURS) == set(PUBLIC_STATUS.values())
    for colour in STATUS_COLOURS.values():
        assert system[colour.theme].upper() == colour.strong.upper()
        muted = system.get(f"{colour.theme}-muted", system[colour.theme])
        assert muted.upper() == colour.muted.upper()


def test_the_status_line_marks_running_and_paused_with_those_variables() -> None:
    css = StatusBar.DEFAULT_CSS
    for status in ("running", "paused"):
        assert (
            f"StatusBar.-{status} {{ background: ${STATUS_COLOURS[status].theme}-muted; }}" in css
        )


def test_an_unknown_status_is_not_painted_as_a_known_one() -> None:
    assert status_colour("from-a-newer-pod") not in STATUS_COLOURS.values()
