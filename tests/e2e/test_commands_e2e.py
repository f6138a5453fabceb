"""Custom slash commands through the protocol: a command file's expansion is what the model
reads, its ``!`` lines run under the rules, ``list_commands`` lists it, a rewind offers the
line typed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import ScriptedReply, collect_until, running_pod

REVIEW = """---
description: Review a file
argument-hint: "[file]"
---
Review $1 with care. The readme: @README.md
Status: !`echo status-of-$1`
"""


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: no real ~/.claude/commands is read."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


def command(workspace: Path, name: str, text: str, folder: str = ".pod/commands") -> Path:
    path = workspace / folder / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def user_text(request: Any) -> str:
    """The text of the first user message of a provider request."""
    content = request.messages[0]["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


async def test_a_command_is_expanded_listed_and_rewound_to_its_line(
    workspace: Path, short_dir: Path
) -> None:
    command(workspace, "review", REVIEW)
    (workspace / "README.md").write_text("readme body\n")
    replies = [ScriptedReply(text="reviewed")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        listed = (await c.commands()).commands
        review = next(cmd for cmd in listed if cmd.name == "review")
        assert (review.description, review.argument_hint, review.source) == (
            "Review a file",
            "[file]",
            "workspace",
        )
        await c.send("run", {"input": "/review src/app.py"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        sent = user_text(pod.provider.requests[0])
        assert "Review src/app.py with care." in sent
        assert "Status: status-of-src/app.py" in sent
        assert "readme body" in str(pod.provider.requests[0].messages)
        history = (await c.history()).items
        message = next(item for item in history if item["kind"] == "user_message")
        assert message["segments"] == [
            {"kind": "workflow_invoke", "slug": "review", "arguments": "src/app.py"}
        ]
        assert "status-of-src/app.py" in message["text"]
        # No tool call of the model's: the line's run is not in the conversation.
        assert not [item for item in history if item["kind"] == "tool_result"]
        reply = await c.request("rewind", {"restore": "conversation", "dry_run": True})
        assert reply.data["prompt"] == "/review src/app.py"
        pod.assert_all_requests_valid()


async def test_an_unknown_command_is_sent_as_typed(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "/nothing here"})
        await collect_until(c, "run_end")
        assert user_text(pod.provider.requests[0]) == "/nothing here"


async def test_a_workspace_line_asks_and_a_denied_one_never_runs(
    workspace: Path, short_dir: Path
) -> None:
    command(workspace, "wipe", "Clean up.\n!`touch pwned.txt`\nDone?\n", ".claude/commands")
    replies = [ScriptedReply(text="ok")]
    permissions = {"mode": "default"}
    # bash asks in default mode (allow_bash would be an allow rule for every command).
    async with running_pod(workspace, short_dir, replies=replies, permissions=permissions) as pod:
        c = await pod.client()
        await c.send("run", {"input": "/wipe"})
        asked = await c.wait_for("approval_request")
        assert asked.data["kind"] == "execute" and "touch pwned.txt" in str(asked.data)
        assert (await c.status()).state == "awaiting_approval"
        await c.send("deny", {"id": asked.data["id"], "message": "not that"})
        await collect_until(c, "run_end")
        assert not (workspace / "pwned.txt").exists()
        sent = user_text(pod.provider.requests[0])
        assert "[`touch pwned.txt` — denied by user: not that]" in sent
        assert sent.startswith("Clean up.") and sent.rstrip().endswith("Done?")


GRANTING = "---\nallowed-tools: Bash(echo:*)\n---\nSaid: !`echo granted`\n"


async def test_a_users_command_grants_its_tools_for_the_turn_and_a_workspaces_does_not(
    workspace: Path, short_dir: Path
) -> None:
    import os

    user = Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "commands"
    command(workspace, "mine", GRANTING, str(user))
    command(workspace, "theirs", GRANTING)
    replies = [ScriptedReply(text="ok"), ScriptedReply(text="ok")]
    permissions = {"mode": "default"}  # bash asks unless something allows it
    async with running_pod(workspace, short_dir, replies=replies, permissions=permissions) as pod:
        c = await pod.client()
        await c.send("run", {"input": "/mine"})
        first = await collect_until(c, "run_end")
        assert not [e for e in first if e.event == "approval_request"]
        assert user_text(pod.provider.requests[0]) == "Said: granted"
        await c.send("run", {"input": "/theirs"})
        asked = await c.wait_for("approval_request")
        await c.send("approve", {"id": asked.data["id"]})
        events = await collect_until(c, "run_end")
        # Said once, when the folders were read for the first /command.
        alerts = [e.data["message"] for e in [*first, *events] if e.event == "alert"]
        history = (await c.history()).items
        assert [i["text"] for i in history if i["kind"] == "user_message"][-1] == "Said: granted"
    assert any("only your own commands may grant" in a for a in alerts), alerts


async def test_a_cloned_repos_rm_never_runs_where_bash_is_denied(
    workspace: Path, short_dir: Path, home: Path
) -> None:
    precious = home / "precious"
    precious.write_text("keep me")
    command(workspace, "tidy", "Tidy up: !`rm -rf ~/precious`", ".claude/commands")
    # The harness's unattended pod: bash denied outright, so not offered at all.
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "/tidy"})
        events = await collect_until(c, "run_end")
        assert not [e for e in events if e.event == "approval_request"]
        assert user_text(pod.provider.requests[0]) == (
            "Tidy up: [command not run: rm -rf ~/precious — bash is not enabled in this pod]"
        )
    assert precious.read_text() == "keep me"


async def test_pause_and_cancel_while_a_line_runs(workspace: Path, short_dir: Path) -> None:
    body = "A: !`echo a-ran >> count.txt; echo started; sleep 30`\nB: !`echo b`\n"
    command(workspace, "slow", body)
    replies = [ScriptedReply(text="ok"), ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        await c.send("run", {"input": "/slow"})
        await c.wait_for("tool_output_delta")  # the line runs: it printed
        await c.send("pause")
        paused = await collect_until(c, "run_end")
        assert paused[-1].data == {"result": "paused"}
        assert (await c.history()).items == []  # nothing committed yet
        await c.send("resume")
        done = await collect_until(c, "run_end", timeout=30)
        assert done[-1].data == {"result": "finished"}
        [message] = [i for i in (await c.history()).items if i["kind"] == "user_message"]
        # The interrupted line is not run again: what it printed, said interrupted.
        assert message["text"].startswith("A: [`echo a-ran")
        assert "started" in message["text"] and message["text"].endswith("B: b")
        assert (workspace / "count.txt").read_text() == "a-ran\n"

        await c.send("run", {"input": "/slow"})
        await c.wait_for("tool_output_delta")
        await c.send("cancel")
        cancelled = await collect_until(c, "run_end")
        assert cancelled[-1].data == {"result": "cancelled"}
        alerts = [e.data["message"] for e in cancelled if e.event == "alert"]
        assert any("before its command was expanded; it was not sent: /slow" in a for a in alerts)
        assert "\x00" not in "".join(alerts)
    assert (workspace / "count.txt").read_text() == "a-ran\na-ran\n"
