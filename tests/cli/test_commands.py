"""The one-shot commands, run as a person runs them: real processes, a real pod, real files."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from orchestrator.serving.server import socket_is_live
from tests.cli.helpers import pod

# The demo answers here are read, never interrupted while they stream (pause is only refused
# while idle).
pytestmark = pytest.mark.usefixtures("demo_at_once")


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
    assert len(rows) == 1 and rows[0]["items"] == 2
    assert (rows[0]["state"], rows[0]["pod"], rows[0]["title"]) == ("live", "demo", "first words")
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


def test_run_status_and_mcp_ls_say_which_grants_the_workspace_config_could_not_give(
    env: dict[str, str], workspace: Path
) -> None:
    (workspace / ".pod").mkdir()
    (workspace / ".pod" / "config.toml").write_text("allow_bash = true\n")
    warning = f"{workspace / '.pod' / 'config.toml'} sets allow_bash, which only you can choose"
    done = pod(env, "run", "hello", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "allow_bash" in line]
    assert len(lines) == 1, done.stderr
    line = lines[0]
    assert line.startswith(f"pod: warning: {warning}") and "pass --allow-bash" in line
    again = pod(env, "run", "hello again", "--workspace", str(workspace))  # a pod already there
    assert [line for line in again.stderr.splitlines() if "allow_bash" in line] == [line]
    status = pod(env, "status", "--workspace", str(workspace))
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[0].startswith("ws idle · scripted/")
    (shown_line,) = [line for line in status.stdout.splitlines() if "allow_bash" in line]
    assert shown_line.startswith(f"! warning: {warning}") and shown_line.endswith("config.toml.")
    shown = json.loads(pod(env, "status", "--workspace", str(workspace), "--json").stdout)
    assert [w[: len(warning)] for w in shown["config_warnings"]] == [warning]
    # pod mcp ls says it too, asking the running pod or starting the servers itself.
    mcp_ls = pod(env, "mcp", "ls", "--workspace", str(workspace))
    assert [w for w in mcp_ls.stderr.splitlines() if "allow_bash" in w] == [line]
    pod(env, "shutdown", "--workspace", str(workspace))
    alone = pod(env, "mcp", "ls", "--workspace", str(workspace))
    assert [w for w in alone.stderr.splitlines() if "allow_bash" in w] == [line]


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


COMMANDS_WITH_WORKSPACE = [
    ("run", "hi"),
    ("chat",),
    ("serve",),
    ("status",),
    ("history",),
    ("pause",),
    ("resume",),
    ("cancel",),
    ("shutdown",),
    ("sessions", "ls"),
    ("sessions", "show"),
    ("sessions", "export"),
    ("sessions", "title", "name", "a title"),
    ("knowledge", "lint"),
]


@pytest.mark.parametrize("command", COMMANDS_WITH_WORKSPACE, ids=" ".join)
def test_a_workspace_that_is_a_file_is_one_line(
    env: dict[str, str], tmp_path: Path, command: tuple[str, ...]
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder\n")
    done = pod(env, *command, "--workspace", str(a_file))
    assert (done.returncode, done.stderr) == (
        1,
        f"pod: error: workspace {a_file} is not a directory\n",
    )
    missing = pod(env, *command, "--workspace", str(tmp_path / "gone"))
    assert missing.stderr == f"pod: error: workspace {tmp_path / 'gone'} does not exist\n"


def _all_help_pages(env: dict[str, str]) -> dict[str, str]:
    pages = {"": pod(env, "--help").stdout}
    for group in ("sessions", "knowledge", "protocol"):
        pages[group] = pod(env, group, "--help").stdout
    names = [
        "chat", "attach", "serve", "run", "status", "ls", "history", "pause", "resume",
        "cancel", "shutdown", "diagram", "conformance", "sessions ls", "sessions show",
        "sessions export", "sessions title", "knowledge lint", "protocol schema",
    ]  # fmt: skip
    for name in names:
        pages[name] = pod(env, *name.split(), "--help").stdout
    return pages


def test_flags_read_as_flags_in_help(env: dict[str, str]) -> None:
    pages = _all_help_pages(env)
    assert all("--help" in page for page in pages.values()), pages
    assert {name for name, page in pages.items() if "<bool>" in page} == set()
    assert "--json " in pages["history"] and "--allow-bash" in pages["run"]


def _box_rows(page: str, title: str) -> list[str]:
    """The rows inside one ``╭─ title ─╮`` box of a help page, without the borders."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"╭─ {title} "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("╰"))
    return [line[1:-1] for line in lines[start + 1 : end]]


