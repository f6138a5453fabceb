"""A hostile MCP server of our own: every way it misbehaves is a clear result or alert, and
the pod, its session and its other tools carry on."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.serving.client import PodClient
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.mcp.hostile_server import config

REPO = Path(__file__).resolve().parents[2]


def hostile(pidfile: Path, *args: str) -> dict[str, Any]:
    """The hostile server, recording its pid in ``pidfile``."""
    return config(*args, HOSTILE_PIDFILE=str(pidfile))


def call(tool: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=f"mcp__h__{tool}", input=arguments)])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


async def arrived(pidfile: Path, tool: str) -> None:
    """Wait until a call of ``tool`` reached the hostile server."""
    calls = pidfile.with_name(pidfile.name + ".calls")
    for _ in range(3000):
        if calls.exists() and tool in calls.read_text().split():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no call of {tool} reached the server")


async def freeze_then_pause(c: PodClient, pidfile: Path) -> None:
    """Have the server freeze in a call, then pause the turn."""
    await c.send("run", {"input": "freeze"})
    await arrived(pidfile, "freeze")
    await c.send("pause")
    await c.wait_for("run_end")


def pids(pidfile: Path) -> list[int]:
    return [int(line) for line in pidfile.read_text().split()] if pidfile.exists() else []


async def test_failures_huge_output_and_a_dying_server_are_results(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    replies = [
        call("fail"),
        call("huge", megabytes=2),
        call("echo", text="still here"),
        call("die"),
        ScriptedReply(text="done"),
    ]
    servers = {"h": hostile(pidfile, "--garbage")}
    async with running_pod(workspace, short_dir, replies=replies, mcp={"servers": servers}) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "finished"}
        results = [e.data for e in events if e.event == "tool_result"]
        alerts = [e.data["message"] for e in events if e.event == "alert"]
        await c.close()
    failed, huge, echo, died = results
    assert failed["is_error"] and "the database is locked" in failed["summary"]
    # The output chokepoint caps it like any tool's (2 MiB came back).
    assert len(huge["content"].encode()) < 20_000 and "truncated" in huge["content"]
    assert not echo["is_error"] and echo["content"] == "still here"  # garbage line and all
    assert died["is_error"] and "MCP server h" in died["summary"]
    assert any(a.startswith("MCP server h failed: it stopped") for a in alerts), alerts
    assert not any(alive(pid) for pid in pids(pidfile))


async def test_pause_mid_call_commits_a_truthful_result_and_resume_does_not_resend(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    replies = [call("hang"), ScriptedReply(text="after the pause")]
    servers = {"h": hostile(pidfile)}
    async with running_pod(workspace, short_dir, replies=replies, mcp={"servers": servers}) as pod:
        c = await pod.client()
        await c.send("run", {"input": "wait for it"})
        await arrived(pidfile, "hang")
        started = time.monotonic()
        await c.send("pause")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "paused"}
        assert time.monotonic() - started < 5  # the hung server does not hold the pod
        [interrupted] = [e.data for e in events if e.event == "tool_result"]
        assert interrupted["is_error"] and "[Interrupted by user]" in interrupted["summary"]
        await c.send("resume")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert [e for e in events if e.event == "tool_call_done"] == []  # not sent again
        await c.close()
    assert not any(alive(pid) for pid in pids(pidfile))


async def test_names_that_collide_are_an_alert_not_a_tool(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    # Both names become mcp__h_1__…: the second server's tools are refused, by name.
    servers = {"h.1": hostile(pidfile), "h_1": hostile(pidfile)}
    async with running_pod(workspace, short_dir, mcp={"servers": servers}) as pod:
        c = await pod.client()
        history = await c.request("get_history")
        alerts = [a["message"] for a in history.data.get("alerts") or []]
        await c.close()
    echo = [a for a in alerts if "tool echo is not offered: another tool has that name" in a]
    assert echo == ["MCP server h_1: tool echo is not offered: another tool has that name"]


async def test_servers_whose_names_differ_offer_all_their_tools_without_alerts(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    servers = {"a": hostile(pidfile), "b": hostile(pidfile), "c": hostile(pidfile)}
    async with running_pod(workspace, short_dir, mcp={"servers": servers}) as pod:
        c = await pod.client()
        history = await c.request("get_history")
        rows = (await c.request("get_status")).data["mcp"]
        await c.close()
    assert not history.data.get("alerts")
    assert [(row["name"], row["offered"] == row["tools"]) for row in rows] == [
        ("a", True),
        ("b", True),
        ("c", True),
    ]


async def test_kill_9_of_the_pod_mid_call_leaves_no_server_and_no_resend(
    tmp_path: Path, short_dir: Path
) -> None:
    import json
    import signal
    import subprocess

    from orchestrator.serving.server import socket_is_live

    pidfile, children = tmp_path / "pids", tmp_path / "children"
    ws = tmp_path / "ws"
    ws.mkdir()
    config_home = tmp_path / "config"
    (config_home / "pod").mkdir(parents=True, exist_ok=True)
    server = hostile(pidfile)
    (config_home / "pod" / "config.toml").write_text(
        f'[mcp.servers.h]\ncommand = "{server["command"]}"\nargs = {json.dumps(server["args"])}\n'
        f'cwd = "{REPO}"\npermission = "allow"\n'
        f'[mcp.servers.h.env]\nHOSTILE_PIDFILE = "{pidfile}"\nHOSTILE_CHILDREN = "{children}"\n'
    )
    script = tmp_path / "script.json"
    calls = [{"name": "mcp__h__spawn", "input": {}}, {"name": "mcp__h__hang", "input": {}}]
    script.write_text(json.dumps({"replies": [{"tool_calls": calls}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        XDG_RUNTIME_DIR=str(short_dir),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(config_home),
    )
    socket = short_dir / "k.sock"

    def serve(*extra: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "cli", "serve", "--workspace", str(ws), "--socket", str(socket),
             "--script", str(script), *extra],
            env=env, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    async def live() -> None:
        for _ in range(400):
            if socket_is_live(socket):
                return
            await asyncio.sleep(0.05)
        raise AssertionError("the pod did not start")

    first = serve()
    await live()
    client = await PodClient.connect(socket)
    await client.send("run", {"input": "hang"})
    await client.wait_for("tool_result", timeout=30)  # spawn answered
    await arrived(pidfile, "hang")  # so the call has started: a crash closes it as such
    [server_pid] = pids(pidfile)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    await client.close()
    for _ in range(100):  # its stdin closed with the pod: the server goes too
        if not alive(server_pid):
            break
        await asyncio.sleep(0.1)
    assert not alive(server_pid), "the MCP server outlived the pod"
    [helper] = pids(children)
    for _ in range(50):  # and so does what it started
        if not alive(helper):
            break
        await asyncio.sleep(0.1)
    assert not alive(helper), "a process the MCP server started outlived the pod"

    second = serve("--continue")
    try:
        await live()
        client = await PodClient.connect(socket)
        history = await client.request("get_history")
        spawned, result = [i for i in history.data["items"] if i["kind"] == "tool_result"]
        assert not spawned["is_error"] and spawned["content"].startswith("started ")
        assert result["is_error"] and "crash" in result["summary"]
        await client.send("shutdown")
        await client.close()
        second.wait(20)
    finally:
        if second.poll() is None:
            second.kill()
    assert len(pids(pidfile)) == 2  # the restarted pod started the server once, never re-called
    assert not any(alive(pid) for pid in pids(pidfile))


async def test_a_server_stuck_after_a_cancelled_call_is_restarted(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    replies = [call("freeze"), call("echo", text="answering again"), ScriptedReply(text="ok")]
    servers = {"h": {**hostile(pidfile), "cancel_grace_s": 0.5}}
    async with running_pod(workspace, short_dir, replies=replies, mcp={"servers": servers}) as pod:
        c = await pod.client()
        await freeze_then_pause(c, pidfile)
        restarted = await c.wait_for("alert", timeout=20)
        assert (
            "did not answer 0.5 s after a call of freeze was interrupted; restarting it"
            in (restarted.data["message"])
        )
        back = await c.wait_for("alert", timeout=30)
        assert back.data["message"] == "MCP server h restarted"
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=30)
        [echo] = [e.data for e in events if e.event == "tool_result"]
        assert echo["content"] == "answering again"
        await c.close()
    first, second = pids(pidfile)
    assert not alive(first) and not alive(second)


async def test_a_server_that_dies_between_calls_is_an_alert_then_comes_back(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    replies = [
        call("exit_later", seconds=0.2),
        ScriptedReply(text="it said it would leave"),
        call("echo", text="back again"),
        ScriptedReply(text="done"),
    ]
    servers = {"h": hostile(pidfile)}
    async with running_pod(workspace, short_dir, replies=replies, mcp={"servers": servers}) as pod:
        c = await pod.client()
        await c.send("run", {"input": "leave"})
        await c.wait_for("run_end", timeout=30)
        # Nobody calls it: the pod notices on its own, names it and quotes its stderr.
        gone = await c.wait_for("alert", timeout=20)
        message = gone.data["message"]
        assert message.startswith("MCP server h failed: it stopped"), message
        assert "hostile: leaving on purpose" in message
        assert "started again at the next call" in message
        status = (await c.request("get_status")).data
        [row] = status["mcp"]
        assert row["status"].startswith("failed") and row["restarts"] == 0
        [first] = pids(pidfile)
        assert not alive(first)

        await c.send("run", {"input": "again"})
        events = await collect_until(c, "run_end", timeout=60)
        [echo] = [e.data for e in events if e.event == "tool_result"]
        assert not echo["is_error"] and echo["content"] == "back again"
        alerts = [e.data["message"] for e in events if e.event == "alert"]
        assert "MCP server h restarted (1 of 3 restarts after it stopped)" in alerts
        [row] = (await c.request("get_status")).data["mcp"]
        assert row["status"] == "running" and row["restarts"] == 1
        assert "mcp__h__echo" in row["offered"]
        await c.close()
    assert len(pids(pidfile)) == 2
    assert not any(alive(pid) for pid in pids(pidfile))


async def test_what_a_server_started_goes_with_it_at_shutdown(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile, children = tmp_path / "pids", tmp_path / "children"
    replies = [call("spawn"), ScriptedReply(text="spawned")]
    server = hostile(pidfile)
    server["env"]["HOSTILE_CHILDREN"] = str(children)
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"h": server}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "spawn"})
        await collect_until(c, "run_end", timeout=30)
        [helper] = pids(children)
        assert alive(helper)
        await c.close()
    # The server exits when its stdin closes; the helper it left behind must not stay.
    for _ in range(50):
        if not alive(helper):
            break
        await asyncio.sleep(0.1)
    assert not alive(helper), "a process the MCP server started outlived the pod"


async def test_a_streamable_http_server_gets_its_secret_header_and_the_session_never_does(
    workspace: Path, short_dir: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    import socket as sockets
    import subprocess

    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    secret = "s3cret-token-4711"
    env = {
        **os.environ,
        "HOSTILE_EXPECT": f"Bearer {secret}",
        "HOSTILE_PIDFILE": str(tmp_path / "p"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp.hostile_server", "--http", str(port)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(200):
            with sockets.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.05)
        monkeypatch.setenv("HOSTILE_TOKEN", secret)
        servers = {
            "web": {
                "url": f"http://127.0.0.1:{port}/mcp",
                "headers": {"Authorization": "Bearer ${HOSTILE_TOKEN}"},
                "permission": "allow",
            }
        }
        replies = [
            ScriptedReply(tool_calls=[ScriptedToolCall(name="mcp__web__whoami", input={})]),
            ScriptedReply(
                tool_calls=[ScriptedToolCall(name="mcp__web__echo", input={"text": "over http"})]
            ),
            ScriptedReply(text="done"),
        ]
        async with running_pod(
            workspace, short_dir, replies=replies, mcp={"servers": servers}
        ) as pod:
            c = await pod.client()
            [row] = (await c.request("get_status")).data["mcp"]
            assert row["status"] == "running" and "mcp__web__whoami" in row["offered"]
            await c.send("run", {"input": "who am I"})
            events = await collect_until(c, "run_end", timeout=60)
            results = [e.data for e in events if e.event == "tool_result"]
            assert [r["content"] for r in results] == ["authorized", "over http"]
            await c.close()
            await asyncio.sleep(0)
        sessions = list((tmp_path / "state").rglob("*.jsonl"))
        assert sessions
        session_text = "".join(path.read_text() for path in sessions)
    finally:
        proc.terminate()
        proc.wait(10)
    assert secret not in session_text
    assert "${HOSTILE_TOKEN}" not in session_text  # the config's headers are not recorded either


async def test_a_changed_tool_list_is_offered_from_the_next_round(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    replies = [call("grow"), call("reverse", text="abc"), ScriptedReply(text="done")]
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"h": hostile(pidfile)}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "grow"})
        events = await collect_until(c, "run_end", timeout=60)
        results = [e.data for e in events if e.event == "tool_result"]
        [row] = (await c.request("get_status")).data["mcp"]
        await c.close()
        first, second, _ = (r.tools for r in pod.provider.requests)
    assert [r["content"] for r in results] == ["grew", "cba"]
    names = [[t["name"] for t in tools] for tools in (first, second)]
    assert "mcp__h__reverse" not in names[0] and "mcp__h__reverse" in names[1]
    assert "mcp__h__reverse" in row["offered"]


async def test_a_pending_check_after_an_interrupt_does_not_restart_a_closed_server(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    servers = {"h": {**hostile(pidfile), "cancel_grace_s": 0.5}}
    async with running_pod(
        workspace, short_dir, replies=[call("freeze")], mcp={"servers": servers}
    ) as pod:
        c = await pod.client()
        await freeze_then_pause(c, pidfile)
        await c.close()
    # The pod is gone; the check it left for the frozen server would have fired by now.
    await asyncio.sleep(1.5)
    # A server's tasks run methods of these (its calls, connection, tool list and asking).
    owners = ("McpServer.", "McpConnection.", "ToolListChanges.", "ServerAsking.")
    others = [t for t in asyncio.all_tasks() if any(o in repr(t.get_coro()) for o in owners)]
    assert others == []
    assert len(pids(pidfile)) == 1, "a server was started after its pod shut down"
    assert not any(alive(pid) for pid in pids(pidfile))


async def test_a_server_that_keeps_dying_is_restarted_three_times_then_left_off(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    leave = [call("exit_later", seconds=0.1), ScriptedReply(text="it left")]
    replies = leave * 4 + [call("echo", text="anyone?"), ScriptedReply(text="no")]
    servers = {"h": hostile(pidfile)}
    async with running_pod(workspace, short_dir, replies=replies, mcp={"servers": servers}) as pod:
        c = await pod.client()
        gone: list[str] = []
        for _ in range(4):
            await c.send("run", {"input": "leave"})
            await c.wait_for("run_end", timeout=30)
            alert = await c.wait_for("alert", timeout=20, level="error")
            gone.append(alert.data["message"])
        await c.send("run", {"input": "anyone there?"})
        events = await collect_until(c, "run_end", timeout=30)
        [echo] = [e.data for e in events if e.event == "tool_result"]
        [row] = (await c.request("get_status")).data["mcp"]
        await c.close()
    assert all("started again at the next call" in message for message in gone[:3])
    assert "started again 3 times already; its tools stay off" in gone[3]
    assert echo["is_error"] and "MCP server h is not running" in echo["summary"]
    assert row["status"].startswith("failed") and row["restarts"] == 3
    assert len(pids(pidfile)) == 4  # the first start and three restarts


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("no-such-mcp-program", "'no-such-mcp-program' was not found on PATH"),
        ("./bin/not-there", "'./bin/not-there' is not an executable file"),
    ],
)
async def test_a_missing_program_is_named_not_a_closed_connection(
    workspace: Path, short_dir: Path, command: str, why: str
) -> None:
    servers = {"ghost": {"command": command, "args": ["--stdio"]}}
    async with running_pod(workspace, short_dir, mcp={"servers": servers}) as pod:
        c = await pod.client()
        history = await c.request("get_history")
        status = (await c.request("get_status")).data
        await c.close()
    alerts = [a["message"] for a in history.data.get("alerts") or []]
    assert any(why in a and "Connection closed" not in a for a in alerts), alerts
    [ghost] = status["mcp"]
    assert ghost["status"].startswith("failed: its command") and why in ghost["status"]
