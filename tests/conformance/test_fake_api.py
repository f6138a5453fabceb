"""The fake Anthropic API speaks the real wire format and validates like the real API."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

import conformance.fake_api as fake_api
from conformance import script, server
from conformance.fake_api import (
    Drop,
    FakeAnthropic,
    Fault,
    Hang,
    Reply,
    ScriptError,
    StreamError,
    ToolCall,
    fake_signature,
    load_script,
    step_from_json,
)
from conformance.tokens import count_input_tokens

HELLO: list[Any] = [{"role": "user", "content": "hello"}]


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    """A running fake API."""
    with FakeAnthropic() as server:
        yield server


def post(
    api: FakeAnthropic, body: dict[str, Any], *, key: bool = True
) -> tuple[int, dict[str, str], bytes]:
    """A raw POST /v1/messages; returns status, lower-cased headers and the whole body."""
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=5)
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if key:
        headers["x-api-key"] = "test-key"
    connection.request("POST", "/v1/messages", json.dumps(body), headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def sse(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Parse an SSE body into (event name, JSON data) pairs, checking the framing."""
    out = []
    for frame in data.decode().split("\n\n"):
        if not frame:
            continue
        name_line, data_line = frame.split("\n")
        assert name_line.startswith("event: ") and data_line.startswith("data: ")
        out.append((name_line[7:], json.loads(data_line[6:])))
    return out


def body(**overrides: Any) -> dict[str, Any]:
    """A valid request body."""
    return {"model": "claude-test", "max_tokens": 100, "messages": HELLO, **overrides}


def error(message: str, error_type: str = "invalid_request_error") -> dict[str, Any]:
    """The error object of an error response."""
    return {"type": error_type, "message": message}


def sync_client(api: FakeAnthropic, **kwargs: Any) -> anthropic.Anthropic:
    """The official sync SDK pointed at the fake, with the SDK's retries off."""
    return anthropic.Anthropic(api_key="test-key", base_url=api.base_url, max_retries=0, **kwargs)


# -- the wire format --------------------------------------------------------------------------


def test_streamed_text_is_the_exact_anthropic_event_sequence(api: FakeAnthropic) -> None:
    api.push(Reply(text="Hello, world", chunk_size=5, input_tokens=12, output_tokens=4))
    status, headers, data = post(api, body(stream=True))
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["transfer-encoding"] == "chunked"
    assert headers["request-id"] == "req_fake_0001"

    def delta(text: str) -> tuple[str, dict[str, Any]]:
        return (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        )

    assert sse(data) == [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_fake_0001",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 12,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "cache_creation": {
                            "ephemeral_5m_input_tokens": 0,
                            "ephemeral_1h_input_tokens": 0,
                        },
                        "output_tokens": 1,
                        "service_tier": "standard",
                    },
                },
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        delta("Hello"),
        delta(", wor"),
        delta("ld"),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {
                    "input_tokens": 12,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 4,
                },
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def test_thinking_text_and_tool_calls_stream_in_order(api: FakeAnthropic) -> None:
    api.push(
        Reply(
            thinking="Let me look.",
            text="Reading.",
            tool_calls=[ToolCall("read", {"path": "a.txt"}), ToolCall("list")],
            chunk_size=6,
        )
    )
    events = sse(post(api, body(stream=True, thinking={"type": "adaptive"}))[2])
    kinds = [
        (name, data.get("content_block", data.get("delta", {})).get("type"))
        for name, data in events
    ]
    assert kinds == [
        ("message_start", None),
        ("ping", None),
        ("content_block_start", "thinking"),
        ("content_block_delta", "thinking_delta"),
        ("content_block_delta", "thinking_delta"),
        ("content_block_delta", "signature_delta"),
        ("content_block_stop", None),
        ("content_block_start", "text"),
        ("content_block_delta", "text_delta"),
        ("content_block_delta", "text_delta"),
        ("content_block_stop", None),
        ("content_block_start", "tool_use"),
        ("content_block_delta", "input_json_delta"),  # the empty opening fragment
        ("content_block_delta", "input_json_delta"),
        ("content_block_delta", "input_json_delta"),
        ("content_block_delta", "input_json_delta"),
        ("content_block_stop", None),
        ("content_block_start", "tool_use"),
        ("content_block_delta", "input_json_delta"),
        ("content_block_stop", None),
        ("message_delta", None),
        ("message_stop", None),
    ]
    fragments = [d["delta"]["partial_json"] for _, d in events[12:16]]
    assert fragments == ["", '{"path', '": "a.', 'txt"}']
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert starts[2:] == [
        {"type": "tool_use", "id": "toolu_fake_0001", "name": "read", "input": {}},
        {"type": "tool_use", "id": "toolu_fake_0002", "name": "list", "input": {}},
    ]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_the_official_sdk_assembles_the_stream(api: FakeAnthropic) -> None:
    api.push(
        Reply(thinking="Hmm.", text="Here.", tool_calls=[ToolCall("read", {"path": "x"}, id="t1")])
    )
    with sync_client(api).messages.stream(
        model="claude-test", max_tokens=100, messages=HELLO, thinking={"type": "adaptive"}
    ) as stream:
        message = stream.get_final_message()
    assert [block.model_dump(exclude_none=True) for block in message.content] == [
        {"type": "thinking", "thinking": "Hmm.", "signature": fake_signature("Hmm.")},
        {"type": "text", "text": "Here."},
        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "x"}},
    ]
    assert message.stop_reason == "tool_use"


