"""Skills through the public protocol: listed in the system prompt, read with ``skill``, their
files read (never written) outside the workspace, a user skill's grant lasting one turn, a
workspace skill's granting nothing, and a hostile repository's skills refused with alerts."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.orchestrator.capabilities.skills.library_files import user_library, write_skill


def call(tool: str, call_id: str, **arguments: Any) -> ScriptedToolCall:
    return ScriptedToolCall(name=tool, input=arguments, id=call_id)


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


async def test_a_user_skill_is_listed_read_and_grants_for_one_turn(
    workspace: Path, short_dir: Path
) -> None:
    folder = write_skill(
        user_library("skills"),
        "greet",
        "Greet people politely",
        body="Run scripts/hello.sh.",
        extra="allowed-tools: Bash(echo granted)\n",
        files={"scripts/hello.sh": "echo hello from the skill\n"},
    )
    write_skill(workspace / ".pod" / "skills", "deploy", "Deploy it", extra="allowed-tools: Bash\n")
    script = Path(os.path.realpath(folder / "scripts" / "hello.sh"))
    replies = [
        ScriptedReply(
            tool_calls=[
                call("skill", "t1", name="greet"),
                call("skill", "t2", name="deploy"),
                call("read_file", "t3", path=str(script)),
                call("write_file", "t4", path=str(script), content="rm -rf ~\n"),
                call("grep", "t3g", pattern="from the skill", path=str(script.parent.parent)),
                call("glob", "t3b", pattern="**/*.sh", path=str(script.parent.parent)),
            ]
        ),
        ScriptedReply(
            tool_calls=[
                call("bash", "t5", command="echo granted"),
                call("bash", "t6", command="echo ws"),
            ]
        ),
        ScriptedReply(text="done"),
        ScriptedReply(tool_calls=[call("bash", "t7", command="echo granted")]),
        ScriptedReply(text="done again"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "default"}
    ) as pod:
        c = await pod.client()
        history = (await c.request("get_history")).data
        alerts = " ".join(a["message"] for a in history.get("alerts", []))
        assert "deploy" in alerts and "only your own skills may grant" in alerts
        await c.send("run", {"input": "greet"})
        # The write asks (an edit, in default mode); approved, the pod still refuses it: the
        # skill's folder is a read-only root.
        request = await c.wait_for("approval_request")
        assert request.data["id"] == "t4"
        await c.send("approve", {"id": "t4"})
        # The user's skill allowed `echo granted` for this turn: the workspace's grants
        # nothing, so only `echo ws` asks.
        request = await c.wait_for("approval_request")
        assert request.data["id"] == "t6"
        await c.send("deny", {"id": "t6"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        # The next turn: the grant is over, the same command asks again.
        await c.send("run", {"input": "again"})
        request = await c.wait_for("approval_request")
        assert request.data["id"] == "t7"
        await c.send("deny", {"id": "t7"})
        await collect_until(c, "run_end")
        items = (await c.request("get_history")).data["items"]
        await c.close()
    got = {i["call_id"]: i for i in items if i["kind"] == "tool_result"}
    assert "Run scripts/hello.sh." in got["t1"]["content"] and str(script) in got["t1"]["content"]
    assert "nothing is pre-approved" in got["t2"]["content"]
    assert got["t3"]["content"].strip().endswith("echo hello from the skill")
    assert "hello.sh" in got["t3g"]["content"] and "hello.sh" in got["t3b"]["content"]
    assert got["t4"]["is_error"] and script.read_text() == "echo hello from the skill\n"
    assert got["t5"]["content"] == "granted\n" and not got["t5"]["is_error"]
    assert got["t6"]["is_error"] and got["t7"]["is_error"]
    system = pod.provider.requests[0].system
    assert "- greet: Greet people politely" in str(system)
    assert "Run scripts/hello.sh." not in str(system)
    tools = {tool["name"] for tool in pod.provider.requests[0].tools}
    assert "skill" in tools
    pod.assert_all_requests_valid()


async def test_a_hostile_repositorys_skills_get_alerts_and_the_pod_runs(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    skills = workspace / ".claude" / "skills"
    (skills / "big").mkdir(parents=True)
    with (skills / "big" / "SKILL.md").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    (skills / "fifo").mkdir()
    os.mkfifo(skills / "fifo" / "SKILL.md")
    os.symlink(tmp_path / "home", skills / "out")
    (skills / "list").mkdir()
    (skills / "list" / "SKILL.md").write_text("---\n[1, 2]\n---\n")
    replies = [ScriptedReply(text="fine")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        history = (await c.request("get_history")).data
        alerts = [a["message"] for a in history.get("alerts", []) if "skill" in a["message"]]
        assert len(alerts) == 4, alerts
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()
    # No skill in use: no tool, no section.
    assert "skill" not in {tool["name"] for tool in pod.provider.requests[0].tools}
    assert "## Skills" not in str(pod.provider.requests[0].system)


async def test_a_users_skill_script_runs_in_the_sandbox_read_only(
    workspace: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.adapters.sandbox.bwrap import SandboxUnavailable, find_bwrap

    try:
        find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")
    # A home outside /tmp: the sandbox mounts an empty /tmp, which would hide a home there
    # for reasons of its own.
    home = Path(tempfile.mkdtemp(prefix="pod-home-", dir="/var/tmp"))
    try:
        monkeypatch.setenv("HOME", str(home))
        (home / "secret.txt").write_text("HOME SECRET\n")
        folder = write_skill(
            home / ".claude" / "skills",
            "hello",
            "Say hello",
            files={"run.sh": "echo hello from the skill\n"},
        )
        script = Path(os.path.realpath(folder / "run.sh"))
        calls = [
            call("bash", "t1", command=f"sh {script}"),
            call("bash", "t2", command=f"echo changed > {script}"),
            call("bash", "t3", command=f"cat {home / 'secret.txt'}"),
        ]
        replies = [ScriptedReply(tool_calls=calls), ScriptedReply(text="done")]
        async with running_pod(
            workspace,
            short_dir,
            replies=replies,
            permissions={"mode": "accept-edits"},
            sandbox={"mode": "on"},
        ) as pod:
            c = await pod.client()
            await c.send("run", {"input": "go"})
            # Writing under .claude/ always asks; approved, the sandbox still refuses it.
            asked = await c.wait_for("approval_request", timeout=60)
            assert asked.data["id"] == "t2"
            await c.send("approve", {"id": "t2"})
            events = await collect_until(c, "run_end", timeout=60)
            await c.close()
        got = {e.data["id"]: e.data for e in events if e.event == "tool_result"}
        assert got["t1"]["content"] == "hello from the skill\n"
        assert script.read_text() == "echo hello from the skill\n"
        assert "Read-only file system" in str(got["t2"]["content"])
        assert "HOME SECRET" not in str(got["t3"]["content"])
    finally:
        shutil.rmtree(home, ignore_errors=True)
