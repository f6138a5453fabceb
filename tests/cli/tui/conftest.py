"""Helpers for the TUI tests: a UI attached to a real in-process pod, a fake clock, polling."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.app import App
from textual.pilot import Pilot

from cli.tui.app import PodApp
from cli.tui.link import PodLink
from orchestrator.serving.client import PodClient
from tests.e2e.harness import RunningPod, ScriptedReply, running_pod

SIZE = (80, 24)
SLOW = ScriptedReply(text="word " * 400, chunk_size=20, chunk_delay_s=0.05)
"""About five seconds of streaming: long enough to hold the pod in ``running``."""
QUICK = ScriptedReply(text="Done.")


@dataclass
class FakeClock:
    """A monotonic clock the test moves by hand (the double-press windows read it)."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def wait_until(
    pilot: Pilot[object], predicate: Callable[[], bool], *, timeout: float = 5.0, what: str = ""
) -> None:
    """Let the app run until ``predicate`` holds, failing after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.02)


def screen_text(app: App[object]) -> str:
    """The characters on screen, row by row: what a person reads (colours aside)."""
    # The compositor is Textual's own; it is what the terminal is sent, minus the styles.
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def pod_status(probe: PodClient) -> str:
    """The pod's coarse status, asked over a separate connection."""
    return (await probe.status()).status


async def eventually_status(probe: PodClient, expected: str, *, timeout: float = 5.0) -> None:
    """Poll ``get_status`` until the pod reports ``expected``."""
    deadline = asyncio.get_running_loop().time() + timeout
    status = await pod_status(probe)
    while status != expected:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"pod status is {status!r}, expected {expected!r}")
        await asyncio.sleep(0.02)
        status = await pod_status(probe)


async def history_kinds(probe: PodClient) -> list[str]:
    """The kinds of the committed history items."""
    return [str(i["kind"]) for i in (await probe.history()).items]


@dataclass
class Session:
    """A UI attached to a live pod, plus a probe connection for checking the pod."""

    pod: RunningPod
    app: PodApp
    pilot: Pilot[object]
    probe: PodClient
    clock: FakeClock

    @property
    def status_line(self) -> str:
        """The status line as drawn."""
        return self.app.status_bar.plain

    @property
    def notice(self) -> str:
        """The notice line as drawn."""
        return self.app.notice.plain

    @property
    def screen(self) -> str:
        """The screen's text."""
        return screen_text(self.app)

    async def until(
        self, predicate: Callable[[], bool], what: str = "", *, timeout: float = 5.0
    ) -> None:
        """Wait for a UI condition."""
        await wait_until(self.pilot, predicate, what=what, timeout=timeout)

    async def ui_status(self, status: str) -> None:
        """Wait until the UI believes the pod is in ``status``."""
        await self.until(lambda: self.app.model.pod.status == status, f"UI status {status}")

    async def to_state(self, state: str) -> None:
        """Bring the pod to idle (no-op), running (a slow turn) or paused (that turn paused)."""
        if state == "idle":
            return
        await self.probe.send("run", {"input": "go"})
        await self.ui_status("running")
        await self.until(
            lambda: any(getattr(e, "streaming", False) for e in self.app.model.entries),
            "streaming text",
        )
        if state == "paused":
            await self.probe.send("pause")
            await self.ui_status("paused")

    @property
    def exited(self) -> bool:
        """True once the app asked to exit."""
        return self.app.return_value is not None

    async def until_exited(self, timeout: float = 5.0) -> None:
        """Wait for the app to exit (the pilot cannot pause an app that is closing)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.exited:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError("the UI did not exit")
            await asyncio.sleep(0.02)


def connector(socket: Path) -> Callable[[], Awaitable[PodLink]]:
    """A connector for the app that opens a real protocol client."""

    async def connect() -> PodLink:
        return await PodClient.connect(socket)

    return connect


@contextlib.asynccontextmanager
async def attach(
    pod: RunningPod, clock: FakeClock | None = None, size: tuple[int, int] = SIZE
) -> AsyncIterator[Session]:
    """Run a UI attached to ``pod`` (at 80x24 unless ``size`` says) until history and status
    are drawn."""
    clock = clock or FakeClock()
    app = PodApp(connector(pod.socket), clock=clock)
    probe = await pod.client()
    try:
        async with app.run_test(size=size) as pilot:
            await wait_until(pilot, lambda: app.attached, what="attach")
            yield Session(pod=pod, app=app, pilot=pilot, probe=probe, clock=clock)
    finally:
        await probe.close()


@pytest.fixture
async def session(workspace: Path, short_dir: Path) -> AsyncIterator[Session]:
    """A UI on a pod whose first reply streams slowly and whose later replies are quick."""
    async with (
        running_pod(workspace, short_dir, replies=[SLOW, QUICK, QUICK]) as pod,
        attach(pod) as s,
    ):
        yield s
