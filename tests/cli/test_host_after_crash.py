"""A host started after another was killed serves the dead host's pods again, yet still leaves
with its last pod of its own (``--exit-when-empty``), keeping the restored ones for the next
host (issue 39, section 2)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.serving.server import socket_is_live
from tests.cli.helpers import pod

CEILING_S = 90.0


def _start_host(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``pod host --exit-when-empty`` (what `pod run` starts), once its control socket answers."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "host", "--exit-when-empty"],
            env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    control = Path(env["XDG_RUNTIME_DIR"]) / "pod" / "host.sock"
    deadline = time.monotonic() + CEILING_S
    while not socket_is_live(control):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return proc


def _prompts(env: dict[str, str], name: str) -> list[str]:
    items = json.loads(pod(env, "history", name, "--json").stdout)
    return [i["text"] for i in items if i["kind"] == "user_message"]


def test_a_host_started_after_a_crash_still_leaves_with_its_last_pod(
    demo_at_once: None, env: dict[str, str], tmp_path: Path, short_dir: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    for ws in (alpha, beta):
        ws.mkdir()
        (ws / "README.md").write_text("# ws\n")
    log = tmp_path / "hosts.log"
    registry = short_dir / "pod" / "host.registry"

    first = _start_host(env, log)
    try:
        done = pod(env, "run", "hello", "--workspace", str(alpha))
        assert done.returncode == 0, done.stderr
        first.kill()  # SIGKILL: alpha stays in the registry, its socket and info file stale
        first.wait(CEILING_S)
    finally:
        if first.poll() is None:
            first.kill()
    assert [Path(e["socket"]).name for e in json.loads(registry.read_text())] == ["alpha.sock"]

    second = _start_host(env, log)
    try:
        # The dead host's pod is served again, unloaded, ready to come back from its session.
        rows = json.loads(pod(env, "host", "ls", "--json").stdout)["pods"]
        assert [(r["name"], r["loaded"], r["restored"]) for r in rows] == [("alpha", False, True)]
        done = pod(env, "run", "hi", "--workspace", str(beta))
        assert done.returncode == 0, done.stderr
        assert pod(env, "shutdown", "beta").returncode == 0
        # Its own last pod is gone: it leaves, although alpha (restored, unused) is still bound.
        # Before the fix it waited for alpha forever.
        assert second.wait(CEILING_S) == 0, log.read_text()
    finally:
        if second.poll() is None:
            second.kill()
    control = short_dir / "pod" / "host.sock"
    assert not socket_is_live(control)
    # Alpha was not shut down: the next host binds it again and it continues its conversation.
    assert [Path(e["socket"]).name for e in json.loads(registry.read_text())] == ["alpha.sock"]
    again = pod(env, "run", "once more", "--workspace", str(alpha))
    assert again.returncode == 0, again.stderr
    assert _prompts(env, "alpha") == ["hello", "once more"]
    # Used now, alpha is that host's own pod: the host leaves with it.
    assert pod(env, "shutdown", "alpha").returncode == 0
    deadline = time.monotonic() + CEILING_S
    while socket_is_live(control) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not socket_is_live(control)
    assert not registry.exists()
