"""Extended thinking over the real socket and the real anthropic SDK against the fake API
(issue 21): every request of every interrupt path is valid, and the thinking blocks the model
sent come back signed and in place. Each test counts the thinking blocks sent back, so a test
that quietly ran with thinking off fails."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall, fake_signature
from orchestrator.core.prompt_cache import without_breakpoints
from orchestrator.serving.client import PodClient
from orchestrator.serving.server import socket_is_live
from tests.e2e.harness import collect_until, fake_provider, running_pod

ADAPTIVE = {"type": "adaptive"}


def thinks(n: int, **kwargs: Any) -> Reply:
    """A reply that thinks first, as every reply of a thinking model does."""
    return Reply(thinking=f"step {n}: what next?", **kwargs)


def read(path: str = "README.md") -> ToolCall:
    return ToolCall("read_file", {"path": path})


def thinking_sent_back(fake: FakeAnthropic) -> int:
    """Thinking blocks carried back in assistant messages, over all requests."""
    return sum(
        1
        for r in fake.requests
        for m in r.body.get("messages", [])
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") in ("thinking", "redacted_thinking")
    )


def check(fake: FakeAnthropic, *, at_least: int) -> None:
    """Every request valid, thinking on in each, and thinking blocks sent back signed."""
    assert fake.requests and all(r.valid for r in fake.requests), [
        r.error for r in fake.requests if not r.valid
    ]
    assert all(r.body.get("thinking") == ADAPTIVE for r in fake.requests)
    assert thinking_sent_back(fake) >= at_least
    for r in fake.requests:
        for m in r.body["messages"]:
            for b in m["content"] if isinstance(m["content"], list) else []:
                if b.get("type") == "thinking":
                    assert b["signature"] == fake_signature(b["thinking"])
                    assert "cache_control" not in b


async def test_a_tool_loop_with_thinking_sends_each_thinking_block_back_in_place(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        thinks(1, text="Reading.", tool_calls=[read()]),
        thinks(2, tool_calls=[read("src/app.py")]),
        thinks(3, text="Both read."),
    )
    provider = fake_provider(fake)
    async with running_pod(workspace, short_dir, provider=provider, thinking="adaptive") as pod:
        c = await pod.client()
        await c.send("run", {"input": "read both"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert [e.data["text"] for e in events if e.event == "thinking_delta"]
        status = (await c.request("get_status")).data
        assert status["thinking"] == "adaptive"
        await c.close()
    await provider.aclose()
    check(fake, at_least=1 + 2)
    last = fake.requests[-1].body["messages"]
    # The loop's assistant messages each start with their thinking, as they came.
    assistants = [m for m in last if m["role"] == "assistant"]
    assert [a["content"][0]["thinking"] for a in assistants] == [
        "step 1: what next?",
        "step 2: what next?",
    ]


async def test_pause_mid_tool_then_resume_keeps_the_thinking_in_place(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        thinks(1, tool_calls=[ToolCall("bash", {"command": "echo started; sleep 30"})]),
        thinks(2, text="Resumed and done."),
    )
    provider = fake_provider(fake)
    async with running_pod(
        workspace, short_dir, provider=provider, thinking="adaptive", allow_bash=True
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "wait a bit"})
        await c.wait_for("tool_output_delta")  # the command runs
        await c.send("pause")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "paused"}
        await c.send("resume")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    check(fake, at_least=1)
    messages = fake.requests[-1].body["messages"]
    assert messages[-2]["content"][0]["type"] == "thinking"
    assert messages[-1]["content"][0]["type"] == "tool_result"


async def test_paused_then_a_new_message_closes_the_calls_and_keeps_the_thinking(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        thinks(1, tool_calls=[ToolCall("bash", {"command": "echo started; sleep 30"}), read()]),
        thinks(2, text="On the new request."),
    )
    provider = fake_provider(fake)
    async with running_pod(
        workspace, short_dir, provider=provider, thinking="adaptive", allow_bash=True
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "slow then read"})
        await c.wait_for("tool_output_delta")  # the command runs
        await c.send("pause")
        await collect_until(c, "run_end")
        await c.send("run", {"input": "never mind, do this instead"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    check(fake, at_least=1)
    last = fake.requests[-1].body["messages"]
    assert last[-2]["role"] == "assistant" and last[-2]["content"][0]["type"] == "thinking"
    kinds = [b["type"] for b in last[-1]["content"]]
    assert kinds[:2] == ["tool_result", "tool_result"] and "text" in kinds


async def test_cancel_then_run_and_an_approval_denied_stay_valid(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        thinks(1, tool_calls=[ToolCall("bash", {"command": "echo started; sleep 30"})]),
        thinks(2, tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]),
        thinks(3, text="Understood, no file."),
    )
    provider = fake_provider(fake)
    async with running_pod(
        workspace,
        short_dir,
        provider=provider,
        thinking="adaptive",
        permissions={"mode": "default", "allow": ["bash"]},
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "first"})
        await c.wait_for("tool_output_delta")  # the command runs
        await c.send("cancel")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "cancelled"}
        await c.send("run", {"input": "write a file"})
        request = await c.wait_for("approval_request")
        await c.send("deny", {"id": request.data["id"], "message": "no files"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    check(fake, at_least=2)
    assert not (workspace / "x.txt").exists()


async def test_a_compaction_while_paused_keeps_the_paused_loop_resumable(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        thinks(1, text="First answer " + "long " * 200),
        thinks(2, text="Second answer " + "long " * 200),
        thinks(3, tool_calls=[ToolCall("bash", {"command": "echo started; sleep 30"})]),
        Reply(text="Summary of the work so far."),
        thinks(4, text="Resumed after the summary."),
    )
    provider = fake_provider(fake)
    async with running_pod(
        workspace, short_dir, provider=provider, thinking="adaptive", allow_bash=True
    ) as pod:
        c = await pod.client()
        for question in ("one", "two"):
            await c.send("run", {"input": question})
            await collect_until(c, "run_end")
        await c.send("run", {"input": "three"})
        await c.wait_for("tool_output_delta")  # the command runs
        await c.send("pause")
        await collect_until(c, "run_end")
        await c.send("compact")
        await c.wait_for("compaction")
        await c.wait_for("status", state="paused")
        await c.send("resume")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    check(fake, at_least=3)
    last = fake.requests[-1].body["messages"]
    assert json.dumps(last[0]).count("Conversation summary") == 1
    assert last[-2]["content"][0]["type"] == "thinking"  # the paused loop, kept verbatim
    assert without_breakpoints(last)[-1]["content"][0]["type"] == "tool_result"


def _serve(
    fake: FakeAnthropic, workspace: Path, socket: Path, session: Path, *extra: str
) -> subprocess.Popen[bytes]:
    """``pod serve`` in its own process on the anthropic provider, pointed at the fake."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
    args = [
        sys.executable, "-m", "cli", "serve", "--workspace", str(workspace),
        "--socket", str(socket), "--session", str(session), "--provider", "anthropic",
        "--model", "fake-model", "--thinking", "adaptive", "--allow-bash",
        "--permission-mode", "accept-edits", *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not socket_is_live(socket):
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "pod did not start"
        time.sleep(0.05)
    return proc


async def test_kill_9_mid_tool_then_resume_sends_the_thinking_back(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        thinks(1, tool_calls=[ToolCall("bash", {"command": "echo started; sleep 30"})]),
        thinks(2, text="After the crash."),
    )
    socket, session = short_dir / "p.sock", short_dir / "s.jsonl"
    proc = _serve(fake, workspace, socket, session)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "long command"})
        await c.wait_for("tool_output_delta")  # started: its write-ahead record is on disk
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    proc = _serve(fake, workspace, socket, session, "--continue")
    try:
        c = await PodClient.connect(socket)
        assert (await c.request("get_status")).data["status"] == "paused"
        await c.send("resume")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    check(fake, at_least=1)
    last = fake.requests[-1].body["messages"]
    assert last[-2]["content"][0] == {
        "type": "thinking",
        "thinking": "step 1: what next?",
        "signature": fake_signature("step 1: what next?"),
    }
    assert last[-1]["content"][0]["content"].startswith("[Interrupted by a pod crash]")


