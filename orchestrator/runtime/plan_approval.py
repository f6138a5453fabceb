"""An ``exit_plan_mode`` call: the plan is shown to a person, who approves or refuses it.

The call waits in ``awaiting_approval`` like any call that asks (``approval_request`` with
``kind: "plan"`` and the plan in ``arguments.plan``). Approved, the pod switches to the mode
the answer names, else to the one before ``plan``, and the model's result says so: the turn
goes on. Refused, the pod stays in ``plan`` and the result is the person's message. An
interrupt while it waits commits nothing (Resume asks again), as for any approval.

The switch is recorded before the result is committed: a pod that dies in between comes back
in the new mode, and a call resumed then is refused as outside ``plan`` ("nothing to
approve"), which tells the model to go on.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from orchestrator.capabilities.permissions import Decision
from orchestrator.capabilities.permissions.approvals import Approvals
from orchestrator.capabilities.permissions.modes import ModeRefused, ModeSwitch
from orchestrator.capabilities.tools.plan import ExitPlanModeArgs
from orchestrator.core.history import Item, ToolResult, ToolUseBlock

__all__ = ["settle_plan"]


async def settle_plan(
    call: ToolUseBlock,
    decision: Decision,
    *,
    approvals: Approvals,
    modes: ModeSwitch,
    commit: Callable[[Item], Item],
    signal: Callable[[str], None],
) -> None:
    """Ask a person about the plan in ``call`` and commit the call's result."""
    try:
        ExitPlanModeArgs.model_validate(call.input)
    except ValidationError:
        commit(
            ToolResult(
                call_id=call.id,
                summary=f"{call.name}: not asked — give the plan, in markdown, as 'plan'",
                is_error=True,
            )
        )
        return
    answer = await approvals.ask(
        call, kind="plan", reason=decision.reason, diff=None, signal=signal
    )
    if not answer.allow:
        reason = answer.message.strip() or "no reason given"
        who = "the user did not approve the plan" if answer.asked else "nobody could approve it"
        summary = (
            f"{who}: {reason}. The pod stays in plan mode: revise the plan (ask if something "
            "is unclear) and call exit_plan_mode again."
        )
        commit(ToolResult(call_id=call.id, summary=summary, is_error=True))
        return
    try:
        mode = modes.leave_plan(answer.mode)
    except ModeRefused as exc:  # checked when the answer came; the configuration may not change
        commit(ToolResult(call_id=call.id, summary=f"{call.name}: {exc}", is_error=True))
        return
    commit(
        ToolResult(
            call_id=call.id,
            summary=f"The user approved the plan. The pod is now in {mode} mode: carry the "
            "plan out.",
        )
    )
