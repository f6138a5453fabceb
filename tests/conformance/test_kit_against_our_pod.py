"""The conformance kit against our own pod, against broken pods, and switched off."""

from __future__ import annotations

import json
import os
import sys
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from cli.commands.conformance import register
from conformance.cases import build_cases
from conformance.mcp_case import write_mcp_config
from conformance.plan_cases import build_plan_cases
from conformance.report import CaseResult, WireTally, run_problems, to_json

pytest_plugins = ["pytester"]

HERE = Path(__file__).parent
OUR_POD = [
    sys.executable,
    "-m",
    "cli",
    "serve",
    "--socket",
    "{socket}",
    "--workspace",
    "{workspace}",
    "--provider",
    "anthropic",
    "--allow-bash",
    "--model",
    "fake-model",
]


def broken_pod(fault: str) -> list[str]:
    """Our pod behind a proxy that breaks one protocol rule."""
    inner = [a if a != "{socket}" else "{socket}.inner" for a in OUR_POD]
    return [
        sys.executable,
        str(HERE / "broken_pod.py"),
        "--fault",
        fault,
        "--socket",
        "{socket}",
        "--",
        *inner,
    ]


@pytest.fixture
def this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytester runs in a temporary directory: make the plugin and the pod this checkout's."""
    root = str(HERE.parents[1])
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    )


