"""The SDK without ``async``: :class:`SyncPod`, the same calls as
:class:`~orchestrator.serving.pod_calls.PodCalls`, each waiting for its answer.

A :class:`SyncPod` runs a private event loop on a thread of its own, where its client lives;
each call hands that loop a coroutine and waits for its result, so a plain script (or a
notebook, whose own loop is busy) can write ``for event in pod.run("…")``. Close it (or use
it as a context manager) to end the connection and the thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from orchestrator.core.segments import Segment
from orchestrator.protocol import (
    CommandsData,
    HistoryData,
    ModelsData,
    RewindData,
    StatsData,
    StatusData,
)
from orchestrator.serving.client_events import PodEvent
from orchestrator.serving.pod_calls import PodCalls

__all__ = ["SyncPod"]

T = TypeVar("T")


class SyncPod:
    """A pod client for code that does not run an event loop: see the module's docstring."""

    def __init__(self, opener: Callable[[], Awaitable[PodCalls]]) -> None:
        """Run ``opener`` (one of :mod:`orchestrator.serving.sdk.connect`'s functions, bound
        to its arguments) on a new private loop; the classmethods below do it for you."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="pod-sdk", daemon=True)
        self._thread.start()

        async def open_client() -> PodCalls:
            return await opener()

        try:
            self.client = self._wait(open_client())
        except BaseException:
            self._stop_loop()
            raise

    @classmethod
    def connect(cls, pod: str | Path, **options: Any) -> SyncPod:
        """:func:`~orchestrator.serving.sdk.connect.connect`: a socket, a host's pod, or HTTP."""
        from orchestrator.serving.sdk.connect import connect

        return cls(lambda: connect(pod, **options))

    @classmethod
    def start(cls, workspace: Path | str, **options: Any) -> SyncPod:
        """:func:`~orchestrator.serving.sdk.connect.start_pod`: a new pod in the host."""
        from orchestrator.serving.sdk.connect import start_pod

        return cls(lambda: start_pod(workspace, **options))

    def _wait(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def run(
        self,
        text: str | None = None,
        *,
        segments: Sequence[Segment | dict[str, Any]] | None = None,
        request_id: str | None = None,
    ) -> Iterator[PodEvent]:
        """:meth:`PodCalls.run`: the run's typed events through its ``run_end``."""
        return self._iterate(self.client.run(text, segments=segments, request_id=request_id))

    def follow(self) -> Iterator[PodEvent]:
        """:meth:`PodCalls.follow`: every event from now on, until the pod goes away."""
        return self._iterate(self.client.follow())

    def _iterate(self, events: Any) -> Iterator[PodEvent]:
        async def next_one() -> PodEvent:
            return await events.__anext__()  # type: ignore[no-any-return]

        try:
            while True:
                try:
                    yield self._wait(next_one())
                except StopAsyncIteration:
                    return
        finally:
            if not self._loop.is_closed():
                self._wait(events.aclose())

    def status(self) -> StatusData:
        """``get_status``, typed."""
        return self._wait(self.client.status())

    def history(self) -> HistoryData:
        """``get_history``, typed."""
        return self._wait(self.client.history())

    def models(self) -> ModelsData:
        """``list_models``, typed."""
        return self._wait(self.client.models())

    def commands(self) -> CommandsData:
        """``list_commands``, typed."""
        return self._wait(self.client.commands())

    def stats(self) -> StatsData:
        """``get_stats``, typed."""
        return self._wait(self.client.stats())

    def call(self, method: str, params: dict[str, Any] | None = None) -> PodEvent | None:
        """Any method: its direct reply, or None once taken."""
        return self._wait(self.client.call(method, params))

    def pause(self) -> None:
        """Pause the running turn."""
        self._wait(self.client.pause())

    def resume(self) -> None:
        """Resume the paused turn."""
        self._wait(self.client.resume())

    def cancel(self) -> None:
        """Cancel the running or paused turn."""
        self._wait(self.client.cancel())

    def shutdown(self) -> None:
        """Stop the pod."""
        self._wait(self.client.shutdown())

    def approve(
        self, id: str, scope: Literal["once", "session"] = "once", *, mode: str | None = None
    ) -> None:
        """Approve a waiting tool call."""
        self._wait(self.client.approve(id, scope, mode=mode))

    def deny(self, id: str, message: str = "") -> None:
        """Deny a waiting tool call."""
        self._wait(self.client.deny(id, message))

    def answer(
        self,
        id: str,
        action: Literal["accept", "decline", "cancel"] = "accept",
        content: dict[str, Any] | None = None,
    ) -> None:
        """Answer a request for input."""
        self._wait(self.client.answer(id, action, content))

    def rewind(
        self,
        to: int | None = None,
        restore: Literal["both", "conversation", "code"] = "both",
        *,
        dry_run: bool = False,
    ) -> RewindData | None:
        """Rewind to just before a user message."""
        return self._wait(self.client.rewind(to, restore, dry_run=dry_run))

    def compact(self, focus: str | None = None) -> None:
        """Compact the conversation."""
        self._wait(self.client.compact(focus))

    def set_mode(self, mode: str) -> StatusData:
        """Switch the permission mode."""
        return self._wait(self.client.set_mode(mode))

    def set_model(
        self,
        model: str | None = None,
        *,
        thinking: str | int | None = None,
        effort: str | None = None,
    ) -> StatusData:
        """Change the model, thinking or effort."""
        return self._wait(self.client.set_model(model, thinking=thinking, effort=effort))

    def close(self) -> None:
        """Close the connection and stop the private loop."""
        if self._loop.is_closed():
            return
        try:
            self._wait(self.client.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> SyncPod:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
