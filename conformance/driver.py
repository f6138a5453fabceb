"""Driving conformance cases against pods: setup, the method, settling, the next request.

:func:`run_case` drives one :class:`~conformance.cases.Case` against a pod from a
:class:`~conformance.process.PodPool`: setup, the method (with a ``get_status`` in the same
write as a sync point), the checks of :mod:`conformance.checks`, settle, one more ``run`` to
see the next request on the wire, then the wire checks. :func:`run_cases` runs many from
synchronous code. This is the kit's entry point from Python, so it also offers
:class:`~conformance.process.KitOptions` and the default slow tool.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from conformance.cases import Case
from conformance.checks import (
    Row,
    check_reply,
    check_settled,
    check_target,
    check_wire,
    open_calls,
    request_text,
)
from conformance.models import ModelSpec
from conformance.process import (
    DEFAULT_APPROVAL_TOOL,
    DEFAULT_INPUT_TOOL,
    DEFAULT_SLOW_TOOL,
    KitOptions,
    PodPool,
    PodStartError,
)
from conformance.recorder import Mismatch, Recorder, Seen
from conformance.report import CaseResult, WireTally
from conformance.tokens import count_input_tokens
from conformance.tree_cases import TreeCase
from conformance.tree_driver import run_tree_case
from orchestrator.errors import SetupError

__all__ = [
    "DEFAULT_APPROVAL_TOOL",
    "DEFAULT_INPUT_TOOL",
    "DEFAULT_SLOW_TOOL",
    "KitOptions",
    "run_case",
    "run_cases",
]

REST_STATUSES = frozenset({"idle", "paused", "stopped"})
_NO_INPUT_TOOL = (
    "the pod offers its model no input tool (--input-tool; the first row of this state says "
    "which tools it offers)"
)
_NOTE_PREFIX = "kit-note"


class InputToolMissing(SetupError):
    """The pod does not offer its model the kit's input tool: the row cannot be held."""


