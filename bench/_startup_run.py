"""``pod run`` from a shell to the model's first request, against the fake Messages API.

Part of ``bench.startup``. Each sample runs ``pod run "hello"`` as a fresh process, with the
real Anthropic provider pointed at :class:`conformance.fake_api.FakeAnthropic` in this
process, and takes the time from starting the command to the fake receiving the request
(``received_s``, the same ``perf_counter`` clock: CLOCK_MONOTONIC on Linux, shared by every
process) and to the command's exit. Three situations:

* **cold**: no pod host runs; ``pod run`` starts one (the host's imports, the SDK's among
  them, are on the path). After each sample the host is stopped and its process waited for.
  Before each, ``python -c "import anthropic"`` is timed: the floor, taken beside the runs
  it is compared with.
* **warm, pod loaded by the run**: a host runs and has served pods already, but none for this
  workspace; the run loads its pod (``--shutdown-after`` unloads it again).
* **warm, pod running**: the workspace's pod runs in the host; the run only connects.

Every run has a home, config, state and runtime folder of its own, so no user setting and
no running host of the user takes part.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._common import median

__all__ = ["RunBench", "run_figures"]

_REPO = Path(__file__).resolve().parents[1]
_CEILING_S = 120.0
"""The longest one ``pod run`` or a host's exit may take before the benchmark gives up."""


def _summary(samples_s: list[float]) -> dict[str, Any]:
    ms = [s * 1000 for s in samples_s]
    return {"median_ms": median(ms), "min_ms": min(ms), "max_ms": max(ms), "runs": len(ms)}


@dataclass
class RunBench:
    """A private world for ``pod run``: folders, environment and the fake API's address."""

    root: Path
    base_url: str
    api: Any

    @property
    def workspace(self) -> Path:
        """The workspace every run uses."""
        return self.root / "ws"

    def env(self) -> dict[str, str]:
        """The user's environment minus its Anthropic settings, with private folders."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte-code caches, as users run it
        env.pop("POD_NO_HOST", None)  # the test suite sets it; these runs are about the host
        env.update(
            PYTHONPATH=str(_REPO),
            HOME=str(self.root / "home"),
            XDG_CONFIG_HOME=str(self.root / "config"),
            XDG_STATE_HOME=str(self.root / "state"),
            XDG_RUNTIME_DIR=str(self.root / "run"),
            ANTHROPIC_API_KEY="bench-key",
            ANTHROPIC_BASE_URL=self.base_url,
        )
        return env

    def pod(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``pod ARGS`` to its end."""
        done = subprocess.run(
            [sys.executable, "-m", "cli", *args],
            capture_output=True,
            text=True,
            cwd=self.workspace,
            env=self.env(),
            timeout=_CEILING_S,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"pod {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done

    def one_run(self, *extra: str) -> tuple[float, float]:
        """One ``pod run``: seconds to the fake's first request, and to the command's exit."""
        before = len(self.api.requests)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "cli", "run", "hello", *extra],
            capture_output=True,
            text=True,
            cwd=self.workspace,
            env=self.env(),
            timeout=_CEILING_S,
        )
        end = time.perf_counter()
        if done.returncode != 0:
            raise RuntimeError(f"pod run exited {done.returncode}: {done.stderr[-800:]}")
        requests = self.api.requests[before:]
        if not requests:
            raise RuntimeError("pod run ended without a request to the fake API")
        return requests[0].received_s - start, end - start

    def host_pid(self) -> int | None:
        """The running host's pid, or None when no host runs."""
        done = self.pod("host", "ls", "--json", check=False)
        if done.returncode != 0:
            return None
        pid: int = json.loads(done.stdout)["host"]["pid"]
        return pid

    def stop_host(self) -> bool:
        """Stop the host, if one runs, and wait for its process to be gone; whether one ran."""
        pid = self.host_pid()
        if pid is None:
            return False
        self.pod("host", "stop", check=False)
        deadline = time.monotonic() + _CEILING_S
        while _alive(pid):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the pod host (pid {pid}) did not exit")
            time.sleep(0.05)
        return True

    @contextlib.contextmanager
    def host(self) -> Iterator[subprocess.Popen[bytes]]:
        """A ``pod host`` that stays up (as a user service would keep it) for the block."""
        log = (self.root / "host.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "host"],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.workspace,
            env=self.env(),
        )
        try:
            deadline = time.monotonic() + _CEILING_S
            while self.host_pid() != proc.pid:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"pod host did not start: {_tail(self.root / 'host.log')}")
                time.sleep(0.05)
            yield proc
        finally:
            self.stop_host()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_CEILING_S)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()


def _time_sdk_import(env: dict[str, str]) -> float:
    """Seconds of one ``python -c "import anthropic"``: the floor of a cold start."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "import anthropic"], check=True, env=env, timeout=_CEILING_S
    )
    return time.perf_counter() - start


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child of ours that exited stays a zombie until reaped: that is gone too.
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _tail(path: Path) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-800:]
    return ""


def run_figures(runs: int) -> dict[str, Any]:
    """Cold and warm ``pod run`` figures, ``runs`` samples each."""
    from conformance.fake_api import FakeAnthropic

    with tempfile.TemporaryDirectory(prefix="pb-start") as tmp, FakeAnthropic() as api:
        root = Path(tmp)
        for sub in ("ws", "home", "config", "state"):
            (root / sub).mkdir()
        (root / "run").mkdir(mode=0o700)
        world = RunBench(root, api.base_url, api)
        cold_first: list[float] = []
        cold_total: list[float] = []
        floor: list[float] = []
        try:
            for _ in range(runs):
                # The floor is taken beside each cold run, not apart: on a shared machine the
                # load changes within a minute, and the target is relative to the floor.
                floor.append(_time_sdk_import(world.env()))
                first, total = world.one_run()
                if not world.stop_host():
                    raise RuntimeError("the cold pod run started no pod host")
                cold_first.append(first)
                cold_total.append(total)
            loads_first: list[float] = []
            live_first: list[float] = []
            live_total: list[float] = []
            with world.host():
                world.one_run("--shutdown-after")  # the host has served a pod before
                for _ in range(runs):
                    loads_first.append(world.one_run("--shutdown-after")[0])
                world.one_run()  # the workspace's pod now runs in the host
                for _ in range(runs):
                    first, total = world.one_run()
                    live_first.append(first)
                    live_total.append(total)
        finally:
            world.stop_host()
            # A pod that ran as a process of its own (it should not) is not left behind.
            world.pod("shutdown", "--workspace", str(world.workspace), check=False)
        return {
            "import_anthropic": _summary(floor),
            "cold_first_request": _summary(cold_first),
            "cold_total": _summary(cold_total),
            "warm_load_first_request": _summary(loads_first),
            "warm_live_first_request": _summary(live_first),
            "warm_live_total": _summary(live_total),
            "requests_seen": len(api.requests),
        }
