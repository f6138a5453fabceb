"""A child pod's configuration, derived from its parent's and the model's request (pure).

The child inherits everything that shapes how it talks to the model (provider, model,
thinking, prompt caching, limits) and how it may act (permission rules, roots, tool
environment, MCP servers), then narrows: its permission mode is never wider than its
parent's, a tool subset denies the others, and it stands one level deeper in the tree.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator.config.model import PodConfig
from orchestrator.config.paths import POD_NAME_MAX
from orchestrator.config.permissions import MODE_REACH, Mode, mode_ceiling
from orchestrator.config.subpods import AgentConfig
from orchestrator.errors import PodRuntimeError

Isolation = Literal["shared", "worktree"]

NAME_CHARS = 24
"""How much of the model's short name a child's pod name keeps."""


class TaskRefused(PodRuntimeError):
    """A ``task`` call asks for something the parent may not give; the model reads why."""


@dataclass(frozen=True, slots=True)
class ChildRequest:
    """What one ``task`` call asks for, with an agent's defaults filled in."""

    prompt: str
    name: str
    tools: tuple[str, ...] | None = None
    mode: str | None = None
    model: str | None = None
    isolation: Isolation = "shared"
    agent: str | None = None
    role: str = ""


def _reach(mode: str) -> int:
    """How wide ``mode`` is (an unknown one is wider than any)."""
    reach = {str(key): value for key, value in MODE_REACH.items()}
    return reach.get(mode, len(reach))


def child_request(
    parent: PodConfig,
    *,
    prompt: str,
    name: str,
    tools: list[str] | None,
    mode: str | None,
    model: str | None,
    isolation: Isolation,
    agent: str | None,
    live_mode: Mode | None = None,
) -> ChildRequest:
    """The request with its agent's settings under the call's own; :class:`TaskRefused` for
    an unknown agent, an empty prompt or a mode wider than the parent's."""
    if not prompt.strip():
        raise TaskRefused("prompt is empty: say what the child pod should do")
    spec = AgentConfig()
    if agent is not None:
        if agent not in parent.agents:
            known = ", ".join(sorted(parent.agents)) or "none are configured"
            raise TaskRefused(f"no agent named {agent!r} (agents: {known})")
        spec = parent.agents[agent]
    chosen_mode: str | None = mode or spec.permission_mode
    # The parent's mode now (a person may have switched it since the start): a child never
    # gets more than it, and follows it when the call names none. A parent in ``plan`` starts
    # no child (the policy refuses ``task`` there); one configured in ``plan`` works in
    # ``default`` once its plan is approved.
    configured = parent.permissions.mode
    parent_mode = mode_ceiling(live_mode or configured)
    if chosen_mode is None and parent_mode != configured:
        chosen_mode = parent_mode
    if chosen_mode is not None and _reach(chosen_mode) > MODE_REACH[parent_mode]:
        raise TaskRefused(
            f"permission mode {chosen_mode!r} is wider than this pod's ({parent_mode!r}); "
            f"a child may only narrow it"
        )
    chosen_tools = tools if tools is not None else spec.tools
    return ChildRequest(
        prompt=prompt,
        name=name.strip() or agent or "task",
        tools=tuple(chosen_tools) if chosen_tools is not None else None,
        mode=chosen_mode,
        model=model or spec.model,
        isolation=isolation,
        agent=agent,
        role=spec.system_prompt,
    )


def denied_tools(offered: list[str], subset: tuple[str, ...]) -> list[str]:
    """The offered tools a subset leaves out; :class:`TaskRefused` when it names a tool this
    pod does not offer (a child cannot get what its parent lacks)."""
    unknown = [
        name for name in subset if not any(fnmatch.fnmatchcase(tool, name) for tool in offered)
    ]
    if unknown:
        raise TaskRefused(
            f"tools not offered to this pod: {', '.join(unknown)} (offered: {', '.join(offered)})"
        )
    return [t for t in offered if not any(fnmatch.fnmatchcase(t, name) for name in subset)]


def child_pod_name(parent: str, short: str, number: int) -> str:
    """``<parent>.<short>-<n>``: unique within the parent's session, a valid pod name."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", short).strip("-")[:NAME_CHARS] or "task"
    tail = f".{slug}-{number}"
    return parent[: POD_NAME_MAX - len(tail)] + tail


def child_config(
    parent: PodConfig,
    request: ChildRequest,
    *,
    name: str,
    session: Path,
    socket: Path,
    workspace: Path,
    offered: list[str],
    budget_usd: float | None = None,
) -> dict[str, Any]:
    """The child's whole configuration as JSON data (``pod serve --child-config-stdin``).

    ``budget_usd``: what the child may spend, the parent's remaining budget (its session's
    cap; its turns have no cap of their own), None when the parent has none.

    ``offered`` is what the parent's model is offered now: a tool subset is checked against
    it. The result is validated by the child as a :class:`PodConfig`, so nothing in it is
    read from the child's workspace files again (the parent already did, once).
    """
    data = parent.model_dump(mode="json")
    permissions = dict(data["permissions"])
    if request.mode is not None:
        permissions["mode"] = request.mode
    if request.tools is not None:
        deny = denied_tools(offered, request.tools)
        permissions["deny"] = [
            *permissions["deny"],
            *(d for d in deny if d not in permissions["deny"]),
        ]
    subpods = dict(data["subpods"])
    subpods["depth"] = parent.subpods.depth + 1
    subpods["role"] = request.role
    subpods["parent"] = parent.pod_name()
    data.update(
        name=name,
        workspace=str(workspace),
        session=str(session),
        socket=str(socket),
        parent_socket=None,  # the parent is a client of its child, not a notes source
        permissions=permissions,
        subpods=subpods,
        max_turn_tokens=parent.subpods.child_max_tokens,
        budget_usd=budget_usd,
        turn_budget_usd=None,
        scripted_script=str(parent.subpods.child_script) if parent.subpods.child_script else None,
    )
    if request.model is not None:
        data["model"] = request.model
    # A ``sandbox = false`` hook runs the workspace files it names only as the pod found them
    # at its start; a child starts after the model may have changed them, so there the hook
    # takes the default rule: outside, or inside the sandbox when it runs a workspace file.
    for matchers in data["hooks"].values():
        for matcher in matchers:
            for hook in matcher["hooks"]:
                if hook.get("sandbox") is False:
                    hook["sandbox"] = None
    if workspace != parent.workspace:
        # Roots inside the parent's workspace would reach past the child's isolation.
        inside = str(parent.workspace.resolve())
        for key in ("read_roots", "write_roots"):
            data[key] = [r for r in data[key] if not (r + "/").startswith(inside + "/")]
    return data
