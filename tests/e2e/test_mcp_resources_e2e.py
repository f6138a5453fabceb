"""MCP resources through the public protocol: a person attaches a resource (``@mcp:``), the
model sees a text blob as text, a tool changes the resource, and the next request tells the
model it changed (``tests/mcp/resource_server.py``, a server of our own)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall
from tests.e2e.harness import collect_until, running_pod

REPO = Path(__file__).resolve().parents[2]


async def test_an_attached_resource_that_changes_is_named_at_the_next_request(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(
            tool_calls=[ScriptedToolCall(name="mcp__notes__touch", input={"text": "moved"})]
        ),
        ScriptedReply(text="noted"),
        ScriptedReply(text="second turn"),
    ]
    server = {
        "command": sys.executable,
        "args": ["-m", "tests.mcp.resource_server"],
        "cwd": str(REPO),
        "permission": "allow",
    }
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"notes": server}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read @mcp:notes:notes://today and @mcp:notes:notes://blob"})
        await collect_until(c, "run_end", timeout=120)
        await c.send("run", {"input": "and now?"})
        await collect_until(c, "run_end", timeout=120)
        await c.close()
        pod.assert_all_requests_valid()
        sent = [json.dumps(r.messages, ensure_ascii=False) for r in pod.provider.requests]
    assert len(sent) == 3
    # The first request holds both attachments, the blob as the text it is.
    assert "[resource notes://today]\\nnothing yet" in sent[0]
    assert "[resource notes://blob]\\na blob that is text: é" in sent[0]
    changed = "MCP server notes says a resource you read changed since: notes://today."
    assert changed not in sent[0]
    # The touch changed it: a later request names it, once.
    assert changed in sent[-1]
    assert sent[-1].count(changed) == 1
