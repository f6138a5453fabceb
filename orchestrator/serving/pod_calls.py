"""The SDK's calls, written once over any :class:`~orchestrator.serving.transport.Transport`.

:class:`PodCalls` is what :class:`~orchestrator.serving.client.PodClient` (a Unix socket) and
:class:`~orchestrator.serving.sdk.http.HttpPodClient` (the HTTP API) have in common:
:meth:`PodCalls.run` streams one run's typed events to its ``run_end``, and the other methods
are the protocol's, their refusals raised as
:class:`~orchestrator.serving.client_errors.PodRequestError` (one class per code). docs/sdk.md.

``run`` expects to be the one starting runs on the pod while it iterates (the usual script):
events already waiting when it is called belong to what came before and are dropped, and the
run ends at the first ``run_end`` that follows. Another client starting a run meanwhile gets
``already_running``; one that starts a run in the instant the previous ends may have its
``run_end`` taken for this one's.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, Self, TypeVar

from pydantic import BaseModel

from orchestrator.core.segments import Segment
from orchestrator.protocol import (
    CommandsData,
    HistoryData,
    ModelsData,
    RewindData,
    StatsData,
    StatusData,
)
from orchestrator.serving.client_errors import (
    ClientError,
    Duplicate,
    PodRequestError,
    request_error,
)
from orchestrator.serving.client_events import PodEvent
from orchestrator.serving.transport import REPLYING_METHODS, Transport
from states.queries import AT_REST

__all__ = ["RECONNECTS", "PodCalls"]

RECONNECTS = 5
"""How many times in a row a run connects again when its connection drops with no event in
between (a server that drops every connection is not tried forever)."""


class PodCalls:
    """The protocol's methods as calls, for a class that is also a :class:`Transport`."""

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0
    ) -> PodEvent | None:
        """Any method: its direct reply, or None once a method without one was taken;
        a refusal raises its code's :class:`PodRequestError`."""
        transport = self._transport()
        if method in REPLYING_METHODS or (method == "rewind" and (params or {}).get("dry_run")):
            reply = await transport.request(method, params, timeout=timeout)
            if reply.event == "error":
                raise request_error(str(reply.data.get("code")), str(reply.data.get("message")))
            return reply
        await transport.accepted(method, params, timeout=timeout)
        return None

    async def run(
        self,
        text: str | None = None,
        *,
        segments: Sequence[Segment | dict[str, Any]] | None = None,
        request_id: str | None = None,
    ) -> AsyncIterator[PodEvent]:
        """Start a run with ``text`` (or ``segments``) and yield its events, typed
        (``event.payload``), through its ``run_end`` (``payload.result``: finished, paused,
        cancelled…); a refused run raises before any event (``AlreadyRunning``…).

        A dropped connection is connected again and the run goes on from the last event
        delivered (each event once); one that broke as the run was sent is connected again and
        the run sent again under the same ``request_id`` (made up when not given), which the
        pod takes once: a ``duplicate`` answer means the first one was taken."""
        transport = self._transport()
        params: dict[str, Any] = {"request_id": request_id or str(uuid.uuid4())}
        if segments is not None:
            params["segments"] = [_plain(s) for s in segments]
        if text is not None:
            params["input"] = text
        transport.ready_events()  # what came before this run
        try:
            await self.call("run", params)
        except PodRequestError:
            raise
        except ClientError:  # the connection broke: was the run taken? Ask again, by its id
            await transport.reconnect()
            with contextlib.suppress(Duplicate):  # it was
                await self.call("run", params)
        dropped = 0  # connections in a row that ended before an event came
        while True:
            event = await transport.next_event()
            if event is None:
                dropped += 1
                if dropped > RECONNECTS:
                    raise ClientError(f"the connection dropped {dropped} times in a row")
                await transport.reconnect()
                if transport.last_eid is None and (await self.status()).state in AT_REST:
                    return  # dropped before its first event, with no id to catch up from: over
                continue
            dropped = 0
            yield event
            if event.event == "run_end":
                return
            if event.event == "resync" and (await self.status()).state in AT_REST:
                return  # the pod restarted or the events are gone: this run is over

    async def status(self, *, timeout: float = 10.0) -> StatusData:
        """``get_status``, typed."""
        return _expect(await self.call("get_status", timeout=timeout), StatusData)

    async def history(self, *, timeout: float = 30.0) -> HistoryData:
        """``get_history``, typed."""
        return _expect(await self.call("get_history", timeout=timeout), HistoryData)

    async def models(self, *, timeout: float = 30.0) -> ModelsData:
        """``list_models``, typed (the provider may be asked over the network)."""
        return _expect(await self.call("list_models", timeout=timeout), ModelsData)

    async def commands(self, *, timeout: float = 10.0) -> CommandsData:
        """``list_commands``, typed: the custom slash commands the pod offers."""
        return _expect(await self.call("list_commands", timeout=timeout), CommandsData)

    async def stats(self, *, timeout: float = 10.0) -> StatsData:
        """``get_stats``, typed: per-turn usage and seconds by lifecycle state."""
        return _expect(await self.call("get_stats", timeout=timeout), StatsData)

    async def pause(self) -> None:
        """Pause the running turn (``NotRunning`` when idle; a no-op when paused)."""
        await self.call("pause")

    async def resume(self) -> None:
        """Resume the paused turn (``NotPaused`` otherwise); :meth:`follow` its events."""
        await self.call("resume")

    async def cancel(self) -> None:
        """Cancel the running or paused turn (``NotRunning`` when idle)."""
        await self.call("cancel")

    async def shutdown(self) -> None:
        """Stop the pod (it exits; a host's pod is unloaded for good)."""
        try:
            await self.call("shutdown")
        except PodRequestError:
            raise
        except ClientError:
            pass  # it went away before answering what followed: that is what was asked

    async def approve(
        self, id: str, scope: Literal["once", "session"] = "once", *, mode: str | None = None
    ) -> None:
        """Approve the waiting call ``id`` (an ``approval_request``'s), once or for the session;
        ``mode``: the mode to work in after a plan."""
        params: dict[str, Any] = {"id": id, "scope": scope}
        if mode is not None:
            params["mode"] = mode
        await self.call("approve", params)

    async def deny(self, id: str, message: str = "") -> None:
        """Deny the waiting call ``id``; the model reads ``denied by user: <message>``."""
        await self.call("deny", {"id": id, "message": message})

    async def answer(
        self,
        id: str,
        action: Literal["accept", "decline", "cancel"] = "accept",
        content: dict[str, Any] | None = None,
    ) -> None:
        """Answer an ``elicitation_request`` (a form's fields in ``content``)."""
        params: dict[str, Any] = {"id": id, "action": action}
        if content is not None:
            params["content"] = content
        await self.call("answer_elicitation", params)

    async def rewind(
        self,
        to: int | None = None,
        restore: Literal["both", "conversation", "code"] = "both",
        *,
        dry_run: bool = False,
    ) -> RewindData | None:
        """Go back to just before user message ``to`` (the last when None); with ``dry_run``,
        only what it would do."""
        params: dict[str, Any] = {"restore": restore, "dry_run": dry_run}
        if to is not None:
            params["to"] = to
        reply = await self.call("rewind", params)
        return _expect(reply, RewindData) if dry_run else None

    async def compact(self, focus: str | None = None) -> None:
        """Compact the conversation now (or at the running turn's next round boundary)."""
        await self.call("compact", {"focus": focus} if focus else {})

    async def set_mode(self, mode: str) -> StatusData:
        """Switch the permission mode (``InvalidRequest`` for one wider than the config)."""
        return _expect(await self.call("set_mode", {"mode": mode}), StatusData)

    async def set_model(
        self,
        model: str | None = None,
        *,
        thinking: str | int | None = None,
        effort: str | None = None,
    ) -> StatusData:
        """Change the model, thinking or effort for the requests to come."""
        params = {"model": model, "thinking": thinking, "effort": effort}
        given = {k: v for k, v in params.items() if v is not None}
        return _expect(await self.call("set_model", given), StatusData)

    async def follow(self) -> AsyncIterator[PodEvent]:
        """Every broadcast event from now on, typed, across dropped connections, until the pod
        goes away (a resumed turn's, another client's runs)."""
        transport = self._transport()
        while True:
            event = await transport.next_event()
            if event is None:
                try:
                    await transport.reconnect()
                except ClientError:
                    return
                continue
            yield event

    async def close(self) -> None:
        """Close the connection (the pod runs on)."""
        raise NotImplementedError  # each transport closes its own way

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _transport(self) -> Transport:
        return self  # type: ignore[return-value]  # a PodCalls is mixed into a Transport


def _plain(segment: Segment | dict[str, Any]) -> dict[str, Any]:
    return segment if isinstance(segment, dict) else segment.model_dump(mode="json")


M = TypeVar("M", bound=BaseModel)


def _expect(reply: PodEvent | None, model: type[M]) -> M:
    if reply is None:
        raise ClientError(f"expected {model.__name__}, the pod sent nothing")
    return reply.expect(model)
