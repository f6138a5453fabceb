"""Bringing a pod into a row's source state, and waiting on it: the conformance kit's setup.

:func:`prepare` holds the pod in the state the row starts from (nothing, a slow stream, a
slow tool, a call waiting for approval or for input, a compaction's slow summary) and sends
the setup's method; :func:`confirm_source` checks the pod says so; :func:`past_compact_at`
is the one setup that starts a fresh pod with a small window and sends the row's method
itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from conformance.checks import Row
from conformance.models import ModelSpec
from conformance.recorder import Mismatch, Seen
from conformance.tokens import count_input_tokens
from orchestrator.errors import SetupError
from states.queries import awaiting_approval, running_tools

__all__ = [
    "NOTE_PREFIX",
    "NO_INPUT_TOOL",
    "REST_STATUSES",
    "SMALL_WINDOW",
    "InputToolMissing",
    "confirm_source",
    "is_error",
    "past_compact_at",
    "prepare",
    "raise_on_error",
    "settle_plain",
]

REST_STATUSES = frozenset({"idle", "paused", "stopped"})
NO_INPUT_TOOL = (
    "the pod offers its model no input tool (--input-tool; the first row of this state says "
    "which tools it offers)"
)
NOTE_PREFIX = "kit-note"


class InputToolMissing(SetupError):
    """The pod does not offer its model the kit's input tool: the row cannot be held."""


async def _hold(row: Row) -> None:
    """Bring the pod into the setup's held state: nothing, a slow stream or a slow tool."""
    setup = row.case.setup
    assert setup is not None
    conn, stimuli = row.conn, row.pod.stimuli
    if setup.hold == "nothing":
        return
    if setup.hold == "slow_compaction":
        await _hold_compacting(row)
        return
    if setup.hold == "call_for_input":
        await _hold_input(row)
        return
    if setup.hold in ("call_for_approval", "slow_summary"):
        await _hold_approval(row)
        if setup.hold == "slow_summary":
            await _hold_summary(row)
        return
    kind = "slow-text" if setup.hold == "slow_stream" else "slow-tool"
    marker = stimuli.token(kind)
    mark = await conn.send(
        {"method": "run", "params": {"input": f"Conformance setup {marker}"}, "id": "kit-setup"}
    )
    if setup.hold == "slow_stream":
        await conn.wait_for(
            lambda e: e.event == "text_delta" or is_error(e),
            start=mark,
            timeout=row.timeout,
            what="the first text_delta of the slow stream (setup)",
        )
    else:
        await conn.wait_for(
            lambda e: (e.event == "status" and running_tools(e.data.get("state"))) or is_error(e),
            start=mark,
            timeout=row.timeout,
            what="status state=executing_tools after the slow tool call (setup)",
        )
    raise_on_error(row, mark, "setup")


async def _hold_approval(row: Row) -> None:
    """A turn whose one tool call waits for approval; remembers the call's id."""
    marker = row.pod.stimuli.token("approval-tool")
    mark = await row.conn.send(
        {"method": "run", "params": {"input": f"Conformance setup {marker}"}, "id": "kit-setup"}
    )
    index = await row.conn.wait_for(
        lambda e: e.event == "approval_request" or is_error(e),
        start=mark,
        timeout=row.timeout,
        what="an approval_request for the kit's approval tool (setup; is the pod asking "
        "before that call? see --approval-tool)",
    )
    raise_on_error(row, mark, "setup")
    row.approval_id = str(row.events[index].data.get("id", ""))
    await row.conn.wait_for(
        lambda e: e.event == "status" and awaiting_approval(e.data.get("state")),
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
        lambda e: e.event in ("elicitation_request", "approval_request", "run_end") or is_error(e),
        start=mark,
        timeout=row.timeout,
        what=f"an elicitation_request during the call of the kit's input tool {tool} (setup; "
        "does the pod declare the kit's MCP server? see --input-tool)",
    )
    raise_on_error(row, mark, "setup")
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


