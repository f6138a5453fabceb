"""Conformance cases are derived from the transition table, row by row."""

from __future__ import annotations

from conformance.cases import StateFacts, build_cases
from states.table import transition_table


def test_one_case_per_row_and_only_methods_run() -> None:
    rows = transition_table()
    cases = build_cases(rows)
    assert [c.row for c in cases] == rows
    for case in cases:
        compaction = case.row.state in ("summarizing", "compacting", "awaiting_approval")
        assert (case.skip_reason is None) == (case.row.kind == "method" and not compaction)
        assert case.skip_reason is None or "runtime" in case.skip_reason or compaction


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