@pytest.mark.parametrize(
    ("model", "sent", "status"),
    [
        ("claude-opus-5", {"type": "adaptive"}, "adaptive"),
        ("claude-sonnet-4-6", {"type": "adaptive"}, "adaptive"),
        ("claude-sonnet-4-5", {"type": "enabled", "budget_tokens": 8191}, "budget 8191"),
        ("claude-3-5-haiku", None, "off (claude-3-5-haiku does not think)"),
    ],
)
async def test_auto_decides_from_the_models_api(
    workspace: Path,
    short_dir: Path,
    fake: FakeAnthropic,
    model: str,
    sent: dict[str, Any] | None,
    status: str,
) -> None:
    fake.thinking_profile = True  # every reply with thinking on thinks
    fake.push(Reply(tool_calls=[read()]), Reply(text="done"))
    provider = fake_provider(fake, model)
    async with running_pod(workspace, short_dir, provider=provider, model=model) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read it"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        assert (await c.request("get_status")).data["thinking"] == status
        await c.close()
    await provider.aclose()
    assert all(r.valid for r in fake.requests)
    assert [r.body.get("thinking") for r in fake.requests] == [sent, sent]
    assert thinking_sent_back(fake) == (2 if sent else 0)  # thinking + redacted, in place


async def test_a_setting_the_model_refuses_ends_the_turn_before_any_request(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    provider = fake_provider(fake, "claude-opus-5")
    async with running_pod(
        workspace, short_dir, provider=provider, model="claude-opus-5", thinking="off"
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "errored"}
        [error] = [e.data for e in events if e.event == "error"]
        assert error["code"] == "invalid_request"
        assert "claude-opus-5 accepts adaptive, and cannot turn thinking off" in error["message"]
        status = (await c.request("get_status")).data
        assert status["thinking"].startswith('refused: thinking = "off" is refused')
        await c.close()
    await provider.aclose()
    assert fake.requests == []  # never a 400 in the middle of a turn: nothing was sent


async def test_pause_mid_thinking_commits_no_half_signed_block(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        Reply(thinking="a long line of reasoning " * 40, text="cut", chunk_size=4, delay_s=0.01),
        thinks(2, text="Resumed cleanly."),
    )
    provider = fake_provider(fake)
    async with running_pod(workspace, short_dir, provider=provider, thinking="adaptive") as pod:
        c = await pod.client()
        await c.send("run", {"input": "think hard"})
        await c.wait_for("thinking_delta")
        await c.send("pause")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "paused"}
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message"]  # nothing half-signed kept
        await c.send("resume")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    assert all(r.valid for r in fake.requests)
    assert fake.requests[-1].body["messages"][-1]["role"] == "user"  # the cut reply was dropped


