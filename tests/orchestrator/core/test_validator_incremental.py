"""The incremental validator agrees with a fresh full validation at every step."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.core.history import (
    AssistantMessage,
    History,
    SystemMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.validator import IncrementalValidator, validate_wire
from orchestrator.core.wire import WireBuilder

STEP = st.sampled_from(["user", "assistant_text", "assistant_tools", "results", "note", "orphan"])


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=40))
def test_incremental_equals_full(steps: list[str]) -> None:
    history = History()
    builder = WireBuilder()
    incremental = IncrementalValidator()
    pending: list[str] = []
    for n, step in enumerate(steps, start=1):
        if step == "user":
            history.new_turn()
            history.append(UserMessage(text=f"u{n}"))
        elif step == "assistant_text":
            history.append(AssistantMessage(blocks=[TextBlock(text=f"a{n}")]))
        elif step == "assistant_tools":
            pending = [f"t{n}a", f"t{n}b"]
            history.append(AssistantMessage(blocks=[ToolUseBlock(id=i, name="x") for i in pending]))
        elif step == "results":
            for call_id in pending:
                history.append(ToolResult(call_id=call_id, summary="ok"))
            pending = []
        elif step == "note":
            history.append(SystemMessage(text=f"note {n}"))
        else:  # a result for a call that does not exist
            history.append(ToolResult(call_id=f"ghost{n}", summary="?"))
        messages = builder.build(history.items)
        assert incremental.validate(messages) == validate_wire(copy.deepcopy(messages))


def test_a_changed_prefix_is_noticed() -> None:
    incremental = IncrementalValidator()
    good = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
    ]
    assert incremental.validate(good) == []
    broken = [good[0], good[1], {"role": "user", "content": [{"type": "text", "text": "no"}]}]
    assert [v.rule for v in incremental.validate(broken)] == ["unanswered_tool_use"]
    assert incremental.validate(good) == []


def test_same_role_neighbours_are_merged_like_the_api() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "user", "content": [{"type": "text", "text": "b"}]},
    ]
    assert IncrementalValidator().validate(messages) == []
