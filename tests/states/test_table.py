"""The transition-table helpers: rows, rendering and the docs block."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

import states
from states.lifecycle import METHOD_EVENTS, OUTCOME_EVENTS, ROUND_EVENTS
from states.table import (
    ALL_EVENTS,
    TABLE_END,
    TABLE_START,
    TABLE_STATES,
    TransitionRow,
    event_kind,
    extract_doc_block,
    generated_doc_block,
    main,
    refresh_doc,
    render_markdown_table,
    transition_row,
    transition_table,
)


def test_rows_for_an_accepted_a_rejected_and_an_ignored_event() -> None:
    assert transition_row("idle", "run") == TransitionRow(
        state="idle",
        event="run",
        kind="method",
        target="requesting",
        status_before="idle",
        status_after="running",
        actions=("stash_file_refs", "start_turn"),
        allowed=True,
        error=None,
    )
    assert transition_row("idle", "pause") == TransitionRow(
        state="idle",
        event="pause",
        kind="method",
        target="idle",
        status_before="idle",
        status_after="idle",
        actions=(),
        allowed=False,
        error="not_running",
    )
    assert transition_row("idle", "turn_finished") == TransitionRow(
        state="idle",
        event="turn_finished",
        kind="outcome",
        target="idle",
        status_before="idle",
        status_after="idle",
        actions=(),
        allowed=False,
        error=None,
    )


def test_noop_means_accepted_without_effect() -> None:
    assert transition_row("paused", "pause").noop
    assert not transition_row("paused", "notify").noop  # queues a note
    assert not transition_row("idle", "pause").noop  # rejected


def test_table_is_states_outer_in_declared_order() -> None:
    rows = transition_table()
    assert [(r.state, r.event) for r in rows] == [(s, e) for s in TABLE_STATES for e in ALL_EVENTS]
    assert ALL_EVENTS == METHOD_EVENTS + OUTCOME_EVENTS + ROUND_EVENTS


def test_table_can_be_restricted() -> None:
    rows = transition_table(states=["paused"], events=["resume"])
    assert [(r.state, r.event, r.target, r.actions) for r in rows] == [
        ("paused", "resume", "requesting", ("resume_turn",))
    ]


def test_unknown_start_state_is_refused() -> None:
    # ``interrupted`` moves on at once, so a machine cannot rest there.
    with pytest.raises(ValueError, match="cannot start"):
        transition_row("interrupted", "run")


def test_event_kind() -> None:
    assert [event_kind(e) for e in ("run", "turn_paused", "round_done")] == [
        "method",
        "outcome",
        "round",
    ]
    with pytest.raises(ValueError):
        event_kind("nope")


def test_render_markdown_table_whole_text() -> None:
    rows = transition_table(states=["idle", "paused", "requesting"], events=["pause", "run"])
    assert render_markdown_table(rows, events=["pause", "run"]) == (
        "| State | Event | Result | Actions, in order | Status | Ends |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| `idle` | `pause` | error `not_running` | — | idle | — |\n"
        "| `idle` | `run` | → `requesting` | `stash_file_refs`, `start_turn` "
        "| idle → **running** | — |\n"
        "| `paused` | `pause` | no-op | — | paused | — |\n"
        "| `paused` | `run` | → `requesting` | `stash_file_refs`, `close_orphans`, "
        "`end_turn`, `inject_interrupt_note`, `start_turn` | paused → **running** "
        "| turn `cancelled` |\n"
        "| `requesting` | `pause` | → `pausing` | `interrupt_turn` | running | — |\n"
        "| `requesting` | `run` | error `already_running` | — | running | — |\n"
    )


def test_render_filters_events_and_marks_stays_and_not_allowed() -> None:
    rows = transition_table(states=["requesting"], events=["notify", "round_done"])
    assert render_markdown_table(rows, events=["notify", "round_done"]) == (
        "| State | Event | Result | Actions, in order | Status | Ends |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| `requesting` | `notify` | stays | `queue_note` | running | — |\n"
        "| `requesting` | `round_done` | not allowed | — | running | — |\n"
    )
    assert render_markdown_table(rows, events=[]).count("\n") == 2


def test_doc_block_refresh_and_extract() -> None:
    stale = f"intro\n\n{TABLE_START}\nold\n{TABLE_END}\n\noutro\n"
    fresh = refresh_doc(stale)
    assert fresh == f"intro\n\n{generated_doc_block()}\n\noutro\n"
    assert extract_doc_block(fresh) == generated_doc_block()
    assert refresh_doc(fresh) == fresh
    with pytest.raises(ValueError, match="transition-table"):
        extract_doc_block("no markers here")


def test_main_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"# t\n{TABLE_START}\n{TABLE_END}\n", encoding="utf-8")
    assert main(["--check-docs", str(doc)]) == 1
    assert "--write-docs" in capsys.readouterr().err
    assert main(["--write-docs", str(doc)]) == 0
    assert main(["--check-docs", str(doc)]) == 0
    assert main([]) == 0
    assert capsys.readouterr().out == render_markdown_table(transition_table(), ALL_EVENTS)


def test_states_all_is_complete_and_sorted() -> None:
    eager = {
        name
        for name, value in vars(states).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    } - {"TYPE_CHECKING", "Any", "import_module"}
    assert set(states.__all__) == eager | set(states._LAZY)
    assert all(getattr(states, name) is not None for name in states.__all__)
    assert states.transition_table is transition_table
    upper = [n for n in states.__all__ if n.isupper()]
    camel = [n for n in states.__all__ if n[0].isupper() and not n.isupper()]
    lower = [n for n in states.__all__ if n[0].islower()]
    assert states.__all__ == sorted(upper) + sorted(camel) + sorted(lower)
    with pytest.raises(AttributeError):
        _ = states.nothing_here
