"""``bash`` in the editor's terminal: an editor (the SDK's client side) that declares
``terminal`` runs the pod's commands (real subprocesses here) while the pod's sandbox is off,
with the pod's environment and not the editor's; a pause kills the command in the editor and
it is never run again; a terminal the editor cannot create leaves the command to the pod."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, schema

from tests.acp.client import RecordingClient, acp_agent, acp_env, command_then_done

TERMINAL = schema.ClientCapabilities(terminal=True)


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    # A secret of the editor's environment: commands run by the pod must not see it.
    return {**acp_env(dict(os.environ), short_dir, tmp_path / "state"), "EDITOR_SECRET": "shh"}


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    output: list[bytes] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None


@dataclass
class TerminalEditor(RecordingClient):
    """An editor whose terminals are real processes (each in its own process group)."""

    refuse: bool = False
    created: list[list[str]] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)
    running: asyncio.Event = field(default_factory=asyncio.Event)
    terminals: dict[str, Terminal] = field(default_factory=dict)

    async def create_terminal(
        self, command: str, session_id: str, args: list[str] | None = None,
        env: Any = None, cwd: str | None = None, output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> schema.CreateTerminalResponse:  # fmt: skip
        if self.refuse:
            raise RequestError.internal_error({"message": "no terminals here"})
        argv = [command, *(args or [])]
        self.created.append(argv)
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        terminal = Terminal(process)
        terminal.reader = asyncio.create_task(self._read(terminal))
        name = f"term-{len(self.created)}"
        self.terminals[name] = terminal
        self.running.set()
        return schema.CreateTerminalResponse(terminal_id=name)

    async def _read(self, terminal: Terminal) -> None:
        assert terminal.process.stdout is not None
        while chunk := await terminal.process.stdout.read(4096):
            terminal.output.append(chunk)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader
        if code < 0:
            return schema.WaitForTerminalExitResponse(signal=signal.Signals(-code).name)
        return schema.WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        return schema.TerminalOutputResponse(
            output=b"".join(terminal.output).decode(), truncated=False
        )

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.KillTerminalResponse | None:
        self.killed.append(terminal_id)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.terminals[terminal_id].process.pid, signal.SIGKILL)
        return schema.KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.ReleaseTerminalResponse | None:
        terminal = self.terminals[terminal_id]
        if terminal.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(terminal.process.pid, signal.SIGKILL)
        return schema.ReleaseTerminalResponse()


def _results(editor: TerminalEditor) -> list[str]:
    return [
        "".join(part.content.text for part in u.content if part.type == "content")
        for u in editor.of("tool_call_update")
        if u.status in ("completed", "failed") and u.content
    ]


def _text(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


async def test_a_command_runs_in_the_editors_terminal_with_the_pods_environment(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    editor = TerminalEditor()
    args = command_then_done(tmp_path, 'echo "secret=[$EDITOR_SECRET]" && pwd')
    async with acp_agent(env, *args, client=editor, capabilities=TERMINAL) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("run it")])
        assert done.stop_reason == "end_turn"
    [argv] = editor.created
    assert argv[:2] == ["/usr/bin/env", "-i"] and argv[-3:-1] == ["/bin/bash", "-c"]
    assert not any(part.startswith("EDITOR_SECRET=") for part in argv)
    # The pod's environment is not in the command line (any user can read one): it is sourced
    # from a private file, which the command removes.
    assert not any(part.startswith("PATH=") or "\nPATH=" in part for part in argv)
    sourced = argv[-1].split(";")[1].split()[-1]
    assert sourced.endswith(".sh") and not Path(sourced).exists()
    [result] = _results(editor)
    assert "— exit 0 (in the editor's terminal)" in result
    assert "secret=[]" in result and str(workspace.resolve()) in result


async def test_a_pause_kills_the_command_in_the_editor_and_it_never_runs_again(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    editor = TerminalEditor()
    args = command_then_done(tmp_path, "sleep 30; echo finished > after.txt")
    async with acp_agent(env, *args, client=editor, capabilities=TERMINAL) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[_text("run it")]))
        await asyncio.wait_for(editor.running.wait(), 30)
        await conn.cancel(session_id=sid)  # the pod's pause
        assert (await asyncio.wait_for(running, 30)).stop_reason == "cancelled"
        [terminal] = editor.terminals.values()
        assert await asyncio.wait_for(terminal.process.wait(), 30) < 0  # killed
        done = await conn.prompt(session_id=sid, prompt=[_text("go on")])
        assert done.stop_reason == "end_turn"
    assert editor.killed and len(editor.created) == 1  # not run again
    assert not (workspace / "after.txt").exists()


async def test_a_terminal_the_editor_cannot_create_leaves_the_command_to_the_pod(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    editor = TerminalEditor(refuse=True)
    args = command_then_done(tmp_path, "echo ran-by-the-pod")
    async with acp_agent(env, *args, client=editor, capabilities=TERMINAL) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("run it")])
        assert done.stop_reason == "end_turn"
    [result] = _results(editor)
    assert "the editor's terminal could not start it" in result
    assert "the pod ran it itself" in result and "ran-by-the-pod" in result


async def test_with_the_sandbox_on_commands_stay_in_the_pods_sandbox(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    from orchestrator.adapters.sandbox.bwrap import SandboxUnavailable, find_bwrap

    try:
        find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.write_text('[sandbox]\nmode = "on"\n\n[host]\nidle_exit_s = 0\n')
    editor = TerminalEditor()
    args = command_then_done(tmp_path, "echo ran-in-the-sandbox")
    async with acp_agent(env, *args, client=editor, capabilities=TERMINAL) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("run it")])
        assert done.stop_reason == "end_turn"
    assert editor.created == []  # the editor's terminal would run it outside the sandbox
    [result] = _results(editor)
    assert "ran-in-the-sandbox" in result and "editor's terminal" not in result
