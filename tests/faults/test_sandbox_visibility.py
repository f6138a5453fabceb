"""What a sandboxed command can see and write, attacked through a real pod: a workspace that
contains ``$HOME``, credential files, the rest of ``$HOME``, a symlinked secret folder, and
deny rules against ``cat`` and ``echo >``. Each of these failed before the mount plan
(hidden paths were mounted before the workspace, ``$HOME`` was readable, a symlinked hidden
folder made bubblewrap fail, and deny rules were not in the sandbox at all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.adapters.sandbox.bwrap import SandboxUnavailable, find_bwrap
from orchestrator.config.loading import load_config
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.faults.sandbox_home import UserHome, user_home  # noqa: F401

USER_CONFIG = '[sandbox]\nmode = "on"\n\n[permissions]\nsandboxed_bash = "allow"\n'

CREDENTIALS = (
    ".claude/.credentials.json",
    ".config/git/credentials",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".bash_history",
    ".zsh_history",
    ".python_history",
)


def _needs_bwrap() -> None:
    try:
        find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")


async def _run_commands(
    user: UserHome, workspace: Path, *commands: str, alerts: list[str] | None = None
) -> list[str]:
    """Each command through the pod's ``bash`` (sandboxed, unasked): its output, in order;
    the pod's sandbox alerts into ``alerts``."""
    calls = [
        ScriptedToolCall(name="bash", input={"command": c}, id=f"call-{n}")
        for n, c in enumerate(commands)
    ]
    replies = [ScriptedReply(text="Running.", tool_calls=calls), ScriptedReply(text="Done.")]
    config = load_config(workspace, name="t", provider="scripted")
    async with running_pod(workspace, user.runtime, replies=replies, loaded=config) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=60)
        history = await client.history()
        await client.close()
    if alerts is not None:
        alerts += [a.message for a in history.alerts if a.source == "sandbox"]
    assert events[-1].data["result"] == "finished"
    assert not [e for e in events if e.event == "approval_request"]  # none asked
    # The calls run concurrently: their results come in any order.
    outputs = {
        e.data["id"]: e.data.get("content") or "" for e in events if e.event == "tool_result"
    }
    return [outputs[f"call-{n}"] for n in range(len(commands))]


async def test_a_workspace_that_is_home_keeps_secrets_config_and_state_hidden(
    user_home: UserHome,  # noqa: F811
) -> None:
    _needs_bwrap()
    home = user_home.home
    user_config = user_home.write_user_config(USER_CONFIG)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("SECRET-SSH-KEY\n")
    state = user_home.state / "pod"
    state.mkdir(parents=True, exist_ok=True)
    (state / "marker-of-the-state").write_text("sessions\n")
    for name in CREDENTIALS:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(f"SECRET-CREDENTIAL {name}\n")
    out = await _run_commands(
        user_home,
        home,
        "cat ~/.ssh/id_rsa",
        "echo 'mode = \"yolo\"' >> ~/.config/pod/config.toml; echo appended=$?",
        "echo ssh-ed25519 AAAA attacker >> ~/.ssh/authorized_keys; echo wrote=$?",
        "ls -A ~/.local/state/pod | wc -l; cat ~/.local/state/pod/marker-of-the-state",
        "cat " + " ".join(f"~/{name}" for name in CREDENTIALS),
        "echo made > in-the-workspace.txt",
    )
    assert "SECRET-SSH-KEY" not in out[0]
    assert user_config.read_text() == USER_CONFIG
    assert not (home / ".ssh" / "authorized_keys").exists()
    assert out[3].startswith("0\n") and "sessions" not in out[3]
    assert "SECRET-CREDENTIAL" not in out[4]
    assert (home / "in-the-workspace.txt").read_text() == "made\n"  # it is the workspace


