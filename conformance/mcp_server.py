"""A minimal stdio MCP server: ``blob`` (n bytes of text) and ``hang`` (the slow tool of the
conformance kit's MCP case, and the server of ``bench.mcp``). Run with
``python -m conformance.mcp_server``."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [
    types.Tool(
        name="blob",
        description="Return n bytes of text.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    ),
    types.Tool(name="hang", description="Sleep for an hour.", input_schema={"type": "object"}),
]


async def _list(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def _call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "hang":
        await anyio.sleep(3600)
    n = int((params.arguments or {}).get("n", 100))
    return types.CallToolResult(content=[types.TextContent(type="text", text="x" * n)])


async def _main() -> None:
    server = Server("bench", on_list_tools=_list, on_call_tool=_call)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_main)
