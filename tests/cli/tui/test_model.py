"""The chat model without an app: the conversation from live events and from history."""

from __future__ import annotations

from typing import Any

from cli.tui.entries import AlertEntry, ApprovalEntry, AssistantEntry, Change, ToolEntry
from cli.tui.model import ChatModel
from orchestrator.core.history import (
    AssistantMessage,
    SystemMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
    item_to_json,
)
from orchestrator.core.segments import (
    FileRefSegment,
    PasteSegment,
    TextSegment,
)
from orchestrator.protocol import AlertData, HistoryData, StatusData
from orchestrator.serving.client import PodEvent

# -- conversation from events ---------------------------------------------------------------


def feed(model: ChatModel, events: list[tuple[str, dict[str, Any]]]) -> list[Change]:
    changes: list[Change] = []
    for name, data in events:
        changes.extend(model.apply(PodEvent(name, data)))
    return changes


USER = {"segments": [{"kind": "text", "text": "hi "}, {"kind": "paste", "id": 1, "text": "a\nb"}]}


def test_a_streamed_turn() -> None:
    model = ChatModel()
    changes = feed(
        model,
        [
            ("status", {"status": "running", "state": "requesting", "name": "p", "model": "m"}),
            ("turn_start", {"turn": 1}),
            ("user_message", USER),
            ("text_delta", {"text": "Hel"}),
            ("text_delta", {"text": "lo"}),
            ("usage", {"input_tokens": 10, "output_tokens": 2}),
            ("text_done", {"text": "Hello"}),
            ("turn_end", {"turn": 1, "result": "finished"}),
            ("status", {"status": "idle", "state": "idle", "usage": {}}),
            ("run_end", {"result": "finished"}),
        ],
    )
    assert model.transcript() == ["user: hi [Clipboard #1 | 3 chars, 2 lines]", "assistant: Hello"]
    assert changes == [
        Change("added", 0),
        Change("added", 1),
        Change("appended", 1, "lo"),
        Change("updated", 1, ""),
    ]
    entry = model.entries[1]
    assert isinstance(entry, AssistantEntry)
    assert not entry.streaming and not entry.interrupted
    assert model.pod.status == "idle"
    assert (model.pod.input_tokens, model.pod.output_tokens) == (10, 2)


def test_a_paused_stream_is_marked_interrupted_and_the_resume_streams_anew() -> None:
    model = ChatModel()
    feed(
        model,
        [
            ("user_message", USER),
            ("text_delta", {"text": "partial"}),
            ("status", {"status": "paused", "state": "paused"}),
            ("run_end", {"result": "paused"}),
            ("turn_start", {"turn": 1, "resumed": True}),
            ("text_delta", {"text": "whole"}),
            ("text_done", {"text": "whole answer"}),
            ("run_end", {"result": "finished"}),
        ],
    )
    first, second = model.entries[1], model.entries[2]
    assert isinstance(first, AssistantEntry) and isinstance(second, AssistantEntry)
    assert (first.text, first.interrupted) == ("partial", True)
    assert (second.text, second.interrupted, second.streaming) == ("whole answer", False, False)


def test_a_tool_call_streamed_but_never_committed_is_marked() -> None:
    model = ChatModel()
    feed(
        model,
        [
            ("text_delta", {"text": "Let me"}),
            ("tool_call_start", {"id": "t1", "name": "glob"}),
            ("run_end", {"result": "paused"}),
        ],
    )
    assert model.transcript() == [
        "assistant: Let me [interrupted · not kept in history]",
        "tool: ⚙ glob() → interrupted · not kept in history",
    ]