async def test_a_workspace_that_is_home_cannot_replace_what_runs_later(
    user_home: UserHome,  # noqa: F811
) -> None:
    _needs_bwrap()
    home = user_home.home
    user_config = user_home.write_user_config(USER_CONFIG)
    (home / ".gitconfig").write_text("[user]\n\tname = me\n")
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "git").write_text("#!/bin/sh\n")
    await _run_commands(
        user_home,
        home,
        # The folder holding the hidden config, renamed with the mount inside, and a new
        # config where the old one was.
        "mv ~/.config ~/.config-old; mkdir -p ~/.config/pod; "
        "echo 'mode = \"yolo\"' > ~/.config/pod/config.toml",
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> ~/.gitconfig",
        "echo 'touch /tmp/pwned' > ~/.local/bin/git; mv ~/.local ~/.local-old",
        "echo made > in-the-workspace.txt",
    )
    assert user_config.read_text() == USER_CONFIG
    assert not (home / ".config-old").exists() and not (home / ".local-old").exists()
    assert (home / ".gitconfig").read_text() == "[user]\n\tname = me\n"
    assert (home / ".local" / "bin" / "git").read_text() == "#!/bin/sh\n"
    assert (home / "in-the-workspace.txt").read_text() == "made\n"


async def test_home_beyond_the_default_list_is_not_visible(
    user_home: UserHome,  # noqa: F811
) -> None:
    _needs_bwrap()
    home = user_home.home
    user_home.write_user_config(USER_CONFIG)
    workspace = home / "projects" / "mine"
    workspace.mkdir(parents=True)
    (home / "projects" / "other").mkdir()
    (home / "projects" / "other" / "notes.txt").write_text("OTHER-PROJECT\n")
    (home / ".cargo" / "bin").mkdir(parents=True)
    tool = home / ".cargo" / "bin" / "hello-tool"
    tool.write_text("#!/bin/sh\necho tool-runs\n")
    tool.chmod(0o755)
    for name in CREDENTIALS:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(f"SECRET-CREDENTIAL {name}\n")
    out = await _run_commands(
        user_home,
        workspace,
        "cat ~/projects/other/notes.txt; ls ~/projects",
        "cat " + " ".join(f"~/{name}" for name in CREDENTIALS),
        "~/.cargo/bin/hello-tool",
    )
    assert "OTHER-PROJECT" not in out[0] and "other" not in out[0].replace("/other/", "")
    assert "SECRET-CREDENTIAL" not in out[1]
    assert "tool-runs" in out[2]  # the default list shows a toolchain's programs


@pytest.mark.parametrize(
    ("inside", "absolute"),
    [("", False), ("proj", True)],
    ids=["workspace-is-home,relative-link", "workspace-below,absolute-link"],
)
async def test_a_symlinked_aws_folder_breaks_nothing_and_stays_hidden(
    user_home: UserHome,  # noqa: F811
    inside: str,
    absolute: bool,
) -> None:
    _needs_bwrap()
    home = user_home.home
    (home / inside).mkdir(exist_ok=True)
    user_home.write_user_config(USER_CONFIG)
    (home / "dotfiles" / "aws").mkdir(parents=True)
    (home / "dotfiles" / "aws" / "credentials").write_text("AWS-SECRET\n")
    (home / ".aws").symlink_to(home / "dotfiles" / "aws" if absolute else Path("dotfiles/aws"))
    (home / ".kube").symlink_to("dotfiles/kube-not-there")
    alerts: list[str] = []
    out = await _run_commands(
        user_home,
        home / inside,
        "echo still-runs",
        "cat ~/.aws/credentials ~/dotfiles/aws/credentials",
        alerts=alerts,
    )
    assert out[0].startswith("still-runs")
    assert "AWS-SECRET" not in out[1]
    # The link that leads nowhere is said once, by its path and why; commands still run.
    [alert] = alerts
    assert str(home / ".kube") in alert and "kube-not-there" in alert


async def test_deny_rules_hold_for_sandboxed_commands(
    user_home: UserHome,  # noqa: F811
) -> None:
    _needs_bwrap()
    user_home.write_user_config(
        USER_CONFIG + 'deny = ["read(.env)", "read(secrets/**)", "write(secrets/**)"]\n'
    )
    workspace = user_home.home / "proj"
    (workspace / "secrets").mkdir(parents=True)
    (workspace / "secrets" / "k").write_text("SECRET-K\n")
    (workspace / ".env").write_text("SECRET-ENV\n")
    out = await _run_commands(
        user_home,
        workspace,
        "cat .env secrets/k",
        "echo pwned > secrets/k; echo wrote=$?",
        "echo fine > notes.txt",
    )
    assert "SECRET" not in out[0]
    assert (workspace / "secrets" / "k").read_text() == "SECRET-K\n"
    assert (workspace / "notes.txt").read_text() == "fine\n"
