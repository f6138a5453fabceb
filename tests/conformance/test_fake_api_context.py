"""The fake API's context-economy rules, driven through the real anthropic SDK over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from conformance.fake_api import FakeAnthropic
from conformance.tokens import count_input_tokens

MODEL = "claude-test"


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    """A running fake API."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def client(api: FakeAnthropic) -> Iterator[anthropic.Anthropic]:
    """The official SDK pointed at the fake, its retries off."""
    with anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as sdk:
        yield sdk


def text(value: str, **extra: Any) -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": value, **extra}


# -- count_tokens -------------------------------------------------------------------------------


def test_count_tokens_uses_the_same_counter_as_messages(
    api: FakeAnthropic, client: anthropic.Anthropic
) -> None:
    request: dict[str, Any] = {
        "model": MODEL,
        "system": "You are terse.",
        "tools": [{"name": "read", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": [text("hello")]}],
    }
    counted = client.messages.count_tokens(**request)
    # {"input_schema":{"type":"object"},"name":"read"}: 48 bytes -> 12 + 3;
    # {"text":"You are terse.","type":"text"}: 39 bytes -> 10 + 3; "hello": 30 bytes -> 8 + 3.
    assert counted.input_tokens == 15 + 13 + 11 == count_input_tokens(request)
    sent = client.messages.create(max_tokens=10, **request)
    assert sent.usage.input_tokens == counted.input_tokens
    assert [r.path for r in api.lookups] == ["/v1/messages/count_tokens"]
    assert [r.path for r in api.requests] == ["/v1/messages"]
    assert api.pending == 0  # counting never takes a step of the script


def test_count_tokens_validates_like_messages(client: anthropic.Anthropic) -> None:
    unanswered = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
        },
        {"role": "user", "content": "and?"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="`tool_use` ids were found without"):
        client.messages.count_tokens(model=MODEL, messages=unanswered)  # type: ignore[arg-type]
