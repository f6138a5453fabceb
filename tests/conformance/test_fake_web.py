"""The fake API's server tools, driven over HTTP by the real anthropic SDK (streaming and not):
searches and fetches with their results, citations, pause_turn and its continuation, the mixed
case, max_uses, the profile, and the requests it refuses as the API would."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

from conformance.fake_api import FakeAnthropic, Reply, ServerCall, ToolCall, step_from_json
from conformance.models import DEFAULT_MODELS, ModelSpec

MODEL = "claude-sonnet-4-6"
OLD = ModelSpec(
    id="old-searcher",
    thinking=frozenset({"disabled"}),
    server_tools=frozenset({"web_search_20250305", "web_fetch_20250910"}),
)
"""A model that takes only the first versions of the server tools (and says it searches)."""
SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
FETCH = {"type": "web_fetch_20250910", "name": "web_fetch"}
BASH = {"name": "bash", "description": "run", "input_schema": {"type": "object"}}
TOOLS = [BASH, SEARCH, FETCH]


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(models=[*DEFAULT_MODELS, OLD]) as server:
        yield server


def client(api: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url=api.base_url, max_retries=0)


def ask(
    api: FakeAnthropic,
    messages: list[dict[str, Any]],
    *,
    stream: bool,
    tools: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> anthropic.types.Message:
    """One request through the SDK; the answer's content goes on the end of ``messages``."""
    params: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 2048,
        "messages": messages,
        "tools": TOOLS if tools is None else tools,
        **extra,
    }
    if stream:
        with client(api).messages.stream(**params) as events:
            message = events.get_final_message()
    else:
        message = client(api).messages.create(**params)
    messages.append({"role": "assistant", "content": [b.to_dict() for b in message.content]})
    return message


def kinds(message: anthropic.types.Message) -> list[str]:
    return [block.type for block in message.content]


@pytest.mark.parametrize("stream", [True, False])
def test_a_search_comes_with_its_results_a_cited_text_and_its_usage(
    api: FakeAnthropic, stream: bool
) -> None:
    api.push(Reply(text="It is sunny.", server_calls=[ServerCall(input={"query": "weather"})]))
    message = ask(api, [{"role": "user", "content": "weather?"}], stream=stream)

    assert kinds(message) == ["server_tool_use", "web_search_tool_result", "text"]
    call, result, text = message.content
    assert call.type == "server_tool_use" and call.id.startswith("srvtoolu_")
    assert call.name == "web_search" and call.input == {"query": "weather"}
    assert result.type == "web_search_tool_result" and result.tool_use_id == call.id
    assert isinstance(result.content, list) and len(result.content) == 2
    assert all(r.encrypted_content for r in result.content)
    assert text.type == "text" and text.citations
    citation = text.citations[0]
    assert citation.type == "web_search_result_location"
    assert citation.url == result.content[0].url and citation.encrypted_index
    assert message.stop_reason == "end_turn"
    assert message.usage.server_tool_use is not None
    assert message.usage.server_tool_use.web_search_requests == 1


