"""What a client sent, read to its end even when the pod can no longer write to it.

An asyncio stream reads and writes through one transport, and a failed write (the client closed
its side while events were on their way to it) tears the whole transport down: the bytes the
client sent just before closing, read into the stream or still in the socket, are dropped
unread. A client that sends ``shutdown`` and closes at once, while the pod is telling it
something (``status`` after ``rewound``, a streamed delta), lost its ``shutdown`` that way; the
pod stayed up.

:class:`Intake` reads a connection's bytes from a duplicate of its socket instead, with the
transport's own reading paused: writes still go through the transport, and when one fails only
the transport's descriptor is closed. The kernel hands over everything the client sent before
it reports the connection reset (POSIX orders it so), so every line is read before the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

__all__ = ["REPLY_ONLY", "Intake"]

REPLY_ONLY = frozenset(
    {"get_status", "get_history", "complete_files", "list_commands", "list_models", "subscribe"}
)
"""Methods whose one effect is their reply: not worked out for a client that can no longer read
it (one that shut its reading side and floods ``get_history`` would cost the pod for nothing)."""


class Intake:
    """A connection's incoming bytes, in order, to the end (see the module's docstring)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._sock: socket.socket | None = None
        self._early = b""
        """What the stream had read before the socket was taken over, delivered first."""

    @classmethod
    async def take(cls, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Intake:
        """Take a connection's reading over from its stream; when that cannot be done (the
        connection is already gone), the stream is read as it is."""
        intake = cls(reader)
        transport = writer.transport
        raw = writer.get_extra_info("socket")
        if raw is None or not isinstance(transport, asyncio.Transport) or transport.is_closing():
            return intake  # not a socket's transport, or already gone: the stream as it is
        try:
            sock = raw.dup()
        except OSError:
            return intake
        sock.setblocking(False)
        transport.pause_reading()
        # The stream gets nothing more: what it holds is the start of what the client sent.
        reader.feed_eof()
        try:
            intake._early = await reader.read()
        except (ConnectionError, OSError):
            intake._early = b""
        # Reading its buffer may have resumed the transport (the stream's flow control); the
        # loop has not run since, so nothing was read past what was taken.
        transport.pause_reading()
        intake._sock = sock
        return intake

    async def read(self, size: int) -> bytes:
        """Up to ``size`` bytes; ``b""`` once the client has closed (or reset) its side."""
        if self._early:
            chunk, self._early = self._early[:size], self._early[size:]
            return chunk
        if self._sock is None:
            try:
                return await self._reader.read(size)
            except (ConnectionError, asyncio.IncompleteReadError):
                return b""
        try:
            return await asyncio.get_running_loop().sock_recv(self._sock, size)
        except ConnectionError:
            # Reported only once everything the client sent has been read: its end.
            return b""

    def close(self) -> None:
        """Release the duplicate socket (the transport closes its own)."""
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
