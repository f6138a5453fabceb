"""The status × key table and notice lifetimes, without an app (docs/tui-keybindings.md)."""

from __future__ import annotations

import pytest

from cli.tui.keys import (
    DOUBLE_PRESS_S,
    KEPT_INPUT,
    QUIT_WARNING,
    SHUTDOWN_WARNING,
    Decision,
    Key,
    decide,
)
from cli.tui.notices import Notice, NoticeBoard
from cli.tui.pod_view import PodView
from orchestrator.protocol import StatusData

AT_REST = ["idle", "paused"]
GONE = ["stopped", "disconnected"]


def test_ctrl_x_cancels_only_a_running_turn() -> None:
    assert decide(Key.CANCEL, "running").send == "cancel"
    for status in [*AT_REST, *GONE, "connecting"]:
        decision = decide(Key.CANCEL, status)
        assert decision.send is None and decision.exit is None
        assert decision.notice == Notice(f"Nothing to cancel: the pod is {status}", "error")


@pytest.mark.parametrize("repeated", [False, True])
def test_ctrl_c_pauses_a_running_turn_even_when_pressed_twice(repeated: bool) -> None:
    decision = decide(Key.INTERRUPT, "running", repeated=repeated)
    assert (decision.send, decision.exit, decision.arm) == ("pause", None, False)


@pytest.mark.parametrize("status", AT_REST)
def test_ctrl_c_at_rest_warns_then_quits(status: str) -> None:
    first = decide(Key.INTERRUPT, status)
    assert (first.send, first.exit, first.arm) == (None, None, True)
    assert first.notice is not None and first.notice.text == QUIT_WARNING
    # The warning is false once the window closed: it lasts as long as the window.
    assert first.notice.ttl == DOUBLE_PRESS_S
    assert decide(Key.INTERRUPT, status, repeated=True) == Decision(exit="detached")


@pytest.mark.parametrize("status", GONE)
def test_ctrl_c_and_ctrl_d_leave_at_once_when_the_pod_is_gone(status: str) -> None:
    assert decide(Key.INTERRUPT, status) == Decision(exit="detached")
    assert decide(Key.SHUTDOWN, status) == Decision(exit="shutdown")


def test_ctrl_d_while_running_asks_for_a_second_press() -> None:
    first = decide(Key.SHUTDOWN, "running")
    assert (first.send, first.arm) == (None, True)
    assert first.notice is not None and first.notice.text == SHUTDOWN_WARNING
    assert decide(Key.SHUTDOWN, "running", repeated=True).send == "shutdown"


@pytest.mark.parametrize("status", AT_REST)
def test_ctrl_d_at_rest_shuts_down_at_once(status: str) -> None:
    assert decide(Key.SHUTDOWN, status).send == "shutdown"


def test_enter() -> None:
    # Running: text stays in the editor with a notice; an empty Enter does nothing.
    kept = decide(Key.SUBMIT, "running", blank=False)
    assert kept.send is None and kept.keep_input
    assert kept.notice is not None and kept.notice.text == KEPT_INPUT
    assert decide(Key.SUBMIT, "running", blank=True) == Decision()
    # At rest: text runs (and leaves the editor); an empty Enter resumes only a paused turn.
    for status in AT_REST:
        run = decide(Key.SUBMIT, status, blank=False)
        assert (run.send, run.keep_input) == ("run", False)
    assert decide(Key.SUBMIT, "paused", blank=True).send == "resume"
    assert decide(Key.SUBMIT, "idle", blank=True) == Decision()
    # No pod: nothing is sent and the input stays.
    for status in [*GONE, "connecting"]:
        refused = decide(Key.SUBMIT, status, blank=False)
        assert refused.send is None and refused.keep_input
        assert refused.notice is not None and refused.notice.level == "error"


def test_a_notice_about_the_state_goes_when_the_state_changes() -> None:
    board = NoticeBoard()
    board.show(Notice("Nothing to cancel: the pod is idle", "error"), status="idle", now=0.0)
    assert board.current(status="idle", now=1.0) is not None
    assert board.current(status="running", now=1.0) is None
    # Gone means gone: coming back to idle does not revive it.
    assert board.current(status="idle", now=1.5) is None


def test_a_notice_expires() -> None:
    board = NoticeBoard()
    board.show(Notice("pod: refused", "error", ttl=6.0), status="idle", now=10.0)
    assert board.expires() == 16.0
    assert board.current(status="idle", now=15.9) is not None
    assert board.current(status="idle", now=16.0) is None


def test_a_window_warning_outlives_a_state_change_but_not_its_window() -> None:
    board = NoticeBoard()
    board.show(decide(Key.INTERRUPT, "idle").notice, status="idle", now=0.0)
    assert board.current(status="paused", now=1.0) is not None
    assert board.current(status="paused", now=DOUBLE_PRESS_S) is None


def test_kept_input_stays_while_the_turn_runs_and_goes_after() -> None:
    board = NoticeBoard()
    board.show(decide(Key.SUBMIT, "running", blank=False).notice, status="running", now=0.0)
    assert board.current(status="running", now=600.0) is not None
    assert board.current(status="paused", now=600.0) is None


@pytest.mark.parametrize("status", AT_REST)
def test_ctrl_c_right_after_enter_pauses_the_turn_just_sent(status: str) -> None:
    """Between sending ``run`` and the pod's ``running`` status the keys act as while
    running: the Ctrl-C meant for the new turn pauses it instead of arming quit."""
    pod = PodView()
    pod.update(StatusData(status=status, state=status))
    pod.run_sent = True
    assert decide(Key.INTERRUPT, pod.key_status).send == "pause"
    pod.update(StatusData(status="running", state="requesting"))
    assert not pod.run_sent and pod.key_status == "running"
    pod.update(StatusData(status="idle", state="idle"))
    assert decide(Key.INTERRUPT, pod.key_status).arm  # the turn ended: at rest again
    # A run the pod refused (its status did not change) is forgotten at the next status.
    pod.run_sent = True
    pod.update(StatusData(status="paused", state="paused"))
    assert pod.key_status == "paused"
