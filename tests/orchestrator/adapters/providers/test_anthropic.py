"""AnthropicProvider against the fake API, over real HTTP with the real SDK (no mocks)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import (
    Drop,
    FakeAnthropic,
    Fault,
    Hang,
    Reply,
    StreamError,
    ToolCall,
    fake_signature,
)
from orchestrator.adapters.providers import (
    Provider,
    ProviderConfigError,
    ProviderError,
    ProviderRejectedError,
    ProviderRequest,
    ProviderStreamError,
    ResponseComplete,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
)
from orchestrator.adapters.providers.anthropic import AnthropicProvider
from orchestrator.core.history import AssistantMessage, TextBlock, ThinkingBlock, ToolUseBlock
from orchestrator.core.prompt_cache import without_breakpoints
from orchestrator.core.wire import assistant_blocks

HELLO: list[dict[str, Any]] = [{"role": "user", "content": "hello"}]
TOOLS = [
    {
        "name": "read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    """A running fake API."""
    with FakeAnthropic() as server:
        yield server


class Alerts(list[tuple[str, str]]):
    """Collects ``on_alert`` calls."""

    def __call__(self, level: str, message: str) -> None:
        self.append((level, message))


_open: list[AnthropicProvider] = []


@pytest.fixture(autouse=True)
async def _close_providers() -> AsyncIterator[None]:
    """Close every provider's connection pool while its event loop is still running."""
    yield
    while _open:
        await _open.pop().aclose()


def make(api: FakeAnthropic, alerts: Alerts | None = None, **kwargs: Any) -> AnthropicProvider:
    """A provider aimed at the fake, with test-sized backoff (closed after the test)."""
    options: dict[str, Any] = {
        "api_key": "test-key",
        "base_url": api.base_url,
        "max_retries": 3,
        "retry_base_delay_s": 0.01,
        "retry_max_delay_s": 0.2,
        "timeout_s": 5.0,
        "on_alert": alerts,
    }
    options.update(kwargs)
    provider = AnthropicProvider("claude-test", **options)
    _open.append(provider)
    return provider


def request(messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> ProviderRequest:
    """A provider request with sensible defaults."""
    fields: dict[str, Any] = {"model": "claude-test", "system": "", "max_tokens": 256, **kwargs}
    return ProviderRequest(messages=messages or HELLO, **fields)


async def collect(provider: Provider, req: ProviderRequest) -> list[StreamEvent]:
    """Every event of one stream."""
    return [event async for event in provider.stream(req)]


# -- streaming --------------------------------------------------------------------------------


async def test_streamed_text(api: FakeAnthropic) -> None:
    api.push(Reply(text="Hello, world", chunk_size=5, input_tokens=11, output_tokens=3))
    events = await collect(make(api), request())
    assert events == [
        TextDelta("Hello"),
        TextDelta(", wor"),
        TextDelta("ld"),
        ResponseComplete(
            blocks=[TextBlock(text="Hello, world")],
            stop_reason="end_turn",
            usage=Usage(input_tokens=11, output_tokens=3),
        ),
    ]
    # The model that answered, as message_start named it (telemetry's gen_ai.response.model).
    assert isinstance(events[-1], ResponseComplete) and events[-1].model == "claude-test"


async def test_tool_call_with_chunked_json_arguments(api: FakeAnthropic) -> None:
    arguments = {"path": "src/app.py", "lines": [1, 20]}
    api.push(
        Reply(
            text="Reading.",
            tool_calls=[ToolCall("read", arguments), ToolCall("list")],
            chunk_size=7,
            input_tokens=50,
            output_tokens=20,
        )
    )
    events = await collect(make(api), request(tools=TOOLS))
    fragments = [e.json for e in events if isinstance(e, ToolCallArgsDelta)]
    assert "".join(fragments) == '{"path": "src/app.py", "lines": [1, 20]}'
    assert len(fragments) == 6
    assert [e for e in events if not isinstance(e, ToolCallArgsDelta)] == [
        TextDelta("Reading"),
        TextDelta("."),
        ToolCallStart("toolu_fake_0001", "read"),
        ToolCallStart("toolu_fake_0002", "list"),
        ResponseComplete(
            blocks=[
                TextBlock(text="Reading."),
                ToolUseBlock(id="toolu_fake_0001", name="read", input=arguments),
                ToolUseBlock(id="toolu_fake_0002", name="list", input={}),
            ],
            stop_reason="tool_use",
            usage=Usage(input_tokens=50, output_tokens=20),
        ),
    ]
    assert all(e.id == "toolu_fake_0001" for e in events if isinstance(e, ToolCallArgsDelta))


async def test_request_body_has_system_tools_and_no_sampling_params(api: FakeAnthropic) -> None:
    await collect(make(api), request(system="Be brief.", tools=TOOLS))
    await collect(make(api), request())
    with_extras, plain = (r.body for r in api.requests)
    marker = {"type": "ephemeral"}
    assert with_extras == {
        "model": "claude-test",
        "max_tokens": 256,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hello", "cache_control": marker}],
            }
        ],
        "stream": True,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": marker}],
        "tools": TOOLS,
    }
    # A string content becomes one text block to carry its marker; nothing else changes.
    assert without_breakpoints(with_extras["messages"]) == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ]
    assert "system" not in plain and "tools" not in plain
    assert api.requests[0].headers["x-stainless-retry-count"] == "0"


