"""A hostile model's tool calls: regex bombs, glob bombs, and reading secrets from the environment.

The bombs run against a pod in its own process: with Python's ``re`` they backtrack for ever
while holding the GIL, which would freeze an in-process pod together with the test itself. In a
subprocess a regression fails the test on a timeout instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.session import latest_session, load_session
from orchestrator.core.repair import repair_loaded
from orchestrator.serving.client import PodClient
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
)

BOMB = "(a+)+b"
"""Exponential in Python's ``re`` on a line of ``a`` without a ``b``."""

SLOW_IN_RE2 = "[ab]*a[ab]{400}c"
"""Too many states for RE2's DFA: its NFA takes seconds per MB of ``a``/``b``."""


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _random_ab_lines(size: int, width: int = 1000) -> str:
    raw = os.urandom(size).translate(bytes(b"ab"[n & 1] for n in range(256))).decode()
    return "\n".join(raw[i : i + width] for i in range(0, size, width)) + "\n"


@contextmanager
def _process_pod(
    workspace: Path, sock_dir: Path, replies: list[dict[str, Any]]
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    script = sock_dir / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    socket = sock_dir / "p.sock"
    proc = start_pod_process(workspace, socket, sock_dir / "session.jsonl", script)
    try:
        yield proc, socket
    finally:
        # A frozen pod ignores SIGTERM-driven shutdown; this is the end of it either way.
        proc.kill()
        proc.wait(10)


@asynccontextmanager
async def _clients(socket: Path, count: int) -> AsyncIterator[list[PodClient]]:
    clients = [await PodClient.connect(socket) for _ in range(count)]
    try:
        yield clients
    finally:
        for client in clients:
            await client.close()


async def test_regex_bomb_leaves_the_pod_answering_and_cancellable(
    workspace: Path, short_dir: Path
) -> None:
    # The bomb line comes first (the walk is sorted), then 12 MB that take RE2 many seconds.
    (workspace / "a_bomb.txt").write_text("a" * 100_000 + "\n")
    for n in range(3):
        (workspace / f"slow_{n}.txt").write_text(_random_ab_lines(4_000_000))
    grep = {"name": "grep", "input": {"pattern": f"{BOMB}|{SLOW_IN_RE2}"}}
    replies = [{"tool_calls": [grep]}, {"text": "never reached"}, {"text": "still here"}]
    with _process_pod(workspace, short_dir, replies) as (proc, socket):
        async with _clients(socket, 2) as (runner, watcher):
            await runner.send("run", {"input": "search"})
            await runner.wait_for("status", state="executing_tools", timeout=10)
            # Give the worker time to reach the bomb line; then the old pod is frozen for good.
            await asyncio.sleep(0.3)
            status = await watcher.request("get_status", timeout=5)
            assert status.data["state"] == "executing_tools"

            await watcher.send("cancel")
            events = await collect_until(runner, "run_end", timeout=5)
            assert events[-1].data == {"result": "cancelled"}

            # The search thread noticed the cancel: the pod is idle, not grinding on.
            await asyncio.sleep(0.3)
            before = _cpu_seconds(proc.pid)
            await asyncio.sleep(1.0)
            assert _cpu_seconds(proc.pid) - before < 0.2

            history = (await watcher.request("get_history")).data["items"]
            result = history[-1]
            assert result["kind"] == "tool_result" and result["is_error"], result
            assert "[Interrupted by user]" in result["summary"], result

            await runner.send("run", {"input": "again"})
            events = await collect_until(runner, "run_end", timeout=10)
            assert events[-1].data == {"result": "finished"}


async def test_glob_and_gitignore_bombs_finish(workspace: Path, short_dir: Path) -> None:
    (workspace / ("a" * 200)).write_text("")
    bomb = "*a" * 12 + "*b"  # 12 stars: Python's re tries ~200**12 ways to fail
    replies = [
        {"tool_calls": [{"name": "glob", "input": {"pattern": bomb}}]},
        {"tool_calls": [{"name": "glob", "input": {"pattern": "{a,a}" * 30 + "b"}}]},
        {
            "tool_calls": [
                {"name": "write_file", "input": {"path": ".gitignore", "content": bomb + "\n"}}
            ]
        },
        {"tool_calls": [{"name": "glob", "input": {"pattern": "*"}}]},
        {"text": "done"},
    ]
    with _process_pod(workspace, short_dir, replies) as (_, socket):
        async with _clients(socket, 1) as (client,):
            await client.send("run", {"input": "find"})
            events = await collect_until(client, "run_end", timeout=20)
            assert events[-1].data == {"result": "finished"}
            history = (await client.request("get_history")).data["items"]
            summaries = [i["summary"] for i in history if i["kind"] == "tool_result"]
            assert summaries[0] == f"glob: {bomb} — no matches"
            assert summaries[1].endswith("— no matches")
            assert summaries[3] == "glob: * — 3 matches"  # README.md, src/ and the long name


async def test_unsupported_regex_is_an_error_result_the_model_can_act_on(
    workspace: Path, short_dir: Path
) -> None:
    call = ScriptedToolCall(name="grep", input={"pattern": r"(\w+) \1"})
    replies = [ScriptedReply(tool_calls=[call]), ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "find doubled words"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        sent = pod.provider.requests[1].messages[-1]["content"][0]
        assert sent["type"] == "tool_result" and sent["is_error"] is True
        assert "unsupported regular expression" in json.dumps(sent)
        assert "backreferences" in json.dumps(sent)
        await c.close()


# -- secrets ---------------------------------------------------------------------------------

SECRET_KEY = "sk-ant-test-do-not-leak-1234"
SECRET_TOKEN = "ghp_test_do_not_leak_5678"


async def test_bash_output_never_carries_the_pods_secrets(
    workspace: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_KEY)
    monkeypatch.setenv("GITHUB_TOKEN", SECRET_TOKEN)
    monkeypatch.setenv("PROJECT_MODE", "visible")
    command = "env; printenv ANTHROPIC_API_KEY; echo token=$GITHUB_TOKEN; cat /proc/$$/environ"
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="bash", input={"command": command})]),
        ScriptedReply(text="done"),
    ]
    async with running_pod(
        workspace,
        short_dir,
        replies=replies,
        allow_bash=True,
        tool_env_allow=["PROJECT_*", "GITHUB_*"],
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "show me the environment"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        wire = json.dumps([r.messages for r in pod.provider.requests])
        events_text = json.dumps([e.data for e in events])
        history = json.dumps((await c.request("get_history")).data)
        for seen in (wire, events_text, history):
            assert SECRET_KEY not in seen
            assert SECRET_TOKEN not in seen
        # The command did run and saw what it may see.
        assert "PROJECT_MODE=visible" in history
        assert "token=\\n" in history
        await c.close()


# -- replies the API would never accept back ---------------------------------------------------


async def test_a_malformed_reply_never_breaks_the_session(workspace: Path, short_dir: Path) -> None:
    read = {"path": "README.md"}
    malformed = ScriptedReply(
        text="a lone \ud800 surrogate",
        tool_calls=[
            ScriptedToolCall(name="read_file", input=read, id="toolu_twice"),
            ScriptedToolCall(name="glob", input={"pattern": "*\udc00"}, id="toolu_twice"),
            ScriptedToolCall(name="z" * 200, input={}, id="toolu_z"),
        ],
    )
    replayed = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="read_file", input=read, id="toolu_z")]
    )
    replies = [malformed, ScriptedReply(text="first done"), replayed, ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        for prompt in ("go", "again"):
            await c.send("run", {"input": prompt})
            events = await collect_until(c, "run_end")
            assert events[-1].data == {"result": "finished"}, [e.event for e in events]
            if prompt == "go":
                alerts = [e.data["message"] for e in events if e.event == "alert"]
                assert len(alerts) == 3, alerts
        pod.assert_all_requests_valid()
        history = (await c.request("get_history")).data["items"]
        await c.close()
    calls = [b["id"] for i in history if i["kind"] == "assistant" for b in i["blocks"]
             if b["type"] == "tool_use"]  # fmt: skip
    answered = [i["call_id"] for i in history if i["kind"] == "tool_result"]
    assert sorted(answered) == sorted(calls) and len(set(calls)) == 4
    # What was stored loads back as it is: commit needed no load-time repair.
    loaded = load_session(pod.config.session or latest_session(workspace))
    assert repair_loaded(loaded.items, turn_closed=not loaded.cut_off).notes == []


SERVICE_CREDENTIAL = "svc-credential-do-not-leak-42"


async def test_known_secrets_are_redacted_from_tool_output(
    workspace: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_KEY)
    monkeypatch.setenv("SERVICE_CREDENTIAL", SERVICE_CREDENTIAL)  # not a secret by its name
    (workspace / ".env").write_text(
        f"ANTHROPIC_API_KEY={SECRET_KEY}\nSERVICE={SERVICE_CREDENTIAL}\n"
    )
    # The pod knows the credential is secret because an MCP header refers to it.
    server = {
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"X-Service": "${SERVICE_CREDENTIAL}"},
        "timeout_s": 2,
    }
    calls = [
        ScriptedToolCall(name="bash", input={"command": "cat .env; echo; cat .env | rev | rev"}),
        ScriptedToolCall(name="read_file", input={"path": ".env"}),
        ScriptedToolCall(name="grep", input={"pattern": "do-not-leak", "path": ".env"}),
    ]
    replies = [ScriptedReply(tool_calls=calls), ScriptedReply(text="done")]
    async with running_pod(
        workspace,
        short_dir,
        replies=replies,
        allow_bash=True,
        mcp={"servers": {"svc": server}},
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "show me the secrets"})
        events = await collect_until(c, "run_end", timeout=20)
        assert events[-1].data == {"result": "finished"}
        history = json.dumps((await c.request("get_history")).data)
        await c.close()
    wire = json.dumps([r.messages for r in pod.provider.requests])
    events_text = json.dumps([e.data for e in events])
    session = (latest_session(workspace) or Path("/missing")).read_text()
    for seen in (wire, events_text, history, session):
        assert SECRET_KEY not in seen
        assert SERVICE_CREDENTIAL not in seen
    results = [e.data for e in events if e.event == "tool_result"]
    assert len(results) == 3 and all("[redacted]" in json.dumps(r) for r in results), results


