"""HTTP/1.1 plumbing for the fake API: a threading server and the writes an answer needs.

:class:`Handler` offers what answering takes: a JSON response, a chunked SSE stream written
event by event, a cut connection (no terminating chunk, so the client sees a truncated
read), and a pause that notices both the server stopping and the client going away. What to
answer is decided by the ``answer`` callable the :class:`HttpServer` is built with.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ClientGone", "Handler", "HttpServer", "Stopping", "error_body"]

_POLL_S = 0.02  # how often a sleeping handler checks for shutdown and a departed client


class ClientGone(Exception):
    """The client closed the connection while we were answering.

    A signal, not a failure: the answer is dropped (outside the error tree)."""


class Stopping(Exception):
    """The server is shutting down mid-answer.

    A signal, not a failure: the answer is abandoned (outside the error tree)."""


class HttpServer(ThreadingHTTPServer):
    """Serves on 127.0.0.1, one thread per connection; ``answer`` answers each request."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        port: int,
        *,
        answer: Callable[[Handler], None],
        track: Callable[[socket.socket, bool], None],
        stopping: threading.Event,
    ) -> None:
        self.answer = answer
        self.track = track
        self.stopping = stopping
        super().__init__(("127.0.0.1", port), Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (cancelled streams, closed pools) are routine, not errors."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """One connection; keep-alive and chunked bodies, as the real API."""

    protocol_version = "HTTP/1.1"
    server: HttpServer

    def setup(self) -> None:
        """Register the connection so that stopping the server can close it."""
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        """Forget the connection."""
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet; the recorded requests say what happened."""

    def do_GET(self) -> None:
        """Route to the ``answer`` callable."""
        self.server.answer(self)

    def do_POST(self) -> None:
        """Route to the ``answer`` callable."""
        self.server.answer(self)

    def read_body(self) -> bytes:
        """The request body (the connection is kept usable)."""
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def send_json(
        self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None
    ) -> None:
        """A complete JSON response."""
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self, request_id: str) -> None:
        """The headers of an SSE response; events follow as chunks."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", request_id)
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        """One chunk of the body; a write that fails means the client left."""
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError as err:
            raise ClientGone from err

    def end_stream(self) -> None:
        """The terminating chunk."""
        self.write_chunk(b"")

    def cut(self) -> None:
        """Close the socket without finishing the body: the client sees a truncated read."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def client_gone(self) -> bool:
        """Whether the client closed its end (a readable socket with nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def pause(self, seconds: float) -> None:
        """Sleep, but notice shutdown and a client that went away."""
        deadline = time.monotonic() + seconds
        while True:
            if self.client_gone():
                raise ClientGone
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.server.stopping.wait(min(_POLL_S, remaining)):
                raise Stopping


def error_body(error_type: str, message: str, request_id: str) -> dict[str, Any]:
    """The real API's error body."""
    body: dict[str, Any] = {"type": "error", "error": {"type": error_type, "message": message}}
    if request_id:
        body["request_id"] = request_id
    return body
