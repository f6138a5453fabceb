"""The todo list in an editor: ACP ``plan`` session updates, through the SDK's own client."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from acp import schema

from cli.acp.plan import plan_update
from orchestrator.protocol import TodoData
from tests.acp.client import acp_agent, acp_env


def test_the_list_becomes_plan_entries_whole() -> None:
    update = plan_update(
        [
            {"content": "Run the tests", "status": "completed", "active_form": None},
            TodoData(content="Fix the bug", status="in_progress", active_form="Fixing it"),
            {"content": "Write docs", "status": "pending"},
        ]
    )
    assert update.session_update == "plan"
    assert [(e.content, e.status, e.priority) for e in update.entries] == [
        ("Run the tests", "completed", "medium"),
        ("Fix the bug", "in_progress", "medium"),
        ("Write docs", "pending", "medium"),
    ]
    wire = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["sessionUpdate"] == "plan" and len(wire["entries"]) == 3
    assert plan_update([]).entries == []  # an emptied list clears the editor's plan


def test_a_bad_item_is_refused_not_sent() -> None:
    with pytest.raises(ValueError):
        plan_update([{"content": "x", "status": "done"}])


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    return acp_env(dict(os.environ), short_dir, tmp_path / "state")


def _todos(*items: tuple[str, str]) -> dict[str, object]:
    return {
        "name": "todo_write",
        "input": {"todos": [{"content": c, "status": s} for c, s in items]},
    }


async def test_todo_writes_are_plan_updates_and_a_loaded_session_sends_its_plan(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    first = _todos(("write the test", "in_progress"), ("fix the bug", "pending"))
    later = _todos(("write the test", "completed"), ("fix the bug", "in_progress"))
    replies = [
        {"text": "Planning.", "tool_calls": [first]},
        {"text": "Working.", "tool_calls": [later]},
        {"text": "Done."},
    ]
    script.write_text(json.dumps({"replies": replies}))
    text = schema.TextContentBlock(type="text", text="fix it")
    async with acp_agent(env, "--script", str(script)) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[text])
        assert done.stop_reason == "end_turn"
        plans = client.of("plan")
        assert [[(e.content, e.status) for e in p.entries] for p in plans] == [
            [("write the test", "in_progress"), ("fix the bug", "pending")],
            [("write the test", "completed"), ("fix the bug", "in_progress")],
        ]
        # The calls themselves are drawn as thinking, not as an unknown tool.
        kinds = {u.title: u.kind for u in client.of("tool_call")}
        assert set(kinds.values()) == {"think"}
    async with acp_agent(env, "--script", str(script)) as (conn, client, _):
        await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
        [plan] = client.of("plan")
        assert [(e.content, e.status) for e in plan.entries] == [
            ("write the test", "completed"),
            ("fix the bug", "in_progress"),
        ]
