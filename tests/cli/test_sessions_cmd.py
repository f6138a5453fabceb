"""Picking sessions as a person does: `pod run`, `pod serve`, `pod chat`, `pod sessions`.

Every command runs as a real process against real pods started in the background, with the
state and runtime folders of a test user.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.errors import CliError
from cli.pods.start import connect_or_start
from cli.start_options import StartOptions
from orchestrator.adapters.session import sessions_dir
from orchestrator.serving.server import socket_is_live
from tests.cli.helpers import pod

# The demo's replies are read for their prompts and sessions here, never paused mid-stream.
pytestmark = pytest.mark.usefixtures("demo_at_once")


def _ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    return done


def _prompts(env: dict[str, str], workspace: Path) -> list[str]:
    """The user messages of the workspace's live pod, in order."""
    items = json.loads(_ok(pod(env, "history", "--workspace", str(workspace), "--json")).stdout)
    return [
        "".join(s.get("text", "") for s in item["segments"])
        for item in items
        if item["kind"] == "user_message"
    ]


def _sessions(env: dict[str, str], workspace: Path) -> list[dict[str, object]]:
    done = _ok(pod(env, "sessions", "ls", "--workspace", str(workspace), "--json"))
    return list(json.loads(done.stdout))


def _serve_and_stop(env: dict[str, str], workspace: Path, *args: str) -> str:
    """Start `pod serve` in the background, wait until it listens, shut it down; its stderr."""
    socket = Path(env["XDG_RUNTIME_DIR"]) / "pod" / "bg.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--socket",
         str(socket), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        for _ in range(400):
            if socket_is_live(socket) or proc.poll() is not None:
                break
            subprocess.run(["sleep", "0.05"], check=True)
        if proc.poll() is None:
            _ok(pod(env, "shutdown", "--socket", str(socket)))
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    return err


def test_run_continues_the_latest_session_that_has_a_conversation(
    env: dict[str, str], workspace: Path
) -> None:
    _ok(pod(env, "run", "remember the word tangerine", "--workspace", str(workspace)))
    _ok(pod(env, "shutdown", "--workspace", str(workspace)))
    # A pod started and stopped without a conversation leaves no session behind.
    said = _serve_and_stop(env, workspace)
    assert "its session was empty and is not kept" in said
    assert [row["state"] for row in _sessions(env, workspace)] == ["turn closed"]

    _ok(pod(env, "run", "which word?", "--workspace", str(workspace)))
    assert _prompts(env, workspace) == ["remember the word tangerine", "which word?"]
    rows = _sessions(env, workspace)
    assert [(row["state"], row["turns"]) for row in rows] == [("live", 2)]


def test_new_starts_a_fresh_session_and_never_joins_a_live_conversation(
    env: dict[str, str], workspace: Path
) -> None:
    _ok(pod(env, "run", "first conversation", "--workspace", str(workspace)))
    refused = pod(env, "run", "--new", "second", "--workspace", str(workspace))
    assert refused.returncode == 1
    assert refused.stderr.startswith("pod: error: pod ws already runs here on session ")
    assert "pod shutdown ws" in refused.stderr and refused.stderr.count("\n") == 1
    _ok(pod(env, "shutdown", "--workspace", str(workspace)))

    _ok(pod(env, "run", "--new", "second conversation", "--workspace", str(workspace)))
    assert _prompts(env, workspace) == ["second conversation"]
    titles = [(row["title"], row["state"]) for row in _sessions(env, workspace)]
    assert titles == [("first conversation", "turn closed"), ("second conversation", "live")]


