"""``pod serve`` in a cloned repository whose ``.pod/config.toml`` tries every key.

The pod runs as a person would run it: its own process, the user's config granting bash, an
API key in the environment (pointing at the fake Messages API). Whatever the repository's file
says, the pod must listen and write its info file in the runtime directory only, touch no
file that is not its own, start its own session, take its words from the API, and run nothing
the repository chose.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conformance.fake_api import FakeAnthropic, Reply
from orchestrator.serving.client import PodClient
from orchestrator.serving.server import socket_is_live
from tests.e2e.harness import collect_until
from tests.faults.hostile_repo import PACKAGE_JSON, USER_TOML, HostileRepo, make_hostile_repo

_SERVE = [sys.executable, "-m", "cli", "serve"]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()


def _environment(short_dir: Path, tmp_path: Path, fake: FakeAnthropic) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        XDG_RUNTIME_DIR=str(short_dir),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        ANTHROPIC_API_KEY="sk-ant-test-user-key",
        ANTHROPIC_BASE_URL=fake.base_url,
    )
    user = tmp_path / "config" / "pod" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    # The user grants bash (the repository must not use it), sets a budget, prices the model.
    user.write_text(USER_TOML)
    return env


@contextmanager
def _serve(workspace: Path, env: dict[str, str], runtime: Path) -> Iterator[Path]:
    """``pod serve`` in the workspace with nothing but the workspace given; its socket."""
    proc = subprocess.Popen(
        [*_SERVE, "--workspace", str(workspace)],
        cwd=workspace,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # A ceiling, not a pace: a pod starts in about a second, and in tens of seconds on a
        # loaded machine running the suite beside it.
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            infos = list(runtime.glob("*.json"))
            if infos:
                socket = Path(json.loads(infos[0].read_text())["socket"])
                if socket_is_live(socket):
                    break
            assert time.monotonic() < deadline, "the pod did not start"
            time.sleep(0.05)
        yield socket
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(120)


def _untouched(repo: HostileRepo, victim_before: dict[str, str]) -> None:
    assert repo.victim_files() == victim_before
    assert (repo.workspace / "package.json").read_text() == PACKAGE_JSON
    assert not (repo.workspace / "package.sock").exists()
    assert not repo.marker.exists(), "a command the repository chose ran"


async def test_a_hostile_repository_config_reaches_nothing(
    tmp_path: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    repo = make_hostile_repo(tmp_path, short_dir)
    env = _environment(short_dir, tmp_path, fake)
    runtime = short_dir / "pod"
    victim_before = repo.victim_files()
    forged_before = (repo.workspace / "forged.jsonl").read_bytes()
    fake.push(Reply(text="hello from the API"))
    with _serve(repo.workspace, env, runtime) as socket:
        # It listens in the runtime directory, and its info file is there too.
        assert socket.parent == runtime
        assert [p.name for p in runtime.glob("*.json")] == [socket.with_suffix(".json").name]
        client = await PodClient.connect(socket)
        history = await client.request("get_history")
        # Not the forged session: nothing paused to resume, nothing loaded.
        assert history.data["items"] == []
        status = await client.request("get_status")
        assert status.data["status"] == "idle"
        [alert] = [a for a in history.data["alerts"] if "config.toml" in a["message"]]
        for key in (
            "name",
            "provider",
            "scripted_script",
            "session",
            "socket",
            "allow_bash",
            "prices",
        ):
            assert key in alert["message"], key
        await client.send("resume")
        await client.send("run", {"input": "hi"})
        events = await collect_until(client, "run_end", timeout=20)
        assert events[-1].data == {"result": "finished"}
        text = "".join(e.data["text"] for e in events if e.event == "text_delta")
        assert text == "hello from the API"  # the words came from the API, not the repository
        # Priced by the user's table, not the repository's zeros; under the user's budget.
        status = await client.request("get_status")
        assert status.data["cost_usd"] > 0
        assert status.data["budget"]["budget_usd"] == 5.0
        await client.send("shutdown")
        await client.close()
    assert len(fake.requests) == 1
    assert fake.requests[0].body["model"] == "claude-from-the-repo"  # tuning is kept
    _untouched(repo, victim_before)
    assert (repo.workspace / "forged.jsonl").read_bytes() == forged_before
    assert list(runtime.glob("*.json")) == []  # removed at shutdown, and only ours


async def test_a_name_never_leads_out_of_the_runtime_directory(
    tmp_path: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    repo = make_hostile_repo(tmp_path, short_dir)
    # Only the name: no socket key to take precedence over it.
    (repo.workspace / ".pod" / "config.toml").write_text('name = "../victim/data"\n')
    env = _environment(short_dir, tmp_path, fake)
    runtime = short_dir / "pod"
    victim_before = repo.victim_files()
    with _serve(repo.workspace, env, runtime) as socket:
        assert socket == runtime / "repo.sock"
        assert repo.victim_files() == victim_before
    _untouched(repo, victim_before)


def test_a_name_on_the_command_line_that_leads_out_is_an_error(
    tmp_path: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    repo = make_hostile_repo(tmp_path, short_dir)
    env = _environment(short_dir, tmp_path, fake)
    victim_before = repo.victim_files()
    done = subprocess.run(
        [*_SERVE, "--workspace", str(repo.workspace), "--name", "../victim/data"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0
    assert "command line: name: " in done.stderr
    _untouched(repo, victim_before)
