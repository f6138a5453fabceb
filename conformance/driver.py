"""Driving conformance cases against pods: setup, the method, settling, the next request.

:func:`run_case` drives one :class:`~conformance.cases.Case` against a pod from a
:class:`~conformance.process.PodPool`: setup (:mod:`conformance.holds`), the method (with a ``get_status`` in the same
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
from conformance.holds import (
    NO_INPUT_TOOL,
    NOTE_PREFIX,
    REST_STATUSES,
    InputToolMissing,
    confirm_source,
    past_compact_at,
    prepare,
    raise_on_error,
    settle_plain,
)
from conformance.plan_cases import PlanCase, run_plan_case
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
from conformance.tree_cases import TreeCase
from conformance.tree_driver import run_tree_case

__all__ = [
    "DEFAULT_APPROVAL_TOOL",
    "DEFAULT_INPUT_TOOL",
    "DEFAULT_SLOW_TOOL",
    "KitOptions",
    "run_case",
    "run_cases",
]


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
    elif method == "set_budget":
        # Removing a cap nobody set: taken wherever the machine takes the method, changing
        # nothing the kit's turns depend on.
        params = {"budget_usd": None}
    elif method == "answer_elicitation":
        # Outside a wait for input the pod must refuse the answer whatever it names.
        params = answer or {"id": f"input_kit_{note}", "action": "decline"}
    message: dict[str, Any] = {"method": method, "id": request_id}
    if params:
        message["params"] = params
    return message


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


async def _send_method(row: Row, prefix: list[dict[str, Any]]) -> None:
    event = row.case.row.event
    row.method_id = row.conn.next_id(event)
    row.note = f"{NOTE_PREFIX}-{row.method_id}"
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
    token = f"{NOTE_PREFIX}-next-{row.conn.next_id('next')}"
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
    raise_on_error(row, mark, "follow-up run")
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
    rest = await settle_plain(row, mark)
    if rest.data.get("status") != "idle":
        row.fail(f"after the follow-up run the pod must be idle, it is {rest.data.get('state')!r}")


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
    asks = case.setup.hold == "call_for_input"
    if asks and pool.offers_input is False:
        return CaseResult.skipped(case, NO_INPUT_TOOL)
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
            await past_compact_at(row)
        else:
            prefix = await prepare(row)
            if asks:
                pool.offers_input = True
            await confirm_source(row)
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
    cases: Sequence[Case | TreeCase | PlanCase],
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
                elif isinstance(case, PlanCase):
                    result = await run_plan_case(case, pool, options)
                else:
                    result = await run_case(case, pool, options)
                results.append(result)
                if on_result is not None:
                    on_result(result)
        finally:
            pool.close()
        return results

    return asyncio.run(main())