@pytest.mark.parametrize("group", ["", "sessions"])
def test_command_summaries_wrap_only_where_the_width_ends(env: dict[str, str], group: str) -> None:
    page = pod({**env, "COLUMNS": "80"}, *group.split(), "--help").stdout
    rows = _box_rows(page, "Commands")
    indent = len(rows[0]) - len(rows[0].split(maxsplit=1)[1])  # where summaries begin
    for row, following in itertools.pairwise(rows):
        if following[:indent].strip():
            continue  # the next row is the next command
        # A continuation row: its first word did not fit at the end of this row.
        room = len(row) - 1 - len(row.rstrip())
        assert len(following.split()[0]) + 1 > room, f"{row!r} then {following!r}"
    summaries = " ".join(" ".join(row.split()) for row in rows)
    assert ("pods running as processes of their own" in summaries) == (group == "")


def test_serve_takes_new_and_chat_shows_continue(env: dict[str, str], workspace: Path) -> None:
    both = pod(env, "serve", "--new", "--continue", "--workspace", str(workspace))
    assert (both.returncode, both.stderr) == (
        1,
        "pod: error: --new starts a new session; it cannot be combined with --continue or "
        "--session\n",
    )
    assert "--new" in pod(env, "serve", "--help").stdout
    assert "--continue" in pod(env, "chat", "--help").stdout


def test_a_value_after_a_flag_gets_a_hint(env: dict[str, str]) -> None:
    done = pod(env, "history", "--json", "true")
    assert done.returncode == 1
    assert done.stderr == (
        "pod: error: no pod named 'true' is running (see `pod ls`) "
        "(flags such as --json take no value)\n"
    )


def test_version(env: dict[str, str]) -> None:
    from importlib.metadata import version

    done = pod(env, "--version")
    assert (done.returncode, done.stdout) == (0, f"pod {version('pod-orchestrator')}\n")


def test_background_logs_and_sessions_are_private(env: dict[str, str], workspace: Path) -> None:
    old = os.umask(0o022)  # a usual umask: files would come out 0644
    try:
        assert pod(env, "run", "hello", "--workspace", str(workspace)).returncode == 0
    finally:
        os.umask(old)
    (log,) = (Path(env["XDG_RUNTIME_DIR"]) / "pod").glob("*.log")
    (session,) = Path(env["XDG_STATE_HOME"], "pod", "sessions").glob("*/*.jsonl")
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in (log, session)} == {
        log.name: "0o600",
        session.name: "0o600",
    }