@pytest.fixture
def kit_mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Our pods (started by the kit, which passes its environment on) declare the kit's MCP
    server, whose ``ask`` holds them in ``awaiting_input``."""
    home = tmp_path / "xdg"
    write_mcp_config(home / "pod" / "config.toml", sys.executable)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def conformance_app() -> typer.Typer:
    """A fresh app with only the conformance command (and a second one, so it is a group)."""
    app = typer.Typer()
    register(app)

    @app.command("noop")
    def noop() -> None:
        """Keep typer from collapsing the app into one command."""

    return app


@pytest.mark.slow
def test_every_row_passes_against_our_pod(
    pytester: pytest.Pytester, this_checkout: None, kit_mcp: Path
) -> None:
    cases = [*build_cases(), *build_plan_cases()]
    runnable = sum(1 for c in cases if c.skip_reason is None)
    result = pytester.runpytest_subprocess(
        "--pod-command",
        " ".join(OUR_POD),
        "--pyargs",
        "conformance",
        "--pod-no-tree",  # the tree cases: test_kit_tree_against_our_pod.py
        "-p",
        "no:cacheprovider",
        timeout=240,
    )
    result.assert_outcomes(passed=runnable, skipped=len(cases) - runnable)
    result.stdout.fnmatch_lines(["*pod conformance*", f"{runnable} rows passed, 0 failed*"])


def test_without_pod_command_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--pyargs", "conformance", "--collect-only", "-q", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "pod conformance" not in result.stdout.str()


def test_a_pod_that_swallows_pause_fails_with_clear_reasons(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        conformance_app(),
        [
            "conformance",
            "--report-json",
            str(report),
            "--rows",
            "idle-pause",
            "--rows",
            "executing_tools-pause",
            "--rows",
            "idle-cancel",
            "--",
            *broken_pod("swallow-pause"),
        ],
    )
    assert result.exit_code == 1, result.output
    rows = {r["id"]: r for r in json.loads(report.read_text())["rows"]}
    assert {k: r["outcome"] for k, r in rows.items()} == {
        "idle-pause": "failed",
        "idle-cancel": "passed",
        "executing_tools-pause": "failed",
    }
    assert rows["idle-pause"]["reasons"] == [
        "pause in idle: expected error 'not_running', got no error before the next get_status reply"
    ]
    assert rows["executing_tools-pause"]["reasons"] == [
        "expected a status event with state 'pausing', saw none"
    ]
    assert "1 passed, 2 failed" in result.output


def test_a_pod_that_misreports_paused_fails(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        conformance_app(),
        [
            "conformance",
            "--report-json",
            str(report),
            "--rows",
            "paused-pause",
            "--",
            *broken_pod("paused-says-idle"),
        ],
    )
    assert result.exit_code == 1, result.output
    (row,) = json.loads(report.read_text())["rows"]
    assert row["reasons"] == [
        "setup (slow stream → pause): expected the pod in 'paused', get_status says 'idle'"
    ]


@pytest.mark.parametrize(
    ("fault", "row", "reason"),
    [
        (
            "approve-as-deny",
            "awaiting_approval-approve",
            "expected approval_resolved 'approved' for *, got 'denied'",
        ),
        # Each starts a pod (a few seconds): the default run keeps one, CI runs them all.
        pytest.param(
            "session-as-once",
            "awaiting_approval-approve-session",
            "a call like the one approved with scope 'session' asked again*",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "cancel-ends-paused",
            "awaiting_approval-cancel",
            "expected run_end result 'cancelled', got 'paused'",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            "compaction-survives",
            "compacting-pause",
            "an interrupted compaction must leave the history as it was, but the pod committed*",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_pod_that_breaks_the_new_states_fails(
    tmp_path: Path, fault: str, row: str, reason: str
) -> None:
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        conformance_app(),
        ["conformance", "--report-json", str(report), "--rows", row, "--", *broken_pod(fault)],
    )
    assert result.exit_code == 1, result.output
    (only,) = json.loads(report.read_text())["rows"]
    assert only["outcome"] == "failed"
    assert any(fnmatch(r, reason) for r in only["reasons"]), only["reasons"]


def run_rows(tmp_path: Path, rows: list[str], pod: list[str], *extra: str) -> dict[str, Any]:
    """``pod conformance`` over ``rows`` against ``pod``: the report."""
    report = tmp_path / "report.json"
    selected = [arg for row in rows for arg in ("--rows", row)]
    result = CliRunner().invoke(
        conformance_app(),
        ["conformance", *extra, "--report-json", str(report), *selected, "--", *pod],
    )
    data: dict[str, Any] = json.loads(report.read_text())
    assert result.exit_code == (0 if data["ok"] else 1), result.output
    return data


def test_our_pod_is_held_awaiting_input_and_answers_it(tmp_path: Path, kit_mcp: Path) -> None:
    rows = ["awaiting_input-answer_elicitation", "awaiting_input-cancel", "awaiting_input-approve"]
    data = run_rows(tmp_path, rows, OUR_POD)
    outcomes = {r["id"]: (r["outcome"], r["reasons"]) for r in data["rows"]}
    assert outcomes == {row: ("passed", []) for row in rows}
    assert data["wire"]["invalid_requests"] == 0


def test_without_the_kit_mcp_server_the_input_rows_skip_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty"))
    rows = ["awaiting_input-pause", "awaiting_input-cancel"]
    data = run_rows(tmp_path, rows, OUR_POD)
    first, second = data["rows"]
    assert (first["outcome"], second["outcome"]) == ("skipped", "skipped")
    assert first["reasons"][0].startswith("the pod offers its model no mcp__kit__ask")
    assert "'write_file'" in first["reasons"][0]  # the tools it does offer
    assert "input tool" in second["reasons"][0]


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (
            "ignore-answer",
            "timed out after * s waiting for elicitation_resolved for * after "
            "answer_elicitation accepted it*",
        ),
        pytest.param(
            "answer-as-decline",
            "expected elicitation_resolved 'accept' for *, got 'decline'",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_a_pod_that_mishandles_an_answer_for_input_fails(
    tmp_path: Path, kit_mcp: Path, fault: str, reason: str
) -> None:
    row = "awaiting_input-answer_elicitation"
    data = run_rows(tmp_path, [row], broken_pod(fault), "--timeout", "5")
    (only,) = data["rows"]
    assert only["outcome"] == "failed"
    assert any(fnmatch(r, reason) for r in only["reasons"]), only["reasons"]


def test_cli_passes_and_writes_the_report(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        conformance_app(),
        [
            "conformance",
            "--report-json",
            str(report),
            "--rows",
            "paused-run",
            "--rows",
            "paused-resume",
            "--",
            *OUR_POD,
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    assert data["ok"] is True
    assert [r["id"] for r in data["rows"]] == ["paused-run", "paused-resume"]
    assert data["command"] == OUR_POD


def test_cli_refuses_a_command_without_socket() -> None:
    result = CliRunner().invoke(conformance_app(), ["conformance", "--", "true"])
    assert result.exit_code == 1
    assert "{socket}" in str(result.exception) or "{socket}" in result.output


def test_cli_refuses_an_approval_tool_that_is_not_a_call() -> None:
    result = CliRunner().invoke(
        conformance_app(), ["conformance", "--approval-tool", "[1]", "--", "pod", "{socket}"]
    )
    assert result.exit_code == 1
    assert "--approval-tool must be" in str(result.exception) + result.output


THINKING_ROWS = [
    "requesting-pause",  # pause mid-stream (the stream thinks first) ...
    "paused-resume",  # ... and resume it: the interrupted request again
    "executing_tools-pause",  # pause mid-tool
    "paused-run",  # a new message after a pause mid-tool: results, note, input
    "executing_tools-cancel",
    "requesting-cancel",
    "awaiting_approval-approve",
    "awaiting_approval-deny",
    "awaiting_approval-cancel",
    "idle-compact",
    "paused-compact",
    "compacting-pause",
    "compacting-cancel-from-paused",
    "summarizing-pause",
    "requesting-compaction_started",
]
"""Rows for the thinking profile's default run: every interrupt path of issue 21."""


