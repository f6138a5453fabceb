"""The system prompt names only tools the pod offers: a child with a tool subset (issue 47 §2).

The pod's own registry decides what is offered; these tests build it as the pod does and check
every tool name the prompt mentions against it, so a new prompt line naming a tool the pod lacks
fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.subpods.spec import child_config, child_request
from orchestrator.capabilities.tools.base import Tool
from orchestrator.capabilities.tools.knowledge import KnowledgeSearchTool, MemoryReadTool
from orchestrator.capabilities.tools.registry import builtin_tools, default_registry
from orchestrator.config.model import PodConfig
from orchestrator.runtime.system_prompt import (
    KNOWLEDGE_TOOLS,
    SystemPrompt,
    build_system_prompt,
    knowledge_tools_hint,
)

# The reviewer of docs/subpods.md.
REVIEWER = {
    "description": "reviews a change and reports problems",
    "system_prompt": "You review code. Report problems; change nothing.",
    "tools": ["read_file", "grep", "glob"],
    "permission_mode": "read-only",
}

ALL_TOOL_NAMES = {tool.name for tool in builtin_tools()} | set(KNOWLEDGE_TOOLS) | {"task"}


def offered(config: PodConfig) -> list[str]:
    """What the pod offers the model, built as assemble.py builds it."""
    root = config.memory_root()
    extra: list[Tool] = []
    if config.memory.enabled:
        extra += [KnowledgeSearchTool(root), MemoryReadTool(root)]
    return default_registry(config, extra=extra).names()


def named_tools(prompt: SystemPrompt) -> set[str]:
    """Every known tool name the prompt spells in backticks."""
    return set(re.findall(r"`([a-z_]+)`", prompt.text)) & ALL_TOOL_NAMES


@pytest.fixture
def parent(tmp_path: Path) -> PodConfig:
    workspace = tmp_path / "ws"
    (workspace / "knowledge").mkdir(parents=True)
    (workspace / "knowledge" / "style.md").write_text(
        "---\ndescription: Prefer small functions.\nmodel_invokation: true\n---\nBody.\n",
        encoding="utf-8",
    )
    return PodConfig.model_validate(
        {
            "workspace": workspace.resolve(),
            "name": "app",
            "allow_bash": True,
            "agents": {"reviewer": REVIEWER},
        }
    )


def reviewer_of(parent: PodConfig, tmp_path: Path, tools: list[str] | None = None) -> PodConfig:
    request = child_request(
        parent,
        prompt="review",
        name="",
        tools=tools,
        mode=None,
        model=None,
        isolation="shared",
        agent="reviewer",
    )
    data = child_config(
        parent,
        request,
        name="app.reviewer-1",
        session=tmp_path / "c.jsonl",
        socket=tmp_path / "c.sock",
        workspace=parent.workspace,
        offered=offered(parent),
    )
    return PodConfig.model_validate(data)


def test_the_parent_is_told_of_both_knowledge_tools(parent: PodConfig) -> None:
    prompt = build_system_prompt(parent, ScopedFS(parent.workspace))
    assert "resident_knowledge" in prompt.sections
    assert {"memory_read", "knowledge_search", "bash"} <= named_tools(prompt)
    assert named_tools(prompt) <= set(offered(parent))


def test_a_reviewer_child_is_not_told_to_call_tools_it_lacks(
    parent: PodConfig, tmp_path: Path
) -> None:
    child = reviewer_of(parent, tmp_path)
    assert set(offered(child)) == {"read_file", "grep", "glob"}
    prompt = build_system_prompt(child, ScopedFS(child.workspace))
    # The summaries still help it (it can open the files with read_file) ...
    assert "- style: Prefer small functions." in prompt.text
    assert "sub_pod" in prompt.sections
    # ... but no line names a tool it is not offered: not the knowledge tools, not bash.
    assert named_tools(prompt) <= set(offered(child))
    assert "memory_read" not in prompt.text and "knowledge_search" not in prompt.text
    assert "Knowledge records:" in prompt.text and "read with" not in prompt.text
    assert knowledge_tools_hint(()) in prompt.text


def test_a_child_keeping_one_knowledge_tool_is_told_of_that_one(
    parent: PodConfig, tmp_path: Path
) -> None:
    child = reviewer_of(parent, tmp_path, tools=["read_file", "memory_read"])
    assert set(offered(child)) == {"read_file", "memory_read"}
    prompt = build_system_prompt(child, ScopedFS(child.workspace))
    assert named_tools(prompt) == {"memory_read"} <= set(offered(child))
    assert knowledge_tools_hint(("memory_read",)) in prompt.text


def test_a_deny_rule_in_the_pods_own_config_narrows_the_prompt_too(parent: PodConfig) -> None:
    config = parent.model_copy(
        update={"permissions": parent.permissions.model_copy(update={"deny": ["knowledge_*"]})}
    )
    prompt = build_system_prompt(config, ScopedFS(config.workspace))
    assert "knowledge_search" not in offered(config)
    assert named_tools(prompt) <= set(offered(config))
    assert "memory_read" in named_tools(prompt)


@pytest.mark.parametrize(
    "tools",
    [(), ("memory_read",), ("knowledge_search",), ("knowledge_search", "memory_read")],
)
def test_the_hint_names_exactly_the_tools_given(tools: tuple[str, ...]) -> None:
    hint = knowledge_tools_hint(tools)
    assert set(re.findall(r"`([a-z_]+)`", hint)) == set(tools)