def test_server_blocks_stream_as_the_api_streams_them(api: FakeAnthropic) -> None:
    api.push(Reply(text="Found.", server_calls=[ServerCall(input={"query": "q"})], chunk_size=3))
    body = {"model": MODEL, "max_tokens": 100, "stream": True, "tools": TOOLS}
    body["messages"] = [{"role": "user", "content": "go"}]
    response = httpx.post(
        f"{api.base_url}/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=10
    )
    events = [
        json.loads(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert starts[0] == {"type": "server_tool_use", "id": starts[0]["id"], "name": "web_search"} | {
        "input": {}
    }
    # The result arrives whole in its start event; the text starts empty.
    assert starts[1]["type"] == "web_search_tool_result" and len(starts[1]["content"]) == 2
    assert starts[2] == {"type": "text", "text": ""}
    deltas = [(e["index"], e["delta"]) for e in events if e["type"] == "content_block_delta"]
    call_json = "".join(d["partial_json"] for i, d in deltas if i == 0)
    assert json.loads(call_json) == {"query": "q"}
    assert deltas[0] == (0, {"type": "input_json_delta", "partial_json": ""})
    text_deltas = [d for i, d in deltas if i == 2]
    assert text_deltas[0]["type"] == "citations_delta"
    assert "".join(d.get("text", "") for d in text_deltas) == "Found."
    assert not [d for i, d in deltas if i == 1]
    (end,) = [e for e in events if e["type"] == "message_delta"]
    assert end["usage"]["server_tool_use"] == {"web_search_requests": 1, "web_fetch_requests": 0}


@pytest.mark.parametrize("stream", [True, False])
def test_pause_turn_is_continued_with_the_same_content_last(
    api: FakeAnthropic, stream: bool
) -> None:
    api.push(
        Reply(text="Looking.", server_calls=[ServerCall(), ServerCall()], stop_reason="pause_turn"),
        Reply(text="Here is what I found.", server_calls=[ServerCall(name="web_fetch")]),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "research this"}]
    paused = ask(api, messages, stream=stream)
    assert paused.stop_reason == "pause_turn"
    # The paused content ends in its server blocks: the continuation sends it back, last.
    assert kinds(paused)[-1] == "web_search_tool_result"
    sent = copy.deepcopy(messages)
    done = ask(api, messages, stream=stream)

    assert done.stop_reason == "end_turn"
    assert kinds(done) == ["server_tool_use", "web_fetch_tool_result", "text"]
    fetched = done.content[1].content
    assert fetched.type == "web_fetch_result" and fetched.content.type == "document"
    assert done.usage.server_tool_use is not None
    assert done.usage.server_tool_use.web_fetch_requests == 1
    requests = api.requests
    assert [r.valid for r in requests] == [True, True], [r.error for r in requests]
    assert requests[1].body["messages"] == sent
    # Then a new prompt after the whole loop: byte for byte, everything is accepted.
    messages.append({"role": "user", "content": "thanks"})
    ask(api, messages, stream=stream)
    assert api.requests[-1].valid, api.requests[-1].error


@pytest.mark.parametrize("stream", [True, False])
def test_the_mixed_case_opens_the_next_response_with_the_server_result(
    api: FakeAnthropic, stream: bool
) -> None:
    api.push(
        Reply(
            text="Both at once.",
            server_calls=[ServerCall(input={"query": "docs"}, pending=True)],
            tool_calls=[ToolCall(name="bash", input={"command": "ls"})],
        ),
        Reply(text="Done."),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "look around"}]
    mixed = ask(api, messages, stream=stream)
    assert mixed.stop_reason == "tool_use"
    assert kinds(mixed) == ["text", "server_tool_use", "tool_use"]
    server_id, client_id = mixed.content[1].id, mixed.content[2].id
    messages.append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": client_id}]}
    )
    after = ask(api, messages, stream=stream)

    assert kinds(after) == ["web_search_tool_result", "text"]
    assert after.content[0].tool_use_id == server_id
    assert after.usage.server_tool_use is not None
    assert after.usage.server_tool_use.web_search_requests == 1
    assert all(r.valid for r in api.requests)


def test_searches_past_max_uses_get_an_error_result(api: FakeAnthropic) -> None:
    api.push(Reply(text="Many.", server_calls=[ServerCall() for _ in range(4)]))
    message = ask(api, [{"role": "user", "content": "search a lot"}], stream=True)
    results = [b for b in message.content if b.type == "web_search_tool_result"]
    errors = [r.content.error_code for r in results if not isinstance(r.content, list)]
    assert len(results) == 4 and errors == ["max_uses_exceeded"]
    assert message.usage.server_tool_use is not None
    assert message.usage.server_tool_use.web_search_requests == 3


def test_a_scripted_error_result(api: FakeAnthropic) -> None:
    api.push(Reply(text="No luck.", server_calls=[ServerCall(error_code="too_many_requests")]))
    message = ask(api, [{"role": "user", "content": "go"}], stream=False)
    result = message.content[1]
    assert result.type == "web_search_tool_result"
    assert not isinstance(result.content, list)
    assert result.content.error_code == "too_many_requests"
    assert message.usage.server_tool_use is None  # an errored search is not billed


def test_a_reply_does_not_search_when_the_request_declares_no_server_tool(
    api: FakeAnthropic,
) -> None:
    api.push(Reply(text="Plain.", server_calls=[ServerCall()], stop_reason="pause_turn"))
    message = ask(api, [{"role": "user", "content": "go"}], stream=True, tools=[BASH])
    assert kinds(message) == ["text"] and message.stop_reason == "end_turn"
    assert message.usage.server_tool_use is None


