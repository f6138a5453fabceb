"""The lifecycle's transition table, derived by running the machine itself.

Every (state, event) pair is tried on a fresh :class:`~states.lifecycle.PodLifecycle` whose
model records the actions it is asked to perform. The resulting rows are the one description of
the machine that the protocol docs, the tests and the diagram notes are generated from or
checked against, so none of them can drift from the class.

``python -m states.table`` prints the table; ``--write-docs FILE`` refreshes the generated
block between the markers in FILE and ``--check-docs FILE`` fails when that block is stale.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from statemachine.exceptions import TransitionNotAllowed

from states.docblock import DocBlock
from states.lifecycle import (
    METHOD_EVENTS,
    OUTCOME_EVENTS,
    REJECTION_CODES,
    ROUND_EVENTS,
    PodLifecycle,
    PublicStatus,
    leaf_state,
    public_status,
)

TABLE_STATES: Final[tuple[str, ...]] = (
    "idle",
    "requesting",
    "executing_tools",
    "awaiting_approval",
    "awaiting_input",
    "summarizing",
    "compacting",
    "rewinding",
    "pausing",
    "cancelling",
    "stopping",
    "paused",
    "stopped",
)
"""Every state a pod can rest in; ``interrupted`` is left out because it is never at rest."""

ALL_EVENTS: Final[tuple[str, ...]] = METHOD_EVENTS + OUTCOME_EVENTS + ROUND_EVENTS
"""Every event the machine knows, in table order."""

EventKind = Literal["method", "outcome", "round"]

EVENT_ARGUMENTS: Final[dict[str, dict[str, Any]]] = {
    "run": {"segments": []},
    "notify": {"note": "note"},
    "pod_event": {"note": "note"},
    "compact": {"focus": None},
    "rewind": {"to": 1, "restore": "both"},
    "approve": {"call_id": "toolu_1", "scope": "once"},
    "deny": {"call_id": "toolu_1", "message": ""},
    "answer_elicitation": {"input_id": "input_1", "action": "decline", "content": None},
    "turn_finished": {"result": "finished"},
    "turn_paused": {"result": "paused"},
    "turn_failed": {"result": "errored"},
    "turn_interrupted": {"result": "cancelled"},
}
"""Keyword arguments sent with each event, as the runtime sends them, so actions can bind."""

TABLE_START: Final = "<!-- transition-table:start -->"
TABLE_END: Final = "<!-- transition-table:end -->"


class RecordingModel:
    """A :class:`~states.lifecycle.LifecycleModel` that only records which actions ran."""

    def __init__(self, *, notes_queued: bool = False, turn_is_open: bool = False) -> None:
        self.actions: list[str] = []
        self.turn_end: str | None = None
        self.run_end: str | None = None
        self.notes_queued = notes_queued
        self.turn_is_open = turn_is_open

    def stash_file_refs(self, segments: Any) -> None:
        """Record the call."""
        self.actions.append("stash_file_refs")

    def start_turn(self) -> None:
        """Record the call."""
        self.actions.append("start_turn")

    def resume_turn(self) -> None:
        """Record the call."""
        self.actions.append("resume_turn")

    def interrupt_turn(self) -> None:
        """Record the call."""
        self.actions.append("interrupt_turn")

    def close_orphans(self) -> None:
        """Record the call."""
        self.actions.append("close_orphans")

    def inject_interrupt_note(self) -> None:
        """Record the call."""
        self.actions.append("inject_interrupt_note")

    def queue_note(self, note: Any) -> None:
        """Record the call."""
        self.actions.append("queue_note")

    def inject_queued_notes(self) -> None:
        """Record the call."""
        self.actions.append("inject_queued_notes")

    def has_queued_notes(self) -> bool:
        """Whether the table row starts with notes waiting."""
        return self.notes_queued

    def request_compaction(self, focus: str | None = None) -> None:
        """Record the call."""
        self.actions.append("request_compaction")

    def start_compaction(self) -> None:
        """Record the call."""
        self.actions.append("start_compaction")

    def request_rewind(self, to: int = 0, restore: str = "both") -> None:
        """Record the call."""
        self.actions.append("request_rewind")

    def start_rewind(self) -> None:
        """Record the call."""
        self.actions.append("start_rewind")

    def turn_open(self) -> bool:
        """Whether the table row starts with a turn open."""
        return self.turn_is_open

    def compaction_requested(self) -> bool:
        """No compaction waits in a table row."""
        return False

    def approve_call(self, call_id: str, scope: str = "once") -> None:
        """Record the call."""
        self.actions.append("approve_call")

    def deny_call(self, call_id: str, message: str = "", asked: bool = True) -> None:
        """Record the call."""
        self.actions.append("deny_call")

    def answer_input(
        self, input_id: str, action: str = "decline", content: dict[str, Any] | None = None
    ) -> None:
        """Record the call."""
        self.actions.append("answer_input")

    def input_waiting(self) -> bool:
        """Whether the table row starts with a request for input waiting: in
        ``awaiting_approval`` none does (a row of its own would need a second model)."""
        return False

    def end_turn(self, result: str) -> None:
        """Record the call and the result the machine chose."""
        self.actions.append("end_turn")
        self.turn_end = result

    def end_run(self, result: str) -> None:
        """Record the call and the result the machine chose."""
        self.actions.append("end_run")
        self.run_end = result

    def on_enter_stopped(self) -> None:
        """Record the call."""
        self.actions.append("stop")


@dataclass(frozen=True, slots=True, kw_only=True)
class TransitionRow:
    """What one event does to a pod resting in one state."""

    state: str
    """The leaf state the pod was in."""
    event: str
    """The event sent."""
    kind: EventKind
    """Whether the event is a protocol method, a turn outcome or a round marker."""
    target: str
    """The leaf state afterwards (the same as ``state`` when rejected)."""
    status_before: PublicStatus
    """The public status before the event."""
    status_after: PublicStatus
    """The public status afterwards; a change means a ``status`` event goes out."""
    actions: tuple[str, ...]
    """Model actions called, in order."""
    allowed: bool
    """False when the machine raised ``TransitionNotAllowed``."""
    error: str | None
    """The protocol error code of a rejected method; None when allowed or without a code."""
    turn_end: str | None = None
    """The result the turn was closed with (``turn_end``), when this edge closes it."""
    run_end: str | None = None
    """The result the client's run ended with (``run_end``), when this edge ends it."""

    @property
    def noop(self) -> bool:
        """Accepted but changes nothing: same state, no action."""
        return self.allowed and self.target == self.state and not self.actions