async def _hold_summary(row: Row) -> None:
    """From a waiting call: ``compact``, then approve; the summary request streams slowly."""
    conn, state = row.conn, row.case.row.state
    mark = await conn.send({"method": "compact", "id": "kit-setup-compact"})
    await conn.status(row.timeout)
    raise_on_error(row, mark, "setup (compact while a call waits)")
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
        lambda e: e.event == "run_end" or is_error(e),
        start=mark,
        timeout=row.timeout,
        what="run_end of the kit's warm-up run (setup)",
    )
    raise_on_error(row, mark, "setup")
    await settle_plain(row, mark)


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
            lambda e: e.event == "text_delta" or is_error(e),
            start=mark,
            timeout=row.timeout,
            what="the first text_delta of the slow stream (setup)",
        )
        await conn.send({"method": "pause", "id": "kit-setup-pause"})
        await conn.wait_for(
            lambda e: (e.event == "status" and e.data.get("status") == "paused") or is_error(e),
            start=mark,
            timeout=row.timeout,
            what="status paused (setup)",
        )
        raise_on_error(row, mark, "setup")
    row.pod.stimuli.slow_next()
    mark = await conn.send({"method": "compact", "id": "kit-setup-compact"})
    await _summary_streaming(row, mark, f"status state={state} after compact (setup)")


SMALL_WINDOW = 60_000
"""The context window the kit's fake API gives a fresh pod's model to pass ``compact_at``."""
_FILLER = "conformance filler text "


def _filler(tokens: int) -> str:
    """Text of about ``tokens`` tokens as the fake API counts them (4 bytes a token)."""
    return _FILLER * max(1, tokens * 4 // len(_FILLER))


async def past_compact_at(row: Row) -> None:
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
    row.note = f"{NOTE_PREFIX}-{row.method_id}"
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
            or is_error(e)
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
        lambda e: (e.event == "status" and e.data.get("state") == state) or is_error(e),
        start=mark,
        timeout=row.timeout,
        what=what,
    )
    raise_on_error(row, mark, "setup")
    deadline = time.monotonic() + row.timeout
    while row.pod.stimuli.armed:
        if time.monotonic() > deadline:
            raise Mismatch(
                f"setup: the pod sent no summary request within {row.timeout:g} s of the "
                "compaction starting"
            )
        await asyncio.sleep(0.01)


def is_error(seen: Seen) -> bool:
    """Whether the pod answered with an ``error`` event."""
    return seen.event == "error"


def raise_on_error(row: Row, start: int, phase: str) -> None:
    """A :class:`Mismatch` naming ``phase`` if the pod answered with an error since ``start``."""
    for seen in row.events[start:]:
        if seen.event == "error":
            raise Mismatch(f"{phase}: the pod answered with an error: {seen.data}")


async def prepare(row: Row) -> list[dict[str, Any]]:
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
            or is_error(e)
        ),
        start=mark,
        timeout=row.timeout,
        what=f"status state={state} after {setup.method} (setup)",
    )
    raise_on_error(row, mark, "setup")
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


async def confirm_source(row: Row) -> None:
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
    if setup.hold == "call_for_approval":
        waiting = [a.get("id") for a in seen.data.get("approvals") or [] if isinstance(a, dict)]
        if waiting != [row.approval_id]:
            raise Mismatch(
                f"setup ({setup.describe()}): get_status must list the waiting call "
                f"{row.approval_id!r} in approvals, it lists {waiting}"
            )
    if setup.hold == "call_for_input":
        asking = [a.get("id") for a in seen.data.get("elicitations") or [] if isinstance(a, dict)]
        if asking != [row.input_id]:
            raise Mismatch(
                f"setup ({setup.describe()}): get_status must list the waiting request for "
                f"input {row.input_id!r} in elicitations, it lists {asking}"
            )


async def settle_plain(row: Row, start: int) -> Seen:
    """Wait from ``start`` until the pod is at rest, as a fresh ``get_status`` confirms."""
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
