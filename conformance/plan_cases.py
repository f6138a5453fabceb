"""The plan-mode rows: ``set_mode`` and an ``exit_plan_mode`` approval, against any pod.

A pod that takes ``set_mode`` must keep these promises (docs/plan-mode.md), and each row
checks them over the socket and on the wire, with the kit's fake API scripting the model:

==========================  ===================================================================
row                         expected
==========================  ===================================================================
``plan-refuses-unasked``    after ``set_mode plan`` (replied with ``status``, ``permission_mode``
                            ``plan``), the kit's approval tool, which asks outside plan mode, is
                            refused without asking: no ``approval_request``, an ``is_error``
                            result, the turn finishes; every request of the row declares the same
                            tools (the cached prefix survives the switch)
``plan-approve``            ``exit_plan_mode`` waits as an ``approval_request`` with ``kind``
                            ``plan`` and the plan in ``arguments.plan``; ``approve`` leaves plan
                            mode for the mode before it, and the turn goes on to ``finished``
``plan-deny``               ``deny`` with a message keeps the pod in plan mode; the model's
                            result carries the message; the turn goes on to ``finished``
``set_mode-unknown``        ``set_mode`` with a mode that is none is ``invalid_request``
==========================  ===================================================================

Every row puts the pod back in the mode it found it in, so the pod is used again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from conformance.options import KitOptions
from conformance.process import PodPool, PodProcess, PodStartError
from conformance.recorder import Mismatch, Recorder
from conformance.report import CaseResult, WireTally
from conformance.script import Reply, ToolCall

__all__ = ["PLAN", "PlanCase", "build_plan_cases", "run_plan_case"]

PlanRow = Literal["plan-refuses-unasked", "plan-approve", "plan-deny", "set_mode-unknown"]

PLAN = "## Kit plan\n\n1. Write the file.\n2. Say done."
"""The plan the kit's model presents."""

_EXPECTED: dict[str, str] = {
    "plan-refuses-unasked": "refused unasked; same tools",
    "plan-approve": "approval kind plan; approved → mode before plan; finished",
    "plan-deny": "stays in plan; result has the message; finished",
    "set_mode-unknown": "error invalid_request",
}


@dataclass(frozen=True, slots=True)
class PlanCase:
    """One plan-mode row."""

    row: PlanRow
    skip_reason: str | None = None

    @property
    def id(self) -> str:
        """The row's name."""
        return self.row

    def report_fields(self) -> dict[str, Any]:
        """The report's columns."""
        return {
            "id": self.id,
            "state": "idle",
            "event": "set_mode" if self.row == "set_mode-unknown" else "plan mode",
            "expected": _EXPECTED[self.row],
            "setup": "set_mode plan, then a run" if self.row != "set_mode-unknown" else "idle",
        }


def build_plan_cases() -> list[PlanCase]:
    """Every plan-mode row."""
    return [PlanCase(row) for row in _EXPECTED]  # type: ignore[arg-type]


