"""The fake API's context-economy rules, driven through the real anthropic SDK over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from conformance.fake_api import FakeAnthropic, Fault, ModelSpec, Reply
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


# -- the Models API -----------------------------------------------------------------------------


def test_models_retrieve_returns_the_configured_limits() -> None:
    small = ModelSpec(
        id="small-model", display_name="Small", context_window=8_000, max_tokens=1_000
    )
    with (
        FakeAnthropic(models=[small]) as api,
        anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as client,
    ):
        info = client.models.retrieve("small-model")
        assert (info.id, info.type, info.display_name) == ("small-model", "model", "Small")
        assert (info.max_input_tokens, info.max_tokens) == (8_000, 1_000)
        assert info.lifecycle == "active"
        with pytest.raises(anthropic.NotFoundError) as caught:
            client.models.retrieve("claude-sonnet-4-5")  # not configured on this fake
        assert isinstance(caught.value.body, dict)
        assert caught.value.body["error"] == {
            "type": "not_found_error",
            "message": "model: claude-sonnet-4-5",
        }
        assert [r.status for r in api.lookups] == [200, 404]
        assert api.requests == []


def test_the_default_models_are_listed_newest_first_and_page(client: anthropic.Anthropic) -> None:
    sonnet = client.models.retrieve("claude-sonnet-4-5")
    assert (sonnet.max_input_tokens, sonnet.max_tokens) == (200_000, 64_000)
    everything = [model.id for model in client.models.list()]
    assert everything == ["claude-opus-4-5", "claude-haiku-4-5", "claude-sonnet-4-5"]
    first = client.models.list(limit=1)
    assert ([m.id for m in first.data], first.has_more) == (["claude-opus-4-5"], True)
    assert [m.id for page in first.iter_pages() for m in page.data] == everything


def test_a_failing_models_endpoint_answers_its_fault(
    api: FakeAnthropic, client: anthropic.Anthropic
) -> None:
    api.models_fault = Fault(status=500)
    with pytest.raises(anthropic.InternalServerError):
        client.models.retrieve("claude-sonnet-4-5")
    with pytest.raises(anthropic.InternalServerError):
        client.models.list()
    api.models_fault = None
    assert client.models.retrieve("claude-sonnet-4-5").max_input_tokens == 200_000
    assert [r.outcome for r in api.lookups] == ["fault", "fault", "complete"]


# -- the context window -------------------------------------------------------------------------


def test_a_prompt_over_the_window_is_refused_in_the_real_wording() -> None:
    messages: list[Any] = [{"role": "user", "content": [text("x" * 400)]}]
    size = count_input_tokens({"messages": messages})
    tight = ModelSpec(id="tight", context_window=size)
    with (
        FakeAnthropic([Reply(text="fits")], models=[tight]) as api,
        anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as client,
    ):
        fits = client.messages.create(model="tight", max_tokens=5, messages=messages)
        assert fits.usage.input_tokens == size
        messages.append({"role": "assistant", "content": "ok"})
        messages.append({"role": "user", "content": "more"})
        longer = count_input_tokens({"messages": messages})
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(model="tight", max_tokens=5, messages=messages)
        expected = f"prompt is too long: {longer} tokens > {size} maximum"
        assert isinstance(caught.value.body, dict)
        assert caught.value.body["error"] == {"type": "invalid_request_error", "message": expected}
        assert (api.requests[-1].valid, api.requests[-1].error) == (False, expected)
        # Counting is not refused: it is how a client finds out how far over it is.
        assert client.messages.count_tokens(model="tight", messages=messages).input_tokens == longer
        # A model nobody configured has a 200,000-token window.
        client.messages.create(model="anything", max_tokens=5, messages=messages)
        huge = [{"role": "user", "content": "y" * 800_100}]
        with pytest.raises(
            anthropic.BadRequestError, match=r"prompt is too long: 200\d{3} tokens > 200000 maximum"
        ):
            client.messages.create(model="anything", max_tokens=5, messages=huge)  # type: ignore[arg-type]
