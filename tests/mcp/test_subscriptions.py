"""Resource subscriptions and text blobs against a server of our own over stdio
(``tests/mcp/resource_server.py``, the ``mcp`` package's server, protocol 2026-07-28: updates
come on a ``subscriptions/listen`` stream). server-everything's older protocol
(``resources/subscribe``) is tested in ``test_everything.py``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.adapters.mcp.resources import resource_output
from orchestrator.adapters.mcp.servers import McpServers
from orchestrator.config.mcp import McpServerConfig

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[McpServers]:
    entry = McpServerConfig(
        command=sys.executable, args=["-m", "tests.mcp.resource_server"], cwd=str(REPO)
    )
    started = McpServers.from_config({"notes": entry}, tmp_path, lambda level, message: None)
    await started.start()
    assert started.servers[0].status == "running"
    try:
        yield started
    finally:
        await started.close()


async def changed(servers: McpServers) -> None:
    for _ in range(600):  # event-driven, with a generous ceiling
        if any(server.subscriptions.changed for server in servers.servers):
            return
        await asyncio.sleep(0.1)


async def test_a_resource_read_is_followed_and_its_update_is_one_note(servers: McpServers) -> None:
    server = servers.servers[0]
    first = resource_output("notes", "notes://today", await server.read_resource("notes://today"))
    assert first.content == "[resource notes://today]\nnothing yet"
    assert server.subscriptions.followed == {"notes://today"}
    await server.call("touch", {"text": "the meeting moved"})
    await changed(servers)
    [note] = servers.take_notes()
    assert "notes://today" in note.text and "read_mcp_resource" in note.text
    again = await server.read_resource("notes://today")
    assert resource_output("notes", "notes://today", again).content == (
        "[resource notes://today]\nthe meeting moved"
    )


async def test_a_storm_of_updates_is_coalesced(servers: McpServers) -> None:
    server = servers.servers[0]
    await server.read_resource("notes://today")
    await server.call("storm", {"count": 5000})
    await changed(servers)
    notes = servers.take_notes()
    # 5,000 announcements, ten of the URIs never read: one note, naming the one it read.
    assert len(notes) == 1 and notes[0].text.count("notes://") == 1


async def test_text_blobs_are_text_and_lying_or_huge_ones_are_named(servers: McpServers) -> None:
    server = servers.servers[0]

    async def read(uri: str) -> str:
        content = resource_output("notes", uri, await server.read_resource(uri)).content
        assert content is not None
        return content

    assert await read("notes://blob") == "[resource notes://blob]\na blob that is text: é\n"
    assert "not shown: it is not valid utf-8" in await read("notes://latin")
    assert "not shown: more text than the 1000 kB" in await read("notes://huge")
