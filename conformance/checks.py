"""The checks of one row: what the pod must have said and sent, from the row's expectation.

Each check reads what a row has observed (the events on its connection, the requests its
fake API received) and records every failed expectation on the :class:`Row`; the driver
decides when to stop. The expectations come from :mod:`conformance.cases`, and so from the
transition table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.cases import Case, Expectation
from conformance.fake_api import RecordedRequest
from conformance.process import PodProcess
from conformance.recorder import Mismatch, Recorder, Seen
from conformance.request_blocks import trailing_user_blocks
from conformance.thinking import thinking_on
from orchestrator.core.history import INTERRUPT_NOTE
from orchestrator.core.prompt_cache import without_breakpoints
from states.table import TABLE_STATES

__all__ = [
    "Row",
    "check_reply",
    "check_settled",
    "check_target",
    "check_wire",
    "open_calls",
    "request_text",
]


STATUS_REPLIES = frozenset({"set_budget"})
"""Machine events whose answer is a ``status`` event even where they change no state."""


def request_text(request: RecordedRequest) -> str:
    """A recorded request's body as JSON text, to search for a marker in."""
    return json.dumps(request.body, ensure_ascii=False) if request.body is not None else ""


def _segments_text(data: dict[str, Any]) -> str:
    return json.dumps(data.get("segments", []), ensure_ascii=False)


@dataclass(slots=True)
class Row:
    """The running state of one case: where its phases began and the problems found."""

    case: Case
    expect: Expectation
    pod: PodProcess
    conn: Recorder
    timeout: float
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    requests_at_start: int = 0
    requests_at_method: int = 0
    method_mark: int = 0
    setup_mark: int = 0
    sync_index: int | None = None
    method_id: str = ""
    note: str = ""
    orphans: list[str] = field(default_factory=list)
    approval_id: str = ""
    """The tool call the kit's setup left waiting for approval, if any."""
    input_id: str = ""
    """The request for input the kit's setup left waiting (``elicitation_request``), if any."""
    input_schema: dict[str, Any] = field(default_factory=dict)
    """The form that request asks the person to fill in (its requested schema)."""
    input_marker: str = ""
    """The text the kit's answer put in the form, to find in the tool's result ("" if the form
    has no string field to carry it)."""
    thinking: bool = False
    """The thinking profile: every request must turn thinking on."""

    def fail(self, message: str) -> None:
        """Record a failed check; the row goes on to its phase's other checks."""
        self.problems.append(message)

    @property
    def events(self) -> list[Seen]:
        """Every event the row's connection has received."""
        return self.conn.events

    def check_or_stop(self) -> None:
        """End the row at the end of a phase that found problems."""
        if self.problems:
            raise Mismatch(self.problems.pop())

    def requests(self) -> list[RecordedRequest]:
        """The requests the fake API received since the row began."""
        return self.pod.api.requests[self.requests_at_start :]


def open_calls(events: Sequence[Seen]) -> list[str]:
    """Tool calls announced (``tool_call_done``) and not yet answered, in order."""
    calls = [e.data.get("id") for e in events if e.event == "tool_call_done"]
    answered = {e.data.get("id") for e in events if e.event == "tool_result"}
    return [str(c) for c in dict.fromkeys(calls) if c not in answered]


def _window_end(row: Row) -> int:
    return row.sync_index if row.sync_index is not None else len(row.events)


def check_reply(row: Row) -> None:
    """The method's direct answer: the expected error code, or no error."""
    expect, method = row.expect, row.case.row.event
    errors = [
        e
        for e in row.events[row.setup_mark : _window_end(row)]
        if e.event == "error" and e.data.get("id") == row.method_id
    ]
    if expect.reply == "error":
        if not errors:
            row.fail(
                f"{method} in {row.case.row.state}: expected error {expect.error_code!r}, "
                "got no error before the next get_status reply"
            )
        elif errors[0].data.get("code") != expect.error_code:
            row.fail(
                f"{method} in {row.case.row.state}: expected error {expect.error_code!r}, "
                f"got {errors[0].data.get('code')!r} ({errors[0].data.get('message')!r})"
            )
    elif expect.reply == "none" and errors:
        row.fail(
            f"{method} in {row.case.row.state}: expected no error, got "
            f"{errors[0].data.get('code')!r} ({errors[0].data.get('message')!r})"
        )


