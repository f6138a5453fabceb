"""The official MCP conformance suite's client scenarios (``@modelcontextprotocol/conformance``
0.1.16), with ``pod run`` as the client under test (``tests/mcp/conformance_client.py``).

The suite needs Node 22 or newer; without it, or without the suite, these tests are skipped
with what to install. The ``auth/*`` scenarios sign in first (``pod mcp login``; the
client-credentials one needs no login). Every client scenario, every core and draft auth
scenario and ``auth/client-credentials-basic`` must pass; the JWT and cross-app extension
scenarios are run and reported. All auth scenarios but the basic one run with ``-m slow``,
several at once.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-basic",
]
"""The rest of the suite's core ``auth`` scenarios, its draft ones and the client-credentials
extension, all of which must pass; ``auth/metadata-default`` runs with the quick ones."""
REPORTED = {
    "auth/client-credentials-jwt": "the client-credentials grant with a private_key_jwt "
    "assertion is not offered by the pod (only a client secret from the environment)",
    "auth/cross-app-access-complete-flow": "enterprise cross-app access (token exchange, then "
    "a JWT bearer grant) is not offered by the pod",
}
"""Extension scenarios the pod does not claim: run and reported (xfail with the suite's words
when they fail), never failing the run."""
AT_ONCE = 3
"""Auth scenarios run at once: each is mostly waiting (a node server, two pod processes), so
three share 2 CPUs without one passing its ceiling."""

SCENARIO_TIMEOUT_MS = "300000"
"""The suite's own limit per scenario (its default, 30 s, is less than one scenario took on a
loaded 2-CPU machine: 33 to 124 s; measured here 4 to 11 s alone, 23 to 56 s three at once
beside other work, 95 s for the step-up, which signs in twice). A ceiling, not a pace: a
scenario ends when it is done."""


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


@dataclass(frozen=True)
class Outcome:
    """One scenario's run: the suite's checks and how long it took."""

    checks: list[dict[str, Any]]
    seconds: float


def _outcome(scenario: str, out: Path) -> Outcome:
    began = time.monotonic()
    try:
        checks = run_scenario(scenario, out)
    except (AssertionError, subprocess.TimeoutExpired) as exc:  # no checks: say why, in its test
        checks = [{"id": "run", "status": "FAILURE", "description": str(exc)[-3000:]}]
    return Outcome(checks, time.monotonic() - began)


@pytest.fixture(scope="module")
def auth_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every auth scenario, run AT_ONCE at a time (each within its ceiling)."""
    wanted = [*AUTH_SCENARIOS, *REPORTED]
    with ThreadPoolExecutor(AT_ONCE) as pool:
        runs = {
            scenario: pool.submit(_outcome, scenario, tmp_path_factory.mktemp("conformance"))
            for scenario in wanted
        }
        return {scenario: run.result() for scenario, run in runs.items()}


AUTH_GROUP = pytest.mark.xdist_group("mcp-auth")
"""The auth tests share one worker (pyproject's ``--dist loadgroup``): its module fixture runs
every auth scenario, and each worker holding one of them ran all of them again (94 s twice)."""


@pytest.mark.slow
@AUTH_GROUP
@pytest.mark.parametrize("scenario", AUTH_SCENARIOS)
def test_the_auth_scenario_passes(
    scenario: str, auth_outcomes: dict[str, Outcome], request: pytest.FixtureRequest
) -> None:
    outcome = auth_outcomes[scenario]
    # In a --junitxml report's properties: the times docs/mcp.md gives.
    request.node.user_properties.append(("seconds", round(outcome.seconds)))
    assert failures(outcome.checks) == [], f"{scenario} ({outcome.seconds:.0f} s)"
    assert any(check["status"] == "SUCCESS" for check in outcome.checks), outcome.checks


@pytest.mark.slow
@AUTH_GROUP
@pytest.mark.parametrize("scenario", sorted(REPORTED))
def test_the_extension_scenario_is_reported(
    scenario: str, auth_outcomes: dict[str, Outcome]
) -> None:
    failed = failures(auth_outcomes[scenario].checks)
    if failed:
        pytest.xfail(f"{REPORTED[scenario]}; the suite: {failed[0]}")
