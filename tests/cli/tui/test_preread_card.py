"""A preread shows the same Read card whether it went as a synthetic ``read_file`` call
(thinking off) or as a ``[File: …]`` system message (thinking on, the API's rules): in the
terminal UI live and on replay, and as the ACP tool call (issue 47 §3). The pod runs on the
real SDK against the fake Messages API, so the wire each way is the one a model would see.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from cli.acp.mapping import history_updates, preread_updates, tool_call, tool_finished
from cli.tui.entries import NoteEntry, ToolEntry
from cli.tui.model import ChatModel
from conformance.fake_api import FakeAnthropic, Reply
from orchestrator.core.history import ToolResult, item_from_json
from orchestrator.protocol import HistoryData
from tests.cli.tui.conftest import attach
from tests.e2e.harness import collect_until, fake_provider, running_pod


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    """The fake Messages API, on real HTTP."""
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()


def read_cards(entries: list[Any]) -> list[ToolEntry]:
    return [e for e in entries if isinstance(e, ToolEntry) and e.name == "read_file"]


def wire_blocks(fake: FakeAnthropic) -> list[dict[str, Any]]:
    """Every content block the first request sent."""
    messages = fake.requests[0].body["messages"]
    return [b for m in messages if isinstance(m["content"], list) for b in m["content"]]


async def run_with_a_mention(
    workspace: Path, short_dir: Path, fake: FakeAnthropic, thinking: str
) -> tuple[ToolEntry, str, HistoryData, list[Any]]:
    """Run one turn mentioning @src/app.py in a UI; the card drawn, the screen, the history
    and the events a client heard."""
    fake.push(Reply(thinking="Look at it." if thinking != "off" else None, text="Seen it."))
    provider = fake_provider(fake)
    try:
        async with (
            running_pod(
                workspace,
                short_dir,
                provider=provider,
                thinking=thinking,
                file_ref_style="synthetic_read",
            ) as pod,
            attach(pod, size=(100, 30)) as ui,
        ):
            listener = await pod.client()
            await listener.send("subscribe")
            await ui.probe.send("run", {"input": "what does @src/app.py do?"})
            await ui.until(lambda: "Seen it." in ui.screen, "the answer drawn")
            await ui.ui_status("idle")
            [card] = read_cards(ui.app.model.entries)
            events = await collect_until(listener, "run_end")
            history = await ui.probe.history()
            await listener.close()
            return card, ui.screen, history, events
    finally:
        await provider.aclose()


@pytest.mark.parametrize("thinking", ["adaptive", "off"])
async def test_a_preread_draws_one_read_card_with_thinking_on_or_off(
    workspace: Path, short_dir: Path, fake: FakeAnthropic, thinking: str
) -> None:
    card, screen, history, _ = await run_with_a_mention(workspace, short_dir, fake, thinking)

    blocks = wire_blocks(fake)
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    if thinking == "off":
        assert [c["name"] for c in calls] == ["read_file"]  # the synthetic read itself
    else:
        # The wire keeps the API's thinking rules: no tool loop the model did not start.
        assert calls == []
        assert any(b.get("text", "").startswith("[File: src/app.py]") for b in blocks)
        assert fake.requests[0].valid
    # Either way one Read card, titled and summarised as a read_file call.
    assert card.arguments == {"path": "src/app.py"} and card.synthetic and not card.is_error
    assert card.summary == "read_file: src/app.py — 2 lines"
    assert card.content is not None and "return 42" in card.content
    assert "⚙ read_file(path=src/app.py) → src/app.py — 2 lines [synthetic]" in screen
    # A UI attached later draws the same card from the history, and no stray note.
    replay = ChatModel()
    replay.load_history(history)
    [again] = read_cards(replay.entries)
    assert (again.id, again.arguments, again.summary) == (card.id, card.arguments, card.summary)
    assert not [e for e in replay.entries if isinstance(e, NoteEntry) and "[File:" in e.text]


async def test_the_editor_sees_the_same_read_call_live_and_on_load(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    card, _, history, events = await run_with_a_mention(workspace, short_dir, fake, "adaptive")
    [note] = [e for e in events if e.event == "system_note"]
    live = preread_updates(note.data["text"], note.data["origin"], note.data["seq"], workspace)
    assert len(live) == 2
    start, done = live
    assert isinstance(start, schema.ToolCallStart) and isinstance(done, schema.ToolCallProgress)
    # What a synthetic read's tool_call and result become, for the same call.
    assert start == tool_call(card.id, "read_file", {"path": "src/app.py"}, workspace)
    assert start.kind == "read" and start.title == "read_file: src/app.py"
    assert start.locations and start.locations[0].path == str(workspace / "src/app.py")
    assert done.status == "completed"
    assert done == tool_finished(card.id, card.summary or "", card.content, is_error=False)
    # session/load replays the session the same way.
    items = [item_from_json(raw) for raw in history.items]
    assert not any(isinstance(i, ToolResult) for i in items)
    loaded = history_updates(items, workspace)
    assert [u for u in loaded if u in live] == live


def test_other_system_messages_stay_notes_and_a_forged_header_is_not_a_call(
    workspace: Path,
) -> None:
    from cli.tui.entries import note_entry

    # An ordinary @file attachment (file_ref) and a note keep their look.
    assert isinstance(note_entry("[File: a.py]\nx", "file_ref", 3), NoteEntry)
    assert preread_updates("[File: a.py]\nx", "file_ref", 3, workspace) == []
    # A preread message without a file header (nothing the pod writes) stays a note.
    assert isinstance(note_entry("hello", "preread", 4), NoteEntry)
    assert preread_updates("hello", "preread", 4, workspace) == []