def _method_message(
    method: str,
    request_id: str,
    note: str,
    call_id: str,
    scope: str = "once",
    answer: dict[str, Any] | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if method == "run":
        params = {"input": f"Conformance input {note}."}
    elif method == "notify":
        params = {"message": f"Conformance note {note}."}
    elif method == "pod_event":
        params = {"kind": "turn_ended", "pod": "conformance", "message": f"note {note}"}
    elif method in ("approve", "deny"):
        # Outside ``awaiting_approval`` the pod must refuse the answer whatever it names.
        params = {"id": call_id or f"toolu_kit_{note}"}
        if method == "approve":
            params["scope"] = scope
        else:
            params["message"] = f"Conformance denial {note}."
    elif method == "answer_elicitation":
        # Outside a wait for input the pod must refuse the answer whatever it names.
        params = answer or {"id": f"input_kit_{note}", "action": "decline"}
    message: dict[str, Any] = {"method": method, "id": request_id}
    if params:
        message["params"] = params
    return message


async def _hold(row: Row) -> None:
    """Bring the pod into the setup's held state: nothing, a slow stream or a slow tool."""
    setup = row.case.setup
    assert setup is not None
    conn, stimuli = row.conn, row.pod.stimuli
    if setup.hold == "idle":
        return
    if setup.hold == "compacting":
        await _hold_compacting(row)
        return
    if setup.hold == "awaiting_input":
        await _hold_input(row)
        return
    if setup.hold in ("awaiting_approval", "summarizing"):
        await _hold_approval(row)
        if setup.hold == "summarizing":
            await _hold_summary(row)
        return
    kind = "slow-text" if setup.hold == "requesting" else "slow-tool"
    marker = stimuli.token(kind)
    mark = await conn.send(
        {"method": "run", "params": {"input": f"Conformance setup {marker}"}, "id": "kit-setup"}
    )
    if setup.hold == "requesting":
        await conn.wait_for(
            lambda e: e.event == "text_delta" or _is_error(e),
            start=mark,
            timeout=row.timeout,
            what="the first text_delta of the slow stream (setup)",
        )
    else:
        await conn.wait_for(
            lambda e: (
                (e.event == "status" and e.data.get("state") == "executing_tools") or _is_error(e)
            ),
            start=mark,
            timeout=row.timeout,
            what="status state=executing_tools after the slow tool call (setup)",
        )
    _raise_on_error(row, mark, "setup")


async def _hold_approval(row: Row) -> None:
    """A turn whose one tool call waits for approval; remembers the call's id."""
    marker = row.pod.stimuli.token("approval-tool")
    mark = await row.conn.send(
        {"method": "run", "params": {"input": f"Conformance setup {marker}"}, "id": "kit-setup"}
    )
    index = await row.conn.wait_for(
        lambda e: e.event == "approval_request" or _is_error(e),
        start=mark,
        timeout=row.timeout,
        what="an approval_request for the kit's approval tool (setup; is the pod asking "
        "before that call? see --approval-tool)",
    )
    _raise_on_error(row, mark, "setup")
    row.approval_id = str(row.events[index].data.get("id", ""))
    await row.conn.wait_for(
        lambda e: e.event == "status" and e.data.get("state") == "awaiting_approval",
        start=mark,
        timeout=row.timeout,
        what="status state=awaiting_approval (setup)",
    )


async def _hold_input(row: Row) -> None:
    """A turn whose one tool call asks the person for input; remembers the request's id and
    form. Raises :class:`InputToolMissing` when the pod does not offer the input tool."""
    stimuli = row.pod.stimuli
    tool = str(stimuli.input_tool["name"])
    marker = stimuli.token("input-tool")
    requests_before = len(row.pod.api.requests)
    mark = await row.conn.send(
        {"method": "run", "params": {"input": f"Conformance setup {marker}"}, "id": "kit-setup"}
    )
    index = await row.conn.wait_for(
        lambda e: e.event in ("elicitation_request", "approval_request", "run_end") or _is_error(e),
        start=mark,
        timeout=row.timeout,
        what=f"an elicitation_request during the call of the kit's input tool {tool} (setup; "
        "does the pod declare the kit's MCP server? see --input-tool)",
    )
    _raise_on_error(row, mark, "setup")
    seen = row.events[index]
    if seen.event == "run_end":
        offered = _offered_tools(row.pod.api.requests[requests_before:])
        if tool not in offered:
            raise InputToolMissing(
                f"the pod offers its model no {tool} (the kit's input tool: declare the kit's "
                "MCP server, python -m conformance.mcp_server, or name another with "
                f"--input-tool); it offers {sorted(offered) or 'no tools'}"
            )
        raise Mismatch(
            f"setup: the call of {tool} ended the turn ({seen.data}) without an elicitation_request"
        )
    if seen.event == "approval_request":
        raise Mismatch(
            f"setup: the pod asked for approval of {tool} ({seen.data}); the input tool must "
            "run without asking"
        )
    row.input_id = str(seen.data.get("id", ""))
    schema = seen.data.get("schema")
    row.input_schema = schema if isinstance(schema, dict) else {}
    await row.conn.wait_for(
        lambda e: e.event == "status" and e.data.get("state") == row.case.row.state,
        start=mark,
        timeout=row.timeout,
        what=f"status state={row.case.row.state} (setup)",
    )


def _offered_tools(requests: Sequence[Any]) -> set[str]:
    """The tool names the pod's requests offered the model."""
    names: set[str] = set()
    for request in requests:
        body = request.body if isinstance(request.body, dict) else {}
        names.update(str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict))
    return names


def _answer(row: Row) -> dict[str, Any] | None:
    """The kit's answer to the request it holds: accept, with the form filled in from its own
    schema (every required field, and the row's note in a string field so the kit can find
    the answer in the tool's result); None without a request held."""
    if not row.input_id:
        return None
    properties = row.input_schema.get("properties") or {}
    required = [str(n) for n in row.input_schema.get("required") or [] if n in properties]
    strings = [
        n for n, p in properties.items() if isinstance(p, dict) and p.get("type") == "string"
    ]
    carrier = next((n for n in required if n in strings), strings[0] if strings else None)
    content: dict[str, Any] = {}
    for name in dict.fromkeys([*required, *([carrier] if carrier else [])]):
        field = properties[name] if isinstance(properties[name], dict) else {}
        content[name] = _field_value(field, row.note if name == carrier else "kit")
    row.input_marker = str(content[carrier]) if carrier and content[carrier] == row.note else ""
    return {"id": row.input_id, "action": "accept", "content": content}


def _field_value(field: dict[str, Any], text: str) -> Any:
    """A value the flat elicitation schema accepts for one field."""
    choices = field.get("enum") or [
        o.get("const") for o in field.get("oneOf") or [] if isinstance(o, dict)
    ]
    if choices:
        return choices[0]
    kind = field.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return field.get("minimum", 1)
    limit = field.get("maxLength")
    return text[:limit] if isinstance(limit, int) else text


