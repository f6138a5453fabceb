"""A minimal stdio MCP server: ``blob`` (n bytes of text), ``hang`` (the slow tool of the
conformance kit's MCP case, and the server of ``bench.mcp``) and ``ask`` (the kit's input
tool: it asks its client for input with a one-field form, ``elicitation/create``, and returns
what came back). Run with ``python -m conformance.mcp_server``."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

ASK_FIELD = "answer"
"""The one field of the ``ask`` form: a required string with no default, so only a person's
answer (not a client's defaults) can fill it in."""

ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {ASK_FIELD: {"type": "string", "description": "Anything at all"}},
    "required": [ASK_FIELD],
}

TOOLS = [
    types.Tool(
        name="blob",
        description="Return n bytes of text.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    ),
    types.Tool(name="hang", description="Sleep for an hour.", input_schema={"type": "object"}),
    types.Tool(
        name="ask",
        description="Ask the person for an answer and say what came back.",
        input_schema={"type": "object"},
    ),
]


async def _list(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


ASK_MESSAGE = "Conformance kit: an answer, please"
_ASK_KEY = "answer"
_INPUT_REQUIRED_VERSION = "2026-07-28"
"""The first protocol revision whose ``tools/call`` asks for input inside its result
(``InputRequiredResult``, answered by the client calling again) instead of by a request of
the server's own; protocol versions are dates, so they compare as strings."""


async def _ask(
    ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    """Says ``accept {"answer": ...}``, ``decline`` or ``cancel``: the kit finds its answer in
    the tool's result, so it knows the answer reached the server."""
    answer = (params.input_responses or {}).get(_ASK_KEY)
    if answer is None and str(ctx.protocol_version) >= _INPUT_REQUIRED_VERSION:
        form = types.ElicitRequestFormParams(message=ASK_MESSAGE, requested_schema=ASK_SCHEMA)
        return types.InputRequiredResult(
            input_requests={_ASK_KEY: types.ElicitRequest(params=form)}
        )
    if answer is None:
        answer = await ctx.session.elicit_form(
            ASK_MESSAGE, ASK_SCHEMA, related_request_id=ctx.request_id
        )
    action = str(getattr(answer, "action", "cancel"))
    content = getattr(answer, "content", None) or {}
    text = f"accept {json.dumps(content, sort_keys=True)}" if action == "accept" else action
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _call(
    ctx: Any, params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    if params.name == "hang":
        await anyio.sleep(3600)
    if params.name == "ask":
        return await _ask(ctx, params)
    n = int((params.arguments or {}).get("n", 100))
    return types.CallToolResult(content=[types.TextContent(type="text", text="x" * n)])


async def _main() -> None:
    server = Server("bench", on_list_tools=_list, on_call_tool=_call)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_main)
