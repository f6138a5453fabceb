"""``pod host`` at scale: memory with many registered and loaded sessions, what an unloaded pod
costs, time to the first streamed token with many turns at once, and the per-round cost in a
host against a pod process of its own.

A real ``pod host`` process (scripted provider, real sockets, sessions with fsync):

1. ``sessions`` session files of 100 items are written and each pod registered through the
   control socket (the descriptors an unloaded pod holds are read); ``loaded`` of them take a
   turn, which loads them, and the host's PSS (``smaps_rollup``) is read;
2. ``concurrent`` loaded pods each get a ``run`` at once; the time from the request to each
   pod's first ``text_delta`` (p50, p95);
3. every other session takes a turn and is unloaded again, and the PSS is read once more (what
   the allocator keeps of pods it served; reported, no target);
4. a turn of ``rounds`` ``read_file`` rounds in a host-served pod and in a ``pod serve``
   process, interleaved; the per-round times and their ratio.

    python -m bench.host [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import Result, history_items, latency_stats, main_for, median, row, write_session

NAME = "host"
FULL = {"sessions": 1000, "loaded": 300, "concurrent": 300, "rounds": 30, "repeats": 5}
QUICK = {"sessions": 30, "loaded": 10, "concurrent": 10, "rounds": 5, "repeats": 1}
TARGETS = {"pss_mib": 300.0, "first_delta_p95_ms": 500.0, "round_ratio": 1.0}


def _pss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.pop("POD_NO_HOST", None)
    config = root / "cfg" / "pod"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[sandbox]\nmode = "off"\n')
    (root / "run").mkdir(mode=0o700)
    return {
        **env,
        "XDG_RUNTIME_DIR": str(root / "run"),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CONFIG_HOME": str(root / "cfg"),
    }


def _script(root: Path, rounds: int) -> Path:
    call = {"name": "read_file", "input": {"path": "README.md"}}
    replies: list[dict[str, Any]] = [{"tool_calls": [call]} for _ in range(rounds)]
    replies.append({"text": "done " * 20, "chunk_size": 8})
    path = root / f"script-{rounds}.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


def _pod_config(root: Path, name: str, script: Path, session: Path | None) -> dict[str, Any]:
    from orchestrator.config.model import PodConfig

    workspace = root / "ws" / name
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "README.md").write_text(f"# {name}\n")
    config = PodConfig.model_validate(
        {
            "workspace": workspace, "name": name, "provider": "scripted",
            "scripted_script": script, "session": session, "checkpoints": False,
            "sandbox": {"mode": "off"}, "permissions": {"mode": "accept-edits"},
        }
    )  # fmt: skip
    return config.model_dump(mode="json")


async def _first_delta(socket: Path) -> float:
    from orchestrator.serving.client import PodClient

    client = await PodClient.connect(socket)
    started = time.perf_counter()
    await client.send("run", {"input": "go"})
    first: float | None = None
    async for event in client.events():
        if event.event == "text_delta" and first is None:
            first = time.perf_counter() - started
        if event.event == "run_end":
            break
    await client.close()
    return first if first is not None else float("nan")


async def _evicted(control: Path, name: str) -> None:
    """Evict a pod whose client just left (the host may not have seen it leave yet)."""
    from orchestrator.serving.host import HostError, ask_host

    for _ in range(200):
        try:
            await ask_host("evict", {"name": name}, path=control)
            return
        except HostError:
            await asyncio.sleep(0.01)
    raise RuntimeError(f"{name} would not unload")


async def _turn_s(socket: Path) -> float:
    from orchestrator.serving.client import PodClient

    client = await PodClient.connect(socket)
    started = time.perf_counter()
    await client.send("run", {"input": "go"})
    async for event in client.events():
        if event.event == "run_end":
            break
    took = time.perf_counter() - started
    await client.close()
    return took


def _wait_socket(path: Path, proc: subprocess.Popen[bytes], what: str) -> None:
    from orchestrator.serving.server import socket_is_live

    deadline = time.monotonic() + 60
    while not socket_is_live(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.02)


async def _measure(root: Path, env: dict[str, str], p: dict[str, int]) -> dict[str, Any]:
    from orchestrator.serving.host import ask_host

    runtime = root / "run" / "pod"
    control = runtime / "host.sock"
    items = history_items(100)
    rounds_script = _script(root, p["rounds"])
    host = subprocess.Popen(
        [sys.executable, "-m", "cli", "host", "--idle-unload-s", "86400"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_socket(control, host, "the host")
        pss_empty = _pss_kib(host.pid)
        names = [f"b{n:04d}" for n in range(p["sessions"])]
        fds_one = 0
        for n, name in enumerate(names):
            session = root / "sessions" / f"{name}.jsonl"
            session.parent.mkdir(exist_ok=True)
            write_session(session, items, pod=name, workspace=root / "ws" / name)
            config = _pod_config(root, name, _script(root, 0), session)
            # Registered, not loaded: as the pods of a restarted host, each loads at its
            # first connection.
            await ask_host("register", {"config": config, "continue": True}, path=control)
            if n == 0:
                fds_one = _fds(host.pid)  # what the host opens once is not any pod's
        fds_per_unloaded = (_fds(host.pid) - fds_one) / max(1, len(names) - 1)
        sockets = [runtime / f"{name}.sock" for name in names]
        for socket in sockets[: p["loaded"]]:  # a connection loads a pod
            await _turn_s(socket)
        rows = (await ask_host("list", path=control))["pods"]
        assert sum(r["loaded"] for r in rows) == p["loaded"], rows[:3]
        pss_loaded = _pss_kib(host.pid)
        firsts = await asyncio.gather(*(_first_delta(s) for s in sockets[: p["concurrent"]]))
        # Every other session loaded once and unloaded again: what a host that has served
        # them all keeps of them (the allocator's fragments; no target, reported).
        for name, socket in zip(names[p["loaded"] :], sockets[p["loaded"] :], strict=True):
            await _turn_s(socket)
            await _evicted(control, name)
        await asyncio.sleep(2)  # the host frees what unloaded pods held a second after a burst
        pss_churned = _pss_kib(host.pid)
        # The per-round cost: one host-served pod against a pod process, interleaved.
        config = _pod_config(root, "rounds-host", rounds_script, None)
        row_ = await ask_host("load", {"config": config}, path=control)
        hosted = Path(row_["socket"])
        solo_socket = root / "solo.sock"
        solo_env = {**env, "POD_NO_HOST": "1"}
        host_s: list[float] = []
        solo_s: list[float] = []
        for n in range(p["repeats"]):
            host_s.append(await _turn_s(hosted))
            solo_ws = root / "ws" / f"solo{n}"
            solo_ws.mkdir(parents=True)
            solo = subprocess.Popen(
                [sys.executable, "-m", "cli", "serve", "--workspace", str(solo_ws),
                 "--socket", str(solo_socket), "--provider", "scripted", "--script",
                 str(rounds_script), "--name", f"solo{n}"],
                env=solo_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            try:
                _wait_socket(solo_socket, solo, "pod serve")
                solo_s.append(await _turn_s(solo_socket))
            finally:
                solo.send_signal(signal.SIGTERM)
                solo.wait(30)
            # The hosted pod's script is spent: load it afresh on a new session.
            await ask_host("evict", {"name": "rounds-host"}, path=control)
            fresh = _pod_config(root, f"rounds-host-{n}", rounds_script, None)
            hosted = Path((await ask_host("load", {"config": fresh}, path=control))["socket"])
        await ask_host("stop", path=control)
        host.wait(600)  # 300 loaded pods end their turns and close: minutes on a busy machine
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    per_round_host = median(host_s) / (p["rounds"] + 1) * 1000
    per_round_solo = median(solo_s) / (p["rounds"] + 1) * 1000
    return {
        "pss_mib_empty": pss_empty / 1024,
        "pss_mib": pss_loaded / 1024,
        "pss_mib_after_all_loaded_once": pss_churned / 1024,
        "fds_per_unloaded_pod": fds_per_unloaded,
        "first_delta": latency_stats(firsts),
        "per_round_ms_host": per_round_host,
        "per_round_ms_process": per_round_solo,
        "round_ratio": per_round_host / per_round_solo,
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` is a small version of each part."""
    params = QUICK if quick else FULL
    root = Path(tempfile.mkdtemp(prefix="pbhost"))
    try:
        figures = asyncio.run(_measure(root, _env(root), params))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    p95 = figures["first_delta"]["p95_ms"]
    table = [
        row(
            f"host PSS, {params['sessions']} sessions, {params['loaded']} loaded",
            figures["pss_mib"], "MiB", target=f"≤ {TARGETS['pss_mib']:g}",
            met=figures["pss_mib"] <= TARGETS["pss_mib"],
        ),
        row("descriptors per unloaded pod", figures["fds_per_unloaded_pod"], "fd",
            target="≤ 1", met=figures["fds_per_unloaded_pod"] <= 1.0),
        row(f"first delta p95, {params['concurrent']} turns at once", p95, "ms",
            target=f"≤ {TARGETS['first_delta_p95_ms']:g}", met=p95 <= TARGETS["first_delta_p95_ms"]),
        row("per-round time, host / pod process", figures["round_ratio"], "×",
            target="≤ 1.0", met=figures["round_ratio"] <= TARGETS["round_ratio"]),
    ]  # fmt: skip
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": params,
        "results": figures,
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
