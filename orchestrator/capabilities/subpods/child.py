"""One child pod as its parent sees it: its process, its connection, and what it is doing.

The child is a real pod that its parent drives as a client, over the child's own socket:
``run`` with the task's prompt, ``pause``, ``resume``, ``cancel``, ``shutdown``, and
``approve``/``deny`` for the approvals it relays up. It is a ``pod serve`` under a supervisor
that SIGKILLs it when the parent dies (even by ``kill -9``), so the child's session is cut off
mid-turn exactly like a crash, and the parent, back up, resumes that same session. When the
parent is a pod of a ``pod host``, the child is a pod of the same host instead, owned by a
control connection of its parent: the parent's death is the host's, which takes the child
with it the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.adapters.mcp.forms import FormError
from orchestrator.adapters.procs import Supervised, Supervision
from orchestrator.adapters.session import ChildRecord
from orchestrator.core.exits import exit_text
from orchestrator.errors import PodRuntimeError
from orchestrator.protocol import (
    ApprovalRequestData,
    ChildData,
    ElicitationRequestData,
    StatusData,
)
from orchestrator.protocol.filling import to_data
from orchestrator.runtime.approvals import Answer
from orchestrator.runtime.elicitations import InputAnswer
from orchestrator.serving.client import ClientError, PodClient, PodEvent
from orchestrator.serving.launch import LaunchError, start_serve_process

if TYPE_CHECKING:
    from orchestrator.serving.host import HostConnection

log = logging.getLogger(__name__)

STOP_GRACE_S = 10.0
"""A child asked to end (``shutdown``, or its supervisor's SIGTERM) has this long to close
its session before it is killed."""
PAUSE_WAIT_S = 5.0
"""How long a pause waits for a child to say it paused."""
TAIL_CHARS = 300
FORWARD_EVERY_S = 0.1
"""A child's output reaches the parent's clients in batches at most this often: a child
streams a delta every few milliseconds, and four of them would flood every client."""

ENDED = "ended"
"""The child's turn had ended already when its parent came to it (after a crash)."""

ChildSupervision = Supervision(grace_s=STOP_GRACE_S, main_first=True, kill_on_parent_death=True)

ApprovalRelay = Callable[["Child", ApprovalRequestData], Awaitable[Answer]]
InputRelay = Callable[["Child", ElicitationRequestData], Awaitable[InputAnswer]]


class ChildFailed(PodRuntimeError):
    """The child pod could not be started, refused the task, or died; the message says how."""


class Child:
    """A child pod of one ``task`` call."""

    def __init__(
        self,
        record: ChildRecord,
        *,
        socket: Path,
        log_path: Path,
        on_change: Callable[[Child], None],
    ) -> None:
        self.record = record
        self.socket = socket
        self.log_path = log_path
        self.on_change = on_change
        self.state = "queued"
        self.status = "idle"
        self.tool: str | None = None
        self.tokens = 0
        self.cost_usd: float | None = None
        self.tail = ""
        self.proc: Supervised | None = None
        self.host: HostConnection | None = None
        """The connection to the host that serves the child, when the parent's host does."""
        self._released = False
        self.client: PodClient | None = None
        self.on_text: Callable[[str], None] | None = None
        """Where the child's live output goes (the parent's call, as ``tool_output_delta``)."""
        self.on_approval: ApprovalRelay | None = None
        self.on_input: InputRelay | None = None
        """Where the child's requests for input go (the parent's clients)."""
        self._pump: asyncio.Task[None] | None = None
        self._relays: dict[str, asyncio.Task[None]] = {}
        self._unsent = ""
        self._flush: asyncio.TimerHandle | None = None
        self._run_end: asyncio.Future[str] | None = None
        self._changed = asyncio.Event()
        self.gone = asyncio.Event()
        """Set when the connection to the child closed (it stopped, or died)."""

    @property
    def name(self) -> str:
        """The child's pod name."""
        return self.record.name

    def view(self) -> ChildData:
        """The child as ``status`` and the ``child`` event show it."""
        return to_data(
            ChildData, self.record, name=self.name, state=self.state, tool=self.tool,
            tokens=self.tokens, socket=str(self.socket), tail=self.tail,
        )  # fmt: skip

    # -- starting ---------------------------------------------------------------------------

    async def launch(self, config: dict[str, Any], *, timeout_s: float) -> None:
        """Start the child with its whole configuration (in the parent's host when the
        parent is a pod of one, else as a ``pod serve``), and connect."""
        self._set(state="starting")
        try:
            if not await self._load_in_host(config, timeout_s):
                await self._start_process(config, timeout_s)
        except ChildFailed:
            self._set(state="exited")
            raise
        try:
            self.client = await PodClient.connect(self.socket)
            self._pump = asyncio.create_task(self._read(self.client), name=f"child-{self.name}")
            self._apply_status(await self.client.status())
        except (ClientError, TimeoutError) as exc:
            await self.stop()
            raise ChildFailed(f"cannot reach the child pod {self.name}: {exc}") from None

    async def _start_process(self, config: dict[str, Any], timeout_s: float) -> None:
        try:
            started = await start_serve_process(
                Path(self.record.workspace),
                socket=self.socket,
                log_path=self.log_path,
                serve_args=["--child-config-stdin"],
                supervision=ChildSupervision,
                stdin_data=json.dumps(config).encode(),
                timeout_s=timeout_s,
            )
        except LaunchError as exc:
            raise ChildFailed(f"the child pod {self.name} did not start: {exc}") from None
        self.proc = started.proc

    async def _load_in_host(self, config: dict[str, Any], timeout_s: float) -> bool:
        """Load the child into the host this process is, if it is one (False: it is not)."""
        from orchestrator.serving.host import HostConnection, HostError
        from orchestrator.serving.host.host import serving_host

        control = serving_host()
        if control is None:
            return False
        # Owned by this connection: if the parent goes without stopping it, the host does.
        params = {"config": config, "socket": str(self.socket), "owned": True}
        try:
            connection = await HostConnection.open(control)
        except HostError as exc:
            raise ChildFailed(f"the child pod {self.name} did not start: {exc}") from None
        try:
            await connection.request("load", params, timeout=timeout_s)
        except HostError as exc:
            await connection.close()
            raise ChildFailed(f"the child pod {self.name} did not start: {exc}") from None
        self.host = connection
        return True

    @property
    def started(self) -> bool:
        """Whether the child's pod was started (its process, or in the host)."""
        return self.proc is not None or self.host is not None

    @property
    def alive(self) -> bool:
        """Whether the child's process runs and its connection is open."""
        return self.client is not None and not self.gone.is_set()

    # -- driving ----------------------------------------------------------------------------

    async def run_to_end(self, prompt: str) -> str:
        """Bring the task to its end: send the prompt, resume a paused turn, or find the
        answer already given; returns how the child's run ended (``finished``, …), or
        :data:`ENDED` when it had ended before (its session says how)."""
        client = self._connected()
        status = await client.status()
        self._apply_status(status)
        if status.status == "idle" and status.turn > 0:
            return ENDED  # its turn ended before the parent could take the answer
        self._run_end = asyncio.get_running_loop().create_future()
        if status.status == "paused":
            await self._send("resume")
        elif status.status == "idle":
            await self._send("run", {"input": prompt})
        # running: it carries on by itself (someone resumed it directly).
        while True:
            await self._wait(self._run_end)
            result = self._run_end.result()
            if result != "paused":
                return result
            # Paused by someone attached to the child directly: it goes on when they resume.
            self._run_end = asyncio.get_running_loop().create_future()

    async def pause(self) -> None:
        """Pause the child's turn and wait (bounded) until it says it paused."""
        if not self.alive:
            return
        # A run or resume just sent may not have been answered with a status yet; the child
        # handles one connection's methods in order, so a pause sent now still reaches the
        # turn it started.
        sent = self._run_end is not None and not self._run_end.done()
        if not sent and self.status != "running":
            return
        with contextlib.suppress(ChildFailed):
            await self._send("pause")
            if sent and self._run_end is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._run_end), PAUSE_WAIT_S)
            else:
                await self._until(lambda: self.status != "running", PAUSE_WAIT_S)

    def drop_relays(self) -> None:
        """Withdraw the approvals and requests for input relayed up for this child (its
        parent's call let go)."""
        for relay in list(self._relays.values()):
            relay.cancel()

    async def cancel(self) -> None:
        """Cancel the child's running turn (it closes its calls truthfully) and wait until it
        did. A paused child is left as it is: a pod refuses ``cancel`` while paused
        (``not_running``), and the ``shutdown`` that follows closes its turn as cancelled."""
        if not self.alive or self.status != "running":
            return
        with contextlib.suppress(ChildFailed):
            await self._send("cancel")
            await self._until(lambda: self.status not in ("running", "paused"), PAUSE_WAIT_S)

    async def stop(self) -> None:
        """Shut the child down (its session closes cleanly) and wait for its process."""
        self.drop_relays()
        if self.alive:
            with contextlib.suppress(ChildFailed):
                await self._send("shutdown")
        if self.proc is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self.proc.process.wait()), STOP_GRACE_S)
            except TimeoutError:
                await self.proc.close()
        if self.host is not None and not self._released:
            self._released = True
            # Until the host has shut it down (the shutdown above, or now) and forgotten it.
            with contextlib.suppress(Exception):
                await self.host.request("release", timeout=STOP_GRACE_S + 30)
            await self.host.close()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        if self._pump is not None:
            self._pump.cancel()
        self._set(state="exited")

    def exit_text(self) -> str:
        """How the child's process ended, in words (for a child that died)."""
        code = self.proc.code if self.proc is not None else None
        if code is None:
            return "its connection closed"
        if code < 0:
            return f"its process was {exit_text(code)}"
        return f"its process exited with code {code}"

    # -- internals --------------------------------------------------------------------------

    def _connected(self) -> PodClient:
        if self.client is None or self.gone.is_set():
            raise ChildFailed(f"the child pod {self.name} is not running")
        return self.client

    async def _send(self, method: str, params: dict[str, Any] | None = None) -> None:
        try:
            await self._connected().send(method, params)
        except ClientError as exc:
            raise ChildFailed(f"the child pod {self.name}: {exc}") from None

    async def _wait(self, future: asyncio.Future[str]) -> None:
        """Wait for ``future``; :class:`ChildFailed` if the child goes away first."""
        gone = asyncio.ensure_future(self.gone.wait())
        waits: list[asyncio.Future[Any]] = [future, gone]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if not future.done():
            if self.proc is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.proc.exited(), 2.0)
            raise ChildFailed(f"the child pod {self.name} died: {self.exit_text()}")

    async def _until(self, check: Callable[[], bool], timeout_s: float) -> None:
        async def scan() -> None:
            while not check() and not self.gone.is_set():
                self._changed.clear()
                await self._changed.wait()

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(scan(), timeout_s)

    def _set(self, **changes: Any) -> None:
        before = (self.state, self.tool)
        for key, value in changes.items():
            setattr(self, key, value)
        self._changed.set()
        if (self.state, self.tool) != before:
            self.on_change(self)

    def _apply_status(self, status: StatusData) -> None:
        usage = status.usage
        self.tokens = sum(usage.get(k, 0) for k in TOKEN_KINDS)
        self.cost_usd = status.cost_usd
        self._set(status=status.status, state=status.state)

    async def _read(self, client: PodClient) -> None:
        try:
            async for event in client.events():
                self._handle(event)
        finally:
            self.flush_output()
            self.gone.set()
            for relay in list(self._relays.values()):
                relay.cancel()
            self._set(state="exited", tool=None)

    def _handle(self, event: PodEvent) -> None:
        data = event.data
        name = event.event
        if name == "status":
            self._apply_status(StatusData.model_validate(data))
        elif name == "tool_call_start":
            self._set(tool=data.get("name"))
            self._say(f"\n→ {data.get('name')}\n")
        elif name == "tool_result":
            self._set(tool=None)
        elif name == "text_delta":
            self._say(str(data.get("text", "")))
        elif name == "approval_request":
            request = ApprovalRequestData.model_validate(data)
            if self.on_approval is not None and request.id not in self._relays:
                task = asyncio.create_task(self._relay(self.on_approval, request))
                self._relays[request.id] = task
        elif name == "elicitation_request":
            asked = ElicitationRequestData.model_validate(data)
            if self.on_input is not None and asked.id not in self._relays:
                task = asyncio.create_task(self._relay_input(self.on_input, asked))
                self._relays[asked.id] = task
        elif name in ("approval_resolved", "elicitation_resolved"):
            relay = self._relays.pop(str(data.get("id")), None)
            if relay is not None and not relay.done():
                relay.cancel()  # answered at the child, or withdrawn there
        elif name == "run_end":
            self.flush_output()
            if self._run_end is not None and not self._run_end.done():
                self._run_end.set_result(str(data.get("result")))
        elif (
            name == "error"
            and data.get("code") in REFUSALS
            and self._run_end is not None
            and not self._run_end.done()
        ):
            # The child refused what was sent to it: the task cannot go on there.
            self.tail = str(data.get("message", ""))[-TAIL_CHARS:]
            self._run_end.set_result("errored")

    def _say(self, text: str) -> None:
        if not text:
            return
        self.tail = (self.tail + text)[-TAIL_CHARS:]
        self._unsent += text
        if self._flush is None:
            loop = asyncio.get_running_loop()
            self._flush = loop.call_later(FORWARD_EVERY_S, self.flush_output)

    def flush_output(self) -> None:
        """Pass on the output gathered since the last batch."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        text, self._unsent = self._unsent, ""
        if text and self.on_text is not None:
            self.on_text(text)

    async def _relay(self, relay: ApprovalRelay, request: ApprovalRequestData) -> None:
        try:
            answer = await relay(self, request)
        except asyncio.CancelledError:
            return  # withdrawn: the child answers nothing
        finally:
            self._relays.pop(request.id, None)
        with contextlib.suppress(ChildFailed):
            if answer.allow:
                await self._send("approve", {"id": request.id, "scope": answer.scope})
            else:
                await self._send("deny", {"id": request.id, "message": answer.message})

    async def _relay_input(self, relay: InputRelay, request: ElicitationRequestData) -> None:
        try:
            answer = await relay(self, request)
        except asyncio.CancelledError:
            return  # withdrawn: the child answers nothing
        except FormError as exc:
            # A form the parent cannot show is no better at the child: decline it there.
            answer = InputAnswer("decline")
            self.tail = f"its request for input was declined: {exc}"[-TAIL_CHARS:]
        finally:
            self._relays.pop(request.id, None)
        params: dict[str, Any] = {"id": request.id, "action": answer.action}
        if answer.content is not None:
            params["content"] = answer.content
        with contextlib.suppress(ChildFailed):
            await self._send("answer_elicitation", params)


REFUSALS = ("already_running", "not_paused", "not_running", "invalid_request", "forbidden")
"""Error codes with which a child refuses the method its parent sent."""

TOKEN_KINDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