def test_a_name_from_sessions_ls_picks_the_session_in_run_serve_and_chat(
    env: dict[str, str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ok(pod(env, "run", "in the first", "--workspace", str(workspace)))
    _ok(pod(env, "shutdown", "--workspace", str(workspace)))
    _ok(pod(env, "run", "--new", "in the second", "--workspace", str(workspace)))
    _ok(pod(env, "shutdown", "--workspace", str(workspace)))
    first, second = (str(row["name"]) for row in _sessions(env, workspace))

    _ok(pod(env, "run", "--session", first, "back in the first", "--workspace", str(workspace)))
    assert _prompts(env, workspace) == ["in the first", "back in the first"]
    other = pod(env, "run", "--session", "nope", "x", "--workspace", str(workspace))
    assert other.returncode == 1 and "no session 'nope'" in other.stderr
    _ok(pod(env, "shutdown", "--workspace", str(workspace)))

    err = _serve_and_stop(env, workspace, "--session", first)
    assert f"session {sessions_dir(workspace) / first}.jsonl" in err

    # `pod chat` picks its pod the same way before the UI starts.
    monkeypatch.setenv("XDG_RUNTIME_DIR", env["XDG_RUNTIME_DIR"])
    live, notices = connect_or_start(workspace, StartOptions(session=f"{first}.jsonl"))
    assert Path(live.session) == sessions_dir(workspace) / f"{first}.jsonl" and notices == []
    assert _prompts(env, workspace) == ["in the first", "back in the first"]
    with pytest.raises(CliError, match=f"already runs here on session {first}, not {second}"):
        connect_or_start(workspace, StartOptions(session=second))
    _, notices = connect_or_start(workspace, StartOptions(model="m", allow_bash=True))
    assert notices == [
        "pod ws was already running, so --model, --allow-bash do not apply: to change them, "
        "`pod shutdown ws` and start again"
    ]


@pytest.mark.parametrize("command", ["run", "serve", "chat"])
def test_an_unknown_session_name_is_an_error_that_creates_nothing(
    env: dict[str, str], workspace: Path, command: str
) -> None:
    before = sorted(p.name for p in workspace.iterdir())
    extra = ["a prompt"] if command == "run" else []
    done = pod(env, command, "--session", "typo", *extra, cwd=str(workspace))
    assert done.returncode == 1, done
    assert done.stderr.startswith("pod: error: no session 'typo' for ")
    assert "pod sessions ls" in done.stderr and done.stderr.count("\n") == 1
    assert sorted(p.name for p in workspace.iterdir()) == before
    assert not sessions_dir(workspace).exists()


def test_sessions_ls_shows_titles_and_says_what_the_state_means(
    env: dict[str, str], workspace: Path
) -> None:
    _ok(pod(env, "run", "Fix   the flaky test\nin @src/app.py", "--workspace", str(workspace)))
    (row,) = _sessions(env, workspace)
    assert (row["title"], row["state"], row["pod"]) == (
        "Fix the flaky test in @src/app.py",
        "live",
        "ws",
    )
    refused = pod(
        env, "sessions", "title", str(row["name"]), "Flaky", "--workspace", str(workspace)
    )
    assert refused.returncode == 1
    assert "is open in pod ws; title it once that pod has stopped" in refused.stderr
    _ok(pod(env, "shutdown", "--workspace", str(workspace)))

    _ok(
        pod(
            env,
            "sessions",
            "title",
            str(row["name"]),
            "The flaky test",
            "--workspace",
            str(workspace),
        )
    )
    (row,) = _sessions(env, workspace)
    assert (row["title"], row["state"], row["turns"]) == ("The flaky test", "turn closed", 1)
    table = _ok(pod(env, "sessions", "ls", "--workspace", str(workspace))).stdout
    header = next(line for line in table.splitlines() if "name" in line)
    assert [cell.strip() for cell in header.split("┃")[1:6]] == [
        "name",
        "title",
        "state",
        "turns",
        "modified",
    ]
    assert "The flaky test" in table and "turn closed" in table


@pytest.mark.parametrize("width", [40, 80, 160])
def test_sessions_ls_never_cuts_a_name_and_drops_columns_before_the_title(width: int) -> None:
    from rich.console import Console

    from cli.commands.sessions import sessions_table

    title = "Fix the flaky test in @src/app.py and then tell me why it was flaky at all"
    rows = [
        {"name": "20261124-181512", "title": title, "state": "turn closed", "turns": 12,
         "modified": "2026-11-24 18:15"},
        {"name": "20261124-181940", "title": "Short", "state": "live", "pod": "workspace-pod",
         "turns": 3, "modified": "2026-11-24 18:19"},
    ]  # fmt: skip
    console = Console(width=width, record=True)
    console.print(sessions_table(rows, width=width), crop=False)
    lines = console.export_text().splitlines()
    body = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if "│" in line]
    assert [cells[0] for cells in body] == ["20261124-181512", "20261124-181940"]
    assert [cells[2] for cells in body] == ["turn closed", "live (pod workspace-pod)"]
    assert body[0][1].startswith("Fix the fla") and body[1][1] == "Short"
    assert max(map(len, lines)) <= max(width, 61)  # 61: the name, a short title and the state
    header = [cell.strip() for cell in lines[1].split("┃")[1:-1]]
    assert header[:3] == ["name", "title", "state"]
    left_out = [column for column in ("turns", "modified") if column not in header]
    assert header[3:] == [column for column in ("turns", "modified") if column in header]
    if left_out:
        caption = " ".join(" ".join(lines[len(body) + 4 :]).split())
        assert caption == f"({', '.join(left_out)}: a wider terminal or --json)"
    assert left_out == {40: ["turns", "modified"], 80: ["modified"], 160: []}[width]
    if width >= 80:
        assert [cells[3] for cells in body] == ["12", "3"]
    if width == 160:
        assert body[0][1] == title and body[0][4] == "2026-11-24 18:15"


def test_a_fork_is_continued_beside_the_pod_that_forked_by_the_printed_command(
    env: dict[str, str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex

    _ok(pod(env, "run", "remember the word tangerine", "--workspace", str(workspace)))
    done = _ok(pod(env, "fork", "--workspace", str(workspace)))
    printed = done.stdout.split("continue it with: ", 1)[1].strip()
    words = shlex.split(printed)
    assert words[:2] == ["pod", "chat"] and words[2:4] == ["--workspace", str(workspace)]
    options = dict(zip(words[2::2], words[3::2], strict=True))
    fork, name = options["--session"], options["--name"]

    # What `pod chat` does with those options before its UI starts, while the first pod runs.
    monkeypatch.setenv("XDG_RUNTIME_DIR", env["XDG_RUNTIME_DIR"])
    monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])
    first = connect_or_start(workspace, StartOptions())[0]
    beside, notices = connect_or_start(workspace, StartOptions(session=fork, name=name))
    assert notices == [] and beside.name == name and beside.socket != first.socket
    assert Path(beside.session) == sessions_dir(workspace) / f"{fork}.jsonl"
    # The workspace's pod is still the first one; the fork's is reached by its name.
    assert _prompts(env, workspace) == ["remember the word tangerine"]
    status = json.loads(_ok(pod(env, "status", name, "--json")).stdout)
    assert Path(status["session"]).stem == fork != Path(first.session).stem
    again, _ = connect_or_start(workspace, StartOptions(session=fork, name=name))
    assert again.socket == beside.socket  # the pod of that name, not a third
    with pytest.raises(CliError, match=f"pod {name} serves {workspace}"):
        connect_or_start(workspace.parent, StartOptions(name=name))
