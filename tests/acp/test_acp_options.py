"""The model, thinking and effort as ACP session config options, and the session methods
beside prompting (``session/list``, ``session/resume``, ``session/close``,
``authenticate``), driven by the SDK's own client against ``pod acp``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, schema

from conformance.fake_api import FakeAnthropic, Reply
from conformance.models import DEFAULT_MODELS
from orchestrator.serving.client import PodClient
from orchestrator.serving.server import socket_is_live
from tests.acp.client import RecordingClient, acp_agent, acp_env, command_then_done
from tests.processes import gone, wait_running


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    return acp_env(dict(os.environ), short_dir, tmp_path / "state")


def _text(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


def _current(config_options: Any) -> dict[str, str]:
    return {option.id: option.current_value for option in config_options}


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        server.responder = lambda _body: Reply(text="Hello from the fake.")
        yield server


@pytest.fixture
def served(
    env: dict[str, str], workspace: Path, short_dir: Path, api: FakeAnthropic
) -> Iterator[Path]:
    """A pod on the fake API (Sonnet 4.5 to begin with), for ``pod acp --attach``."""
    socket = short_dir / "pod" / "models.sock"
    pod_env = {**env, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--name", "models",
         "--socket", str(socket), "--provider", "anthropic", "--model", "claude-sonnet-4-5"],
        env=pod_env,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_live(socket, process)
        yield socket
    finally:
        process.terminate()
        process.wait(20)


def wait_live(socket: Path, process: subprocess.Popen[bytes]) -> None:
    import time

    deadline = time.monotonic() + 60
    while not socket_is_live(socket):
        assert process.poll() is None, "the pod exited"
        assert time.monotonic() < deadline, "the pod did not start"
        time.sleep(0.05)


async def test_the_editor_picks_model_thinking_and_effort_and_sees_changes_made_elsewhere(
    env: dict[str, str], workspace: Path, served: Path, api: FakeAnthropic
) -> None:
    client = RecordingClient()
    async with acp_agent(env, "--attach", str(served), client=client) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        assert session.config_options is not None
        assert _current(session.config_options) == {
            "model": "claude-sonnet-4-5",
            "thinking": "auto",
            "effort": "default",
        }
        [model] = [o for o in session.config_options if o.id == "model"]
        assert model.category == "model"
        assert {o.value for o in model.options} >= {spec.id for spec in DEFAULT_MODELS}
        levels = [o.category for o in session.config_options if o.id != "model"]
        assert levels == ["thought_level", "thought_level"]

        chosen = await conn.set_config_option(
            config_id="model", session_id=sid, value="claude-opus-5"
        )
        assert _current(chosen.config_options)["model"] == "claude-opus-5"
        high = await conn.set_config_option(config_id="effort", session_id=sid, value="high")
        assert _current(high.config_options) == {
            "model": "claude-opus-5", "thinking": "auto", "effort": "high"
        }  # fmt: skip
        for config_id, value, said in [
            ("model", "claude-nonexistent-9", "is not a model the provider lists"),
            ("effort", "extreme", "effort takes default, low"),
            ("temperature", "1", "no config option 'temperature'"),
        ]:
            with pytest.raises(RequestError) as refused:
                await conn.set_config_option(config_id=config_id, session_id=sid, value=value)
            assert said in str((refused.value.data or {}).get("message"))

        # Another client of the same pod changes the effort and the mode: the editor hears.
        other = await PodClient.connect(served)
        try:
            assert (await other.request("set_model", {"effort": "low"})).event == "status"
            assert (await other.request("set_mode", {"mode": "plan"})).event == "status"
        finally:
            await other.close()
        await client.until(
            lambda: any(
                _current(u.config_options)["effort"] == "low"
                for u in client.of("config_option_update")
            )
        )
        await client.until(
            lambda: [u.current_mode_id for u in client.of("current_mode_update")] == ["plan"]
        )

        done = await conn.prompt(session_id=sid, prompt=[_text("hi")])
        assert done.stop_reason == "end_turn" and "Hello from the fake." in client.text()
    [request] = [r for r in api.requests if r.path == "/v1/messages"]
    assert request.valid, request.error
    assert request.body["model"] == "claude-opus-5"
    assert request.body["output_config"]["effort"] == "low"


async def test_sessions_are_listed_resumed_and_closed(
    demo_at_once: None, env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    client = RecordingClient()
    async with acp_agent(env, client=client) as (conn, _, _):
        first = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=first.session_id, prompt=[_text("hello there")])
        assert done.stop_reason == "end_turn"
        await conn.close_session(session_id=first.session_id)
        with pytest.raises(RequestError):  # closed: the session is no longer served
            await conn.prompt(session_id=first.session_id, prompt=[_text("again")])

        listed = await conn.list_sessions(cwd=str(workspace))
        [row] = [s for s in listed.sessions if s.session_id == first.session_id]
        assert row.cwd == str(workspace) and "hello there" in (row.title or "")
        assert row.updated_at is not None

        before = len(client.updates)
        resumed = await conn.resume_session(session_id=first.session_id, cwd=str(workspace))
        assert resumed.modes is not None and resumed.config_options is not None
        # Nothing replayed (session/load would send the conversation as updates).
        replayed = [u for _, u in client.updates[before:] if u.session_update in (
            "user_message_chunk", "agent_message_chunk")]  # fmt: skip
        assert replayed == []
        again = await conn.prompt(session_id=first.session_id, prompt=[_text("and again")])
        assert again.stop_reason == "end_turn"
        # Asked again while open: answered as it is, no second pod.
        assert (await conn.resume_session(session_id=first.session_id, cwd=str(workspace))).modes

        with pytest.raises(RequestError) as unknown:
            await conn.resume_session(session_id="no-such-session", cwd=str(workspace))
        assert unknown.value.code == -32002
        with pytest.raises(RequestError):
            await conn.list_sessions(cwd="relative/path")
        # Closed before the editor leaves, so `pod acp` has no pod to stop as it exits.
        await conn.close_session(session_id=first.session_id)


async def test_closing_a_session_stops_its_running_command(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    args = command_then_done(tmp_path, "sleep 31; echo finished > after.txt")
    async with acp_agent(env, *args) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        running = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[_text("run it")])
        )
        await asyncio.to_thread(wait_running, "sleep 31", 1)
        await conn.close_session(session_id=session.session_id)
        stopped = await asyncio.wait_for(running, 30)
        assert stopped.stop_reason == "cancelled"
        assert await asyncio.to_thread(gone, "sleep 31", 30)
    assert not (workspace / "after.txt").exists()


async def test_authenticate_offers_the_api_key_and_says_when_it_is_missing(
    env: dict[str, str],
) -> None:
    from acp import PROTOCOL_VERSION

    async with acp_agent(env) as (conn, _, _):
        hello = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        raw = json.loads(hello.model_dump_json(by_alias=True))["authMethods"][0]
        assert raw["type"] == "env_var" and raw["vars"][0]["name"] == "ANTHROPIC_API_KEY"
        caps = hello.agent_capabilities.session_capabilities
        assert caps.list is not None and caps.resume is not None and caps.close is not None
        with pytest.raises(RequestError) as missing:
            await conn.authenticate(method_id="anthropic-api-key")
        assert missing.value.code == -32000  # auth_required
        assert "ANTHROPIC_API_KEY is not set" in str((missing.value.data or {}).get("message"))
        with pytest.raises(RequestError) as unknown:
            await conn.authenticate(method_id="oauth")
        assert "offered: anthropic-api-key" in str((unknown.value.data or {}).get("message"))
    keyed = {**env, "ANTHROPIC_API_KEY": "test-key"}
    async with acp_agent(keyed) as (conn, _, _):
        assert await conn.authenticate(method_id="anthropic-api-key") is not None
