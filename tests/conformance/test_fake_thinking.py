"""The fake Messages API's extended-thinking rules, driven by the official SDK over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall, fake_signature
from conformance.thinking import INTERLEAVED_BETA, IssuedThinking

HELLO: list[Any] = [{"role": "user", "content": "hello"}]
ADAPTIVE: Any = {"type": "adaptive"}


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def client(api: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0)


def ask(api: FakeAnthropic, **params: Any) -> anthropic.types.Message:
    fields: dict[str, Any] = {"model": "fake-model", "max_tokens": 4096, "messages": HELLO}
    with client(api).messages.stream(**{**fields, **params}) as stream:
        return stream.get_final_message()


def blocks(message: anthropic.types.Message) -> list[dict[str, Any]]:
    return [b.model_dump(exclude_none=True) for b in message.content]


def refused(api: FakeAnthropic, **params: Any) -> str:
    with pytest.raises(anthropic.BadRequestError) as error:
        ask(api, **params)
    return str(error.value)


def test_a_reply_thinks_only_when_the_request_turns_thinking_on(api: FakeAnthropic) -> None:
    api.push(Reply(thinking="hm", text="a"), Reply(thinking="hm", text="b"))
    assert [b["type"] for b in blocks(ask(api))] == ["text"]
    assert [b["type"] for b in blocks(ask(api, thinking=ADAPTIVE))] == ["thinking", "text"]


def test_redacted_thinking_arrives_whole_and_only_what_was_issued_comes_back(
    api: FakeAnthropic,
) -> None:
    api.push(Reply(thinking="plan", redacted=["secret"], tool_calls=[ToolCall("read", id="t1")]))
    message = ask(api, thinking=ADAPTIVE)
    got = blocks(message)
    assert [b["type"] for b in got] == ["thinking", "redacted_thinking", "tool_use"]
    assert got[1]["data"] and "secret" not in got[1]["data"]
    loop = [
        *HELLO,
        {"role": "assistant", "content": got},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]
    ask(api, messages=loop, thinking=ADAPTIVE)  # sent back as received: accepted
    tampered = [
        loop[0],
        {"role": "assistant", "content": [got[0], {**got[1], "data": "AAAA"}, got[2]]},
        loop[2],
    ]
    assert "Invalid `data` in `redacted_thinking`" in refused(
        api, messages=tampered, thinking=ADAPTIVE
    )


def test_omitted_display_sends_empty_thinking_with_its_signature(api: FakeAnthropic) -> None:
    api.push(Reply(thinking="hidden reasoning", text="ok"))
    got = blocks(ask(api, thinking={"type": "adaptive", "display": "omitted"}))
    assert got[0] == {"type": "thinking", "thinking": "", "signature": fake_signature("")}


@pytest.mark.parametrize(
    ("model", "params", "words"),
    [
        ("claude-sonnet-4-5", {"thinking": ADAPTIVE}, "'adaptive' is not supported"),
        ("claude-opus-5", {"thinking": {"type": "disabled"}}, "'disabled' is not supported"),
        ("claude-opus-5", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, "'enabled'"),
        ("claude-3-5-haiku", {"thinking": ADAPTIVE}, "not supported"),
        ("claude-sonnet-4-6", {"thinking": {"type": "enabled", "budget_tokens": 512}}, "1024"),
        (
            "claude-sonnet-4-6",
            {"thinking": {"type": "enabled", "budget_tokens": 4096}},
            "`max_tokens` must be greater than `thinking.budget_tokens`",
        ),
        ("claude-sonnet-4-5", {"output_config": {"effort": "low"}}, "effort: 'low'"),
        (
            "claude-sonnet-4-6",
            {
                "thinking": ADAPTIVE,
                "tool_choice": {"type": "any"},
                "tools": [{"name": "read", "input_schema": {"type": "object"}}],
            },
            "tool_choice forces tool use",
        ),
    ],
)
def test_parameters_the_model_refuses_are_a_400(
    api: FakeAnthropic, model: str, params: dict[str, Any], words: str
) -> None:
    assert words in refused(api, model=model, max_tokens=4096, **params)


def test_a_budget_at_max_tokens_is_taken_with_interleaved_thinking(api: FakeAnthropic) -> None:
    message = ask(
        api,
        model="claude-sonnet-4-6",
        thinking={"type": "enabled", "budget_tokens": 8192},
        max_tokens=4096,
        extra_headers={"anthropic-beta": INTERLEAVED_BETA},
    )
    assert message.content


def test_thinking_blocks_take_no_cache_control(api: FakeAnthropic) -> None:
    thinking = {"type": "thinking", "thinking": "t", "signature": fake_signature("t")}
    messages = [
        *HELLO,
        {
            "role": "assistant",
            "content": [
                {**thinking, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "a"},
            ],
        },
        {"role": "user", "content": "go"},
    ]
    assert "cache_control" in refused(api, messages=messages, thinking=ADAPTIVE)


def _loop(api: FakeAnthropic) -> tuple[list[Any], list[dict[str, Any]]]:
    api.push(
        Reply(
            thinking="plan", redacted=["r"], text="reading", tool_calls=[ToolCall("read", id="t1")]
        )
    )
    got = blocks(ask(api, thinking=ADAPTIVE))
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}],
    }
    return [*HELLO, None, result], got


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda b: b[2:], "Expected `thinking` or `redacted_thinking`, but found `text`"),
        (lambda b: [b[2], b[0], b[1], b[3]], "but found `text`"),
        (lambda b: [b[1], b[0], b[2], b[3]], "cannot be modified"),
        (lambda b: [b[0], *b[2:]], "cannot be modified"),
        (
            lambda b: [
                {**b[0], "thinking": "plan", "signature": fake_signature("plan")},
                b[1],
                b[2],
                b[3],
            ],
            None,
        ),
    ],
)
def test_the_latest_assistant_message_must_keep_its_thinking_in_place(
    api: FakeAnthropic, change: Any, words: str | None
) -> None:
    messages, got = _loop(api)
    messages[1] = {"role": "assistant", "content": change(got)}
    if words is None:
        ask(api, messages=messages, thinking=ADAPTIVE)  # unchanged: accepted
    else:
        assert words in refused(api, messages=messages, thinking=ADAPTIVE)


def test_a_loop_the_model_did_not_think_in_continues_without_thinking(api: FakeAnthropic) -> None:
    api.push(Reply(text="quick", tool_calls=[ToolCall("read", id="t9")]))
    got = blocks(ask(api, thinking=ADAPTIVE))
    assert [b["type"] for b in got] == ["text", "tool_use"]
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}],
    }
    ask(api, messages=[*HELLO, {"role": "assistant", "content": got}, result], thinking=ADAPTIVE)
    # A tool loop the fake never issued (a client made it up) must start with thinking.
    made_up = [{"type": "tool_use", "id": "toolu_client_1", "name": "read", "input": {}}]
    answer = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_client_1", "content": "x"}],
    }
    words = refused(
        api, messages=[*HELLO, {"role": "assistant", "content": made_up}, answer], thinking=ADAPTIVE
    )
    assert "but found `tool_use`" in words


def test_the_models_api_lists_thinking_capabilities(api: FakeAnthropic) -> None:
    models = client(api).models
    opus = models.retrieve("claude-opus-5").capabilities
    assert opus is not None
    types = opus.thinking.types
    assert (types.adaptive.supported, types.enabled.supported, types.disabled.supported) == (
        True,
        False,
        False,
    )
    assert opus.effort.max.supported
    haiku = models.retrieve("claude-3-5-haiku").capabilities
    assert haiku is not None and not haiku.thinking.supported
    assert models.retrieve("fake-model").capabilities is None


def test_the_thinking_profile_makes_every_thinking_reply_think(api: FakeAnthropic) -> None:
    api.thinking_profile = True
    api.push(Reply(text="plain"), Reply(text="plain"))
    assert [b["type"] for b in blocks(ask(api, thinking=ADAPTIVE))] == [
        "thinking",
        "redacted_thinking",
        "text",
    ]
    assert [b["type"] for b in blocks(ask(api))] == ["text"]  # thinking off: none


def _text_turn(api: FakeAnthropic) -> tuple[list[Any], list[dict[str, Any]]]:
    """A text-only reply that thought, and the next user turn after it."""
    api.push(Reply(thinking="musing", redacted=["hidden"], text="plain answer"))
    got = blocks(ask(api, thinking=ADAPTIVE))
    assert [b["type"] for b in got] == ["thinking", "redacted_thinking", "text"]
    return [*HELLO, None, {"role": "user", "content": "and then?"}], got


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda b: [b[1], b[0], b[2]], "cannot be modified"),  # reordered
        (lambda b: [b[0], b[2]], "cannot be modified"),  # one block left out
        (lambda b: [b[2], b[0], b[1]], "cannot be modified"),  # moved after the text
        (lambda b: [b[1], b[2]], "cannot be modified"),  # the signed block left out
        (lambda b: b, None),  # as received
        (lambda b: [b[2]], None),  # all left out: the API allows it outside a tool loop
    ],
)
def test_a_text_only_replys_thinking_is_checked_in_the_latest_assistant_message(
    api: FakeAnthropic, change: Any, words: str | None
) -> None:
    messages, got = _text_turn(api)
    messages[1] = {"role": "assistant", "content": change(got)}
    for kind in (ADAPTIVE, None):  # the rule holds with thinking on or off in the new request
        params = {"thinking": kind} if kind else {}
        if words is None:
            ask(api, messages=messages, **params)
        else:
            assert words in refused(api, messages=messages, **params)


def test_replies_that_share_a_thinking_block_are_each_checked_whole(api: FakeAnthropic) -> None:
    # The same thinking text signs the same way: a block may belong to several responses.
    api.push(
        Reply(thinking="same", redacted=["one"], text="first"),
        Reply(thinking="same", redacted=["two"], text="second"),
    )
    first = blocks(ask(api, thinking=ADAPTIVE))
    second = blocks(ask(api, thinking=ADAPTIVE))

    def after(content: list[dict[str, Any]]) -> list[Any]:
        return [*HELLO, {"role": "assistant", "content": content}, {"role": "user", "content": "n"}]

    for got in (first, second):  # each as received: accepted
        ask(api, messages=after(got), thinking=ADAPTIVE)
    for cut in ([first[0], first[2]], [first[0], first[1], second[1], first[2]]):
        assert "cannot be modified" in refused(api, messages=after(cut), thinking=ADAPTIVE)


def test_what_the_fake_remembers_of_issued_thinking_is_bounded() -> None:
    issued = IssuedThinking(limit=4)

    def response(n: int) -> list[dict[str, Any]]:
        thought = f"thought {n}"
        return [
            {"type": "thinking", "thinking": thought, "signature": fake_signature(thought)},
            {"type": "tool_use", "id": f"toolu_{n}", "name": "read", "input": {}},
        ]

    for n in range(3):
        issued.record(response(n))  # two keys each: the tool call id and the thinking block
    assert len(issued) == 4
    assert issued.originals(response(0)) is None  # the oldest is out
    # A lookup counts as a use: the block of response 1 stays while newer ones come in.
    assert issued.originals([response(1)[0]]) == [[response(1)[0]]]
    issued.record(response(3))
    assert len(issued) == 4
    assert issued.originals([response(1)[0]]) == [[response(1)[0]]]
    assert issued.originals(response(3)) == [[response(3)[0]]]


def test_the_fake_forgets_the_oldest_issued_thinking_past_its_limit() -> None:
    with FakeAnthropic(issued_limit=6, thinking_profile=True) as small:
        for _ in range(10):
            ask(small, thinking=ADAPTIVE)
            small.push(Reply(text="calling", tool_calls=[ToolCall("read")]))
            ask(small, thinking=ADAPTIVE)
        assert len(small.issued) == 6


def refusal(api: FakeAnthropic, **params: Any) -> str:
    """The message of the 400 a request gets, exactly."""
    with pytest.raises(anthropic.BadRequestError) as error:
        ask(api, **params)
    body: Any = error.value.body
    return str(body["error"]["message"])


def test_refusals_carry_the_apis_words(api: FakeAnthropic) -> None:
    messages, got = _loop(api)
    messages[1] = {"role": "assistant", "content": got[2:]}
    assert refusal(api, messages=messages, thinking=ADAPTIVE) == (
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`text`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
        "We recommend you include thinking blocks from previous turns. To avoid this "
        "requirement, disable `thinking`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    )
    messages[1] = {"role": "assistant", "content": [got[0], *got[2:]]}
    assert refusal(api, messages=messages, thinking=ADAPTIVE) == (
        "messages.1.content.1: `thinking` or `redacted_thinking` blocks in the latest "
        "assistant message cannot be modified. These blocks must remain as they were in the "
        "original response."
    )
