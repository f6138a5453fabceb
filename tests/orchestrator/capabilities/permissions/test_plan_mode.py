"""Plan mode as a decision: each tool in each mode, deny rules, and switching modes."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.capabilities.permissions import PLAN_TOOL, Policy, ToolKind
from orchestrator.capabilities.permissions.modes import (
    ModeChange,
    ModeRefused,
    ModeSwitch,
    parse_mode,
)
from orchestrator.config.permissions import MODE_REACH, PermissionsConfig, mode_refusal

# Every built-in tool as the runner sees it (name, permission kind, arguments), and an MCP
# tool with and without the read-only hint (the hint makes it a read).
CALLS: dict[str, tuple[ToolKind, dict[str, Any]]] = {
    "read_file": ("read", {"path": "a.py"}),
    "glob": ("read", {"pattern": "*.py"}),
    "grep": ("read", {"pattern": "x"}),
    "knowledge_search": ("read", {"query": "x"}),
    "memory_read": ("read", {"slug": "x"}),
    "web_fetch": ("read", {"url": "https://docs.python.org/"}),
    "mcp__docs__lookup": ("read", {}),
    "write_file": ("edit", {"path": "a.py", "content": "x"}),
    "edit_file": ("edit", {"path": "a.py", "old_string": "a", "new_string": "b"}),
    "bash": ("execute", {"command": "ls"}),
    "job_output": ("read", {"id": "j1"}),
    "job_wait": ("read", {"id": "j1"}),
    "job_kill": ("edit", {"id": "j1"}),
    "task": ("read", {"prompt": "look", "name": "t"}),
    "mcp__db__drop": ("other", {}),
}

RUN_IN_PLAN = {
    "read_file",
    "glob",
    "grep",
    "knowledge_search",
    "memory_read",
    "web_fetch",
    "mcp__docs__lookup",
}


def policy(**table: object) -> Policy:
    return Policy.from_config(PermissionsConfig.model_validate(table))


@pytest.mark.parametrize("tool", list(CALLS))
def test_in_plan_mode_reads_run_and_nothing_else_runs_or_asks(tool: str) -> None:
    kind, arguments = CALLS[tool]
    decision = policy(mode="plan").decide(tool, kind, arguments)
    if tool in RUN_IN_PLAN:
        as_default = policy(mode="default").decide(tool, kind, arguments)
        assert decision.verdict == as_default.verdict
        # Reads run; a fetch from a domain no rule allows yet asks, in plan mode as in default
        # (docs/web.md), since a person must still choose where the pod reaches.
        assert decision.verdict == ("ask" if tool == "web_fetch" else "allow")
    else:
        assert decision.verdict == "deny"  # never "ask": nothing asks in plan mode
        assert "plan mode" in decision.reason and "exit_plan_mode" in decision.reason


@pytest.mark.parametrize("mode", ["default", "accept-edits", "yolo", "read-only"])
@pytest.mark.parametrize("tool", list(CALLS))
def test_out_of_plan_mode_plan_changes_nothing(mode: str, tool: str) -> None:
    """The plan rules apply in plan mode only: other modes decide as they always did."""
    kind, arguments = CALLS[tool]
    decision = policy(mode=mode).decide(tool, kind, arguments)
    assert "plan mode" not in decision.reason


@pytest.mark.parametrize("mode", ["plan", "default", "accept-edits", "yolo", "read-only"])
@pytest.mark.parametrize("tool", list(CALLS))
def test_a_deny_rule_wins_in_every_mode(mode: str, tool: str) -> None:
    kind, arguments = CALLS[tool]
    decision = policy(mode=mode, deny=[tool]).decide(tool, kind, arguments)
    assert decision.verdict == "deny" and f"the rule {tool}" in decision.reason


def test_allow_rules_and_grants_do_not_run_anything_in_plan_mode() -> None:
    table = policy(mode="plan", allow=["bash", "write_file", "mcp__db__*"])
    table.grant("edit_file", {})
    for tool in ("bash", "write_file", "edit_file", "mcp__db__drop"):
        kind, arguments = CALLS[tool]
        assert table.decide(tool, kind, arguments).verdict == "deny", tool


def test_exit_plan_mode_asks_in_plan_mode_only_and_firmly() -> None:
    plan = policy(mode="plan", allow=[PLAN_TOOL])
    asked = plan.decide(PLAN_TOOL, "read", {"plan": "1. do it"})
    # A firm question: no allow rule, "always" answer or PreToolUse hook lifts it.
    assert (asked.verdict, asked.firm) == ("ask", True)
    for mode in ("default", "accept-edits", "yolo", "read-only"):
        refused = policy(mode=mode).decide(PLAN_TOOL, "read", {"plan": "x"})
        assert refused.verdict == "deny" and "not in plan mode" in refused.reason
    denied = policy(mode="plan", deny=[PLAN_TOOL]).decide(PLAN_TOOL, "read", {"plan": "x"})
    assert denied.verdict == "deny" and "rule" in denied.reason


def test_read_only_stays_the_strictest_and_cannot_reach_plan() -> None:
    assert min(MODE_REACH, key=MODE_REACH.__getitem__) == "read-only"
    read_only = policy(mode="read-only")
    assert not read_only.offered(PLAN_TOOL, "read")
    assert mode_refusal("plan", "read-only") is not None
    for mode in ("default", "accept-edits", "yolo", "plan"):
        assert policy(mode=mode).offered(PLAN_TOOL, "read"), mode


def test_the_tools_offered_follow_the_configured_mode_not_the_switched_one() -> None:
    table = policy(mode="default")
    table.mode = "plan"
    assert table.offered("bash", "execute") and table.offered("write_file", "edit")


def test_sandboxed_bash_follows_the_mode_it_is_switched_to() -> None:
    table = policy(mode="accept-edits")
    table.sandboxed = True
    assert table.decide("bash", "execute", {"command": "ls"}).verdict == "allow"
    table.mode = "default"
    assert table.decide("bash", "execute", {"command": "ls"}).verdict == "ask"
    table.mode = "plan"
    assert table.decide("bash", "execute", {"command": "ls"}).verdict == "deny"


# -- switching --------------------------------------------------------------------------------


def switch(configured: str) -> tuple[ModeSwitch, list[ModeChange]]:
    changes: list[ModeChange] = []
    return ModeSwitch(policy(mode=configured), on_change=changes.append), changes


@pytest.mark.parametrize("configured", ["read-only", "plan", "default", "accept-edits", "yolo"])
@pytest.mark.parametrize("target", ["read-only", "plan", "default", "accept-edits", "yolo"])
def test_a_switch_may_narrow_never_widen(configured: str, target: str) -> None:
    modes, changes = switch(configured)
    ceiling = "default" if configured == "plan" else configured
    if MODE_REACH[target] <= MODE_REACH[ceiling]:  # type: ignore[index]
        modes.switch(target, "test")  # type: ignore[arg-type]
        assert modes.mode == modes.policy.mode == target
        assert len(changes) == (target != configured)
    else:
        with pytest.raises(ModeRefused, match="wider than this pod's configuration"):
            modes.switch(target, "test")  # type: ignore[arg-type]
        assert modes.mode == configured and not changes


def test_leaving_plan_goes_back_to_the_mode_before_it_or_the_one_named() -> None:
    modes, changes = switch("accept-edits")
    modes.switch("plan", "set_mode")
    assert modes.leave_plan(None) == "accept-edits"
    modes.switch("plan", "set_mode")
    assert modes.leave_plan("default") == "default"
    assert [c.new for c in changes] == ["plan", "accept-edits", "plan", "default"]
    assert changes[1].source == "plan approved"
    with pytest.raises(ModeRefused):
        modes.leave_plan("plan")


def test_a_pod_started_in_plan_leaves_it_for_default_and_no_wider() -> None:
    modes, _ = switch("plan")
    assert modes.mode == "plan"
    assert modes.leave_plan(None) == "default"
    modes.switch("plan", "set_mode")
    with pytest.raises(ModeRefused):
        modes.leave_plan("accept-edits")
    assert modes.mode == "plan"


def test_restore_takes_the_recorded_mode_only_under_the_same_configuration() -> None:
    modes, changes = switch("default")
    assert modes.restore("plan", "default", "default") is None
    assert modes.mode == "plan" and not changes  # a restore is no new switch
    other, _ = switch("accept-edits")
    assert other.restore("plan", "default", "default") is None
    assert other.mode == "accept-edits"  # started with another mode since: that one counts


def test_parse_mode_names_the_modes() -> None:
    assert parse_mode("plan") == "plan"
    with pytest.raises(ModeRefused, match="accept-edits"):
        parse_mode("planning")


def test_a_pre_tool_use_hook_lifts_neither_plan_mode_nor_a_plan_question() -> None:
    from orchestrator.core.interceptors import Proceed
    from orchestrator.runtime.tool_runner import _with_hook

    table = policy(mode="plan")
    refused = table.decide("bash", "execute", {"command": "ls"})
    assert _with_hook(refused, Proceed(permission="allow")) == refused
    plan = table.decide(PLAN_TOOL, "read", {"plan": "x"})
    lifted = _with_hook(plan, Proceed(permission="allow"))
    assert lifted is not None and lifted.verdict == "ask"


def test_every_front_end_knows_the_same_modes() -> None:
    from typing import get_args

    from cli.acp.modes import MODES as ACP_MODES
    from cli.tui.keys import MODE_CYCLE
    from orchestrator.config.permissions import MODES, Mode
    from orchestrator.protocol import PermissionMode

    assert set(get_args(PermissionMode)) == set(get_args(Mode)) == set(MODES) == set(MODE_REACH)
    assert {mode for mode, _, _ in ACP_MODES} == set(MODES)
    assert set(MODE_CYCLE) <= set(MODES) and "read-only" not in MODE_CYCLE
