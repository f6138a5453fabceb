"""Agent files: parsed as Claude Code writes them, mapped to the pod's tools, joined to
``[agents.*]`` under TOML, and refused with one alert each when a repository plants junk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.adapters.library.agents import FAMILY_FALLBACK, family_model, load_agent_files
from orchestrator.adapters.providers.base import ProviderError
from orchestrator.capabilities.subpods.agent_files import ModelFamilies, with_agent_files
from orchestrator.config.model import PodConfig
from orchestrator.config.skills import SkillsConfig
from orchestrator.config.subpods import AgentConfig
from tests.orchestrator.capabilities.skills.library_files import user_library


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    (path / ".claude" / "agents").mkdir(parents=True)
    return path.resolve()


def _agent(folder: Path, file: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text(text, encoding="utf-8")


def test_an_agent_file_becomes_a_task_agent(workspace: Path, tmp_path: Path) -> None:
    _agent(
        workspace / ".claude" / "agents",
        "reviewer.md",
        "---\ndescription: Reviews diffs\ntools:\n  - Read\n  - Grep\n  - Bash\n  - mcp__gh__*\n"
        "  - NotebookEdit\nmodel: opus\n---\nYou review.\n",
    )
    config = PodConfig(workspace=workspace)
    merged, alerts = with_agent_files(config, home=tmp_path / "home")
    agent = merged.agents["reviewer"]
    assert agent.description == "Reviews diffs" and agent.system_prompt == "You review."
    assert agent.tools == ["read_file", "grep", "bash", "mcp__gh__*"]
    assert agent.model == "opus"  # resolved when a task call starts the child
    [alert] = alerts
    assert "NotebookEdit" in alert and "reviewer" in alert
    assert config.agents == {}  # the config given is left as it was


def test_a_toml_agent_wins_over_a_file_of_the_same_name(workspace: Path, tmp_path: Path) -> None:
    _agent(workspace / ".claude" / "agents", "scout.md", "---\ndescription: file\n---\nx\n")
    _agent(user_library("agents"), "scout.md", "---\ndescription: user file\n---\ny\n")
    config = PodConfig(workspace=workspace, agents={"scout": AgentConfig(description="toml")})
    merged, alerts = with_agent_files(config, home=tmp_path / "home")
    assert merged.agents["scout"].description == "toml"
    [alert] = alerts
    assert "wins" in alert
    catalog = load_agent_files(workspace, SkillsConfig(), home=tmp_path / "home")
    found = catalog.agents["scout"]
    assert found.item.origin == "user" and [a.origin for a in found.shadowed] == [
        "claude-workspace"
    ]


def test_model_families_take_the_newest_listed_else_the_table() -> None:
    listed = [
        ("claude-sonnet-4-6", "2026-02-01T00:00:00Z"),
        ("claude-sonnet-9-9", "2027-01-01T00:00:00Z"),
        ("claude-opus-4-1", "2025-08-01T00:00:00Z"),
    ]
    assert family_model("sonnet", listed) == "claude-sonnet-9-9"
    assert family_model("Opus", listed) == "claude-opus-4-1"
    assert family_model("haiku", listed) == FAMILY_FALLBACK["haiku"]
    assert family_model("sonnet") == FAMILY_FALLBACK["sonnet"]
    assert family_model("claude-x-1") == "claude-x-1"
    assert family_model("haiku", [("claude-3-5-haiku", "2024-10-22")]) == "claude-3-5-haiku"


async def test_families_ask_the_models_api_once_and_fall_back_to_the_table() -> None:
    asked: list[int] = []

    async def listed() -> list[tuple[str, str]]:
        asked.append(1)
        return [("claude-sonnet-7", "2027-01-01"), ("claude-sonnet-6", "2026-01-01")]

    families = ModelFamilies(listed)
    assert await families.resolve("sonnet") == "claude-sonnet-7"
    assert await families.resolve("opus") == FAMILY_FALLBACK["opus"]
    assert await families.resolve("claude-given") == "claude-given"
    assert asked == [1]

    async def failing() -> list[tuple[str, str]]:
        raise ProviderError("the Models API did not list the models: down")

    assert await ModelFamilies(failing).resolve("sonnet") == FAMILY_FALLBACK["sonnet"]
    assert await ModelFamilies(None).resolve("haiku") == FAMILY_FALLBACK["haiku"]


def test_hostile_agent_files_are_refused_once_each(workspace: Path, tmp_path: Path) -> None:
    agents = workspace / ".claude" / "agents"
    with (agents / "big.md").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    os.mkfifo(agents / "fifo.md")
    secret = tmp_path / "secret.md"
    secret.write_text("---\ndescription: TOKEN\n---\nTOKEN\n")
    os.symlink(secret, agents / "leak.md")
    _agent(agents, "list.md", "---\n- a\n---\n")
    _agent(agents, "path.md", "---\nname: ../up\n---\n")
    _agent(agents, "tools.md", "---\ntools: 3\n---\n")
    _agent(agents, "ok.md", "---\ndescription: fine\n---\nbody\n")
    merged, alerts = with_agent_files(PodConfig(workspace=workspace), home=tmp_path / "home")
    assert list(merged.agents) == ["ok"]
    assert len(alerts) == 6, alerts
    assert not any("TOKEN" in alert for alert in alerts)


def test_a_child_does_not_read_agent_files_again(workspace: Path, tmp_path: Path) -> None:
    _agent(workspace / ".claude" / "agents", "scout.md", "---\ndescription: file\n---\nx\n")
    child = PodConfig.model_validate({"workspace": workspace, "subpods": {"depth": 1}})
    merged, alerts = with_agent_files(child, home=tmp_path / "home")
    assert merged.agents == {} and alerts == []


def test_claude_dirs_off_leaves_claude_agents_out(workspace: Path, tmp_path: Path) -> None:
    _agent(workspace / ".claude" / "agents", "scout.md", "---\ndescription: file\n---\nx\n")
    config = PodConfig.model_validate({"workspace": workspace, "skills": {"claude_dirs": False}})
    merged, _ = with_agent_files(config, home=tmp_path / "home")
    assert merged.agents == {}