async def test_thinking_and_signature_round_trip(api: FakeAnthropic) -> None:
    api.push(Reply(thinking="The user wants a file.", tool_calls=[ToolCall("read", {"path": "a"})]))
    provider = make(api)
    on: dict[str, Any] = {"thinking": {"type": "adaptive"}}
    events = await collect(provider, request(tools=TOOLS, **on))
    assert api.requests[0].body["thinking"] == {"type": "adaptive"}
    assert [e for e in events if isinstance(e, ThinkingDelta)] == [
        ThinkingDelta("The user wants a file."[:16]),
        ThinkingDelta("The user wants a file."[16:]),
    ]
    final = events[-1]
    assert isinstance(final, ResponseComplete)
    thinking = final.blocks[0]
    assert thinking == ThinkingBlock(
        thinking="The user wants a file.", signature=fake_signature("The user wants a file.")
    )
    # The blocks go back through our wire mapping; the fake checks the signature survived.
    history: list[dict[str, Any]] = [
        *HELLO,
        {"role": "assistant", "content": assistant_blocks(AssistantMessage(blocks=final.blocks))},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_fake_0001", "content": "x"}],
        },
    ]
    events = await collect(provider, request(history, tools=TOOLS, **on))
    assert events[-1] == ResponseComplete(
        blocks=[TextBlock(text="ok: x")],
        stop_reason="end_turn",
        usage=events[-1].usage,  # type: ignore[union-attr]
    )
    assert [r.valid for r in api.requests] == [True, True]

    tampered: list[dict[str, Any]] = [
        history[0],
        {"role": "assistant", "content": [dict(history[1]["content"][0])]},
    ]
    tampered[1]["content"][0]["thinking"] = "Something else."
    with pytest.raises(ProviderRejectedError, match="Invalid `signature`"):
        await collect(provider, request([*tampered, {"role": "user", "content": "go"}], **on))


# -- retries ------------------------------------------------------------------------------------


async def test_429_with_retry_after_is_retried(api: FakeAnthropic) -> None:
    api.push(Fault(status=429, retry_after=0.15), Reply(text="fine"))
    alerts = Alerts()
    started = time.monotonic()
    events = await collect(make(api, alerts), request())
    assert time.monotonic() - started >= 0.15
    assert events[-1].blocks == [TextBlock(text="fine")]  # type: ignore[union-attr]
    assert alerts == [("warn", "provider returned 429 rate limited; retry 1/3 in 0.15 s")]
    assert [r.status for r in api.requests] == [429, 200]


async def test_retry_after_is_capped(api: FakeAnthropic) -> None:
    api.push(Fault(status=429, retry_after=3600), Reply(text="fine"))
    alerts = Alerts()
    started = time.monotonic()
    await collect(make(api, alerts, retry_max_delay_s=0.05), request())
    assert time.monotonic() - started < 1
    assert alerts == [("warn", "provider returned 429 rate limited; retry 1/3 in 0.05 s")]


async def test_529_overloaded_is_retried(api: FakeAnthropic) -> None:
    api.push(Fault(status=529), Fault(status=529), Reply(text="fine"))
    alerts = Alerts()
    events = await collect(make(api, alerts), request())
    assert isinstance(events[-1], ResponseComplete)
    assert alerts == [
        ("warn", "provider returned 529 overloaded; retry 1/3 in 0.01 s"),
        ("warn", "provider returned 529 overloaded; retry 2/3 in 0.02 s"),
    ]
    assert len(api.requests) == 3


