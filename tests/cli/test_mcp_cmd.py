"""``pod mcp ls`` as a person runs it, on a real MCP server from PyPI and a broken one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.helpers import pod


def test_mcp_ls_lists_tools_and_names_a_broken_server(env: dict[str, str], workspace: Path) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'[mcp.servers.time]\ncommand = "{sys.executable}"\nargs = ["-m", "mcp_server_time"]\n'
        'deny = ["convert_time"]\n'
        '[mcp.servers.broken]\ncommand = "sh"\nargs = ["-c", "echo missing token >&2; exit 2"]\n'
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