def test_text_then_tool_call_is_one_text_entry_and_one_card() -> None:
    model = ChatModel()
    feed(
        model,
        [
            ("text_delta", {"text": "Let me look."}),
            ("tool_call_start", {"id": "t1", "name": "glob"}),
            ("tool_call_args_delta", {"id": "t1", "json": '{"pattern": "*"}'}),
            ("text_done", {"text": "Let me look."}),
            ("tool_call_done", {"id": "t1", "name": "glob", "arguments": {"pattern": "*"}}),
            (
                "tool_result",
                {"id": "t1", "summary": "2 files", "content": "a\nb", "is_error": False},
            ),
        ],
    )
    assert model.transcript() == ["assistant: Let me look.", "tool: ⚙ glob(pattern=*) → 2 files"]
    tool = model.entries[1]
    assert isinstance(tool, ToolEntry)
    assert tool.body == '{\n  "pattern": "*"\n}\n2 files\na\nb'


def test_synthetic_results_notes_and_alerts_are_marked() -> None:
    model = ChatModel()
    feed(
        model,
        [
            ("tool_call_start", {"id": "p1", "name": "read_file"}),
            ("tool_call_done", {"id": "p1", "name": "read_file", "arguments": {"path": "a"}}),
            (
                "tool_result",
                {
                    "id": "p1",
                    "summary": "1 line",
                    "content": "x",
                    "is_error": False,
                    "synthetic": True,
                },
            ),
            ("system_note", {"text": "[Notification] hello", "origin": "notify"}),
            (
                "alert",
                {"level": "warn", "source": "file_ref", "message": "nope\nmore", "timestamp_ms": 1},
            ),
        ],
    )
    assert model.transcript() == [
        "tool: ⚙ read_file(path=a) → 1 line [synthetic]",
        "note[notify]: [Notification] hello",
        "alert[warn]: nope\nmore",
    ]
    assert model.pod.last_alert == "nope"


def test_shutdown_and_disconnect() -> None:
    model = ChatModel()
    model.pod.update(StatusData(status="idle", state="idle", name="p"))
    feed(model, [("text_delta", {"text": "x"}), ("shutdown", {})])
    assert model.transcript()[-1] == "info: The pod has shut down."
    model.disconnected()
    assert model.pod.state_label == "Disconnected"


# -- history replay -------------------------------------------------------------------------


def test_history_replay_matches_the_live_events() -> None:
    items = [
        UserMessage(
            seq=1,
            turn=1,
            segments=[TextSegment(text="see "), FileRefSegment(path="a.py")],
            text="see @a.py",
        ),
        SystemMessage(seq=2, turn=1, text="[File: a.py]\nx = 1", origin="file_ref"),
        AssistantMessage(
            seq=3,
            turn=1,
            blocks=[TextBlock(text="Reading."), ToolUseBlock(id="t1", name="grep", input={})],
        ),
        ToolResult(seq=4, turn=1, call_id="t1", summary="no matches", content=None),
        AssistantMessage(seq=5, turn=1, blocks=[TextBlock(text="Done.")]),
        UserMessage(seq=6, turn=2, segments=[PasteSegment(id=2, text="p\nq")], text="p\nq"),
    ]
    replayed = ChatModel()
    replayed.load_history(HistoryData(items=[item_to_json(i) for i in items], greeting="hello"))
    live = ChatModel()
    live.entries.append(replayed.entries[0])  # the greeting comes with history only
    feed(
        live,
        [
            ("user_message", {"segments": item_to_json(items[0])["segments"]}),
            ("system_note", {"text": "[File: a.py]\nx = 1", "origin": "file_ref"}),
            ("text_delta", {"text": "Reading."}),
            ("tool_call_start", {"id": "t1", "name": "grep"}),
            ("text_done", {"text": "Reading."}),
            ("tool_call_done", {"id": "t1", "name": "grep", "arguments": {}}),
            (
                "tool_result",
                {"id": "t1", "summary": "no matches", "content": None, "is_error": False},
            ),
            ("text_done", {"text": "Done."}),
            ("user_message", {"segments": item_to_json(items[5])["segments"]}),
        ],
    )
    assert replayed.transcript() == live.transcript()
    assert replayed.transcript() == [
        "info: hello",
        "user: see @a.py",
        "note[file_ref]: [File: a.py]\nx = 1",
        "assistant: Reading.",
        "tool: ⚙ grep() → no matches",
        "assistant: Done.",
        "user: [Clipboard #2 | 3 chars, 2 lines]",
    ]