def test_non_streaming_request_gets_one_json_message(api: FakeAnthropic) -> None:
    api.push(Reply(text="Done.", tool_calls=[ToolCall("run", {"cmd": "ls"})], output_tokens=7))
    status, headers, data = post(api, body())
    assert status == 200 and headers["content-type"] == "application/json"
    message = json.loads(data)
    assert message == {
        "id": "msg_fake_0001",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": "Done."},
            {"type": "tool_use", "id": "toolu_fake_0001", "name": "run", "input": {"cmd": "ls"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": count_input_tokens(body()),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 7,
            "service_tier": "standard",
        },
    }


def test_default_reply_echoes_the_last_user_message(api: FakeAnthropic) -> None:
    long_text = "Please summarise   the whole repository for me, with examples"
    messages: list[Any] = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": long_text}]},
    ]
    reply = sync_client(api).messages.create(model="m", max_tokens=10, messages=messages)
    assert [b.model_dump(exclude_none=True) for b in reply.content] == [
        {"type": "text", "text": "ok: Please summarise the whole repository fo"}
    ]


def test_responder_answers_when_the_script_is_empty(api: FakeAnthropic) -> None:
    seen: list[int] = []

    def responder(request: dict[str, Any]) -> Reply | None:
        seen.append(len(request["messages"]))
        return Reply(text=f"{len(request['messages'])} messages") if len(seen) == 1 else None

    api.responder = responder
    api.push(Reply(text="scripted"))
    texts = [json.loads(post(api, body())[2])["content"][0]["text"] for _ in range(3)]
    assert texts == ["scripted", "1 messages", "ok: hello"]
    assert seen == [1, 1]


def test_a_failing_responder_becomes_a_500(api: FakeAnthropic) -> None:
    def responder(request: dict[str, Any]) -> Reply | None:
        raise KeyError("oops")

    api.responder = responder
    status, _, data = post(api, body())
    assert status == 500
    assert json.loads(data)["error"] == error(
        "fake API responder failed: KeyError('oops')", "api_error"
    )


def test_unknown_paths_are_not_found(api: FakeAnthropic) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=5)
    connection.request("POST", "/v1/complete", "{}", {"x-api-key": "k"})
    response = connection.getresponse()
    assert response.status == 404
    assert json.loads(response.read())["error"]["type"] == "not_found_error"
    connection.close()


# -- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["temperature", "top_p", "top_k"])
def test_sampling_parameters_are_rejected(api: FakeAnthropic, name: str) -> None:
    status, headers, data = post(api, body(**{name: 0.5}))
    assert status == 400
    assert json.loads(data) == {
        "type": "error",
        "error": error(f"{name}: Extra inputs are not permitted"),
        "request_id": headers["request-id"],
    }


@pytest.mark.parametrize("missing", ["model", "max_tokens", "messages"])
def test_required_fields(api: FakeAnthropic, missing: str) -> None:
    request = body()
    del request[missing]
    status, _, data = post(api, request)
    assert (status, json.loads(data)["error"]) == (400, error(f"{missing}: Field required"))


def test_an_api_key_header_is_required(api: FakeAnthropic) -> None:
    status, _, data = post(api, body(), key=False)
    assert status == 401
    assert json.loads(data)["error"] == error(
        "x-api-key header is required", "authentication_error"
    )


def test_sdk_bearer_authorization_is_accepted(api: FakeAnthropic) -> None:
    # SDK 2.x sends the key as `Authorization: Bearer`, not `x-api-key`.
    sync_client(api).messages.create(model="m", max_tokens=10, messages=HELLO)
    assert api.requests[0].headers["authorization"] == "Bearer test-key"
    assert api.requests[0].valid


