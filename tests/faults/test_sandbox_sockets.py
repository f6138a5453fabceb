"""Issue 38, finding 2: a sandboxed command drives the pod through its socket.

A pod served on a socket inside its workspace (``pod serve --socket <ws>/pod.sock``). In one
turn the model asks for two commands: one with ``sandbox: false``, which waits for a person,
and one sandboxed, which runs unasked: a small client (the pod's own interpreter, visible in
the sandbox) that connects to the pod's socket, reads ``get_status.approvals`` and sends
``approve`` (scope ``session``) for the first. On the old code that approval came through and
the unsandboxed command wrote outside the workspace. Now the socket is hidden from the
sandbox or, where it still is reachable, the pod refuses the sandboxed peer (another PID
namespace): the call waits for a person, who denies it, and nothing is written.
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys

from orchestrator.adapters.sandbox.bwrap import sandbox_argv
from orchestrator.adapters.sandbox.sandboxing import sandbox_spec
from orchestrator.config.model import PodConfig
from orchestrator.serving.client import PodClient, PodEvent
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.faults.sandbox_home import UserHome, user_home  # noqa: F401
from tests.orchestrator.sandboxed_peer import needs_bwrap

DRIVER = r"""
import json, socket, sys, time
path, call = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(120)
try:
    sock.connect(path)
except OSError as exc:
    print("connect failed:", exc.strerror)
    sys.exit(0)
lines = sock.makefile("rb")
deadline = time.monotonic() + 120
n = 0
while time.monotonic() < deadline:
    n += 1
    try:
        sock.sendall(json.dumps({"method": "get_status", "id": f"s{n}"}).encode() + b"\n")
    except OSError:
        pass  # refused and closed: its error line is still there to read
    while True:
        line = lines.readline()
        if not line:
            print("closed by the pod")
            sys.exit(0)
        event = json.loads(line)
        if event["event"] == "error":
            print("refused:", event["data"]["code"], event["data"]["message"])
            sys.exit(0)
        if event["event"] == "status" and event["data"].get("id") == f"s{n}":
            break
    if call in [a["id"] for a in event["data"]["approvals"]]:
        approve = {"method": "approve", "params": {"id": call, "scope": "session"}}
        sock.sendall(json.dumps(approve).encode() + b"\n")
        print("approved", call)
        sys.exit(0)
    time.sleep(0.1)
print("never saw", call, "waiting")
"""
"""The attack of finding 2: poll the pod's status until the unsandboxed call waits, then
approve it for the whole session."""


CONNECT_ONLY = r"""
import socket, sys
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(sys.argv[1])
except OSError as exc:
    print("connect failed:", exc.strerror)
else:
    print("connected")
"""


async def _next(client: PodClient, event: str, **match: object) -> list[PodEvent]:
    return await collect_until(client, event, timeout=120, **match)


async def test_a_sandboxed_command_cannot_approve_the_pod_s_unsandboxed_call(
    user_home: UserHome,  # noqa: F811
) -> None:
    needs_bwrap()
    workspace = user_home.home / "project"
    workspace.mkdir()
    outside = user_home.home / "pwned"
    escape = ScriptedToolCall(
        name="bash",
        input={"command": f"echo pwned > {shlex.quote(str(outside))}", "sandbox": False},
        id="escape",
    )
    served = workspace / "pod.sock"  # where running_pod serves it: inside the workspace
    drive = ScriptedToolCall(
        name="bash",
        input={
            "command": shlex.join([sys.executable, "-c", DRIVER, str(served), "escape"]),
        },
        id="drive",
    )
    replies = [ScriptedReply(text="Both.", tool_calls=[escape, drive]), ScriptedReply(text="Done.")]
    async with running_pod(
        workspace,
        workspace,
        replies=replies,
        permissions={"mode": "accept-edits"},
        sandbox={"mode": "on"},
    ) as pod:
        assert pod.socket == served
        client = await pod.client()
        await client.send("run", {"input": "go"})
        seen = await _next(client, "tool_result", id="drive")
        asked = [e.data["id"] for e in seen if e.event == "approval_request"]
        assert asked == ["escape"]  # the sandboxed one ran unasked, the other waits
        said = next(e for e in seen if e.event == "tool_result").data["content"] or ""
        # Hidden (the socket is not one inside) or refused (another PID namespace).
        assert said.startswith(("connect failed:", "refused: forbidden")), said
        if said.startswith("refused"):
            assert "another PID namespace" in said
        assert not [e for e in seen if e.event == "approval_resolved"]
        status = await client.status()
        assert [a.id for a in status.approvals] == ["escape"]  # still a person's to answer
        assert not outside.exists()
        await client.send("deny", {"id": "escape", "message": "no"})
        events = await _next(client, "run_end")
        resolved = [e.data for e in events if e.event == "approval_resolved"]
        assert resolved == [{"id": "escape", "decision": "denied"}]
        await client.close()
    assert not outside.exists()
    assert json.dumps(events[-1].data) == '{"result": "finished"}'


def test_a_fleet_root_above_the_workspace_is_hidden_with_the_workspace_bound_inside(
    user_home: UserHome,  # noqa: F811
) -> None:
    # Issue 38, finding 2 in a fleet: <root>/gw-*/control.sock was reachable from a pod's
    # sandbox. The root holds the pod's workspace here: it is hidden and the workspace bound
    # again inside it, so the gateway's folder is gone and the workspace still there. The root
    # lies outside $HOME (which the sandbox hides as a whole): only hiding the root hides it.
    bwrap = needs_bwrap()
    root = user_home.home.parent / "fleet"
    workspace = root / "projects" / "a"
    workspace.mkdir(parents=True)
    control = root / "gw-node" / "control.sock"
    control.parent.mkdir(mode=0o700)
    config = PodConfig(workspace=workspace, name="a", provider="scripted")
    spec = sandbox_spec(config, extra_hidden=[root])
    client = [sys.executable, "-c", CONNECT_ONLY, str(control)]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with listener:
        listener.bind(str(control))
        listener.listen(1)  # a connection is taken by the backlog: "connected"
        script = f"{shlex.join(client)}; echo kept > inside.txt"
        argv = sandbox_argv(bwrap, spec, ["/bin/bash", "-c", script])
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("connect failed: No such file or directory"), done.stdout
    assert (workspace / "inside.txt").read_text() == "kept\n"
