"""The conversation's entries on their own: what a card's title and body say."""

from __future__ import annotations

import dataclasses

import pytest
from rich.cells import cell_len

from cli.tui.entries import (
    RESOLVED,
    AlertEntry,
    ApprovalEntry,
    ElicitationEntry,
    ToolEntry,
    compaction_note,
    tokens_k,
)
from cli.tui.entry_views import AlertView
from cli.tui.model import ChatModel
from orchestrator.core.history import Compaction
from orchestrator.protocol import ChildData, ElicitationRequestData, StatusData
from orchestrator.serving.client import PodEvent


def test_a_tool_cards_title_follows_the_call() -> None:
    tool = ToolEntry(id="t1", name="grep", args_json='{"pattern": "x", "pa')
    assert tool.running and tool.title == "⚙ grep() …"  # arguments not whole yet
    tool.arguments = {"pattern": "a\nb", "limit": 3}
    assert tool.title == "⚙ grep(pattern=a b, limit=3) …"
    tool.summary, tool.content, tool.is_error = "failed\nmore", None, True
    assert not tool.running
    assert tool.title == "⚙ grep(pattern=a b, limit=3) → failed [error]"
    assert tool.body.endswith("failed\nmore\n(content pruned or not kept)")


def test_long_arguments_are_cut_in_the_title() -> None:
    tool = ToolEntry(id="t1", name="bash", arguments={"command": "x" * 100}, summary="")
    assert tool.title == f"⚙ bash(command={'x' * 39}…) → (empty)"


def test_a_task_card_shows_its_child_until_the_result() -> None:
    tool = ToolEntry(id="t1", name="task", arguments={})
    tool.child = ChildData.model_validate(
        {
            "call_id": "t1",
            "name": "p.c1",
            "state": "running",
            "tool": "bash",
            "session": "s",
            "socket": "/s",
        }
    )
    assert tool.title == "⚙ task() — child p.c1: running, bash …"


def test_an_approval_card_says_the_keys_then_the_answer() -> None:
    entry = ApprovalEntry(call_id="c", tool="bash", summary="rm x", reason="asks", pod="p.c1")
    assert entry.title == "⚠ allow rm x (child p.c1)?  y once · a always · n deny"
    assert entry.body == "rm x\n(asks)"
    entry.decision = "denied"
    assert entry.title == "✗ rm x (child p.c1): denied"


@pytest.mark.parametrize(
    ("decision", "mark"), [("approved", "✓"), ("denied", "✗"), ("withdrawn", "⊘")]
)
def test_an_answered_approval_is_marked_by_its_outcome(decision: str, mark: str) -> None:
    """Only a call that went ahead gets a tick: a denied one was shown ✓ before."""
    entry = ApprovalEntry(call_id="c", tool="bash", summary="rm x", reason="asks")
    entry.decision = decision
    assert entry.title == f"{mark} rm x: {decision}"


@pytest.mark.parametrize(
    ("action", "mark"),
    [("accept", "✓"), ("decline", "✗"), ("cancel", "⊘"), ("withdrawn", "⊘")],
)
def test_an_answered_request_for_input_is_marked_by_its_outcome(action: str, mark: str) -> None:
    request = ElicitationRequestData.model_validate(
        {"id": "i1", "server": "a", "mode": "form", "message": "Name?", "schema": {}}
    )
    entry = ElicitationEntry.of(request)
    entry.action = action
    assert entry.title.startswith(f"{mark} ") and entry.title.endswith(RESOLVED[action])


@pytest.mark.parametrize(("level", "mark"), [("info", "ℹ"), ("warn", "⚠"), ("error", "✖")])
def test_an_alert_is_marked_by_its_level_in_the_conversation_and_the_status_line(
    level: str, mark: str
) -> None:
    """A child pod that finished is news (info), not a warning: no ⚠ for it."""
    model = ChatModel()
    model.pod.update(StatusData(status="idle", state="idle", name="p"))
    alert = {"level": level, "source": "subpods", "message": "child p.a-1: x", "timestamp_ms": 1}
    [change] = model.apply(PodEvent("alert", alert))
    entry = model.entries[change.index]
    assert isinstance(entry, AlertEntry)
    assert str(AlertView(entry).content) == f"{mark} subpods: child p.a-1: x"
    assert model.pod.text(model.now).endswith(f"\n{mark} child p.a-1: x")


