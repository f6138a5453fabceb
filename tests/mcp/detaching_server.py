"""A stdio MCP server whose ``detach`` tool starts ``setsid sleep SECONDS``: a child in a
session of its own, out of the server's process group, that nothing but a supervisor which
tracks descendants can find. ``python -m tests.mcp.detaching_server``"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer


def config() -> dict[str, Any]:
    """An ``[mcp.servers.<name>]`` entry that runs this server (its tool allowed)."""
    return {
        "command": sys.executable,
        "args": ["-m", "tests.mcp.detaching_server"],
        "cwd": str(Path(__file__).resolve().parents[2]),
        "permission": "allow",
    }


def main() -> None:
    """Serve on stdio."""
    server = MCPServer("detaching")

    @server.tool()
    def detach(seconds: int) -> str:
        """Start ``setsid sleep SECONDS``, detached from the server's pipes."""
        child = subprocess.Popen(
            ["setsid", "sleep", str(seconds)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return f"started {child.pid}"

    server.run("stdio")


if __name__ == "__main__":
    main()
