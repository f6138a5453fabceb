"""The pod's client side against the reference server nobody here wrote
(``@modelcontextprotocol/server-everything``, over stdio, protocol 2025-11-25: its requests
come as requests of their own in the middle of a call). Skipped when it is not installed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import types

from orchestrator.adapters.mcp.client_side import ClientSettings
from orchestrator.adapters.mcp.resources import resource_output
from orchestrator.adapters.mcp.results import TASK_ONLY
from orchestrator.adapters.mcp.server import McpServer
from orchestrator.adapters.mcp.servers import McpServers
from orchestrator.config.mcp import McpServerConfig
from tests.mcp.npm_tools import INSTALL, everything, node

NODE = node(20)
EVERYTHING = everything()
pytestmark = pytest.mark.skipif(
    NODE is None or EVERYTHING is None,
    reason=f"server-everything or Node 20+ is not installed; {INSTALL}",
)

Alerts = list[tuple[str, str]]


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[tuple[McpServers, Alerts]]:
    assert NODE is not None and EVERYTHING is not None
    alerts: Alerts = []
    entry = McpServerConfig(command=NODE, args=[EVERYTHING, "stdio"])
    started = McpServers.from_config(
        {"ev": entry},
        tmp_path,
        lambda level, message: alerts.append((level, message)),
        settings=ClientSettings(roots=(tmp_path,), elicitation="defaults"),
    )
    await started.start()
    try:
        yield started, alerts
    finally:
        await started.close()


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


async def test_the_tools_for_capable_clients_are_offered_and_task_only_ones_are_not(
    servers: tuple[McpServers, Alerts],
) -> None:
    started, alerts = servers
    offered = {tool.name for tool in started.tools(set())}
    # Offered only to a client that declares roots, elicitation and sampling.
    assert {
        "mcp__ev__get-roots-list",
        "mcp__ev__trigger-elicitation-request",
        "mcp__ev__trigger-sampling-request",
    } <= offered
    assert "mcp__ev__simulate-research-query" not in offered
    assert started.servers[0].not_offered == {"mcp__ev__simulate-research-query": TASK_ONLY}
    [row] = started.report(offered)
    assert row.not_offered == {"mcp__ev__simulate-research-query": TASK_ONLY}
    assert (
        "info",
        f"MCP server ev: tool simulate-research-query is not offered: {TASK_ONLY}",
    ) in alerts


async def test_roots_progress_input_and_sampling_as_the_reference_server_sees_them(
    servers: tuple[McpServers, Alerts], tmp_path: Path
) -> None:
    started, alerts = servers
    server: McpServer = started.servers[0]
    [roots] = texts(await server.call("get-roots-list", {}))
    assert f"1. workspace\n   URI: {tmp_path.as_uri()}" in roots
    lines: list[str] = []
    done = await server.call(
        "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, lines.append
    )
    assert not done.is_error
    assert lines == ["[progress 1/3]\n", "[progress 2/3]\n", "[progress 3/3]\n"]
    # Its form has required fields without defaults: declined, and the reason goes back.
    asked = "\n".join(texts(await server.call("trigger-elicitation-request", {})))
    assert '"action": "decline"' in asked
    assert '"pod-orchestrator/reason": "required field name has no default' in asked
    sampled = await server.call("trigger-sampling-request", {"prompt": "a haiku"})
    assert sampled.is_error
    assert texts(sampled) == [
        "MCP error -1: pod-orchestrator declined the sampling request of MCP server ev: its "
        'model is not lent to MCP servers (a user allows it with sampling = "ask" in '
        "[mcp.servers.ev])"
    ]
    assert [level for level, message in alerts if "asked for input" in message] == ["info"]


async def test_a_text_blob_reaches_the_model_as_text(servers: tuple[McpServers, Alerts]) -> None:
    started, _ = servers
    uri = "demo://resource/dynamic/blob/7"
    output = resource_output("ev", uri, await started.servers[0].read_resource(uri))
    assert output.content is not None
    # Its MIME type is text/plain, its content base64: read as the text it is.
    assert output.content.startswith(f"[resource {uri}]\nResource 7: This is a base64 blob")
    assert output.images == () and output.documents == ()


async def test_an_update_of_a_resource_read_reaches_the_model_once_and_the_pod_unsubscribes(
    servers: tuple[McpServers, Alerts], caplog: pytest.LogCaptureFixture
) -> None:
    started, _ = servers
    server: McpServer = started.servers[0]
    uri = "demo://resource/dynamic/text/3"
    await server.read_resource(uri)
    assert server.subscriptions.followed == {uri}
    assert started.take_notes() == []
    # The reference server sends an update for each subscription at once, then every 5 s.
    await server.call("toggle-subscriber-updates", {})
    for _ in range(600):  # a generous ceiling: the notification is asynchronous
        if server.subscriptions.changed:
            break
        await asyncio.sleep(0.1)
    [note] = started.take_notes()
    assert note.text.startswith(f"MCP server ev says a resource you read changed since: {uri}.")
    assert started.take_notes() == []  # told once, until it changes again
    await server.call("toggle-subscriber-updates", {})  # its updates off again
    caplog.set_level(logging.INFO, logger="mcp.ev")
    await server.subscriptions.close()
    assert server.subscriptions.followed == set()
    for _ in range(300):
        if "Received Unsubscribe Resource request" in caplog.text:
            break
        await asyncio.sleep(0.1)
    assert f"Received Unsubscribe Resource request: {uri}" in caplog.text