def check_target(row: Row) -> None:
    """The first state change after the method, or none for a row that keeps its state."""
    expect, source = row.expect, row.case.row.state
    table_states = set(TABLE_STATES)
    if expect.changes_state:
        changed = next(
            (
                e
                for e in row.events[row.method_mark :]
                if e.event == "status"
                and e.data.get("state") in table_states
                and e.data.get("state") != source
            ),
            None,
        )
        if changed is None:
            row.fail(f"expected a status event with state {expect.target!r}, saw none")
        elif changed.data.get("state") != expect.target:
            row.fail(
                f"expected the state to change to {expect.target!r}, "
                f"the first status after the method says {changed.data.get('state')!r}"
            )
        elif changed.data.get("status") != expect.status_after:
            row.fail(
                f"state {expect.target!r} must be public status {expect.status_after!r}, "
                f"got {changed.data.get('status')!r}"
            )
        return
    if row.sync_index is None:
        return
    sync = row.events[row.sync_index]
    if sync.data.get("state") != source or sync.data.get("status") != expect.status_after:
        row.fail(
            f"the state must stay {source!r} (status {expect.status_after!r}); get_status "
            f"right after the method says {sync.data.get('status')!r}/{sync.data.get('state')!r}"
        )
    setup = row.case.setup
    if expect.quiet and setup is not None and not setup.pipelined:
        # A method answered by a ``status`` event (``set_budget``: its reply, and the same
        # status to every client) says so without changing anything, as long as the state
        # it names is the one the pod stays in.
        answered_by_status = row.case.row.event in STATUS_REPLIES
        noise = [
            e.event
            for e in row.events[row.method_mark : row.sync_index]
            if e.event not in ("error", "alert")
            and not (answered_by_status and e.event == "status" and e.data.get("state") == source)
        ]
        if noise:
            row.fail(f"a refused or no-op method must change nothing; the pod sent {noise}")


def _first_after(row: Row, name: str, start: int) -> int | None:
    return next((i for i in range(start, len(row.events)) if row.events[i].event == name), None)


def check_settled(row: Row, rest: Seen) -> None:
    """Where the pod came to rest and the events on the way, from the row's actions."""
    expect = row.expect
    if rest.data.get("state") != expect.settle:
        row.fail(
            f"expected the pod to come to rest in {expect.settle!r}, "
            f"it reports {rest.data.get('state')!r}"
        )
    events = row.events
    start = row.method_mark
    run_end_at = _first_after(row, "run_end", start)
    if expect.run_end is not None:
        if run_end_at is None:
            row.fail(f"expected run_end with result {expect.run_end!r}, saw none")
        elif events[run_end_at].data.get("result") != expect.run_end:
            row.fail(
                f"expected run_end result {expect.run_end!r}, "
                f"got {events[run_end_at].data.get('result')!r}"
            )
    end = run_end_at if run_end_at is not None else len(events)
    turn_ends = [e for e in events[start:end] if e.event == "turn_end"]
    if expect.turn_end and not turn_ends:
        row.fail("expected a turn_end for the turn that ended, saw none")
    elif (
        turn_ends
        and expect.turn_end_result is not None
        and turn_ends[0].data.get("result") != expect.turn_end_result
    ):
        row.fail(
            f"expected turn_end result {expect.turn_end_result!r} (the table's Ends), "
            f"got {turn_ends[0].data.get('result')!r}"
        )
    if expect.turn_end_forbidden and turn_ends:
        row.fail(f"the turn must stay open (no turn_end), got turn_end {turn_ends[0].data}")
    if expect.turn_start is not None:
        starts = [e for e in events[start:] if e.event == "turn_start"]
        resumed = expect.turn_start == "resumed"
        if not starts:
            row.fail("expected a turn_start, saw none")
        elif bool(starts[0].data.get("resumed", False)) != resumed:
            row.fail(f"expected turn_start resumed={resumed}, got {starts[0].data}")
    if expect.user_message and not any(
        e.event == "user_message" and row.note in _segments_text(e.data) for e in events[start:]
    ):
        row.fail("expected a user_message carrying the run's input, saw none")
    if expect.input_refused and any(
        e.event in ("user_message", "system_note") and row.note in json.dumps(e.data)
        for e in events[start:]
    ):
        row.fail("a refused method's text was committed to history")
    if expect.close_orphans or expect.interrupt_note:
        _check_interrupt_order(row)
    if expect.approval is not None:
        _check_approval(row, expect.approval)
    if expect.elicitation is not None:
        _check_elicitation(row, expect.elicitation)
    waiting = rest.data.get("approvals") or []
    if waiting:
        row.fail(f"the pod is at rest with approvals still listed in its status: {waiting}")
    asking = rest.data.get("elicitations") or []
    if asking:
        row.fail(f"the pod is at rest with requests for input still listed in its status: {asking}")
    if expect.compaction_trigger is not None:
        triggers = [e.data.get("trigger") for e in events[start:] if e.event == "compaction"]
        if expect.compaction_trigger not in triggers:
            row.fail(
                f"expected a compaction event with trigger {expect.compaction_trigger!r} "
                f"before the pod came to rest, saw {triggers or 'none'}"
            )
    if expect.compaction_forbidden:
        committed = [e.data for e in events[start:] if e.event == "compaction"]
        if committed:
            row.fail(
                "an interrupted compaction must leave the history as it was, but the pod "
                f"committed one: {committed[0]}"
            )
    if rest.data.get("status") in ("idle", "stopped"):
        still_open = open_calls(events)
        if still_open:
            row.fail(f"the pod is at rest with unanswered tool calls {still_open}")
    failures = [
        e.data for e in events[row.setup_mark :] if e.event == "error" and e.data.get("id") is None
    ]
    if failures:
        row.fail(f"a turn failed: {failures[0]}")


