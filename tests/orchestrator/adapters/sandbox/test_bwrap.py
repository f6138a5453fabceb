"""The sandbox's command line (pure) and what it does, run with the real ``bwrap``."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.adapters.sandbox.bwrap import (
    PROXY_INSIDE,
    SandboxSpec,
    SandboxUnavailable,
    find_bwrap,
    hidden_paths,
    sandbox_argv,
)
from orchestrator.adapters.sandbox.hints import sandbox_hint
from orchestrator.capabilities.permissions import Policy
from orchestrator.config.permissions import PermissionsConfig
from orchestrator.core.hosts import loopback_forwards, parse_host_rule


def _bwrap() -> str:
    try:
        return find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")


def _run(spec: SandboxSpec, script: str) -> subprocess.CompletedProcess[str]:
    argv = sandbox_argv(_bwrap(), spec, ["/bin/bash", "-c", script])
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture
def spec(tmp_path: Path) -> SandboxSpec:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET KEY\n")
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    return SandboxSpec(
        workspace=workspace,
        hidden=hidden_paths(home, tmp_path / "state", tmp_path / "run", tmp_path / "cfg"),
        read_only=(workspace / ".git",),
    )


def test_the_root_is_read_only_and_the_workspace_writable(spec: SandboxSpec) -> None:
    done = _run(spec, "touch /etc/pod-sandbox-x; echo rc=$?; echo hi > made.txt")
    assert "Read-only file system" in done.stderr and "rc=1" in done.stdout
    assert (spec.workspace / "made.txt").read_text() == "hi\n"
    assert not Path("/etc/pod-sandbox-x").exists()


def test_outside_the_workspace_is_read_only_and_tmp_is_private(
    spec: SandboxSpec, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    done = _run(spec, f"echo x > {outside}/f; echo rc=$?; echo t > /tmp/t; cat /tmp/t")
    assert "rc=1" in done.stdout and "t\n" in done.stdout
    assert not (outside / "f").exists()


def test_secrets_and_git_are_out_of_reach(spec: SandboxSpec, tmp_path: Path) -> None:
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    done = _run(spec, f"cat {key}; echo rc=$?; touch .git/hooks-x; echo git=$?")
    assert "SECRET" not in done.stdout and "rc=1" in done.stdout
    assert "git=1" in done.stdout and not (spec.workspace / ".git" / "hooks-x").exists()


def test_there_is_no_network(spec: SandboxSpec) -> None:
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        done = _run(spec, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
        assert "connected" not in done.stdout and done.returncode != 0
        opened = _run(
            SandboxSpec(workspace=spec.workspace, network=True),
            f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected",
        )
        assert "connected" in opened.stdout  # allowed by config, it connects
    finally:
        server.close()


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside /tmp (which the sandbox hides as a whole, so what lies there needs no
    mount of its own)."""
    base = Path(tempfile.mkdtemp(prefix="podt", dir="/var/tmp"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_the_order_of_mounts_is_the_policy(outside_tmp: Path) -> None:
    tmp_path = outside_tmp
    home = tmp_path / "home"
    ws = home  # a workspace that contains the hidden places
    for folder in (ws / ".git", home / ".ssh", home / ".cargo" / "bin", tmp_path / "state"):
        folder.mkdir(parents=True)
    args = sandbox_argv(
        "bwrap",
        SandboxSpec(
            workspace=ws,
            home=home,
            home_readable=(home / ".cargo" / "bin",),
            hidden=(home / ".ssh", tmp_path / "state"),
            read_only=(ws / ".git",),
        ),
        ["true"],
    )
    # $HOME private first, the workspace over it, then the secret hidden and .git read-only
    # over that: the most specific path wins, whatever was listed first.
    private = args.index(str(home), args.index("/tmp") + 1)
    bind = args.index("--bind")
    ssh = args.index(str(home / ".ssh"))
    git = args.index(str(ws / ".git"))
    assert args[private - 1] == "--tmpfs" and args[ssh - 1] == "--tmpfs"
    assert private < bind < min(ssh, git) and "--unshare-net" in args
    assert args[args.index(str(tmp_path / "state")) - 1] == "--tmpfs"
    # A toolchain's programs stay read-only in a workspace that contains them, and the folder
    # holding them cannot be renamed away.
    cargo = args.index(str(home / ".cargo" / "bin"))
    assert args[cargo - 1 : cargo + 1] == ["--ro-bind", str(home / ".cargo" / "bin")]
    assert args[args.index(str(home / ".cargo")) - 1] == "--bind" and cargo > bind
    assert args[-2:] == ["--", "true"]


def test_a_failure_that_looks_like_the_sandbox_gets_a_hint() -> None:
    assert sandbox_hint("touch: cannot touch '/etc/x': Read-only file system", 1) is not None
    hint = sandbox_hint("curl: (6) Could not resolve host: example.com", 6)
    assert hint is not None and "network" in hint and "sandbox: false" in hint
    assert sandbox_hint("Read-only file system", 0) is None
    assert sandbox_hint("error: tests failed", 1) is None


def test_a_refusal_of_the_proxy_is_said_even_when_the_command_went_on() -> None:
    hint = sandbox_hint("done\n", 0, refused=["evil.example:443"], proxied=True)
    assert hint is not None
    assert hint.startswith("[blocked by the sandbox: evil.example:443 not in [sandbox] network")
    assert "network only to the hosts of [sandbox] network" in hint
    # A program that ignored the proxy variables tried to resolve a name itself.
    direct = sandbox_hint("Could not resolve host: pypi.org", 6, proxied=True)
    assert direct is not None and "did not go through the pod's proxy" in direct
    # A refusal the proxy gave to another tag (a background job) is still recognised.
    other = sandbox_hint("curl: (56) CONNECT tunnel failed, response 403", 56, proxied=True)
    assert other is not None and "a host not in [sandbox] network" in other
    assert sandbox_hint("curl: (56) CONNECT tunnel failed, response 403", 56) is None


def test_the_proxy_is_bound_in_and_the_command_runs_behind_the_bridge(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    proxied = SandboxSpec(workspace=ws, proxy=tmp_path / "proxy")
    args = sandbox_argv("bwrap", proxied, ["/bin/bash", "-c", "true"], tag="call-7")
    assert "--unshare-net" in args
    mount = args.index(str(PROXY_INSIDE))
    assert args[mount - 2 : mount] == ["--ro-bind", str(tmp_path / "proxy")]
    command = args[args.index("--") + 1 :]
    bridge = str(PROXY_INSIDE / "bridge.pyc")  # the proxy's copy: seen wherever the pod lies
    assert command[:4] == [sys.executable, "-I", "-S", bridge]
    assert command[command.index("--tag") + 1] == "call-7"
    assert command[-4:] == ["--", "/bin/bash", "-c", "true"]
    # The allowed loopback ports the bridge listens on inside, on its command line.
    forwards = loopback_forwards([parse_host_rule("127.0.0.1:8080"), parse_host_rule("[::1]:53")])
    forwarded = sandbox_argv("bwrap", replace(proxied, forwards=forwards), ["true"], tag="t")
    bridge_argv = forwarded[forwarded.index("--") + 1 :]
    assert bridge_argv[bridge_argv.index("--tag") + 2 :] == [
        "--forward", "[::1]:53=[::1]:53", "--forward", "127.0.0.1:8080=127.0.0.1:8080",
        "--", "true",
    ]  # fmt: skip
    # The whole network needs no proxy; without a proxy, no bridge.
    opened = sandbox_argv("bwrap", replace(proxied, network=True), ["true"])
    assert "--unshare-net" not in opened and bridge not in opened
    assert bridge not in sandbox_argv("bwrap", SandboxSpec(workspace=ws), ["true"])


def test_sandboxed_commands_run_without_asking_only_where_the_mode_says() -> None:
    bash = {"command": "make test"}
    edits = Policy.from_config(PermissionsConfig(mode="accept-edits"))
    assert edits.decide("bash", "execute", bash).verdict == "ask"  # no sandbox here yet
    edits.sandboxed = True
    assert edits.decide("bash", "execute", bash).verdict == "allow"
    # Leaving the sandbox always asks, even where rules or the mode would allow.
    outside = {"command": "make test", "sandbox": False}
    assert edits.decide("bash", "execute", outside).verdict == "ask"
    yolo = Policy.from_config(PermissionsConfig(mode="yolo", allow=["bash"]))
    yolo.sandboxed = True
    assert yolo.decide("bash", "execute", outside).verdict == "ask"
    default = Policy.from_config(PermissionsConfig(mode="default"))
    default.sandboxed = True
    assert default.decide("bash", "execute", bash).verdict == "ask"
    opted = Policy.from_config(PermissionsConfig(mode="default", sandboxed_bash="allow"))
    opted.sandboxed = True
    assert opted.decide("bash", "execute", bash).verdict == "allow"
    # Deny rules still deny inside the sandbox.
    strict = Policy.from_config(PermissionsConfig(mode="accept-edits", deny=["bash(rm:*)"]))
    strict.sandboxed = True
    assert strict.decide("bash", "execute", {"command": "rm -rf x"}).verdict == "deny"


def test_the_pods_own_installation_under_tmp_stays_visible() -> None:
    from orchestrator.adapters.sandbox.bwrap import installation_under

    install = Path(tempfile.mkdtemp(prefix="pod-install-", dir="/tmp"))
    try:
        places = (Path("/tmp"),)
        found = installation_under((install / ".venv", install, Path("/usr"), Path("/tmp")), places)
        assert found == (install,)  # outermost only; /tmp itself and others are not bound
        argv = sandbox_argv("bwrap", SandboxSpec(workspace=Path("/w"), installation=found), ["x"])
        tmpfs = argv.index("--tmpfs")
        assert argv[tmpfs : tmpfs + 5] == [
            "--tmpfs",
            "/tmp",
            "--ro-bind",
            str(install),
            str(install),
        ]
    finally:
        shutil.rmtree(install)