def event_kind(event: str) -> EventKind:
    """Which family an event belongs to."""
    if event in METHOD_EVENTS:
        return "method"
    if event in OUTCOME_EVENTS:
        return "outcome"
    if event in ROUND_EVENTS:
        return "round"
    raise ValueError(f"unknown event {event!r}")


def _active_ids(machine: PodLifecycle) -> frozenset[str]:
    return frozenset(str(value) for value in machine.configuration_values)


def transition_row(state: str, event: str, *, turn_open: bool = False) -> TransitionRow:
    """Send ``event`` to a fresh machine started in ``state`` and record what happens.

    ``turn_open`` draws the row as if a paused turn were open (a compaction from ``paused``).
    """
    model = RecordingModel(turn_is_open=turn_open)
    machine = PodLifecycle(model=model, start_value=state)
    model.actions.clear()  # starting in ``stopped`` runs its entry action; not this event's
    before = _active_ids(machine)
    if leaf_state(before) != state:
        raise ValueError(f"cannot start the machine in {state!r} (got {sorted(before)})")
    try:
        machine.send(event, **EVENT_ARGUMENTS.get(event, {}))
    except TransitionNotAllowed:
        return TransitionRow(
            state=state,
            event=event,
            kind=event_kind(event),
            target=state,
            status_before=public_status(before),
            status_after=public_status(before),
            actions=tuple(model.actions),
            allowed=False,
            error=REJECTION_CODES.get(event) if event in METHOD_EVENTS else None,
        )
    after = _active_ids(machine)
    return TransitionRow(
        state=state,
        event=event,
        kind=event_kind(event),
        target=leaf_state(after),
        status_before=public_status(before),
        status_after=public_status(after),
        actions=tuple(model.actions),
        allowed=True,
        error=None,
        turn_end=model.turn_end,
        run_end=model.run_end,
    )


