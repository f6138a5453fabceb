"""Hook commands as processes: the event on stdin, a clean environment, timeouts and
interruptions that end the hook with everything it started."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from orchestrator.hooks import HookCommand, HookEvent, HookRunner


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
    assert run.outcome == "timeout" and run.on_failure == "block"
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
