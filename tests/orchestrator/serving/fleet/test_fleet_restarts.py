# ruff: noqa: F811  (the fleet fixture is imported, and named by the tests that use it)
"""A fleet whose processes die: a gateway SIGKILLed and restarted by Ray, a host that dies
right after its pod committed a run. A cluster of their own (a fresh fleet), apart from the
tests of ``test_fleet_ray.py``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

ray = pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.serving.fleet.directory import NAMESPACE, Directory  # noqa: E402
from orchestrator.serving.fleet.raykv import RayKV  # noqa: E402
from tests.orchestrator.serving.fleet.test_fleet_ray import (  # noqa: E402
    add_pod,
    fleet,  # noqa: F401  (the module fixture, imported to be used here)
    left,
    run,
    user_messages,
)

# One worker runs every Ray test, one after the other: the kill bench's driver shuts Ray down
# in its process, which would take a fleet fixture of the same worker with it.
pytestmark = [pytest.mark.fleet, pytest.mark.slow, pytest.mark.xdist_group("ray")]


async def test_a_gateway_restarted_by_ray_binds_its_sockets_again(
    fleet: Path, workspace: Path
) -> None:
    # Three times: a restart's start that Ray dropped (a call the actor made to itself while
    # Ray still had it as restarting) failed about one restart in thirty on a loaded machine.
    row = await add_pod(fleet, workspace, "foxtrot")
    (gateway,) = [
        a for a in ray.util.list_named_actors(True) if a["name"].startswith("pod-gateway-")
    ]
    actor = ray.get_actor(gateway["name"], namespace=NAMESPACE)
    for restart in range(3):
        old_pid = await actor.pid.remote()
        os.kill(old_pid, signal.SIGKILL)
        new_pid = old_pid
        for _ in range(600):
            with contextlib.suppress(ray.exceptions.RayActorError):
                new_pid = await actor.pid.remote()
                if new_pid != old_pid:
                    break
            await asyncio.sleep(0.1)
        assert new_pid != old_pid, f"Ray did not restart the gateway (restart {restart})"
        events: list[tuple[str, dict[str, Any]]] = []
        for _ in range(600):  # it binds once its constructor ran
            try:
                events = await run(row["socket"], {"method": "run", "params": {"input": "back"}})
                break
            except (ConnectionError, FileNotFoundError):
                await asyncio.sleep(0.1)
        assert events and events[-1] == ("run_end", {"result": "finished"}), restart


async def test_a_host_lost_after_its_run_committed_never_runs_it_twice(
    fleet: Path, workspace: Path
) -> None:
    """The host dies after the pod committed a client's ``run`` and before ``send`` returned
    to the gateway: the gateway's resend on the restarted host is answered ``duplicate``
    (an ``info`` alert to the client), or the client is told the host was lost (when the
    stream noticed first). Either way the run is in the session once and starts no second
    turn."""
    row = await add_pod(fleet, workspace, "golf")
    await run(row["socket"], {"method": "run", "params": {"input": "warm"}})
    directory = Directory(RayKV())
    placement = directory.placement("golf")
    assert placement is not None and placement.host is not None
    host = ray.get_actor(placement.host, namespace=NAMESPACE)
    await left(host, "golf")
    await host.die_after_next_send.remote("golf", "client-once")

    line = {"id": 7, "method": "run", "params": {"input": "once", "request_id": "client-once"}}
    reader, writer = await asyncio.open_unix_connection(row["socket"])
    writer.write(json.dumps(line).encode() + b"\n")
    told: list[tuple[str, dict[str, Any]]] = []
    try:
        while raw := await asyncio.wait_for(reader.readline(), 60):
            event = json.loads(raw)
            told.append((event["event"], event["data"]))
            if event["event"] == "alert" and event["data"]["source"] == "fleet":
                break
    finally:
        writer.close()
    [(_, alert)] = [(n, d) for n, d in told if n == "alert" and d["source"] == "fleet"]
    assert alert["level"] in ("info", "error"), alert
    if alert["level"] == "info":  # the resend met the committed run
        assert "not run again" in alert["message"]
    assert user_messages(row["config"]["session"]) == [("warm", ANY), ("once", "client-once")]
    # A turn the host's death cut comes back paused and resumes to its end, once.
    status = await ask(row["socket"], {"id": 8, "method": "get_status"})
    assert status["status"] in ("idle", "paused"), status
    if status["status"] == "paused":
        resumed = await run(row["socket"], {"method": "resume"})
        assert resumed[-1] == ("run_end", {"result": "finished"})
    assert [text for text, _ in user_messages(row["config"]["session"])] == ["warm", "once"]


async def ask(socket: str, line: dict[str, Any]) -> dict[str, Any]:
    """Send one request with an ``id`` and return the data of the reply carrying it."""
    reader, writer = await asyncio.open_unix_connection(socket)
    writer.write(json.dumps(line).encode() + b"\n")
    try:
        while True:
            raw = json.loads(await asyncio.wait_for(reader.readline(), 60))
            if raw["data"].get("id") == line["id"]:
                return raw["data"]  # type: ignore[no-any-return]
    finally:
        writer.close()
