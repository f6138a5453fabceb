"""An agent file (Claude Code's format) through a real pod: a ``task`` child of the agent
``tools: Read, Grep`` names is offered exactly those tools, and told its body as its role.
The children are processes on the fake Messages API, so their requests can be read."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.fake_api import FakeAnthropic
from orchestrator.config.subpods import SubpodsConfig
from orchestrator.serving.client import PodClient
from tests.e2e.harness import fake_provider, running_pod
from tests.e2e.test_subpods_e2e import PARENT, Tree, _config, _run, tree_env

__all__ = ["tree_env"]  # the fixture, used by name


async def test_an_agent_file_gives_a_child_only_its_tools(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    tree = Tree(tasks=[{"prompt": "alpha: look", "name": "look", "agent": "scout"}],
                child_tool="grep")  # fmt: skip
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "scout.md").write_text(
        "---\nname: scout\ndescription: looks around\ntools: Read, Grep\nmodel: inherit\n---\n"
        "You scout, and never write.\n"
    )
    config = _config(
        workspace, permissions={"mode": "accept-edits"}, subpods=SubpodsConfig(max_depth=1)
    )
    async with running_pod(workspace, tmp_path, provider=fake_provider(tree_env), **config):
        client = await PodClient.connect(tmp_path / "pod.sock")
        await _run(client, f"{PARENT} delegate")
        await client.wait_for("run_end", result="finished", timeout=60)
        await client.close()
    parent_first = next(r for r in tree_env.requests if PARENT in json.dumps(r.body["messages"][0]))
    task_tool = next(t for t in parent_first.body["tools"] if t["name"] == "task")
    assert "scout: looks around" in json.dumps(task_tool)
    child_first = next(
        r for r in tree_env.requests if "alpha: look" in json.dumps(r.body["messages"][0])
    )
    assert {t["name"] for t in child_first.body["tools"]} == {"read_file", "grep"}
    assert "You scout, and never write." in json.dumps(child_first.body["system"])
    assert child_first.body["model"] == "fake-model"  # inherit: the parent's


async def test_a_model_family_is_the_newest_the_models_api_lists(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    tree = Tree(tasks=[{"prompt": "alpha: look", "name": "look", "agent": "scout"}],
                child_tool="grep")  # fmt: skip
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    (workspace / ".pod" / "agents").mkdir(parents=True)
    (workspace / ".pod" / "agents" / "scout.md").write_text(
        "---\ndescription: looks\ntools: [Grep]\nmodel: sonnet\n---\nYou scout.\n"
    )
    config = _config(
        workspace, permissions={"mode": "accept-edits"}, subpods=SubpodsConfig(max_depth=1)
    )
    async with running_pod(workspace, tmp_path, provider=fake_provider(tree_env), **config):
        client = await PodClient.connect(tmp_path / "pod.sock")
        await _run(client, f"{PARENT} delegate")
        await client.wait_for("run_end", result="finished", timeout=60)
        await client.close()
    child_first = next(
        r for r in tree_env.requests if "alpha: look" in json.dumps(r.body["messages"][0])
    )
    # The fake lists claude-sonnet-4-6 (2026-02-17) as its newest Sonnet.
    assert child_first.body["model"] == "claude-sonnet-4-6"