def _check_approval(row: Row, decision: str) -> None:
    """The waiting call's request is resolved as the row says, and its result tells so."""
    events, call = row.events, row.approval_id
    resolved = [
        e
        for e in events[row.setup_mark :]
        if e.event == "approval_resolved" and e.data.get("id") == call
    ]
    if not resolved:
        row.fail(f"expected approval_resolved {decision!r} for {call}, saw none")
        return
    if resolved[0].data.get("decision") != decision:
        row.fail(
            f"expected approval_resolved {decision!r} for {call}, "
            f"got {resolved[0].data.get('decision')!r}"
        )
    result = next(
        (
            e
            for e in events[row.setup_mark :]
            if e.event == "tool_result" and e.data.get("id") == call
        ),
        None,
    )
    if decision == "approved" and (result is None or result.data.get("is_error")):
        row.fail(
            f"the approved call {call} must run and succeed, its result is {result and result.data}"
        )
    if decision == "denied":
        if result is None or not result.data.get("is_error"):
            row.fail(
                f"the denied call {call} must get an error result, got {result and result.data}"
            )
        elif row.note not in json.dumps(result.data, ensure_ascii=False):
            row.fail(f"the denied call's result must carry the denial message, got {result.data}")


def _check_elicitation(row: Row, outcome: str) -> None:
    """The request for input ends as the row says; an accepted answer reaches the tool, whose
    result then carries it."""
    events, asked = row.events, row.input_id
    resolved = [
        e
        for e in events[row.setup_mark :]
        if e.event == "elicitation_resolved" and e.data.get("id") == asked
    ]
    if not resolved:
        row.fail(f"expected elicitation_resolved {outcome!r} for {asked}, saw none")
        return
    if resolved[0].data.get("action") != outcome:
        row.fail(
            f"expected elicitation_resolved {outcome!r} for {asked}, "
            f"got {resolved[0].data.get('action')!r}"
        )
    if outcome != "accept":
        return
    results = [e.data for e in events[row.setup_mark :] if e.event == "tool_result"]
    if not results or any(r.get("is_error") for r in results):
        row.fail(f"the call whose request for input was answered must succeed, got {results}")
    elif row.input_marker and not any(
        row.input_marker in json.dumps(r, ensure_ascii=False) for r in results
    ):
        row.fail(f"the answer {row.input_marker!r} never reached the tool: its result is {results}")


