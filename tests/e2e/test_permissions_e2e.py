"""Permission rules over the real socket (issue 27 §1–3): rules see resolved paths and every
command a line runs, and read-only means read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod


def call(name: str, call_id: str, **arguments: Any) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, input=arguments, id=call_id)


async def _results(workspace: Path, short_dir: Path, calls: list[ScriptedToolCall], **config: Any):
    replies = [ScriptedReply(tool_calls=calls), ScriptedReply(text="done")]
    async with running_pod(workspace, short_dir, replies=replies, **config) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        history = (await c.request("get_history")).data["items"]
        pod.assert_all_requests_valid()
        await c.close()
    return {i["call_id"]: i for i in history if i["kind"] == "tool_result"}, pod


async def test_denied_files_stay_unread_however_they_are_named(
    workspace: Path, short_dir: Path
) -> None:
    (workspace / ".env").write_text("TOKEN=hunter2\n")
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key").write_text("hunter2\n")
    (workspace / "alias").symlink_to("secrets")
    calls = [
        call("read_file", "t1", path="./.env"),
        call("read_file", "t2", path="src/../.env"),
        call("read_file", "t3", path=str(workspace / ".env")),
        call("read_file", "t4", path="alias/key"),
        call("grep", "t5", pattern="hunter2", path="."),
    ]
    got, _ = await _results(
        workspace,
        short_dir,
        calls,
        permissions={"mode": "yolo", "deny": ["read(.env)", "read(./secrets/**)"]},
    )
    for call_id in ("t1", "t2", "t3", "t4"):
        assert got[call_id]["is_error"], got[call_id]
    assert all("hunter2" not in str(r.get("content")) for r in got.values())


async def test_a_deny_rule_holds_through_wrappers_even_in_yolo(
    workspace: Path, short_dir: Path
) -> None:
    lines = [
        " rm -f README.md",
        "command rm README.md",
        "r''m README.md",
        "true && rm README.md",
        "env rm README.md",
        "echo README.md | xargs rm",
        "bash -c 'rm README.md'",
        "find . -name README.md -delete",
    ]
    calls = [call("bash", f"t{n}", command=line) for n, line in enumerate(lines)]
    got, _ = await _results(
        workspace, short_dir, calls, permissions={"mode": "yolo", "deny": ["bash(rm *)"]}
    )
    assert (workspace / "README.md").exists()
    for n in range(len(lines)):
        assert got[f"t{n}"]["summary"] == "bash: not run — denied by the rule bash(rm *)"


async def test_read_only_offers_and_runs_only_reads(workspace: Path, short_dir: Path) -> None:
    calls = [
        call("bash", "t1", command="touch made"),
        call("write_file", "t2", path="docs/a.md", content="x"),
        call("read_file", "t3", path="README.md"),
    ]
    got, pod = await _results(
        workspace,
        short_dir,
        calls,
        allow_bash=True,
        permissions={"mode": "read-only", "allow": ["bash", "write(docs/**)"]},
    )
    offered = {t["name"] for t in pod.provider.requests[0].tools}
    assert "bash" not in offered and "write_file" not in offered and "read_file" in offered
    assert got["t1"]["is_error"] and got["t2"]["is_error"] and not got["t3"]["is_error"]
    assert not (workspace / "made").exists() and not (workspace / "docs").exists()


async def test_accept_edits_asks_before_a_write_that_runs_code_later(
    workspace: Path, short_dir: Path
) -> None:
    (workspace / ".git").mkdir()
    calls = [
        call("write_file", "t1", path="docs/../.git/config", content="[core]\nfsmonitor=evil\n"),
        call("bash", "t2", command="git status > .envrc"),
        call("write_file", "t3", path="docs/a.md", content="fine"),
    ]
    replies = [ScriptedReply(tool_calls=calls), ScriptedReply(text="done")]
    permissions = {"mode": "accept-edits", "allow": ["bash(git status*)"]}
    async with running_pod(
        workspace, short_dir, replies=replies, permissions=permissions, allow_bash=True
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        asked = {}
        for _ in range(2):
            request = await c.wait_for("approval_request")
            asked[request.data["id"]] = request.data["reason"]
        assert set(asked) == {"t1", "t2"}
        assert "always asks" in asked["t1"] and ".git" in asked["t1"]
        assert ".envrc" in asked["t2"]
        await c.send("deny", {"id": "t1"})
        await c.send("deny", {"id": "t2"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()
    assert not (workspace / ".git" / "config").exists() and not (workspace / ".envrc").exists()
    assert (workspace / "docs" / "a.md").read_text() == "fine"
