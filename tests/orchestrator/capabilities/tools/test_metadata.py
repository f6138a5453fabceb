"""A tool carries its own metadata: the Claude Code name hooks see and the ACP kind editors
draw. The hook dialect's and the ACP mapping's tables are gathered from the tools, so a new
tool touches its own module and the registry only."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from cli.acp import mapping
from orchestrator.capabilities.hooks import dialect
from orchestrator.capabilities.tools.arguments import TypedTool
from orchestrator.capabilities.tools.base import AcpKind
from orchestrator.capabilities.tools.registry import acp_kinds, builtin_tools, claude_code_names

EXPECTED_CLAUDE_NAMES = {
    "bash": "Bash",
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "glob": "Glob",
    "grep": "Grep",
    "task": "Task",
    "todo_write": "TodoWrite",
    "web_fetch": "WebFetch",
    "exit_plan_mode": "ExitPlanMode",
    "skill": "Skill",
}
"""``hooks/dialect.TOOLS`` as it was written by hand, before the tools said it themselves."""

EXPECTED_ACP_KINDS = {
    "read_file": "read",
    "memory_read": "read",
    "glob": "search",
    "grep": "search",
    "knowledge_search": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "exit_plan_mode": "think",
    "bash": "execute",
    "todo_write": "think",
    "web_fetch": "fetch",
    "skill": "read",
}
"""``acp/mapping.TOOL_KINDS`` as it was written by hand."""


@pytest.mark.parametrize("tool", builtin_tools(), ids=lambda tool: tool.name)
def test_every_builtin_tool_declares_both(tool: type[TypedTool[Any]]) -> None:
    own = vars(tool)
    assert "claude_code_name" in own, f"{tool.__name__} must say its Claude Code name (or None)"
    assert "acp_kind" in own, f"{tool.__name__} must say its ACP kind (or 'other')"
    assert own["acp_kind"] in get_args(AcpKind)
    assert own["claude_code_name"] is None or own["claude_code_name"][:1].isupper()


def test_builtin_tools_have_distinct_names() -> None:
    names = [tool.name for tool in builtin_tools()]
    assert len(names) == len(set(names))


def test_the_derived_tables_are_the_hand_written_ones() -> None:
    assert claude_code_names() == EXPECTED_CLAUDE_NAMES
    assert {tool: entry[0] for tool, entry in dialect.TOOLS.items()} == EXPECTED_CLAUDE_NAMES
    assert acp_kinds() == EXPECTED_ACP_KINDS
    assert mapping.TOOL_KINDS == EXPECTED_ACP_KINDS


def test_search_tools_are_reads_for_permissions_but_search_for_an_editor() -> None:
    kinds = {tool.name: tool for tool in builtin_tools()}
    for name in ("glob", "grep", "knowledge_search"):
        assert getattr(kinds[name], "kind", None) == "read"
        assert kinds[name].acp_kind == "search"


def test_every_claude_name_with_renamed_fields_is_one_a_tool_stands_for() -> None:
    assert set(dialect.FIELDS) <= set(claude_code_names().values())