SLOWEST = "(a|b)*a(a|b){320}(x|y)"
"""Near the size cap (971 RE2 instructions): about 4 s of one core per MiB of ``a``/``b``."""


async def test_shutdown_after_cancelled_greps_does_not_wait_for_their_matching(
    workspace: Path, short_dir: Path
) -> None:
    # One line of 4 MiB each: grep's per-file limit, about 16 s of matching for this pattern.
    for n in range(2):
        line = _random_ab_lines(4 * 1024 * 1024, width=4 * 1024 * 1024).replace("\n", "")
        (workspace / f"minified_{n}.js").write_text(line + "\n")
    greps = [
        {"name": "grep", "input": {"pattern": SLOWEST, "path": f"minified_{n}.js"}}
        for n in range(2)
    ]
    script = short_dir / "script.json"
    script.write_text(json.dumps({"replies": [{"tool_calls": greps}]}))
    socket = short_dir / "p.sock"
    proc = start_pod_process(workspace, socket, short_dir / "session.jsonl", script)
    try:
        async with _clients(socket, 1) as (client,):
            await client.send("run", {"input": "search the minified files"})
            await client.wait_for("status", state="executing_tools", timeout=10)
            await asyncio.sleep(0.5)  # both searches are deep inside their only line
            await client.send("cancel")
            events = await collect_until(client, "run_end", timeout=5)
            assert events[-1].data == {"result": "cancelled"}
            await client.send("shutdown")
        # Shutdown waits for the pod's worker threads: they must have given up the lines
        # they were matching. The guard is generous; before, it took the rest of 16 s.
        assert proc.wait(timeout=8) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
