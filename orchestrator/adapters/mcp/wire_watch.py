"""What an MCP server writes on its connection, judged: answers to requests never made and
lines that are not JSON-RPC break the protocol; lines that are not JSON at all are noise.

The SDK drops a response whose id matches no request (at debug level) and hands a line it
cannot parse to nobody, logging a traceback for each. So a server that answers a call with the
wrong id, a null id or some other JSON leaves the call waiting forever, and a server that prints
megabytes to stdout fills the pod's log. :class:`WireWatch` sees every message both ways (the
relay in ``transport.watched`` feeds it) and turns the first into a *breach* (the server is not
to be trusted with the call in flight, nor the next) and the second into a count, a few sample
lines in the log and one alert.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pydantic
from mcp import types
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

NOISE_LOGGED_FIRST = 5
"""Stray stdout lines logged one by one before the watch only counts them."""
NOISE_LOG_EVERY = 100_000
"""After the first few, one log line per this many stray lines."""
MAX_TRACKED_REQUESTS = 10_000
"""Requests awaiting an answer that the watch remembers; the oldest are forgotten first (a
request the server never answers is not worth unbounded memory)."""
SAMPLE_CHARS = 120

_SDK_PARSE_FAILURE = "Failed to parse JSONRPC message from server"


class _DropParseTracebacks(logging.Filter):
    """The SDK logs a traceback for every stdout line it cannot parse (576 MB of log for 50 MB
    of noise); the watch reports those lines itself, counted."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _SDK_PARSE_FAILURE


logging.getLogger("mcp.client.stdio").addFilter(_DropParseTracebacks())


def _key(request_id: Any) -> str:
    # 7 and "7" are one request to the SDK's dispatcher too.
    return str(request_id)


def sample(text: str) -> str:
    """A short, printable excerpt of what a server sent."""
    text = text.replace("\n", "\\n")
    return text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + "…"


def _unparsed_line(exc: Exception) -> tuple[bool, str]:
    """Whether an unparsable line was JSON at all, and an excerpt of it."""
    if isinstance(exc, pydantic.ValidationError):
        errors = exc.errors(include_url=False)
        if not errors:
            return False, str(exc)
        raw = errors[0]["input"]
        text = raw if isinstance(raw, str) else json.dumps(raw, default=repr)
        return errors[0]["type"] != "json_invalid", text
    return False, str(exc)


@dataclass
class WireWatch:
    """Watches one connection to server ``server``.

    ``on_breach(why)`` is called once, with what the server sent in words, when it breaks the
    protocol; ``on_noise()`` once, at its first stray stdout line.
    """

    server: str
    on_breach: Callable[[str], None]
    on_noise: Callable[[], None]
    noise: int = 0
    """Stray (non-JSON) stdout lines so far."""
    breach: str | None = None
    _awaiting: OrderedDict[str, str] = field(default_factory=OrderedDict)

    def sent(self, message: SessionMessage) -> None:
        """Note a request the pod sends, so its answer is recognised."""
        root = message.message
        if isinstance(root, types.JSONRPCRequest):
            self._awaiting[_key(root.id)] = root.method
            if len(self._awaiting) > MAX_TRACKED_REQUESTS:
                self._awaiting.popitem(last=False)

    def received(self, item: SessionMessage | Exception) -> bool:
        """Judge one inbound item; True when it should reach the SDK."""
        if isinstance(item, Exception):
            is_json, text = _unparsed_line(item)
            if is_json:
                self._broke(f"sent a line that is not JSON-RPC: {sample(text)}")
            else:
                self._stray(text)
            return False
        root = item.message
        if isinstance(root, types.JSONRPCResponse | types.JSONRPCError):
            if root.id is None:
                said = (
                    f": {sample(root.error.message)}"
                    if isinstance(root, types.JSONRPCError)
                    else ""
                )
                self._broke(f"answered with a response for no request (a null id){said}")
                return False
            if self._awaiting.pop(_key(root.id), None) is None:
                self._broke(
                    f"answered with a response for another request (id {sample(repr(root.id))}, "
                    "which the pod never sent)"
                )
                return False
        return True

    def _broke(self, why: str) -> None:
        if self.breach is not None:
            return  # the first breach is what people need; the server is done for anyway
        self.breach = why
        log.warning("MCP server %s %s", self.server, why)
        self.on_breach(why)

    def _stray(self, text: str) -> None:
        self.noise += 1
        if self.noise == 1:
            self.on_noise()
        if self.noise <= NOISE_LOGGED_FIRST:
            log.warning("MCP server %s wrote to stdout: %s", self.server, sample(text))
        elif self.noise % NOISE_LOG_EVERY == 0:
            log.warning(
                "MCP server %s: %d lines of non-protocol output on stdout so far",
                self.server,
                self.noise,
            )
