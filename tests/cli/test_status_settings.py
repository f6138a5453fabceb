"""`pod status` says where commands run and what thinking the requests ask for."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.runtime.status import status_text
from tests.cli.helpers import pod


def _status(env: dict[str, str], workspace: Path, *args: str) -> tuple[str, dict[str, object]]:
    shown = pod(env, "status", "--workspace", str(workspace), *args)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(pod(env, "status", "--workspace", str(workspace), "--json").stdout)
    return shown.stdout, data


def test_status_shows_the_sandbox_and_thinking(env: dict[str, str], workspace: Path) -> None:
    # The tests' user config turns the sandbox off (tests/conftest.py).
    done = pod(env, "run", "hello", "--allow-bash", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    text, data = _status(env, workspace)
    assert data["sandbox"] == "off: commands run unsandboxed"
    assert data["thinking"]  # asked of the (scripted) model by the first turn
    assert f"thinking {data['thinking']} · sandbox off: commands run unsandboxed" in text


def test_status_with_the_sandbox_on(env: dict[str, str], workspace: Path) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.write_text('[sandbox]\nmode = "auto"\nnetwork = ["example.org"]\n')
    done = pod(env, "run", "hello", "--allow-bash", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    _, data = _status(env, workspace)
    # bwrap is installed where the suite runs; without it the pod says why instead.
    assert data["sandbox"] == "on · network to example.org" or str(data["sandbox"]).startswith(
        "unavailable ("
    ), data["sandbox"]


def test_status_text_before_the_first_turn() -> None:
    data = {
        "name": "p", "status": "idle", "state": "idle", "provider": "scripted",
        "model": "m", "turn": 0, "workspace": "/w", "thinking": "", "sandbox": "on · network off",
    }  # fmt: skip
    lines = status_text(data).splitlines()
    assert "thinking not asked yet · sandbox on · network off · mode default" in lines


def test_status_text_says_the_budgets_only_when_one_is_set() -> None:
    data: dict[str, object] = {
        "name": "p", "status": "paused", "state": "paused", "provider": "anthropic",
        "model": "m", "turn": 2, "workspace": "/w", "thinking": "", "sandbox": "off",
        "budget": {"budget_usd": None, "turn_budget_usd": None, "spent_usd": 1.5,
                   "turn_spent_usd": 0.5},
        "pause_reason": "user",
    }  # fmt: skip
    assert "budget:" not in status_text(data)
    data["budget"] = {"budget_usd": 2.0, "turn_budget_usd": None, "spent_usd": 2.01,
                      "turn_spent_usd": 0.5}  # fmt: skip
    data["pause_reason"] = "budget"
    [line] = [line for line in status_text(data).splitlines() if line.startswith("budget:")]
    assert line == (
        "budget: session $2.0100 of $2.0000 · turn $0.5000 of no cap · paused at the budget "
        "(pod budget set, then pod resume)"
    )
