"""Approvals asked while a call runs: a request to keep what a sandboxed command planted."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from orchestrator.capabilities.permissions import Policy
from orchestrator.capabilities.permissions.approvals import Answer, Approvals
from orchestrator.config.permissions import PermissionsConfig
from orchestrator.protocol import ApprovalRequestData


async def test_always_on_a_request_to_keep_held_paths_grants_nothing() -> None:
    policy = Policy.from_config(PermissionsConfig.model_validate({}))
    events: list[tuple[str, BaseModel]] = []
    signals: list[str] = []
    granted: list[str] = []
    approvals = Approvals(
        policy=policy,
        emit=lambda name, data: events.append((name, data)),
        on_grant=lambda rule, call_id: granted.append(call_id),
    )
    request = ApprovalRequestData(
        id="c1",
        tool="bash",
        kind="execute",
        arguments={"command": "git init"},
        summary="keep what it planted: .git (created)",
        reason="held",
        held=[".git"],
    )
    asking = asyncio.create_task(approvals.relay(request, signal=signals.append))
    await asyncio.sleep(0)
    assert approvals.waiting_for("c1")
    approvals.answer("c1", Answer(allow=True, scope="session"))
    answer = await asking
    assert answer.allow
    assert granted == []  # keeping one plant allows no later command
    assert policy.decide("bash", "execute", {"command": "git init"}, None).verdict != "allow"
    assert signals == ["approval_needed", "approval_settled"]
    assert [name for name, _ in events] == ["approval_request", "approval_resolved"]
