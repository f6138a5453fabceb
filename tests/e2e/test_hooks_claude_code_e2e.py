# ruff: noqa: F811  (the user_home fixture is imported, and named by the tests that use it)
"""Hooks as Claude Code runs them, through a real pod with the sandbox on: the user's hook
scripts (a ``uv run --script`` one included) run unchanged from the user's config, outside
the sandbox with the certificate and proxy variables and without the pod's secrets; a hook
that fails does not block the call unless it says so; a hook running a workspace file runs
inside the sandbox. The user's world is :mod:`tests.faults.sandbox_home` (``$HOME`` outside
``/tmp``, ``XDG_CONFIG_HOME`` set)."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from orchestrator.config.loading import load_config
from orchestrator.config.model import PodConfig
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.faults.sandbox_home import UserHome, script, user_home  # noqa: F401
from tests.orchestrator.sandboxed_peer import needs_bwrap


@pytest.fixture(autouse=True)
def _needs_bwrap() -> None:
    needs_bwrap()


def start(world: UserHome, config_home: Path, toml: str) -> tuple[Path, PodConfig]:
    """A project in the user's home, and the config a pod started there loads from the
    user's config (sandbox on, edits and sandboxed commands unasked)."""
    user_config = config_home / "pod" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    preamble = '[sandbox]\nmode = "on"\n\n[permissions]\nmode = "accept-edits"\n'
    user_config.write_text(preamble + textwrap.dedent(toml))
    workspace = world.home / "project"
    workspace.mkdir(exist_ok=True)
    return workspace, load_config(workspace)


def calls(*inputs: tuple[str, dict[str, Any]]) -> list[ScriptedReply]:
    tools = [
        ScriptedToolCall(name=name, input=arguments, id=f"call_{n}")
        for n, (name, arguments) in enumerate(inputs)
    ]
    return [ScriptedReply(text="Working.", tool_calls=tools), ScriptedReply(text="Done.")]


async def run(world: UserHome, workspace: Path, config: PodConfig, replies: list[Any]) -> Any:
    async with running_pod(workspace, world.runtime, replies=replies, loaded=config) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=180)
        await client.close()
    assert events[-1].data["result"] == "finished"
    results = {e.data["id"]: e.data for e in events if e.event == "tool_result"}
    alerts = [e.data["message"] for e in events if e.event == "alert"]
    return results, alerts


UV_GUARD = """\
    #!/usr/bin/env -S uv run --script
    # /// script
    # requires-python = ">=3.8"
    # dependencies = []
    # ///
    \"\"\"Refuses force pushes: a PreToolUse hook as Claude Code users write them.\"\"\"
    import json
    import sys

    event = json.load(sys.stdin)
    command = event.get("tool_input", {}).get("command", "")
    if event.get("tool_name") == "Bash" and "--force" in command:
        print(json.dumps({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "uv guard: no force pushes from the agent",
        }}))
"""


def _uv() -> Path:
    found = Path(sys.executable).parent / "uv"
    if found.is_file():
        return found
    which = shutil.which("uv")
    if which is None:
        pytest.skip("uv is not installed (pip install uv; it is in the dev extra)")
    return Path(which)


