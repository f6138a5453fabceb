"""An MCP server that misbehaves on purpose, written with the ``mcp`` package.

    python -m tests.mcp.hostile_server [--garbage] [--http PORT]

Tools: ``echo`` (fine), ``picture`` (a PNG), ``record`` (logs a call id, then sleeps: the fuzz counts executions
with it), ``ask_record`` (asks for input with a form of one required string, then logs its call id as
``record`` does and says what came back), ``hang`` (never answers, ignores cancellation), ``freeze`` (blocks the whole server), ``huge`` (megabytes
of text), ``fail`` (an ``isError`` result), ``die`` (exits mid-call), ``exit_later`` (answers, then
exits while idle), ``grow`` (adds a ``reverse`` tool and announces that the list changed), ``spawn`` (starts a helper process that outlives the server unless something
ends it; its pid goes to the file named by ``HOSTILE_CHILDREN``), ``write`` (writes a file, or
says why it could not: the sandbox's tests). ``--garbage`` writes a
non-JSON line to stdout first. ``--http PORT`` serves streamable HTTP on 127.0.0.1 instead of
stdio, with a ``whoami`` tool that checks the ``Authorization`` header against
``HOSTILE_EXPECT``. The server records its pid in the file named by
``HOSTILE_PIDFILE``, so tests can look for survivors.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit, Image, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field


class Answer(BaseModel):
    """The form ``ask_record`` asks a person to fill: one required string, no default."""

    answer: str = Field(description="What to write down")


def _ask(call_id: str) -> Elicit[Answer]:
    """``ask_record``'s question; its message names the call (a resolver, so module-level: the
    tool's annotations are evaluated here)."""
    return Elicit(f"ask {call_id}: what should be written down?", Answer)


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


def config(*args: str, **env: str) -> dict[str, Any]:
    """An ``[mcp.servers.<name>]`` entry that runs this server (its tools allowed)."""
    entry: dict[str, Any] = {
        "command": sys.executable,
        "args": ["-m", "tests.mcp.hostile_server", *args],
        "cwd": str(Path(__file__).resolve().parents[2]),
        "permission": "allow",
    }
    if env:
        entry["env"] = env
    return entry


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--http", type=int, default=0)
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

    def arrived(tool: str) -> None:
        """Note that a call reached the server (a test waits for it, not for a time)."""
        if pidfile:
            with open(f"{pidfile}.calls", "a") as out:
                out.write(f"{tool}\n")

    @server.tool()
    def hang(seconds: float = 3600) -> str:
        """Never answers in time; a thread keeps sleeping even when the call is cancelled."""
        arrived("hang")
        done = threading.Event()
        threading.Thread(target=lambda: (time.sleep(seconds), done.set()), daemon=True).start()
        done.wait()
        return "woke up"

    @server.tool()
    async def freeze() -> str:
        """Blocks the server's own event loop: it answers nothing until it is killed."""
        arrived("freeze")
        time.sleep(3600)
        return "thawed"

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
    async def ask_record(
        call_id: str,
        path: str,
        got: Annotated[ElicitationResult[Answer], Resolve(_ask)],
    ) -> str:
        """Ask for an answer (its message names ``call_id``), then append ``call_id`` to the
        log at ``path`` as ``record`` does, and say what came back."""
        with open(path, "a") as log:
            log.write(f"{call_id}\n")
        if isinstance(got, AcceptedElicitation):
            return f"asked {call_id}: accept {got.data.answer}"
        return f"asked {call_id}: {got.action}"

    @server.tool()
    def write(path: str, text: str) -> str:
        """Write ``text`` to ``path``, or say why not (the error's own words)."""
        try:
            Path(path).write_text(text)
        except OSError as exc:
            return f"cannot write {path}: {exc.strerror}"
        return f"wrote {path}"

    @server.tool()
    def picture() -> Image:
        """A small PNG (made here, byte by byte, so the server needs nothing else)."""
        return Image(data=_png(), format="png")

    @server.tool()
    def fail() -> str:
        """Always fails, with a message meant for the model."""
        raise ToolError("the database is locked")

    @server.tool()
    def exit_later(seconds: float = 0.3) -> str:
        """Answer now, then say goodbye on stderr and exit while idle."""

        def leave() -> None:
            time.sleep(seconds)
            sys.stderr.write("hostile: leaving on purpose\n")
            sys.stderr.flush()
            os._exit(3)

        threading.Thread(target=leave, daemon=True).start()
        return "leaving soon"

    @server.tool()
    def spawn() -> str:
        """Start a helper that sleeps for an hour, detached from the server's pipes."""
        import subprocess

        helper = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(3600)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        children = os.environ.get("HOSTILE_CHILDREN")
        if children:
            with open(children, "a") as out:
                out.write(f"{helper.pid}\n")
        return f"started {helper.pid}"

    @server.tool()
    def die() -> str:
        """Exits in the middle of the call."""
        os._exit(7)

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add a ``reverse`` tool and tell the client its tool list changed."""

        def reverse(text: str) -> str:
            """Say it backwards."""
            return text[::-1]

        server.add_tool(reverse, name="reverse")
        await ctx.notify_tools_changed()
        return "grew"

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Whether the request carried the expected Authorization header (never the header)."""
        got = (ctx.headers or {}).get("authorization")
        return "authorized" if got == os.environ.get("HOSTILE_EXPECT") else "refused"

    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
        return
    if args.garbage:
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
    server.run("stdio")


if __name__ == "__main__":
    main()
