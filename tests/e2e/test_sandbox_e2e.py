"""``bash`` in the sandbox, through a real pod: what it blocks, what it lets through, and
what happens where no sandbox can be made."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from orchestrator.sandbox import bwrap as bwrap_module
from orchestrator.sandbox.bwrap import SandboxUnavailable, find_bwrap
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod


def _needs_bwrap() -> None:
    try:
        find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")


def _bash(*commands: str) -> list[ScriptedReply]:
    calls = [ScriptedToolCall(name="bash", input={"command": c}) for c in commands]
    return [ScriptedReply(text="Running.", tool_calls=calls), ScriptedReply(text="Done.")]


async def test_sandboxed_commands_run_unasked_and_stay_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs_bwrap()
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET KEY\n")
    monkeypatch.setenv("HOME", str(home))
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    replies = _bash(
        "touch /etc/pod-x",
        f"echo x > {outside}/f",
        "cat ~/.ssh/id_rsa",
        "echo made > inside.txt",
    )
    async with running_pod(
        workspace,
        tmp_path,
        replies=replies,
        permissions={"mode": "accept-edits"},
        sandbox={"mode": "on"},
    ) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=30)
        assert events[-1].data["result"] == "finished"
        assert not [e for e in events if e.event == "approval_request"]  # none asked
        results = {e.data["summary"]: e.data["content"] or "" for e in events
                   if e.event == "tool_result"}  # fmt: skip
        etc = next(c for s, c in results.items() if "/etc/pod-x" in s)
        assert "blocked by the sandbox: a write outside the workspace" in etc
        assert not (outside / "f").exists()
        secret = next(c for s, c in results.items() if "id_rsa" in s)
        assert "SECRET" not in secret
        assert (workspace / "inside.txt").read_text() == "made\n"
        status = await client.status()
        assert status.status == "idle"
        await client.close()


async def test_pause_ends_a_sandboxed_process_tree(tmp_path: Path) -> None:
    _needs_bwrap()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = "31.4159"
    replies = _bash(f"sleep {marker} & sleep {marker} & echo started; wait")
    async with running_pod(
        workspace, tmp_path, replies=replies, permissions={"mode": "accept-edits"},
        sandbox={"mode": "on"},
    ) as pod:  # fmt: skip
        client = await pod.client()
        await client.send("run", {"input": "go"})
        await client.wait_for("tool_output_delta", timeout=30)
        await client.send("pause")
        await client.wait_for("run_end", result="paused", timeout=30)
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and marker in _cmdline(pid)]
        assert left == []
        await client.close()


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without bubblewrap (nor user namespaces)."""
    monkeypatch.setattr(bwrap_module, "bwrap_candidates", lambda: [])
    find_bwrap.cache_clear()
    yield
    find_bwrap.cache_clear()


async def test_auto_without_bubblewrap_warns_once_and_runs(tmp_path: Path, no_bwrap: None) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace, tmp_path, replies=_bash("echo plain > out.txt"),
        permissions={"mode": "accept-edits"}, allow_bash=True, sandbox={"mode": "auto"},
    ) as pod:  # fmt: skip
        client = await pod.client()
        history = await client.history()
        warnings = [a for a in history.alerts if a.source == "sandbox"]
        assert len(warnings) == 1 and "without a sandbox" in warnings[0].message
        await client.send("run", {"input": "go"})
        await client.wait_for("run_end", result="finished", timeout=30)
        assert (workspace / "out.txt").read_text() == "plain\n"
        await client.close()


async def test_on_without_bubblewrap_refuses_to_run_commands(
    tmp_path: Path, no_bwrap: None
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace, tmp_path, replies=_bash("echo plain > out.txt"),
        permissions={"mode": "accept-edits"}, allow_bash=True, sandbox={"mode": "on"},
    ) as pod:  # fmt: skip
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=30)
        [result] = [e.data for e in events if e.event == "tool_result"]
        assert result["is_error"] and "[sandbox] mode is on" in result["summary"]
        assert not (workspace / "out.txt").exists()
        await asyncio.sleep(0)
        await client.close()
