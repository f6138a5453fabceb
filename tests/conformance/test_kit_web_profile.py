"""The kit's server-tools profile (``pod conformance --web``) against our pod: every reply
searches first (pause_turn and its continuation, cited text, a server call left open beside
the client calls), through every interrupt path, and no request is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from conformance.cases import build_cases
from conformance.report import CaseResult, WireTally, run_problems, to_json
from tests.conformance.test_kit_against_our_pod import OUR_POD, conformance_app

WEB_ROWS = [
    "requesting-pause",  # pause mid-stream of a continuation ...
    "paused-resume",  # ... and resume it: the same continuation again
    "executing_tools-pause",  # pause mid-tool, a server call left open beside the calls
    "paused-run",  # a new message after it: client results, the open call closed, note, input
    "executing_tools-cancel",
    "requesting-cancel",
    "awaiting_approval-approve",
    "awaiting_approval-deny",
    "awaiting_approval-cancel",
    "idle-compact",
    "paused-compact",
    "compacting-cancel-from-paused",
    "summarizing-pause",
    "requesting-compaction_started",
]
"""Every interrupt path of a turn, each with a server loop in it."""


def run_web_profile(tmp_path: Path, rows: list[str], *extra: str) -> tuple[int, dict[str, Any]]:
    """``pod conformance --web`` over ``rows`` against our pod: exit code and report."""
    report = tmp_path / "report.json"
    selected = [arg for row in rows for arg in ("--rows", row)]
    result = CliRunner().invoke(
        conformance_app(),
        ["conformance", "--web", *extra, "--report-json", str(report), *selected, "--", *OUR_POD],
    )
    data: dict[str, Any] = json.loads(report.read_text())
    return result.exit_code, data


def test_the_server_tools_profile_passes_every_interrupt_path_of_our_pod(tmp_path: Path) -> None:
    code, data = run_web_profile(tmp_path, WEB_ROWS)
    failed = [(r["id"], r["reasons"]) for r in data["rows"] if r["outcome"] == "failed"]
    assert code == 0, failed
    assert data["web"] is True and data["problems"] == []
    assert data["wire"]["invalid_requests"] == 0
    assert data["wire"]["server_blocks_sent_back"] > 0
    # Every row that sent a request after a reply carried that reply's server blocks back.
    assert all(r["server_blocks_sent_back"] > 0 for r in data["rows"] if r["requests"] > 1), [
        (r["id"], r["requests"], r["server_blocks_sent_back"]) for r in data["rows"]
    ]


def test_the_server_tools_profile_with_thinking_on(tmp_path: Path) -> None:
    rows = ["requesting-pause", "paused-resume", "executing_tools-pause", "paused-run"]
    code, data = run_web_profile(tmp_path, rows, "--thinking")
    failed = [(r["id"], r["reasons"]) for r in data["rows"] if r["outcome"] == "failed"]
    assert code == 0, failed
    assert data["wire"]["invalid_requests"] == 0
    assert data["wire"]["thinking_sent_back"] > 0 and data["wire"]["server_blocks_sent_back"] > 0


def test_the_profile_fails_a_pod_that_quietly_does_not_search(tmp_path: Path) -> None:
    # No --web on for the pod: fake-model's capabilities are unknown, "auto" declares nothing,
    # no reply searches, and the run fails as a whole though its row passes.
    code, data = run_web_profile(tmp_path, ["idle-run"], "--web-args", "")
    assert code == 1
    assert [r["outcome"] for r in data["rows"]] == ["passed"]
    assert data["wire"]["server_blocks_sent_back"] == 0
    assert data["problems"] and "none sent a server tool block back" in data["problems"][0]


def test_a_run_whose_requests_sent_no_server_block_back_fails_as_a_whole() -> None:
    case = build_cases()[0]
    silent = CaseResult.passed(case, 1.0, wire=WireTally(requests=2))
    searched = CaseResult.passed(case, 1.0, wire=WireTally(requests=2, server_blocks_sent_back=4))
    assert run_problems([silent, silent], thinking=False, web=True)
    assert not run_problems([silent, searched], thinking=False, web=True)
    assert not run_problems([silent], thinking=False)  # not the profile: nothing to say
    report = json.loads(to_json([silent, searched], command=["pod"], web=True))
    assert report["web"] is True and report["wire"]["server_blocks_sent_back"] == 4
