"""The UI-free model: chips, completion queries, conversation entries, the status line."""

from __future__ import annotations

from typing import Any

import pytest

from cli.tui.model import (
    AssistantEntry,
    Change,
    ChatModel,
    InputChips,
    PodView,
    ToolEntry,
    completion_query,
    is_blank,
    paste_label,
    should_chip_paste,
)
from orchestrator.history import (
    AssistantMessage,
    SystemMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
    item_to_json,
)
from orchestrator.segments import FileRefSegment, PasteSegment, TextSegment

# -- input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "chip"),
    [
        ("one line", False),
        ("x" * 200, False),
        ("x" * 201, True),
        ("two\nlines", True),
        ("one line with newline\n", False),
    ],
)
def test_should_chip_paste(text: str, chip: bool) -> None:
    assert should_chip_paste(text) is chip


def test_paste_label_counts_chars_and_lines() -> None:
    assert paste_label(3, "a\nbc\n") == "Clipboard #3 | 5 chars, 2 lines"
    assert paste_label(1, "") == "Clipboard #1 | 0 chars, 1 lines"


def test_chips_map_back_to_segments() -> None:
    chips = InputChips()
    paste = chips.paste("a\nb")
    ref = chips.file_ref("src/app.py")
    know = chips.knowledge_ref("style")
    text = f"look {ref} and {paste}{know} ⟦not a chip⟧"
    assert chips.segments(text) == [
        {"kind": "text", "text": "look "},
        {"kind": "file_ref", "path": "src/app.py"},
        {"kind": "text", "text": " and "},
        {"kind": "paste", "id": 1, "text": "a\nb"},
        {"kind": "knowledge_ref", "slug": "style"},
        {"kind": "text", "text": " ⟦not a chip⟧"},
    ]


def test_paste_numbers_keep_counting_after_clear() -> None:
    chips = InputChips()
    chips.paste("a\nb")
    chips.clear()
    assert chips.paste("c\nd") == "⟦Clipboard #2 | 3 chars, 2 lines⟧"
    assert len(chips.chips) == 1


def test_tokens_at_the_cursor() -> None:
    chips = InputChips()
    ref = chips.file_ref("a.py")
    assert chips.token_before(f"x {ref}") == ref
    assert chips.token_before(f"x {ref} ") is None
    assert chips.token_before("x ⟦@unregistered⟧") is None
    assert chips.token_after(f"{ref} tail") == ref
    assert chips.token_after(f" {ref}") is None
    assert chips.token_around(f"ab{ref}", 4) == (2, 2 + len(ref))
    assert chips.token_around(f"ab{ref}", 2) is None


@pytest.mark.parametrize(
    ("line", "query"),
    [
        ("@", ""),
        ("@src/a", "src/a"),
        ("read @src/", "src/"),
        ("mail me@example.com", None),
        ("@src/a.py more", None),
        ("plain", None),
        ("x ⟦@a.py⟧", None),
    ],
)
def test_completion_query(line: str, query: str | None) -> None:
    assert completion_query(line) == query


def test_is_blank() -> None:
    assert is_blank([{"kind": "text", "text": "  \n"}])
    assert is_blank([])
    assert not is_blank([{"kind": "text", "text": " a "}])
    assert not is_blank([{"kind": "file_ref", "path": "a"}])


# -- conversation from events ---------------------------------------------------------------


def feed(model: ChatModel, events: list[tuple[str, dict[str, Any]]]) -> list[Change]:
    changes: list[Change] = []
    for name, data in events:
        changes.extend(model.apply(name, data))
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
        "assistant: Let me",
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
                {"id": "p1", "summary": "1 line", "content": "x", "synthetic": True},
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
    model.pod.update({"status": "idle", "name": "p"})
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
    replayed.load_history([item_to_json(i) for i in items], greeting="hello")
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
            ("tool_result", {"id": "t1", "summary": "no matches", "content": None}),
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


# -- status line ----------------------------------------------------------------------------


def test_status_line_states() -> None:
    pod = PodView()
    assert pod.text().startswith("Connecting")
    pod.update(
        {
            "status": "paused",
            "name": "demo",
            "model": "scripted-demo",
            "provider": "scripted",
            "usage": {"input_tokens": 12345, "output_tokens": 6},
        }
    )
    assert pod.text() == (
        "demo · scripted-demo · offline (scripted provider) · "
        "Paused — Enter to resume, type to start new turn · 12.3k↑ 6↓ tokens"
    )
    pod.update({"status": "running", "provider": "anthropic", "model": "claude"})
    pod.last_alert = "rate limited"
    assert pod.text() == "demo · claude · Running · 12.3k↑ 6↓ tokens\n⚠ rate limited"


def test_events_already_in_the_replayed_history_are_skipped() -> None:
    from cli.tui.model import ChatModel

    model = ChatModel()
    model.load_history(
        [
            {
                "kind": "user_message",
                "seq": 1,
                "turn": 1,
                "segments": [{"kind": "text", "text": "hi"}],
                "text": "hi",
            }
        ]
    )
    drawn = len(model.entries)
    # The same commit arriving as a live event after the replay draws nothing new...
    assert (
        model.apply("user_message", {"segments": [{"kind": "text", "text": "hi"}], "seq": 1}) == []
    )
    assert len(model.entries) == drawn
    # ...while a later commit is drawn.
    assert model.apply("user_message", {"segments": [{"kind": "text", "text": "next"}], "seq": 2})
    assert len(model.entries) == drawn + 1


def test_start_up_alerts_from_the_history_reply_are_drawn() -> None:
    from cli.tui.model import AlertEntry, ChatModel

    model = ChatModel()
    alert = {"level": "warn", "source": "pod", "message": "s.jsonl:3: torn last line ignored"}
    model.load_history([], "pod t", [alert])
    assert [e.message for e in model.entries if isinstance(e, AlertEntry)] == [alert["message"]]
    assert model.pod.last_alert == alert["message"]
