"""The conversation as a person reads it: text as written, marks, scrolling, cards, live output.

Against a real pod, except the first test, which needs fixed text a scripted model would not
produce in one go.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import events

from cli.tui.app import PodApp
from cli.tui.cards import ToolCard
from cli.tui.conversation import NewOutputMarker
from cli.tui.entries import NOT_KEPT, AssistantEntry, ToolEntry
from cli.tui.entry_views import AssistantView
from cli.tui.notices import NOTICE_TTL_S
from tests.cli.tui.conftest import (
    QUICK,
    SIZE,
    Session,
    attach,
    eventually_status,
    screen_text,
    wait_until,
)
from tests.cli.tui.fake_pod import BRACKETS_OUTPUT, brackets_link, build_app
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod


def _burst(app: PodApp, *keys: str) -> None:
    """Keys as a fast typist delivers them: all queued before the first is handled."""
    for key in keys:
        character = " " if key == "space" else key if len(key) == 1 else None
        app.post_message(events.Key(key, character))


async def test_tool_text_is_drawn_exactly_as_written() -> None:
    # Markup escaping missed these: "[Interrupted by user]" showed as nothing, "echo [Hello
    # World]" as "echo ", and backslashes came out doubled.
    link = brackets_link()
    app = build_app(link)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.attached and link.drained, what="replay")
        await wait_until(pilot, lambda: len(app.query(ToolCard)) == 2, what="the live card")
        # Expand both tool cards from the keyboard: newest first, then two cards up.
        await pilot.press("tab", "space", "up", "up", "space", "escape")
        await pilot.pause(0.1)
        screen = screen_text(app)
    rows = [row.strip() for row in screen.splitlines()]
    assert r"› why does [bold]x[/bold] print C:\path\ ?" in rows
    # At 80 columns the arguments give way so the summary shows whole.
    assert any(
        r"⚙ bash(command=echo [Hello World] && echo 'C:\tem…) → [exit 0] [Hello World]" in r
        for r in rows
    )
    assert r"▼ ⚙ grep(pattern=\[x\]) → [Interrupted by user] [synthetic]" in rows
    assert "▶ ✎ system (interrupt): [The previous turn was interrupted by the user.]" in rows
    # The expanded bash card's body: the arguments as JSON, the summary, the output as is.
    for line in BRACKETS_OUTPUT.splitlines():
        assert line in rows, line
    assert "[exit 0] [Hello World]" in rows


async def test_a_cancelled_answer_stays_marked_as_not_kept(session: Session) -> None:
    await session.to_state("running")
    await session.pilot.press("ctrl+x")
    await eventually_status(session.probe, "idle")
    await session.ui_status("idle")
    entry = next(e for e in session.app.model.entries if isinstance(e, AssistantEntry))
    await session.until(lambda: entry.interrupted, "the mark")
    view = session.app.query_one(AssistantView)
    assert view.has_class("-interrupted") and view.border_subtitle == NOT_KEPT
    assert NOT_KEPT in session.screen


TALL = ScriptedReply(
    text="".join(f"line {n}\n\n" for n in range(1500)), chunk_size=9, chunk_delay_s=0.03
)
"""About 45 seconds of answer (the test cancels it long before, unless the machine is loaded), two rows per chunk: it outgrows the screen at once and keeps going."""


async def test_the_view_follows_the_stream_until_the_user_scrolls_up(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[TALL]) as pod, attach(pod) as ui:
        conversation = ui.app.conversation
        await ui.probe.send("run", {"input": "go"})
        # The answer grows past the screen; the view keeps its end in sight.
        await ui.until(lambda: conversation.max_scroll_y > 20, "a long answer")
        await ui.until(lambda: conversation.scroll_y >= conversation.max_scroll_y - 1, "follow")
        assert conversation.following and "new output ↓" not in ui.screen
        # Scrolled up, the view stays where the reader is, and says there is more below.
        await ui.pilot.press("pageup")
        await ui.until(lambda: not conversation.following, "stop following")
        held = conversation.scroll_y
        await ui.until(lambda: conversation.max_scroll_y > held + 40, "more output")
        await ui.until(lambda: "new output ↓" in ui.screen, "the marker")
        assert conversation.scroll_y == held
        # Back at the bottom it follows again, and the marker goes. A click on the marker
        # gets there (PageDown would chase an answer that grows faster than a page a key).
        await ui.pilot.press("pagedown")
        assert not conversation.following
        await ui.pilot.click(NewOutputMarker)
        await ui.until(lambda: conversation.following, "follow again")
        await ui.until(lambda: "new output ↓" not in ui.screen, "the marker to go")
        grown = conversation.max_scroll_y
        await ui.until(lambda: conversation.max_scroll_y > grown + 10, "still more output")
        await ui.until(lambda: conversation.scroll_y >= conversation.max_scroll_y - 1, "follow")
        await ui.pilot.press("ctrl+x")


TOOL_THEN_SLOW = [
    ScriptedReply(  # taller than the screen, so the card at its end is far from the top
        text="".join(f"Thought {n}.\n\n" for n in range(20)),
        tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"})],
    ),
    ScriptedReply(text="It is tiny."),
    ScriptedReply(text="line of output\n\n" * 60, chunk_size=20, chunk_delay_s=0.02),
]


async def test_choosing_a_card_keeps_the_view_and_every_keystroke(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=TOOL_THEN_SLOW) as pod, attach(pod) as ui:
        await ui.pilot.press(*"read it", "enter")
        await eventually_status(ui.probe, "idle")
        await ui.ui_status("idle")
        conversation = ui.app.conversation
        await ui.until(lambda: conversation.following, "at the end")
        # Tab chooses the newest card, which is in view: nothing jumps to the top.
        bottom = conversation.max_scroll_y
        await ui.pilot.press("tab")
        card = ui.app.query(ToolCard).last()
        await ui.until(lambda: card.has_class("-selected"), "the newest card chosen")
        assert conversation.scroll_y >= bottom - 3
        # Typing right away goes to the editor, none of it lost, and leaves the cards.
        _burst(ui.app, *"and now", "space", *"more")
        await ui.until(lambda: ui.app.editor.text == "and now more", "the typed text")
        assert not card.has_class("-selected") and not ui.app.editor.cards_active
        # The next answer streams in view: looking at a card did not stop the following.
        await ui.pilot.press("enter")
        await ui.until(lambda: conversation.max_scroll_y > bottom + 20, "the long answer")
        await ui.until(lambda: conversation.scroll_y >= conversation.max_scroll_y - 1, "follow")
        assert conversation.following


BASH_SCRIPT = "for i in 1 2 3; do echo step $i; sleep 0.4; done; echo done"


async def test_a_running_bash_command_streams_into_its_card(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="bash", input={"command": BASH_SCRIPT})]),
        QUICK,
    ]
    async with (
        running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod,
        attach(pod) as ui,
    ):
        await ui.pilot.press(*"build", "enter")
        tool = lambda: next(  # noqa: E731
            (e for e in ui.app.model.entries if isinstance(e, ToolEntry)), None
        )
        await ui.until(lambda: (t := tool()) is not None and "step 1" in t.output, "live output")
        entry = tool()
        assert entry is not None and entry.running
        card = ui.app.query_one(ToolCard)
        await ui.until(lambda: "step 1" in ui.screen, "the output drawn")
        assert "done" not in entry.output  # it is live: the command still runs
        await eventually_status(ui.probe, "idle")
        await ui.until(lambda: not card.has_class("-running"), "the result")
        assert entry.summary is not None and entry.content is not None
        assert "step 3" in entry.content
        assert "step 1" not in ui.screen  # the live tail gave way to the result's summary


async def test_notices_expire_or_give_way_to_the_state(session: Session) -> None:
    await session.pilot.press("ctrl+x")
    assert session.notice == "Nothing to cancel: the pod is idle"
    # Time alone retires it ...
    session.clock.advance(NOTICE_TTL_S)
    await session.until(lambda: session.notice == "", "the notice to expire")
    # ... and so does the state it described: a turn starting.
    await session.pilot.press("ctrl+x")
    assert session.notice == "Nothing to cancel: the pod is idle"
    await session.probe.send("run", {"input": "go"})
    await session.ui_status("running")
    await session.until(lambda: session.notice == "", "the notice to go")
    # "Your input is kept" lasts exactly as long as the turn runs.
    await session.pilot.press(*"later", "enter")
    assert session.notice.startswith("A turn is running: your input is kept")
    await asyncio.sleep(0.3)
    assert session.notice.startswith("A turn is running")
    await session.pilot.press("ctrl+c")
    await session.ui_status("paused")
    await session.until(lambda: not session.notice.startswith("A turn is running"), "gone")