async def test_500_exhausts_the_retries(api: FakeAnthropic) -> None:
    api.push(*[Fault(status=500, message="boom")] * 4)
    alerts = Alerts()
    with pytest.raises(ProviderError) as caught:
        await collect(make(api, alerts), request())
    error = caught.value
    assert type(error) is ProviderError
    assert (error.status, error.retryable) == (500, True)
    assert "boom" in str(error)
    assert len(api.requests) == 4
    assert [level for level, _ in alerts] == ["warn", "warn", "warn", "error"]
    assert alerts[-1][1] == "provider returned 500 server error; giving up after 3 retries"


async def test_no_retries_when_max_retries_is_zero(api: FakeAnthropic) -> None:
    api.push(Fault(status=529))
    alerts = Alerts()
    with pytest.raises(ProviderError):
        await collect(make(api, alerts, max_retries=0), request())
    assert len(api.requests) == 1 and alerts == []


async def test_wire_invalid_history_is_rejected_with_the_api_wording(api: FakeAnthropic) -> None:
    orphan: list[dict[str, Any]] = [
        *HELLO,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_x", "name": "read", "input": {}}],
        },
        {"role": "user", "content": "never mind"},
    ]
    alerts = Alerts()
    with pytest.raises(ProviderRejectedError) as caught:
        await collect(make(api, alerts), request(orphan))
    assert caught.value.status == 400 and not caught.value.retryable
    assert str(caught.value) == (
        "provider rejected the request (400): messages.1: `tool_use` ids were found without "
        "`tool_result` blocks immediately after: toolu_x. Each `tool_use` block must have a "
        "corresponding `tool_result` block in the next message."
    )
    assert len(api.requests) == 1 and alerts == []


@pytest.mark.parametrize("status", [401, 403, 404])
async def test_other_client_errors_are_rejections(api: FakeAnthropic, status: int) -> None:
    api.push(Fault(status=status, message="nope"))
    with pytest.raises(ProviderRejectedError, match="nope") as caught:
        await collect(make(api), request())
    assert caught.value.status == status
    assert len(api.requests) == 1


# -- broken streams ------------------------------------------------------------------------------


async def test_drop_after_events_raises_and_is_not_retried(api: FakeAnthropic) -> None:
    api.push(Drop(after_events=5, reply=Reply(text="abcdefgh", chunk_size=2)), Reply(text="x"))
    alerts = Alerts()
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderStreamError, match="incomplete chunked read") as caught:
        async for event in make(api, alerts).stream(request()):
            seen.append(event)
    assert seen == [TextDelta("ab"), TextDelta("cd")]
    assert caught.value.retryable
    assert len(api.requests) == 1 and alerts == []
    assert api.pending == 1


async def test_drop_before_any_event_reached_the_caller_is_retried(api: FakeAnthropic) -> None:
    # message_start and ping carry nothing for the caller, so nothing would be repeated.
    api.push(Drop(after_events=2), Reply(text="second try"))
    alerts = Alerts()
    events = await collect(make(api, alerts), request())
    assert events == [
        TextDelta("second try"),
        ResponseComplete(
            blocks=[TextBlock(text="second try")],
            stop_reason="end_turn",
            usage=events[-1].usage,  # type: ignore[union-attr]
        ),
    ]
    assert len(alerts) == 1 and alerts[0][1].startswith("connection to provider failed (")
    # The server records "complete" after its last write, which can follow our last read.
    done = api.wait_until(lambda reqs: [r.outcome for r in reqs] == ["dropped", "complete"])
    assert len(done) == 2


async def test_mid_stream_error_event_raises_stream_error(api: FakeAnthropic) -> None:
    api.push(StreamError(after_events=4, reply=Reply(text="abcdef", chunk_size=2)))
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderStreamError, match="overloaded_error"):
        async for event in make(api).stream(request()):
            seen.append(event)
    assert seen == [TextDelta("ab")]
    assert len(api.requests) == 1


async def test_error_event_before_any_output_is_retried(api: FakeAnthropic) -> None:
    api.push(StreamError(after_events=2), Reply(text="ok"))
    alerts = Alerts()
    events = await collect(make(api, alerts), request())
    assert isinstance(events[-1], ResponseComplete)
    assert alerts[0][1].startswith("provider stream failed with overloaded_error; retry 1/3")


async def test_a_hung_stream_times_out_and_is_retried(api: FakeAnthropic) -> None:
    api.push(Hang(seconds=3), Reply(text="awake"))
    alerts = Alerts()
    events = await collect(make(api, alerts, timeout_s=0.2), request())
    assert events[0] == TextDelta("awake")
    assert "ReadTimeout" in alerts[0][1]


