"""MCP tool servers nobody here wrote (mcp-server-time, mcp-server-git from PyPI), called by
the model through the fake Messages API and the real anthropic SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from tests.e2e.harness import collect_until, fake_provider, running_pod
from tests.mcp.hostile_server import config as hostile_server_config


def _server(module: str, *args: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", module, *args], **extra}


async def _one_turn(
    workspace: Path, sock_dir: Path, fake: FakeAnthropic, servers: dict[str, Any], text: str
) -> None:
    """One finished turn of a pod on the fake API with these MCP servers."""
    provider = fake_provider(fake)
    async with running_pod(workspace, sock_dir, provider=provider, mcp={"servers": servers}) as pod:
        c = await pod.client()
        await c.send("run", {"input": text})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()


def _results(request: Any) -> list[dict[str, Any]]:
    last = request.body["messages"][-1]
    return [b for b in last["content"] if b["type"] == "tool_result"]


async def test_the_time_server_answers_the_model(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        Reply(
            text="Checking the clock.",
            tool_calls=[ToolCall("mcp__time__get_current_time", {"timezone": "Europe/Berlin"})],
        ),
        Reply(text="It is late."),
    )
    servers = {"time": _server("mcp_server_time", permission="allow")}
    await _one_turn(workspace, short_dir, fake, servers, "what time is it in Berlin?")
    first, second = fake.requests
    assert first.valid and second.valid
    offered = {t["name"] for t in first.body["tools"]}
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= offered
    [result] = _results(second)
    assert not result.get("is_error")
    text = json.dumps(result["content"])
    assert "mcp time/get_current_time" in text and "Europe/Berlin" in text


async def test_the_git_server_reads_a_repository_made_here(
    workspace: Path, short_dir: Path, fake: FakeAnthropic, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("hello\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "The first commit"], check=True)
    fake.push(
        Reply(tool_calls=[ToolCall("mcp__git__git_log", {"repo_path": str(repo)})]),
        Reply(text="One commit."),
    )
    servers = {"git": _server("mcp_server_git", "--repository", str(repo), permission="allow")}
    await _one_turn(workspace, short_dir, fake, servers, "what happened in the repo?")
    [result] = _results(fake.requests[1])
    assert "The first commit" in json.dumps(result["content"])


async def test_a_server_that_cannot_start_is_an_alert_and_the_pod_runs_on(
    workspace: Path, short_dir: Path
) -> None:
    broken = {
        "command": sys.executable,
        "args": ["-c", "import sys; sys.stderr.write('no license key\\n'); sys.exit(3)"],
    }
    async with running_pod(workspace, short_dir, mcp={"servers": {"broken": broken}}) as pod:
        c = await pod.client()
        history = await c.request("get_history")
        alerts = [a["message"] for a in history.data.get("alerts") or []]
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()
    assert any(
        a.startswith("MCP server broken failed:") and "no license key" in a for a in alerts
    ), alerts


async def test_an_image_from_a_tool_reaches_the_model_as_an_image(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(Reply(tool_calls=[ToolCall("mcp__h__picture", {})]), Reply(text="A grey box."))
    servers = {"h": hostile_server_config()}
    await _one_turn(workspace, short_dir, fake, servers, "show me")
    second = fake.requests[1]
    assert second.valid, second.error
    [result] = _results(second)
    text, image = result["content"]
    assert text["text"].startswith("mcp h/picture: 1 lines, 1 image")
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert second.usage is not None and second.usage["input_tokens"] < 5000
