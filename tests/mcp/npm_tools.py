"""MCP programs from npm that nobody here wrote, and the Node.js they run on.

``.ci/run`` installs them when npm is there: Node 22 (the conformance suite needs it; ``node``
is a package on npm) into ``.cache/node22``, and the conformance suite and the reference
server into ``.cache/mcp-npm``, exporting ``POD_NODE22``, ``POD_MCP_CONFORMANCE`` and
``POD_MCP_EVERYTHING``. Without those variables the same places in the checkout are looked at,
then ``node`` on PATH; tests that need what is missing are skipped, saying what is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache"
PACKAGES = CACHE / "mcp-npm" / "node_modules" / "@modelcontextprotocol"
INSTALL = (
    "install them as .ci/run does: npm install --prefix .cache/node22 node@22; npm install "
    "--prefix .cache/mcp-npm @modelcontextprotocol/conformance@0.1.16 "
    "@modelcontextprotocol/server-everything@2026.8.31"
)


def _major(node: str) -> int:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    version = out.stdout.strip().lstrip("v")
    return int(version.split(".")[0]) if version[:1].isdigit() else 0


def node(minimum: int) -> str | None:
    """A ``node`` of at least this major version, or None."""
    candidates = [
        os.environ.get("POD_NODE22"),
        str(CACHE / "node22" / "node_modules" / ".bin" / "node"),
        shutil.which("node"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).exists() and _major(candidate) >= minimum:
            return candidate
    return None


def _script(variable: str, default: Path) -> str | None:
    found = os.environ.get(variable) or (str(default) if default.exists() else None)
    return found if found and Path(found).exists() else None


def conformance() -> str | None:
    """The conformance suite's entry script (run with ``node``), or None."""
    return _script("POD_MCP_CONFORMANCE", PACKAGES / "conformance" / "dist" / "index.js")


def everything() -> str | None:
    """The reference server's entry script (``node <it> stdio``), or None."""
    return _script("POD_MCP_EVERYTHING", PACKAGES / "server-everything" / "dist" / "index.js")
