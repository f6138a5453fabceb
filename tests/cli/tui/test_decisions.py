"""What keys mean, without an app: the status × key table (docs/tui-keybindings.md), the
approval keys and the tool-card selection (``cli/tui/keys.py``)."""

from __future__ import annotations

import pytest

from cli.tui.keys import (
    DOUBLE_PRESS_S,
    KEPT_INPUT,
    QUIT_WARNING,
    SHUTDOWN_WARNING,
    Decision,
    Key,
    approval_key,
    decide,
    step_card,
)
from cli.tui.notices import Notice

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


# -- approval keys and tool cards -------------------------------------------------------------


def test_approval_keys_act_only_on_an_empty_editor_while_a_call_waits() -> None:
    assert approval_key("y", waiting=True, blank=True) == "once"
    assert approval_key("a", waiting=True, blank=True) == "session"
    assert approval_key("n", waiting=True, blank=True) == "deny"
    assert approval_key("y", waiting=True, blank=False) is None  # typing a word with a y
    assert approval_key("y", waiting=False, blank=True) is None
    assert approval_key("x", waiting=True, blank=True) is None


def test_cards_are_chosen_from_the_newest() -> None:
    cards = [2, 5, 9]
    assert step_card(cards, None, 0) == 9
    assert step_card(cards, 9, -1) == 5
    assert step_card(cards, 2, -1) == 2
    assert step_card(cards, 9, 1) == 9
    assert step_card([], None, 0) is None
    assert step_card(cards, 7, -1) == 9  # a selection that went away starts over