def test_events_already_in_the_replayed_history_are_skipped() -> None:
    model = ChatModel()
    model.load_history(
        HistoryData(
            items=[
                {
                    "kind": "user_message",
                    "seq": 1,
                    "turn": 1,
                    "segments": [{"kind": "text", "text": "hi"}],
                    "text": "hi",
                }
            ]
        )
    )
    drawn = len(model.entries)
    # The same commit arriving as a live event after the replay draws nothing new...
    again = {"segments": [{"kind": "text", "text": "hi"}], "seq": 1}
    assert model.apply(PodEvent("user_message", again)) == []
    assert len(model.entries) == drawn
    # ...while a later commit is drawn.
    later = {"segments": [{"kind": "text", "text": "next"}], "seq": 2}
    assert model.apply(PodEvent("user_message", later))
    assert len(model.entries) == drawn + 1


def test_start_up_alerts_from_the_history_reply_are_drawn() -> None:
    model = ChatModel()
    alert = AlertData(
        level="warn", source="pod", message="s.jsonl:3: torn last line ignored", timestamp_ms=1
    )
    model.load_history(HistoryData(items=[], greeting="pod t", alerts=[alert]))
    assert [e.message for e in model.entries if isinstance(e, AlertEntry)] == [alert.message]
    assert model.pod.last_alert == alert.message


# -- what the conversation must never hide ---------------------------------------------------


def test_a_cancelled_stream_is_marked_although_turn_end_comes_first() -> None:
    # On cancel the pod sends turn_end before run_end; the model used to forget the stream
    # at turn_end, so the half answer was left looking like a kept one.
    model = ChatModel()
    feed(
        model,
        [
            ("user_message", USER),
            ("text_delta", {"text": "half an ans"}),
            ("turn_end", {"turn": 1, "result": "cancelled"}),
            ("run_end", {"result": "cancelled"}),
        ],
    )
    entry = model.entries[1]
    assert isinstance(entry, AssistantEntry)
    assert (entry.text, entry.streaming, entry.interrupted) == ("half an ans", False, True)


def test_a_finished_turn_marks_nothing() -> None:
    model = ChatModel()
    feed(
        model,
        [
            ("text_delta", {"text": "All"}),
            ("text_done", {"text": "All done."}),
            ("turn_end", {"turn": 1, "result": "finished"}),
            ("run_end", {"result": "finished"}),
        ],
    )
    assert model.transcript() == ["assistant: All done."]


def test_a_running_tool_streams_its_output_into_its_card() -> None:
    model = ChatModel()
    changes = feed(
        model,
        [
            ("tool_call_start", {"id": "b1", "name": "bash"}),
            ("tool_call_done", {"id": "b1", "name": "bash", "arguments": {"command": "make"}}),
            ("tool_output_delta", {"id": "b1", "text": "step 1\nstep 2\n"}),
            ("tool_output_delta", {"id": "b1", "text": "step 3\nstep 4\n"}),
            ("tool_output_delta", {"id": "unseen", "text": "not ours\n"}),
        ],
    )
    tool = model.entries[0]
    assert isinstance(tool, ToolEntry)
    assert tool.running and tool.live_tail() == "step 2\nstep 3\nstep 4"
    assert tool.body.endswith("step 1\nstep 2\nstep 3\nstep 4\n")
    assert changes[-2:] == [Change("updated", 0), Change("updated", 0)]
    feed(
        model,
        [
            (
                "tool_result",
                {"id": "b1", "summary": "exit 0", "content": "all of it", "is_error": False},
            )
        ],
    )
    assert not tool.running and tool.live_tail() == "" and tool.output == ""


