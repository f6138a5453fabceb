"""Every key of the spec in every state (idle / running / paused), against a real pod.

Each test asserts the pod's resulting state through a separate connection and what the UI
shows in its status line or notice line.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from cli.tui.keys import KEPT_INPUT, QUIT_WARNING, SHUTDOWN_WARNING
from orchestrator.serving.client import PodEvent
from tests.cli.tui.conftest import Session, eventually_status, history_kinds, pod_status
from tests.cli.tui.fake_pod import FakeLink

PAUSED_HINT = "Paused — Enter to resume, type to start new turn"
STATES = ["idle", "running", "paused"]


# -- Ctrl-X ---------------------------------------------------------------------------------


async def test_ctrl_x_cancels_a_running_turn(session: Session) -> None:
    await session.to_state("running")
    await session.pilot.press("ctrl+x")
    await eventually_status(session.probe, "idle")
    await session.ui_status("idle")
    assert "Idle" in session.status_line
    assert not session.exited


@pytest.mark.parametrize("state", ["idle", "paused"])
async def test_ctrl_x_when_not_running_is_an_error_notice(session: Session, state: str) -> None:
    await session.to_state(state)
    await session.pilot.press("ctrl+x")
    assert session.notice == f"Nothing to cancel: the pod is {state}"
    assert session.app.notice.has_class("-error")
    assert await pod_status(session.probe) == state
    assert not session.exited


# -- Ctrl-C ---------------------------------------------------------------------------------


async def test_ctrl_c_pauses_a_running_turn(session: Session) -> None:
    await session.to_state("running")
    await session.pilot.press("ctrl+c")
    await eventually_status(session.probe, "paused")
    await session.ui_status("paused")
    assert PAUSED_HINT in session.status_line
    assert not session.exited


async def test_ctrl_c_twice_while_running_pauses_and_then_only_warns(session: Session) -> None:
    await session.to_state("running")
    await session.pilot.press("ctrl+c")
    await session.ui_status("paused")
    await session.pilot.press("ctrl+c")
    assert session.notice == QUIT_WARNING
    assert not session.exited
    assert await pod_status(session.probe) == "paused"


@pytest.mark.parametrize("state", ["idle", "paused"])
async def test_ctrl_c_once_warns(session: Session, state: str) -> None:
    await session.to_state(state)
    await session.pilot.press("ctrl+c")
    assert session.notice == QUIT_WARNING
    assert not session.exited
    assert await pod_status(session.probe) == state


@pytest.mark.parametrize("state", ["idle", "paused"])
async def test_ctrl_c_twice_within_window_quits_ui_pod_keeps_running(
    session: Session, state: str
) -> None:
    await session.to_state(state)
    await session.pilot.press("ctrl+c")
    session.clock.advance(2.9)
    await session.pilot.press("ctrl+c")
    await session.until_exited()
    assert session.app.return_value == "detached"
    assert await pod_status(session.probe) == state


@pytest.mark.parametrize("state", ["idle", "paused"])
async def test_ctrl_c_twice_after_window_warns_again(session: Session, state: str) -> None:
    await session.to_state(state)
    await session.pilot.press("ctrl+c")
    session.clock.advance(3.5)
    await session.pilot.press("ctrl+c")
    assert session.notice == QUIT_WARNING
    assert not session.exited
    # The late second press re-armed the window: a third press right away quits.
    await session.pilot.press("ctrl+c")
    await session.until_exited()
    assert await pod_status(session.probe) == state


# -- Ctrl-D ---------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["idle", "paused"])
async def test_ctrl_d_shuts_down_at_once_when_not_running(session: Session, state: str) -> None:
    await session.to_state(state)
    await session.pilot.press("ctrl+d")
    await session.until_exited()
    assert session.app.return_value == "shutdown"
    await session.pod.task  # the pod really stopped
    assert session.pod.task.done()


async def test_ctrl_d_once_while_running_warns(session: Session) -> None:
    await session.to_state("running")
    await session.pilot.press("ctrl+d")
    assert session.notice == SHUTDOWN_WARNING
    assert await pod_status(session.probe) == "running"
    assert "Running" in session.status_line
    assert not session.exited


async def test_ctrl_d_twice_within_window_while_running_shuts_down(session: Session) -> None:
    await session.to_state("running")
    await session.pilot.press("ctrl+d")
    session.clock.advance(2.0)
    await session.pilot.press("ctrl+d")
    await session.until_exited()
    assert session.app.return_value == "shutdown"
    await session.pod.task
    # The interrupted turn was closed before the pod stopped.
    assert session.pod.task.result() is not None


async def test_ctrl_d_twice_after_window_while_running_warns_again(session: Session) -> None:
    await session.to_state("running")
    await session.pilot.press("ctrl+d")
    session.clock.advance(3.5)
    await session.pilot.press("ctrl+d")
    assert session.notice == SHUTDOWN_WARNING
    assert await pod_status(session.probe) == "running"
    assert not session.exited


# -- Enter ----------------------------------------------------------------------------------


async def test_enter_with_text_when_idle_runs(session: Session) -> None:
    await session.pilot.press(*"hello")
    await session.pilot.press("enter")
    await session.until(lambda: "user: hello" in session.app.model.transcript())
    assert session.app.editor.text == ""
    # The slow first reply is streaming: the pod runs the turn.
    await eventually_status(session.probe, "running")
    assert await history_kinds(session.probe) == ["user_message"]


async def test_enter_with_text_when_paused_starts_a_new_turn(session: Session) -> None:
    await session.to_state("paused")
    await session.pilot.press(*"something else")
    await session.pilot.press("enter")
    await eventually_status(session.probe, "idle")
    await session.ui_status("idle")
    # The interrupted turn was closed with a note before the new user message.
    assert await history_kinds(session.probe) == [
        "user_message",
        "system_message",
        "user_message",
        "assistant",
    ]
    transcript = session.app.model.transcript()
    assert "user: something else" in transcript
    assert transcript[-1] == "assistant: Done."
    assert "Idle" in session.status_line


async def test_enter_with_text_while_running_keeps_the_input(session: Session) -> None:
    await session.to_state("running")
    await session.pilot.press(*"later")
    await session.pilot.press("enter")
    assert session.notice == KEPT_INPUT
    assert session.app.editor.text == "later"
    assert await history_kinds(session.probe) == ["user_message"]
    # Once paused, the kept input is sent by Enter as a new turn.
    await session.pilot.press("ctrl+c")
    await session.ui_status("paused")
    await session.pilot.press("enter")
    await eventually_status(session.probe, "idle")
    assert session.app.editor.text == ""
    assert (await history_kinds(session.probe))[-2:] == ["user_message", "assistant"]


async def test_a_prompt_the_pod_refuses_comes_back_to_the_editor() -> None:
    """Another client's turn may start between the status the UI last saw and its ``run``:
    the pod refuses it and the prompt is not lost. (A fake link, since a real pod only
    refuses when two clients race.)"""
    from tests.cli.tui.conftest import SIZE, wait_until
    from tests.cli.tui.fake_pod import STATUS, build_app

    link = RefusingLink(status_data={**STATUS, "status": "idle", "state": "idle"}, items=[])
    app = build_app(link)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.attached, what="replay")
        await pilot.press(*"hello there", "enter")
        await wait_until(pilot, lambda: app.notice.plain.startswith("pod: "), what="refusal")
        assert app.notice.plain == "pod: a turn is already running"
        assert app.editor.text == "hello there"
        assert not app.model.pod.run_sent
    assert [method for method, _ in link.sent] == ["run"]


@dataclass
class RefusingLink(FakeLink):
    """Refuses every ``run`` with an error naming its request id, as the pod does."""

    refusals: asyncio.Queue[PodEvent] = field(default_factory=asyncio.Queue)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: Any = None
    ) -> None:
        await super().send(method, params, id=id)
        if method == "run":
            error = {"code": "already_running", "message": "a turn is already running", "id": id}
            self.refusals.put_nowait(PodEvent("error", error))

    async def events(self) -> AsyncIterator[PodEvent]:
        while True:
            yield await self.refusals.get()


async def test_enter_empty_when_paused_resumes(session: Session) -> None:
    await session.to_state("paused")
    await session.pilot.press("enter")
    await eventually_status(session.probe, "idle")
    await session.ui_status("idle")
    # Resumed, not restarted: one user message, then the answer.
    assert await history_kinds(session.probe) == ["user_message", "assistant"]
    assert session.app.model.transcript()[-1] == "assistant: Done."


@pytest.mark.parametrize("state", ["idle", "running"])
async def test_enter_empty_does_nothing(session: Session, state: str) -> None:
    await session.to_state(state)
    kinds = await history_kinds(session.probe)
    await session.pilot.press("enter")
    await session.pilot.pause(0.1)
    assert await pod_status(session.probe) == state
    assert await history_kinds(session.probe) == kinds
    assert session.notice == ""
    assert not session.exited


async def test_ctrl_j_inserts_a_newline(session: Session) -> None:
    await session.pilot.press(*"one", "ctrl+j", *"two")
    assert session.app.editor.text == "one\ntwo"
    assert await pod_status(session.probe) == "idle"


# -- retired keys ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["ctrl+r", "escape"])
@pytest.mark.parametrize("state", STATES)
async def test_retired_keys_do_nothing(session: Session, state: str, key: str) -> None:
    await session.to_state(state)
    before = session.status_line
    await session.pilot.press(key)
    await session.pilot.press(key)
    await session.pilot.pause(0.05)
    assert await pod_status(session.probe) == state
    assert not session.exited
    assert session.notice == ""
    if state != "running":  # token counts move while a turn streams
        assert session.status_line == before
