"""The HTTP API as a person starts it: ``pod host --http``, ``pod serve --http``, and
``host.http`` for the host a ``pod run`` starts. Each writes its 0600 ``_http.json`` (the URL
and the token a script reads), prints the login URL once, and removes the file at exit."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.helpers import pod, read_until


def _info(path: Path, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"no {path}")


class Events(threading.Thread):
    """A pod's SSE stream read on a thread until ``until`` (a script's loop, in the
    background so the script can post meanwhile); :attr:`open` once the stream is."""

    def __init__(self, client: httpx.Client, name: str, until: str) -> None:
        super().__init__(daemon=True)
        self.client, self.name, self.until = client, name, until
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.open = threading.Event()
        self.start()
        assert self.open.wait(60), "the stream did not open"

    def run(self) -> None:
        with self.client.stream("GET", f"/v1/pods/{self.name}/events") as response:
            assert response.status_code == 200
            self.open.set()
            event, data = "", ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif line == "" and event:
                    self.seen.append((event, json.loads(data)))
                    if event == self.until:
                        return
                    event = ""


def test_pod_host_http_serves_its_pods_and_says_where(
    env: dict[str, str], short_dir: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "alpha"
    ws.mkdir()
    info_path = short_dir / "pod" / "_http.json"
    host = subprocess.Popen(
        [sys.executable, "-m", "cli", "host", "--http", "127.0.0.1:0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        said = read_until(host.stderr, b"/?token=").decode()
        info = _info(info_path)
        assert stat.S_IMODE(info_path.stat().st_mode) == 0o600
        assert info["pid"] == host.pid
        assert f"pod: HTTP API at {info['url']}/?token={info['token']}" in said
        headers = {"Authorization": f"Bearer {info['token']}"}
        with httpx.Client(base_url=info["url"], headers=headers, timeout=60) as client:
            assert httpx.get(f"{info['url']}/v1/pods").status_code == 401
            added = client.post("/v1/pods", json={"workspace": str(ws)})
            assert added.status_code == 201, added.text
            name = added.json()["name"]
            assert name == "alpha"
            events = Events(client, name, "run_end")
            ran = client.post(f"/v1/pods/{name}/runs", json={"text": "hello over http"})
            assert ran.status_code == 202
            events.join(60)
            seen = events.seen
            assert seen[-1] == ("run_end", {"result": "finished"})
            assert any(e == "text_delta" for e, _ in seen)
            # The CLI sees the same pod in the same host.
            listed = json.loads(pod(env, "host", "ls", "--json").stdout)
            assert [row["name"] for row in listed["pods"]] == ["alpha"]
    finally:
        pod(env, "host", "stop")
        host.wait(60)
    assert not info_path.exists()


def test_pod_serve_http_serves_one_pod(
    env: dict[str, str], short_dir: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "solo"
    ws.mkdir()
    socket = short_dir / "pod" / "solo.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(ws), "--name", "solo",
         "--socket", str(socket), "--http", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    info_path = short_dir / "pod" / "_http-solo.sock.json"
    try:
        read_until(server.stderr, b"/?token=")
        info = _info(info_path)
        assert stat.S_IMODE(info_path.stat().st_mode) == 0o600
        headers = {"Authorization": f"Bearer {info['token']}"}
        with httpx.Client(base_url=info["url"], headers=headers, timeout=60) as client:
            listed = client.get("/v1/pods").json()
            assert [p["name"] for p in listed["pods"]] == ["solo"] and listed["host"] is None
            refused = client.post("/v1/pods", json={"workspace": str(ws)})
            assert refused.status_code == 405
            assert client.get("/v1/pods/other").status_code == 404
            status = client.get("/v1/pods/solo").json()
            assert status["status"] == "idle" and status["name"] == "solo"
            assert client.delete("/v1/pods/solo").status_code == 202
        assert server.wait(60) == 0
    finally:
        if server.poll() is None:
            pod(env, "shutdown", "--socket", str(socket))
            server.wait(60)
    assert not info_path.exists()


@pytest.mark.parametrize("address", ["0.0.0.0:0", "example.com:80", "127.0.0.1:99999"])
def test_a_bad_or_public_address_is_one_line(env: dict[str, str], address: str) -> None:
    done = pod(env, "host", "--http", address)
    assert done.returncode == 1
    assert done.stderr.startswith("pod: error: --http"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_host_http_in_the_user_config_serves_the_host_a_run_starts(
    env: dict[str, str], short_dir: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        '[sandbox]\nmode = "off"\n\n[host]\nidle_exit_s = 0\nhttp = "127.0.0.1:0"\n\n'
        "[skills]\nclaude_dirs = false\n"
    )
    ws = tmp_path / "beta"
    ws.mkdir()
    info_path = short_dir / "pod" / "_http.json"
    try:
        done = pod(env, "run", "hello", "--workspace", str(ws))
        assert done.returncode == 0, done.stderr
        info = _info(info_path)
        headers = {"Authorization": f"Bearer {info['token']}"}
        rows = httpx.get(f"{info['url']}/v1/pods", headers=headers, timeout=60).json()["pods"]
        assert [row["name"] for row in rows] == ["beta"]
        # The token is nowhere but in the 0600 file: not in the host's command line.
        cmdline = Path(f"/proc/{info['pid']}/cmdline").read_bytes()
        assert info["token"].encode() not in cmdline
    finally:
        pod(env, "shutdown", "beta")
    deadline = time.monotonic() + 30
    while info_path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not info_path.exists()  # the host left with its last pod, and took its file
    assert os.environ.get("POD_NO_HOST") == "1"  # the other tests' environment is unchanged
