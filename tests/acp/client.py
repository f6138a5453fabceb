"""An ACP client for tests, on the SDK's own client side: it records updates and answers
permission requests as the test says."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, schema
from acp.stdio import spawn_agent_process

from tests.processes import wait_running

Answer = Callable[[schema.ToolCallUpdate], str | None]
"""Picks the option id for a permission request; None cancels the request."""

ElicitationAnswer = (
    schema.AcceptElicitationResponse
    | schema.DeclineElicitationResponse
    | schema.CancelElicitationResponse
)
Elicit = Callable[[str, Any], Awaitable[ElicitationAnswer]]
"""Answers a request for input (its message and mode), as the person at the editor would."""


async def _decline(_message: str, _mode: Any) -> ElicitationAnswer:
    return schema.DeclineElicitationResponse(action="decline")


FORMS = schema.ClientCapabilities(
    elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
)
"""An editor that shows forms (elicitation, form mode)."""


@dataclass
class RecordingClient:
    """The editor's side: every ``session/update`` kept in order, permissions answered."""

    answer: Answer = lambda _call: "once"
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permissions: list[schema.ToolCallUpdate] = field(default_factory=list)
    elicit: Elicit = _decline
    elicitations: list[tuple[str, Any]] = field(default_factory=list)
    """The requests for input shown: (message, mode)."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def request_permission(
        self, session_id: str, tool_call: schema.ToolCallUpdate, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.permissions.append(tool_call)
        choice = self.answer(tool_call)
        outcome: Any = (
            schema.DeniedOutcome(outcome="cancelled")
            if choice is None
            else schema.AllowedOutcome(outcome="selected", option_id=choice)
        )
        return schema.RequestPermissionResponse(outcome=outcome)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> ElicitationAnswer:
        self.elicitations.append((message, mode))
        self.changed.set()
        return await self.elicit(message, mode)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def of(self, kind: str) -> list[Any]:
        """The updates of one ``session_update`` kind."""
        return [u for _, u in self.updates if u.session_update == kind]

    def text(self) -> str:
        """Everything the agent said, joined (a link as ``<uri>``)."""
        return "".join(
            u.content.text if u.content.type == "text" else f"<{u.content.uri}>"
            for u in self.of("agent_message_chunk")
        )

    async def until(self, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
        """Wait for updates that make ``predicate`` true."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


@contextlib.asynccontextmanager
async def acp_agent(
    env: dict[str, str],
    *args: str,
    client: RecordingClient | None = None,
    capabilities: schema.ClientCapabilities | None = None,
) -> AsyncIterator[tuple[Any, RecordingClient, asyncio.subprocess.Process]]:
    """``pod acp ARGS`` as a subprocess, initialized (declaring ``capabilities``), with the
    recording client attached."""
    recorder = client or RecordingClient()
    # Elicitation is unstable in the SDK: without the flag its client side refuses it.
    async with spawn_agent_process(
        recorder,
        sys.executable,
        "-m",
        "cli",
        "acp",
        *args,
        env=env,
        cwd=os.getcwd(),
        use_unstable_protocol=True,
    ) as (conn, process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
        yield conn, recorder, process


def acp_env(base: dict[str, str], runtime: Path, state: Path) -> dict[str, str]:
    """A private environment: no API key, its own runtime and state dirs."""
    env = {k: v for k, v in base.items() if not k.startswith("ANTHROPIC_")}
    env.update(XDG_RUNTIME_DIR=str(runtime), XDG_STATE_HOME=str(state))
    return env


def command_then_done(tmp_path: Path, command: str) -> tuple[str, ...]:
    """``pod acp`` options for a scripted pod that runs ``command`` with bash at its first
    prompt, then says ``done``."""
    script = tmp_path / "script.json"
    bash = {"name": "bash", "input": {"command": command}}
    script.write_text(json.dumps({"replies": [{"tool_calls": [bash]}, {"text": "done"}]}))
    return ("--provider", "scripted", "--script", str(script), "--allow-bash")


async def start_two_and_run(conn: Any, workspace: Path, seconds: int) -> asyncio.Future[Any]:
    """Open two sessions, prompt the first, and wait until its command (``sleep seconds``,
    with a ``setsid sleep seconds+1`` beside it) runs; the prompt in flight."""
    sessions = [await conn.new_session(cwd=str(workspace), mcp_servers=[]) for _ in "ab"]
    prompt = [schema.TextContentBlock(type="text", text="run it")]
    running = asyncio.ensure_future(conn.prompt(session_id=sessions[0].session_id, prompt=prompt))
    # In a thread: the prompt goes out on this event loop meanwhile.
    await asyncio.to_thread(wait_running, f"sleep {seconds}", 1)
    await asyncio.to_thread(wait_running, f"sleep {seconds + 1}", 1)
    return running


async def stop_with(
    process: asyncio.subprocess.Process, signum: int, running: asyncio.Future[Any]
) -> int | None:
    """Send ``pod acp`` a signal, wait for it to exit, drop the prompt in flight; its exit
    code."""
    process.send_signal(signum)
    await asyncio.wait_for(process.wait(), 30)
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError, ConnectionError):
        await running
    return process.returncode
