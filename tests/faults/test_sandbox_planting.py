"""Planting from inside the sandbox what runs later outside it (issue 38, finding 3).

Each attack is a sandboxed ``bash`` call the model makes, run unasked through a real pod with
``[sandbox] mode = "on"``, real bubblewrap and real git. Whatever it creates or changes among
the protected paths must not survive unasked: either the command could not plant it (a
read-only mount) or it is held for the user's approval, undone while it waits. Denied, the
user's own ``git status`` afterwards, run here outside the sandbox, runs nothing planted (the
planted command would write a marker file); approved, the plant is there again (and the
marker proves the attack was real).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from orchestrator.client import PodEvent
from orchestrator.sandbox.bwrap import SandboxUnavailable, find_bwrap
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod
from tests.faults.sandbox_home import UserHome, user_home  # noqa: F401

TIMEOUT_S = 60.0


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    try:
        find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The user's own git, outside the sandbox, never looking above the test's home."""
    env = {
        **os.environ,
        "GIT_CEILING_DIRECTORIES": str(cwd.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "u",
        "GIT_AUTHOR_EMAIL": "u@example.com",
        "GIT_COMMITTER_NAME": "u",
        "GIT_COMMITTER_EMAIL": "u@example.com",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check, timeout=60
    )


@dataclass
class Outcome:
    """What one attack's run showed."""

    asked: list[dict[str, Any]] = field(default_factory=list)
    """The approval requests about held paths."""
    while_waiting: list[Any] = field(default_factory=list)
    """What ``look`` saw while each request waited (the workspace as the user sees it)."""
    results: list[str] = field(default_factory=list)
    """The tool results' content, as the model reads it."""


async def attack(
    world: UserHome,
    workspace: Path,
    command: str,
    *,
    approve: bool,
    look: Callable[[], Any] = lambda: None,
) -> Outcome:
    """Run ``command`` as the model's sandboxed bash call; answer what is asked."""
    replies = [
        ScriptedReply(
            text="Running.", tool_calls=[ScriptedToolCall(name="bash", input={"command": command})]
        ),
        ScriptedReply(text="Done."),
    ]
    outcome = Outcome()
    async with running_pod(
        workspace,
        world.runtime,
        replies=replies,
        permissions={"mode": "accept-edits"},
        sandbox={"mode": "on"},
    ) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})

        async def scan() -> None:
            while (event := await client.next_event()) is not None:
                if event.event == "approval_request":
                    assert event.data.get("held"), f"a call was asked before it ran: {event.data}"
                    outcome.asked.append(event.data)
                    outcome.while_waiting.append(look())
                    answer = "approve" if approve else "deny"
                    await client.send(answer, {"id": event.data["id"]})
                elif event.event == "tool_result":
                    outcome.results.append(_content(event))
                elif event.event == "run_end":
                    assert event.data["result"] == "finished", event.data
                    return

        await asyncio.wait_for(scan(), TIMEOUT_S)
        pod.assert_all_requests_valid()
        await client.close()
    return outcome


def _content(event: PodEvent) -> str:
    return f"{event.data['summary']}\n{event.data.get('content') or ''}"


def _workspace(world: UserHome) -> Path:
    workspace = world.home / "project"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello\n")
    return workspace


def _fsmonitor(marker: Path) -> str:
    """A ``core.fsmonitor`` that leaves ``marker`` when git runs it."""
    return f"touch {marker}; true"


# -- git init + core.fsmonitor in a workspace without .git --------------------------------


@pytest.mark.parametrize("approve", [False, True], ids=["denied", "approved"])
async def test_a_new_git_dir_with_fsmonitor_is_held(world: UserHome, approve: bool) -> None:
    workspace = _workspace(world)
    marker = world.home / "fsmonitor-ran"
    command = f"git init -q && git config core.fsmonitor {shlex.quote(_fsmonitor(marker))} && echo planted"
    outcome = await attack(
        world, workspace, command, approve=approve, look=lambda: (workspace / ".git").exists()
    )
    # Not kept unasked: asked about (and undone while it waited), or never planted at all.
    assert outcome.while_waiting in ([], [False])
    if not outcome.asked:
        assert not (workspace / ".git").exists()
        return
    assert outcome.asked[0]["held"] == [".git"]
    assert "core.fsmonitor" in outcome.asked[0]["summary"]
    assert "fsmonitor" in (outcome.asked[0]["diff"] or "")
    assert "waiting for the user's answer" in outcome.results[0].lower()
    if approve:
        assert git(workspace, "config", "core.fsmonitor").stdout.strip() == _fsmonitor(marker)
        git(workspace, "status")
        assert marker.exists()  # the attack was real: kept, the user's git status runs it
        assert "the user kept" in outcome.results[0]
    else:
        assert not (workspace / ".git").exists()
        git(workspace, "status", check=False)
        assert not marker.exists()
        assert "undone (the user denied it)" in outcome.results[0]


@pytest.fixture
def world(user_home: UserHome) -> UserHome:  # noqa: F811
    """The user's home for these attacks (``user_home``, outside /tmp)."""
    return user_home
