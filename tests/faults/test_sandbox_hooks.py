# ruff: noqa: F811  (the user_home fixture is imported, and named by the tests that use it)
"""Issue 38, the decision side: a hook's ``allow`` does not take a command out of the sandbox
unasked (finding 6), a workspace script that an unsandboxed hook runs cannot be rewritten
from inside and then run outside (finding 3's hook case), and a deny rule on a path holds for
a sandboxed command's redirection (finding 4).

Each goes through a real pod with real bubblewrap, the user's own config and hook scripts,
and a ``$HOME`` outside ``/tmp`` (:mod:`tests.faults.sandbox_home`).
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from orchestrator.config.loading import load_config
from orchestrator.config.model import PodConfig
from orchestrator.serving.client import PodClient, PodEvent
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.faults.sandbox_home import UserHome, script, user_home  # noqa: F401
from tests.orchestrator.sandboxed_peer import needs_bwrap


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    needs_bwrap()


def user_pod(world: UserHome, toml: str) -> tuple[Path, PodConfig]:
    """A project in the user's home and the config a pod started there loads."""
    workspace = world.home / "project"
    workspace.mkdir(exist_ok=True)
    world.write_user_config(textwrap.dedent(toml))
    return workspace, load_config(workspace)


def calls(*inputs: dict[str, Any]) -> list[ScriptedReply]:
    tools = [ScriptedToolCall(name="bash", input=i, id=f"call_{n}") for n, i in enumerate(inputs)]
    return [ScriptedReply(text="Running.", tool_calls=tools), ScriptedReply(text="Done.")]


async def next_of(client: PodClient, *names: str, timeout: float = 180) -> list[PodEvent]:
    """Every event up to and including the first whose name is one of ``names`` (the test
    fails on the wrong one, not at a timeout)."""
    seen: list[PodEvent] = []

    async def scan() -> list[PodEvent]:
        while True:
            got = await client.next_event()
            assert got is not None, f"connection closed; saw {[e.event for e in seen]}"
            seen.append(got)
            if got.event in names:
                return seen

    return await asyncio.wait_for(scan(), timeout)


ALLOW_ALL = """\
    #!/bin/sh
    # A hook that approves every call, as many users' hooks do.
    cat > /dev/null
    echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}'
"""


async def test_a_hooks_allow_never_runs_an_unsandboxed_command_unasked(
    user_home: UserHome,
) -> None:
    script(user_home.config / "pod" / "hooks" / "allow-all.sh", ALLOW_ALL)
    workspace, config = user_pod(
        user_home,
        """
        [sandbox]
        mode = "on"

        [permissions]
        mode = "accept-edits"

        [[hooks.PreToolUse]]
        matcher = "Bash"
        [[hooks.PreToolUse.hooks]]
        type = "command"
        command = "${XDG_CONFIG_HOME:-$HOME/.config}/pod/hooks/allow-all.sh"
        """,
    )
    escaped = user_home.home / "escaped.txt"
    replies = calls(
        {"command": "echo inside > inside.txt"},
        {"command": f"echo out > {escaped}", "sandbox": False},
    )
    async with running_pod(workspace, user_home.runtime, replies=replies, loaded=config) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await next_of(client, "approval_request", "run_end")
        assert events[-1].event == "approval_request", [e.event for e in events]
        request = events[-1].data
        assert request["id"] == "call_1" and "outside the sandbox" in request["reason"]
        assert not escaped.exists()  # it waits for the person
        await client.send("deny", {"id": "call_1", "message": "stay inside"})
        events += await collect_until(client, "run_end", timeout=180)
        await client.close()
    results = {e.data["id"]: e.data for e in events if e.event == "tool_result"}
    assert not results["call_0"]["is_error"]  # the sandboxed one: the hook's allow stands
    assert (workspace / "inside.txt").read_text() == "inside\n"
    assert results["call_1"]["is_error"] and "stay inside" in results["call_1"]["summary"]
    assert not escaped.exists()


async def test_a_rewritten_workspace_script_of_an_unsandboxed_hook_does_not_run(
    user_home: UserHome,
) -> None:
    # The user's hook runs a script of the project, outside the sandbox (sandbox = false):
    # the model rewrites it from a sandboxed command; the pod runs only the version it found.
    workspace = user_home.home / "project"
    log, planted = user_home.home / "post.log", user_home.home / "planted"
    script(workspace / "scripts" / "post.sh", f'#!/bin/sh\necho ran >> "{log}"\n')
    _, config = user_pod(
        user_home,
        """
        [sandbox]
        mode = "on"

        [permissions]
        mode = "accept-edits"

        [[hooks.PostToolUse]]
        matcher = "Bash"
        [[hooks.PostToolUse.hooks]]
        type = "command"
        command = 'sh "$CLAUDE_PROJECT_DIR"/scripts/post.sh'
        sandbox = false
        """,
    )
    rewrite = f"printf 'touch {planted}\\n' > scripts/post.sh"
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="bash", input={"command": "true"})]),
        ScriptedReply(tool_calls=[ScriptedToolCall(name="bash", input={"command": rewrite})]),
        ScriptedReply(tool_calls=[ScriptedToolCall(name="bash", input={"command": "true"})]),
        ScriptedReply(text="Done."),
    ]
    async with running_pod(workspace, user_home.runtime, replies=replies, loaded=config) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=180)
        await client.close()
    assert events[-1].data["result"] == "finished"
    assert "touch" in (workspace / "scripts" / "post.sh").read_text()  # the rewrite happened
    assert not planted.exists()  # and never ran outside
    assert log.read_text() == "ran\n"  # the original ran once, before it changed
    told = [
        e.data["message"]
        for e in events
        if e.event == "alert" and "changed since the pod started" in e.data["message"]
    ]
    assert len(told) == 1 and str(workspace / "scripts" / "post.sh") in told[0]


async def test_a_deny_rule_on_a_path_holds_for_a_sandboxed_redirection(
    user_home: UserHome,
) -> None:
    workspace, config = user_pod(
        user_home,
        """
        [sandbox]
        mode = "on"

        [permissions]
        mode = "accept-edits"
        deny = ["read(.env)", "read(secrets/**)", "write(secrets/**)"]
        """,
    )
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "k").write_text("original\n")
    replies = calls({"command": "echo pwned > secrets/k"}, {"command": "echo fine > notes.txt"})
    async with running_pod(workspace, user_home.runtime, replies=replies, loaded=config) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=180)
        await client.close()
    assert not [e for e in events if e.event == "approval_request"]
    results = {e.data["id"]: e.data for e in events if e.event == "tool_result"}
    assert results["call_0"]["is_error"] and "write(secrets/**)" in results["call_0"]["summary"]
    assert (workspace / "secrets" / "k").read_text() == "original\n"
    assert (workspace / "notes.txt").read_text() == "fine\n"