async def _hold_summary(row: Row) -> None:
    """From a waiting call: ``compact``, then approve; the summary request streams slowly."""
    conn, state = row.conn, row.case.row.state
    mark = await conn.send({"method": "compact", "id": "kit-setup-compact"})
    await conn.status(row.timeout)
    _raise_on_error(row, mark, "setup (compact while a call waits)")
    row.pod.stimuli.slow_next()
    await conn.send(
        {"method": "approve", "params": {"id": row.approval_id}, "id": "kit-setup-approve"}
    )
    await _summary_streaming(
        row, mark, f"status state={state}: the compaction asked for at the next round boundary"
    )


async def _warm_up(row: Row, text: str) -> None:
    """A whole turn before the setup proper, so the history holds something; ends at rest."""
    mark = await row.conn.send({"method": "run", "params": {"input": text}, "id": "kit-warm"})
    await row.conn.wait_for(
        lambda e: e.event == "run_end" or _is_error(e),
        start=mark,
        timeout=row.timeout,
        what="run_end of the kit's warm-up run (setup)",
    )
    _raise_on_error(row, mark, "setup")
    await _settle_plain(row, mark)


async def _hold_compacting(row: Row) -> None:
    """A short turn (something to compact), a paused one if the setup starts there, then
    ``compact`` with a slow summary request."""
    conn, state = row.conn, row.case.row.state
    setup = row.case.setup
    assert setup is not None
    await _warm_up(row, "Conformance history to compact.")
    if setup.start == "paused":
        marker = row.pod.stimuli.token("slow-text")
        mark = await conn.send(
            {"method": "run", "params": {"input": f"Conformance {marker}"}, "id": "kit-setup"}
        )
        await conn.wait_for(
            lambda e: e.event == "text_delta" or _is_error(e),
            start=mark,
            timeout=row.timeout,
            what="the first text_delta of the slow stream (setup)",
        )
        await conn.send({"method": "pause", "id": "kit-setup-pause"})
        await conn.wait_for(
            lambda e: (e.event == "status" and e.data.get("status") == "paused") or _is_error(e),
            start=mark,
            timeout=row.timeout,
            what="status paused (setup)",
        )
        _raise_on_error(row, mark, "setup")
    row.pod.stimuli.slow_next()
    mark = await conn.send({"method": "compact", "id": "kit-setup-compact"})
    await _summary_streaming(row, mark, f"status state={state} after compact (setup)")


SMALL_WINDOW = 60_000
"""The context window the kit's fake API gives a fresh pod's model to pass ``compact_at``."""
_FILLER = "conformance filler text "


