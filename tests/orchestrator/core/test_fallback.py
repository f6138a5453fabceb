"""Which failures send a request to the fallback model, and the history made valid for a
model that does not think (orchestrator/core/fallback.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from orchestrator.core.fallback import cause_of, without_older_thinking
from orchestrator.core.validator import validate_wire


@pytest.mark.parametrize(
    ("status", "error_type", "cause"),
    [
        (529, "overloaded_error", "overloaded"),
        (None, "overloaded_error", "overloaded"),  # an SSE error event before any content
        (500, "api_error", "server_error"),
        (503, None, "server_error"),
        (404, "not_found_error", "not_found"),
        (429, "rate_limit_error", None),  # the key is limited on every model
        (400, "invalid_request_error", None),  # another model would refuse it too
        (401, "authentication_error", None),
        (None, None, None),  # a broken connection
    ],
)
def test_causes(status: int | None, error_type: str | None, cause: str | None) -> None:
    assert cause_of(status, error_type) == cause


def _thought(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": f"sig-{text}"}


def _conversation(*, loop_open: bool) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": [_thought("a"), {"type": "text", "text": "done"}]},
        {"role": "user", "content": [{"type": "text", "text": "second"}]},
        {
            "role": "assistant",
            "content": [
                _thought("b"),
                {"type": "redacted_thinking", "data": "xyz"},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
    ]
    if not loop_open:
        messages += [
            {"role": "assistant", "content": [_thought("c"), {"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": "third"}]},
        ]
    return messages


def test_the_open_tool_loop_keeps_its_thinking_and_finished_turns_lose_theirs() -> None:
    messages = _conversation(loop_open=True)
    before = copy.deepcopy(messages)
    out = without_older_thinking(messages)
    assert messages == before  # not changed in place
    assert out[1]["content"] == [{"type": "text", "text": "done"}]
    assert out[3] == messages[3]  # the loop the request continues: as it was received
    assert not validate_wire(out, thinking=False)


def test_with_the_loop_closed_no_thinking_is_left() -> None:
    out = without_older_thinking(_conversation(loop_open=False))
    kinds = {b["type"] for m in out if m["role"] == "assistant" for b in m["content"]}
    assert kinds == {"text", "tool_use"}
    assert not validate_wire(out, thinking=False)


def test_a_message_that_only_thought_keeps_its_place() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "first"}]},
        {"role": "assistant", "content": [_thought("a")]},
        {"role": "user", "content": [{"type": "text", "text": "second"}]},
    ]
    out = without_older_thinking(messages)
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert out[1]["content"] and all(b["type"] == "text" and b["text"] for b in out[1]["content"])
