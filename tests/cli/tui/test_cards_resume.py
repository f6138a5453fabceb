"""Enter on an empty line resumes a paused pod wherever the keyboard is, tool cards included;
Space is the cards' own key (issue 47 §4: Enter used to expand the chosen card, and the pod
stayed paused under a status line saying "Enter to resume")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cli.tui.cards import ToolCard
from tests.cli.tui.conftest import QUICK, SLOW, Session, attach, eventually_status, history_kinds
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod

READ_THEN_SLOW = [
    ScriptedReply(
        text="Reading.",
        tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"})],
    ),
    SLOW,
    QUICK,
]


@pytest.fixture
async def paused(workspace: Path, short_dir: Path) -> AsyncIterator[Session]:
    """A UI on a pod paused mid-answer, after a turn's read_file drew a card; the newest card
    chosen with Tab."""
    async with (
        running_pod(workspace, short_dir, replies=READ_THEN_SLOW) as pod,
        attach(pod) as ui,
    ):
        await ui.pilot.press(*"read it", "enter")
        await ui.until(
            lambda: any(getattr(e, "streaming", False) for e in ui.app.model.entries),
            "the slow answer streaming",
        )
        await ui.probe.send("pause")
        await ui.ui_status("paused")
        assert "Enter to resume" in ui.status_line
        await ui.pilot.press("tab")
        card = ui.app.query_one(ToolCard)
        await ui.until(lambda: card.has_class("-selected"), "the card chosen")
        assert ui.app.editor.cards_active and ui.app.editor.text == ""
        yield ui


async def test_enter_with_a_card_chosen_resumes_the_paused_pod(paused: Session) -> None:
    ui = paused
    card = ui.app.query_one(ToolCard)
    before = await history_kinds(ui.probe)
    await ui.pilot.press("enter")
    # The turn goes on to its end: a resume, not a new turn (no user message was sent).
    await eventually_status(ui.probe, "idle", timeout=30)
    await ui.until(lambda: "Done." in ui.screen, "the answer after the resume", timeout=30)
    kinds = await history_kinds(ui.probe)
    assert kinds[: len(before)] == before and "user_message" not in kinds[len(before) :]
    # Enter left the cards and expanded nothing.
    assert not card.expanded and not card.has_class("-selected")
    assert not ui.app.editor.cards_active and ui.app.focused is ui.app.editor


async def test_space_expands_the_card_and_the_pod_stays_paused(paused: Session) -> None:
    ui = paused
    card = ui.app.query_one(ToolCard)
    await ui.pilot.press("space")
    await ui.until(lambda: card.expanded, "the card expanded")
    assert "README.md — 3 lines" in ui.screen
    assert ui.app.editor.cards_active and ui.app.editor.text == ""  # no space typed
    assert (await ui.probe.status()).status == "paused"
    assert "Enter to resume" in ui.status_line
    await ui.pilot.press("space")
    await ui.until(lambda: not card.expanded, "the card collapsed")
    # And Enter from there still resumes.
    await ui.pilot.press("enter")
    await eventually_status(ui.probe, "idle", timeout=30)
    assert not card.expanded


async def test_enter_with_text_and_a_card_chosen_sends_the_text(paused: Session) -> None:
    ui = paused
    await ui.pilot.press("escape", *"new", "tab")
    await ui.until(lambda: ui.app.editor.cards_active, "the cards chosen again")
    await ui.pilot.press("enter")
    # A paused pod given text closes the interrupted turn and starts a new one with it.
    await eventually_status(ui.probe, "idle", timeout=30)
    history = (await ui.probe.history()).items
    users = [i for i in history if i["kind"] == "user_message"]
    assert [u["text"] for u in users] == ["read it", "new"]
    assert ui.app.editor.text == ""