def test_live_output_is_bounded() -> None:
    from cli.tui.model import LIVE_OUTPUT_KEEP

    model = ChatModel()
    feed(model, [("tool_call_start", {"id": "b1", "name": "bash"})])
    chunk = "y" * 1000 + "\n"
    feed(model, [("tool_output_delta", {"id": "b1", "text": chunk})] * 100)
    tool = model.entries[0]
    assert isinstance(tool, ToolEntry)
    assert len(tool.output) == LIVE_OUTPUT_KEEP and tool.output.endswith(chunk)


def test_events_this_ui_cannot_type_draw_nothing() -> None:
    model = ChatModel()
    assert model.apply(PodEvent("sparkle", {"x": 1})) == []
    assert model.apply(PodEvent("text_delta", {"text": 5})) == []
    assert model.entries == []


def test_a_history_item_of_an_unknown_kind_is_named_not_dropped() -> None:
    model = ChatModel()
    model.load_history(HistoryData(items=[{"kind": "hologram", "seq": 1}]))
    assert model.transcript() == ["info: (an item of kind 'hologram' not shown)"]
    assert model.replayed_seq == 1


def test_the_status_lines_alert_expires() -> None:
    from cli.tui.pod_view import ALERT_TTL_S

    model = ChatModel()
    model.pod.update(StatusData(status="idle", state="idle", name="p"))
    model.now = 100.0
    feed(
        model,
        [("alert", {"level": "warn", "source": "s", "message": "slow\nmore", "timestamp_ms": 1})],
    )
    assert model.pod.text(100.0 + ALERT_TTL_S - 1).endswith("\n⚠ slow")
    assert "⚠" not in model.pod.text(100.0 + ALERT_TTL_S)
    # The conversation keeps it.
    assert model.transcript() == ["alert[warn]: slow\nmore"]


def test_a_compaction_reads_the_same_replayed_and_live() -> None:
    item = {
        "kind": "compaction",
        "seq": 7,
        "turn": 2,
        "summary": "We fixed [the parser].",
        "first_seq": 1,
        "last_seq": 6,
        "tokens_before": 12_000,
        "tokens_after": 900,
        "trigger": "manual",
    }
    replayed = ChatModel()
    replayed.load_history(HistoryData(items=[item]))
    live = ChatModel()
    event = {k: v for k, v in item.items() if k not in ("kind", "turn")}
    feed(live, [("compaction", event)])
    assert (
        replayed.transcript()
        == live.transcript()
        == [
            "note[compaction]: Compacted items 1-6 (manual): about 12.0k → 900 tokens of context\n"
            "We fixed [the parser]."
        ]
    )


def test_a_request_to_keep_held_paths_gets_its_own_card_after_the_calls() -> None:
    """The same call asks twice: before it ran (answered), then to keep what it planted."""
    model = ChatModel()
    request = {
        "id": "toolu_7",
        "tool": "bash",
        "kind": "execute",
        "arguments": {"command": "git init"},
        "summary": "run: git init",
        "reason": "default mode asks before execute tools",
    }
    [first] = model.apply(PodEvent("approval_request", request))
    model.apply(PodEvent("approval_resolved", {"id": "toolu_7", "decision": "approved"}))
    held = {
        **request,
        "summary": "keep what it planted: .git (created)",
        "reason": "a sandboxed command created or changed paths …",
        "diff": "+\tfsmonitor = touch /x",
        "held": [".git"],
    }
    [second] = model.apply(PodEvent("approval_request", held))
    assert second.index != first.index
    entry = model.entries[second.index]
    assert isinstance(entry, ApprovalEntry) and entry.decision == "waiting"
    assert entry.summary == "keep what it planted: .git (created)" and entry.diff
    assert model.waiting_approvals() == [entry]
