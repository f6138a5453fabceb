"""`pod run`'s exit codes, one per outcome: 0 finished, 1 errored, 2 usage error, 5 limit
reached, 6 paused at a budget (3 paused and 4 cancelled: tests/cli/test_run_cmd.py, from a
real Ctrl-C)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli.commands.run import EXIT_CODES
from tests.cli.helpers import pod, scripted_pod


def test_each_outcome_has_its_own_code_and_none_is_clicks_usage_code() -> None:
    assert EXIT_CODES == {
        "finished": 0,
        "errored": 1,
        "paused": 3,
        "cancelled": 4,
        "limit_reached": 5,
        "budget": 6,
    }


@pytest.mark.parametrize(
    ("args", "needle"),
    [(["--no-such-flag", "hi"], "No such option"), ([], "'PROMPT': missing")],
)
def test_a_usage_error_exits_2(
    env: dict[str, str], workspace: Path, args: list[str], needle: str
) -> None:
    done = pod(env, "run", *args, "--workspace", str(workspace))
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr


def _run(env: dict[str, str], socket: Path) -> subprocess.CompletedProcess[str]:
    return pod(env, "run", "go", "--socket", str(socket))


def test_a_finished_turn_exits_0(env: dict[str, str], workspace: Path) -> None:
    with scripted_pod(env, workspace, [{"text": "all done"}]) as socket:
        done = _run(env, socket)
    assert (done.returncode, done.stdout) == (0, "all done\n"), done.stderr


def test_an_errored_turn_exits_1(env: dict[str, str], workspace: Path) -> None:
    with scripted_pod(env, workspace, [{"error": "the stream broke"}]) as socket:
        done = _run(env, socket)
    assert done.returncode == 1, done.stderr
    assert "provider_error: the stream broke" in done.stderr


def test_a_turn_that_reaches_its_round_limit_exits_5(env: dict[str, str], workspace: Path) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("max_rounds = 1\n")
    # The first reply calls a tool, so the turn needs a second request: one more than allowed.
    replies: list[dict[str, Any]] = [
        {"text": "Looking.", "tool_calls": [{"name": "glob", "input": {"pattern": "*.md"}}]},
        {"text": "never asked for"},
    ]
    with scripted_pod(env, workspace, replies) as socket:
        done = _run(env, socket)
    assert done.returncode == 5, done.stderr
    assert "never asked for" not in done.stdout


def test_a_turn_paused_at_its_budget_exits_6_and_goes_on_once_raised(
    env: dict[str, str], workspace: Path
) -> None:
    # A turn budget of $0: the pod pauses before its first request, sending nothing.
    with scripted_pod(env, workspace, [{"text": "all done"}], "--turn-budget-usd", "0") as socket:
        done = _run(env, socket)
        assert done.returncode == 6, done.stderr
        assert done.stdout == ""
        said = "pod: paused at the budget: spent $0.0000 of the turn's turn_budget_usd $0.0000"
        assert said in done.stderr
        assert "pod budget set --turn-budget-usd AMOUNT" in done.stderr
        # Resuming without raising pauses again at once, with the same sentence.
        again = pod(env, "resume", "--socket", str(socket))
        assert again.returncode == 6 and said in again.stderr, again.stderr
        shown = pod(env, "budget", "show", "--pod", str(socket))
        assert "paused at the budget" in shown.stdout, shown.stderr
        raised = pod(env, "budget", "set", "--turn-budget-usd", "none", "--pod", str(socket))
        assert raised.returncode == 0 and "turn $0.0000 of no cap" in raised.stdout, raised
        resumed = pod(env, "resume", "--socket", str(socket))
    assert (resumed.returncode, resumed.stdout) == (0, "all done\n"), resumed.stderr


def test_the_help_gives_the_exit_codes_as_a_table(env: dict[str, str]) -> None:
    shown = pod(env, "run", "--help", env_extra={"COLUMNS": "80"})
    lines = [line.strip() for line in shown.stdout.splitlines()]
    start = lines.index("Exit codes:")
    assert [line.split()[0] for line in lines[start + 1 : start + 8]] == list("0123456")
    assert lines[start + 3] == "2  usage error: a flag or value pod run does not take"
    assert lines[start + 6] == "5  limit reached: the turn's max_rounds or max_turn_tokens"
    assert lines[start + 7] == "6  paused at a budget: pod budget set, then pod resume"


def test_a_model_the_scripted_provider_does_not_use_is_said_not_to_apply(
    env: dict[str, str], workspace: Path
) -> None:
    # No API key: the pod `pod run` starts answers from the scripted provider, whatever model
    # was asked for; saying nothing let a person believe the model answered.
    done = pod(env, "run", "hi", "--model", "claude-opus-4-1", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    assert (
        "pod: warning: --model claude-opus-4-1 does not apply: the scripted provider answers, "
        "not a model"
    ) in done.stderr
