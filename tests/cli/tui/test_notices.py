"""Notice lifetimes, without an app: how long a line above the editor stays true."""

from __future__ import annotations

from cli.tui.keys import DOUBLE_PRESS_S, Key, decide
from cli.tui.notices import Notice, NoticeBoard


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
