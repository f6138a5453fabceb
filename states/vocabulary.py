"""The lifecycle's events by family, and the protocol error each refused method gets.

Plain names, importable without the machine (and without python-statemachine): the protocol
derives its method names from :data:`METHOD_EVENTS`, and clients import it. The machine in
:mod:`states.lifecycle` is the one that gives these events their meaning.
"""

from __future__ import annotations

from typing import Final

__all__ = ["METHOD_EVENTS", "OUTCOME_EVENTS", "REJECTION_CODES", "ROUND_EVENTS"]

REJECTION_CODES: Final[dict[str, str]] = {
    "run": "already_running",
    "resume": "not_paused",
    "pause": "not_running",
    "cancel": "not_running",
    "notify": "not_running",
    "pod_event": "not_running",
    "shutdown": "not_running",
    "compact": "already_running",
    "rewind": "already_running",
    "approve": "not_awaiting_approval",
    "deny": "not_awaiting_approval",
    "answer_elicitation": "not_awaiting_input",
    "set_budget": "not_running",
}
"""Protocol error code for a method the machine rejects in the current state."""

METHOD_EVENTS: Final[tuple[str, ...]] = (
    "run",
    "notify",
    "pod_event",
    "resume",
    "pause",
    "cancel",
    "shutdown",
    "compact",
    "rewind",
    "approve",
    "deny",
    "answer_elicitation",
    "set_budget",
)
"""Events that correspond one-to-one to state-changing protocol methods."""

OUTCOME_EVENTS: Final[tuple[str, ...]] = (
    "turn_finished",
    "turn_paused",
    "turn_failed",
    "turn_interrupted",
    "compaction_done",
    "compaction_failed",
    "rewind_done",
    "rewind_failed",
)
"""Events the runtime sends when its task ends: a turn task (one per way it can end), a
compaction between turns (committed, or not: failed or interrupted), or a rewind (done, or
refused before it changed anything)."""

ROUND_EVENTS: Final[tuple[str, ...]] = (
    "tools_started",
    "round_done",
    "compaction_started",
    "compaction_committed",
    "approval_needed",
    "approval_settled",
    "input_needed",
    "input_settled",
)
"""Events the turn loop sends inside ``running``: around each round that runs tools, around
a compaction between rounds, and while a call waits for a person (an approval, or input an
MCP server asked for)."""
