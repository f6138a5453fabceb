"""Why the kit skips a row, in words for the report: the rows a client cannot send (turn
outcomes, round markers: which method rows make the pod take them), and the rewind rows."""

from __future__ import annotations

from collections.abc import Sequence

from conformance.state_facts import StateFacts
from states.table import TransitionRow

__all__ = ["REWIND", "REWIND_SKIP", "passing_rows", "rewind_states"]


def _round_marker_use(facts: StateFacts, row: TransitionRow) -> str:
    """Which kit holds make the pod take a round marker that moves it."""
    tools, approval, summary = facts.tools_state, facts.approval_state, facts.summary_state
    waiting = facts.input_state
    edge = (row.state, row.target)
    if edge == (facts.stream_state, tools):
        return (
            f"the pod takes it before every `{tools}`, `{approval}` and `{waiting}` row "
            "(slow tool, call)"
        )
    if edge == (tools, approval):
        return f"the pod takes it before every `{approval}` row (the kit's call needing approval)"
    if edge == (approval, tools):
        return f"the pod takes it when `{approval}` × approve / deny lets the call go on"
    if edge == (tools, waiting):
        return f"the pod takes it before every `{waiting}` row (the kit's call asking for input)"
    if edge == (waiting, tools):
        return f"the pod takes it when `{waiting}` × answer_elicitation lets the call go on"
    if edge == (tools, facts.stream_state):
        return (
            f"the pod takes it after an answered call ran (`{approval}` × approve / deny, "
            f"`{waiting}` × answer_elicitation)"
        )
    if edge == (facts.stream_state, summary):
        return f"the pod takes it before every `{summary}` row (compact, then approve)"
    if edge == (summary, facts.stream_state):
        return (
            f"observed in {facts.stream_state}-compaction_started: the compaction a request "
            "past compact_at needs commits, and the turn goes on"
        )
    return (
        f"not driven: it needs a call waiting for approval and another for input at once, "
        f"and the kit's calls wait one at a time ({edge[0]} → {edge[1]})"
    )


def passing_rows(facts: StateFacts, row: TransitionRow) -> str:
    """Which method rows make the pod take this runtime-sent row, for the skip reason."""
    if row.kind == "round":
        if row.allowed and row.target != row.state:
            return _round_marker_use(facts, row)
        return "a client cannot send it"
    if not row.allowed:
        return "a client cannot send it"
    into = [
        (state, event, r)
        for (state, event), r in facts.by_key.items()
        if r.kind == "method" and r.allowed and r.target == row.state
    ]
    # What interrupts a task there (settled by this row), and what starts one there.
    stops = [f"{s}-{e}" for s, e, r in into if "interrupt_turn" in r.actions]
    if row.event == "compaction_failed" and not facts.is_compacting(row.state):
        stops = [f"{s}-{e}" for s, e, _ in into if facts.is_compacting(s)]
    starts = [f"{s}-{e}" for s, e, _ in into if s != row.state]
    if row.event in ("turn_interrupted", "compaction_failed") and stops:
        return "observed as the settle of " + ", ".join(stops[:4])
    if row.event == "compaction_done" and facts.is_compacting(row.state) and starts:
        return "observed when the compaction of " + ", ".join(starts[:2]) + " completes"
    if row.state in (facts.stream_state, facts.tools_state) and row.event == "turn_finished":
        return "observed when the kit's fast replies end a turn (e.g. idle-run)"
    if row.state == facts.approval_state and row.event == "turn_finished":
        return (
            f"not driven: a turn cannot finish while its call waits ({row.state} × approve "
            "lets it run first)"
        )
    if row.state == facts.input_state and row.event == "turn_finished":
        return (
            f"not driven: a turn cannot finish while its call waits ({row.state} × "
            "answer_elicitation lets it run first)"
        )
    return "a client cannot send it"


REWIND = "rewind"
REWIND_SKIP = (
    "a rewind names a user message of the pod's own history (a seq the kit cannot know in "
    "advance) and is over in a moment; tests/e2e/test_rewind_e2e.py drives these rows against "
    "the runtime"
)


def rewind_states(table: Sequence[TransitionRow]) -> set[str]:
    """The states a ``rewind`` leads to (the kit does not hold a pod there)."""
    return {row.target for row in table if row.event == REWIND and row.allowed} - {
        row.state for row in table if row.event == REWIND and row.allowed
    }
