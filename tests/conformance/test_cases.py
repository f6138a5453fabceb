"""Conformance cases are derived from the transition table, row by row."""

from __future__ import annotations

from dataclasses import replace

from conformance.cases import Setup, build_cases
from conformance.state_facts import StateFacts
from states.table import transition_table


def test_one_case_per_row_and_only_methods_run() -> None:
    rows = transition_table()
    cases = build_cases(rows)
    assert [c.row for c in cases[: len(rows)]] == rows
    # Then the compaction's method rows again, started with a paused turn open.
    variants = cases[len(rows) :]
    assert [c.id for c in variants] == [
        *(
            f"compacting-{row.event}-from-paused"
            for row in rows
            if row.state == "compacting" and row.kind == "method"
        ),
        "awaiting_approval-approve-session",
    ]
    for case in cases:
        # One round marker is driven too: a request past compact_at makes the pod compact.
        # Rewinds need a seq of the pod's own history: the runtime's e2e tests drive them.
        rewind = "rewind" in (case.row.event, case.row.state) or case.row.state == "rewinding"
        driven = (
            case.row.kind == "method" or case.id == "requesting-compaction_started"
        ) and not rewind
        assert (case.skip_reason is None) == driven, case.id
        assert case.skip_reason is None or "runtime" in case.skip_reason


def test_a_request_past_compact_at_is_a_case_of_its_own() -> None:
    (case,) = [c for c in build_cases() if c.id == "requesting-compaction_started"]
    assert case.setup is not None and case.setup.hold == "past_compact_at"
    assert case.expect is not None
    assert (case.expect.target, case.expect.settle, case.expect.run_end) == (
        "summarizing",
        "idle",
        "finished",
    )
    assert case.expect.compaction_trigger == "auto"


def test_every_runtime_row_says_how_it_is_observed_or_why_not() -> None:
    reasons = {c.id: c.skip_reason for c in build_cases() if c.skip_reason is not None}
    assert reasons["compacting-compaction_failed"] == (
        "turn outcome, sent by the pod's runtime; observed as the settle of "
        "compacting-pause, compacting-cancel"
    )
    assert "`awaiting_approval` × approve" in str(reasons["awaiting_approval-approval_settled"])
    assert "requesting-compaction_started" in str(reasons["summarizing-compaction_committed"])
    assert "not driven" in str(reasons["awaiting_approval-turn_finished"])


def test_expectations_mirror_the_row() -> None:
    for case in build_cases():
        if case.expect is None:
            continue
        row, expect = case.row, case.expect
        assert expect.target == row.target, case.id
        assert expect.error_code == row.error, case.id
        assert expect.status_after == row.status_after, case.id
        assert expect.close_orphans == ("close_orphans" in row.actions), case.id
        assert expect.interrupt_note == ("inject_interrupt_note" in row.actions), case.id


def test_state_facts_come_from_the_table() -> None:
    facts = StateFacts(transition_table())
    assert [s for s in facts.states if facts.is_rest(s)] == ["idle", "paused", "stopped"]
    assert [s for s in facts.states if facts.is_round(s)] == [
        "requesting",
        "executing_tools",
        "awaiting_approval",
        "awaiting_input",
        "summarizing",
    ]
    assert [s for s in facts.states if facts.is_compacting(s)] == ["compacting"]
    assert {s: facts.settles_to(s) for s in facts.states if facts.is_winding(s)} == {
        "pausing": "paused",
        "cancelling": "idle",
        "stopping": "stopped",
    }


def test_setups_reach_each_state_the_table_way() -> None:
    setups = {c.id: c.setup for c in build_cases() if c.setup is not None}
    assert setups["pausing-run"] is not None and setups["pausing-run"].describe() == (
        "slow tool → pause (same write)"
    )
    assert setups["stopped-run"] is not None and setups["stopped-run"].describe() == (
        "idle → shutdown (same write)"
    )
    paused_run, paused_resume = setups["paused-run"], setups["paused-resume"]
    assert paused_run is not None and paused_run.orphans_wanted
    assert paused_resume is not None and paused_resume.hold == "requesting"


def test_run_and_turn_ends_come_from_the_ends_column() -> None:
    """Each case expects the results of the row that ends its task, not a mapping of its own."""
    rows = transition_table()
    facts = StateFacts(rows)
    cases = {c.id: c for c in build_cases(rows)}
    for case_id, ending in {
        "requesting-pause": ("pausing", "turn_interrupted"),
        "awaiting_approval-cancel": ("cancelling", "turn_interrupted"),
        "summarizing-shutdown": ("stopping", "turn_interrupted"),
        "compacting-shutdown": ("stopping", "compaction_failed"),
        "compacting-pause": ("compacting", "compaction_failed"),
        "awaiting_approval-approve": ("awaiting_approval", "turn_finished"),
        "idle-run": ("requesting", "turn_finished"),
    }.items():
        expect = cases[case_id].expect
        assert expect is not None, case_id
        row = facts.row(*ending)
        assert (expect.settle, expect.run_end) == (row.target, row.run_end), case_id
        assert expect.turn_end_result == row.turn_end, case_id


