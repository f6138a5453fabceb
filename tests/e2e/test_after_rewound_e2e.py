"""Methods sent the moment ``rewound`` arrives, to a pod in its own process: each is done or
refused with an error, never dropped.

A ``shutdown`` sent as ``rewound`` arrived, the connection closed at once, was lost more often
than not: the pod was still writing to the client (the ``status`` after ``rewound``), the write
to the closed connection failed, and the server dropped the line it had not read yet; the pod
stayed up. Each case below is tried a few times: before the fix nearly every try lost it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.serving.client import PodClient
from tests.e2e.harness import collect_until, start_pod_process, what_it_said

TRIES = 3


async def _rewound(c: PodClient, restore: str) -> None:
    """A turn, then a rewind to its prompt, up to the ``rewound`` event."""
    await c.send("run", {"input": "hello"})
    assert (await collect_until(c, "run_end", timeout=30))[-1].data == {"result": "finished"}
    items = (await c.history(timeout=30)).items
    [prompt] = [i["seq"] for i in items if i["kind"] == "user_message"]
    await c.send("rewind", {"to": prompt, "restore": restore})
    await c.wait_for("rewound", timeout=30)


def _pod(workspace: Path, folder: Path, replies: list[str]) -> subprocess.Popen[bytes]:
    folder.mkdir()
    script = folder / "script.json"
    script.write_text(json.dumps({"replies": [{"text": text} for text in replies]}))
    return start_pod_process(workspace, folder / "p.sock", folder / "session.jsonl", script)


def _stopped(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the pod never stopped: {what_it_said(proc)}") from None


def _no_checkpoints() -> None:
    """The user's config turns workspace checkpoints off (the pod then rewinds the
    conversation only)."""
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    user.write_text("checkpoints = false\n" + user.read_text())


@pytest.mark.parametrize(
    "restore,checkpoints",
    [("both", True), ("code", True), ("conversation", True), ("conversation", False)],
)
async def test_a_shutdown_sent_as_rewound_arrives_stops_the_pod_even_if_the_client_left(
    workspace: Path, short_dir: Path, restore: str, checkpoints: bool
) -> None:
    if not checkpoints:
        _no_checkpoints()
    for n in range(TRIES):
        proc = _pod(workspace, short_dir / str(n), ["ok"])
        try:
            c = await PodClient.connect(short_dir / str(n) / "p.sock")
            if not checkpoints and n == 0:
                await c.send("rewind", {"to": 1, "restore": "code"}, id="code")
                refused = await c.wait_for("error", timeout=30, id="code")
                assert "checkpoints are off" in refused.data["message"]
            await _rewound(c, restore)
            await c.send("shutdown")
            await c.close()  # at once: the pod is still telling this client things
            _stopped(proc)
            assert proc.returncode == 0, what_it_said(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


async def test_get_status_pause_and_run_sent_as_rewound_arrives_are_each_answered(
    workspace: Path, short_dir: Path
) -> None:
    proc = _pod(workspace, short_dir / "p", ["ok", "again"])
    try:
        c = await PodClient.connect(short_dir / "p" / "p.sock")
        await _rewound(c, "both")
        await c.send("get_status", id="status")
        await c.send("pause", id="pause")
        await c.send("run", {"input": "once more"}, id="run")
        events = await collect_until(c, "run_end", timeout=30)
        [status] = [e for e in events if e.event == "status" and e.data.get("id") == "status"]
        assert status.data["status"] == "idle"  # the rewind is over when rewound is told
        [refused] = [e for e in events if e.event == "error" and e.data.get("id") == "pause"]
        assert refused.data["code"] == "not_running"
        assert "idle" in refused.data["message"]
        assert events[-1].data == {"result": "finished"}  # the run was done
        await c.send("shutdown")
        shutdown = await c.wait_for("shutdown", timeout=30)
        assert shutdown.event == "shutdown"
        await c.close()
        _stopped(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