def test_unanswered_tool_use_uses_the_real_api_wording(api: FakeAnthropic) -> None:
    messages = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_a", "name": "ls", "input": {}},
                {"type": "tool_use", "id": "toolu_b", "name": "ls", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "x"},
                {"type": "text", "text": "and?"},
            ],
        },
    ]
    status, _, data = post(api, body(messages=messages))
    assert status == 400
    assert json.loads(data)["error"] == error(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message."
    )
    record = api.requests[0]
    assert not record.valid and record.outcome == "rejected" and record.status == 400


def test_a_stray_tool_result_is_rejected(api: FakeAnthropic) -> None:
    messages = [
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}],
        }
    ]
    status, _, data = post(api, body(messages=messages))
    assert status == 400
    assert json.loads(data)["error"]["message"].startswith(
        "messages.0: unexpected `tool_use_id` found in `tool_result` blocks: nope."
    )


def pdf_block(data: bytes) -> dict[str, Any]:
    import base64

    encoded = base64.b64encode(data).decode("ascii")
    return {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": encoded},
    }


def test_pdfs_are_taken_up_to_100_pages_in_a_request_in_the_real_api_words(
    api: FakeAnthropic,
) -> None:
    from tests.pdf_files import minimal_pdf

    ask = {"type": "text", "text": "read these"}
    fits = [
        {"role": "user", "content": [ask, pdf_block(minimal_pdf(60)), pdf_block(minimal_pdf(40))]}
    ]
    assert post(api, body(messages=fits))[0] == 200
    # The pages of every PDF in the request count, a tool result's too.
    result = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "r"}, pdf_block(minimal_pdf(41))],
    }
    over = [
        {"role": "user", "content": [ask, pdf_block(minimal_pdf(60))]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "r", "input": {}}],
        },
        {"role": "user", "content": [result]},
    ]
    status, _, data = post(api, body(messages=over))
    assert status == 400
    assert json.loads(data)["error"] == error(
        "messages.2.content.0.content.1.pdf.source.base64.data: "
        "A maximum of 100 PDF pages may be provided."
    )
    not_pdf = [{"role": "user", "content": [ask, pdf_block(b"<html></html>")]}]
    status, _, data = post(api, body(messages=not_pdf))
    assert status == 400
    assert json.loads(data)["error"] == error(
        "messages.0.content.1.pdf.source.base64.data: The PDF specified was not valid."
    )


def test_thinking_signatures_must_come_back_unchanged(api: FakeAnthropic) -> None:
    def history(signature: str) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "Hm.", "signature": signature}],
            },
            {"role": "user", "content": "go on"},
        ]

    assert post(api, body(messages=history(fake_signature("Hm."))))[0] == 200
    status, _, data = post(api, body(messages=history("forged")))
    assert (status, json.loads(data)["error"]) == (
        400,
        error("messages.1.content.0: Invalid `signature` in `thinking` block"),
    )
    api.check_signatures = False
    assert post(api, body(messages=history("forged")))[0] == 200


def test_invalid_requests_do_not_consume_the_script(api: FakeAnthropic) -> None:
    api.push(Reply(text="first"))
    assert post(api, body(temperature=1))[0] == 400
    assert api.pending == 1
    assert json.loads(post(api, body())[2])["content"][0]["text"] == "first"


# -- recording ---------------------------------------------------------------------------------


def test_requests_are_recorded_as_copies(api: FakeAnthropic) -> None:
    post(api, body(system="be brief"))
    post(api, body(top_k=3))
    first, second = api.requests
    assert first.body == body(system="be brief")
    assert first.headers["x-api-key"] == "test-key"
    assert (first.valid, first.status, first.outcome, first.error) == (True, 200, "complete", None)
    assert (second.valid, second.status, second.outcome) == (False, 400, "rejected")
    assert second.error == "top_k: Extra inputs are not permitted"
    first.body["messages"].clear()
    assert api.requests[0].body == body(system="be brief")
    api.reset()
    assert api.requests == []


# -- failures -----------------------------------------------------------------------------------


def test_fault_sends_status_error_body_and_retry_after(api: FakeAnthropic) -> None:
    api.push(Fault(status=429, retry_after=2), Fault(status=529), Fault(status=500, message="boom"))
    status, headers, data = post(api, body(stream=True))
    assert (status, headers["retry-after"]) == (429, "2")
    assert json.loads(data)["error"] == error(
        "Number of request tokens has exceeded your per-minute rate limit", "rate_limit_error"
    )
    status, headers, data = post(api, body(stream=True))
    assert (status, json.loads(data)["error"]) == (529, error("Overloaded", "overloaded_error"))
    assert "retry-after" not in headers
    status, _, data = post(api, body())
    assert (status, json.loads(data)["error"]) == (500, error("boom", "api_error"))
    assert [r.outcome for r in api.requests] == ["fault"] * 3


