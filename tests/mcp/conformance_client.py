"""The pod as the client under test of the MCP conformance suite (``@modelcontextprotocol/
conformance``, client scenarios): ``pod run`` with a scripted model, in a private state.

    conformance client --command "python tests/mcp/conformance_client.py" --scenario NAME

The suite starts a server for the scenario, then runs this command with the server's URL as
its last argument and the scenario's name in ``MCP_CONFORMANCE_SCENARIO``. This writes a user
config naming that server (its tools allowed, ``[mcp] elicitation = "defaults"``) and a script
whose model calls the scenario's tool, runs ``pod run`` in a new workspace, and shuts the pod
down. An ``auth/*`` scenario first signs in with ``pod mcp login`` (its "browser" follows the
authorization server's redirect back to the pod). Everything lives in a temporary directory, removed at the end: the runtime, state and
config directories too, so the user's pods and config are never touched. Its exit code is
``pod run``'s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CALLS: dict[str, list[tuple[str, dict[str, object]]]] = {
    "initialize": [],
    "tools_call": [("add_numbers", {"a": 5, "b": 3})],
    "elicitation-sep1034-client-defaults": [("test_client_elicitation_defaults", {})],
    "sse-retry": [("test_reconnection", {})],
}
"""What the model calls in each scenario; an ``auth/*`` one calls the ``test-tool`` its server
offers (so a server that wants more scope for a call can say so)."""
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The URL-based client ID ``auth/basic-cimd`` expects (its document is the scenario's)."""
MACHINE_SCENARIOS = ("auth/client-credentials-basic",)
"""Scenarios of the client-credentials grant: the pod gets its tokens itself, no login."""


def script(scenario: str) -> dict[str, object]:
    """The scripted model's replies: the scenario's tool calls, then a last answer."""
    replies: list[dict[str, object]] = [
        {"tool_calls": [{"name": f"mcp__conformance__{tool}", "input": arguments}]}
        for tool, arguments in CALLS.get(
            scenario, [("test-tool", {})] if scenario.startswith("auth/") else []
        )
    ]
    return {"replies": [*replies, {"text": f"scenario {scenario} done"}]}


def user_config(url: str, script_file: Path, context: dict[str, str], scenario: str = "") -> str:
    """The user's config: the script as the model, the scenario's server with its tools
    allowed, input answered by defaults, and the client the scenario registered beforehand
    (its secret from the environment, as a user would keep it)."""
    client = (
        f"oauth_client_id = {json.dumps(context['client_id'])}\n"
        'oauth_client_secret = "${CONFORMANCE_CLIENT_SECRET}"\n'
        if "client_id" in context and "client_secret" in context
        else ""
    )
    if scenario in MACHINE_SCENARIOS:
        client += 'oauth_grant = "client_credentials"\n'
    if scenario == "auth/basic-cimd":
        client += f"oauth_client_metadata_url = {json.dumps(CIMD_URL)}\n"
    return (
        'provider = "scripted"\n'
        f"scripted_script = {json.dumps(str(script_file))}\n\n"
        "[mcp]\n"
        'elicitation = "defaults"\n\n'
        "[mcp.servers.conformance]\n"
        f"url = {json.dumps(url)}\n"
        'permission = "allow"\n'
        "timeout_s = 20\n" + client
    )


def main(argv: list[str]) -> int:
    """Run the scenario's turn against the server at ``argv[-1]``; ``pod run``'s exit code."""
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="pod-conf") as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        (root / "config" / "pod").mkdir(parents=True)
        script_file = root / "script.json"
        script_file.write_text(json.dumps(script(scenario)))
        (root / "config" / "pod" / "config.toml").write_text(
            user_config(url, script_file, context, scenario)
        )
        python_path = os.environ.get("PYTHONPATH")
        env = {
            **os.environ,
            "XDG_RUNTIME_DIR": str(root / "run"),
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "config"),
            # A host would outlive this directory; one pod process, shut down below.
            "POD_NO_HOST": "1",
            # The pod in the background runs this checkout, whatever is installed.
            "PYTHONPATH": f"{REPO}{os.pathsep}{python_path}" if python_path else str(REPO),
            "CONFORMANCE_CLIENT_SECRET": str(context.get("client_secret", "")),
        }
        env.pop("ANTHROPIC_API_KEY", None)
        (root / "run").mkdir(mode=0o700)
        pod = [sys.executable, "-m", "cli"]
        where = ["--workspace", str(workspace)]
        login = [*pod, "mcp", "login", "conformance", *where]
        signs_in = scenario.startswith("auth/") and scenario not in MACHINE_SCENARIOS
        if signs_in:
            # The sign-in page of the suite's authorization server approves at once: a
            # "browser" that fetches it and follows its redirect to the pod's loopback will do.
            browser = root / "browser"
            browser.write_text(
                f"#!/bin/sh\nexec {sys.executable} -c 'import sys, urllib.request; "
                'urllib.request.urlopen(sys.argv[1], timeout=30).read()\' "$1"\n'
            )
            browser.chmod(0o755)
            env["BROWSER"] = str(browser)
            signed = subprocess.run(login, env=env, cwd=REPO, stdin=subprocess.DEVNULL, check=False)
            if signed.returncode != 0:
                return signed.returncode
        code = run_turn(pod, where, scenario, env)
        if signs_in and wants_more_scope(root / "state"):
            # The call was refused for want of scope, and the pod said to sign in again (a
            # person reading its message would): the login asks for the wider scope.
            signed = subprocess.run(login, env=env, cwd=REPO, stdin=subprocess.DEVNULL, check=False)
            if signed.returncode != 0:
                return signed.returncode
            code = run_turn(pod, where, scenario, env)
        return code


def run_turn(pod: list[str], where: list[str], scenario: str, env: dict[str, str]) -> int:
    """One ``pod run`` of the scenario's turn, the pod shut down after; its exit code."""
    try:
        run = subprocess.run(
            [*pod, "run", *where, "--new", f"run the {scenario or 'conformance'} scenario"],
            env=env, cwd=REPO, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    finally:
        subprocess.run([*pod, "shutdown", *where], env=env, cwd=REPO, check=False)
    return run.returncode


def wants_more_scope(state: Path) -> bool:
    """Whether the pod kept a scope the server asked for beyond its grant (a step-up)."""
    for found in state.rglob("mcp-oauth/*.json"):
        if json.loads(found.read_text()).get("wanted_scope"):
            return True
    return False


if __name__ == "__main__":
    sys.exit(main(sys.argv))