def transition_table(
    states: Iterable[str] = TABLE_STATES,
    events: Iterable[str] = ALL_EVENTS,
    *,
    turn_open: bool = False,
) -> list[TransitionRow]:
    """Every (state, event) row, states outer, in declaration order."""
    event_list = list(events)
    return [
        transition_row(state, event, turn_open=turn_open)
        for state in states
        for event in event_list
    ]


def _outcome_cell(row: TransitionRow) -> str:
    if not row.allowed:
        return f"error `{row.error}`" if row.error else "not allowed"
    if row.noop:
        return "no-op"
    if row.target == row.state:
        return "stays"
    return f"→ `{row.target}`"


def _status_cell(row: TransitionRow) -> str:
    if row.status_after == row.status_before:
        return row.status_before
    return f"{row.status_before} → **{row.status_after}**"


def _ends_cell(row: TransitionRow) -> str:
    parts = []
    if row.turn_end is not None:
        parts.append(f"turn `{row.turn_end}`")
    if row.run_end is not None:
        parts.append(f"run `{row.run_end}`")
    return ", ".join(parts) or "—"


def render_markdown_table(
    rows: Sequence[TransitionRow], events: Iterable[str] = METHOD_EVENTS
) -> str:
    """A Markdown table of the rows whose event is in ``events``, one line per pair."""
    wanted = set(events)
    lines = [
        "| State | Event | Result | Actions, in order | Status | Ends |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        if row.event not in wanted:
            continue
        actions = ", ".join(f"`{name}`" for name in row.actions) or "—"
        lines.append(
            f"| `{row.state}` | `{row.event}` | {_outcome_cell(row)} | {actions} "
            f"| {_status_cell(row)} | {_ends_cell(row)} |"
        )
    return "\n".join(lines) + "\n"


def _table_body() -> str:
    rows = transition_table()
    return (
        "#### Methods\n\n"
        f"{render_markdown_table(rows, METHOD_EVENTS)}\n"
        "#### Turn outcomes (sent by the runtime when the turn task ends)\n\n"
        f"{render_markdown_table(rows, OUTCOME_EVENTS)}\n"
        "#### Round markers (sent by the turn loop inside `running`)\n\n"
        f"{render_markdown_table(rows, ROUND_EVENTS)}"
    )


DOC_BLOCK = DocBlock(
    start=TABLE_START,
    end=TABLE_END,
    render=_table_body,
    command="python -m states.table",
    what="transition table",
    doc="docs/protocol.md",
)
"""The transition table as docs/protocol.md carries it."""


def generated_doc_block() -> str:
    """The block the protocol docs carry between the table markers."""
    return DOC_BLOCK.generated()


def extract_doc_block(text: str) -> str:
    """The generated block of a document, markers included; ValueError when absent."""
    return DOC_BLOCK.extract(text)


def refresh_doc(text: str) -> str:
    """The document with its generated block replaced by a fresh render."""
    return DOC_BLOCK.refresh(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, or refresh / check the block of a Markdown document."""
    printed = render_markdown_table(transition_table(), ALL_EVENTS)
    return DOC_BLOCK.main(argv, description=__doc__, printed=printed)


if __name__ == "__main__":
    raise SystemExit(main())
