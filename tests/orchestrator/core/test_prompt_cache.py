"""Breakpoint placement: system, previous end, newest end; the caller's dicts untouched."""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.core.prompt_cache import (
    BlockPosition,
    count_breakpoints,
    place_breakpoints,
    without_breakpoints,
)

MARK = {"type": "ephemeral"}


def conversation(rounds: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for n in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "r", "input": {}}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "x"}],
            }
        )
    return messages


def test_first_request_marks_system_and_its_end() -> None:
    messages = conversation(0)
    original = copy.deepcopy(messages)
    placed = place_breakpoints("sys", messages, ttl="5m")
    assert placed.system == [{"type": "text", "text": "sys", "cache_control": MARK}]
    assert placed.messages[0]["content"][0]["cache_control"] == MARK
    assert placed.end == BlockPosition(0, 0)
    assert messages == original  # shared with the wire builder: never changed
    assert without_breakpoints(placed.messages) == original


def test_the_next_request_reads_where_the_previous_one_ended() -> None:
    first = place_breakpoints("sys", conversation(1), ttl="5m")
    second = place_breakpoints("sys", conversation(6), ttl="1h", previous_end=first.end)
    marked = [
        (m, b)
        for m, message in enumerate(second.messages)
        for b, block in enumerate(message["content"])
        if "cache_control" in block
    ]
    # The previous end (an exact hit, however far back) and the new end (written now).
    assert marked == [(2, 0), (12, 0)]
    assert second.messages[2]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    body = {"system": second.system, "messages": second.messages, "tools": [{"name": "r"}]}
    assert count_breakpoints(body) == 3
    # Unmarked messages are the caller's own objects; only marked ones were copied.
    source = conversation(6)
    again = place_breakpoints("sys", source, previous_end=first.end)
    assert again.messages[1] is source[1] and again.messages[2] is not source[2]


def test_a_resent_request_needs_one_marker_and_thinking_is_never_marked() -> None:
    messages = conversation(2)
    first = place_breakpoints("", messages)
    again = place_breakpoints("", messages, previous_end=first.end)
    assert again.system == []
    assert count_breakpoints({"messages": again.messages}) == 1
    thinking = [
        {"role": "user", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}
    ]
    assert count_breakpoints({"messages": place_breakpoints("", thinking).messages}) == 0


def test_a_stale_previous_position_is_ignored() -> None:
    placed = place_breakpoints("s", conversation(0), previous_end=BlockPosition(9, 3))
    assert count_breakpoints({"messages": placed.messages}) == 1
