"""A host's sockets refuse a sandboxed client (a PID namespace of its own): its control socket
loads nothing for it, and a pod's socket neither loads nor serves the pod."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.adapters.sandbox.mounts import mount_plan
from orchestrator.config.paths import pod_info_path
from orchestrator.serving.host import Host, ask_host
from tests.orchestrator.sandboxed_peer import needs_bwrap, sandboxed_line
from tests.orchestrator.serving.host.test_host import pod_config


async def test_the_control_socket_refuses_a_sandboxed_peer(host: Host, tmp_path: Path) -> None:
    needs_bwrap()
    # What a command with the run of the sandbox would ask for: a pod of its own making,
    # unsandboxed and unasked.
    hostile = pod_config(tmp_path, "evil", permissions={"mode": "yolo"}, sandbox={"mode": "off"})
    request = json.dumps({"id": 1, "method": "load", "params": {"config": hostile}})
    reply = json.loads(await sandboxed_line(host.control_path, request))
    assert reply["ok"] is False and reply["code"] == "forbidden"
    assert reply["error"].startswith("the pod host refuses this connection: ")
    assert "another PID namespace" in reply["error"]
    assert "evil" not in host.slots
    # A client of the host's own namespace is served as before.
    assert (await ask_host("list", path=host.control_path))["pods"] == []


async def test_a_pod_socket_of_the_host_refuses_a_sandboxed_peer_before_loading(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    needs_bwrap()
    socket = short_dir / "p.sock"
    config = pod_config(tmp_path, "p")
    await ask_host("register", {"config": config, "socket": str(socket)}, path=host.control_path)
    line = json.loads(await sandboxed_line(socket, '{"method": "get_status", "id": "s"}'))
    assert line["event"] == "error" and line["data"]["code"] == "forbidden"
    assert line["data"]["message"].startswith("pod p refuses this connection: ")
    assert not host.slots["p"].loaded  # a refused peer does not even load the pod


async def test_a_hosted_pod_s_sandbox_hides_the_host_s_sockets(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    needs_bwrap()
    elsewhere = tmp_path / "s" / "q.sock"
    elsewhere.parent.mkdir()
    other = pod_config(tmp_path, "q")
    await ask_host("register", {"config": other, "socket": str(elsewhere)}, path=host.control_path)
    config = pod_config(tmp_path, "r", sandbox={"mode": "on"})
    row = await ask_host(
        "load", {"config": config, "socket": str(short_dir / "r.sock")}, path=host.control_path
    )
    assert set(host.hidden_paths()) >= {host.control_path, short_dir, elsewhere}
    served = host.slots["r"].served
    assert served is not None and served.sandboxing is not None
    hidden = served.sandboxing.spec.hidden
    # The host's folder (its control socket and the pods' sockets in it: one mount for
    # them all), a pod's socket elsewhere, and this pod's info file.
    assert {short_dir, elsewhere, pod_info_path(Path(row["socket"]))} <= set(hidden)
    # Nested paths are one mount: the plan drops what a hidden folder covers already.
    planned = {m.path for m in mount_plan(served.sandboxing.spec)}
    assert host.control_path not in planned and Path(row["socket"]) not in planned