class _Row:
    """One row's connection and the requests it made."""

    def __init__(self, pod: PodProcess, conn: Recorder, timeout: float) -> None:
        self.pod, self.conn, self.timeout = pod, conn, timeout
        self.start = len(pod.api.requests)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a method with an id; its reply (``event`` and ``data``)."""
        request_id = self.conn.next_id("plan")
        mark = await self.conn.send({"method": method, "params": params, "id": request_id})
        index = await self.conn.wait_for(
            lambda e: e.data.get("id") == request_id,
            start=mark,
            timeout=self.timeout,
            what=f"the reply to {method}",
        )
        seen = self.conn.events[index]
        return {"event": seen.event, **seen.data}

    async def mode(self, mode: str) -> dict[str, Any]:
        reply = await self.request("set_mode", {"mode": mode})
        if reply["event"] != "status" or reply.get("permission_mode") != mode:
            raise Mismatch(f"set_mode {mode} replied {reply['event']} {reply.get('message', '')}")
        return reply

    async def until(self, event: str, start: int, **match: Any) -> int:
        return await self.conn.wait_for(
            lambda e: e.event == event and all(e.data.get(k) == v for k, v in match.items()),
            start=start,
            timeout=self.timeout,
            what=event,
        )

    def results(self, start: int) -> dict[str, dict[str, Any]]:
        return {
            str(e.data.get("id")): e.data
            for e in self.conn.events[start:]
            if e.event == "tool_result"
        }

    def call_id(self, start: int, name: str) -> str:
        """The id of the first call of tool ``name`` since ``start`` ("" when none)."""
        for seen in self.conn.events[start:]:
            if seen.event == "tool_call_done" and seen.data.get("name") == name:
                return str(seen.data.get("id"))
        return ""

    def requests(self) -> list[Any]:
        return self.pod.api.requests[self.start :]


async def _run_row(case: PlanCase, row: _Row, options: KitOptions) -> None:
    if case.row == "set_mode-unknown":
        reply = await row.request("set_mode", {"mode": "no-such-mode"})
        if reply["event"] != "error" or reply.get("code") != "invalid_request":
            raise Mismatch(f"set_mode no-such-mode replied {reply['event']}, not invalid_request")
        return
    before = str((await row.request("get_status", {})).get("permission_mode", ""))
    if not before:
        raise Mismatch("status has no permission_mode")
    await row.mode("plan")
    try:
        await _in_plan(case, row, options, before)
    finally:
        if (await row.request("get_status", {})).get("permission_mode") != before:
            await row.mode(before)


async def _in_plan(case: PlanCase, row: _Row, options: KitOptions, before: str) -> None:
    tool = options.approval_tool
    if case.row == "plan-refuses-unasked":
        call = ToolCall(name=tool["name"], input=dict(tool.get("input", {})))
        row.pod.api.push(Reply(text="Writing.", tool_calls=[call]), Reply(text="Planned."))
    else:
        call = ToolCall(name="exit_plan_mode", input={"plan": PLAN})
        row.pod.api.push(Reply(text="Here is my plan.", tool_calls=[call]), Reply(text="Done."))
    mark = await row.conn.send({"method": "run", "params": {"input": "Plan it (kit)."}})
    if case.row == "plan-refuses-unasked":
        end = await row.until("run_end", mark)
        if any(e.event == "approval_request" for e in row.conn.events[mark:end]):
            raise Mismatch("a call was asked about in plan mode (it must be refused unasked)")
        result = row.results(mark).get(row.call_id(mark, call.name))
        if result is None or not result.get("is_error"):
            raise Mismatch(f"the approval tool's call was not refused in plan mode: {result}")
        tools = {
            repr([t.get("name") for t in (r.body or {}).get("tools", [])]) for r in row.requests()
        }
        if len(tools) > 1:
            raise Mismatch(f"the tools declared changed within the row: {sorted(tools)}")
    else:
        asked = await row.until("approval_request", mark, tool=call.name)
        data = row.conn.events[asked].data
        call_id = str(data.get("id"))
        if data.get("kind") != "plan" or (data.get("arguments") or {}).get("plan") != PLAN:
            raise Mismatch(f"the plan's approval_request is {data.get('kind')!r} without the plan")
        if case.row == "plan-approve":
            await row.conn.send({"method": "approve", "params": {"id": call_id}})
        else:
            await row.conn.send(
                {"method": "deny", "params": {"id": call_id, "message": "kit: say more"}}
            )
        end = await row.until("run_end", mark)
        result = row.results(mark).get(call_id, {})
        mode = (await row.request("get_status", {})).get("permission_mode")
        if case.row == "plan-approve" and mode != before:
            raise Mismatch(f"after the approved plan the mode is {mode}, not {before}")
        if case.row == "plan-deny" and (mode != "plan" or "kit: say more" not in str(result)):
            raise Mismatch(f"after the denied plan: mode {mode}, result {result}")
    if row.conn.events[end].data.get("result") != "finished":
        raise Mismatch(f"the turn ended {row.conn.events[end].data}, not finished")
    invalid = [r.error for r in row.requests() if not r.valid]
    if invalid:
        raise Mismatch(f"the fake API refused a request: {invalid[0]}")


async def run_plan_case(case: PlanCase, pool: PodPool, options: KitOptions) -> CaseResult:
    """Run one plan-mode row against a pod from ``pool``; never raises for the pod's faults."""
    started = time.monotonic()
    try:
        pod = await pool.take()
    except PodStartError as exc:
        return CaseResult.failed(case, [str(exc)], time.monotonic() - started)  # type: ignore[arg-type]
    problems: list[str] = []
    conn = await Recorder.connect(pod.socket)
    row = _Row(pod, conn, options.timeout_s)
    try:
        await _run_row(case, row, options)
    except Mismatch as exc:
        problems.append(str(exc))
    except Exception as exc:  # a kit bug must still report the row
        problems.append(f"kit error: {type(exc).__name__}: {exc}")
    finally:
        wire = WireTally.of(row.requests())
        await conn.close()
        if not problems and pod.proc.poll() is None and not pod.api.pending:
            pool.give_back(pod)
        else:
            pod.stop()
    duration = time.monotonic() - started
    if problems:
        return CaseResult.failed(case, problems, duration, detail=conn.tail(0), wire=wire)  # type: ignore[arg-type]
    return CaseResult.passed(case, duration, wire=wire)  # type: ignore[arg-type]
