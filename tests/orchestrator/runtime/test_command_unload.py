"""A custom command's turn unloaded while its ``!`` lines run (a host's eviction of a paused
pod) and loaded again: the command's grant, its model and its snapshot come back with the held
prompt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.adapters.providers.scripted import ScriptedReply
from orchestrator.core.history import UserMessage
from orchestrator.runtime.unload import unload_session
from tests.orchestrator.runtime.test_unload import Harness, send, settled

LINES = """---
allowed-tools: Bash(./step.sh:*)
---
one: !`./step.sh one slow`
two: !`./step.sh two`
"""

STEP = """#!/bin/sh
echo "$1" >> counter.txt
echo "did-$1"
if [ "$2" = slow ]; then sleep 30; fi
"""


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


async def test_a_held_commands_grant_and_snapshot_come_back_after_an_unload(
    workspace: Path,
) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "commands"
    folder.mkdir(parents=True)
    (folder / "steps.md").write_text(LINES)
    (workspace / "step.sh").write_text(STEP)
    (workspace / "step.sh").chmod(0o755)
    # bash asks in default mode unless something allows it: here, the command's grant.
    pods = Harness(workspace, permissions={"mode": "default"}, sandbox={"mode": "off"})
    pod, events = pods.build([])
    send(pod, "run", input="/steps")
    await events.wait_for("tool_output_delta")  # line one runs
    send(pod, "pause")
    await settled(pod)
    assert pod.controller.state_id == "paused"
    held = unload_session(pod.controller)
    assert held.prompt is not None and held.prompt.command is not None
    assert held.prompt.command.grants == ["Bash(./step.sh:*)"]
    assert held.prompt.snapshot is not None  # taken before line one ran

    again, events = pods.build([ScriptedReply(text="ok")])
    send(again, "resume")
    # Line two runs unasked, granted again (asked, nobody answers, and the turn never ends).
    assert await events.wait_for("run_end", timeout=30) == {"result": "finished"}
    assert events.of("approval_request") == []
    [message] = [i for i in again.controller.history.items if isinstance(i, UserMessage)]
    assert "two: did-two" in message.text
    assert (workspace / "counter.txt").read_text() == "one\ntwo\n"
    checkpoints = again.controller.checkpoints
    assert checkpoints is not None
    [kept] = [r for r in checkpoints.records if r.reason == "turn"]
    assert (kept.id, kept.seq) == (held.prompt.snapshot.id, message.seq)
    again.controller.transcript.session.close()