async def test_unreachable_server_fails_after_retries(api: FakeAnthropic) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    alerts = Alerts()
    provider = make(
        api,
        alerts,
        api_key="k",
        base_url=f"http://127.0.0.1:{port}",
        max_retries=2,
    )
    with pytest.raises(ProviderStreamError, match="connection to provider failed"):
        await collect(provider, request())
    assert [level for level, _ in alerts] == ["warn", "warn", "error"]


# -- cancellation ------------------------------------------------------------------------------


async def test_cancelling_the_consumer_closes_the_connection(api: FakeAnthropic) -> None:
    api.push(Reply(text="x" * 200, chunk_size=1, delay_s=0.02))
    first_delta = asyncio.Event()
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in make(api).stream(request()):
            seen.append(event)
            first_delta.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_delta.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    records = await asyncio.to_thread(api.wait_until, lambda rs: rs[0].outcome != "pending", 2.0)
    assert records[0].outcome == "client_gone"
    assert 1 <= len(seen) < 50


async def test_closing_the_stream_early_closes_the_connection(api: FakeAnthropic) -> None:
    api.push(Reply(text="y" * 200, chunk_size=1, delay_s=0.02))
    stream = make(api).stream(request())
    assert await anext(stream) == TextDelta("y")
    await stream.aclose()  # type: ignore[attr-defined]
    records = await asyncio.to_thread(api.wait_until, lambda rs: rs[0].outcome != "pending", 2.0)
    assert records[0].outcome == "client_gone"


# -- configuration -----------------------------------------------------------------------------