def _filler(tokens: int) -> str:
    """Text of about ``tokens`` tokens as the fake API counts them (4 bytes a token)."""
    return _FILLER * max(1, tokens * 4 // len(_FILLER))


async def _past_compact_at(row: Row) -> None:
    """A fresh pod whose window is small: one turn fills a third of it, then the row's ``run``
    brings the next request past ``compact_at`` (but under the window)."""
    conn, pod = row.conn, row.pod
    seen = await conn.status(row.timeout)
    model = seen.data.get("model")
    if not isinstance(model, str) or not model:
        raise Mismatch("setup: get_status names no model, so the kit cannot set its window")
    context = seen.data.get("context") or {}
    compact_at = float(context.get("compact_at") or 80) / 100
    # Before the pod's first turn, when it asks the Models API for its window.
    pod.api.models[model] = ModelSpec(id=model, context_window=SMALL_WINDOW)
    await _warm_up(row, "Conformance history. " + _filler(SMALL_WINDOW // 3))
    last = pod.api.requests[-1].body
    used = count_input_tokens(last) + 200 if isinstance(last, dict) else SMALL_WINDOW // 3
    extra = round((compact_at + 1) / 2 * SMALL_WINDOW) - used
    if extra <= 0:
        raise Mismatch(f"setup: the first turn already used {used} tokens of {SMALL_WINDOW}")
    row.method_id = conn.next_id("run")
    row.note = f"{_NOTE_PREFIX}-{row.method_id}"
    row.requests_at_method = len(pod.api.requests)
    row.setup_mark = len(row.events)
    text = f"Conformance past compact_at {row.note}. " + _filler(extra)
    row.method_mark = await conn.send(
        {"method": "run", "params": {"input": text}, "id": row.method_id}
    )
    await conn.wait_for(
        lambda e: (
            (e.event == "status" and e.data.get("state") == row.expect.target)
            or e.event == "run_end"
            or _is_error(e)
        ),
        start=row.method_mark,
        timeout=row.timeout,
        what=f"status state={row.expect.target} for a request past compact_at",
    )


async def _summary_streaming(row: Row, mark: int, what: str) -> None:
    """Wait for the row's state, then until the summary request took the armed slow stream:
    only then does the pod hold a request the row's method can interrupt (before it, the row
    would race the compaction's start, and the slow stream would answer a later request)."""
    state = row.case.row.state
    await row.conn.wait_for(
        lambda e: (e.event == "status" and e.data.get("state") == state) or _is_error(e),
        start=mark,
        timeout=row.timeout,
        what=what,
    )
    _raise_on_error(row, mark, "setup")
    deadline = time.monotonic() + row.timeout
    while row.pod.stimuli.armed:
        if time.monotonic() > deadline:
            raise Mismatch(
                f"setup: the pod sent no summary request within {row.timeout:g} s of the "
                "compaction starting"
            )
        await asyncio.sleep(0.01)


def _is_error(seen: Seen) -> bool:
    return seen.event == "error"


def _raise_on_error(row: Row, start: int, phase: str) -> None:
    for seen in row.events[start:]:
        if seen.event == "error":
            raise Mismatch(f"{phase}: the pod answered with an error: {seen.data}")


async def _setup(row: Row) -> list[dict[str, Any]]:
    """Run the setup; returns the lines that must precede the method in the same write."""
    setup = row.case.setup
    assert setup is not None
    conn = row.conn
    await _hold(row)
    if setup.method is None:
        return []
    if setup.pipelined:
        return [{"method": setup.method, "id": "kit-setup-method"}]
    mark = await conn.send({"method": setup.method, "id": "kit-setup-method"})
    state = row.case.row.state
    index = await conn.wait_for(
        lambda e: (
            (e.event == "status" and e.data.get("state") == state)
            or e.event == "run_end"
            or _is_error(e)
        ),
        start=mark,
        timeout=row.timeout,
        what=f"status state={state} after {setup.method} (setup)",
    )
    _raise_on_error(row, mark, "setup")
    if conn.events[index].event == "run_end":
        raise Mismatch(
            f"setup ({setup.describe()}): the turn ended with run_end "
            f"{conn.events[index].data} before the pod reported state {state!r}"
        )
    # Let the turn task's end arrive (run_end) before the row's method goes out.
    await conn.wait_for(
        lambda e: e.event == "run_end", start=mark, timeout=row.timeout, what="run_end (setup)"
    )
    return []


async def _confirm_source(row: Row) -> None:
    """For a non-pipelined setup, the pod must report the row's source state right now."""
    setup = row.case.setup
    assert setup is not None
    if setup.pipelined:
        return
    seen = await row.conn.status(row.timeout)
    state = row.case.row.state
    if seen.data.get("state") != state:
        raise Mismatch(
            f"setup ({setup.describe()}): expected the pod in {state!r}, "
            f"get_status says {seen.data.get('state')!r}"
        )
    if setup.hold == "awaiting_approval":
        waiting = [a.get("id") for a in seen.data.get("approvals") or [] if isinstance(a, dict)]
        if waiting != [row.approval_id]:
            raise Mismatch(
                f"setup ({setup.describe()}): get_status must list the waiting call "
                f"{row.approval_id!r} in approvals, it lists {waiting}"
            )
    if setup.hold == "awaiting_input":
        asking = [a.get("id") for a in seen.data.get("elicitations") or [] if isinstance(a, dict)]
        if asking != [row.input_id]:
            raise Mismatch(
                f"setup ({setup.describe()}): get_status must list the waiting request for "
                f"input {row.input_id!r} in elicitations, it lists {asking}"
            )


async def _send_method(row: Row, prefix: list[dict[str, Any]]) -> None:
    event = row.case.row.event
    row.method_id = row.conn.next_id(event)
    row.note = f"{_NOTE_PREFIX}-{row.method_id}"
    row.orphans = open_calls(row.events)
    row.requests_at_method = len(row.pod.api.requests)
    sync_id = row.conn.next_id("sync")
    setup = row.case.setup
    scope = setup.scope if setup is not None else "once"
    method = _method_message(
        event, row.method_id, row.note, row.approval_id, scope, answer=_answer(row)
    )
    row.setup_mark = len(row.events)
    mark = await row.conn.send(*prefix, method, {"method": "get_status", "id": sync_id})
    row.method_mark = mark
    settle_stopped = row.expect.settle == "stopped"

    def is_sync(e: Seen) -> bool:
        return e.event == "status" and e.data.get("id") == sync_id

    try:
        row.sync_index = await row.conn.wait_for(
            is_sync, start=mark, timeout=row.timeout, what=f"the reply to get_status after {event}"
        )
    except Mismatch:
        if not (settle_stopped and row.conn.closed):
            raise
        row.sync_index = None  # a stopping pod may close the connection without answering
    if prefix:
        # The method's own effects start after the setup method's status change.
        state = row.case.row.state
        found = next(
            (
                i
                for i in range(
                    mark, row.sync_index if row.sync_index is not None else len(row.events)
                )
                if row.events[i].event == "status"
                and "id" not in row.events[i].data
                and row.events[i].data.get("state") == state
            ),
            None,
        )
        if found is None:
            setup = row.case.setup
            assert setup is not None
            raise Mismatch(
                f"setup ({setup.describe()}): the pod never reported state {state!r} "
                f"after {setup.method}"
            )
        row.method_mark = found + 1


async def _answered(row: Row) -> None:
    """After an accepted answer, the request for input must end before anything else is
    waited for: a pod that ignores the answer fails here, saying so, not at the settle."""
    await row.conn.wait_for(
        lambda e: e.event == "elicitation_resolved" and e.data.get("id") == row.input_id,
        start=row.setup_mark,
        timeout=row.timeout,
        what=f"elicitation_resolved for {row.input_id} after answer_elicitation accepted it "
        "(the answer must reach the MCP server that asked)",
    )


async def _settle(row: Row) -> Seen:
    """Wait for the pod to come to rest (interrupting a held stimulus first, if needed)."""
    expect, conn = row.expect, row.conn
    start = row.method_mark
    if expect.kit_interrupt is not None:
        start = await conn.send({"method": expect.kit_interrupt, "id": "kit-settle"})
    if expect.settle == "stopped":
        index = await conn.wait_for(
            lambda e: e.event == "status" and e.data.get("status") == "stopped",
            start=row.setup_mark,
            timeout=row.timeout,
            what="status stopped",
        )
        # Everything the pod says while stopping (run_end, shutdown) precedes the close.
        await conn.wait_closed(row.timeout)
        return row.events[index]
    while True:
        index = await conn.wait_for(
            lambda e: e.event == "status" and e.data.get("status") in REST_STATUSES,
            start=start,
            timeout=row.timeout,
            what=f"the pod to come to rest ({expect.settle})",
        )
        seen = await conn.status(row.timeout)
        if seen.data.get("status") in REST_STATUSES:
            return seen
        # The pod started another turn on its own (a queued note): wait for it too.
        start = index + 1


async def _next_request(row: Row, rest: Seen) -> None:
    """One more ``run`` from rest, so the request after the row is seen on the wire."""
    if rest.data.get("status") not in ("idle", "paused"):
        return
    token = f"{_NOTE_PREFIX}-next-{row.conn.next_id('next')}"
    setup = row.case.setup
    session = setup is not None and setup.scope == "session"
    if session:
        # The same call again: allowed for the session, it must run without asking.
        token += " " + row.pod.stimuli.token("approval-tool")
    mark = await row.conn.send(
        {"method": "run", "params": {"input": f"Conformance next {token}."}, "id": "kit-next"}
    )
    index = await row.conn.wait_for(
        lambda e: (
            e.event in ("run_end", "approval_request")
            or (e.event == "error" and e.data.get("id") == "kit-next")
        ),
        start=mark,
        timeout=row.timeout,
        what="run_end of the kit's follow-up run",
    )
    _raise_on_error(row, mark, "follow-up run")
    if row.events[index].event == "approval_request":
        raise Mismatch(
            "a call like the one approved with scope 'session' asked again: "
            f"{row.events[index].data}"
        )
    if session and not any(
        e.event == "tool_result" and not e.data.get("is_error") for e in row.events[mark:]
    ):
        row.fail("the call allowed for the session did not run in the follow-up run")
    if not any(token in request_text(r) for r in row.pod.api.requests[row.requests_at_method :]):
        row.fail("the follow-up run's input never reached the API")
    rest = await _settle_plain(row, mark)
    if rest.data.get("status") != "idle":
        row.fail(f"after the follow-up run the pod must be idle, it is {rest.data.get('state')!r}")


async def _settle_plain(row: Row, start: int) -> Seen:
    while True:
        index = await row.conn.wait_for(
            lambda e: e.event == "status" and e.data.get("status") in REST_STATUSES,
            start=start,
            timeout=row.timeout,
            what="the pod to come to rest after the follow-up run",
        )
        seen = await row.conn.status(row.timeout)
        if seen.data.get("status") in REST_STATUSES:
            return seen
        start = index + 1


async def _finish_stopped(row: Row) -> None:
    if not any(e.event == "shutdown" for e in row.events[row.setup_mark :]):
        await row.conn.wait_for(
            lambda e: e.event == "shutdown",
            start=row.setup_mark,
            timeout=row.timeout,
            what="the shutdown event",
        )
    if not await row.conn.wait_closed(row.timeout):
        row.fail("the pod kept the connection open after stopping")
    code = await row.pod.wait_exit(row.timeout)
    if code is None:
        row.fail(f"the pod process was still running {row.timeout:g} s after stopping")


async def run_case(case: Case, pool: PodPool, options: KitOptions) -> CaseResult:
    """Run one case against a pod from ``pool``; never raises for a pod's misbehaviour."""
    started = time.monotonic()
    if case.skip_reason is not None or case.expect is None or case.setup is None:
        return CaseResult.skipped(case, case.skip_reason or "not runnable")
    auto = case.setup.hold == "past_compact_at"
    asks = case.setup.hold == "awaiting_input"
    if asks and pool.offers_input is False:
        return CaseResult.skipped(case, _NO_INPUT_TOOL)
    try:
        pod = await pool.take(fresh=auto)
    except PodStartError as exc:
        return CaseResult.failed(case, [str(exc)], time.monotonic() - started)
    try:
        conn = await Recorder.connect(pod.socket)
    except OSError as exc:
        pod.stop()
        return CaseResult.failed(
            case, [f"cannot connect to {pod.socket}: {exc}"], time.monotonic() - started
        )
    row = Row(
        case=case,
        expect=case.expect,
        pod=pod,
        conn=conn,
        timeout=options.timeout_s,
        thinking=options.thinking,
    )
    row.requests_at_start = len(pod.api.requests)
    pod.rows += 1
    healthy = False
    skipped = ""
    try:
        if auto:
            await _past_compact_at(row)
        else:
            prefix = await _setup(row)
            if asks:
                pool.offers_input = True
            await _confirm_source(row)
            await _send_method(row, prefix)
        check_reply(row)
        check_target(row)
        row.check_or_stop()
        if case.expect.elicitation == "accept":
            await _answered(row)
        rest = await _settle(row)
        check_settled(row, rest)
        row.check_or_stop()
        if case.expect.settle == "stopped":
            await _finish_stopped(row)
        else:
            await _next_request(row, rest)
        check_wire(row)
        # A pod with a small window would compact in the next rows too: not reused.
        # Nor a pod that allows the approval tool for the session: it would never ask again.
        reusable = not auto and case.setup.scope == "once"
        healthy = not row.problems and case.expect.settle != "stopped" and reusable
    except InputToolMissing as exc:
        pool.offers_input = False
        skipped = str(exc)
    except Mismatch as exc:
        row.problems.append(str(exc))
    except Exception as exc:  # a kit bug must still report the row, not kill the run
        row.problems.append(f"kit error: {type(exc).__name__}: {exc}")
    finally:
        wire = WireTally.of(row.requests())
        pod.stimuli.disarm()
        await conn.close()
        if healthy and pod.proc.poll() is None:
            pool.give_back(pod)
        else:
            pod.stop()
    duration = time.monotonic() - started
    if skipped:
        return CaseResult.skipped(case, skipped)
    if row.problems:
        detail = ["events since the row began:", *conn.tail(0)]
        log = pod.log_tail()
        if log and pod.proc.returncode not in (0, None):
            detail += ["pod output:", log]
        return CaseResult.failed(
            case, row.problems, duration, notes=row.notes, detail=detail, wire=wire
        )
    return CaseResult.passed(case, duration, notes=row.notes, wire=wire)


def run_cases(
    cases: Sequence[Case | TreeCase],
    options: KitOptions,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run cases in order with one pool, from synchronous code (tree cases included)."""

    async def main() -> list[CaseResult]:
        pool = PodPool(options)
        results: list[CaseResult] = []
        try:
            for case in cases:
                if isinstance(case, TreeCase):
                    result = await run_tree_case(case, pool, options)
                else:
                    result = await run_case(case, pool, options)
                results.append(result)
                if on_result is not None:
                    on_result(result)
        finally:
            pool.close()
        return results

    return asyncio.run(main())
