"""bash: exit codes, merged output, timeouts, and killing the whole process group."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.capabilities.tools.bash import BashTool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(fs=ScopedFS(tmp_path), workspace=tmp_path, scratch_dir=tmp_path / "s")


def _alive(pid: int) -> bool:
    """Whether a process still runs; an unreaped zombie counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in a process group, from /proc."""
    members = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rpartition(")")[2].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            members.append(int(stat_file.parent.name))
    return members


async def _gone(pids: list[int], within_s: float = 3.0) -> bool:
    for _ in range(int(within_s / 0.02)):
        if not any(_alive(pid) for pid in pids):
            return True
        await asyncio.sleep(0.02)
    return False


async def _wait_for_text(partial: list[str], text: str, within_s: float = 10.0) -> str:
    for _ in range(int(within_s / 0.02)):
        if text in "".join(partial):
            return "".join(partial)
        await asyncio.sleep(0.02)
    raise AssertionError(f"{text!r} never appeared in {''.join(partial)!r}")


def _pids(output: str) -> dict[str, int]:
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", output)}


async def test_exit_code_and_merged_output(ctx: ToolContext) -> None:
    output = await BashTool().run({"command": "echo out; echo err >&2; echo again; exit 3"}, ctx)
    assert output == ToolOutput(
        summary="bash: echo out; echo err >&2; echo again; exit 3 — exit 3",
        content="out\nerr\nagain\n",
    )
    assert "".join(ctx.partial) == output.content


async def test_runs_in_the_workspace_with_no_stdin(ctx: ToolContext, tmp_path: Path) -> None:
    output = await BashTool().run({"command": "pwd; cat; echo done"}, ctx)
    assert output.content == f"{tmp_path}\ndone\n"
    assert output.summary.endswith("— exit 0")


async def test_silent_command_has_no_content(ctx: ToolContext) -> None:
    assert await BashTool().run({"command": "true"}, ctx) == ToolOutput(
        summary="bash: true — exit 0"
    )


async def test_long_command_is_shortened_in_the_summary(ctx: ToolContext) -> None:
    command = "echo " + "a" * 100
    output = await BashTool().run({"command": command}, ctx)
    assert output.summary == f"bash: {command[:60]}… — exit 0"


async def test_killed_by_a_signal(ctx: ToolContext) -> None:
    output = await BashTool().run({"command": "kill -KILL $$"}, ctx)
    assert output.summary == "bash: kill -KILL $$ — killed by SIGKILL"


async def test_invalid_utf8_output_is_replaced(ctx: ToolContext) -> None:
    output = await BashTool().run({"command": r"printf 'a\377b'"}, ctx)
    assert output.content == "a\ufffdb"


async def test_timeout_kills_the_group_and_keeps_the_output(ctx: ToolContext) -> None:
    command = "echo shell=$$; sleep 60 & echo child=$!; echo before; sleep 60"
    output = await BashTool().run({"command": command, "timeout_s": 0.5}, ctx)
    assert output.is_error
    assert output.summary == f"bash: {command[:60]}… — timed out after 0.5 s"
    assert output.content is not None
    assert output.content.startswith(
        "timed out after 0.5 s; the command was killed. Output so far:\n"
    )
    assert "before\n" in output.content
    pids = _pids(output.content)
    assert await _gone([pids["shell"], pids["child"]])


async def test_requested_timeout_is_capped_by_the_maximum(ctx: ToolContext) -> None:
    tool = BashTool(default_timeout_s=30, max_timeout_s=0.3)
    output = await tool.run({"command": "sleep 60", "timeout_s": 1000}, ctx)
    assert output.summary == "bash: sleep 60 — timed out after 0.3 s"
    assert output.content == "timed out after 0.3 s; the command was killed. No output."


async def test_background_job_holding_the_output_does_not_block(ctx: ToolContext) -> None:
    # Without the drain limit this would run into the 30 s timeout instead of exiting 0.
    output = await BashTool().run(
        {"command": "sleep 60 & echo child=$!; echo done", "timeout_s": 30}, ctx
    )
    assert output.summary.endswith("— exit 0")
    assert output.content is not None
    assert output.content.endswith("done\n\n[background processes still writing were stopped]\n")
    assert await _gone([_pids(output.content)["child"]])


async def test_background_job_with_redirected_output_is_left_running(
    ctx: ToolContext, tmp_path: Path
) -> None:
    output = await BashTool().run(
        {"command": "sleep 60 >/dev/null 2>&1 & echo child=$!", "timeout_s": 30}, ctx
    )
    assert output.content is not None
    child = _pids(output.content)["child"]
    try:
        assert _alive(child)
    finally:
        os.kill(child, 9)


@pytest.mark.parametrize("trap", ["", "trap '' TERM; "])
async def test_cancel_kills_everything_the_command_started(ctx: ToolContext, trap: str) -> None:
    # The second case ignores SIGTERM (inherited by every child), so only SIGKILL stops it.
    # The setsid child has left the shell's process group and session.
    command = (
        f"{trap}echo shell=$$; sleep 60 & echo child=$!; setsid sleep 60 & echo detached=$!; "
        "echo started; sleep 60"
    )
    task = asyncio.create_task(BashTool().run({"command": command}, ctx))
    so_far = await _wait_for_text(ctx.partial, "started")
    pids = _pids(so_far)
    assert all(_alive(pid) for pid in pids.values())

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(task), 3)
    assert task.cancelled()
    assert await _gone(list(pids.values()))
    assert _group_members(pids["detached"]) == []
    assert "".join(ctx.partial) == so_far


async def test_a_timeout_kills_a_setsid_child_too(ctx: ToolContext) -> None:
    output = await BashTool().run(
        {"command": "setsid sleep 60 & echo detached=$!; sleep 60", "timeout_s": 0.5}, ctx
    )
    assert output.summary.endswith("timed out after 0.5 s")
    assert output.content is not None
    assert await _gone([_pids(output.content)["detached"]])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument 'command'"),
        ({"command": "  "}, "command is empty"),
        ({"command": "true", "timeout_s": 0}, "must be a positive number, got 0"),
        ({"command": "true", "timeout_s": "5"}, "must be a positive number, got '5'"),
    ],
)
async def test_bad_arguments(ctx: ToolContext, args: dict[str, object], message: str) -> None:
    with pytest.raises(ToolError, match=re.escape(message)):
        await BashTool().run(dict(args), ctx)


def test_schema_states_the_maximum() -> None:
    tool = BashTool(default_timeout_s=500, max_timeout_s=90)
    assert tool.default_timeout_s == 90
    assert tool.input_schema["properties"]["timeout_s"]["maximum"] == 90
    assert tool.input_schema["required"] == ["command"]


# -- environment ------------------------------------------------------------------------------


def _env_lines(output: ToolOutput) -> dict[str, str]:
    assert output.content is not None
    return dict(line.split("=", 1) for line in output.content.splitlines() if "=" in line)


async def test_the_pods_secrets_never_reach_the_command(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("UNRELATED", "not allow-listed either")
    monkeypatch.setenv("LC_TIME", "C")
    output = await BashTool().run(
        {"command": "env; printenv ANTHROPIC_API_KEY || echo no key"}, ctx
    )
    assert output.content is not None
    for secret in ("sk-ant-secret", "ghp-secret", "aws-secret", "not allow-listed"):
        assert secret not in output.content
    assert output.content.endswith("no key\n")
    env = _env_lines(output)
    assert env["PATH"] == os.environ["PATH"]
    assert env["HOME"] == os.environ["HOME"]
    assert env["LC_TIME"] == "C"  # the default LC_* glob
    assert (env["PAGER"], env["GIT_PAGER"]) == ("cat", "cat")


async def test_allow_list_globs_pass_variables_but_not_secret_looking_ones(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROJECT_MODE", "dev")
    monkeypatch.setenv("PROJECT_TOKEN", "glob-must-not-pass-this")
    monkeypatch.setenv("NPM_TOKEN", "named-exactly")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    tool = BashTool(env_allow=["PROJECT_*", "NPM_TOKEN", "*"], env={"CI": "1", "PAGER": "less"})
    env = _env_lines(await tool.run({"command": "env"}, ctx))
    assert env["PROJECT_MODE"] == "dev"
    assert "PROJECT_TOKEN" not in env
    assert "ANTHROPIC_API_KEY" not in env  # even `*` does not let it through
    assert env["NPM_TOKEN"] == "named-exactly"
    assert (env["CI"], env["PAGER"]) == ("1", "less")