async def test_missing_api_key_is_a_config_error(
    api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no profile on disk to discover
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    provider = AnthropicProvider("claude-test", base_url=api.base_url)
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY") as caught:
        await collect(provider, request())
    assert not caught.value.retryable
    assert api.requests == []


async def test_key_and_base_url_come_from_the_environment(
    api: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    provider = AnthropicProvider("claude-test", retry_base_delay_s=0.01)
    _open.append(provider)
    events = await collect(provider, request())
    assert isinstance(events[-1], ResponseComplete)
    assert api.requests[0].headers["authorization"] == "Bearer env-key"


def test_the_provider_package_does_not_import_the_sdk() -> None:
    import subprocess
    import sys

    code = "import sys, orchestrator.adapters.providers; print('anthropic' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_one_provider_serves_successive_event_loops(api: FakeAnthropic) -> None:
    provider = AnthropicProvider("claude-test", api_key="k", base_url=api.base_url)

    async def once() -> StreamEvent:
        try:
            return (await collect(provider, request()))[-1]
        finally:
            await provider.aclose()

    assert isinstance(asyncio.run(once()), ResponseComplete)
    assert isinstance(asyncio.run(once()), ResponseComplete)


# -- model lookups, once per process ------------------------------------------------------------


def _model_lookups(api: FakeAnthropic) -> list[str]:
    return [r.path for r in api.lookups if r.path.startswith("/v1/models")]


async def test_providers_of_one_process_share_one_model_lookup(api: FakeAnthropic) -> None:
    from orchestrator.adapters.providers.model_info import ModelInfoCache

    cache: ModelInfoCache[Any] = ModelInfoCache()
    first, second = (make(api, model_infos=cache) for _ in range(2))
    for provider in (first, second):
        provider.model = "claude-sonnet-4-5"
    # Concurrent first lookups (two pods loading at once) send one request between them.
    windows = await asyncio.gather(first.context_window(), second.context_window())
    assert windows == [200_000, 200_000]
    assert await second.thinking_capabilities() is not None
    assert _model_lookups(api) == ["/v1/models/claude-sonnet-4-5"]
    # Another key may see other models: it asks for itself; so does another model.
    other_key = make(api, model_infos=cache, api_key="another-key")
    other_key.model = "claude-sonnet-4-5"
    other_model = make(api, model_infos=cache)
    other_model.model = "claude-haiku-4-5"
    assert await other_key.context_window() == 200_000
    assert await other_model.context_window() == 200_000
    assert _model_lookups(api) == ["/v1/models/claude-sonnet-4-5"] * 2 + [
        "/v1/models/claude-haiku-4-5"
    ]
    # The key is never kept in the cache's keys, only a digest of it.
    assert "test-key" not in repr(cache._known) and "another-key" not in repr(cache._known)


async def test_a_failed_lookup_is_shared_then_asked_again_after_a_while(
    api: FakeAnthropic,
) -> None:
    from orchestrator.adapters.providers.model_info import ModelInfoCache

    clock = [0.0]
    cache: ModelInfoCache[Any] = ModelInfoCache(failure_ttl_s=60, clock=lambda: clock[0])
    api.models_fault = Fault(status=500)
    first, second = make(api, model_infos=cache), make(api, model_infos=cache)
    for provider in (first, second):
        provider.model = "claude-sonnet-4-5"
    outcomes = await asyncio.gather(
        first.context_window(), second.context_window(), return_exceptions=True
    )
    assert all(isinstance(o, ProviderError) and "Models API" in str(o) for o in outcomes)
    assert len(_model_lookups(api)) == 1
    # Each provider said so once; its later questions get "unknown" without a request.
    assert await first.thinking_capabilities() is None
    # A new pod within the minute hears the same failure, from memory.
    api.models_fault = None
    third = make(api, model_infos=cache)
    third.model = "claude-sonnet-4-5"
    with pytest.raises(ProviderError, match="Models API did not answer"):
        await third.context_window()
    assert len(_model_lookups(api)) == 1
    clock[0] = 61.0
    fourth = make(api, model_infos=cache)
    fourth.model = "claude-sonnet-4-5"
    assert await fourth.context_window() == 200_000
    assert len(_model_lookups(api)) == 2


# -- a server that answers a streaming request with plain JSON -------------------------------


class JsonOnlyApi:
    """A tiny Messages API that answers every request with one JSON body, as a proxy that
    ignores ``stream`` does; it records whether each request asked for a stream."""

    def __init__(self, body: dict[str, Any]) -> None:
        import http.server
        import json
        import threading

        self.streamed: list[bool] = []
        recorded = self.streamed
        answer = json.dumps(body).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                recorded.append(bool(sent.get("stream")))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass  # the test's output is not the place for an access log

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def test_a_streaming_request_answered_with_a_json_message_takes_the_message() -> None:
    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
        ],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 7},
    }  # fmt: skip
    server = JsonOnlyApi(message)
    alerts = Alerts()
    try:
        provider = AnthropicProvider(
            "claude-test", api_key="k", base_url=server.base_url, on_alert=alerts,
            retry_base_delay_s=0.01,
        )  # fmt: skip
        _open.append(provider)
        first = await collect(provider, request(tools=TOOLS))
        second = await collect(provider, request(tools=TOOLS))
    finally:
        server.close()
    assert (
        first
        == second
        == [
            TextDelta("Let me look."),
            ToolCallStart("toolu_1", "read"),
            ToolCallArgsDelta("toolu_1", '{"path": "a.py"}'),
            ResponseComplete(
                blocks=[
                    TextBlock(text="Let me look."),
                    ToolUseBlock(id="toolu_1", name="read", input={"path": "a.py"}),
                ],
                stop_reason="tool_use",
                usage=Usage(input_tokens=12, output_tokens=7),
            ),
        ]
    )
    assert server.streamed == [True, True]  # asked for a stream, once each: no retries
    assert alerts == [
        (
            "warn",
            f"{server.base_url}/v1/messages answered a streaming request with one JSON message "
            "instead of an event stream (a proxy that ignores stream?): answers arrive whole",
        )
    ]


async def test_a_streaming_request_answered_with_other_json_says_so_at_once() -> None:
    server = JsonOnlyApi({"result": "ok"})
    try:
        provider = AnthropicProvider(
            "claude-test", api_key="k", base_url=server.base_url, retry_base_delay_s=0.01
        )
        _open.append(provider)
        with pytest.raises(ProviderStreamError) as caught:
            await collect(provider, request())
    finally:
        server.close()
    assert str(caught.value) == (
        f"{server.base_url}/v1/messages answered a streaming request with JSON (content-type "
        "application/json) instead of an event stream, and the JSON is not a message: "
        """'{"result": "ok"}'"""
    )
    assert not caught.value.retryable
    assert server.streamed == [True]


async def test_a_refused_model_lookup_says_the_apis_words_not_a_raw_body(
    api: FakeAnthropic,
) -> None:
    api.models_fault = Fault(status=401, message="invalid x-api-key")
    provider = make(api)
    provider.model = "claude-sonnet-4-5"
    with pytest.raises(ProviderError) as caught:
        await provider.context_window()
    assert str(caught.value) == (
        "the Models API did not answer for claude-sonnet-4-5: 401 invalid x-api-key"
    )
    assert caught.value.status == 401
