"""An MCP server that misbehaves on purpose, written with the ``mcp`` package.

    python -m tests.mcp.hostile_server [--garbage]

Tools: ``echo`` (fine), ``picture`` (a PNG), ``record`` (logs a call id, then sleeps: the fuzz counts executions
with it), ``hang`` (never answers, ignores cancellation), ``huge`` (megabytes
of text), ``fail`` (an ``isError`` result), ``die`` (exits mid-call). ``--garbage`` writes a
non-JSON line to stdout first. The server records its pid in the file named by
``HOSTILE_PIDFILE``, so tests can look for survivors.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def _png(width: int = 4, height: int = 3) -> bytes:
    """A valid grey PNG."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--garbage", action="store_true")
    args = parser.parse_args()
    pidfile = os.environ.get("HOSTILE_PIDFILE")
    if pidfile:
        with open(pidfile, "a") as out:
            out.write(f"{os.getpid()}\n")
    server = MCPServer("hostile")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    def hang(seconds: float = 3600) -> str:
        """Never answers in time; a thread keeps sleeping even when the call is cancelled."""
        done = threading.Event()
        threading.Thread(target=lambda: (time.sleep(seconds), done.set()), daemon=True).start()
        done.wait()
        return "woke up"

    @server.tool()
    def huge(megabytes: int = 3) -> str:
        """A lot of text."""
        return ("x" * 1023 + "\n") * (megabytes * 1024)

    @server.tool()
    def record(call_id: str, path: str, seconds: float = 0.1) -> str:
        """Append ``call_id`` to the log at ``path`` (it counts executions), then take a while."""
        with open(path, "a") as log:
            log.write(f"{call_id}\n")
        time.sleep(seconds)
        return f"recorded {call_id}"

    @server.tool()
    def picture() -> Image:
        """A small PNG (made here, byte by byte, so the server needs nothing else)."""
        return Image(data=_png(), format="png")

    @server.tool()
    def fail() -> str:
        """Always fails, with a message meant for the model."""
        raise ToolError("the database is locked")

    @server.tool()
    def die() -> str:
        """Exits in the middle of the call."""
        os._exit(7)

    if args.garbage:
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
    server.run("stdio")


if __name__ == "__main__":
    main()
