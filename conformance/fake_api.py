"""A fake Anthropic Messages API: real HTTP and SSE on 127.0.0.1, scripted answers.

Point any client at :attr:`FakeAnthropic.base_url` (the official SDKs take it as ``base_url``
or the ``ANTHROPIC_BASE_URL`` environment variable) and it behaves like the real endpoint:

* ``POST /v1/messages`` with ``"stream": true`` answers with Server-Sent Events in the exact
  Anthropic event format (``message_start``, ``ping``, ``content_block_start`` / ``_delta`` /
  ``_stop`` for text, thinking and tool_use blocks, ``message_delta`` with the stop reason and
  usage, ``message_stop``), sent with chunked transfer encoding. Without ``stream`` it answers
  with one JSON message.
* Every request is validated like the real API: an API key header (``x-api-key``, or
  ``Authorization: Bearer`` which SDK 2.x sends), the required fields ``model``,
  ``max_tokens`` and ``messages``, no ``temperature`` / ``top_p`` / ``top_k`` (rejected under
  the API version the SDK sends), the conversation rules of :func:`orchestrator.validator.
  validate_wire`, and the signatures of thinking blocks sent back. A violation is answered
  with HTTP 400 ``{"type": "error", "error": {"type": "invalid_request_error", "message":
  "messages.N: ..."}}``, the index counted after same-role messages are merged.
* Every request is recorded (:attr:`FakeAnthropic.requests`): headers, parsed body, whether
  it was valid and how the answer ended.

Answers come from a **script**: a list of steps, each answering one valid request, in order.

========================  ==================================================================
:class:`Reply`            a normal response: thinking, text, tool calls, streamed in chunks
:class:`Fault`            an HTTP error (429 with ``retry-after``, 500, 529 overloaded, 4xx)
:class:`Drop`             stream some events of a reply, then cut the TCP connection
:class:`StreamError`      stream some events, then an SSE ``error`` event (mid-stream 529)
:class:`Hang`             send the response headers, then nothing (for read timeouts)
========================  ==================================================================

When the script is empty a ``responder`` callable (request body → step or ``None``) is asked;
failing that the default reply echoes the last user message: ``"ok: <first 40 chars>"``.
Invalid requests never consume a step.

Use from sync or async tests (the server runs in its own threads)::

    with FakeAnthropic([Fault(529), Reply(text="hello")]) as api:
        client = anthropic.AsyncAnthropic(api_key="test", base_url=api.base_url)
        ...
        assert len(api.requests) == 2

Or standalone, for pods written in any language; the script file holds the JSON form of the
steps (see :func:`step_from_json`)::

    python -m conformance.fake_api --port 8765 --script script.json

    [{"type": "fault", "status": 429, "retry_after": 1},
     {"type": "reply", "text": "Reading it.", "tool_calls": [{"name": "read", "input": {}}]},
     {"type": "reply", "text": "Done."}]

Ids are unique per server: messages ``msg_fake_0001``, tool calls ``toolu_fake_0001``,
requests ``req_fake_0001`` (also sent as the ``request-id`` header). A thinking signature is
derived from the thinking text, so a thinking block sent back altered is rejected, as the
real API does.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeAlias

from orchestrator.validator import WireViolation, merge_same_role, validate_wire

__all__ = [
    "DEFAULT_ECHO_CHARS",
    "Drop",
    "FakeAnthropic",
    "Fault",
    "Hang",
    "Outcome",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Script",
    "ScriptError",
    "Step",
    "StreamError",
    "ToolCall",
    "fake_signature",
    "load_script",
    "main",
    "step_from_json",
]

DEFAULT_ECHO_CHARS = 40
"""How many characters of the last user message the default reply echoes."""

_SAMPLING_PARAMS = ("temperature", "top_p", "top_k")
_STATUS_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_STATUS_MESSAGES = {
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    529: "Overloaded",
}
_POLL_S = 0.02  # how often a sleeping handler checks for shutdown and a departed client


# -- the script -----------------------------------------------------------------------------


class ScriptError(ValueError):
    """A script (or its JSON form) is malformed."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call a :class:`Reply` makes; ``id`` defaults to ``toolu_fake_NNNN``."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A successful response, streamed as thinking, then text, then tool calls.

    ``chunk_size`` is the number of characters (of text, thinking or tool-call JSON) per delta
    event and ``delay_s`` the pause before each delta. ``stop_reason`` defaults to
    ``"tool_use"`` when there are tool calls, else ``"end_turn"``. ``signature`` defaults to
    :func:`fake_signature` of the thinking; token counts default to rough estimates.
    """

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    thinking: str | None = None
    signature: str | None = None
    chunk_size: int = 16
    delay_s: float = 0.0
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def __post_init__(self) -> None:
        # A tuple whatever was passed, so that equal replies compare equal.
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """An HTTP error response; ``retry_after`` (seconds) becomes the ``retry-after`` header."""

    status: int
    message: str | None = None
    error_type: str | None = None
    retry_after: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Drop:
    """Stream the first ``after_events`` SSE events of ``reply``, then cut the connection.

    The cut is a bare close with no terminating chunk, so the client sees an incomplete
    chunked read. Events are counted as sent, ``ping`` included (``message_start`` is 1,
    ``ping`` is 2). For a non-streaming request the body is cut half-way.
    """

    after_events: int = 0
    reply: Reply = field(default_factory=lambda: Reply(text="This response is cut short."))


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """Stream the first ``after_events`` events of ``reply``, then an SSE ``error`` event.

    This is how the real API reports overload once a stream has begun; the stream then ends
    cleanly. A non-streaming request gets the error as an HTTP 529 instead.
    """

    after_events: int = 2
    error_type: str = "overloaded_error"
    message: str = "Overloaded"
    reply: Reply = field(default_factory=lambda: Reply(text="This response fails mid-way."))


@dataclass(frozen=True, slots=True, kw_only=True)
class Hang:
    """Send ``200`` and the response headers, then nothing for ``seconds``, then close."""

    seconds: float


Step: TypeAlias = Reply | Fault | Drop | StreamError | Hang
Script: TypeAlias = Sequence[Step]
Responder: TypeAlias = Callable[[dict[str, Any]], Step | None]
"""Called with the request body when the script is empty; ``None`` means the default reply."""

Outcome: TypeAlias = Literal[
    "pending", "complete", "rejected", "fault", "dropped", "stream_error", "hung", "client_gone"
]


def fake_signature(thinking: str) -> str:
    """The signature the fake issues for a thinking text (and accepts back)."""
    return "fakesig_" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def _reply_from_json(data: dict[str, Any]) -> Reply:
    calls = [
        ToolCall(name=str(c["name"]), input=dict(c.get("input", {})), id=c.get("id"))
        for c in data.pop("tool_calls", [])
    ]
    return Reply(tool_calls=calls, **data)


def step_from_json(data: dict[str, Any]) -> Step:
    """Build a step from its JSON form: ``{"type": "reply" | "fault" | "drop" | ..., ...}``.

    The other keys are the dataclass fields; ``tool_calls`` is a list of ``{"name", "input",
    "id"}`` objects and the ``reply`` of a drop or stream_error is a reply object without
    ``type``.
    """
    data = dict(data)
    kind = data.pop("type", None)
    try:
        if kind == "reply":
            return _reply_from_json(data)
        if kind == "fault":
            return Fault(**data)
        if kind == "hang":
            return Hang(**data)
        if kind in ("drop", "stream_error"):
            if "reply" in data:
                data["reply"] = _reply_from_json(dict(data["reply"]))
            return Drop(**data) if kind == "drop" else StreamError(**data)
    except (TypeError, KeyError) as err:
        raise ScriptError(f"bad {kind} step {data!r}: {err}") from err
    raise ScriptError(f"unknown step type {kind!r} (reply, fault, drop, stream_error, hang)")


def load_script(path: str | Path) -> list[Step]:
    """Read a JSON file holding a list of steps in their JSON form."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, list):
        raise ScriptError(f"{path}: a script is a JSON list of steps")
    return [step_from_json(item) for item in data]


