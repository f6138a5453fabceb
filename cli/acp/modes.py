"""The pod's permission modes as ACP session modes, and a plan put to the editor.

Every session advertises the five modes (``default``, ``accept-edits``, ``plan``,
``read-only``, ``yolo``) with the pod's current one; ``session/set_mode`` from the editor is
the pod's ``set_mode`` (a mode wider than the pod was started with is refused with the pod's
reason), and every ``status`` whose ``permission_mode`` changed becomes a
``current_mode_update``. A plan (``approval_request`` with ``kind: "plan"``) is a
``session/request_permission`` whose content is the plan and whose options approve it (for the
mode before plan, or for ``accept-edits``) or keep planning.
"""

from __future__ import annotations

from typing import Any

from acp import schema

__all__ = [
    "MODES",
    "is_plan",
    "mode_state",
    "mode_update",
    "plan_answer",
    "plan_options",
    "plan_tool_call",
]

MODES: tuple[tuple[str, str, str], ...] = (
    ("default", "Default", "Asks before edits and commands."),
    ("accept-edits", "Accept edits", "Edits run without asking; commands ask."),
    (
        "plan",
        "Plan",
        "Reads and plans; nothing is changed or run until you approve the plan.",
    ),
    ("read-only", "Read only", "Only reads run; edits and commands are refused."),
    ("yolo", "Yolo", "Everything runs without asking."),
)
"""(id, name, description) of each mode, in the order an editor lists them."""


def mode_state(current: str) -> schema.SessionModeState:
    """The modes a session offers, and the one it is in."""
    return schema.SessionModeState(
        current_mode_id=current,
        available_modes=[
            schema.SessionMode(id=mode, name=name, description=description)
            for mode, name, description in MODES
        ],
    )


def mode_update(current: str) -> schema.CurrentModeUpdate:
    """The ``current_mode_update`` telling the editor the pod's mode changed."""
    return schema.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=current)


def is_plan(data: dict[str, Any]) -> bool:
    """Whether an ``approval_request`` is a plan."""
    return data.get("kind") == "plan" and isinstance((data.get("arguments") or {}).get("plan"), str)


def plan_tool_call(data: dict[str, Any]) -> schema.ToolCallUpdate:
    """The plan as the tool call the editor asks about: its text as the content (the editor
    renders it; nothing of it reaches a terminal from here)."""
    plan = str(data["arguments"]["plan"])
    where = f" — in child pod {data['pod']}" if data.get("pod") else ""
    return schema.ToolCallUpdate(
        tool_call_id=str(data["id"]),
        title=f"Approve the plan and leave plan mode?{where}",
        kind="switch_mode",
        status="pending",
        raw_input=dict(data["arguments"]),
        content=[
            schema.ContentToolCallContent(
                type="content", content=schema.TextContentBlock(type="text", text=plan)
            )
        ],
    )


def plan_options() -> list[schema.PermissionOption]:
    """Approve (back to the mode before plan), approve for ``accept-edits``, keep planning."""
    return [
        schema.PermissionOption(option_id="plan", name="Approve the plan", kind="allow_once"),
        schema.PermissionOption(
            option_id="plan:accept-edits",
            name="Approve, and accept edits without asking",
            kind="allow_once",
        ),
        schema.PermissionOption(option_id="deny", name="Keep planning", kind="reject_once"),
    ]


def plan_answer(response: schema.RequestPermissionResponse) -> tuple[str, dict[str, Any]]:
    """Our ``approve``/``deny`` method and params for the editor's answer to a plan."""
    outcome = response.outcome
    if isinstance(outcome, schema.AllowedOutcome) and outcome.option_id == "plan":
        return "approve", {}
    if isinstance(outcome, schema.AllowedOutcome) and outcome.option_id == "plan:accept-edits":
        return "approve", {"mode": "accept-edits"}
    if isinstance(outcome, schema.AllowedOutcome):
        return "deny", {"message": "the plan was not approved in the editor: keep planning"}
    return "deny", {
        "message": "the editor withdrew the question (the prompt was cancelled)",
        "asked": False,
    }
