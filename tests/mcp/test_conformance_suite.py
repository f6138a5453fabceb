"""The official MCP conformance suite's client scenarios (``@modelcontextprotocol/conformance``
0.1.16), with ``pod run`` as the client under test (``tests/mcp/conformance_client.py``).

The suite needs Node 22 or newer; without it, or without the suite, these tests are skipped
with what to install. The ``auth/*`` scenarios sign in first (``pod mcp login``); those the
pod's OAuth cannot pass yet are listed in ``conformance-baseline.yml`` as expected failures
(the suite then fails a run in which one passes, so the baseline cannot go stale). All but the
basic one run with ``-m slow``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.npm_tools import INSTALL, conformance, node

NODE = node(22)
SUITE = conformance()
CLIENT = Path(__file__).with_name("conformance_client.py")
pytestmark = pytest.mark.skipif(
    NODE is None or SUITE is None,
    reason=f"the MCP conformance suite or Node 22+ is not installed; {INSTALL}",
)

SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
]
"""The scenarios run by default: all that need no OAuth, and OAuth's basic flow."""
BASELINE = Path(__file__).with_name("conformance-baseline.yml")
"""The scenarios the pod is known to fail (the suite's ``--expected-failures`` file)."""
AUTH_SCENARIOS = [
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
]
"""The rest of the suite's ``auth`` scenarios (its draft and extension ones aside);
``auth/metadata-default`` runs with the quick ones."""


SCENARIO_TIMEOUT_MS = "300000"
"""The suite's own limit per scenario (its default, 30 s, is less than one scenario took on a
loaded 2-CPU machine: 33 to 124 s). A ceiling, not a pace: a scenario ends when it is done."""


def run_scenario(scenario: str, out: Path) -> list[dict[str, Any]]:
    """Run one scenario against ``pod run``; the suite's checks."""
    assert NODE is not None and SUITE is not None
    command = shlex.join([sys.executable, str(CLIENT)])
    done = subprocess.run(
        [NODE, SUITE, "client", "--command", command, "--scenario", scenario, "-o", str(out),
         "--timeout", SCENARIO_TIMEOUT_MS],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    found = list(out.rglob("checks.json"))  # auth/x nests a folder
    assert len(found) == 1, done.stdout[-3000:] + done.stderr[-3000:]
    checks: list[dict[str, Any]] = json.loads(found[0].read_text())
    return checks


def failures(checks: list[dict[str, Any]]) -> list[str]:
    return [
        f"{check['id']}: {check.get('errorMessage') or check['description']}"
        for check in checks
        if check["status"] in ("FAILURE", "WARNING")
    ]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_scenario_passes(scenario: str, tmp_path: Path) -> None:
    checks = run_scenario(scenario, tmp_path / "results")
    assert failures(checks) == []
    assert any(check["status"] == "SUCCESS" for check in checks), checks
    if scenario == "initialize":
        [init] = [check for check in checks if check["id"] == "mcp-client-initialization"]
        from orchestrator.adapters.mcp.client_side import client_version

        assert init["details"]["clientName"] == "pod-orchestrator"
        assert init["details"]["clientVersion"] == client_version()


@pytest.mark.slow
@pytest.mark.parametrize("scenario", AUTH_SCENARIOS)
def test_the_auth_scenario_passes_or_fails_as_the_baseline_says(
    scenario: str, tmp_path: Path
) -> None:
    # The suite exits 0 when a scenario passes or when one in the baseline fails, and 1 when
    # one fails unexpectedly or one in the baseline passes (so the baseline cannot go stale).
    assert NODE is not None and SUITE is not None
    command = shlex.join([sys.executable, str(CLIENT)])
    done = subprocess.run(
        [NODE, SUITE, "client", "--command", command, "--scenario", scenario,
         "--expected-failures", str(BASELINE), "-o", str(tmp_path / "results"),
         "--timeout", SCENARIO_TIMEOUT_MS],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