def test_the_ends_drive_the_expectation() -> None:
    """A machine whose cancel ended runs as `paused` would make the kit expect exactly that."""
    rows = [
        replace(r, run_end="paused")
        if (r.state, r.event) == ("cancelling", "turn_interrupted")
        else r
        for r in transition_table()
    ]
    cases = {c.id: c for c in build_cases(rows)}
    expect = cases["executing_tools-cancel"].expect
    assert expect is not None and expect.run_end == "paused"


def test_new_states_are_held_by_the_kit_and_resolve_approvals() -> None:
    cases = {c.id: c for c in build_cases()}
    holds = {
        state: cases[f"{state}-run"].setup
        for state in ("awaiting_approval", "summarizing", "compacting")
    }
    assert {s: h.hold if h else None for s, h in holds.items()} == {
        "awaiting_approval": "awaiting_approval",
        "summarizing": "summarizing",
        "compacting": "compacting",
    }
    decisions = {
        event: cases[f"awaiting_approval-{event}"].expect
        for event in ("approve", "deny", "pause", "cancel", "shutdown", "run")
    }
    assert {e: x.approval if x else None for e, x in decisions.items()} == {
        "approve": "approved",
        "deny": "denied",
        "pause": "withdrawn",
        "cancel": "withdrawn",
        "shutdown": "withdrawn",
        "run": "withdrawn",
    }
    deny = decisions["deny"]
    assert deny is not None and deny.note_delivered and deny.settle == "idle"
    for state in ("compacting", "summarizing"):
        for event in ("pause", "cancel", "shutdown", "notify"):
            expect = cases[f"{state}-{event}"].expect
            assert expect is not None and expect.compaction_forbidden, (state, event)


def test_a_wait_for_input_is_held_by_the_kit_and_ends_as_the_row_says() -> None:
    cases = {c.id: c for c in build_cases()}
    facts = StateFacts(transition_table())
    assert facts.input_state == "awaiting_input"
    events = ("answer_elicitation", "pause", "cancel", "shutdown", "run", "approve", "notify")
    expects = {e: cases[f"awaiting_input-{e}"].expect for e in events}
    assert all(cases[f"awaiting_input-{e}"].setup == Setup(hold="awaiting_input") for e in events)
    assert {e: x.elicitation if x else None for e, x in expects.items()} == {
        "answer_elicitation": "accept",
        "pause": "withdrawn",
        "cancel": "withdrawn",
        "shutdown": "withdrawn",
        "run": "withdrawn",
        "approve": "withdrawn",
        "notify": "withdrawn",
    }
    # The answer is an internal transition: the state stays, then the call goes on and the
    # turn finishes as turn_finished says; anything else is settled as from any round state.
    answer = expects["answer_elicitation"]
    assert answer is not None and not answer.changes_state and answer.kit_interrupt is None
    assert (answer.settle, answer.run_end) == ("idle", "finished")
    approve = expects["approve"]
    assert approve is not None and (approve.error_code, approve.kit_interrupt) == (
        "not_awaiting_approval",
        "pause",
    )
    cancel = expects["cancel"]
    assert cancel is not None and (cancel.settle, cancel.run_end) == ("idle", "cancelled")
    # Elsewhere an answer is refused, and no request for input is expected to end.
    for state in ("idle", "executing_tools", "awaiting_approval", "paused"):
        refused = cases[f"{state}-answer_elicitation"].expect
        assert refused is not None and refused.error_code == "not_awaiting_input", state
        assert refused.elicitation is None, state
    reasons = {c.id: c.skip_reason for c in build_cases() if c.skip_reason is not None}
    assert "answer_elicitation lets the call go on" in str(reasons["awaiting_input-input_settled"])
    assert "awaiting_input` row" in str(reasons["executing_tools-input_needed"])


def test_a_compaction_from_paused_returns_to_paused_and_keeps_the_turn_open() -> None:
    cases = {c.id: c for c in build_cases()}
    pause = cases["compacting-pause-from-paused"].expect
    assert pause is not None
    assert (pause.settle, pause.run_end, pause.turn_end_forbidden) == ("paused", None, True)
    # Shutdown closes the paused turn: the row drawn with the turn open says so.
    shutdown = cases["compacting-shutdown-from-paused"].expect
    assert shutdown is not None
    assert (shutdown.settle, shutdown.turn_end_result) == ("stopped", "cancelled")
    from_idle = cases["compacting-shutdown"].expect
    assert from_idle is not None and from_idle.turn_end_forbidden
