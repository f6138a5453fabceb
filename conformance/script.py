"""The fake API's script: the steps that answer requests, in order, and their JSON form.

========================  ==================================================================
:class:`Reply`            a normal response: thinking, server tool calls (:class:`ServerCall`:
                          web search and fetch, run by the API itself), text, tool calls
:class:`Fault`            an HTTP error (429 with ``retry-after``, 500, 529 overloaded, 4xx)
:class:`Drop`             stream some events of a reply, then cut the TCP connection
:class:`StreamError`      stream some events, then an SSE ``error`` event (mid-stream 529)
:class:`Hang`             send the response headers, then nothing (for read timeouts)
========================  ==================================================================

When the script runs out, a responder may pick the step, and failing that
:func:`echo_reply` answers with the start of the last user message.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from orchestrator.errors import SetupError

__all__ = [
    "DEFAULT_ECHO_CHARS",
    "Drop",
    "Fault",
    "Hang",
    "Reply",
    "Responder",
    "Script",
    "ScriptError",
    "ServerCall",
    "Step",
    "StreamError",
    "ToolCall",
    "echo_reply",
    "fake_encrypted",
    "fake_signature",
    "issued_encrypted",
    "last_user_text",
    "load_script",
    "step_from_json",
]

DEFAULT_ECHO_CHARS = 40
"""How many characters of the last user message the default reply echoes."""


class ScriptError(SetupError, ValueError):
    """A script (or its JSON form) is malformed."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call a :class:`Reply` makes; ``id`` defaults to ``toolu_fake_NNNN``."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


SERVER_TOOL_NAMES = ("web_search", "web_fetch")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerCall:
    """A call of one of the API's own tools that a :class:`Reply` makes (the API runs it).

    ``name`` is ``web_search`` or ``web_fetch``; ``input`` defaults to a query (a URL for a
    fetch). The result is made up from the input: ``results`` search results (a fetch: one
    page), or the error ``error_code`` (``max_uses_exceeded``, ``too_many_requests``,
    ``unavailable``...). ``pending``: the call comes without its result (the mixed case: the
    model also calls a client tool, and the API runs the server call once the client's
    ``tool_result`` blocks arrive, opening the next response with its result). A reply makes
    its server calls only when the request declares that tool, as the API does.
    """

    name: str = "web_search"
    input: dict[str, Any] = field(default_factory=dict)
    results: int = 2
    error_code: str | None = None
    pending: bool = False

    def __post_init__(self) -> None:
        if self.name not in SERVER_TOOL_NAMES:
            raise ScriptError(f"a server call is web_search or web_fetch, not {self.name!r}")


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
    server_calls: Sequence[ServerCall] = ()
    """Server tool calls, each with its result, after the thinking and before the text."""
    cite: bool = True
    """The text cites the first search result of the reply (when it has one)."""
    thinking: str | None = None
    signature: str | None = None
    redacted: Sequence[str] = ()
    """Payloads of ``redacted_thinking`` blocks sent after the thinking (data is opaque)."""
    chunk_size: int = 16
    delay_s: float = 0.0
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def __post_init__(self) -> None:
        # A tuple whatever was passed, so that equal replies compare equal.
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        object.__setattr__(self, "server_calls", tuple(self.server_calls))
        object.__setattr__(self, "redacted", tuple(self.redacted))


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


def fake_redacted(payload: str) -> str:
    """The opaque ``data`` of a redacted thinking block the fake issues (and accepts back)."""
    digest = hashlib.sha256(payload.encode()).hexdigest()[:24]
    return base64.b64encode(json.dumps([payload, digest]).encode()).decode()


def issued_redacted(data: object) -> bool:
    """Whether ``data`` is redacted thinking this fake issued, unchanged."""
    try:
        payload, digest = json.loads(base64.b64decode(str(data), validate=True))
    except (ValueError, TypeError):
        return False
    return isinstance(payload, str) and fake_redacted(payload) == data and bool(digest)


def fake_encrypted(*payload: str) -> str:
    """An ``encrypted_content`` / ``encrypted_index`` the fake issues for ``payload`` (the
    result's or citation's fields it vouches for), and accepts back only unchanged."""
    digest = hashlib.sha256(json.dumps(["enc", *payload]).encode()).hexdigest()[:24]
    return "Eo" + base64.b64encode(json.dumps([list(payload), digest]).encode()).decode()


def issued_encrypted(value: object, *payload: str) -> bool:
    """Whether ``value`` is an encrypted field this fake issued for exactly ``payload``."""
    return isinstance(value, str) and value == fake_encrypted(*payload)


def fake_signature(thinking: str) -> str:
    """The signature the fake issues for a thinking text (and accepts back)."""
    return "fakesig_" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def _reply_from_json(data: dict[str, Any]) -> Reply:
    calls = [
        ToolCall(name=str(c["name"]), input=dict(c.get("input", {})), id=c.get("id"))
        for c in data.pop("tool_calls", [])
    ]
    server = [ServerCall(**dict(c)) for c in data.pop("server_calls", [])]
    return Reply(tool_calls=calls, server_calls=server, **data)


def step_from_json(data: dict[str, Any]) -> Step:
    """Build a step from its JSON form: ``{"type": "reply" | "fault" | "drop" | ..., ...}``.

    The other keys are the dataclass fields; ``tool_calls`` is a list of ``{"name", "input",
    "id"}`` objects, ``server_calls`` a list of :class:`ServerCall` objects (``{"name",
    "input", "results", "error_code", "pending"}``) and the ``reply`` of a drop or stream_error is a reply object without
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


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (its tool results' text if it has no text block)."""
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


def echo_reply(body: dict[str, Any]) -> Reply:
    """The default answer: ``"ok: "`` and the start of the last user message."""
    echo = " ".join(last_user_text(body).split())[:DEFAULT_ECHO_CHARS]
    return Reply(text=f"ok: {echo}")
