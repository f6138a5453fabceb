"""Issue 46 against issue 38's finding 2: the HTTP API is TCP on the loopback, which a
sandboxed command reaches with ``[sandbox] network = true``. A command that could read the
API's token could approve its own unsandboxed call over HTTP, as one that reached the pod's
socket could. So ``_http.json`` lies in the runtime folder every sandbox hides, and without the
token every route is 401.

The attack, with real bubblewrap and a ``$HOME`` outside ``/tmp``: in one turn the model asks
for an unsandboxed command (it waits for a person) and a sandboxed one that runs unasked,
reads ``_http.json`` and POSTs an approval of the first for the whole session. It reads
nothing, is refused, and the call still waits for a person, who denies it.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from orchestrator.serving.http.address import host_http_info_path
from tests.faults.sandbox_home import UserHome, user_home  # noqa: F401
from tests.orchestrator.sandboxed_peer import needs_bwrap
from tests.orchestrator.serving.http.api import Stream, add_pod, start_api

DRIVER = r"""
import json, sys, urllib.error, urllib.request
info, url, pod, call = sys.argv[1:5]
token = ""
try:
    with open(info) as f:
        token = json.load(f)["token"]
    print("read the token")
except Exception as exc:
    print("read failed:", type(exc).__name__)
body = json.dumps({"decision": "approve", "scope": "session"}).encode()
request = urllib.request.Request(
    f"{url}/v1/pods/{pod}/approvals/{call}", data=body, method="POST",
    headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
)
try:
    with urllib.request.urlopen(request, timeout=30) as answer:
        print("approved", answer.status)
except urllib.error.HTTPError as exc:
    print("refused", exc.code)
except OSError as exc:
    print("unreachable", exc)
"""


async def test_a_sandboxed_command_cannot_approve_its_own_call_over_http(
    user_home: UserHome,  # noqa: F811
    short_dir: Path,
) -> None:
    needs_bwrap()
    workspace = user_home.home / "project"
    workspace.mkdir()
    outside = user_home.home / "pwned"
    info = host_http_info_path()
    api = await start_api(user_home.home.parent, short_dir, info_path=info)
    escape = {
        "name": "bash",
        "input": {"command": f"echo pwned > {shlex.quote(str(outside))}", "sandbox": False},
        "id": "escape",
    }
    argv = [sys.executable, "-c", DRIVER, str(info), api.url, "project", "escape"]
    drive = {"name": "bash", "input": {"command": shlex.join(argv)}, "id": "drive"}
    replies = [{"text": "Both.", "tool_calls": [escape, drive]}, {"text": "Done."}]
    script = user_home.home / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    # The user's own grants: the sandbox with the whole network (the host's loopback, the
    # API's port among it), sandboxed commands unasked.
    user_home.write_user_config(
        f'provider = "scripted"\nscripted_script = "{script}"\n\n'
        '[sandbox]\nmode = "on"\nnetwork = true\n\n'
        '[permissions]\nmode = "accept-edits"\n\n'
        "[skills]\nclaude_dirs = false\n"
    )
    http = api.client()
    await add_pod(http, workspace)
    stream = Stream(api.client(), "/v1/pods/project/events")
    try:
        await http.post("/v1/pods/project/runs", json={"input": "go"})
        ask = await stream.until("approval_request", timeout=120)
        assert ask.data["id"] == "escape"
        result = await stream.until("tool_result", id="drive", timeout=120)
        said = result.data["content"] or ""
        assert said.startswith("read failed:"), said  # hidden: the token is not there inside
        assert "refused 401" in said, said  # network = true: it reached the API, tokenless
        assert "approved" not in said
        assert not [f for f in stream.frames if f.event == "approval_resolved"]
        status = (await http.get("/v1/pods/project")).json()
        assert [a["id"] for a in status["approvals"]] == ["escape"]  # still a person's
        assert not outside.exists()
        denied = await http.post(
            "/v1/pods/project/approvals/escape", json={"decision": "deny", "message": "no"}
        )
        assert denied.status_code == 200, denied.text
        await stream.until("run_end", timeout=120)
        resolved = [f.data for f in stream.frames if f.event == "approval_resolved"]
        assert resolved == [{"id": "escape", "decision": "denied"}]
    finally:
        await stream.close()
        await api.close()
    assert not outside.exists()
    assert not info.exists()
