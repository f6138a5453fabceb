"""``pod acp`` shows an ``@file`` preread as the editor's Read call even when thinking is on
and the file went as a ``[File: …]`` message (issue 47 §3): the real agent, its pod on the
real SDK against the fake Messages API, the model one that thinks."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from acp import schema

from conformance.fake_api import FakeAnthropic, Reply
from tests.acp.client import acp_agent, acp_env


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    """The fake Messages API, on real HTTP."""
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_preread_with_thinking_on_is_a_completed_read_call(
    short_dir: Path, tmp_path: Path, workspace: Path, fake: FakeAnthropic
) -> None:
    (workspace / ".pod").mkdir()
    (workspace / ".pod" / "config.toml").write_text('file_ref_style = "synthetic_read"\n')
    fake.thinking_profile = True
    fake.push(Reply(thinking="Read it first.", text="It returns 42."))
    env = acp_env(dict(os.environ), short_dir, tmp_path / "state")
    env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url)
    async with acp_agent(env, "--model", "claude-sonnet-4-6") as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        prompt = [schema.TextContentBlock(type="text", text="what does @src/app.py do?")]
        done = await conn.prompt(session_id=session.session_id, prompt=prompt)
        assert done.stop_reason == "end_turn"
    # Thinking was on, so the file went as a system message, not a tool call ...
    [request] = fake.requests
    assert request.valid and request.body["thinking"] == {"type": "adaptive"}
    sent = [b for m in request.body["messages"] for b in m["content"] if isinstance(b, dict)]
    assert not [b for b in sent if b.get("type") == "tool_use"]
    assert any(b.get("text", "").startswith("[File: src/app.py]") for b in sent)
    # ... and the editor sees the Read call a synthetic read shows, finished.
    [call] = client.of("tool_call")
    assert (call.title, call.kind, call.raw_input) == (
        "read_file: src/app.py",
        "read",
        {"path": "src/app.py"},
    )
    assert call.locations and call.locations[0].path == str(workspace / "src" / "app.py")
    [update] = [u for u in client.of("tool_call_update") if u.tool_call_id == call.tool_call_id]
    assert update.status == "completed"
    text = update.content[0].content.text
    assert text.startswith("read_file: src/app.py — 2 lines") and "return 42" in text
    assert "It returns 42." in client.text()