def test_the_models_api_says_which_models_search(api: FakeAnthropic) -> None:
    models = client(api).models
    searcher = models.retrieve(OLD.id).to_dict()
    plain = models.retrieve("claude-3-5-haiku").to_dict()
    assert searcher["capabilities"]["server_tools"]["web_search"] == {"supported": True}
    assert plain["capabilities"]["server_tools"]["web_search"] == {"supported": False}


def test_a_script_in_json_makes_server_calls() -> None:
    step = step_from_json(
        {
            "type": "reply",
            "text": "x",
            "stop_reason": "pause_turn",
            "server_calls": [{"name": "web_fetch", "input": {"url": "https://a.example/"}}],
        }
    )
    assert isinstance(step, Reply)
    assert step.server_calls == (ServerCall(name="web_fetch", input={"url": "https://a.example/"}),)


# -- refusals ---------------------------------------------------------------------------------


def refused(api: FakeAnthropic, messages: list[dict[str, Any]], **params: Any) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        client(api).messages.create(
            model=params.pop("model", MODEL),
            max_tokens=100,
            messages=messages,
            tools=params.pop("tools", TOOLS),
        )
    assert api.requests[-1].valid is False
    body = caught.value.body
    assert isinstance(body, dict)
    return str(body["error"]["message"])


@pytest.mark.parametrize(
    ("tool", "model", "words"),
    [
        (
            SEARCH | {"allowed_domains": ["a.org"], "blocked_domains": ["b.org"]},
            MODEL,
            "tools.1.web_search_20250305: Cannot specify both allowed_domains and "
            "blocked_domains in the same request",
        ),
        (
            SEARCH | {"blocked_domains": []},
            MODEL,
            "tools.1.web_search_20250305.blocked_domains: Empty list of domains is ambiguous.",
        ),
        (
            {"type": "web_search_20260209", "name": "web_search"},
            OLD.id,
            "tools.1: 'web_search_20260209' is not supported for this model",
        ),
        (SEARCH, "claude-3-5-haiku", "tools.1: 'web_search_20250305' is not supported"),
        (SEARCH | {"max_uses": 0}, MODEL, "tools.1.web_search_20250305.max_uses"),
        # A type the SDK does not know is no server tool: a client tool without its schema.
        ({"type": "web_search_29990101", "name": "web_search"}, MODEL, "tools.1.custom"),
        (
            {"type": "web_search_20250305", "name": "search"},
            MODEL,
            "tools.1.web_search_20250305.name: Input should be",
        ),
    ],
)
def test_server_tool_declarations_the_api_refuses(
    api: FakeAnthropic, tool: dict[str, Any], model: str, words: str
) -> None:
    message = refused(api, [{"role": "user", "content": "hi"}], tools=[BASH, tool], model=model)
    assert message.startswith(words), message


def searched(api: FakeAnthropic, **reply: Any) -> list[dict[str, Any]]:
    """A conversation whose last assistant message searched, and a next prompt."""
    api.push(Reply(text="Cited.", server_calls=[ServerCall()], **reply))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "find"}]
    ask(api, messages, stream=False)
    messages.append({"role": "user", "content": "more"})
    return messages


def test_a_changed_encrypted_content_is_refused(api: FakeAnthropic) -> None:
    messages = searched(api)
    messages[1]["content"][1]["content"][0]["encrypted_content"] += "x"
    assert refused(api, messages) == (
        "messages.1.content.1.content.0: Invalid `encrypted_content` in `web_search_result` block"
    )


def test_a_result_sent_back_with_another_title_is_refused(api: FakeAnthropic) -> None:
    messages = searched(api)
    messages[1]["content"][1]["content"][1]["title"] = "A title the page never had"
    assert "content.1: Invalid `encrypted_content`" in refused(api, messages)


def test_encrypted_content_swapped_between_results_is_refused(api: FakeAnthropic) -> None:
    # Each is one the fake issued, but for another page: it vouches for its URL and title.
    messages = searched(api)
    first, second = messages[1]["content"][1]["content"]
    first["encrypted_content"], second["encrypted_content"] = (
        second["encrypted_content"],
        first["encrypted_content"],
    )
    assert "content.0: Invalid `encrypted_content`" in refused(api, messages)


def test_a_changed_encrypted_index_is_refused(api: FakeAnthropic) -> None:
    messages = searched(api)
    messages[1]["content"][2]["citations"][0]["encrypted_index"] = "Eo-forged"
    assert refused(api, messages) == (
        "messages.1.content.2.citations.0: Invalid `encrypted_index` in "
        "`web_search_result_location` citation"
    )


