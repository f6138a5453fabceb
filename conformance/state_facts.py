"""What the transition table says about states, read from its rows alone: which are rest,
round, compacting, rewinding or winding states, and where methods and outcomes lead.

The conformance kit asks :class:`StateFacts` what it needs to know about states (the first
rest state, the state a turn streams in, where a call waits for approval...) rather than
naming them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from states.lifecycle import METHOD_EVENTS, OUTCOME_EVENTS, ROUND_EVENTS
from states.table import TransitionRow

__all__ = ["StateFacts"]


@dataclass(frozen=True)
class StateFacts:
    """What the table says about states, computed once from its rows."""

    rows: Sequence[TransitionRow]

    @cached_property
    def by_key(self) -> dict[tuple[str, str], TransitionRow]:
        """Rows by ``(state, event)``."""
        return {(row.state, row.event): row for row in self.rows}

    @cached_property
    def states(self) -> tuple[str, ...]:
        """The table's states, in order."""
        return tuple(dict.fromkeys(row.state for row in self.rows))

    def row(self, state: str, event: str) -> TransitionRow:
        """One row."""
        return self.by_key[(state, event)]

    def is_rest(self, state: str) -> bool:
        """No turn outcome is accepted: no turn task can be alive here."""
        return not any(self.row(state, e).allowed for e in OUTCOME_EVENTS)

    def is_round(self, state: str) -> bool:
        """A round marker moves the pod elsewhere: a turn is streaming or running tools."""
        return any(
            self.row(state, e).allowed and self.row(state, e).target != state for e in ROUND_EVENTS
        )

    def is_compacting(self, state: str) -> bool:
        """A compaction between turns runs: it ends with a compaction outcome, not a turn's."""
        return (
            self.row(state, "compaction_done").allowed
            and not self.row(state, "turn_finished").allowed
        )

    def is_rewinding(self, state: str) -> bool:
        """A rewind runs: it ends with a rewind outcome, not a turn's."""
        return (
            self.row(state, "rewind_done").allowed and not self.row(state, "turn_finished").allowed
        )

    def is_winding(self, state: str) -> bool:
        """The turn task was told to stop and the pod waits for it to end."""
        return not (
            self.is_rest(state)
            or self.is_round(state)
            or self.is_compacting(state)
            or self.is_rewinding(state)
        )

    def settles_to(self, winding: str) -> str:
        """Where a winding state lands when the interrupted turn task ends."""
        return self.row(winding, "turn_interrupted").target

    def finishes_to(self, state: str) -> str:
        """Where a round state lands when its turn ends normally."""
        return self.row(state, "turn_finished").target

    def method_into(self, target: str, sources: Sequence[str]) -> tuple[str, str] | None:
        """The first ``(source, method)`` among ``sources`` whose row leads to ``target``."""
        for source in sources:
            for event in METHOD_EVENTS:
                row = self.by_key.get((source, event))
                if row is not None and row.allowed and row.target == target:
                    return source, event
        return None

    def interrupt_for_settle(self, round_state: str) -> tuple[str, str]:
        """The method that winds a round state down to ``paused``-like rest (``pause``).

        Prefers a winding state that settles where the turn can be continued (a rest state
        other than ``idle`` and ``stopped`` when the table has one), so that the kit's own
        interruption does not end the turn it is about to inspect.
        """
        options: list[tuple[str, str, str]] = []
        for event in METHOD_EVENTS:
            row = self.row(round_state, event)
            if row.allowed and self.is_winding(row.target):
                options.append((event, row.target, self.settles_to(row.target)))
        if not options:
            raise ValueError(f"no method winds {round_state!r} down")
        resumable = [o for o in options if o[2] not in ("idle", "stopped")]
        event, _, settle = (resumable or options)[0]
        return event, settle

    @cached_property
    def initial(self) -> str:
        """The state a fresh pod starts in: the first rest state of the table."""
        return next(s for s in self.states if self.is_rest(s))

    @cached_property
    def stream_state(self) -> str:
        """The round state a new turn enters first (a pod streaming its first response)."""
        found = self.method_into_round(self.initial)
        if found is None:
            raise ValueError("no method starts a turn")
        return found

    def method_into_round(self, source: str) -> str | None:
        """The round state ``run`` (or any method) leads to from ``source``."""
        for event in METHOD_EVENTS:
            row = self.row(source, event)
            if row.allowed and self.is_round(row.target):
                return row.target
        return None

    @cached_property
    def tools_state(self) -> str:
        """The round state the stream state moves to on ``tools_started``."""
        return self.row(self.stream_state, "tools_started").target

    @cached_property
    def approval_state(self) -> str:
        """Where a call of the tools state waits for a person (``approval_needed``)."""
        return self.row(self.tools_state, "approval_needed").target

    @cached_property
    def input_state(self) -> str | None:
        """Where a call of the tools state waits for a person's input (``input_needed``), if
        the table has such a state."""
        row = self.by_key.get((self.tools_state, "input_needed"))
        return row.target if row is not None and row.allowed and row.target != row.state else None

    @cached_property
    def summary_state(self) -> str:
        """Where a turn compacts between rounds (``compaction_started`` from the stream)."""
        return self.row(self.stream_state, "compaction_started").target

    def answers(self, row: TransitionRow) -> bool:
        """The row answers what the waiting call waits for (approve / deny, or the input it
        asked for), so the turn goes on by itself."""
        return row.allowed and any(
            a in row.actions for a in ("approve_call", "deny_call", "answer_input")
        )

    def task_end_event(self, source: str) -> str:
        """The outcome an interrupted task sends: a compaction's, or a turn's."""
        return "compaction_failed" if self.is_compacting(source) else "turn_interrupted"

    def interrupt_compaction(self, state: str) -> str:
        """The method that stops a compaction between turns and stays put (``pause``)."""
        for event in METHOD_EVENTS:
            row = self.row(state, event)
            if row.allowed and row.target == state and "interrupt_turn" in row.actions:
                return event
        raise ValueError(f"no method interrupts {state!r}")
