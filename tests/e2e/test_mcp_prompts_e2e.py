"""MCP prompts as custom commands, through the protocol: listed with their arguments, run
with arguments by position and by name, a server's hostile text cleaned and capped, and a
changed list followed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.mcp.prompt_server import config


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def first_user_text(request: Any) -> str:
    content = request.messages[0]["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


async def test_a_servers_prompts_are_commands(workspace: Path, short_dir: Path) -> None:
    replies = [
        ScriptedReply(text="one"),
        ScriptedReply(text="two"),
        ScriptedReply(tool_calls=[ScriptedToolCall(name="mcp__p__add_prompt", input={})]),
        ScriptedReply(text="three"),
    ]
    mcp = {"servers": {"p": config()}}
    async with running_pod(workspace, short_dir, replies=replies, mcp=mcp) as pod:
        c = await pod.client()
        listed = {cmd.name: cmd for cmd in (await c.commands()).commands}
        brief = listed["mcp__p__brief"]
        assert (brief.source, brief.argument_hint) == ("mcp", "<topic> [style]")
        assert brief.description == "A brief on a topic (MCP server p)"
        assert "\x1b" not in listed["mcp__p__hostile"].description

        await c.send("run", {"input": "/mcp__p__brief style=long rivers"})
        assert (await collect_until(c, "run_end", timeout=30))[-1].data["result"] == "finished"
        sent = first_user_text(pod.provider.requests[0])
        assert sent.startswith("Write a long brief on rivers.")
        assert "[assistant]\nWhich sources?" in sent
        assert "[Resource: notes://style]\nPlain words." in sent
        assert "[Resource: notes://blob]\nnotes on rivers" in sent
        history = (await c.history()).items
        assert history[0]["segments"] == [
            {"kind": "workflow_invoke", "slug": "mcp__p__brief", "arguments": "style=long rivers"}
        ]

        await c.send("run", {"input": "/mcp__p__hostile"})
        await collect_until(c, "run_end", timeout=30)
        hostile = (await c.history()).items[2]["text"]
        assert "\x1b" not in hostile and "\x07" not in hostile
        assert hostile.startswith("]0;ownedclear[2J")
        assert hostile.endswith("[prompt cut at 100,000 characters]")

        await c.send("run", {"input": "add one"})
        await collect_until(c, "run_end", timeout=30)
        for _ in range(200):  # the changed list is read again in the background
            names = {cmd.name for cmd in (await c.commands()).commands}
            if "mcp__p__late" in names:
                break
            await asyncio.sleep(0.05)
        assert "mcp__p__late" in names