def _check_interrupt_order(row: Row) -> None:
    """Synthetic results for the orphans, then the interrupt note, then the user message."""
    expect, events, start = row.expect, row.events, row.method_mark
    last_result = -1
    if expect.close_orphans:
        if not row.orphans:
            row.notes.append(
                "the pause left no never-started tool calls (the pod starts every call of a "
                "round at once), so no synthetic result was expected"
            )
        for call_id in row.orphans:
            found = next(
                (
                    i
                    for i in range(start, len(events))
                    if events[i].event == "tool_result" and events[i].data.get("id") == call_id
                ),
                None,
            )
            if found is None:
                row.fail(f"expected a synthetic tool_result for never-started call {call_id}")
                continue
            if events[found].data.get("synthetic") is not True:
                row.fail(f"the tool_result closing {call_id} must be synthetic: true")
            last_result = max(last_result, found)
    note_at = -1
    if expect.interrupt_note:
        note_at = next(
            (
                i
                for i in range(start, len(events))
                if events[i].event == "system_note" and events[i].data.get("text") == INTERRUPT_NOTE
            ),
            -1,
        )
        if note_at < 0:
            row.fail(f"expected a system_note {INTERRUPT_NOTE!r}, saw none")
        elif note_at < last_result:
            row.fail("the interrupt note came before the synthetic tool results")
    if expect.user_message:
        user_at = next(
            (
                i
                for i in range(start, len(events))
                if events[i].event == "user_message" and row.note in _segments_text(events[i].data)
            ),
            -1,
        )
        if user_at >= 0 and user_at < max(note_at, last_result):
            row.fail("the user_message came before the synthetic results / interrupt note")
    if expect.end_turn and last_result >= 0:
        turn_end_at = _first_after(row, "turn_end", start)
        if turn_end_at is not None and turn_end_at < last_result:
            row.fail("turn_end came before the synthetic results closing the turn")


def check_wire(row: Row) -> None:
    """The requests the fake API received: all valid (and, under the thinking profile, all
    with thinking on), and what the row says reaches it."""
    expect = row.expect
    requests = row.requests()
    for n, request in enumerate(requests):
        if not request.valid:
            row.fail(
                f"request {n + 1} of the row was rejected by the fake API (HTTP "
                f"{request.status}): {request.error}"
            )
        elif row.thinking and not thinking_on(request.body):
            row.fail(
                f"request {n + 1} of the row did not turn thinking on (the kit runs the "
                "thinking profile; is the pod started with --thinking-args?)"
            )
    after = row.pod.api.requests[row.requests_at_method :]
    if expect.note_delivered and not any(row.note in request_text(r) for r in after):
        row.fail("the queued note never reached a later request")
    if (
        expect.elicitation == "accept"
        and row.input_marker
        and not any(row.input_marker in request_text(r) for r in after)
    ):
        row.fail("the tool's result carrying the answer for input never reached the model")
    if expect.input_refused and any(row.note in request_text(r) for r in after):
        row.fail("a refused method's text reached the API")
    if expect.interrupt_note and after:
        _check_interrupted_request(row, after[0])
    if expect.same_request_again:
        before = row.pod.api.requests[: row.requests_at_method]
        if before and after:
            old, new = before[-1].body, after[0].body
            # Cache breakpoints may move between the two; the conversation may not.
            if not (isinstance(old, dict) and isinstance(new, dict)) or without_breakpoints(
                old.get("messages")
            ) != without_breakpoints(new.get("messages")):
                row.fail("resume must send the interrupted request's messages again")
        else:
            row.fail("resume sent no request")


def _check_interrupted_request(row: Row, request: RecordedRequest) -> None:
    """Tool results for the orphans, then the interrupt note, then the user's text."""
    blocks = trailing_user_blocks(request)

    def result_at(call_id: str) -> int:
        return next(
            (
                i
                for i, b in enumerate(blocks)
                if b.get("type") == "tool_result" and b.get("tool_use_id") == call_id
            ),
            -1,
        )

    def text_at(needle: str) -> int:
        return next(
            (
                i
                for i, b in enumerate(blocks)
                if b.get("type") == "text" and needle in str(b.get("text"))
            ),
            -1,
        )

    results = [result_at(call) for call in row.orphans]
    note_at = text_at(INTERRUPT_NOTE)
    user_at = text_at(row.note)
    missing = [call for call, at in zip(row.orphans, results, strict=True) if at < 0]
    if missing:
        row.fail(f"the next request lacks tool_result blocks for {missing}")
    if note_at < 0:
        row.fail("the next request lacks the interrupt note")
    if user_at < 0:
        row.fail("the next request lacks the new user input")
    if note_at >= 0 and (any(at > note_at for at in results) or (0 <= user_at < note_at)):
        row.fail("the next request must hold the tool results, the note, then the input, in order")
