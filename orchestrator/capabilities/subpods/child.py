"""One child pod as its parent sees it: its process, its connection, and what it is doing.

The child is a real pod that its parent drives as a client, over the child's own socket:
``run`` with the task's prompt, ``pause``, ``resume``, ``cancel``, ``shutdown``, and
``approve``/``deny`` for the approvals it relays up. It is a ``pod serve`` under a supervisor
that SIGKILLs it when the parent dies (even by ``kill -9``), so the child's session is cut off
mid-turn exactly like a crash, and the parent, back up, resumes that same session. When the
parent is a pod of a ``pod host``, the child is a pod of the same host instead, owned by a
control connection of its parent: the parent's death is the host's, which takes the child
with it the same way. Which of the two, and the protocol client, are the serving layer's: it
injects a :class:`~orchestrator.capabilities.subpods.launcher.ChildLauncher`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from orchestrator.adapters.mcp.forms import FormError
from orchestrator.adapters.procs.exits import exit_text
from orchestrator.adapters.session import ChildRecord
from orchestrator.capabilities.subpods.launcher import (
    ChildConnection,
    ChildEvent,
    ChildLauncher,
    ChildLinkError,
    ChildStart,
    RunningChild,
)
from orchestrator.capabilities.subpods.parent import RelayedAnswer, RelayedInput
from orchestrator.errors import PodRuntimeError
from orchestrator.protocol import (
    ApprovalRequestData,
    ChildData,
    ElicitationRequestData,
    StatusData,
)
from orchestrator.protocol.filling import to_data

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

BUDGET = "budget"
"""The child's run ended paused at its budget (the parent's remaining one)."""


ApprovalRelay = Callable[["Child", ApprovalRequestData], Awaitable[RelayedAnswer]]
InputRelay = Callable[["Child", ElicitationRequestData], Awaitable[RelayedInput]]


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
        launcher: ChildLauncher | None = None,
    ) -> None:
        self.record = record
        self.socket = socket
        self.log_path = log_path
        self.on_change = on_change
        self.launcher = launcher
        """Starts the child (the serving layer's); None: this child cannot be started."""
        self.state = "queued"
        self.status = "idle"
        self.tool: str | None = None
        self.tokens = 0
        self.cost_usd: float | None = None
        self.spent_usd = 0.0
        """What the child's session spent (its ``status.budget``), as last reported."""
        self.counted_usd: float | None = None
        """What of it the parent has counted; None until the first status (a child resumed
        from its session after a parent's crash counts only what it spends from then on:
        the parent's own session kept what it had counted)."""
        self.tail = ""
        self.running: RunningChild | None = None
        """The started child, as its launcher knows it (its process, or its pod in a host)."""
        self.client: ChildConnection | None = None
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
        parent is a pod of one, else as a ``pod serve``: the launcher's choice), and
        connect."""
        self._set(state="starting")
        if self.launcher is None:
            self._set(state="exited")
            raise ChildFailed(f"the child pod {self.name} did not start: no launcher")
        start = ChildStart(
            name=self.name,
            workspace=Path(self.record.workspace),
            socket=self.socket,
            log_path=self.log_path,
            config=config,
            timeout_s=timeout_s,
        )
        try:
            self.running = await self.launcher(start)
        except ChildLinkError as exc:
            self._set(state="exited")
            raise ChildFailed(f"the child pod {self.name} did not start: {exc}") from None
        try:
            self.client = await self.running.connect()
            self._pump = asyncio.create_task(self._read(self.client), name=f"child-{self.name}")
            self._apply_status(await self.client.status())
        except (ChildLinkError, TimeoutError) as exc:
            await self.stop()
            raise ChildFailed(f"cannot reach the child pod {self.name}: {exc}") from None

    @property
    def started(self) -> bool:
        """Whether the child's pod was started (its process, or in the host)."""
        return self.running is not None

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
                return result  # BUDGET too: the parent pauses for it
            # Paused by someone attached to the child directly: it goes on when they resume.
            self._run_end = asyncio.get_running_loop().create_future()

    def uncounted_usd(self) -> float:
        """What the child spent that its parent has not counted yet (and mark it counted)."""
        counted = self.spent_usd if self.counted_usd is None else self.counted_usd
        self.counted_usd = self.spent_usd
        return max(0.0, self.spent_usd - counted)

    async def set_budget(self, budget_usd: float | None) -> None:
        """Give the child what its parent has left (before resuming it)."""
        if self.alive:
            with contextlib.suppress(ChildFailed):
                await self._send("set_budget", {"budget_usd": budget_usd})

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
        if self.running is not None:
            await self.running.stop(STOP_GRACE_S)
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        if self._pump is not None:
            self._pump.cancel()
        self._set(state="exited")

    def exit_text(self) -> str:
        """How the child's process ended, in words (for a child that died)."""
        code = self.running.exit_code if self.running is not None else None
        if code is None:
            return "its connection closed"
        if code < 0:
            return f"its process was {exit_text(code)}"
        return f"its process exited with code {code}"

    # -- internals --------------------------------------------------------------------------

    def _connected(self) -> ChildConnection:
        if self.client is None or self.gone.is_set():
            raise ChildFailed(f"the child pod {self.name} is not running")
        return self.client

    async def _send(self, method: str, params: dict[str, Any] | None = None) -> None:
        try:
            await self._connected().send(method, params)
        except ChildLinkError as exc:
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
            if self.running is not None:
                await self.running.exited(2.0)
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
        if status.budget is not None:
            self.spent_usd = status.budget.spent_usd
            if self.counted_usd is None:
                self.counted_usd = self.spent_usd
        self._set(status=status.status, state=status.state)

    async def _read(self, client: ChildConnection) -> None:
        try:
            async for event in client.events():
                self._handle(event)
        finally:
            self.flush_output()
            self.gone.set()
            for relay in list(self._relays.values()):
                relay.cancel()
            self._set(state="exited", tool=None)

    def _handle(self, event: ChildEvent) -> None:
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
                budget = data.get("result") == "paused" and data.get("pause_reason") == "budget"
                self._run_end.set_result(BUDGET if budget else str(data.get("result")))
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
            params: dict[str, Any] = {"id": request.id, "action": "decline"}
            self.tail = f"its request for input was declined: {exc}"[-TAIL_CHARS:]
        else:
            params = {"id": request.id, "action": answer.action}
            if answer.content is not None:
                params["content"] = answer.content
        finally:
            self._relays.pop(request.id, None)
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