async def test_an_approved_call_continues_the_loop_with_its_thinking(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        thinks(1, tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "x"})]),
        thinks(2, text="Written."),
    )
    provider = fake_provider(fake)
    async with running_pod(
        workspace,
        short_dir,
        provider=provider,
        thinking="adaptive",
        permissions={"mode": "default"},
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "write it"})
        request = await c.wait_for("approval_request")
        await c.send("approve", {"id": request.data["id"]})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    check(fake, at_least=1)
    assert (workspace / "x.txt").read_text() == "x"


async def test_a_session_that_turns_thinking_off_between_turns_stays_valid(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        thinks(1, tool_calls=[read()]), thinks(2, text="Read."), Reply(text="No thinking now.")
    )
    session = short_dir / "toggle.jsonl"
    provider = fake_provider(fake)
    async with running_pod(
        workspace, short_dir, provider=provider, thinking="adaptive", session=session
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    async with running_pod(
        workspace, short_dir, provider=provider, thinking="off", session=session, continue_=True
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "and now without thinking"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    assert all(r.valid for r in fake.requests), [r.error for r in fake.requests]
    assert [r.body.get("thinking") for r in fake.requests] == [ADAPTIVE, ADAPTIVE, None]
    assert thinking_sent_back(fake) >= 2  # the earlier turn's thinking is history, kept as it was


async def test_an_mcp_call_in_a_thinking_loop_sends_the_thinking_back(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    from tests.mcp.hostile_server import config as mcp_server

    fake.push(
        thinks(1, tool_calls=[ToolCall("mcp__h__echo", {"text": "through MCP"})]),
        thinks(2, text="It echoed."),
    )
    provider = fake_provider(fake)
    async with running_pod(
        workspace,
        short_dir,
        provider=provider,
        thinking="adaptive",
        mcp={"servers": {"h": mcp_server()}},
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "echo it"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    check(fake, at_least=1)
    last = fake.requests[-1].body["messages"]
    assert last[-2]["content"][0]["type"] == "thinking"
    assert "through MCP" in json.dumps(last[-1]["content"])


async def test_a_compaction_under_a_refused_setting_fails_cleanly_and_the_pod_goes_on(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    provider = fake_provider(fake, "claude-opus-5")
    async with running_pod(
        workspace, short_dir, provider=provider, model="claude-opus-5", thinking="off"
    ) as pod:
        c = await pod.client()
        await c.send("compact")
        error = await c.wait_for("error")
        assert error.data["code"] == "invalid_request"
        assert "cannot turn thinking off" in error.data["message"]
        await c.wait_for("status", state="idle")  # out of compacting, serving
        assert (await c.request("get_status")).data["state"] == "idle"
        await c.close()
    await provider.aclose()
    assert fake.requests == []
