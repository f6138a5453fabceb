"""``pod rewind`` and ``pod fork`` as a person runs them, against a real pod."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import pod

# The demo's replies are read for their prompts and files, never paused mid-stream.
pytestmark = pytest.mark.usefixtures("demo_at_once")


def prompts(env: dict[str, str], socket: Path) -> list[tuple[int, str]]:
    done = pod(env, "history", "--socket", str(socket), "--json")
    assert done.returncode == 0, done.stderr
    return [(i["seq"], i["text"]) for i in json.loads(done.stdout) if i["kind"] == "user_message"]


def test_rewind_previews_asks_for_yes_then_rewinds(env: dict[str, str], served: Path) -> None:
    for text in ("first prompt", "second prompt"):
        assert pod(env, "run", text, "--socket", str(served)).returncode == 0
    dry = pod(env, "rewind", "--conversation", "--dry-run", "--socket", str(served))
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[0].startswith("would rewind to before prompt")
    assert "'second prompt'" in dry.stdout
    assert len(prompts(env, served)) == 2
    refused = pod(env, "rewind", "--conversation", "--socket", str(served))
    assert refused.returncode == 1 and "pass --yes" in refused.stderr
    done = pod(env, "rewind", "--conversation", "--yes", "--socket", str(served))
    assert done.returncode == 0, done.stderr
    assert "rewound to before prompt" in done.stdout and "'second prompt'" in done.stdout
    assert [text for _, text in prompts(env, served)] == ["first prompt"]


def test_rewind_to_a_seq_that_is_no_prompt_is_one_line(env: dict[str, str], served: Path) -> None:
    assert pod(env, "run", "hello", "--socket", str(served)).returncode == 0
    done = pod(env, "rewind", "--to", "999", "--conversation", "--yes", "--socket", str(served))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "pod: error: invalid_request: cannot rewind to 999: there is no item 999 in the conversation "
        "(rewound already?); recent prompts: 1"
    ]


def test_fork_with_a_worktree_keeps_the_two_apart(
    env: dict[str, str], served: Path, workspace: Path, tmp_path: Path
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    subprocess.run(["git", "add", "-A"], cwd=workspace, check=True)
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start"],
        cwd=workspace,
        check=True,
    )
    (workspace / "README.md").write_text("# Demo\nchanged, not committed\n")
    (workspace / "new.txt").write_text("untracked\n")
    assert pod(env, "run", "hello", "--socket", str(served)).returncode == 0
    copy = tmp_path / "fork-ws"
    done = pod(env, "fork", "--name", "other way", "--worktree", str(copy), "--socket", str(served))
    assert done.returncode == 0, done.stderr
    assert "forked: session" in done.stdout and f"--workspace {copy}" in done.stdout
    assert (copy / "README.md").read_text() == "# Demo\nchanged, not committed\n"
    assert (copy / "new.txt").read_text() == "untracked\n"
    (copy / "new.txt").write_text("changed in the fork\n")
    assert (workspace / "new.txt").read_text() == "untracked\n"
    # The fork is a session of the worktree, forked from one of the original workspace's.
    [fork] = json.loads(pod(env, "sessions", "ls", "--workspace", str(copy), "--json").stdout)
    assert fork["title"] == "other way"
    rows = json.loads(pod(env, "sessions", "ls", "--workspace", str(workspace), "--json").stdout)
    assert fork["forked_from"] in {row["name"] for row in rows}


def test_a_fork_with_a_worktree_is_a_session_of_the_worktree(
    env: dict[str, str], served: Path, workspace: Path, tmp_path: Path
) -> None:
    # A folder that is no git repository: the copy is a plain copy.
    assert pod(env, "run", "remember the word tangerine", "--socket", str(served)).returncode == 0
    copy = tmp_path / "fork-ws"
    done = pod(env, "fork", "--worktree", str(copy), "--socket", str(served))
    assert done.returncode == 0, done.stderr
    fork = done.stdout.split("forked: session ", 1)[1].split()[0]

    listed = pod(env, "sessions", "ls", "--workspace", str(copy), "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert row["name"] == fork and row["forked_from"] and row["turns"] == 1
    original = json.loads(
        pod(env, "sessions", "ls", "--workspace", str(workspace), "--json").stdout
    )
    assert fork not in {r["name"] for r in original}
    # No pod runs in the copy yet: its own name will do there.
    assert f"continue it with: pod chat --workspace {copy} --session {fork}\n" in done.stdout

    assert pod(env, "shutdown", "--socket", str(served)).returncode == 0
    # As after a restart: nothing runs, and `pod run` in the copy continues the fork.
    again = pod(env, "run", "which word?", "--workspace", str(copy), "--no-host")
    assert again.returncode == 0, again.stderr
    history = pod(env, "history", "--workspace", str(copy), "--json")
    assert history.returncode == 0, history.stderr
    assert [i["text"] for i in json.loads(history.stdout) if i["kind"] == "user_message"] == [
        "remember the word tangerine",
        "which word?",
    ]
    status = json.loads(pod(env, "status", "--workspace", str(copy), "--json").stdout)
    assert Path(status["session"]).stem == fork


def test_the_preview_counts_lines_and_shows_a_named_path_escaped() -> None:
    from cli.commands.rewind import preview_text

    data = {
        "to": 3,
        "prompt": "make it so",
        "dropped": 4,
        "files": {
            "insertions": 3,
            "deletions": 4,
            "restored": ["src/app.py"],
            "deleted": ["evil\x1b]0;owned\x07.txt"],
            "left": {},
        },
    }
    lines = preview_text(data, done=False).splitlines()
    assert "  files: +3 -4 lines" in lines
    assert "    delete  evil\\x1b]0;owned\\x07.txt" in lines
