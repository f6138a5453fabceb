"""Plan mode through ACP, driven by the SDK's own client: the session's modes, the editor's
``session/set_mode``, ``current_mode_update``, and a plan asked with
``session/request_permission``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from acp import RequestError, schema

from tests.acp.client import RecordingClient, acp_agent, acp_env

PLAN = "## Plan\n\n1. Write notes.md\n2. Say done"

WRITE = {"name": "write_file", "input": {"path": "notes.md", "content": "new\n"}}


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    return acp_env(dict(os.environ), short_dir, tmp_path / "state")


def _script(tmp_path: Path, *replies: dict[str, object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": list(replies)}))
    return str(path)


def _text(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


def _modes(client: RecordingClient) -> list[str]:
    return [u.current_mode_id for u in client.of("current_mode_update")]


@pytest.mark.parametrize(
    ("choice", "mode"), [("plan:accept-edits", "accept-edits"), ("deny", "plan")]
)
async def test_the_editor_sets_plan_mode_and_answers_the_plan(
    env: dict[str, str], workspace: Path, tmp_path: Path, choice: str, mode: str
) -> None:
    script = _script(
        tmp_path,
        {"tool_calls": [{"name": "exit_plan_mode", "input": {"plan": PLAN}}]},
        {"tool_calls": [WRITE]},
        {"text": "Done."},
    )
    client = RecordingClient(answer=lambda _call: choice)
    args = ("--script", script, "--permission-mode", "accept-edits")
    async with acp_agent(env, *args, client=client) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "accept-edits"
        offered = {m.id for m in session.modes.available_modes}
        assert offered == {"default", "accept-edits", "plan", "read-only", "yolo"}
        with pytest.raises(RequestError) as wider:
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        assert "wider" in str((wider.value.data or {}).get("message"))
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("plan, then do")])
        assert done.stop_reason == "end_turn"
        await client.until(lambda: _modes(client)[-1:] == [mode])
    [asked] = client.permissions
    assert asked.kind == "switch_mode" and "plan" in (asked.title or "").lower()
    assert asked.content is not None and asked.content[0].content.text == PLAN
    # Approved for accept-edits, the write ran unasked; kept planning, it was refused unasked.
    assert (workspace / "notes.md").exists() == (mode == "accept-edits")
    if mode == "plan":
        assert "plan" in _modes(client) and "accept-edits" not in _modes(client)