async def test_a_uv_run_script_hook_from_the_users_config_runs_unchanged(
    user_home: UserHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    # uv on PATH as a user has it; the config folder is not ~/.config, so the documented
    # ${XDG_CONFIG_HOME:-$HOME/.config} spelling must find it through the variable.
    monkeypatch.setenv("PATH", f"{_uv().parent}:/usr/local/bin:/usr/bin:/bin")
    config_home = user_home.home / "dotfiles" / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    script(config_home / "pod" / "hooks" / "guard.py", UV_GUARD)
    workspace, config = start(
        user_home,
        config_home,
        """
        [[hooks.PreToolUse]]
        matcher = "Bash"
        [[hooks.PreToolUse.hooks]]
        type = "command"
        command = "${XDG_CONFIG_HOME:-$HOME/.config}/pod/hooks/guard.py"
        """,
    )
    replies = calls(
        ("bash", {"command": "echo pushed > pushed.txt # git push --force"}),
        ("bash", {"command": "echo built > built.txt"}),
    )
    results, alerts = await run(user_home, workspace, config, replies)
    refused, built = results["call_0"], results["call_1"]
    assert refused["is_error"] and "uv guard: no force pushes" in refused["summary"], alerts
    assert not (workspace / "pushed.txt").exists()
    assert not built["is_error"] and (workspace / "built.txt").read_text() == "built\n"
    assert not [a for a in alerts if "hook" in a and "failed" in a], alerts


async def test_a_hook_that_is_not_found_reports_and_blocks_only_when_told(
    user_home: UserHome,
) -> None:
    workspace, config = start(
        user_home,
        user_home.config,
        """
        [[hooks.PreToolUse]]
        matcher = "Bash"
        [[hooks.PreToolUse.hooks]]
        type = "command"
        command = "no-such-hook-program --check"

        [[hooks.PreToolUse]]
        matcher = "Write"
        [[hooks.PreToolUse.hooks]]
        type = "command"
        command = "no-such-strict-hook"
        on_failure = "block"
        """,
    )
    replies = calls(
        ("bash", {"command": "echo ran > ran.txt"}),
        ("write_file", {"path": "strict.txt", "content": "x"}),
    )
    results, alerts = await run(user_home, workspace, config, replies)
    assert not results["call_0"]["is_error"]
    assert (workspace / "ran.txt").read_text() == "ran\n"  # the call went on
    (said,) = [a for a in alerts if "no-such-hook-program" in a]
    assert "exit code 127" in said and "command not found" in said and "goes on" in said
    assert results["call_1"]["is_error"] and "fails closed" in results["call_1"]["summary"]
    assert not (workspace / "strict.txt").exists()
    assert any("no-such-strict-hook" in a and "blocked" in a for a in alerts), alerts


async def test_a_hook_gets_the_network_settings_and_never_the_pods_secrets(
    user_home: UserHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = user_home.home / "hook.env"
    settings = {
        "SSL_CERT_FILE": "/etc/corp/ca.pem",
        "REQUESTS_CA_BUNDLE": "/etc/corp/ca.pem",
        "NODE_EXTRA_CA_CERTS": "/etc/corp/ca.pem",
        "HTTPS_PROXY": "http://proxy.corp.example:3128",
        "no_proxy": "localhost,.corp.example",
    }
    secrets = {"ANTHROPIC_API_KEY": "sk-ant-hook-test", "GITHUB_TOKEN": "ghp_hooktest"}
    for name, value in {**settings, **secrets}.items():
        monkeypatch.setenv(name, value)
    workspace, config = start(
        user_home,
        user_home.config,
        f"""
        [[hooks.Stop]]
        [[hooks.Stop.hooks]]
        type = "command"
        command = "env > {seen}"
        """,
    )
    await run(user_home, workspace, config, [ScriptedReply(text="Done.")])
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert {name: env.get(name) for name in settings} == settings
    assert not set(secrets) & set(env)
    assert "sk-ant-hook-test" not in seen.read_text()


async def test_a_hook_running_a_workspace_script_runs_inside_the_sandbox(
    user_home: UserHome,
) -> None:
    escaped = user_home.home / "escaped"
    workspace = user_home.home / "project"
    script(
        workspace / "tools" / "check.sh",
        f"""
        #!/bin/sh
        echo hi > {escaped} 2>/dev/null
        echo "checked" > checked.txt
        """,
    )
    _, config = start(
        user_home,
        user_home.config,
        """
        [[hooks.PostToolUse]]
        [[hooks.PostToolUse.hooks]]
        type = "command"
        command = '"$CLAUDE_PROJECT_DIR"/tools/check.sh'
        """,
    )
    await run(user_home, workspace, config, calls(("bash", {"command": "true"})))
    assert (workspace / "checked.txt").read_text() == "checked\n"  # it ran
    assert not escaped.exists()  # inside the sandbox: nothing outside the workspace
