"""``pod status`` lists the hooks the user configured, as a person reads them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from orchestrator.serving.server import socket_is_live
from tests.cli.helpers import pod

CONFIG = """
[sandbox]
mode = "off"

[[hooks.PreToolUse]]
matcher = "bash"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "~/.config/pod/hooks/no-rm.sh"
timeout = 30

[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "command"
command = "notify-send done"
on_failure = "continue"
"""


def test_status_lists_the_configured_hooks(
    env: dict[str, str], workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "config" / "pod" / "config.toml").write_text(CONFIG)
    socket = short_dir / "pod" / "demo.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--socket",
         str(socket)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not socket_is_live(socket):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            assert time.monotonic() < deadline
            time.sleep(0.05)
        done = pod({**env, "COLUMNS": "200"}, "status", "--socket", str(socket))
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert (
            "hook PreToolUse [bash]: ~/.config/pod/hooks/no-rm.sh · 30 s · on failure continue · "
            "unsandboxed"
        ) in lines
        assert "hook Stop: notify-send done · 60 s · on failure continue · unsandboxed" in lines
    finally:
        pod(env, "shutdown", "--socket", str(socket), timeout=20)
        proc.wait(20)