def run_thinking_profile(
    tmp_path: Path, rows: list[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    """``pod conformance --thinking`` over ``rows`` against our pod: exit code and report."""
    report = tmp_path / "report.json"
    selected = [arg for row in rows for arg in ("--rows", row)]
    result = CliRunner().invoke(
        conformance_app(),
        [
            "conformance",
            "--thinking",
            *extra,
            "--report-json",
            str(report),
            *selected,
            "--",
            *OUR_POD,
        ],
    )
    data: dict[str, Any] = json.loads(report.read_text())
    return result.exit_code, data


def test_the_thinking_profile_passes_every_interrupt_path_of_our_pod(tmp_path: Path) -> None:
    code, data = run_thinking_profile(tmp_path, THINKING_ROWS)
    failed = {r["id"]: r["reasons"] for r in data["rows"] if r["outcome"] != "passed"}
    assert code == 0 and data["ok"] and not failed, failed
    assert sorted(r["id"] for r in data["rows"]) == sorted(THINKING_ROWS)
    assert data["thinking"] is True and data["problems"] == []
    assert data["wire"]["invalid_requests"] == 0
    assert data["wire"]["thinking_sent_back"] > 0
    # Every row that sent a request after a reply carried that reply's thinking back.
    assert all(r["thinking_sent_back"] > 0 for r in data["rows"] if r["requests"] > 1), [
        (r["id"], r["requests"], r["thinking_sent_back"]) for r in data["rows"]
    ]


def test_the_thinking_profile_fails_a_pod_that_quietly_does_not_think(tmp_path: Path) -> None:
    # No --thinking for the pod: it decides from a model whose capabilities it cannot know,
    # and sends no thinking at all.
    code, data = run_thinking_profile(tmp_path, ["idle-run"], "--thinking-args", "")
    assert code == 1 and not data["ok"]
    (row,) = data["rows"]
    assert row["outcome"] == "failed"
    assert any("did not turn thinking on" in reason for reason in row["reasons"])
    assert data["wire"]["thinking_sent_back"] == 0
    assert data["problems"] and "none sent a thinking block back" in data["problems"][0]


def test_a_run_whose_requests_sent_no_thinking_back_fails_as_a_whole() -> None:
    (case,) = [c for c in build_cases() if c.id == "idle-run"]
    silent = CaseResult.passed(case, 1.0, wire=WireTally(requests=2))
    thought = CaseResult.passed(case, 1.0, wire=WireTally(requests=2, thinking_sent_back=3))
    assert run_problems([silent, silent], thinking=True)
    assert run_problems([silent, silent], thinking=False) == []
    assert run_problems([silent, thought], thinking=True) == []
    assert json.loads(to_json([silent], command=["pod"], thinking=True))["ok"] is False
    assert json.loads(to_json([thought], command=["pod"], thinking=True))["ok"] is True


def test_the_plugin_fails_a_thinking_run_that_sent_no_thinking_back(
    pytester: pytest.Pytester, this_checkout: None
) -> None:
    # idle × compact passes on its own: one summary request, with thinking on, but nothing
    # in the history yet to carry thinking back. The row passes; the run must not.
    result = pytester.runpytest_subprocess(
        "--pod-command",
        " ".join(OUR_POD),
        "--pod-thinking",
        "--pyargs",
        "conformance",
        "-k",
        "idle-compact",
        "-p",
        "no:cacheprovider",
        timeout=120,
    )
    assert result.parseoutcomes()["passed"] == 1  # the row (rows for outcomes are skipped)
    assert "failed" not in result.parseoutcomes()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED  thinking profile: * none sent a thinking block back*"])


@pytest.mark.slow
def test_every_row_passes_against_our_pod_with_thinking_on(
    pytester: pytest.Pytester, this_checkout: None, kit_mcp: Path
) -> None:
    cases = [*build_cases(), *build_plan_cases()]
    runnable = sum(1 for c in cases if c.skip_reason is None)
    result = pytester.runpytest_subprocess(
        "--pod-command",
        " ".join(OUR_POD),
        "--pod-thinking",
        "--pyargs",
        "conformance",
        "--pod-no-tree",  # the tree cases: test_kit_tree_against_our_pod.py
        "-p",
        "no:cacheprovider",
        timeout=300,
    )
    result.assert_outcomes(passed=runnable, skipped=len(cases) - runnable)
    result.stdout.fnmatch_lines(
        [
            f"{runnable} rows passed, 0 failed*",
            "* requests, 0 refused by the fake API, * thinking blocks sent back (thinking profile)",
        ]
    )
    sent = next(
        line
        for line in result.stdout.lines
        if "thinking blocks sent back (thinking profile)" in line
    )
    assert int(sent.split(", ")[2].split()[0]) > 0
