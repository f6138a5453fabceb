"""``pod run "/review src/app.py"``: the pod expands a custom command for the CLI as for any
client, and a /x that names no command is sent as typed."""

from __future__ import annotations

from pathlib import Path

from orchestrator.adapters.session import load_session, sessions_dir
from tests.claude_dirs import claude_dirs_on
from tests.cli.helpers import pod, scripted_pod


def test_pod_run_sends_a_commands_expansion(env: dict[str, str], workspace: Path) -> None:
    home = workspace.parent / "home"
    home.mkdir()
    env = {**env, "HOME": str(home)}
    claude_dirs_on(env["XDG_CONFIG_HOME"])
    folder = workspace / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text("Review $1, and only $1.")
    with scripted_pod(env, workspace, [{"text": "done"}, {"text": "done"}]) as socket:
        first = pod(env, "run", "/review src/app.py", "--socket", str(socket))
        assert first.returncode == 0, first.stderr
        second = pod(env, "run", "/unknown thing", "--socket", str(socket))
        assert second.returncode == 0, second.stderr
    [session] = sessions_dir(workspace).glob("*.jsonl")
    texts = [i.text for i in load_session(session).items if i.kind == "user_message"]
    assert texts == ["Review src/app.py, and only src/app.py.", "/unknown thing"]
