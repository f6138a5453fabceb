"""``bash`` in the sandbox, through a real pod: what it blocks, what it lets through, and
what happens where no sandbox can be made."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.sandbox import bwrap as bwrap_module
from orchestrator.adapters.sandbox.bwrap import SandboxUnavailable, find_bwrap
from orchestrator.serving.client import PodEvent
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.mcp.hostile_server import config as hostile_server_config
from tests.orchestrator.adapters.sandbox.web import hello_server


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


def _results(events: list[PodEvent]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.event == "tool_result"]


async def test_an_allow_listed_host_is_reached_and_the_model_hears_of_a_refusal(
    tmp_path: Path,
) -> None:
    _needs_bwrap()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # The servers are on the host's loopback: inside the sandbox they are reached through the
    # proxy like any host (NO_PROXY names the sandbox's own loopback).
    fetch = f"unset NO_PROXY no_proxy; {shlex.quote(sys.executable)} -c " + shlex.quote(
        "import sys, urllib.request as u\n"
        "try: print(u.urlopen(sys.argv[1], timeout=10).read().decode(), end='')\n"
        "except Exception as e: print('failed:', e); sys.exit(1)"
    )
    with hello_server() as allowed, hello_server() as other:
        calls = [
            ScriptedToolCall(name="bash", input={"command": command}, id=name)
            for name, command in (
                ("listed", f"{fetch} http://127.0.0.1:{allowed}/listed"),
                ("unlisted", f"{fetch} http://127.0.0.1:{other}/unlisted"),
            )
        ]
        replies = [ScriptedReply(text="Fetching.", tool_calls=calls), ScriptedReply(text="Done.")]
        network = [f"127.0.0.1:{allowed}"]
        async with running_pod(
            workspace, tmp_path, replies=replies, permissions={"mode": "accept-edits"},
            sandbox={"mode": "on", "network": network},
        ) as pod:  # fmt: skip
            client = await pod.client()
            await client.send("run", {"input": "go"})
            events = await collect_until(client, "run_end", timeout=30)
            await client.close()
    assert events[-1].data["result"] == "finished"
    assert not [e for e in events if e.event == "approval_request"]  # sandboxed: none asked
    results = {r["id"]: r for r in _results(events)}
    listed, unlisted = results["listed"], results["unlisted"]
    assert listed["content"] == f"hello /listed (Host: 127.0.0.1:{allowed})\n"
    refused = f"127.0.0.1:{other}"
    assert unlisted["is_error"] is False and unlisted["content"] == (
        f"failed: HTTP Error 403: Forbidden: {refused} is not in [sandbox] network\n"
        f"[blocked by the sandbox: {refused} not in [sandbox] network (the pod's proxy "
        "refused). Commands run sandboxed: the workspace is writable, the rest read-only, "
        "secrets hidden, network only to the hosts of [sandbox] network. If the command must "
        "leave the sandbox, call bash again with sandbox: false (the user is asked).]"
    )
    assert not list(Path(os.environ["XDG_RUNTIME_DIR"]).glob("pod/proxy-*"))  # closed with the pod


async def test_a_sandboxed_mcp_server_writes_only_in_the_workspace(tmp_path: Path) -> None:
    _needs_bwrap()
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    calls = [
        ScriptedToolCall(name="mcp__h__echo", input={"text": "still answers"}, id="echo"),
        ScriptedToolCall(
            name="mcp__h__write", input={"path": str(workspace / "in"), "text": "x"}, id="in"
        ),
        ScriptedToolCall(
            name="mcp__h__write", input={"path": str(outside / "out"), "text": "x"}, id="out"
        ),
    ]
    replies = [ScriptedReply(tool_calls=calls), ScriptedReply(text="Done.")]
    server = {**hostile_server_config(), "sandbox": True}
    async with running_pod(
        workspace, tmp_path, replies=replies, mcp={"servers": {"h": server}},
        # bash's sandbox is off: a server's sandbox = true is its own. The folder outside is
        # shown (read-only), so the write fails for being read-only, not for being hidden.
        sandbox={"mode": "off", "readable": [str(outside)]},
    ) as pod:  # fmt: skip
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=60)
        await client.close()
    results = {r["id"]: r["content"] for r in _results(events)}
    assert results == {
        "echo": "still answers",
        "in": f"wrote {workspace / 'in'}",
        "out": f"cannot write {outside / 'out'}: Read-only file system",
    }
    assert (workspace / "in").read_text() == "x" and not (outside / "out").exists()


async def test_a_server_to_be_sandboxed_never_runs_unsandboxed(
    tmp_path: Path, no_bwrap: None
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    pidfile = tmp_path / "pids"
    server = {**hostile_server_config(HOSTILE_PIDFILE=str(pidfile)), "sandbox": True}
    async with running_pod(workspace, tmp_path, mcp={"servers": {"h": server}}) as pod:
        client = await pod.client()
        history = await client.history()
        await client.close()
    [alert] = [a.message for a in history.alerts if a.source == "mcp"]
    assert alert.startswith(
        "MCP server h failed: it is to run sandboxed (sandbox = true), and no bubblewrap"
    )
    assert not pidfile.exists()  # it never started