def test_serve_listens_on_the_configured_socket(
    env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    socket = short_dir / "pod" / "configured.sock"
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'socket = "{socket}"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(400):
            if socket_is_live(socket) or proc.poll() is not None:
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert socket_is_live(socket), proc.stderr
        assert pod(env, "shutdown", "--socket", str(socket)).returncode == 0
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert f"listening on {socket} " in err


@pytest.fixture
def small_window(workspace: Path) -> None:
    """A workspace whose model window is small enough to compact after a few turns."""
    (workspace / ".pod").mkdir(exist_ok=True)
    (workspace / ".pod" / "config.toml").write_text(
        "context_window = 20000\ncompact_keep_tokens = 100\n"
    )


def test_compact_prints_what_it_saved_and_status_shows_the_context(
    env: dict[str, str], small_window: None, served: Path
) -> None:
    early = pod(env, "compact", "--socket", str(served))
    assert (early.returncode, early.stdout) == (0, "nothing to compact yet\n"), early.stderr
    for n in range(3):
        words = " ".join(f"word{n}{i}" for i in range(200))
        assert pod(env, "run", words, "--socket", str(served)).returncode == 0
    done = pod(env, "compact", "--focus", "the word lists", "--socket", str(served))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("compacted items 1-") and " tokens" in done.stdout
    saved = re.search(r": ([\d,]+) → ([\d,]+) tokens", done.stdout)
    assert saved is not None
    before, after = (int(n.replace(",", "")) for n in saved.groups())
    assert after < before
    shown = pod(env, "status", "--socket", str(served)).stdout.splitlines()
    assert shown[0].startswith("demo idle · scripted/")
    assert shown[2].startswith("context ") and "of 20,000 tokens" in shown[2]
    assert "compacts at 80%" in shown[2]
    history = json.loads(pod(env, "history", "--socket", str(served), "--json").stdout)
    assert [i["kind"] for i in history].count("compaction") == 1


# -- paths that are not regular files (issue 28) ---------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "sparse"])
def test_a_session_that_is_not_a_regular_file_is_one_error_at_once(
    env: dict[str, str], workspace: Path, tmp_path: Path, kind: str
) -> None:
    session = tmp_path / f"{kind}.jsonl"
    if kind == "fifo":
        os.mkfifo(session)
    elif kind == "dev-zero":
        session.symlink_to("/dev/zero")
    elif kind == "directory":
        session.mkdir()
    else:
        with session.open("wb") as f:
            f.truncate(2 << 30)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace),
         "--provider", "scripted", "--session", str(session),
         "--socket", str(tmp_path / "p.sock")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    guard = threading.Timer(20, proc.kill)  # a regression must fail the test, not hang it
    guard.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)  # its own peak memory, not the test's
    finally:
        guard.cancel()
        if proc.poll() is None and proc.returncode is None:
            proc.kill()
    assert os.waitstatus_to_exitcode(status) != 0
    err = proc.stderr.read().decode() if proc.stderr else ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("pod: error:"), err
    assert str(session) in lines[0]
    # A forked child's peak counts the pages it shared with this (large) test process before
    # exec; a child that does nothing sets that baseline.
    idle = subprocess.Popen([sys.executable, "-c", "pass"])
    _, _, baseline = os.wait4(idle.pid, 0)
    idle.returncode = 0
    assert usage.ru_maxrss - baseline.ru_maxrss < 200 * 1024  # KiB: nothing was read in


def test_a_workspace_config_that_is_a_fifo_is_one_error_at_once(
    env: dict[str, str], workspace: Path
) -> None:
    (workspace / ".pod").mkdir(exist_ok=True)
    os.mkfifo(workspace / ".pod" / "config.toml")
    started = pod(env, "run", "hi", "--workspace", str(workspace), timeout=20)
    assert started.returncode != 0
    assert "not a regular file (FIFO)" in started.stderr, started.stderr


def test_mode_prints_and_switches_the_permission_mode(env: dict[str, str], served: Path) -> None:
    where = ("--socket", str(served))
    assert pod(env, "mode", *where).stdout.strip() == "default"
    assert pod(env, "mode", "plan", *where).stdout.strip() == "plan"
    status = json.loads(pod(env, "status", *where, "--json").stdout)
    assert status["permission_mode"] == "plan"
    assert "mode plan" in pod(env, "status", *where).stdout
    wider = pod(env, "mode", "yolo", *where)
    assert wider.returncode != 0 and "wider than this pod's configuration" in wider.stderr
    unknown = pod(env, "mode", "planning", *where)
    assert unknown.returncode != 0 and "accept-edits" in unknown.stderr
    assert pod(env, "mode", "default", *where).stdout.strip() == "default"
