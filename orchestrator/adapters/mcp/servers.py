"""The pod's MCP servers: started with the pod, their tools offered, stopped with it.

Each server is one :class:`McpServer`: a task that holds the ``mcp`` SDK's ``Client`` open
(the SDK's scopes must be entered and left by the same task), so tool calls from any task go
through it. A stdio server's stderr goes to a private temporary file, whose tail names what
went wrong when the server fails. A call the pod interrupts (pause, cancel, shutdown) is
abandoned at once; the SDK then sends the server ``notifications/cancelled``. Closing a
server closes its stdin and, if it lingers, kills its process group (the SDK's shutdown); the
supervisor it runs under (``orchestrator/adapters/procs``) ends everything it started, ``setsid``
children included, when it exits or the pod dies, and what outlives a killed supervisor is
reported (``survivors``). A server that stops
by itself is noticed at once (the connection is watched), and started again at the next
call of one of its tools, up to ``MAX_RESTARTS`` times.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from mcp import Client, types
from mcp.client import Transport
from mcp.client.auth import OAuthFlowError

from orchestrator.adapters.mcp.client_side import (
    ClientSettings,
    ClientSide,
    declined,
    progress_line,
)
from orchestrator.adapters.mcp.config import McpServerConfig, wire_name
from orchestrator.adapters.mcp.elicitation import InputDeclined, PodAsker
from orchestrator.adapters.mcp.oauth import stored_auth, token_path
from orchestrator.adapters.mcp.results import TASK_ONLY, Offer, offers, tool_output
from orchestrator.adapters.mcp.sampling import PodSampler, settle
from orchestrator.adapters.mcp.transport import describe, first_of, open_transport, watched
from orchestrator.adapters.mcp.wire_watch import WireWatch
from orchestrator.adapters.procs import Survivor, survivors
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.errors import PodRuntimeError
from orchestrator.protocol import McpServerData

if TYPE_CHECKING:
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_CALLING_TOOL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mcp_calling_tool", default=None
)
"""The tool the current task calls (set for the length of one call of :meth:`McpServer.call`)."""

Alert = Callable[[str, str], None]
"""``(level, message)``: tells people what happened to a server."""

STDERR_TAIL_LINES = 5
MAX_RESTARTS = 3
"""How often a server that stopped by itself is started again (at the next call of one of its
tools); after that its tools answer that it is not running until the pod restarts."""


class McpServerError(PodRuntimeError):
    """A server could not be started or listed; the message names it and says why."""


@dataclass
class McpServer:
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
    on_tools_changed: Callable[[McpServer], None] | None = None
    _relisting: asyncio.Task[None] | None = None
    _relist_again: bool = False
    restarts: int = 0
    """Times it was started again (after it stopped by itself, or stuck after a cancel)."""
    _revivals: int = 0
    _restarting: asyncio.Lock = field(default_factory=asyncio.Lock)
    _checking: asyncio.Task[None] | None = None
    _closed: bool = False
    """Closed for good (the pod stops): nothing may start the server again."""
    _announces_changes: bool = False
    """The server said it announces tool-list changes (``tools.listChanged``)."""
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
    has_resources: bool = False
    """The server said it has resources (``read_mcp_resource`` reads them)."""
    not_offered: dict[str, str] = field(default_factory=dict)
    """Why each of its tools that the model is not offered is not (by the name it would have)."""
    side: ClientSide = field(init=False)
    """The pod's side of the connection: the callbacks that answer the server."""

    sampler: PodSampler | None = None
    """The pod's model, lent through a person's approval (``sampling = "ask"``)."""
    _calls: int = 0
    """Requests of the pod's in flight (a sampling request is answered only during one)."""
    _asking: set[asyncio.Task[Any]] = field(default_factory=set)
    """Sampling requests and requests for input being answered; an interrupted call
    withdraws them."""
    asker: PodAsker | None = None
    """The people at the pod's clients, asked for input (``elicitation = "ask"``)."""
    _calling: list[str] = field(default_factory=list)
    """The tools of the server's being called now (a request for input that cannot tell which
    call it came during names the tool only when they are all the same)."""

    def __post_init__(self) -> None:
        self.side = ClientSide(
            server=self.name,
            settings=self.settings,
            alert=self.alert,
            ask_model=self._ask_model if self.config.sampling == "ask" else None,
            ask_person=self._ask_person,
        )

    async def _ask_model(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        # A task of its own, so that the call it belongs to can withdraw it when interrupted.
        task = asyncio.ensure_future(settle(self.sampler, self.name, params, self._calls > 0))
        self._asking.add(task)
        try:
            return await task
        finally:
            self._asking.discard(task)

    async def _ask_person(self, params: types.ElicitRequestParams) -> types.ElicitResult:
        if self.asker is None or self._calls == 0:
            where = "outside a call of its tools" if self.asker else "outside a pod"
            return self._decline_input(params, f"it came {where}, and nobody is asked there")
        tool = self._asking_tool()
        # A task of its own, so that the call it belongs to can withdraw it when interrupted.
        task = asyncio.ensure_future(self.asker.ask(self.name, params, tool))
        self._asking.add(task)
        try:
            return await task
        except InputDeclined as exc:
            return self._decline_input(params, str(exc), say=not exc.quiet)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            return types.ElicitResult(action="cancel")  # withdrawn with its call
        finally:
            self._asking.discard(task)

    def _asking_tool(self) -> str | None:
        """The tool whose call a request for input came during, by its wire name; None when
        that is not known.

        A request that rides the call's own result (``InputRequiredResult``) is answered in the
        call's task, which knows its tool. One sent on its own (older protocols) is answered
        apart from any call: with several calls of different tools in flight, it names none
        rather than the wrong one.
        """
        tool = _CALLING_TOOL.get()
        if tool is None and len(set(self._calling)) == 1:
            tool = self._calling[0]
        return wire_name(self.name, tool) if tool is not None else None

    def _decline_input(
        self, params: types.ElicitRequestParams, why: str, *, say: bool = True
    ) -> types.ElicitResult:
        reply = declined(why)
        if say:  # else said already for this burst: a flood of alerts is a flood of events
            self.alert(
                "info", f"MCP server {self.name} asked for input: {params.message!r}; {reply.why}"
            )
        return reply.result

    async def start(self) -> None:
        """Connect, initialize and list the tools; raises McpServerError."""
        missing = self._missing_command() or self._missing_sandbox()
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

    def _missing_command(self) -> str | None:
        """Why a stdio server's program cannot be run, said before it is tried (the SDK would
        only report a closed connection); None when it can be."""
        command = self.config.command
        if command is None:
            return None
        env_path = (self.config.resolved_env() or {}).get("PATH") or os.environ.get("PATH")
        cwd = Path(self.config.cwd) if self.config.cwd else self.workspace
        if os.sep in command:
            program = Path(command) if Path(command).is_absolute() else cwd / command
            if program.is_file() and os.access(program, os.X_OK):
                return None
            return f"its command {command!r} is not an executable file"
        if shutil.which(command, path=env_path) is not None:
            return None
        return f"its command {command!r} was not found on PATH; install it or give its full path"

    def _missing_sandbox(self) -> str | None:
        """Why a server to be sandboxed cannot be (it never runs unsandboxed instead)."""
        if not self.config.sandbox:
            return None
        if self.sandboxing is None:
            return "it is to run sandboxed (sandbox = true), and no sandbox was set up for it"
        if self.sandboxing.bwrap is None:
            return f"it is to run sandboxed (sandbox = true), and {self.sandboxing.unavailable}"
        return None

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
        """What went wrong, in words; an HTTP server that refused the pod says that, and how
        to get in, instead of the SDK's "an error response"."""
        signed_in = self.config.url is not None and token_path(self.name).exists()
        if self._refusal == 401 or _oauth_failure(exc):
            if signed_in:
                return (
                    "it answered 401 Unauthorized: its sign-in is no longer accepted; sign in "
                    f"again with `pod mcp login {self.name}`"
                )
            return (
                "it answered 401 Unauthorized: it needs authorization; sign in with `pod mcp "
                f"login {self.name}` (once, in a browser), or, if the server takes a token, set "
                f'headers = {{ Authorization = "Bearer ${{TOKEN}}" }} in [mcp.servers.{self.name}]'
            )
        if self._refusal == 403:
            return "it answered 403 Forbidden: the credentials in its headers are not enough"
        return describe(exc)

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
                self._client = client
                if not ready.done():
                    ready.set_result(None)
                self.has_resources = client.server_capabilities.resources is not None
                capability = client.server_capabilities.tools
                self._announces_changes = bool(capability and capability.list_changed)
                listener = (
                    asyncio.create_task(self._listen(client)) if self._announces_changes else None
                )
                try:
                    await first_of(self._stop.wait(), ended.wait(), broken.wait())
                finally:
                    if listener is not None:
                        listener.cancel()
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await listener
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

    async def _on_message(self, message: Any) -> None:
        # Servers before protocol 2026-07-28 announce changes unasked.
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            self._tools_changed()

    async def _listen(self, client: Client) -> None:
        """Subscribe to the server's tool-list changes (``subscriptions/listen``, 2026-07-28)."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                if not subscription.honored.tools_list_changed:
                    return
                async for _event in subscription:
                    self._tools_changed()
        except Exception as exc:  # an older protocol, or the stream lost with the server
            log.debug("MCP server %s: no tool-list subscription: %s", self.name, describe(exc))

    def _tools_changed(self) -> None:
        """List the tools again: one listing at a time, another if more changes came meanwhile."""
        if self._relisting is not None and not self._relisting.done():
            self._relist_again = True
            return
        self._relisting = asyncio.create_task(self._relist())

    async def _relist(self) -> None:
        while self._client is not None:
            self._relist_again = False
            try:
                listing = await self._client.list_tools(cache_mode="refresh")
            except Exception as exc:
                self.alert(
                    "warn", f"MCP server {self.name}: could not list its changed tools: {exc}"
                )
                return
            self.tools = list(listing.tools)
            if self.on_tools_changed is not None:
                self.on_tools_changed(self)
            if not self._relist_again:
                return

    async def settle(self) -> None:
        """Let a tool-list change announced during a call land before the call's result does,
        so the next round offers the new list."""
        if not self._announces_changes:
            return  # nothing to wait for on every call of a server that never announces
        # The change arrives on the wire before the result; its listener needs a few turns of
        # the loop to start the listing.
        for _ in range(10):
            await asyncio.sleep(0)
        task = self._relisting
        if task is not None and not task.done():
            with contextlib.suppress(Exception, TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), self.config.timeout_s)

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

    async def _revive(self) -> None:
        """Start again a server that stopped by itself, within MAX_RESTARTS."""
        async with self._restarting:
            if self._closed or self._client is not None or self._revivals >= MAX_RESTARTS:
                return
            if not self.status.startswith("failed"):
                return  # stopped on purpose, or never started
            self._revivals += 1
            await self._restart(f"{self._revivals} of {MAX_RESTARTS} restarts after it stopped")

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        on_progress: Callable[[str], None] | None = None,
    ) -> types.CallToolResult:
        """Call one tool; raises ToolError when the server is not there to answer, breaks the
        protocol or takes longer than ``call_timeout_s``. The call carries a progress token:
        each progress notification is passed to ``on_progress`` as a line of text."""
        answered = asyncio.Event()

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            # Progress that comes after the pod gave up on the call belongs to no result.
            if on_progress is not None and not answered.is_set():
                on_progress(progress_line(progress, total, message))

        self._calling.append(tool)
        # The call's task (and the task _request starts for it) knows its tool: a request for
        # input answered there names this call's tool, not another in flight beside it.
        naming = _CALLING_TOOL.set(tool)
        try:
            return await self._request(
                tool, lambda client: client.call_tool(tool, arguments, progress_callback=progressed)
            )
        finally:
            _CALLING_TOOL.reset(naming)
            self._calling.remove(tool)
            answered.set()

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Read one resource, with the same limits and failures as a tool call."""
        return await self._request(
            f"the resource {uri}", lambda client: client.read_resource(uri, cache_mode="bypass")
        )

    async def _request(self, what: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """Send one request (``what`` names it in messages) and wait for its answer; raises
        ToolError when the server is not there to answer, breaks the protocol or takes longer
        than ``call_timeout_s``. An interrupt tells the server to cancel it."""
        if self._client is None:
            await self._revive()
        client, watch, broken = self._client, self._watch, self._broken
        if client is None:
            raise ToolError(f"MCP server {self.name} is not running ({self.status})")
        self._refusal = None
        self._calls += 1
        # A task of its own, so that a request the server will never answer (it answered
        # another request, or nothing) can be given up on without cancelling the caller.
        calling = asyncio.ensure_future(send(client))
        calling.add_done_callback(_retrieved)
        breaking = asyncio.ensure_future(broken.wait())
        try:
            await asyncio.wait(
                {calling, breaking},
                timeout=self.config.call_timeout_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            calling.cancel()  # the SDK tells the server to cancel it
            self._withdraw()
            self._check_after_interrupt(client, what)
            raise
        finally:
            breaking.cancel()
            self._calls -= 1
        if not calling.done():
            calling.cancel()
            self._withdraw()
            if watch is not None and watch.breach is not None:
                raise ToolError(
                    f"MCP server {self.name}: {what} failed: the server {watch.breach}; "
                    "it is restarted at the next call of its tools"
                )
            self._check_after_interrupt(client, what)
            raise ToolError(
                f"MCP server {self.name}: {what} did not answer within "
                f"{self.config.call_timeout_s:g} s (call_timeout_s); the server was told to "
                "cancel it"
            )
        try:
            return calling.result()
        except Exception as exc:
            why = self._why(exc)
            if await self._alive(client):
                raise ToolError(f"MCP server {self.name}: {what} failed: {why}") from exc
            # Gone: say so once, with what it printed last; its tools stay, and answer that.
            raise ToolError(
                self._stopped_by_itself(f"it stopped during a call of {what}: {why}")
            ) from exc

    def _withdraw(self) -> None:
        """A call was given up on: nobody is asked any more for what its server wanted."""
        for asking in self._asking:
            asking.cancel()

    def _check_after_interrupt(self, client: Client, tool: str) -> None:
        # One check at a time: interrupts in a row need one look at the server, not many.
        if self._checking is None or self._checking.done():
            self._checking = asyncio.create_task(self._after_cancel(client, tool))

    async def _after_cancel(self, client: Client, tool: str) -> None:
        """A call was interrupted: give the server its grace, then make sure it answers;
        one that does not (stuck in the call it was told to cancel) is restarted."""
        await asyncio.sleep(self.config.cancel_grace_s)
        if self._client is not client or await self._alive(client):
            return
        self.alert(
            "warn",
            f"MCP server {self.name} did not answer {self.config.cancel_grace_s:g} s after a "
            f"call of {tool} was interrupted; restarting it",
        )
        async with self._restarting:
            await self._restart("")

    async def _restart(self, note: str) -> None:
        """Replace the connection and process with new ones (the caller holds the lock);
        the new tool list is offered, and people are told either way."""
        await self._disconnect()
        if self._closed:
            return
        self.restarts += 1
        try:
            await self.start()
        except McpServerError as exc:
            self.alert("error", str(exc))
            return
        if self.on_tools_changed is not None:
            self.on_tools_changed(self)
        self.alert("info", f"MCP server {self.name} restarted" + (f" ({note})" if note else ""))

    @staticmethod
    async def _alive(client: Client) -> bool:
        # A request any server answers (ping is gone from the 2026 protocol).
        try:
            await asyncio.wait_for(client.list_tools(cache_mode="bypass"), 2.0)
        except Exception:
            return False
        return True

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.flush()
            # Only the end: a chatty server may have written megabytes.
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - 4000))
            lines = self._stderr.read().strip().splitlines()
            return "\n".join(lines[-STDERR_TAIL_LINES:])
        return ""

    def _failure(self, why: str) -> str:
        tail = self.stderr_tail()
        return f"MCP server {self.name} failed: {why}" + (
            f"; its stderr ends:\n{tail}" if tail else ""
        )

    async def close(self) -> None:
        """Stop the server for good: no check or restart still pending may start it again
        (its stdin closes; a server that lingers is killed)."""
        self._closed = True
        pending = [
            task
            for task in (self._checking, self._relisting)
            if task is not None and task is not asyncio.current_task() and not task.done()
        ]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
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


def _oauth_failure(exc: BaseException) -> bool:
    """Whether the SDK's OAuth gave up (it cannot sign in again by itself in a pod)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BaseExceptionGroup):
            return any(_oauth_failure(inner) for inner in seen.exceptions)
        if isinstance(seen, OAuthFlowError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Collect the outcome of a call given up on, which nobody else will."""
    if not task.cancelled():
        task.exception()


@dataclass
class McpTool:
    """An MCP server's tool, as the pod's other tools are."""

    server: McpServer
    offer: Offer
    name: str = ""
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    side_effects: bool = True
    """Unknown effects: a write-ahead record keeps Resume from sending the call twice."""
    kind: str = "other"

    def __post_init__(self) -> None:
        tool = self.offer.tool
        self.name = self.offer.name
        self.description = (tool.description or tool.title or tool.name)[:1024] + (
            f" (MCP server {self.server.name})"
        )
        self.input_schema = dict(tool.input_schema)
        annotations = tool.annotations
        if annotations is not None and annotations.read_only_hint:
            self.side_effects = False
            self.kind = "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Call the tool on its server and map the result."""
        # Progress streams as the call's live output, as a command's output does.
        result = await self.server.call(self.offer.tool.name, args, ctx.partial.append)
        await self.server.settle()
        return tool_output(self.server.name, self.offer.tool.name, result)


@dataclass
class McpServers:
    """All of a pod's servers."""

    servers: list[McpServer]
    alert: Alert
    disabled: list[str] = field(default_factory=list)
    """Configured servers with ``enabled = false``."""
    records: Path | None = None
    """A private directory for the supervisors' records, removed at close."""

    @classmethod
    def from_config(
        cls,
        configs: dict[str, McpServerConfig],
        workspace: Path,
        alert: Alert,
        sandboxing: Sandboxing | None = None,
        settings: ClientSettings | None = None,
    ) -> McpServers:
        """The enabled servers of a config (not started yet); those with ``sandbox = true``
        run in ``sandboxing``; ``settings`` say what each is told and how it is answered
        (default: the workspace as the only root, requests for input declined)."""
        settings = settings or ClientSettings(roots=(workspace,))
        records = Path(tempfile.mkdtemp(prefix="pod-mcp-"))
        servers = [
            McpServer(
                name=name,
                config=config,
                workspace=workspace,
                alert=alert,
                sandboxing=sandboxing,
                settings=settings,
            )
            for name, config in configs.items()
            if config.enabled
        ]
        for number, server in enumerate(servers):
            server.records = records / str(number)
            server.records.mkdir()
        disabled = [name for name, config in configs.items() if not config.enabled]
        return cls(servers=servers, alert=alert, disabled=disabled, records=records)

    async def start(self) -> None:
        """Start every server at once; a failure is an alert, the others go on."""
        results = await asyncio.gather(
            *(server.start() for server in self.servers), return_exceptions=True
        )
        for result in results:
            if isinstance(result, McpServerError):
                self.alert("error", str(result))
            elif isinstance(result, BaseException):
                raise result

    def tools(self, taken: set[str], only: McpServer | None = None) -> list[McpTool]:
        """The tools to offer (of every server, or ``only`` one); a bad schema or a name
        already taken is an alert, not a tool."""
        out: list[McpTool] = []
        for server in self.servers:
            if server.status != "running" or (only is not None and server is not only):
                continue
            server.not_offered = {}
            for offer in offers(
                server.name, server.tools, allow=server.config.allow, deny=server.config.deny
            ):
                if offer.problem is None and offer.name in taken:
                    offer = Offer(
                        offer.server, offer.tool, offer.name, "another tool has that name"
                    )
                if offer.problem is not None:
                    server.not_offered[offer.name] = offer.problem
                    # A task-only tool is a known gap of the pod, not the server's fault.
                    self.alert(
                        "info" if offer.problem == TASK_ONLY else "warn",
                        f"MCP server {server.name}: tool {offer.tool.name} is not offered: "
                        f"{offer.problem}",
                    )
                    continue
                taken.add(offer.name)
                out.append(McpTool(server=server, offer=offer))
        return out

    def report(self, offered: set[str]) -> list[McpServerData]:
        """Each server as it is now; ``offered`` is the names the model is offered."""
        rows = []
        for server in self.servers:
            tools = sorted(wire_name(server.name, tool.name) for tool in server.tools)
            rows.append(
                McpServerData(
                    name=server.name,
                    status=server.status,
                    tools=tools,
                    offered=[name for name in tools if name in offered],
                    not_offered=dict(server.not_offered),
                    restarts=server.restarts,
                    survivors=[f"{s.pid} {s.command}".strip() for s in server.survivors()],
                )
            )
        rows += [McpServerData(name=name, status="disabled") for name in self.disabled]
        return rows

    async def close(self) -> None:
        """Stop every server."""
        await asyncio.gather(*(server.close() for server in self.servers))
        if self.records is not None:
            shutil.rmtree(self.records, ignore_errors=True)
