"""``host.idle_exit_s``: a host started for the CLI's pods (``--exit-when-empty``) stays up
that long after its last pod is gone, so the next ``pod run`` finds it warm, and leaves only
if no pod came meanwhile. Each test runs a real ``pod host`` process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.serving.client import PodClient
from orchestrator.serving.host import ask_host
from orchestrator.serving.server import socket_is_live
from tests.orchestrator.serving.host.test_host import pod_config

CEILING_S = 60.0
POD_HOST = ("cli", "host", "--exit-when-empty")
RUN_HOST = ("cli.host_start",)
"""The two ways to start such a host: ``pod host --exit-when-empty``, and the lighter entry a
``pod run`` starts (:mod:`cli.host_start`)."""


class HostProcess:
    """A ``pod host --exit-when-empty`` process with its own runtime folder and config."""

    def __init__(
        self,
        tmp_path: Path,
        short_dir: Path,
        idle_exit_s: float,
        entry: tuple[str, ...] = POD_HOST,
    ) -> None:
        config = tmp_path / "config" / "pod" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f'[sandbox]\nmode = "off"\n\n[host]\nidle_exit_s = {idle_exit_s}\n')
        self.env = os.environ | {
            "XDG_RUNTIME_DIR": str(short_dir),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
        }
        self.control = short_dir / "pod" / "host.sock"
        self.short_dir = short_dir
        self.tmp_path = tmp_path
        self.log = tmp_path / "host.log"
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", *entry, "--verbose"],
                env=self.env, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
            )  # fmt: skip

    async def listening(self) -> None:
        """Until its control socket answers (or it died: the log says why)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CEILING_S
        while not socket_is_live(self.control):
            assert self.proc.poll() is None, self.log.read_text()
            assert loop.time() < deadline, self.log.read_text()
            await asyncio.sleep(0.05)

    async def load(self, name: str) -> Path:
        """Load a scripted pod into the host; its socket."""
        config = pod_config(self.tmp_path, name)
        socket = self.short_dir / f"{name}.sock"
        row = await ask_host("load", {"config": config, "socket": str(socket)}, path=self.control)
        return Path(row["socket"])

    async def logged(self, text: str) -> None:
        """Until the host's log holds ``text`` (or it died: the log says why)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CEILING_S
        while text not in self.log.read_text(errors="replace"):
            assert self.proc.poll() is None, self.log.read_text()
            assert loop.time() < deadline, self.log.read_text()
            await asyncio.sleep(0.05)

    async def exited(self, timeout_s: float) -> int | None:
        """Its exit code once it exited, or None if it still runs after ``timeout_s``."""
        try:
            return await asyncio.to_thread(self.proc.wait, timeout_s)
        except subprocess.TimeoutExpired:
            return None


async def shut_down(socket: Path) -> None:
    client = await PodClient.connect(socket)
    await client.send("shutdown")
    await client.wait_for("shutdown", timeout=CEILING_S)
    await client.close()


@pytest.fixture
def hosts() -> Iterator[list[HostProcess]]:
    started: list[HostProcess] = []
    yield started
    for host in started:
        if host.proc.poll() is None:
            host.proc.kill()
            host.proc.wait(CEILING_S)


@pytest.mark.parametrize("entry", [POD_HOST, RUN_HOST], ids=["pod-host", "run-host"])
async def test_the_host_leaves_after_its_idle_time_with_no_pod(
    tmp_path: Path, short_dir: Path, hosts: list[HostProcess], entry: tuple[str, ...]
) -> None:
    host = HostProcess(tmp_path, short_dir, idle_exit_s=0.5, entry=entry)
    hosts.append(host)
    await host.listening()
    socket = await host.load("a")
    await shut_down(socket)
    assert await host.exited(CEILING_S) == 0, host.log.read_text()
    assert not socket_is_live(host.control)


async def test_a_pod_loaded_within_the_idle_time_keeps_the_host_up(
    tmp_path: Path, short_dir: Path, hosts: list[HostProcess]
) -> None:
    # Long enough that loading a pod fits in it on a machine with busy CPUs beside it; the
    # checks below wait on the host's own log lines, not on how long a load took.
    idle_exit_s = 10.0
    host = HostProcess(tmp_path, short_dir, idle_exit_s=idle_exit_s)
    hosts.append(host)
    await host.listening()
    await shut_down(await host.load("a"))  # the idle time starts
    await host.logged("leaving in")
    b = await host.load("b")  # and a pod comes within it
    await host.logged("a pod came; staying")
    # The idle time after the timer was stopped (it would have fired by then): still up.
    assert await host.exited(idle_exit_s) is None, host.log.read_text()
    rows = (await ask_host("list", path=host.control))["pods"]
    assert [(row["name"], row["loaded"]) for row in rows] == [("b", True)]
    # Its last pod gone, it leaves again after its idle time.
    await shut_down(b)
    assert await host.exited(CEILING_S) == 0, host.log.read_text()
