"""History items: the one serialised form, and seq / turn stamping."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from orchestrator.core.history import (
    AssistantMessage,
    History,
    Item,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    item_from_json,
    item_to_json,
    user_message,
)
from orchestrator.core.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    PasteSegment,
    TextSegment,
    UnknownSegment,
    WorkflowInvokeSegment,
)

SEGMENTS = [
    TextSegment(text="see "),
    PasteSegment(id=1, text="pasted"),
    FileRefSegment(path="src/a.py"),
    KnowledgeRefSegment(slug="style"),
    WorkflowInvokeSegment(slug="review"),
    UnknownSegment(kind="sketch", strokes=3),  # type: ignore[call-arg]
]

ITEMS_AND_JSON: list[tuple[Item, dict[str, object]]] = [
    (
        user_message(SEGMENTS),
        {
            "kind": "user_message",
            "seq": 0,
            "turn": 0,
            "segments": [
                {"kind": "text", "text": "see "},
                {"kind": "paste", "id": 1, "text": "pasted"},
                {"kind": "file_ref", "path": "src/a.py"},
                {"kind": "knowledge_ref", "slug": "style"},
                {"kind": "workflow_invoke", "slug": "review"},
                {"kind": "sketch", "strokes": 3},
            ],
            "text": "see pasted@src/a.py@knowledge:style/review[unsupported segment: sketch]",
        },
    ),
    (
        AssistantMessage(
            seq=2,
            turn=1,
            blocks=[
                ThinkingBlock(thinking="hm", signature="sig"),
                TextBlock(text="ok"),
                ToolUseBlock(id="t1", name="Read", input={"path": "a", "n": [1, 2]}),
            ],
            stop_reason="tool_use",
        ),
        {
            "kind": "assistant",
            "seq": 2,
            "turn": 1,
            "blocks": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "text", "text": "ok"},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Read",
                    "input": {"path": "a", "n": [1, 2]},
                },
            ],
            "stop_reason": "tool_use",
            "synthetic": False,
        },
    ),
    (
        ToolResult(seq=3, turn=1, call_id="t1", summary="Read a", content="x", is_error=True),
        {
            "kind": "tool_result",
            "seq": 3,
            "turn": 1,
            "call_id": "t1",
            "summary": "Read a",
            "content": "x",
            "is_error": True,
            "synthetic": False,
        },
    ),
    (
        ToolResult(call_id="t2", summary="[Interrupted by user]", synthetic=True),
        {
            "kind": "tool_result",
            "seq": 0,
            "turn": 0,
            "call_id": "t2",
            "summary": "[Interrupted by user]",
            "content": None,
            "is_error": False,
            "synthetic": True,
        },
    ),
    (
        SystemMessage(seq=4, turn=2, text="note", origin="interrupt"),
        {"kind": "system_message", "seq": 4, "turn": 2, "text": "note", "origin": "interrupt"},
    ),
]


@pytest.mark.parametrize(("item", "data"), ITEMS_AND_JSON, ids=lambda v: getattr(v, "kind", ""))
def test_item_json_round_trip(item: Item, data: dict[str, object]) -> None:
    assert item_to_json(item) == data
    assert item_from_json(data) == item
    assert item_from_json(json.dumps(data)) == item
    assert item_from_json(json.dumps(data).encode()) == item


def test_unknown_segment_survives_the_round_trip() -> None:
    item = user_message([UnknownSegment(kind="sketch", strokes=3)])  # type: ignore[call-arg]
    parsed = item_from_json(item_to_json(item))
    assert isinstance(parsed.segments[0], UnknownSegment)  # type: ignore[union-attr]
    assert parsed == item


def test_bad_records_are_refused() -> None:
    with pytest.raises(ValidationError):
        item_from_json({"kind": "nope"})
    with pytest.raises(ValidationError):
        item_from_json({"kind": "tool_result", "summary": "no call id"})


def test_user_message_text_is_flattened_unless_given() -> None:
    assert user_message([TextSegment(text="a"), FileRefSegment(path="b")]).text == "a@b"
    assert user_message([TextSegment(text="a")], text="other").text == "other"


def test_append_stamps_seq_and_turn() -> None:
    history = History()
    first = history.append(SystemMessage(text="before any turn"))
    assert history.new_turn() == 1
    second, third = history.extend([user_message([TextSegment(text="a")]), SystemMessage(text="n")])
    history.new_turn()
    fourth = history.append(ToolResult(seq=99, turn=99, call_id="t", summary="s"))
    assert [(i.seq, i.turn) for i in (first, second, third, fourth)] == [
        (1, 0),
        (2, 1),
        (3, 1),
        (4, 2),
    ]
    assert history.items == [first, second, third, fourth]
    assert len(history) == 4
    assert list(history) == history.items


def test_stamp_numbers_without_committing() -> None:
    history = History()
    stamped = history.stamp(SystemMessage(text="x"))
    assert (stamped.seq, len(history)) == (1, 0)
    assert history.append(SystemMessage(text="y")).seq == 2


def test_loaded_history_continues_numbering() -> None:
    loaded = [item_from_json(data) for _, data in ITEMS_AND_JSON]
    history = History(loaded)
    assert (history.turn, len(history)) == (2, 5)
    assert history.append(SystemMessage(text="z")).seq == 5
    assert history.append(SystemMessage(text="z")).turn == 2