def test_drop_cuts_the_stream_mid_body(api: FakeAnthropic) -> None:
    api.push(Drop(after_events=4, reply=Reply(text="abcdefgh", chunk_size=2)))
    stream = sync_client(api).messages.create(
        model="m",
        max_tokens=10,
        messages=HELLO,
        stream=True,
    )
    received = []
    with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
        for event in stream:
            received.append(event.type)
    # message_start, ping (skipped by the SDK), content_block_start, one delta.
    assert received == ["message_start", "content_block_start", "content_block_delta"]
    assert api.requests[0].outcome == "dropped"


def test_stream_error_sends_an_sse_error_event(api: FakeAnthropic) -> None:
    api.push(StreamError(after_events=3))
    events = sse(post(api, body(stream=True))[2])
    assert [name for name, _ in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "error",
    ]
    assert events[-1][1] == {"type": "error", "error": error("Overloaded", "overloaded_error")}
    assert api.requests[0].outcome == "stream_error"


def test_hang_sends_headers_then_nothing(api: FakeAnthropic) -> None:
    api.push(Hang(seconds=5))
    client = sync_client(api, timeout=0.2)
    stream = client.messages.create(model="m", max_tokens=10, messages=HELLO, stream=True)
    with pytest.raises(httpx2.ReadTimeout):
        next(iter(stream))
    stream.close()
    records = api.wait_until(lambda rs: rs[0].outcome != "pending", timeout=2)
    assert (records[0].status, records[0].outcome) == (200, "client_gone")


def test_tool_ids_are_unique_per_server(api: FakeAnthropic) -> None:
    api.push(Reply(tool_calls=[ToolCall("a")]), Reply(tool_calls=[ToolCall("b"), ToolCall("c")]))
    ids = [block["id"] for _ in range(2) for block in json.loads(post(api, body())[2])["content"]]
    assert ids == ["toolu_fake_0001", "toolu_fake_0002", "toolu_fake_0003"]


# -- scripts as JSON and the standalone server ------------------------------------------------


def test_steps_from_json() -> None:
    assert step_from_json(
        {"type": "reply", "text": "hi", "tool_calls": [{"name": "ls", "input": {"a": 1}}]}
    ) == Reply(text="hi", tool_calls=[ToolCall("ls", {"a": 1})])
    assert step_from_json({"type": "fault", "status": 429, "retry_after": 1}) == Fault(
        status=429, retry_after=1
    )
    assert step_from_json({"type": "drop", "after_events": 3, "reply": {"text": "x"}}) == Drop(
        after_events=3, reply=Reply(text="x")
    )
    assert step_from_json({"type": "hang", "seconds": 2}) == Hang(seconds=2)
    assert step_from_json({"type": "stream_error"}) == StreamError()
    with pytest.raises(ScriptError, match="unknown step type"):
        step_from_json({"type": "explode"})
    with pytest.raises(ScriptError, match="bad fault step"):
        step_from_json({"type": "fault", "code": 500})


def test_load_script(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"type": "reply", "text": "a"}, {"type": "fault", "status": 529}]))
    assert load_script(path) == [Reply(text="a"), Fault(status=529)]
    path.write_text("{}")
    with pytest.raises(ScriptError):
        load_script(path)


def test_standalone_server_serves_the_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"type": "reply", "text": "from the file"}]))
    command = [sys.executable, "-m", "conformance.fake_api", "--script", str(script)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().strip()
            assert base_url.startswith("http://127.0.0.1:")
            with anthropic.Anthropic(api_key="k", base_url=base_url, max_retries=0) as client:
                first = client.messages.create(model="m", max_tokens=5, messages=HELLO)
                second = client.messages.create(model="m", max_tokens=5, messages=HELLO)
            assert [first.content[0].text, second.content[0].text] == [  # type: ignore[union-attr]
                "from the file",
                "ok: hello",
            ]
        finally:
            process.terminate()


def test_the_facade_offers_the_whole_public_api() -> None:
    assert fake_api.__all__ == sorted(fake_api.__all__)
    for name in fake_api.__all__:
        assert getattr(fake_api, name) is not None, name
    for module in (script, server):
        assert set(module.__all__) - {"echo_reply", "last_user_text"} <= set(fake_api.__all__)
