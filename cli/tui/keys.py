"""What a key press means: the status × key table, the approval and input keys, the card
selection.

:func:`decide` is the whole status × key table of ``docs/tui-keybindings.md``; the app
carries its :class:`Decision` out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from cli.tui.notices import Notice

DOUBLE_PRESS_S = 3.0
"""The second Ctrl-C (quit) or Ctrl-D (shutdown while running) must come within this window."""


class Key(StrEnum):
    """The keys whose meaning depends on the pod's status."""

    INTERRUPT = "ctrl+c"
    CANCEL = "ctrl+x"
    SHUTDOWN = "ctrl+d"
    SUBMIT = "enter"


QUIT_WARNING = "Press Ctrl-C again to quit; the pod keeps running"
SHUTDOWN_WARNING = "A turn is running: press Ctrl-D again to shut the pod down"
KEPT_INPUT = "A turn is running: your input is kept. Ctrl-C pauses, then Enter sends it."


@dataclass(frozen=True)
class Decision:
    """What one key press does: a method to send, a notice, leaving the UI, a press window."""

    send: Literal["pause", "cancel", "shutdown", "run", "resume"] | None = None
    notice: Notice | None = None
    exit: Literal["detached", "shutdown"] | None = None
    arm: bool = False
    """Open this key's double-press window (a second press within it acts)."""
    keep_input: bool = True
    """False when the editor's text is sent and leaves the editor."""


def decide(key: Key, status: str, *, repeated: bool = False, blank: bool = True) -> Decision:
    """The status × key table: ``repeated`` says the key's window is open, ``blank`` the input.

    ``status`` is ``idle``, ``running``, ``paused``, ``stopped``, ``disconnected`` or
    ``connecting``.
    """
    gone = status in ("disconnected", "stopped")
    at_rest = status in ("idle", "paused")
    if key is Key.INTERRUPT:
        if gone:
            return Decision(exit="detached")
        if status == "running":
            return Decision(send="pause", notice=Notice("Pausing…", ttl=None))
        if repeated:
            return Decision(exit="detached")
        return Decision(arm=True, notice=Notice(QUIT_WARNING, "warn", DOUBLE_PRESS_S, False))
    if key is Key.SHUTDOWN:
        if gone:
            return Decision(exit="shutdown")
        if status == "running" and not repeated:
            return Decision(arm=True, notice=Notice(SHUTDOWN_WARNING, "warn", DOUBLE_PRESS_S))
        return Decision(send="shutdown", notice=Notice("Shutting the pod down…", ttl=None))
    if key is Key.CANCEL:
        if status == "running":
            return Decision(send="cancel", notice=Notice("Cancelling the turn…", ttl=None))
        return Decision(notice=Notice(f"Nothing to cancel: the pod is {status}", "error"))
    # Enter
    if status == "running":
        return Decision() if blank else Decision(notice=Notice(KEPT_INPUT, "warn", ttl=None))
    if not at_rest:
        return Decision(notice=Notice(f"Cannot send: the pod is {status}", "error"))
    if blank:
        return Decision(send="resume") if status == "paused" else Decision()
    return Decision(send="run", keep_input=False)


# -- tool cards -------------------------------------------------------------------------------------


APPROVAL_KEYS = "y once · a always · n deny"

PLAN_KEYS = "y approve · a approve, accept edits · n keep planning"
"""The same keys on a plan (``kind: "plan"``): ``a`` names ``accept-edits`` as the mode to work in."""

MODE_CYCLE = ("default", "accept-edits", "plan", "yolo")
"""The permission modes Shift-Tab in the editor steps through, in order (those the pod refuses,
wider than it was started with, are skipped); ``read-only`` is chosen with ``pod mode``."""


def next_modes(current: str) -> list[str]:
    """The modes Shift-Tab tries after ``current``, in order, until the pod takes one."""
    if current not in MODE_CYCLE:
        return list(MODE_CYCLE)
    at = MODE_CYCLE.index(current)
    return [*MODE_CYCLE[at + 1 :], *MODE_CYCLE[:at]]


ApprovalAnswer = Literal["once", "session", "deny"]


def approval_key(key: str, *, waiting: bool, blank: bool) -> ApprovalAnswer | None:
    """What ``y``/``a``/``n`` mean: an answer while a request waits and the editor is empty,
    else nothing (the key is typed as usual)."""
    if not (waiting and blank):
        return None
    return {"y": "once", "a": "session", "n": "deny"}.get(key)  # type: ignore[return-value]


FORM_KEYS = "f fill in · d decline · c cancel"
URL_KEYS = "o opened · d decline · c cancel"


InputAnswer = Literal["fill", "accept", "decline", "cancel"]


def elicitation_key(key: str, *, mode: str | None, blank: bool) -> InputAnswer | None:
    """What ``f``/``o``/``d``/``c`` mean while a request for input waits (``mode``: its
    ``form`` or ``url``; None: none waits) and the editor is empty: ``fill`` goes to the
    form, ``accept`` says a URL was opened; else nothing (the key is typed as usual)."""
    if mode is None or not blank:
        return None
    first = {"form": {"f": "fill"}, "url": {"o": "accept"}}.get(mode, {})
    return {**first, "d": "decline", "c": "cancel"}.get(key)  # type: ignore[return-value]


def step_card(cards: list[int], selected: int | None, step: int) -> int | None:
    """Move the card selection ``step`` cards (negative: up); None selects the newest card.

    The selection stays within the list: past the oldest or the newest it stops there.
    """
    if not cards:
        return None
    if selected is None or selected not in cards:
        return cards[-1]
    position = min(max(cards.index(selected) + step, 0), len(cards) - 1)
    return cards[position]
