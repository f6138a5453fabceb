"""``exit_plan_mode``: the model shows its plan and asks a person to leave ``plan`` mode.

A call never runs as an ordinary tool: the policy makes it a firm question in ``plan`` mode
(and refuses it outside), and the pod's runner answers it from the approval
(:mod:`orchestrator.runtime.plan_approval`): approved, the mode switches and the model is told
to go on; denied, the pod stays in ``plan`` and the model reads why. The tool is declared for
the pod's whole life whatever the mode, so the tool list (and the cached prompt prefix) is the
same in and out of ``plan`` (docs/plan-mode.md).
"""

from __future__ import annotations

from pydantic import Field

from orchestrator.capabilities.permissions import PLAN_TOOL
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput

__all__ = ["MAX_PLAN_CHARS", "ExitPlanModeArgs", "ExitPlanModeTool"]

MAX_PLAN_CHARS = 60_000
"""A plan longer than this is refused (a person reads it whole before approving)."""


class ExitPlanModeArgs(ToolArgs):
    """``exit_plan_mode``'s arguments."""

    plan: str = Field(
        min_length=1,
        max_length=MAX_PLAN_CHARS,
        pattern=r"\S",
        description="The plan, in markdown: what you will change, file by file, and how you "
        "will check it. The person approving reads exactly this.",
    )


class ExitPlanModeTool(TypedTool[ExitPlanModeArgs]):
    """Ask a person to approve the plan and leave plan mode."""

    name = PLAN_TOOL
    claude_code_name = "ExitPlanMode"
    acp_kind = "think"
    side_effects = False
    kind = "read"
    """It changes nothing itself; the policy treats it by name (asks in ``plan``, refuses
    elsewhere)."""
    description = (
        "Only in plan mode: present your plan to the user and ask them to approve it. Call it "
        "once you have read what you need and know what you will do. Approved, the pod leaves "
        "plan mode and you carry the plan out in the same turn; refused, you stay in plan mode "
        "and read why. Outside plan mode a call is refused."
    )
    args_model = ExitPlanModeArgs

    async def execute(self, args: ExitPlanModeArgs, ctx: ToolContext) -> ToolOutput:
        """Reached only where nobody approves plans (a runner without approvals)."""
        raise ToolError("a plan is approved by a person, and nobody can be asked here")
