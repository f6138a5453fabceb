"""Requests for input through ``pod acp``: a real MCP server asks (``tests/mcp/asking_server``),
the pod makes it an ``elicitation_request``, and the editor (the ACP SDK's client side) is
asked with ``elicitation/create``, or the request is declined when it cannot show it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from tests.acp.client import FORMS, ElicitationAnswer, RecordingClient, acp_agent, acp_env

ROOT = Path(__file__).resolve().parents[2]
ASK = {"name": "mcp__a__ask_token", "input": {}}


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    return acp_env(dict(os.environ), short_dir, tmp_path / "state")


def _asking_server() -> schema.McpServerStdio:
    """The editor's MCP server ``a``: asks for a required ``token`` (and ``remember``)."""
    return schema.McpServerStdio(
        name="a",
        command=sys.executable,
        args=["-m", "tests.mcp.asking_server"],
        env=[schema.EnvVariable(name="PYTHONPATH", value=str(ROOT))],
    )


def _script(tmp_path: Path, *replies: dict[str, object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": list(replies)}))
    return str(path)


def _text(text: str) -> list[schema.TextContentBlock]:
    return [schema.TextContentBlock(type="text", text=text)]


def _results(client: RecordingClient) -> list[str]:
    """The tool results the editor was shown, without their summary line."""
    done = [u for u in client.of("tool_call_update") if u.status in ("completed", "failed")]
    return [u.content[0].content.text.split("\n", 1)[-1] for u in done]


def _thoughts(client: RecordingClient) -> list[str]:
    return [u.content.text for u in client.of("agent_thought_chunk")]


async def test_an_editor_that_shows_forms_fills_them_in_and_a_misfit_is_declined(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    answers = iter([{}, {"token": "s3cret"}])

    async def fill_in(_message: str, _mode: Any) -> ElicitationAnswer:
        return schema.AcceptElicitationResponse(action="accept", content=next(answers))

    script = _script(tmp_path, {"tool_calls": [ASK]}, {"tool_calls": [ASK]}, {"text": "done"})
    client = RecordingClient(elicit=fill_in)
    async with acp_agent(env, "--script", script, client=client, capabilities=FORMS) as (
        conn,
        _,
        _,
    ):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[_asking_server()])
        sid = session.session_id
        done = await conn.prompt(session_id=sid, prompt=_text("log in twice"))
    assert done.stop_reason == "end_turn"
    [(message, mode), _] = client.elicitations
    assert message == "Your token, please (MCP server a)"
    # Session-scoped, tied to the call the editor was shown.
    assert isinstance(mode, schema.ElicitationFormSessionMode)
    first_call = client.of("tool_call")[0].tool_call_id
    assert (mode.session_id, mode.tool_call_id) == (sid, first_call)
    assert mode.requested_schema.required == ["token"]
    assert set(mode.requested_schema.properties or {}) == {"token", "remember"}
    # An empty form does not fit the server's schema: the server is told no, and why is said.
    assert _results(client) == ["decline", "accept {'token': 's3cret', 'remember': False}"]
    [said] = [t for t in _thoughts(client) if t.startswith("[pod acp]")]
    assert said == (
        "[pod acp] declined: a asked for input ('Your token, please'); the editor's answer was "
        "refused (invalid_request: the answer does not fit the form: field 'token' is required)"
    )


async def test_an_editor_without_forms_is_not_asked_and_the_pod_does_not_wait(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    script = _script(tmp_path, {"tool_calls": [ASK]}, {"text": "done"})
    async with acp_agent(env, "--script", script) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[_asking_server()])
        # Were it left waiting, the turn would never end.
        done = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=_text("log in")), 60
        )
    assert done.stop_reason == "end_turn"
    assert client.elicitations == []
    assert _results(client) == ["decline"]
    assert (
        "[pod acp] declined: a asked for input ('Your token, please'), but this editor cannot "
        "show a form (it did not declare elicitation.form in initialize)"
    ) in _thoughts(client)


async def test_a_withdrawn_request_stops_waiting_for_the_editor_and_drops_its_late_answer(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    release = asyncio.Event()

    async def answer_late(_message: str, _mode: Any) -> ElicitationAnswer:
        await release.wait()
        return schema.AcceptElicitationResponse(action="accept", content={"token": "late"})

    script = _script(tmp_path, {"tool_calls": [ASK]}, {"text": "done"})
    client = RecordingClient(elicit=answer_late)
    log = tmp_path / "acp.log"
    options = ("--script", script, "--log-file", str(log))
    async with acp_agent(env, *options, client=client, capabilities=FORMS) as (conn, _, _):
        sid = (
            await conn.new_session(cwd=str(workspace), mcp_servers=[_asking_server()])
        ).session_id
        running = asyncio.create_task(conn.prompt(session_id=sid, prompt=_text("log in")))
        await client.until(lambda: bool(client.elicitations), timeout=60)
        await conn.cancel(session_id=sid)  # a pause withdraws the request
        assert (await running).stop_reason == "cancelled"
        over = "[pod acp] the request for input is over (withdrawn): an answer to it is dropped"
        await client.until(lambda: over in _thoughts(client))
        release.set()  # the person answers after all: nobody waits for it any more
        again = await conn.prompt(session_id=sid, prompt=_text("never mind"))
    assert again.stop_reason == "end_turn"
    assert len(client.elicitations) == 1
    assert not any("accept" in result for result in _results(client))
    # The late answer went nowhere: the pod was not sent it, so it refused nothing.
    said = log.read_text()
    assert "refused" not in said and "Traceback" not in said
