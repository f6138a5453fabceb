"""``pod acp`` offers the pod's custom commands to the editor, and a prompt that names one is
expanded by the pod."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, schema

from orchestrator.adapters.session import load_session
from tests.acp.client import acp_agent, acp_env


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {**acp_env(dict(os.environ), short_dir, tmp_path / "state"), "HOME": str(home)}


async def test_the_editor_is_offered_the_pods_commands_and_they_expand(
    env: dict[str, str], workspace: Path
) -> None:
    folder = workspace / ".pod" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text(
        '---\ndescription: "Review a file\\x1b[2J"\nargument-hint: "[file]"\n---\n'
        "Please review $1 closely."
    )
    (folder / "status.md").write_text("the editor's own /status wins over this file")
    async with acp_agent(env, "--provider", "scripted") as (conn, client, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        [update] = client.of("available_commands_update")
        offered = {c.name: c for c in update.available_commands}
        assert set(offered) == {"cancel", "status", "compact", "rewind", "fork", "review"}
        review = offered["review"]
        assert review.description == "Review a file[2J"  # the escape character is gone
        assert review.input is not None and review.input.root.hint == "[file]"
        prompt = [schema.TextContentBlock(type="text", text="/review src/app.py")]
        done = await conn.prompt(session_id=session.session_id, prompt=prompt)
        assert done.stop_reason == "end_turn"
        assert len(client.of("available_commands_update")) == 1  # nothing changed
        # A file added between prompts is offered after the next one.
        (folder / "later.md").write_text("Later.")
        hello = [schema.TextContentBlock(type="text", text="hello")]
        await conn.prompt(session_id=session.session_id, prompt=hello)
        latest = client.of("available_commands_update")[-1]
        assert "later" in {c.name for c in latest.available_commands}
        sid = session.session_id
    [path] = (Path(env["XDG_STATE_HOME"]) / "pod").rglob(f"{sid}.jsonl")
    message, _hello = [i for i in load_session(path).items if i.kind == "user_message"]
    assert message.text == "Please review src/app.py closely."
