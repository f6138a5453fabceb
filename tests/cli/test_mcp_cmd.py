"""``pod mcp ls`` as a person runs it, on a real MCP server from PyPI and a broken one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.helpers import pod


def user_config(env: dict[str, str], more: str) -> None:
    """The user's config: the time server from PyPI, then ``more``."""
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[mcp.servers.time]\ncommand = "{sys.executable}"\nargs = ["-m", "mcp_server_time"]\n'
        + more
    )


def test_mcp_ls_lists_tools_and_names_a_broken_server(env: dict[str, str], workspace: Path) -> None:
    user_config(
        env,
        'deny = ["convert_time"]\n'
        '[mcp.servers.broken]\ncommand = "sh"\nargs = ["-c", "echo missing token >&2; exit 2"]\n',
    )
    shown = pod(env, "mcp", "ls", "--workspace", str(workspace))
    assert shown.returncode == 1
    assert shown.stdout.splitlines()[:3] == [
        "time: running",
        "  mcp__time__convert_time  (not offered)",
        "  mcp__time__get_current_time",
    ]
    assert shown.stdout.splitlines()[3].startswith("broken: failed")
    assert "missing token" in shown.stderr
    data = json.loads(pod(env, "mcp", "ls", "--json", "--workspace", str(workspace)).stdout)
    assert [s["name"] for s in data["servers"]] == ["time", "broken"]


def test_mcp_ls_with_nothing_configured(env: dict[str, str], workspace: Path) -> None:
    shown = pod(env, "mcp", "ls", "--workspace", str(workspace))
    assert (shown.returncode, shown.stdout) == (0, "no MCP servers configured (see docs/mcp.md)\n")


def test_mcp_ls_asks_the_running_pod(env: dict[str, str], workspace: Path, short_dir: Path) -> None:
    import subprocess

    from orchestrator.serving.server import socket_is_live

    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    # The marker file proves the listing came from the pod's server, not one started here.
    marker = workspace.parent / "starts"
    config.write_text(
        f'[mcp.servers.time]\ncommand = "sh"\n'
        f'args = ["-c", "echo started >> {marker}; exec {sys.executable} -m mcp_server_time"]\n'
        '[mcp.servers.off]\ncommand = "true"\nenabled = false\n'
    )
    socket = short_dir / "pod" / "live.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--name", "live",
         "--socket", str(socket)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(400):
            if socket_is_live(socket):
                break
            subprocess.run(["sleep", "0.05"], check=True)
        shown = pod(env, "mcp", "ls", "--workspace", str(workspace))
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.splitlines() == [
            "MCP servers of the running pod live:",
            "time: running",
            "  mcp__time__convert_time",
            "  mcp__time__get_current_time",
            "off: disabled",
        ]
        data = json.loads(pod(env, "mcp", "ls", "--json", "--socket", str(socket)).stdout)
        assert data["pod"] == "live" and data["servers"][0]["restarts"] == 0
        assert marker.read_text() == "started\n"
        status = pod(env, "status", "--socket", str(socket)).stdout
        assert "mcp time: running, 2 tools offered" in status
    finally:
        pod(env, "shutdown", "--socket", str(socket), timeout=20)
        proc.wait(20)


def test_mcp_login_names_what_cannot_sign_in(env: dict[str, str], workspace: Path) -> None:
    user_config(env, '[mcp.servers.down]\nurl = "http://127.0.0.1:9/mcp"\n')
    where = ["--workspace", str(workspace)]
    missing = pod(env, "mcp", "login", "nope", *where)
    assert (missing.returncode, missing.stderr) == (
        1,
        "pod: error: no MCP server is named 'nope' in the config (the servers: down, time)\n",
    )
    stdio = pod(env, "mcp", "login", "time", *where)
    assert stdio.stderr == (
        "pod: error: MCP server time is a stdio server: only HTTP servers sign in\n"
    )
    down = pod(env, "mcp", "login", "down", *where)
    assert down.returncode == 1
    assert down.stderr.startswith("pod: error: could not sign in to MCP server down: ")
