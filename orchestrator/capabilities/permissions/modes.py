"""Switching a running pod's permission mode (``set_mode``, Shift-Tab, an approved plan).

The configured mode (``[permissions] mode``, ``--permission-mode``) is the user's grant: a
switch may choose it or any narrower mode, never a wider one
(:func:`~orchestrator.config.permissions.mode_refusal`). A switch changes the policy's mode in
place, so it applies from the next tool decision, and is told to whoever keeps it (the pod
writes a ``mode`` record, so a restart keeps it, and broadcasts its status).

Entering ``plan`` remembers the mode it left: approving the plan goes back to it (``default``
when the pod started in ``plan``) unless the approval names another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import get_args

from orchestrator.capabilities.permissions.policy import Policy
from orchestrator.config.permissions import Mode, mode_ceiling, mode_refusal
from orchestrator.errors import PodRuntimeError

__all__ = ["ModeChange", "ModeRefused", "ModeSwitch", "parse_mode"]


class ModeRefused(PodRuntimeError):
    """A mode that is not one, or wider than the configuration allows; says which to use."""


def parse_mode(text: str) -> Mode:
    """``text`` as a mode; :class:`ModeRefused` naming the modes when it is none."""
    modes: tuple[Mode, ...] = get_args(Mode)
    if text not in modes:
        raise ModeRefused(f"{text!r} is not a permission mode; choose one of {', '.join(modes)}")
    return text


@dataclass(frozen=True, slots=True)
class ModeChange:
    """One switch: from, to, and what made it (``set_mode``, ``plan approved``, …)."""

    old: Mode
    new: Mode
    before_plan: Mode
    source: str


@dataclass(slots=True)
class ModeSwitch:
    """The running pod's permission mode: checked, switched, and told."""

    policy: Policy
    on_change: Callable[[ModeChange], None] | None = None
    """Told of every switch that changed the mode (records it, broadcasts the status)."""
    before_plan: Mode = "default"
    """The mode ``plan`` was entered from: an approved plan goes back to it."""
    switched: bool = False
    """Whether the mode was ever switched (or restored from the session) in this pod."""

    def __post_init__(self) -> None:
        if self.policy.mode != "plan":
            self.before_plan = self.policy.mode
        else:
            self.before_plan = mode_ceiling(self.policy.configured)

    @property
    def mode(self) -> Mode:
        """The mode now."""
        return self.policy.mode

    def refusal(self, mode: Mode) -> str | None:
        """Why the pod may not switch to ``mode``; None when it may."""
        return mode_refusal(mode, self.policy.configured)

    def switch(self, mode: Mode, source: str) -> bool:
        """Switch to ``mode`` (:class:`ModeRefused` when it is wider than allowed); False when
        the pod was in it already (nothing is recorded then)."""
        why = self.refusal(mode)
        if why is not None:
            raise ModeRefused(why)
        old = self.policy.mode
        if mode == old:
            return False
        if mode == "plan":
            self.before_plan = old
        self.policy.mode = mode
        self.switched = True
        if self.on_change is not None:
            self.on_change(
                ModeChange(old=old, new=mode, before_plan=self.before_plan, source=source)
            )
        return True

    def leave_plan(self, chosen: Mode | None) -> Mode:
        """A person approved the plan: switch to ``chosen``, else to the mode before ``plan``
        (:class:`ModeRefused` when ``chosen`` is wider than allowed, or is ``plan``)."""
        if chosen == "plan":
            raise ModeRefused("an approved plan leaves plan mode: name another mode, or none")
        target = chosen or self.before_plan
        if target == "plan":  # a pod restored in plan with nothing before it
            target = mode_ceiling(self.policy.configured)
        self.switch(target, "plan approved")
        return target

    def restore(self, mode: Mode, before_plan: Mode, configured: Mode) -> str | None:
        """Take back the mode a session's last ``mode`` record holds, when the configuration
        it was chosen under is still the pod's and still allows it; why not otherwise (the
        configured mode applies then)."""
        if configured != self.policy.configured:
            return None  # the user started the pod with another mode since: theirs counts
        why = self.refusal(mode)
        if why is not None:
            return f"the session was in {mode} mode, which is no longer allowed: {why}"
        self.policy.mode = mode
        self.switched = True
        self.before_plan = before_plan if self.refusal(before_plan) is None else self.before_plan
        return None
