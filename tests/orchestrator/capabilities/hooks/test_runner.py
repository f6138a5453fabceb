"""Hook commands as processes: the event on stdin, a clean environment, timeouts and
interruptions that end the hook with everything it started."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from orchestrator.capabilities.hooks import HookEvent, HookRunner
from orchestrator.config.hooks import HookCommand


def runner(tmp_path: Path) -> HookRunner:
    return HookRunner(
        workspace=tmp_path,
        env={"PATH": os.environ["PATH"], "CLAUDE_PROJECT_DIR": str(tmp_path)},
        hooks_dir=tmp_path / "hooks",
    )


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state not in ("Z", "X")


async def test_a_hook_reads_the_event_and_answers(tmp_path: Path) -> None:
    hook = HookCommand(
        command='cat > got.json; echo "$CLAUDE_PROJECT_DIR"; echo oops >&2; test -z "$SECRET"'
    )
    os.environ["SECRET"] = "s3cret"
    try:
        (run,) = await runner(tmp_path).run_all(HookEvent.STOP, {"stop_hook_active": False}, [hook])
    finally:
        del os.environ["SECRET"]
    assert (run.outcome, run.code) == ("ok", 0)
    assert run.stdout.strip() == str(tmp_path) and run.stderr.strip() == "oops"
    assert json.loads((tmp_path / "got.json").read_text()) == {"stop_hook_active": False}


async def test_a_timeout_ends_the_hook_and_what_it_started(tmp_path: Path) -> None:
    hook = HookCommand(command="sleep 300 & echo $! > child.pid; wait", timeout=0.5)
    (run,) = await runner(tmp_path).run_all(HookEvent.PRE_TOOL_USE, {}, [hook])
    assert run.outcome == "timeout" and run.on_failure == "continue"
    assert not _alive(int((tmp_path / "child.pid").read_text()))


async def test_an_interruption_ends_the_hook_and_propagates(tmp_path: Path) -> None:
    hook = HookCommand(command="echo $$ > hook.pid; sleep 300")
    task = asyncio.ensure_future(runner(tmp_path).run_all(HookEvent.PRE_TOOL_USE, {}, [hook]))
    pid_file = tmp_path / "hook.pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    await asyncio.wait([task])
    assert task.cancelled()
    assert not _alive(int(pid_file.read_text()))


async def test_hooks_of_one_event_run_together(tmp_path: Path) -> None:
    # Each hook waits until all four have started: run one after another, none could end.
    barrier = "touch started.$N; until [ $(ls started.* | wc -l) -eq 4 ]; do sleep 0.02; done"
    hooks = [HookCommand(command=f"N={n}; {barrier}; echo {n}", timeout=20) for n in range(4)]
    runs = await runner(tmp_path).run_all(HookEvent.STOP, {}, hooks)
    assert [(r.outcome, r.stdout.strip()) for r in runs] == [("ok", str(n)) for n in range(4)]


async def test_a_flood_of_output_is_cut_and_a_missing_program_is_a_failure(
    tmp_path: Path,
) -> None:
    flood = HookCommand(command="head -c 5000000 /dev/zero | tr '\\0' x")
    missing = HookCommand(command="/no/such/hook")
    big, gone = await runner(tmp_path).run_all(HookEvent.STOP, {}, [flood, missing])
    assert big.code == 0 and len(big.stdout) == 1024 * 1024
    assert gone.code == 127 and "No such file" in gone.stderr


def test_a_hook_runs_outside_unless_it_says_so_or_runs_a_workspace_file(tmp_path: Path) -> None:
    (tmp_path / "fmt.sh").write_text("#!/bin/sh\n")
    hooks = runner(tmp_path)
    assert not hooks.inside(HookCommand(command="notify-send done"))
    assert not hooks.inside(HookCommand(command="~/.config/pod/hooks/no-rm.sh"))
    assert hooks.inside(HookCommand(command="$CLAUDE_PROJECT_DIR/fmt.sh"))
    assert hooks.inside(HookCommand(command="notify-send done", sandbox=True))
    assert not hooks.inside(HookCommand(command="$CLAUDE_PROJECT_DIR/fmt.sh", sandbox=False))
    # A path written as one is inside whether or not a file is there yet: one created
    # between the check and the run must not run outside.
    assert hooks.inside(HookCommand(command="$CLAUDE_PROJECT_DIR/not-yet.sh"))
    # A bare word is a file or just a word: inside once it is a file, and from then on
    # (removed and put back, it must not slip outside).
    later = HookCommand(command="sh later.sh")
    assert not hooks.inside(later)
    (tmp_path / "later.sh").write_text("")
    assert hooks.inside(later)
    (tmp_path / "later.sh").unlink()
    assert hooks.inside(later)


async def test_an_outside_hook_gets_the_network_settings(tmp_path: Path) -> None:
    hooks = runner(tmp_path)
    hooks.outside_env = {"SSL_CERT_FILE": "/etc/corp.pem", "HTTPS_PROXY": "http://proxy:3128"}
    hook = HookCommand(command='echo "$SSL_CERT_FILE $HTTPS_PROXY"')
    (run,) = await hooks.run_all(HookEvent.STOP, {}, [hook])
    assert run.stdout.strip() == "/etc/corp.pem http://proxy:3128"


async def test_a_changed_workspace_script_of_an_unsandboxed_hook_is_refused_once_told(
    tmp_path: Path,
) -> None:
    script = tmp_path / ".claude" / "hooks" / "fmt.sh"
    script.parent.mkdir(parents=True)
    script.write_text("echo formatted\n")
    hook = HookCommand(command='bash "$CLAUDE_PROJECT_DIR"/.claude/hooks/fmt.sh', sandbox=False)
    hooks = runner(tmp_path)
    hooks.pin([hook])  # the pod's start
    (run,) = await hooks.run_all(HookEvent.POST_TOOL_USE, {}, [hook])
    assert run.stdout.strip() == "formatted"
    script.write_text("echo planted > planted.txt\n")  # what a sandboxed command could do
    first, second = [
        (await hooks.run_all(HookEvent.POST_TOOL_USE, {}, [hook]))[0] for _ in range(2)
    ]
    assert not (tmp_path / "planted.txt").exists()
    assert first.outcome == "failed" and str(script) in first.detail
    assert "changed since the pod started" in first.detail
    assert not first.quiet and second.quiet  # one alert, every run refused
    script.write_text("echo formatted\n")  # put back as it was: it runs again
    (run,) = await hooks.run_all(HookEvent.POST_TOOL_USE, {}, [hook])
    assert run.stdout.strip() == "formatted"


async def test_a_workspace_script_that_appears_after_the_start_is_refused(tmp_path: Path) -> None:
    hook = HookCommand(command="python3 lint.py", sandbox=False)
    hooks = runner(tmp_path)
    hooks.pin([hook])
    (tmp_path / "lint.py").write_text("open('planted.txt', 'w')\n")
    (run,) = await hooks.run_all(HookEvent.STOP, {}, [hook])
    assert run.outcome == "failed" and "lint.py" in run.detail
    assert not (tmp_path / "planted.txt").exists()


def test_status_says_where_each_hook_runs(tmp_path: Path) -> None:
    from orchestrator.adapters.sandbox.bwrap import SandboxSpec
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing
    from orchestrator.config.hooks import HooksConfig
    from orchestrator.runtime.status import hook_data

    (tmp_path / "fmt.sh").write_text("")
    config = HooksConfig.model_validate(
        {"PostToolUse": [{"hooks": [{"command": "notify-send done"}, {"command": "./fmt.sh"}]}]}
    )
    hooks = runner(tmp_path)
    assert [h.sandboxed for h in hook_data(config, sandboxed=hooks.sandboxed)] == [False, False]
    hooks.sandboxing = Sandboxing(bwrap="bwrap", spec=SandboxSpec(workspace=tmp_path))
    listed = hook_data(config, sandboxed=hooks.sandboxed)
    assert [(h.command, h.sandboxed, h.on_failure) for h in listed] == [
        ("notify-send done", False, "continue"),
        ("./fmt.sh", True, "continue"),
    ]
    assert [h.sandboxed for h in hook_data(config, sandboxed=None)] == [False, False]
