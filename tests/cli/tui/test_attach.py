"""Several UIs on one pod: history replay on a late attach, live sync between UIs."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli.tui.conftest import attach, eventually_status, history_kinds, pod_status
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod

TOOL_TURN = [
    ScriptedReply(
        text="Let me read it.",
        tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"})],
    ),
    ScriptedReply(text="It is a **tiny** project."),
]


async def test_late_attaching_ui_replays_the_same_conversation(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=TOOL_TURN) as pod, attach(pod) as first:
        await first.pilot.press(*"what is this", "enter")
        await eventually_status(first.probe, "idle")
        await first.ui_status("idle")
        live = first.app.model.transcript()
        async with attach(pod) as late:
            replayed = late.app.model.transcript()
            assert replayed == live
            assert replayed[1:] == [
                "user: what is this",
                "assistant: Let me read it.",
                "tool: ⚙ read_file(path=README.md) → README.md — 3 lines",
                "assistant: It is a **tiny** project.",
            ]
            assert "Idle" in late.status_line
            assert late.status_line == first.status_line


async def test_two_uis_stay_in_sync(workspace: Path, short_dir: Path) -> None:
    replies = [ScriptedReply(text="Hello from the pod.")]
    async with (
        running_pod(workspace, short_dir, replies=replies) as pod,
        attach(pod) as a,
        attach(pod) as b,
    ):
        await b.pilot.press(*"hi from b", "enter")
        await eventually_status(a.probe, "idle")
        await a.until(lambda: "assistant: Hello from the pod." in a.app.model.transcript())
        await b.until(lambda: "assistant: Hello from the pod." in b.app.model.transcript())
        await a.ui_status("idle")
        assert "user: hi from b" in a.app.model.transcript()
        assert a.app.model.transcript() == b.app.model.transcript()


async def test_a_pod_shut_down_elsewhere_is_shown(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir) as pod, attach(pod) as ui:
        await ui.probe.send("shutdown")
        await ui.until(lambda: not ui.app.model.pod.connected, "disconnect")
        assert "Disconnected" in ui.status_line
        assert "info: The pod has shut down." in ui.app.model.transcript()
        assert not ui.exited  # only our own Ctrl-D leaves by itself
        await ui.pilot.press("ctrl+c")
        await ui.until_exited()


async def test_tool_cards_expand_from_the_keyboard(workspace: Path, short_dir: Path) -> None:
    from cli.tui.cards import ToolCard

    async with running_pod(workspace, short_dir, replies=TOOL_TURN) as pod, attach(pod) as ui:
        await ui.pilot.press(*"read it", "enter")
        await eventually_status(ui.probe, "idle")
        await ui.ui_status("idle")
        card = ui.app.query_one(ToolCard)
        assert not card.expanded
        await ui.pilot.press("tab")
        await ui.until(lambda: card.has_class("-selected"), "the card chosen")
        await ui.pilot.press("space")
        await ui.until(lambda: card.expanded, "the card expanded")
        assert "README.md — 3 lines" in ui.screen
        assert await pod_status(ui.probe) == "idle"  # Space on a card sends nothing
        assert await history_kinds(ui.probe) == [
            "user_message",
            "assistant",
            "tool_result",
            "assistant",
        ]
        # Esc leaves the cards; Enter sends again.
        await ui.pilot.press("escape")
        assert not card.has_class("-selected") and ui.app.focused is ui.app.editor


async def test_the_newest_card_expanded_opens_in_view(workspace: Path, short_dir: Path) -> None:
    from cli.tui.cards import ToolCard

    (workspace / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 81)))
    turn = [
        ScriptedReply(
            text="Reading.",
            tool_calls=[ScriptedToolCall(name="read_file", input={"path": "long.txt"})],
        ),
        ScriptedReply(text="Done."),
    ]
    async with running_pod(workspace, short_dir, replies=turn) as pod, attach(pod) as ui:
        await ui.pilot.press(*"read it", "enter")
        await eventually_status(ui.probe, "idle")
        await ui.ui_status("idle")
        card = ui.app.query_one(ToolCard)
        await ui.pilot.press("tab")
        await ui.until(lambda: card.has_class("-selected"), "the card chosen")
        await ui.pilot.press("space")
        await ui.until(lambda: card.expanded, "the card expanded")
        # The view follows the end as the card grows, then brings the card back: its title
        # and the start of its body are on screen, not scrolled off above 80 lines.
        for _ in range(3):
            await ui.pilot.pause()  # the layout, the follow to the end, the scroll after
        screen = ui.screen
        assert "▼ ⚙ read_file" in screen and re.search(r" 1   line 1 *$", screen, re.MULTILINE)
