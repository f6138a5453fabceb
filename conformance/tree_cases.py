"""The tree cases: the lifecycle's promises for a pod that delegates to child pods.

A pod that offers its model a ``task`` tool runs each call in a child pod, which talks to
the same (fake) Messages API. Interrupting the parent must do the right thing to its
children, and every tree case checks the same three bars besides its own expectations:

* **0 invalid requests** in any pod of the tree: the fake refused none of the parent's or
  the children's requests;
* **0 children run twice**: one child per ``task`` call, one child session per child (the
  ``child`` events and ``status`` ``children`` name one session per call), each child given
  its task once (on the wire: every request of a child carries its task exactly once, and a
  child's conversation never starts over), and where the pod keeps its sessions in this
  runtime's format: one ``child`` record per call and one user message per child session;
* **0 orphan processes**: every process of the tree (the pod's descendants, walked in
  ``/proc`` throughout the case, and the pids of the children's info files) is gone once the
  pod has shut down (and, after a ``kill -9`` of the parent, before it restarts).

Each case holds the tree in one situation and does one thing to the parent:

========================  ==================================================================
hold                      the parent's model calls ``task`` twice; each child's model...
========================  ==================================================================
``child_running``         calls the kit's slow tool (the kit waits until both children report
                          ``executing_tools``)
``child_awaiting_approval``  calls the kit's approval tool (the kit waits until the parent
                          relays both requests, ``approval_request`` with ``pod`` set)
========================  ==================================================================

==========  =====================================================================================
action      expected
==========  =====================================================================================
``pause``   ``run_end`` ``paused``, no ``turn_end``; the ``task`` calls stay unanswered; every
            child reports ``paused``; relayed approvals are withdrawn. Then ``shutdown`` closes
            the calls with synthetic results.
``resume``  after that pause: ``turn_start`` resumed, the same children resume (relayed
            approvals are asked again; the kit approves), each call answered with its child's
            answer, ``run_end`` ``finished``; a follow-up ``run`` works.
``cancel``  ``turn_end`` and ``run_end`` ``cancelled``; each call closed with a synthetic
            result; approvals withdrawn; a follow-up ``run`` works.
``crash``   ``kill -9`` of the parent's process: every process of the tree ends with it; the
            pod restarted on the same session (:attr:`KitOptions.continue_args`) reports
            ``paused``; ``resume`` restarts the same children on their sessions and finishes as
            above.
==========  =====================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["TREE_ACTIONS", "TREE_HOLDS", "TreeCase", "build_tree_cases"]

TreeHold = Literal["child_running", "child_awaiting_approval"]
TreeAction = Literal["pause", "resume", "cancel", "crash"]

TREE_HOLDS: tuple[TreeHold, ...] = ("child_running", "child_awaiting_approval")
TREE_ACTIONS: tuple[TreeAction, ...] = ("pause", "resume", "cancel", "crash")

_EXPECTED: dict[str, str] = {
    "pause": "paused; children paused; calls open",
    "resume": "same children resume; calls answered",
    "cancel": "cancelled; calls closed; children stop",
    "crash": "tree dies; restart paused; same children resume",
}
_SETUP: dict[str, str] = {
    "child_running": "2 task calls → each child runs the slow tool",
    "child_awaiting_approval": "2 task calls → each child awaits approval (relayed)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeCase:
    """One tree case: a situation of the tree and what the kit does to the parent."""

    hold: TreeHold
    action: TreeAction
    children: int = 2
    """``task`` calls in the parent's one reply (children running at once)."""
    skip_reason: str | None = None
    """Always None here: whether the pod can run the case is learned from its first request."""

    @property
    def id(self) -> str:
        """``tree-<hold>-<action>``."""
        return f"tree-{self.hold}-{self.action}"

    @property
    def restarts(self) -> bool:
        """Whether the case kills the parent and starts it again."""
        return self.action == "crash"

    @property
    def resumes(self) -> bool:
        """Whether the tree is resumed and must finish its tasks."""
        return self.action in ("resume", "crash")

    def report_fields(self) -> dict[str, Any]:
        """The columns of the report: id, state (the hold), event (the action), expected,
        setup."""
        setup = _SETUP[self.hold]
        if self.action == "resume":
            setup += " → pause"
        return {
            "id": self.id,
            "state": self.hold,
            "event": self.action,
            "expected": _EXPECTED[self.action],
            "setup": setup,
        }


def build_tree_cases() -> list[TreeCase]:
    """Every tree case: each hold × each action."""
    return [TreeCase(hold=hold, action=action) for hold in TREE_HOLDS for action in TREE_ACTIONS]
