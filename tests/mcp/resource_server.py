"""A small MCP server (the ``mcp`` package's ``MCPServer``, protocol 2026-07-28) with resources
that change, and blobs that are text or pretend to be.

    python -m tests.mcp.resource_server

Resources: ``notes://today`` (text that ``touch`` changes), ``notes://blob`` (text/plain sent as
bytes), ``notes://latin`` (Latin-1 bytes whose MIME type says UTF-8), ``notes://huge`` (3 MB of
text/plain bytes). Tools: ``touch`` (changes ``notes://today`` and announces it), ``storm``
(``count`` update announcements over ``notes://0`` … ``notes://9`` and ``notes://today``).
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer


def main() -> None:
    """Serve over stdio."""
    server = MCPServer("resources")
    state = {"today": "nothing yet"}

    @server.resource("notes://today", mime_type="text/plain")
    def today() -> str:
        return state["today"]

    @server.resource("notes://blob", mime_type="text/plain")
    def blob() -> bytes:
        return "a blob that is text: é\n".encode()

    @server.resource("notes://latin", mime_type="text/plain; charset=utf-8")
    def latin() -> bytes:
        return "café crème".encode("latin-1")

    @server.resource("notes://huge", mime_type="text/plain")
    def huge() -> bytes:
        return b"x" * 3_000_000

    @server.tool()
    async def touch(text: str, ctx: Context) -> str:
        """Change notes://today and announce it."""
        state["today"] = text
        await ctx.notify_resource_updated("notes://today")
        return "touched"

    @server.tool()
    async def storm(count: int, ctx: Context) -> str:
        """Announce ``count`` updates over eleven resources."""
        for n in range(count):
            uri = "notes://today" if n % 11 == 10 else f"notes://{n % 11}"
            await ctx.notify_resource_updated(uri)
        return f"{count} updates announced"

    server.run("stdio")


if __name__ == "__main__":
    main()
