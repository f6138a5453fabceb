"""An MCP server with prompts, written with the ``mcp`` package.

    python -m tests.mcp.prompt_server

Prompts: ``brief(topic, style="short")`` (a user message, an assistant's, an embedded text
resource and a ``text/plain`` blob), ``hostile()`` (terminal escapes and 300,000 characters).
Tool: ``add_prompt`` (adds the prompt ``late`` and says the list changed).
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt


def config(**extra: Any) -> dict[str, Any]:
    """An ``[mcp.servers.<name>]`` entry that runs this server (its tools allowed)."""
    return {
        "command": sys.executable,
        "args": ["-m", "tests.mcp.prompt_server"],
        "cwd": str(Path(__file__).resolve().parents[2]),
        "permission": "allow",
        **extra,
    }


def build() -> MCPServer:
    """The server, its prompts and its tool."""
    server = MCPServer("prompts")

    @server.prompt(description="A brief on a topic")
    def brief(topic: str, style: str = "short") -> list[dict[str, Any]]:
        blob = base64.b64encode(f"notes on {topic}".encode()).decode()
        return [
            {"role": "user", "content": f"Write a {style} brief on {topic}."},
            {"role": "assistant", "content": "Which sources?"},
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": {"uri": "notes://style", "text": "Plain words."},
                },
            },
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": {"uri": "notes://blob", "mimeType": "text/plain", "blob": blob},
                },
            },
        ]

    @server.prompt(description="Escapes\x1b[2J and a flood")
    def hostile() -> str:
        return "\x1b]0;owned\x07clear\x1b[2J" + "x" * 300_000

    @server.tool()
    async def add_prompt(ctx: Context) -> str:
        """Add the prompt ``late`` and announce the change."""

        def late() -> str:
            return "a late prompt"

        server.add_prompt(Prompt.from_function(late, name="late", description="Added later"))
        await ctx.notify_prompts_changed()
        return "added"

    return server


if __name__ == "__main__":
    build().run()
