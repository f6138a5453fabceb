"""Issue 38, finding 8: an allow-listed loopback ``host:port`` is reached inside the sandbox at
that same address, without proxy settings; nothing else on the host's loopback is, and the
command's own servers on its own loopback are reached directly.

Through a real pod (the user's config on a ``$HOME`` outside ``/tmp``, real ``bwrap``, real
HTTP servers on the host's loopback): before the bridge forwarded loopback entries,
``NO_PROXY`` sent ``127.0.0.1`` straight to the sandbox's own, empty loopback, and the
allowed server was refused.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from typing import Any

import pytest

from orchestrator.config.loading import load_config
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.faults.sandbox_home import UserHome, user_home  # noqa: F401
from tests.orchestrator.adapters.sandbox.web import hello_server
from tests.orchestrator.sandboxed_peer import needs_bwrap

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="no curl here")

PYTHON = shlex.quote(sys.executable)

URLOPEN_WITHOUT_PROXY = (
    "env -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u http_proxy -u https_proxy -u all_proxy "
    f"-u NO_PROXY -u no_proxy {PYTHON} -c "
    + shlex.quote(
        "import sys, urllib.request as u\n"
        "try: print(u.urlopen(sys.argv[1], timeout=60).read().decode(), end='')\n"
        "except Exception as e: print('failed:', e)"
    )
)
"""A Python client that knows of no proxy at all: only the address it is given."""

OWN_SERVER = f"{PYTHON} -c " + shlex.quote(
    "import http.server, subprocess, sys, threading\n"
    "class Own(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        body = b'the command s own server\\n'\n"
    "        self.send_response(200)\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        self.wfile.write(body)\n"
    "    def log_message(self, *args):\n"
    "        pass\n"
    # Listening before the client starts: no wait, no race.
    "server = http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), Own)\n"
    "threading.Thread(target=server.serve_forever, daemon=True).start()\n"
    "url = f'http://127.0.0.1:{sys.argv[1]}/'\n"
    "subprocess.run(['curl', '-sS', '-m', '60', url])\n"
)
"""Serve on ``127.0.0.1:PORT`` of the sandbox's own loopback, and curl it (with the proxy
variables the bridge set)."""

BIND = f"{PYTHON} -c " + shlex.quote(
    "import socket, sys\n"
    "s = socket.socket()\n"
    "try: s.bind(('127.0.0.1', int(sys.argv[1]))); print('bound')\n"
    "except OSError as e: print('not bound:', e.strerror)"
)


async def _run_sandboxed(
    home: UserHome, network: list[str], commands: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Run each command as a sandboxed ``bash`` call of a real pod whose user config lists
    ``network``; each call's result, by name. None is asked: they run because sandboxed."""
    entries = ", ".join(f'"{entry}"' for entry in network)
    home.write_user_config(
        f'[sandbox]\nmode = "on"\nnetwork = [{entries}]\n\n[permissions]\nmode = "accept-edits"\n'
    )
    workspace = home.home / "ws"
    workspace.mkdir()
    calls = [
        ScriptedToolCall(name="bash", input={"command": command}, id=name)
        for name, command in commands.items()
    ]
    replies = [ScriptedReply(text="Fetching.", tool_calls=calls), ScriptedReply(text="Done.")]
    config = load_config(workspace, provider="scripted", name="t")
    async with running_pod(workspace, home.runtime, replies=replies, loaded=config) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=180)
        await client.close()
    assert events[-1].data["result"] == "finished"
    assert not [e for e in events if e.event == "approval_request"]
    return {e.data["id"]: e.data for e in events if e.event == "tool_result"}


async def test_an_allowed_loopback_port_is_reached_at_its_own_address(
    user_home: UserHome,  # noqa: F811
) -> None:
    needs_bwrap()
    with hello_server() as allowed, hello_server() as unlisted:
        results = await _run_sandboxed(
            user_home,
            [f"127.0.0.1:{allowed}"],
            {
                "curl": f"curl -sS -m 60 http://127.0.0.1:{allowed}/curl",
                "python": f"{URLOPEN_WITHOUT_PROXY} http://127.0.0.1:{allowed}/python",
                "unlisted": f"curl -sS -m 60 http://127.0.0.1:{unlisted}/; echo rc=$?",
                "unlisted-python": f"{URLOPEN_WITHOUT_PROXY} http://127.0.0.1:{unlisted}/",
            },
        )
    # The old code: "curl: (7) Failed to connect to 127.0.0.1 port …" for both.
    assert results["curl"]["content"] == f"hello /curl (Host: 127.0.0.1:{allowed})\n"
    assert results["python"]["content"] == f"hello /python (Host: 127.0.0.1:{allowed})\n"
    # A port not on the list is the sandbox's own loopback's, where nothing listens.
    unlisted_out = results["unlisted"]["content"]
    assert "hello" not in unlisted_out and "rc=7" in unlisted_out, unlisted_out
    assert results["unlisted-python"]["content"].startswith("failed: <urlopen error [Errno 111]")


async def test_localhost_on_the_list_is_reached_as_localhost(
    user_home: UserHome,  # noqa: F811
) -> None:
    needs_bwrap()
    with hello_server() as allowed:
        results = await _run_sandboxed(
            user_home,
            [f"localhost:{allowed}"],
            {"curl": f"curl -sS -m 60 http://localhost:{allowed}/name"},
        )
    assert results["curl"]["content"] == f"hello /name (Host: localhost:{allowed})\n"


async def test_the_commands_own_servers_stay_direct_and_a_forwarded_port_is_taken(
    user_home: UserHome,  # noqa: F811
) -> None:
    needs_bwrap()
    with hello_server() as allowed, hello_server() as unlisted:
        results = await _run_sandboxed(
            user_home,
            [f"127.0.0.1:{allowed}"],
            {
                # The host has a server on this port too: inside, the command's own answers.
                "own": f"{OWN_SERVER} {unlisted}",
                "taken": f"{BIND} {allowed}",
            },
        )
    assert results["own"]["content"] == "the command s own server\n"
    assert results["taken"]["content"] == "not bound: Address already in use\n"
