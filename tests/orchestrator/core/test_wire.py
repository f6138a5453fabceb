"""History items to Messages API wire messages, and the incremental builder."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core.history import (
    AssistantMessage,
    History,
    Item,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    user_message,
)
from orchestrator.core.segments import TextSegment
from orchestrator.core.wire import WireBuilder, assistant_blocks, to_wire, tool_result_block


def said(text: str) -> Item:
    """A user message."""
    return user_message([TextSegment(text=text)])


def calls(*ids: str, text: str = "") -> AssistantMessage:
    """An assistant message with optional text and tool calls."""
    blocks: list[Any] = [TextBlock(text=text)] if text else []
    blocks += [ToolUseBlock(id=i, name="Read", input={"path": i}) for i in ids]
    return AssistantMessage(blocks=blocks)


def test_results_come_first_then_texts_in_history_order() -> None:
    items: list[Item] = [
        said("go"),
        calls("t1", "t2", text="reading"),
        SystemMessage(text="note A"),
        ToolResult(call_id="t1", summary="one", content="body"),
        said("also this"),
        ToolResult(call_id="t2", summary="two", is_error=True),
        SystemMessage(text="note B"),
    ]
    assert to_wire(items) == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "t1"}},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "t2"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "one\nbody"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "two", "is_error": True},
                {"type": "text", "text": "note A"},
                {"type": "text", "text": "also this"},
                {"type": "text", "text": "note B"},
            ],
        },
    ]


def test_tool_result_text_is_summary_newline_content() -> None:
    item = ToolResult(call_id="t1", summary="Read a.py (3 lines)", content="x\ny\nz")
    assert tool_result_block(item) == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": "Read a.py (3 lines)\nx\ny\nz",
    }
    assert tool_result_block(item, pruned=True) == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": "Read a.py (3 lines)",
    }


def test_results_of_turns_before_the_bound_send_summary_only() -> None:
    history = History()
    for turn, call_id in ((1, "t1"), (2, "t2")):
        history.new_turn()
        assert history.turn == turn
        history.extend([said(f"turn {turn}"), calls(call_id)])
        history.append(ToolResult(call_id=call_id, summary=f"s{turn}", content=f"c{turn}"))
    results = [
        block
        for message in to_wire(history.items, prune_before_turn=2)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]
    assert results == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "s1"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "s2\nc2"},
    ]


def test_empty_text_is_dropped() -> None:
    items: list[Item] = [
        said("go"),
        AssistantMessage(blocks=[TextBlock(text="  "), TextBlock(text="real")]),
        SystemMessage(text="\n"),
        said("next"),
    ]
    assert to_wire(items) == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "real"}]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ]


def test_an_empty_assistant_message_is_no_message() -> None:
    items: list[Item] = [said("a"), AssistantMessage(blocks=[TextBlock(text="")]), said("b")]
    assert to_wire(items) == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


def test_adjacent_assistant_messages_merge() -> None:
    items: list[Item] = [said("a"), calls(text="one"), calls(text="two"), said("b")]
    assert to_wire(items)[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
    }


def test_thinking_keeps_its_signature() -> None:
    item = AssistantMessage(
        blocks=[ThinkingBlock(thinking="hm", signature="sig"), TextBlock(text="x")]
    )
    assert assistant_blocks(item) == [
        {"type": "thinking", "thinking": "hm", "signature": "sig"},
        {"type": "text", "text": "x"},
    ]


def test_empty_history_is_no_messages() -> None:
    assert to_wire([]) == []
    assert WireBuilder().build([]) == []


# -- WireBuilder equals to_wire ----------------------------------------------------------------

ITEM_KINDS = st.sampled_from(
    ["user", "blank_user", "assistant", "tools", "result", "note", "empty"]
)


def _grow(history: History, kind: str, counter: list[int]) -> None:
    if kind == "user":
        history.append(said("hello"))
    elif kind == "blank_user":
        history.append(said(" "))
    elif kind == "assistant":
        history.append(calls(text="answer"))
    elif kind == "tools":
        counter[0] += 1
        history.append(calls(f"t{counter[0]}a", f"t{counter[0]}b", text="using"))
    elif kind == "result":
        history.append(ToolResult(call_id=f"t{counter[0]}a", summary="s", content="c"))
    elif kind == "note":
        history.append(SystemMessage(text="note"))
    else:
        history.append(AssistantMessage(blocks=[]))
    if len(history) % 4 == 0:
        history.new_turn()


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(ITEM_KINDS, st.integers(min_value=0, max_value=3), st.booleans()), max_size=40
    )
)
def test_builder_equals_to_wire_for_any_append_sequence(
    steps: list[tuple[str, int, bool]],
) -> None:
    history = History()
    builder = WireBuilder()
    counter = [0]
    for kind, bound, build_now in steps:
        _grow(history, kind, counter)
        if build_now:
            assert builder.build(history.items, prune_before_turn=bound) == to_wire(
                history.items, prune_before_turn=bound
            )
    assert builder.build(history.items) == to_wire(history.items)


def test_builder_rebuilds_when_the_prune_bound_moves() -> None:
    history = History()
    history.new_turn()
    history.extend([said("a"), calls("t1"), ToolResult(call_id="t1", summary="s", content="c")])
    history.new_turn()
    history.append(said("b"))
    builder = WireBuilder()
    assert builder.build(history.items) == to_wire(history.items)
    pruned = builder.build(history.items, prune_before_turn=2)
    assert pruned == to_wire(history.items, prune_before_turn=2)
    assert pruned[2]["content"][0]["content"] == "s"
    assert builder.build(history.items) == to_wire(history.items)


def test_builder_rebuilds_for_a_different_history() -> None:
    first, second = History(), History()
    first.extend([said("a"), calls(text="x"), said("b")])
    second.extend([said("z")])
    builder = WireBuilder()
    builder.build(first.items)
    assert builder.build(second.items) == to_wire(second.items)
    shorter = History(list(first.items[:1]))
    assert builder.build(shorter.items) == to_wire(shorter.items)


def test_builder_returns_a_fresh_list() -> None:
    history = History()
    history.append(said("a"))
    builder = WireBuilder()
    built = builder.build(history.items)
    built.append({"role": "assistant", "content": []})
    assert builder.build(history.items) == to_wire(history.items)


def test_builder_does_not_reuse_the_prefix_of_another_history() -> None:
    first, second = History(), History()
    first.extend([said("a"), calls(text="x"), said("b")])
    second.extend([said("z"), calls(text="y"), said("c"), calls(text="w"), said("d")])
    builder = WireBuilder()
    builder.build(first.items)
    assert builder.build(second.items) == to_wire(second.items)
