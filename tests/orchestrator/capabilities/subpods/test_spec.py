"""A child's configuration from its parent's: inherited, then only ever narrowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.capabilities.subpods.spec import (
    TaskRefused,
    child_config,
    child_pod_name,
    child_request,
    denied_tools,
)
from orchestrator.config.model import PodConfig
from orchestrator.config.subpods import AgentConfig, SubpodsConfig

OFFERED = ["bash", "edit_file", "glob", "grep", "mcp__git__log", "read_file", "task", "write_file"]


def _parent(tmp_path: Path, **extra: object) -> PodConfig:
    return PodConfig(workspace=tmp_path, name="app", model="claude-x", **extra)  # type: ignore[arg-type]


def _request(parent: PodConfig, **extra: object) -> object:
    args: dict[str, object] = {
        "prompt": "do it",
        "name": "tests",
        "tools": None,
        "mode": None,
        "model": None,
        "isolation": "shared",
        "agent": None,
    }
    args.update(extra)
    return child_request(parent, **args)  # type: ignore[arg-type]


def test_a_child_inherits_everything_and_stands_one_level_deeper(tmp_path: Path) -> None:
    parent = _parent(
        tmp_path,
        thinking="adaptive",
        prompt_cache="1h",
        permissions={"mode": "accept-edits", "deny": ["bash(rm:*)"]},
        subpods=SubpodsConfig(child_max_tokens=5000),
    )
    request = _request(parent)
    data = child_config(
        parent,
        request,  # type: ignore[arg-type]
        name="app.tests-1",
        session=tmp_path / "c.jsonl",
        socket=tmp_path / "c.sock",
        workspace=tmp_path,
        offered=OFFERED,
    )
    child = PodConfig.model_validate(data)
    assert (child.model, child.thinking, child.prompt_cache) == ("claude-x", "adaptive", "1h")
    assert child.permissions.mode == "accept-edits"
    assert child.permissions.deny == ["bash(rm:*)"]
    assert (child.name, child.session, child.socket) == (
        "app.tests-1",
        tmp_path / "c.jsonl",
        tmp_path / "c.sock",
    )
    assert child.subpods.depth == 1 and child.parent_socket is None
    assert child.max_turn_tokens == 5000


def test_a_mode_wider_than_the_parents_is_refused(tmp_path: Path) -> None:
    parent = _parent(tmp_path, permissions={"mode": "default"})
    with pytest.raises(TaskRefused, match="wider than this pod's"):
        _request(parent, mode="accept-edits")
    assert _request(parent, mode="read-only").mode == "read-only"  # type: ignore[attr-defined]


def test_an_agents_settings_fill_in_and_the_calls_own_win(tmp_path: Path) -> None:
    parent = _parent(
        tmp_path,
        permissions={"mode": "yolo"},
        agents={
            "reviewer": AgentConfig(
                description="reviews",
                system_prompt="You review.",
                tools=["read_file", "grep"],
                model="claude-small",
                permission_mode="read-only",
            )
        },
    )
    request = _request(parent, agent="reviewer")
    assert request.role == "You review."  # type: ignore[attr-defined]
    assert request.tools == ("read_file", "grep")  # type: ignore[attr-defined]
    assert (request.model, request.mode) == ("claude-small", "read-only")  # type: ignore[attr-defined]
    own = _request(parent, agent="reviewer", model="claude-big", tools=["glob"])
    assert (own.model, own.tools) == ("claude-big", ("glob",))  # type: ignore[attr-defined]
    with pytest.raises(TaskRefused, match="no agent named 'nobody'"):
        _request(parent, agent="nobody")


def test_a_tool_subset_denies_the_rest_and_cannot_name_what_the_parent_lacks() -> None:
    assert denied_tools(OFFERED, ("read_file", "mcp__git__*")) == [
        "bash",
        "edit_file",
        "glob",
        "grep",
        "task",
        "write_file",
    ]
    with pytest.raises(TaskRefused, match="not offered to this pod: web_fetch"):
        denied_tools(OFFERED, ("web_fetch",))


def test_a_worktree_child_loses_roots_inside_the_parents_workspace(tmp_path: Path) -> None:
    inside, outside = tmp_path / "ws" / "lib", tmp_path / "shared"
    for path in (inside, outside):
        path.mkdir(parents=True)
    parent = PodConfig(workspace=tmp_path / "ws", read_roots=[inside, outside])
    data = child_config(
        parent,
        _request(parent, isolation="worktree"),  # type: ignore[arg-type]
        name="c",
        session=tmp_path / "c.jsonl",
        socket=tmp_path / "c.sock",
        workspace=tmp_path / "wt",
        offered=OFFERED,
    )
    assert data["read_roots"] == [str(outside)]


def test_child_names_are_valid_unique_pod_names() -> None:
    assert child_pod_name("app", "run the tests!", 3) == "app.run-the-tests-3"
    long = child_pod_name("p" * 64, "x" * 80, 12)
    assert len(long) == 64 and long.endswith("." + "x" * 24 + "-12")
    assert child_pod_name("app", "???", 1) == "app.task-1"


def test_an_empty_prompt_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TaskRefused, match="prompt is empty"):
        _request(_parent(tmp_path), prompt="  ")
