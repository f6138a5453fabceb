"""``pod acp`` driven by the ACP SDK's own client, as an editor drives it."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError, schema

from orchestrator.adapters.session import load_session
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from tests.acp.client import RecordingClient, acp_agent, acp_env


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    return acp_env(dict(os.environ), short_dir, tmp_path / "state")


async def _refused(call: Awaitable[object]) -> str:
    """The message of the JSON-RPC error a call is answered with."""
    with pytest.raises(RequestError) as refused:
        await call
    return str((refused.value.data or {}).get("message"))


def _text(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


async def test_a_prompt_streams_the_answer_and_ends_the_turn(
    env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(env, "--provider", "scripted") as (conn, client, _):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.load_session is True
        assert init.agent_capabilities.prompt_capabilities.embedded_context is True
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("hello there")])
        assert done.stop_reason == "end_turn"
        assert "hello there" in client.text()
        [commands] = client.of("available_commands_update")
        assert {c.name for c in commands.available_commands} == {
            "cancel",
            "status",
            "compact",
            "rewind",
            "fork",
        }


def _script(tmp_path: Path, *replies: dict[str, object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": list(replies)}))
    return str(path)


WRITE = {"name": "write_file", "input": {"path": "notes.md", "content": "new text\n"}}


@pytest.mark.parametrize(("choice", "written"), [("once", True), ("deny", False)])
async def test_an_edit_asks_the_editor_and_obeys_its_answer(
    env: dict[str, str], workspace: Path, tmp_path: Path, choice: str, written: bool
) -> None:
    (workspace / "notes.md").write_text("old text\n")
    script = _script(tmp_path, {"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Done."})
    client = RecordingClient(answer=lambda _call: choice)
    async with acp_agent(env, "--script", script, client=client) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("write it")])
        assert done.stop_reason == "end_turn"
    [asked] = client.permissions
    assert asked.kind == "edit" and "notes.md" in (asked.title or "")
    [diff] = [c for c in asked.content or [] if c.type == "diff"]
    assert (diff.old_text, diff.new_text) == ("old text\n", "new text\n")
    assert (workspace / "notes.md").read_text() == ("new text\n" if written else "old text\n")
    [call] = client.of("tool_call")
    assert (call.kind, call.status) == ("edit", "pending")
    assert call.locations[0].path == str(workspace / "notes.md")
    statuses = [u.status for u in client.of("tool_call_update")]
    # Allowed, it is shown running, then done; denied, it never runs.
    assert statuses == (["in_progress", "completed"] if written else ["failed"])
    [*_, result] = client.of("tool_call_update")
    if not written:
        assert "denied by user: denied in the editor" in result.content[0].content.text


async def test_cancel_pauses_mid_stream_and_the_next_prompt_closes_the_turn(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    script = _script(
        tmp_path,
        {"text": "x" * 400, "chunk_size": 4, "chunk_delay_s": 0.02},
        {"text": "Fresh answer."},
    )
    async with acp_agent(env, "--script", script) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        pending = asyncio.create_task(conn.prompt(session_id=sid, prompt=[_text("stream")]))
        await client.until(lambda: len(client.of("agent_message_chunk")) >= 3)
        await conn.cancel(session_id=sid)
        assert (await pending).stop_reason == "cancelled"
        again = await conn.prompt(session_id=sid, prompt=[_text("something else")])
        assert again.stop_reason == "end_turn" and client.text().endswith("Fresh answer.")
    # The session the editor left is complete and wire-valid, the interrupted turn closed.
    [path] = (Path(env["XDG_STATE_HOME"]) / "pod").rglob(f"{sid}.jsonl")
    loaded = load_session(path)
    assert not loaded.cut_off
    assert validate_wire(to_wire(loaded.items), allow_prefill=True) == []  # ends answered
    texts = [i.text for i in loaded.items if i.kind == "system_message"]
    assert any("interrupted by the user" in t for t in texts)


async def test_slash_cancel_stops_a_running_prompt_and_says_so_truthfully(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    slow = {"text": "x" * 400, "chunk_size": 4, "chunk_delay_s": 0.02}
    script = _script(tmp_path, slow, slow)
    async with acp_agent(env, "--script", script) as (conn, client, _):
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        # /cancel is the one prompt an editor can send while another runs: the hard cancel.
        pending = asyncio.create_task(conn.prompt(session_id=sid, prompt=[_text("stream")]))
        await client.until(lambda: len(client.of("agent_message_chunk")) >= 3)
        done = await conn.prompt(session_id=sid, prompt=[_text("/cancel")])
        assert done.stop_reason == "end_turn"
        assert (await pending).stop_reason == "cancelled"
        assert client.text().endswith("Cancelled the turn.")
        await conn.prompt(session_id=sid, prompt=[_text("/status")])
        assert "idle" in client.text().rsplit("Cancelled the turn.", 1)[1]
        # A paused turn cannot be cancelled (the pod refuses): /cancel must not claim it was.
        streamed = len(client.of("agent_message_chunk"))
        pending = asyncio.create_task(conn.prompt(session_id=sid, prompt=[_text("again")]))
        await client.until(lambda: len(client.of("agent_message_chunk")) >= streamed + 3)
        await conn.cancel(session_id=sid)
        assert (await pending).stop_reason == "cancelled"
        before = client.text()
        await conn.prompt(session_id=sid, prompt=[_text("/cancel")])
        said = client.text()[len(before) :]
        assert "Cancelled the turn." not in said and "paused" in said


async def test_an_earlier_session_loads_as_updates(
    demo_at_once: None, env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(env, "--provider", "scripted") as (conn, _, _):
        first = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=first.session_id, prompt=[_text("remember the owl")])
    async with acp_agent(env, "--provider", "scripted") as (conn, client, _):
        await conn.load_session(cwd=str(workspace), session_id=first.session_id, mcp_servers=[])
        [user] = client.of("user_message_chunk")
        assert user.content.text == "remember the owl"
        assert "remember the owl" in client.text()  # the demo's answer, replayed
        more = await conn.prompt(session_id=first.session_id, prompt=[_text("and now?")])
        assert more.stop_reason == "end_turn"
        with pytest.raises(RequestError):
            await conn.load_session(cwd=str(workspace), session_id="no-such", mcp_servers=[])


async def test_bad_input_gets_errors_and_the_agent_keeps_serving(
    demo_at_once: None, env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    script = _script(tmp_path, {"text": "y" * 200, "chunk_size": 2, "chunk_delay_s": 0.02})
    async with acp_agent(env, "--script", script) as (conn, client, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        unknown = await _refused(conn.prompt(session_id="nope", prompt=[_text("hi")]))
        assert unknown == "unknown session 'nope'"
        image = schema.ImageContentBlock(type="image", data="iVBO", mime_type="image/png")
        refused = await _refused(conn.prompt(session_id=sid, prompt=[image]))
        assert refused.startswith("prompt block 1: image blocks are not supported")
        running = asyncio.create_task(conn.prompt(session_id=sid, prompt=[_text("go")]))
        await client.until(lambda: len(client.of("agent_message_chunk")) >= 2)
        again = await _refused(conn.prompt(session_id=sid, prompt=[_text("again")]))
        assert again == "a prompt is already running in this session"
        seen: list[dict[str, object]] = []
        conn._conn.add_observer(lambda event: seen.append(event.message))
        assert process.stdin is not None
        # A line that is not JSON has no id to answer; the SDK logs it and reads on. Requests
        # that are JSON but not a valid call are answered with the JSON-RPC error codes.
        process.stdin.write(b"{this is not json\n")
        unknown_method = {"jsonrpc": "2.0", "id": 9001, "method": "session/dance", "params": {}}
        missing_field = {"jsonrpc": "2.0", "id": 9002, "method": "session/prompt", "params": {}}
        for request in (unknown_method, missing_field):
            process.stdin.write(json.dumps(request).encode() + b"\n")
        await process.stdin.drain()
        await client.until(lambda: len([m for m in seen if m.get("id") in (9001, 9002)]) == 2)
        codes = {m["id"]: m["error"]["code"] for m in seen if m.get("id") in (9001, 9002)}  # type: ignore[index]
        assert codes == {9001: -32601, 9002: -32602}
        assert (await running).stop_reason == "end_turn"
        after = await conn.prompt(session_id=sid, prompt=[_text("still there?")])
        assert after.stop_reason == "end_turn"
        assert process.returncode is None


async def test_a_failed_turn_is_an_internal_error_with_the_pods_message(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    broken = {"text": "This breaks", "error": "the connection dropped", "error_kind": "stream"}
    script = _script(tmp_path, broken, {"text": "Back."})
    async with acp_agent(env, "--script", script) as (conn, client, _):
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as failed:
            await conn.prompt(session_id=sid, prompt=[_text("hi")])
        assert failed.value.code == -32603
        assert "the connection dropped" in str(failed.value.data)
        # The session goes on: the next prompt is a new turn on a valid history.
        again = await conn.prompt(session_id=sid, prompt=[_text("again")])
        assert again.stop_reason == "end_turn" and client.text().endswith("Back.")


async def test_on_the_messages_api_a_denied_command_reaches_the_model_truthfully(
    env: dict[str, str], workspace: Path
) -> None:
    from conformance.fake_api import FakeAnthropic, Reply, ToolCall

    with FakeAnthropic() as api:
        api.push(
            Reply(text="Let me check.", tool_calls=[ToolCall("bash", {"command": "rm -rf build"})]),
            Reply(text="Understood, I will not."),
        )
        env = {**env, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
        client = RecordingClient(answer=lambda _call: "deny")
        async with acp_agent(
            env, "--provider", "anthropic", "--model", "fake-model", client=client
        ) as (conn, _, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[_text("clean up")])
            assert done.stop_reason == "end_turn"
        requests = api.requests
    assert [r.valid for r in requests] == [True, True]
    [asked] = client.permissions
    assert asked.kind == "execute" and "rm -rf build" in (asked.title or "")
    last_user = requests[1].body["messages"][-1]
    [result] = [b for b in last_user["content"] if b["type"] == "tool_result"]
    assert result["is_error"] is True
    assert "denied by user: denied in the editor" in json.dumps(result["content"])
    assert client.text().endswith("Understood, I will not.")


async def test_attach_drives_a_pod_that_already_runs(
    demo_at_once: None, env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    import subprocess
    import sys

    from orchestrator.serving.server import socket_is_live

    socket = short_dir / "pod" / "running.sock"
    served = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--name", "running",
         "--socket", str(socket), "--provider", "scripted"],
        env=env,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(400):
            if socket_is_live(socket):
                break
            await asyncio.sleep(0.05)
        async with acp_agent(env, "--attach", str(socket)) as (conn, client, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            info = json.loads(socket.with_suffix(".json").read_text())
            assert session.session_id == Path(info["session"]).stem
            done = await conn.prompt(session_id=session.session_id, prompt=[_text("hi pod")])
            assert done.stop_reason == "end_turn" and "hi pod" in client.text()
        # The editor left; the pod it attached to keeps running.
        assert served.poll() is None and socket_is_live(socket)
    finally:
        served.terminate()
        served.wait(20)


async def test_the_editors_mcp_servers_are_the_pods(env: dict[str, str], workspace: Path) -> None:
    import sys

    from conformance.fake_api import FakeAnthropic, Reply, ToolCall

    time_server = schema.McpServerStdio(
        name="time", command=sys.executable, args=["-m", "mcp_server_time"], env=[]
    )
    with FakeAnthropic() as api:
        api.push(
            Reply(tool_calls=[ToolCall("mcp__time__get_current_time", {"timezone": "UTC"})]),
            Reply(text="Noted."),
        )
        env = {**env, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
        async with acp_agent(env, "--provider", "anthropic", "--model", "fake-model") as (
            conn,
            client,
            _,
        ):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[time_server])
            done = await conn.prompt(session_id=session.session_id, prompt=[_text("time?")])
            assert done.stop_reason == "end_turn"
        requests = api.requests
    assert "mcp__time__get_current_time" in {t["name"] for t in requests[0].body["tools"]}
    # The time server marks its tools read-only, so they run without asking, as reads do.
    assert client.permissions == []
    [*_, result] = client.of("tool_call_update")
    assert result.status == "completed" and "UTC" in result.content[0].content.text


async def test_the_editors_mcp_secrets_never_reach_a_command_line(
    demo_at_once: None, env: dict[str, str], workspace: Path
) -> None:
    import sys

    env_secret = "editor-env-secret-do-not-leak-1"
    header_secret = "editor-header-secret-do-not-leak-2"
    servers: list[object] = [
        schema.McpServerStdio(
            name="time",
            command=sys.executable,
            args=["-m", "mcp_server_time"],
            env=[schema.EnvVariable(name="TIME_API_TOKEN", value=env_secret)],
        ),
        schema.HttpMcpServer(
            type="http",
            name="web",
            url="http://127.0.0.1:9/mcp",
            headers=[schema.HttpHeader(name="Authorization", value=f"Bearer {header_secret}")],
        ),
    ]
    async with acp_agent(env, "--provider", "scripted") as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=servers)  # type: ignore[arg-type]
        # Every process of this user can read every other's /proc/PID/cmdline.
        lines = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
                except OSError:
                    continue
        served = [line for line in lines if " serve " in line and str(workspace) in line]
        assert served, "the session's pod was not found"
        for line in lines:
            assert env_secret not in line and header_secret not in line, line
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("hi")])
        assert done.stop_reason == "end_turn"


async def test_slash_rewind_lists_rewinds_and_fork_makes_a_session(
    demo_at_once: None, env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(env, "--provider", "scripted") as (conn, client, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        for text in ("first ask", "second ask"):
            assert (await conn.prompt(session_id=sid, prompt=[_text(text)])).stop_reason == (
                "end_turn"
            )
        said = len(client.text())
        await conn.prompt(session_id=sid, prompt=[_text("/rewind")])
        listing = client.text()[said:]
        assert "Prompts to rewind to (/rewind N):" in listing
        rows = [line for line in listing.splitlines() if line[:1].isdigit()]
        assert [row.split(": ", 1)[1] for row in rows] == ["first ask", "second ask"]
        second = int(rows[1].split(":")[0])
        said = len(client.text())
        await conn.prompt(session_id=sid, prompt=[_text(f"/rewind {second} conversation")])
        assert client.text()[said:].startswith(f"Rewound to before prompt {second}.")
        said = len(client.text())
        await conn.prompt(session_id=sid, prompt=[_text("/rewind 999 conversation")])
        assert client.text()[said:].startswith("Not rewound: cannot rewind to 999")
        said = len(client.text())
        await conn.prompt(session_id=sid, prompt=[_text("/fork other idea")])
        forked = client.text()[said:]
        assert forked.startswith("Forked: session ")
        path = Path(forked.split("(", 1)[1].rstrip(")"))
    loaded = load_session(path)
    assert loaded.title == "other idea"
    assert [i.kind for i in loaded.items] == ["user_message", "assistant"]


async def test_session_fork_opens_the_conversation_in_a_pod_of_its_own(
    demo_at_once: None, env: dict[str, str], workspace: Path
) -> None:
    async with acp_agent(env, "--provider", "scripted") as (conn, _client, _):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.session_capabilities.fork is not None
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[_text("the first idea")])
        try:
            forked = await conn.fork_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        except RequestError as e:
            raise AssertionError(e.data) from e
        assert forked.session_id != sid
        done = await conn.prompt(session_id=forked.session_id, prompt=[_text("another way")])
        assert done.stop_reason == "end_turn"
        await conn.prompt(session_id=sid, prompt=[_text("the original goes on")])
    state = Path(env["XDG_STATE_HOME"])
    [fork_file] = list(state.rglob(f"{forked.session_id}.jsonl"))
    [original] = list(state.rglob(f"{sid}.jsonl"))
    texts = lambda path: [i.text for i in load_session(path).items if i.kind == "user_message"]  # noqa: E731
    assert texts(fork_file) == ["the first idea", "another way"]
    assert texts(original) == ["the first idea", "the original goes on"]


async def test_session_fork_in_another_folder_is_a_session_of_that_folder(
    demo_at_once: None, env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with acp_agent(env, "--provider", "scripted") as (conn, _client, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=[_text("the first idea")])
        forked = await conn.fork_session(session_id=sid, cwd=str(other), mcp_servers=[])
        await conn.prompt(session_id=forked.session_id, prompt=[_text("over there")])
    # At once, the fork starts within the second its origin did: its name (the editor's
    # session id) is still its own, not the origin's.
    assert forked.session_id != sid
    [fork_file] = list(Path(env["XDG_STATE_HOME"]).rglob(f"{forked.session_id}.jsonl"))
    # Stored with the other folder's sessions, where `pod sessions ls` there looks.
    assert fork_file.parent.name.startswith("other-")
    assert load_session(fork_file).header.workspace == str(other.resolve())


async def test_two_folders_sessions_of_one_name_are_never_open_as_one(
    demo_at_once: None, env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    """Sessions named before names were unique across folders may share one: the second to
    open is refused, and the first keeps its session id (its prompts reach its own pod).
    (A new session or a fork never shares a name: ``new_session_path``; the agent refuses
    one that would all the same, as it refuses this load.)"""
    other = tmp_path / "other"
    other.mkdir()
    async with acp_agent(env, "--provider", "scripted") as (conn, _, _):
        mine = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=mine, prompt=[_text("in the workspace")])
        theirs = (await conn.new_session(cwd=str(other), mcp_servers=[])).session_id
        await conn.prompt(session_id=theirs, prompt=[_text("in the other folder")])
    state = Path(env["XDG_STATE_HOME"])
    [their_file] = list(state.rglob(f"{theirs}.jsonl"))
    their_file.rename(their_file.with_name(f"{mine}.jsonl"))  # as an old pod could have named it
    async with acp_agent(env, "--provider", "scripted") as (conn, _, _):
        await conn.load_session(cwd=str(workspace), session_id=mine, mcp_servers=[])
        refused = await _refused(conn.load_session(cwd=str(other), session_id=mine, mcp_servers=[]))
        assert refused == f"session {mine} is open"
        more = await conn.prompt(session_id=mine, prompt=[_text("still here?")])
        assert more.stop_reason == "end_turn"
    [kept] = [p for p in state.rglob(f"{mine}.jsonl") if p.parent != their_file.parent]
    assert "still here?" in kept.read_text()
    assert "still here?" not in their_file.with_name(f"{mine}.jsonl").read_text()
