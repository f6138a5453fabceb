"""``pod acp`` driven by acpx, a headless ACP client from npm that nobody here wrote.

acpx is found on PATH or at ``$POD_ACPX`` (``.ci/run`` installs it when npm is there);
without it these tests are skipped. The prompts are the offline demo's (docs/scripted-provider.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ACPX = os.environ.get("POD_ACPX") or shutil.which("acpx")
pytestmark = pytest.mark.skipif(ACPX is None, reason="acpx is not installed (see .ci/run)")

AGENT = f"{Path(sys.executable).with_name('pod')} acp"


@pytest.fixture
def acpx_env(tmp_path: Path, short_dir: Path) -> Iterator[dict[str, str]]:
    """A private home, state and runtime folder, and no API key; pods are stopped after."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_RUNTIME_DIR=str(short_dir),
    )
    (tmp_path / "home").mkdir()
    yield env
    for info in (short_dir / "pod").glob("*.json"):
        with contextlib.suppress(OSError, ValueError, ProcessLookupError):
            os.kill(int(json.loads(info.read_text())["pid"]), signal.SIGTERM)


@pytest.fixture
def project(workspace: Path) -> Path:
    """The shared small workspace, with a note to attach."""
    (workspace / "notes.txt").write_text("hello from the notes\n")
    return workspace


def acpx(env: dict[str, str], project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run acpx against ``pod acp`` in the project."""
    assert ACPX is not None
    command = [ACPX, "--agent", AGENT, "--cwd", str(project), "--ttl", "5", "--timeout", "60"]
    return subprocess.run(
        [*command, *args], env=env, cwd=project, capture_output=True, text=True, timeout=120
    )


def test_a_prompt_with_a_file_and_a_command_approved_then_denied(
    acpx_env: dict[str, str], project: Path
) -> None:
    hello = acpx(acpx_env, project, "exec", "what is in @notes.txt?")
    assert hello.returncode == 0, hello.stderr
    assert "File: notes.txt: 1 lines, starting `hello from the notes`" in hello.stdout
    assert "[done] end_turn" in hello.stdout

    approved = acpx(acpx_env, project, "--approve-all", "exec", "run a command")
    assert approved.returncode == 0, approved.stderr
    assert "session/request_permission" in approved.stdout
    ran = "\n    hello from bash\n"  # the command's output, not its input
    assert ran in approved.stdout and "[done] end_turn" in approved.stdout
    assert approved.stdout.count(ran) == 1  # content only, not again from rawOutput

    denied = acpx(acpx_env, project, "--deny-all", "exec", "run a command")
    assert denied.returncode == 5, denied.stderr  # acpx's exit code for a denied permission
    assert "denied by user" in denied.stdout and ran not in denied.stdout


def test_cancel_stops_the_command_and_the_next_prompt_does_not_run_it_again(
    acpx_env: dict[str, str], project: Path
) -> None:
    created = acpx(acpx_env, project, "sessions", "new")
    assert created.returncode == 0, created.stderr
    out = project.parent / "long.txt"
    assert ACPX is not None
    with out.open("w") as sink:
        long = subprocess.Popen(
            [ACPX, "--agent", AGENT, "--cwd", str(project), "--ttl", "5", "--timeout", "90",
             "--approve-all", "prompt", "run a long command"],
            env=acpx_env, cwd=project, stdout=sink, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    try:
        # acpx shows a tool's output when it ends; the pod's write-ahead record says it began.
        state = Path(acpx_env["XDG_STATE_HOME"])
        deadline = time.monotonic() + 60
        while not any('"tool_start"' in p.read_text() for p in state.rglob("*.jsonl")):
            assert long.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.1)
        time.sleep(1.5)  # a few steps of output, for the result to show
        cancelled = acpx(acpx_env, project, "cancel")
        assert cancelled.returncode == 0, cancelled.stderr
        assert long.wait(30) == 0
    finally:
        if long.poll() is None:
            long.kill()
    shown = out.read_text()
    assert "[done] cancelled" in shown, shown
    assert "[Interrupted by user]" in shown and "step 1 of 30" in shown
    assert "step 30 of 30" not in shown

    after = acpx(acpx_env, project, "--approve-all", "prompt", "list the files")
    assert after.returncode == 0, after.stderr
    assert "Let me list the files with the glob tool" in after.stdout
    assert "notes.txt" in after.stdout and "[done] end_turn" in after.stdout
    assert "step 1 of 30" not in after.stdout  # the cancelled command did not run again


def test_set_mode_and_the_config_options_through_acpx(
    acpx_env: dict[str, str], project: Path
) -> None:
    created = acpx(acpx_env, project, "sessions", "new")
    assert created.returncode == 0, created.stderr
    mode = acpx(acpx_env, project, "set-mode", "plan")
    assert mode.returncode == 0 and "mode set: plan" in mode.stdout, mode.stderr
    wider = acpx(acpx_env, project, "set-mode", "yolo")  # wider than the pod was started with
    assert wider.returncode != 0 and "Invalid params (ACP -32602)" in wider.stderr
    effort = acpx(acpx_env, project, "set", "effort", "high")
    assert effort.returncode == 0 and "config set: effort=high" in effort.stdout, effort.stderr
    model = acpx(acpx_env, project, "set", "model", "scripted-demo")  # the offline provider's
    assert model.returncode == 0 and "model set: scripted-demo" in model.stdout, model.stderr
    unknown = acpx(acpx_env, project, "set", "model", "claude-x")
    assert unknown.returncode != 0
    assert "did not advertise that model" in unknown.stdout + unknown.stderr
    closed = acpx(acpx_env, project, "sessions", "close")
    assert closed.returncode == 0, closed.stderr
