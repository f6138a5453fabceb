"""The reference server's prompts as the pod's commands, through the protocol (skipped when
server-everything is not installed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import ScriptedReply, collect_until, running_pod
from tests.mcp.npm_tools import INSTALL, everything, node

NODE = node(20)
EVERYTHING = everything()
pytestmark = pytest.mark.skipif(
    NODE is None or EVERYTHING is None,
    reason=f"server-everything or Node 20+ is not installed; {INSTALL}",
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


async def test_the_reference_servers_prompts_run_as_commands(
    workspace: Path, short_dir: Path
) -> None:
    mcp = {"servers": {"ev": {"command": NODE, "args": [EVERYTHING, "stdio"]}}}
    replies = [ScriptedReply(text="one"), ScriptedReply(text="two")]
    async with running_pod(workspace, short_dir, replies=replies, mcp=mcp) as pod:
        c = await pod.client()
        listed = {cmd.name: cmd for cmd in (await c.commands()).commands}
        assert {"mcp__ev__simple-prompt", "mcp__ev__args-prompt"} <= set(listed)
        assert listed["mcp__ev__args-prompt"].argument_hint == "<city> [state]"
        await c.send("run", {"input": "/mcp__ev__args-prompt state=Texas Paris"})
        await collect_until(c, "run_end", timeout=30)
        await c.send("run", {"input": "/mcp__ev__resource-prompt Text 1"})
        await collect_until(c, "run_end", timeout=30)
        items = (await c.history()).items
        prompts = [item["text"] for item in items if item["kind"] == "user_message"]
        assert "Paris" in prompts[0] and "Texas" in prompts[0]
        assert "[Resource: " in prompts[1]
