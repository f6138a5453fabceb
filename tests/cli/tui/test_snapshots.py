"""SVG snapshots of the main screens at 80x24 (regenerate with ``--snapshot-update``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from tests.cli.tui.fake_pod import FakeLink, brackets_link, build_app, idle_link, paused_link


def settle(link: FakeLink) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        app.query_one("#editor").cursor_blink = False
        deadline = asyncio.get_running_loop().time() + 5
        while not (getattr(app, "attached", False) and link.drained):
            assert asyncio.get_running_loop().time() < deadline, "fake pod never replayed"
            await pilot.pause(0.02)
        await pilot.pause(0.2)  # Markdown renders in the background

    return run_before


def test_idle_with_a_conversation(snap_compare: Any) -> None:
    link = idle_link()
    assert snap_compare(build_app(link), run_before=settle(link))


def test_paused_with_the_hint(snap_compare: Any) -> None:
    link = paused_link()
    assert snap_compare(build_app(link), run_before=settle(link))


def test_typing_with_chips_and_completion_list(snap_compare: Any) -> None:
    link = idle_link()

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(link)(pilot)
        app = pilot.app
        editor = app.query_one("#editor")
        editor.insert_text("fix ")  # type: ignore[attr-defined]
        editor.insert_text(app.chips.file_ref("src/app.py"))  # type: ignore[attr-defined]
        editor.insert_text(" using ")  # type: ignore[attr-defined]
        editor.insert_text(app.chips.paste("one\ntwo\nthree"))  # type: ignore[attr-defined]
        await pilot.press("ctrl+c")  # idle: the quit warning
        await pilot.press("space", "@", "s")
        while not app.query_one("#completions").has_class("-open"):
            await pilot.pause(0.02)
        await pilot.pause(0.1)

    assert snap_compare(build_app(link), run_before=run_before)


def test_tool_text_as_written_with_a_card_open(snap_compare: Any) -> None:
    link = brackets_link()

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(link)(pilot)
        await pilot.press("tab", "up", "up", "space")  # the bash card, chosen and open
        await pilot.pause(0.1)

    assert snap_compare(build_app(link), run_before=run_before)