def test_a_cited_text_sent_back_changed_is_refused(api: FakeAnthropic) -> None:
    messages = searched(api)
    messages[1]["content"][2]["citations"][0]["cited_text"] = "Something else entirely."
    assert "Invalid `encrypted_index`" in refused(api, messages)


def test_a_tool_result_for_a_server_call_is_refused(api: FakeAnthropic) -> None:
    api.push(Reply(text="Paused.", server_calls=[ServerCall()], stop_reason="pause_turn"))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "find"}]
    ask(api, messages, stream=False)
    server_id = messages[1]["content"][-2]["id"]
    messages.append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": server_id}]}
    )
    assert refused(api, messages) == (
        f"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
        f"{server_id}. Each `tool_result` block must have a corresponding `tool_use` block in "
        "the previous message."
    )


def test_a_result_without_its_call_is_refused(api: FakeAnthropic) -> None:
    messages = searched(api)
    server_id = messages[1]["content"].pop(0)["id"]
    message = refused(api, messages)
    assert message.startswith("messages.1.content.0: unexpected `tool_use_id` found in ")
    assert server_id in message and "`server_tool_use` block before it" in message


def test_a_made_up_search_result_is_refused(api: FakeAnthropic) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "find"},
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_01x", "name": "web_search"}
                | {"input": {"query": "q"}},
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_01x",
                    "content": [
                        {
                            "type": "web_search_result",
                            "url": "https://evil.example/",
                            "title": "Trust me",
                            "encrypted_content": "EoMadeUp",
                        }
                    ],
                },
                {"type": "text", "text": "Done."},
            ],
        },
        {"role": "user", "content": "next"},
    ]
    assert "Invalid `encrypted_content`" in refused(api, messages)


# -- the profile ------------------------------------------------------------------------------


def test_the_profile_searches_and_pauses_before_every_scripted_step() -> None:
    bash = ToolCall(name="bash", input={"command": "ls"})
    with FakeAnthropic(
        [Reply(text="Running it.", tool_calls=[bash]), Reply(text="All done.")],
        server_tools_profile=True,
    ) as api:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        first = ask(api, messages, stream=True)
        assert first.stop_reason == "pause_turn" and api.pending == 2  # no step used
        assert kinds(first) == ["server_tool_use", "web_search_tool_result"]
        second = ask(api, messages, stream=True)
        assert second.stop_reason == "tool_use"
        assert kinds(second) == [
            "server_tool_use",
            "web_search_tool_result",
            "text",
            "server_tool_use",
            "tool_use",
        ]
        blocks = messages[-1]["content"]
        assert blocks[2]["citations"]
        pending_id, call_id = blocks[3]["id"], blocks[4]["id"]
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id}]}
        )
        third = ask(api, messages, stream=False)
        assert third.stop_reason == "pause_turn"
        assert messages[-1]["content"][0]["tool_use_id"] == pending_id
        fourth = ask(api, messages, stream=False)
        assert fourth.stop_reason == "end_turn" and api.pending == 0
        assert messages[-1]["content"][-1]["text"] == "All done."
        assert all(r.valid for r in api.requests), [r.error for r in api.requests]


def test_the_profile_with_thinking_on_keeps_the_thinking_rules() -> None:
    with FakeAnthropic(
        [Reply(text="Calling.", tool_calls=[ToolCall(name="bash")]), Reply(text="Fine.")],
        server_tools_profile=True,
        thinking_profile=True,
    ) as api:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        thinking = {"thinking": {"type": "adaptive"}}
        paused = ask(api, messages, stream=True, **thinking)
        assert kinds(paused)[:2] == ["thinking", "redacted_thinking"]
        # The continuation goes on from the paused content: it does not think again.
        calling = ask(api, messages, stream=True, **thinking)
        assert "thinking" not in kinds(calling) and calling.stop_reason == "tool_use"
        call_id = messages[-1]["content"][-1]["id"]
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id}]}
        )
        ask(api, messages, stream=True, **thinking)
        ask(api, messages, stream=True, **thinking)
        assert all(r.valid for r in api.requests), [r.error for r in api.requests]


def test_the_profile_leaves_requests_without_web_search_alone() -> None:
    with FakeAnthropic([Reply(text="Plain.")], server_tools_profile=True) as api:
        message = ask(api, [{"role": "user", "content": "go"}], stream=True, tools=[BASH])
        assert kinds(message) == ["text"] and api.pending == 0
