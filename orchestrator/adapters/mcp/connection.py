"""One MCP server's connection: its process or HTTP session, started, held open, stopped.

A :class:`McpConnection` is a task that holds the ``mcp`` SDK's ``Client`` open (the SDK's
scopes must be entered and left by the same task), so requests from any task go through it.
A stdio server's stderr goes to a private temporary file, whose tail names what went wrong
when the server fails (:mod:`.failures`). Closing a server closes its stdin and, if it
lingers, kills its process group (the SDK's shutdown); the supervisor it runs under
(``orchestrator/adapters/procs``) ends everything it started, ``setsid`` children included,
when it exits or the pod dies, and what outlives a killed supervisor is reported
(``survivors``). A server that stops by itself is noticed at once (the connection is
watched) and said once; :class:`~.server.McpServer` starts it again and sends it the pod's
calls.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

from mcp import Client, types
from mcp.client import Transport

from orchestrator.adapters.mcp.asking import ServerAsking
from orchestrator.adapters.mcp.client_side import Alert, ClientSettings, ClientSide
from orchestrator.adapters.mcp.failures import (
    failure_text,
    missing_command,
    missing_sandbox,
    missing_secret,
    stderr_tail,
    why_failed,
)
from orchestrator.adapters.mcp.oauth import TokenFile, stored_auth, token_path
from orchestrator.adapters.mcp.prompts import PromptListChanges, list_prompts
from orchestrator.adapters.mcp.subscriptions import ResourceSubscriptions
from orchestrator.adapters.mcp.tool_list import ToolListChanges
from orchestrator.adapters.mcp.transport import describe, first_of, open_transport, watched
from orchestrator.adapters.mcp.wire_watch import WireWatch
from orchestrator.adapters.procs import Survivor, survivors
from orchestrator.config.mcp import McpServerConfig
from orchestrator.errors import PodRuntimeError

if TYPE_CHECKING:
    from orchestrator.adapters.mcp.elicitation import PodAsker
    from orchestrator.adapters.mcp.sampling import PodSampler
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing

__all__ = ["MAX_RESTARTS", "McpConnection", "McpServerError"]

MAX_RESTARTS = 3
"""How often a server that stopped by itself is started again (at the next call of one of its
tools); after that its tools answer that it is not running until the pod restarts."""


class McpServerError(PodRuntimeError):
    """A server could not be started or listed; the message names it and says why."""


@dataclass
class McpConnection:
    """One configured server and its live connection."""

    name: str
    config: McpServerConfig
    workspace: Path
    alert: Alert
    status: str = "stopped"
    """``starting``, ``running``, ``failed: <why>`` or ``stopped``."""
    tools: list[types.Tool] = field(default_factory=list)
    _client: Client | None = None
    _task: asyncio.Task[None] | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _stderr: IO[str] | None = None
    on_tools_changed: Callable[[Self], None] | None = None
    """Told when the server's tool list changed (it said so, or it was started again)."""
    restarts: int = 0
    """Times it was started again (after it stopped by itself, or stuck after a cancel)."""
    _revivals: int = 0
    _restarting: asyncio.Lock = field(default_factory=asyncio.Lock)
    _checking: asyncio.Task[None] | None = None
    _closed: bool = False
    """Closed for good (the pod stops): nothing may start the server again."""
    records: Path | None = None
    """Where the supervisors of a stdio server keep their records (one file per start)."""
    _reports: list[Path] = field(default_factory=list)
    _watch: WireWatch | None = None
    """What the current connection's server sent, judged (see ``wire_watch``)."""
    _broken: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the current connection's server breaks the protocol."""
    _noise_said: bool = False
    sandboxing: Sandboxing | None = None
    """The pod's sandbox, which a server with ``sandbox = true`` runs in."""
    settings: ClientSettings = field(default_factory=ClientSettings)
    """What the server is told about the pod (roots) and how its requests are answered."""
    _refusal: int | None = None
    """The HTTP status with which the server last refused a request (401, 403)."""
    _asked_scope: str | None = None
    """The wider scope the person was last asked to sign in for (a step-up)."""
    has_resources: bool = False
    """The server said it has resources (``read_mcp_resource`` reads them)."""
    not_offered: dict[str, str] = field(default_factory=dict)
    """Why each of its tools that the model is not offered is not (by the name it would have)."""
    side: ClientSide = field(init=False)
    """The pod's side of the connection: the callbacks that answer the server."""

    asking: ServerAsking = field(init=False)
    """What the server asks of the pod during its calls, and who answers."""
    changes: ToolListChanges = field(init=False)
    """The changes it announces to its tool list, followed."""
    subscriptions: ResourceSubscriptions = field(init=False)
    """The resources read from it that the pod follows, and which of them changed."""
    prompts: list[types.Prompt] = field(default_factory=list)
    """Its prompts (``prompts/list``), offered as custom commands."""
    on_prompts_changed: Callable[[Self], None] | None = None
    """Told when the prompt list changed (listed anew at a start, or the server said so)."""
    prompt_changes: PromptListChanges = field(init=False)

    def __post_init__(self) -> None:
        self.asking = ServerAsking(server=self.name, alert=self.alert)
        self.changes = ToolListChanges(
            server=self.name,
            alert=self.alert,
            client=lambda: self._client,
            landed=self._landed,
            timeout_s=self.config.timeout_s,
        )
        self.subscriptions = ResourceSubscriptions(server=self.name, client=lambda: self._client)
        self.prompt_changes = PromptListChanges(
            server=self.name, client=lambda: self._client, landed=self._prompts_landed
        )
        self.side = ClientSide(
            server=self.name,
            settings=self.settings,
            alert=self.alert,
            ask_model=self.asking.ask_model if self.config.sampling == "ask" else None,
            ask_person=self.asking.ask_person,
        )

    @property
    def sampler(self) -> PodSampler | None:
        """The pod's model, lent through a person's approval (``sampling = "ask"``)."""
        return self.asking.sampler

    @sampler.setter
    def sampler(self, sampler: PodSampler | None) -> None:
        self.asking.sampler = sampler

    @property
    def asker(self) -> PodAsker | None:
        """The people at the pod's clients, asked for input (``elicitation = "ask"``)."""
        return self.asking.asker

    @asker.setter
    def asker(self, asker: PodAsker | None) -> None:
        self.asking.asker = asker

    async def start(self) -> None:
        """Connect, initialize and list the tools; raises McpServerError."""
        missing = (
            missing_command(self.config, self.workspace)
            or missing_sandbox(self.config, self.sandboxing)
            or missing_secret(self.config)
        )
        if missing is not None:
            self.status = f"failed: {missing}"
            raise McpServerError(f"MCP server {self.name} failed: {missing}")
        self.status = "starting"
        self._refusal = None
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._hold(ready), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.config.timeout_s)
        except Exception as exc:  # the SDK's errors are many; each becomes one clear message
            timed_out = isinstance(exc, TimeoutError)
            why = f"no answer within {self.config.timeout_s:g} s" if timed_out else self._why(exc)
            message = self._failure(why)
            await self._disconnect()
            self.status = f"failed: {why}"
            raise McpServerError(message) from None if timed_out else exc
        self.status = "running"

    def _transport(self) -> Transport:
        report = None
        if self.config.command is not None:
            # Kept open for the server's life and read back for failure messages.
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            if self.records is not None:
                report = self.records / f"{len(self._reports)}.json"
                self._reports.append(report)
        return open_transport(
            self.config,
            self.workspace,
            self._stderr,
            report,
            sandboxing=self.sandboxing,
            tag=f"mcp:{self.name}",
            on_refused=self._refused,
            auth=stored_auth(self.name, self.config),
        )

    def _refused(self, status: int) -> None:
        self._refusal = status

    def _why(self, exc: BaseException) -> str:
        """What went wrong, in words (how to get in, for an HTTP server that refused the pod)."""
        url = self.config.url
        signed_in = url is not None and token_path(self.name).exists()
        tokens = TokenFile.read(token_path(self.name), url) if url and signed_in else None
        wanted = tokens.wanted_scope() if tokens is not None else None
        why = why_failed(
            self.name, self.config, exc, refusal=self._refusal, signed_in=signed_in,
            wanted_scope=wanted,
        )  # fmt: skip
        if self._refusal == 403 and wanted and wanted != self._asked_scope:
            # A step-up is the person's to grant: asked of them once per scope, not the model.
            self._asked_scope = wanted
            self.alert("warn", f"MCP server {self.name}: {why}")
        return why

    def survivors(self) -> list[Survivor]:
        """Processes of this server (or ones it started) that still run though the supervisor
        meant to end them is gone: it was killed before it could."""
        return [found for report in self._reports for found in survivors(report)]

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        ended = asyncio.Event()
        broken = self._broken = asyncio.Event()
        task = asyncio.current_task()

        def breached(why: str) -> None:
            broken.set()
            if not ready.done():  # at start: fail it now, not after timeout_s
                ready.set_exception(McpServerError(f"it {why}"))
                if task is not None:
                    task.cancel()

        watch = self._watch = WireWatch(self.name, on_breach=breached, on_noise=self._noisy)
        try:
            transport = watched(self._transport(), ended, watch)
            self.side.connected()
            async with Client(
                transport, message_handler=self._on_message, **self.side.client_kwargs()
            ) as client:
                listing = await client.list_tools()
                self.tools = list(listing.tools)
                await self._list_prompts(client)  # before it counts as started
                self._client = client
                if not ready.done():
                    ready.set_result(None)
                self.has_resources = client.server_capabilities.resources is not None
                await self.subscriptions.resubscribe(client)
                async with self.changes.following(client), self.prompt_changes.following(client):
                    await first_of(self._stop.wait(), ended.wait(), broken.wait())
                if not self._stop.is_set():
                    self._client = None
                    if watch.breach is not None:
                        # Not to be trusted with the next call either: closed now, and
                        # started afresh when one of its tools is called.
                        self._stopped_by_itself(f"it broke the protocol: it {watch.breach}")
                    else:
                        # Give the process a moment to finish its last words on stderr.
                        await asyncio.sleep(0.1)
                        if not self._stop.is_set():  # not closed meanwhile by the pod
                            self._stopped_by_itself("it stopped")
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not self._stop.is_set():
                self._stopped_by_itself(f"it stopped: {describe(exc)}")
        finally:
            self._client = None
            if not ready.done():
                ready.set_exception(McpServerError("the connection closed at start"))

    async def _on_message(self, message: Any) -> None:
        """Messages no request asked for: tool-list, prompt-list and resource changes."""
        if self.prompt_changes.is_change(message):
            self.prompt_changes.changed()
            return
        await self.changes.on_message(message)
        await self.subscriptions.on_message(message)

    async def _list_prompts(self, client: Client) -> None:
        """List the prompts of a server that has them (a failure leaves none, said once)."""
        prompts: list[types.Prompt] = []
        if client.server_capabilities.prompts is not None:
            try:
                prompts = await asyncio.wait_for(list_prompts(client), self.config.timeout_s)
            except Exception as exc:
                self.alert("warn", f"MCP server {self.name}: could not list its prompts: {exc}")
        self._prompts_landed(prompts)

    def _prompts_landed(self: Self, prompts: list[types.Prompt]) -> None:
        self.prompts = prompts
        if self.on_prompts_changed is not None:
            self.on_prompts_changed(self)

    def _noisy(self) -> None:
        if self._noise_said:
            return
        self._noise_said = True
        self.alert(
            "warn",
            f"MCP server {self.name} writes non-protocol output on stdout; the pod drops it (its "
            "first lines are in the pod's log, a count in the server's stderr); a server's own "
            "messages belong on stderr",
        )

    def _landed(self: Self, tools: list[types.Tool]) -> None:
        """A new tool list (the server said it changed, or it restarted): offered."""
        self.tools = tools
        if self.on_tools_changed is not None:
            self.on_tools_changed(self)

    async def settle(self) -> None:
        """Let a tool-list change announced during a call land before the call's result does,
        so the next round offers the new list."""
        await self.changes.settle()

    def _stopped_by_itself(self, why: str) -> str:
        """Say once, with its stderr, that the server is gone; returns what went wrong."""
        failure = self._failure(why)
        if self.status.startswith("failed"):
            return failure  # said already (a failing call, or the watch on the connection)
        self._client = None
        self.status = f"failed: {why}"
        can_restart = self._revivals < MAX_RESTARTS
        self.alert(
            "error",
            failure
            + (
                "\nit is started again at the next call of one of its tools"
                if can_restart
                else f"\nit was started again {self._revivals} times already; its tools stay off "
                "until the pod restarts"
            ),
        )
        return failure

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        return stderr_tail(self._stderr)

    def _failure(self, why: str) -> str:
        return failure_text(self.name, why, self.stderr_tail())

    async def close(self) -> None:
        """Stop the server for good: no check or restart still pending may start it again
        (its stdin closes; a server that lingers is killed)."""
        self._closed = True
        pending = [
            task
            for task in (self._checking, self.changes.relisting, self.prompt_changes.relisting)
            if task is not None and task is not asyncio.current_task() and not task.done()
        ]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        await self.subscriptions.close()
        await self._disconnect()

    async def _disconnect(self) -> None:
        """End the connection and the server's process; the server may be started again."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            # wait(), not wait_for(): the caller's own cancellation must not be swallowed.
            await asyncio.wait({self._task}, timeout=10)
            if not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task}, timeout=5)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self.status = "stopped"