def test_a_compaction_note_and_token_counts() -> None:
    done = Compaction(
        seq=9,
        turn=2,
        summary="S",
        first_seq=1,
        last_seq=8,
        tokens_before=25_000,
        tokens_after=999,
        trigger="auto",
    )
    note = compaction_note(done, todos=done.open_todos)
    assert note.origin == "compaction"
    assert note.text == "Compacted items 1-8 (auto): about 25.0k → 999 tokens of context\nS"
    kept = dataclasses.replace(done, kept_rounds=2, kept_request=True, open_todos=1)
    assert compaction_note(kept, todos=kept.open_todos).text.splitlines()[1] == (
        "Kept verbatim: the last 2 tool rounds, your latest request, 1 open todo."
    )
    assert (tokens_k(9_999), tokens_k(10_000), tokens_k(12_345)) == ("9999", "10.0k", "12.3k")


def test_a_narrow_title_cuts_the_arguments_before_the_summary() -> None:
    """At 80 columns ``bash: started ba…`` hid the job's id; the arguments give way first."""
    command = "npm run dev -- --port 3000"
    tool = ToolEntry(
        id="t1",
        name="bash",
        arguments={"command": command, "background": True},
        summary=f"bash: started background job j1: {command}",
    )
    parts = tool.title_parts
    assert str(parts) == tool.title
    assert tool.title.startswith("⚙ bash(command=npm run dev") and "→ started background" in (
        tool.title
    )  # "bash: " is not said twice
    fitted = parts.fit(76)  # 80 columns less the padding and the ▶
    assert fitted.startswith("⚙ bash(command=n")
    assert fitted.endswith("…) → started background job j1: npm run dev -- --port 3000")
    assert cell_len(fitted) <= 76
    # Narrower still: the outcome's end is cut, never its start.
    assert parts.fit(40).startswith("⚙ bash(…) → started background job j1")
    assert cell_len(parts.fit(40)) <= 40 and parts.fit(40).endswith("…")
    # Wide enough: all of it, as before.
    assert parts.fit(200) == tool.title


def test_a_narrow_title_keeps_the_outcome_after_the_dash() -> None:
    tool = ToolEntry(
        id="t1",
        name="bash",
        arguments={"command": "make " + "x" * 80},
        summary="bash: make " + "x" * 80 + " — exit 2",
        is_error=True,
    )
    fitted = tool.title_parts.fit(60)
    assert fitted.startswith("⚙ bash(…) → make xxx") and fitted.endswith("… — exit 2 [error]")
    assert cell_len(fitted) <= 60


def test_a_narrow_approval_title_keeps_the_keys_and_the_answer() -> None:
    entry = ApprovalEntry(
        call_id="c", tool="bash", summary="run: " + "long command " * 10, reason="asks"
    )
    fitted = entry.title_parts.fit(76)
    assert fitted.startswith("⚠ allow run: long command") and fitted.endswith(
        "…?  y once · a always · n deny"
    )
    entry.decision = "denied"
    assert entry.title_parts.fit(76).endswith("…: denied")


def test_a_narrow_answered_request_for_input_keeps_how_it_ended() -> None:
    request = ElicitationRequestData.model_validate(
        {"id": "i1", "server": "a", "mode": "form", "message": "Sign in " * 20, "schema": {}}
    )
    entry = ElicitationEntry.of(request)
    assert isinstance(entry.title_parts, str)  # waiting: the whole question, wrapped
    entry.action = "decline"
    parts = entry.title_parts
    assert not isinstance(parts, str)
    fitted = parts.fit(78)
    assert fitted.startswith("✗ MCP server a asked: Sign in") and fitted.endswith("… — declined")
    assert cell_len(fitted) <= 78