# -- what was received ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One request the server received, and how it was answered."""

    request_id: str
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body, or ``None`` if it was not JSON."""
    valid: bool
    """Whether the request passed validation."""
    error: str | None = None
    """The message of the error response, if the server sent one."""
    status: int = 0
    """The HTTP status sent (0 before the headers went out)."""
    outcome: Outcome = "pending"
    """How the exchange ended; ``client_gone`` means the client closed the connection first."""


@dataclass(slots=True)
class _Record:
    request_id: str
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    valid: bool = True
    error: str | None = None
    status: int = 0
    outcome: Outcome = "pending"

    def snapshot(self) -> RecordedRequest:
        return RecordedRequest(
            request_id=self.request_id,
            method=self.method,
            path=self.path,
            headers=dict(self.headers),
            body=copy.deepcopy(self.body),
            valid=self.valid,
            error=self.error,
            status=self.status,
            outcome=self.outcome,
        )


class _Rejected(Exception):
    """A request the real API would refuse."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


class _ClientGone(Exception):
    """The client closed the connection while we were answering."""


class _Stopping(Exception):
    """The server is shutting down mid-answer."""


# -- validation -----------------------------------------------------------------------------


def _validate(headers: dict[str, str], body: Any, *, check_signatures: bool) -> None:
    """Raise :class:`_Rejected` for anything the real API would refuse."""
    authorization = headers.get("authorization", "")
    if not headers.get("x-api-key") and not authorization.lower().startswith("bearer "):
        raise _Rejected(401, "authentication_error", "x-api-key header is required")
    if not isinstance(body, dict):
        raise _Rejected(400, "invalid_request_error", "The request body is not valid JSON.")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            raise _Rejected(400, "invalid_request_error", f"{name}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise _Rejected(400, "invalid_request_error", "model: Input should be a valid string")
    max_tokens = body["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise _Rejected(
            400, "invalid_request_error", "max_tokens: Input should be a positive integer"
        )
    for name in _SAMPLING_PARAMS:
        if name in body:
            raise _Rejected(400, "invalid_request_error", f"{name}: Extra inputs are not permitted")
    messages = body["messages"]
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise _Rejected(400, "invalid_request_error", "messages: Input should be a valid list")
    _validate_tools(body.get("tools"))
    violations = validate_wire(messages)
    if violations:
        raise _Rejected(400, "invalid_request_error", _violation_message(messages, violations))
    if check_signatures:
        _validate_signatures(messages)


def _validate_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise _Rejected(400, "invalid_request_error", "tools: Input should be a valid list")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise _Rejected(400, "invalid_request_error", f"tools.{i}.name: Field required")
        if not isinstance(tool.get("input_schema"), dict):
            raise _Rejected(
                400, "invalid_request_error", f"tools.{i}.custom.input_schema: Field required"
            )


def _tool_use_ids(message: dict[str, Any]) -> list[str]:
    return [str(b.get("id")) for b in message["content"] if b.get("type") == "tool_use"]


def _result_ids(message: dict[str, Any]) -> set[str]:
    return {str(b.get("tool_use_id")) for b in message["content"] if b.get("type") == "tool_result"}


def _violation_message(messages: list[dict[str, Any]], violations: list[WireViolation]) -> str:
    """The real API reports one problem; pick the earliest and word it as the API does."""
    merged = merge_same_role(messages)
    worded: list[tuple[int, str]] = []
    for v in violations:
        if v.rule == "unanswered_tool_use":
            # The API names the assistant message whose calls went unanswered.
            if merged[v.index]["role"] == "assistant":
                index, missing = v.index, _tool_use_ids(merged[v.index])
            else:
                index = v.index - 1
                answered = _result_ids(merged[v.index])
                missing = [i for i in _tool_use_ids(merged[index]) if i not in answered]
            worded.append(
                (
                    index,
                    f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have "
                    "a corresponding `tool_result` block in the next message.",
                )
            )
        elif v.rule == "stray_tool_result":
            previous = _tool_use_ids(merged[v.index - 1]) if v.index > 0 else []
            stray = sorted(_result_ids(merged[v.index]) - set(previous))
            worded.append(
                (
                    v.index,
                    f"messages.{v.index}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {', '.join(stray)}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message.",
                )
            )
        else:
            worded.append((v.index, f"messages.{v.index}: {v.message}"))
    return min(worded, key=lambda pair: pair[0])[1]


def _validate_signatures(messages: list[dict[str, Any]]) -> None:
    for index, message in enumerate(merge_same_role(messages)):
        for position, block in enumerate(message["content"]):
            if block.get("type") != "thinking":
                continue
            if block.get("signature") != fake_signature(str(block.get("thinking", ""))):
                raise _Rejected(
                    400,
                    "invalid_request_error",
                    f"messages.{index}.content.{position}: Invalid `signature` in `thinking` block",
                )


# -- building responses ---------------------------------------------------------------------


def _chunks(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
        if not texts:
            texts = [str(b.get("content", "")) for b in content or [] if isinstance(b, dict)]
        return " ".join(t for t in texts if t)
    return ""


@dataclass(slots=True)
class _Sse:
    name: str
    data: dict[str, Any]
    delay_before: float = 0.0

    def encode(self) -> bytes:
        return f"event: {self.name}\ndata: {json.dumps(self.data)}\n\n".encode()


@dataclass(slots=True)
class _Planned:
    """A reply with its ids and token counts fixed, ready to render either way."""

    message_id: str
    model: str
    blocks: list[dict[str, Any]]
    stop_reason: str
    input_tokens: int
    output_tokens: int
    chunk_size: int
    delay_s: float

    def message(self) -> dict[str, Any]:
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks,
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        }

    def events(self) -> list[_Sse]:
        start = self.message() | {
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": 1},
        }
        out = [
            _Sse("message_start", {"type": "message_start", "message": start}),
            _Sse("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(self.blocks):
            out.extend(self._block_events(index, block))
        out.append(
            _Sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": self.output_tokens},
                },
            )
        )
        out.append(_Sse("message_stop", {"type": "message_stop"}))
        return out

    def _block_events(self, index: int, block: dict[str, Any]) -> list[_Sse]:
        kind = block["type"]
        if kind == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [
                {"type": "text_delta", "text": c} for c in _chunks(block["text"], self.chunk_size)
            ]
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": c}
                for c in _chunks(block["thinking"], self.chunk_size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            arguments = json.dumps(block["input"]) if block["input"] else ""
            # The real API opens every tool call with an empty fragment.
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": c}
                for c in _chunks(arguments, self.chunk_size)
            ]
        out = [
            _Sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
        ]
        out += [
            _Sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": d},
                self.delay_s,
            )
            for d in deltas
        ]
        out.append(_Sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        return out


# -- the server -----------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, fake: FakeAnthropic, port: int) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (cancelled streams, closed pools) are routine, not errors."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as the real API
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet; the recorded requests say what happened."""

    def do_GET(self) -> None:
        """Only ``/v1/messages`` exists here."""
        self._discard_body()
        self._send_json(404, _error_body("not_found_error", f"Not found: {self.path}", ""))

    def do_POST(self) -> None:
        """Answer ``/v1/messages``; other paths get a 404 error body."""
        self.server.fake._handle(self)

    def _discard_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(
        self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, request_id: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", request_id)
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError as err:
            raise _ClientGone from err

    def _end_stream(self) -> None:
        self._write_chunk(b"")

    def _cut(self) -> None:
        """Close the socket without finishing the body: the client sees a truncated read."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _pause(self, seconds: float) -> None:
        """Sleep, but notice shutdown and a client that went away."""
        deadline = time.monotonic() + seconds
        while True:
            if self._client_gone():
                raise _ClientGone
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.server.fake._stopping.wait(min(_POLL_S, remaining)):
                raise _Stopping


def _error_body(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": message}}
    if request_id:
        body["request_id"] = request_id
    return body


class FakeAnthropic:
    """A scripted Anthropic Messages API on 127.0.0.1; see the module docstring.

    ``port=0`` picks a free port. ``responder`` answers when the script is empty.
    ``check_signatures`` rejects thinking blocks whose signature this fake did not issue.
    """

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        responder: Responder | None = None,
        port: int = 0,
        check_signatures: bool = True,
    ) -> None:
        self._queue: deque[Step] = deque(script)
        self.responder = responder
        self.check_signatures = check_signatures
        self._port = port
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._records: list[_Record] = []
        self._counters = {"msg": 0, "toolu": 0, "req": 0}
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeAnthropic:
        """Bind and serve in a background thread; returns ``self``."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(self, self._port)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-anthropic:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection (streams in flight end abruptly)."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> FakeAnthropic:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (raises if the server is not running)."""
        if self._server is None:
            raise RuntimeError("the fake API is not running; call start() first")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``, the value for an SDK's ``base_url``."""
        return f"http://127.0.0.1:{self.port}"

    # -- script and records -----------------------------------------------------------------

    def push(self, *steps: Step) -> None:
        """Append steps to the script; each answers one future valid request."""
        with self._lock:
            self._queue.extend(steps)

    @property
    def pending(self) -> int:
        """How many scripted steps are still unused."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget recorded requests and unused steps (ids keep counting, so stay unique)."""
        with self._lock:
            self._queue.clear()
            self._records.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Copies of every request received so far, oldest first."""
        with self._lock:
            return [r.snapshot() for r in self._records]

    def wait_until(
        self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 5.0
    ) -> list[RecordedRequest]:
        """Block until ``predicate(requests)`` holds; raises ``TimeoutError`` after ``timeout``.

        From async code call it through ``asyncio.to_thread`` unless the client is already done.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                snapshot = [r.snapshot() for r in self._records]
                if predicate(snapshot):
                    return snapshot
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"condition not met within {timeout} s: {snapshot!r}")
                self._changed.wait(remaining)

    # -- internals --------------------------------------------------------------------------

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _next_id(self, kind: str) -> str:
        with self._lock:
            self._counters[kind] += 1
            return f"{kind}_fake_{self._counters[kind]:04d}"

    def _update(self, record: _Record, **changes: Any) -> None:
        with self._changed:
            for name, value in changes.items():
                setattr(record, name, value)
            self._changed.notify_all()

    def _next_step(self, body: dict[str, Any]) -> Step:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        try:
            step = self.responder(body) if self.responder is not None else None
        except Exception as err:
            # A broken responder is a bug in the test; say so in the response, visibly.
            return Fault(status=500, message=f"fake API responder failed: {err!r}")
        if step is None:
            echo = " ".join(_last_user_text(body).split())[:DEFAULT_ECHO_CHARS]
            step = Reply(text=f"ok: {echo}")
        return step

    def _plan(self, reply: Reply, body: dict[str, Any]) -> _Planned:
        blocks: list[dict[str, Any]] = []
        if reply.thinking is not None:
            signature = reply.signature
            if signature is None:
                signature = fake_signature(reply.thinking)
            blocks.append({"type": "thinking", "thinking": reply.thinking, "signature": signature})
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id or self._next_id("toolu"),
                    "name": call.name,
                    "input": dict(call.input),
                }
            )
        prompt = json.dumps(body.get("messages")) + json.dumps(body.get("system", ""))
        produced = json.dumps(blocks)
        stop_reason = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        return _Planned(
            message_id=self._next_id("msg"),
            model=str(body.get("model")),
            blocks=blocks,
            stop_reason=stop_reason,
            input_tokens=reply.input_tokens or _estimate_tokens(prompt),
            output_tokens=reply.output_tokens or _estimate_tokens(produced),
            chunk_size=reply.chunk_size,
            delay_s=reply.delay_s,
        )

    def _handle(self, handler: _Handler) -> None:
        raw = handler._discard_body()
        request_id = self._next_id("req")
        headers = {name.lower(): value for name, value in handler.headers.items()}
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = _Record(request_id, "POST", handler.path, headers, body)
        with self._changed:
            self._records.append(record)
            self._changed.notify_all()
        path = handler.path.split("?", 1)[0].rstrip("/")
        try:
            if path != "/v1/messages":
                raise _Rejected(404, "not_found_error", f"Not found: {handler.path}")
            _validate(headers, body, check_signatures=self.check_signatures)
        except _Rejected as rejected:
            self._update(
                record,
                valid=False,
                error=rejected.message,
                status=rejected.status,
                outcome="rejected",
            )
            handler._send_json(
                rejected.status,
                _error_body(rejected.error_type, rejected.message, request_id),
                {"request-id": request_id},
            )
            return
        step = self._next_step(body)
        try:
            self._answer(handler, record, step, body)
        except (_ClientGone, OSError):
            self._update(record, outcome="client_gone")
            handler.close_connection = True
        except _Stopping:
            handler._cut()

    def _answer(self, handler: _Handler, record: _Record, step: Step, body: dict[str, Any]) -> None:
        stream = bool(body.get("stream"))
        request_id = record.request_id
        if isinstance(step, Fault):
            error_type = step.error_type or _STATUS_ERROR_TYPES.get(step.status, "api_error")
            message = step.message or _STATUS_MESSAGES.get(step.status, f"HTTP {step.status}")
            extra = {"request-id": request_id}
            if step.retry_after is not None:
                extra["retry-after"] = f"{step.retry_after:g}"
            self._update(record, status=step.status, error=message, outcome="fault")
            handler._send_json(step.status, _error_body(error_type, message, request_id), extra)
            return
        if isinstance(step, Hang):
            if stream:
                handler._start_stream(request_id)
            else:
                handler.send_response(200)
                handler.send_header("content-type", "application/json")
                handler.send_header("content-length", "1000")
                handler.end_headers()
            self._update(record, status=200)
            handler._pause(step.seconds)
            self._update(record, outcome="hung")
            handler._cut()
            return
        if isinstance(step, StreamError) and not stream:
            self._update(record, status=529, error=step.message, outcome="stream_error")
            handler._send_json(
                529,
                _error_body(step.error_type, step.message, request_id),
                {"request-id": request_id},
            )
            return
        reply = step if isinstance(step, Reply) else step.reply
        planned = self._plan(reply, body)
        if not stream:
            data = json.dumps(planned.message()).encode()
            if isinstance(step, Drop):
                handler.send_response(200)
                handler.send_header("content-type", "application/json")
                handler.send_header("content-length", str(len(data)))
                handler.end_headers()
                self._update(record, status=200, outcome="dropped")
                handler.wfile.write(data[: len(data) // 2])
                handler._cut()
                return
            # Recorded before the last write, so a client that has the answer sees it recorded.
            self._update(record, status=200, outcome="complete")
            handler._send_json(200, planned.message(), {"request-id": request_id})
            return
        self._stream(handler, record, step, planned)

    def _stream(self, handler: _Handler, record: _Record, step: Step, planned: _Planned) -> None:
        handler._start_stream(record.request_id)
        self._update(record, status=200)
        limit = step.after_events if isinstance(step, Drop | StreamError) else None
        events = list(planned.events())
        for sent, event in enumerate(events):
            if limit is not None and sent >= limit:
                break
            if event.delay_before > 0:
                handler._pause(event.delay_before)
            elif handler._client_gone():
                raise _ClientGone
            if limit is None and sent == len(events) - 1:
                # Recorded before the last write, so a client that has the answer sees it.
                self._update(record, outcome="complete")
            handler._write_chunk(event.encode())
        if limit is None:
            handler._end_stream()
            return
        # A limit past the last event still ends the exchange the scripted way.
        if isinstance(step, Drop):
            self._update(record, outcome="dropped")
            handler._cut()
            return
        assert isinstance(step, StreamError)
        self._update(record, error=step.message, outcome="stream_error")
        error = _Sse("error", _error_body(step.error_type, step.message, ""))
        handler._write_chunk(error.encode())
        handler._end_stream()


# -- standalone -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the fake API until interrupted, printing its base URL on the first line."""
    parser = argparse.ArgumentParser(
        prog="python -m conformance.fake_api",
        description="A fake Anthropic Messages API on 127.0.0.1 for conformance tests.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to bind (0: any free port)")
    parser.add_argument("--script", type=Path, help="JSON file: a list of steps")
    parser.add_argument(
        "--no-signature-check",
        action="store_true",
        help="accept thinking blocks whatever their signature",
    )
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script) if args.script else []
    except (OSError, ValueError) as err:
        print(f"fake_api: cannot load script: {err}", file=sys.stderr)
        return 2
    api = FakeAnthropic(script, port=args.port, check_signatures=not args.no_signature_check)
    with api:
        print(api.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
