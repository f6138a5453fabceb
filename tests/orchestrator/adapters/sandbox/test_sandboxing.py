"""A pod's sandbox as it wraps commands, with the real ``bwrap``: the protected paths of the
permissions table read-only at any depth, the deny rules' paths hidden or read-only, and
hidden symlinks resolved (or said once)."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from orchestrator.adapters.sandbox.bwrap import SandboxUnavailable, find_bwrap
from orchestrator.adapters.sandbox.sandboxing import Sandboxing, open_sandboxing, sandbox_spec
from orchestrator.capabilities.permissions.protected import PROTECTED_FILES, protected_names
from orchestrator.capabilities.tools.base import ToolOutput
from orchestrator.config.model import PodConfig


def _bwrap() -> str:
    try:
        return find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")


def _sandboxing(workspace: Path, **config: object) -> Sandboxing:
    _bwrap()
    pod = PodConfig(workspace=workspace, name="t", provider="scripted", **config)  # type: ignore[arg-type]
    return asyncio.run(open_sandboxing(pod))


def _run(sandboxing: Sandboxing, script: str) -> subprocess.CompletedProcess[str]:
    argv = sandboxing.argv(["/bin/bash", "-c", script])
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_every_protected_name_is_read_only_at_depth_two(tmp_path: Path) -> None:
    # Driven by the permissions table: a name added there is covered here, and this fails
    # if the sandbox stops using the table.
    workspace = tmp_path / "ws"
    deep = workspace / "one" / "two"
    deep.mkdir(parents=True)
    names = protected_names()
    lines = []
    for name in names:
        path = deep / name
        if name in PROTECTED_FILES:
            path.write_text("original\n")
            attempts = [f"echo pwned >> {name}", f"mv {name} {name}.old", f"rm -f {name}"]
        else:
            path.mkdir()
            (path / "config").write_text("original\n")
            attempts = [
                f"echo pwned > {name}/planted",
                f"echo pwned >> {name}/config",
                f"mv {name} {name}.old",
                f"rm -rf {name}",
            ]
        lines += [f"{a} 2>/dev/null && echo 'ALLOWED: {a}'" for a in attempts]
    # Nor can the folders holding them be renamed away (the mounts would move with them).
    lines += ["cd ../..", "mv one one-old 2>/dev/null && echo 'ALLOWED: mv one'"]
    lines += ["mv one/two one/too 2>/dev/null && echo 'ALLOWED: mv two'"]
    done = _run(_sandboxing(workspace), "cd one/two\n" + "\n".join(lines))
    assert done.returncode == 0 or "ALLOWED" not in done.stdout, done.stderr
    assert "ALLOWED" not in done.stdout
    for name in names:
        path = deep / name
        content = path / "config" if name not in PROTECTED_FILES else path
        assert content.read_text() == "original\n", name
        if name not in PROTECTED_FILES:
            assert sorted(os.listdir(path)) == ["config"], name
    assert sorted(os.listdir(deep)) == sorted(names)  # nothing renamed away
    # The rest of the workspace stays writable.
    assert _run(_sandboxing(workspace), "echo ok > one/two/plain").returncode == 0


def test_the_pod_folder_cannot_be_renamed_away(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".pod").mkdir(parents=True)
    (workspace / ".pod" / "config.toml").write_text("[permissions]\n")
    done = _run(
        _sandboxing(workspace),
        "mv .pod .pod-old; echo mv=$?; mkdir -p .pod; echo 'mode = \"yolo\"' > .pod/config.toml",
    )
    assert "mv=1" in done.stdout and "busy" in done.stderr.lower()
    assert (workspace / ".pod" / "config.toml").read_text() == "[permissions]\n"
    assert not (workspace / ".pod-old").exists()


def test_a_git_made_by_one_command_is_read_only_for_the_next(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandboxing = _sandboxing(workspace)
    assert _run(sandboxing, "mkdir -p sub/.git && echo made > sub/.git/config").returncode == 0
    done = _run(sandboxing, "echo '[core] fsmonitor = evil' >> sub/.git/config; echo rc=$?")
    assert "rc=1" in done.stdout
    assert (workspace / "sub" / ".git" / "config").read_text() == "made\n"


def test_deny_rules_hold_inside_the_sandbox(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "secrets").mkdir(parents=True)
    (workspace / "secrets" / "k").write_text("TOPSECRET\n")
    (workspace / ".env").write_text("API_KEY=TOPSECRET\n")
    (workspace / "app").mkdir()
    (workspace / "app" / ".env").write_text("NESTED=TOPSECRET\n")
    (workspace / "locked").mkdir()
    (workspace / "locked" / "f").write_text("keep\n")
    sandboxing = _sandboxing(
        workspace,
        permissions={"deny": ["read(.env)", "read(secrets/**)", "write(locked/**)"]},
    )
    done = _run(
        sandboxing,
        "cat .env app/.env secrets/k; ls secrets; echo pwned > secrets/new; echo new=$?; "
        "echo pwned > locked/f; echo locked=$?; echo pwned > locked/g; echo g=$?; cat locked/f",
    )
    assert "TOPSECRET" not in done.stdout + done.stderr
    assert "locked=1" in done.stdout and "g=1" in done.stdout and "keep" in done.stdout
    # The hidden folder is an empty one: what is written there is thrown away.
    assert not (workspace / "secrets" / "new").exists()
    assert (workspace / "locked" / "f").read_text() == "keep\n"
    assert not (workspace / "locked" / "g").exists()


def test_a_symlinked_secret_hides_its_target_and_a_dangling_one_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ.get("POD_TEST_HOME_ROOT", "/var/tmp")) / f"podt-{os.getpid()}"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    try:
        (home / "dotfiles" / "aws").mkdir(parents=True)
        (home / "dotfiles" / "aws" / "credentials").write_text("AWSSECRET\n")
        (home / ".aws").symlink_to("dotfiles/aws")
        (home / ".kube").symlink_to("nowhere")
        (home / ".gnupg").symlink_to(".gnupg")
        workspace = home  # the workspace shows all of $HOME again: the targets must not
        config = PodConfig(workspace=workspace, name="t", provider="scripted")
        spec = sandbox_spec(config)
        assert (home / "dotfiles" / "aws").resolve() in spec.hidden
        sandboxing = _sandboxing(workspace)
        loop, problem = sandboxing.problems.messages  # in the order of HOME_SECRETS
        assert str(home / ".kube") in problem and "nowhere" in problem
        assert str(home / ".gnupg") in loop and "loops" in loop
        done = _run(sandboxing, f"cat ~/.aws/credentials {shlex.quote(str(home))}/dotfiles/aws/*")
        assert "AWSSECRET" not in done.stdout
        assert _run(sandboxing, "echo runs").stdout == "runs\n"
        said: list[str] = []
        sandboxing.problems.attach(said.append)
        sandboxing.problems.add(problem)  # found again: not said again
        assert said == [loop, problem]  # what was found before, then nothing twice
    finally:
        subprocess.run(["rm", "-rf", str(home)], check=False)


def test_a_readable_folder_planted_as_a_link_into_a_secret_shows_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / "notes").symlink_to(tmp_path / "home" / ".ssh")
    (tmp_path / "home" / ".local").mkdir()
    (tmp_path / "home" / ".local" / "bin").symlink_to(tmp_path / "home" / ".ssh")
    config = PodConfig(
        workspace=tmp_path,
        name="t",
        provider="scripted",
        sandbox={"readable": [str(tmp_path / "home" / "notes")]},  # type: ignore[arg-type]
    )
    spec = sandbox_spec(config)
    ssh = tmp_path / "home" / ".ssh"
    assert spec.readable == ()
    assert not [p for p in spec.home_readable if p == ssh or p.is_relative_to(ssh)]
    # Named inside the hidden place on purpose, it is shown.
    config.sandbox.readable = [tmp_path / "home" / ".ssh" / "config"]
    assert sandbox_spec(config).readable == (tmp_path / "home" / ".ssh" / "config",)


def test_extra_hidden_sockets_cannot_be_reached(tmp_path: Path) -> None:
    import socket

    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = workspace / ".pod.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    connect = (
        'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
        "s.connect('.pod.sock'); print('connected')\""
    )
    try:
        _bwrap()
        plain = asyncio.run(open_sandboxing(PodConfig(workspace=workspace, name="t")))
        assert "connected" in _run(plain, connect).stdout  # the test reaches it without
        config = PodConfig(workspace=workspace, name="t")
        hidden = asyncio.run(open_sandboxing(config, extra_hidden=[path, tmp_path / "fleet"]))
        done = _run(hidden, connect)
        assert "connected" not in done.stdout and "Connection refused" in done.stderr
        assert sandbox_spec(config, extra_hidden=[path]).hidden[-1] == path
    finally:
        server.close()


def test_write_roots_are_walked_for_protected_paths(tmp_path: Path) -> None:
    workspace, other, cache = tmp_path / "ws", tmp_path / "other", tmp_path / "cache"
    for folder in (workspace, other / ".git", cache / ".git"):
        folder.mkdir(parents=True)
    sandboxing = _sandboxing(
        workspace,
        write_roots=[other],
        sandbox={"writable": [str(cache)]},
    )
    done = _run(
        sandboxing,
        f"touch {other}/.git/hook; echo other=$?; touch {other}/f; echo plain=$?; "
        f"touch {cache}/.git/x; echo cache=$?",
    )
    assert "other=1" in done.stdout and "plain=0" in done.stdout
    assert "cache=0" in done.stdout  # a cache folder is not walked


def test_the_default_read_only_list_gives_way_where_you_chose_to_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = Path(os.environ.get("POD_TEST_HOME_ROOT", "/var/tmp")) / f"podw-{os.getpid()}"
    monkeypatch.setenv("HOME", str(home))
    try:
        for folder in (".cache/uv", ".config/nvim", ".cargo/bin"):
            (home / folder).mkdir(parents=True)
        config = PodConfig(
            workspace=home / ".config" / "nvim",
            name="t",
            provider="scripted",
            sandbox={"writable": [str(home / ".cache" / "uv")]},  # type: ignore[arg-type]
        )
        sandboxing = _sandboxing(config.workspace, sandbox=config.sandbox.model_dump())
        done = _run(sandboxing, "touch ~/.cache/uv/x ./init.lua ~/.cargo/bin/x; echo rc=$?")
        assert (home / ".cache" / "uv" / "x").exists()
        assert (home / ".config" / "nvim" / "init.lua").exists()
        assert "rc=1" in done.stdout and not (home / ".cargo" / "bin" / "x").exists()
    finally:
        subprocess.run(["rm", "-rf", str(home)], check=False)


def test_a_walk_just_made_is_not_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plant guard's snapshot walks the workspace just before the command: the mounts use
    # that walk (one walk per command, not two), and give the same read-only set.
    from orchestrator.adapters.sandbox import sandboxing as module
    from orchestrator.adapters.sandbox.protected_scan import scan_protected

    workspace = tmp_path / "ws"
    (workspace / "sub" / ".git").mkdir(parents=True)
    (workspace / ".pod").mkdir()
    sandboxing = _sandboxing(workspace)
    fresh = sandboxing.command_spec()
    walked: list[Path] = []

    def counting(root: Path, **kwargs: object) -> object:
        walked.append(root)
        return scan_protected(root, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "scan_protected", counting)
    given = scan_protected(sandboxing.spec.workspace)
    assert sandboxing.command_spec(scan=given) == fresh
    assert walked == []
    # A walk of another folder is not taken for the workspace's.
    other = scan_protected(tmp_path)
    assert sandboxing.command_spec(scan=other) == fresh
    assert walked == [sandboxing.spec.workspace]


async def test_a_sandboxed_command_walks_the_workspace_once_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.adapters.sandbox import plant_snapshot
    from orchestrator.adapters.sandbox import sandboxing as module
    from orchestrator.adapters.sandbox.plant_guard import PlantGuard
    from orchestrator.adapters.sandbox.protected_scan import scan_protected
    from orchestrator.adapters.sandbox.quarantine import HoldingArea
    from orchestrator.adapters.scoped_fs import ScopedFS
    from orchestrator.capabilities.tools.base import ToolContext
    from orchestrator.capabilities.tools.bash import BashTool

    _bwrap()
    workspace = (tmp_path / "ws").resolve()
    (workspace / ".git").mkdir(parents=True)
    pod = PodConfig(workspace=workspace, name="t", provider="scripted")
    sandboxing = await open_sandboxing(pod)
    walked: list[str] = []

    def counting(who: str) -> object:
        def scan(root: Path, **kwargs: object) -> object:
            walked.append(who)
            return scan_protected(root, **kwargs)  # type: ignore[arg-type]

        return scan

    monkeypatch.setattr(module, "scan_protected", counting("mounts"))
    monkeypatch.setattr(plant_snapshot, "scan_protected", counting("snapshot"))
    tool = BashTool(sandbox=True)
    tool.sandboxing = sandboxing
    tool.planting = PlantGuard(workspace, HoldingArea(tmp_path / "held"))
    ctx = ToolContext(fs=ScopedFS(workspace), workspace=workspace, scratch_dir=tmp_path / "s")
    try:
        output = await tool.run({"command": "echo pwned >> .git/config; echo ran"}, ctx)
    finally:
        await tool.aclose()
        await sandboxing.aclose()
    assert isinstance(output, ToolOutput)
    assert "ran" in (output.content or "")
    assert not (workspace / ".git" / "config").exists()  # the mounts were made of the walk
    assert walked == ["snapshot", "snapshot"]  # before and after: the mounts used the first
