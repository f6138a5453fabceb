"""The one-shot commands, run as a person runs them: real processes, a real pod, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.server import socket_is_live


def pod(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``pod ARGS`` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    """An environment with private runtime and state dirs and no API key."""
    values = dict(os.environ)
    values.pop("ANTHROPIC_API_KEY", None)
    values["XDG_RUNTIME_DIR"] = str(short_dir)
    values["XDG_STATE_HOME"] = str(tmp_path / "state")
    return values


@pytest.fixture
def served(env: dict[str, str], workspace: Path, short_dir: Path) -> Iterator[Path]:
    """A pod serving the workspace in the background; yields its socket."""
    socket = short_dir / "pod" / "demo.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--name", "demo",
         "--socket", str(socket)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        for _ in range(400):
            if socket_is_live(socket):
                break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            subprocess.run(["sleep", "0.05"], check=True)
        yield socket
    finally:
        if proc.poll() is None:
            pod(env, "shutdown", "--socket", str(socket), timeout=20)
            proc.wait(20)


def test_run_streams_the_answer_and_exits_zero(env: dict[str, str], served: Path) -> None:
    done = pod(env, "run", "hello @README.md", "--socket", str(served))
    assert done.returncode == 0, done.stderr
    assert "not a language model" in done.stdout
    assert "- File: README.md: 3 lines, starting `# Demo`" in done.stdout


def test_run_json_prints_protocol_events(env: dict[str, str], served: Path) -> None:
    done = pod(env, "run", "list the files", "--socket", str(served), "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line)["event"] for line in done.stdout.splitlines()]
    assert events[0] == "status" and events[-1] == "run_end"
    assert {"tool_call_start", "tool_result", "turn_end"} <= set(events)


def test_status_history_and_lifecycle_commands(env: dict[str, str], served: Path) -> None:
    assert pod(env, "run", "hi", "--socket", str(served)).returncode == 0
    status = json.loads(pod(env, "status", "--socket", str(served), "--json").stdout)
    assert (status["status"], status["name"], status["provider"]) == ("idle", "demo", "scripted")
    assert status["turn"] == 1
    items = json.loads(pod(env, "history", "--socket", str(served), "--json").stdout)
    assert [i["kind"] for i in items] == ["user_message", "assistant"]
    shown = pod(env, "history", "--socket", str(served))
    assert "you · turn 1" in shown.stdout
    listed = pod(env, "ls")
    assert "demo" in listed.stdout and "idle" in listed.stdout
    refused = pod(env, "pause", "--socket", str(served))
    assert refused.returncode == 1
    assert refused.stderr == "pod: error: not_running: cannot pause while idle\n"
    assert "Traceback" not in refused.stderr


def test_sessions_ls_show_export(env: dict[str, str], served: Path, workspace: Path) -> None:
    assert pod(env, "run", "first words", "--socket", str(served)).returncode == 0
    rows = json.loads(pod(env, "sessions", "ls", "--workspace", str(workspace), "--json").stdout)
    assert len(rows) == 1 and rows[0]["items"] == 2 and rows[0]["state"] == "closed"
    shown = pod(env, "sessions", "show", "--workspace", str(workspace))
    assert "first words" in shown.stdout
    md = pod(env, "sessions", "export", "--workspace", str(workspace), "--format", "md")
    assert md.stdout.startswith("## You (turn 1)\n\nfirst words\n")
    data = pod(env, "sessions", "export", rows[0]["name"], "--workspace", str(workspace))
    assert [i["kind"] for i in json.loads(data.stdout)] == ["user_message", "assistant"]


def test_run_starts_a_background_pod_for_the_workspace(
    env: dict[str, str], workspace: Path
) -> None:
    done = pod(env, "run", "hello", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    again = pod(env, "status", "--workspace", str(workspace), "--json")
    assert json.loads(again.stdout)["turn"] == 1  # the same pod was reused
    stopped = pod(env, "shutdown", "--workspace", str(workspace))
    assert stopped.stdout.strip() == "stopped"


def test_errors_are_one_line_with_nonzero_exit(env: dict[str, str], tmp_path: Path) -> None:
    missing = pod(env, "status", "--socket", str(tmp_path / "nope.sock"))
    assert missing.returncode == 1
    assert missing.stderr.startswith("pod: error: no pod is listening on ")
    assert missing.stderr.count("\n") == 1
    verbose = pod(env, "--verbose", "status", "--socket", str(tmp_path / "nope.sock"))
    assert (
        verbose.returncode == 1 and verbose.stderr == missing.stderr
    )  # expected errors stay one line
    nothing = pod(env, "status", "--workspace", str(tmp_path))
    assert nothing.returncode == 1 and "no pod is running for" in nothing.stderr
    bad = pod(env, "sessions", "export", "--workspace", str(tmp_path), "--format", "xml")
    assert (
        bad.returncode == 1 and bad.stderr == "pod: error: unknown format 'xml'; use json or md\n"
    )


def test_help_does_not_import_the_sdk_or_the_ui(env: dict[str, str]) -> None:
    probe = (
        "import sys; sys.argv=['pod','--help']\n"
        "from cli.main import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('anthropic', 'textual') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "Commands" in done.stdout


def test_an_unsafe_runtime_dir_is_one_line_naming_it(env: dict[str, str], short_dir: Path) -> None:
    shared = short_dir / "pod"
    shared.mkdir()
    os.chmod(shared, 0o777)
    for args in (("ls",), ("attach", "demo")):
        done = pod(env, *args)
        assert done.returncode == 1, done
        assert done.stderr.startswith(f"pod: error: refusing the runtime directory {shared}: ")
        assert "0777" in done.stderr and done.stderr.count("\n") == 1
