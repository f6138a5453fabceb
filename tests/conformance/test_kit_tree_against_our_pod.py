"""The kit's tree cases against our pod, against pods that break a promise of the tree, and
against a pod that offers no ``task`` tool."""

from __future__ import annotations

import json
import os
import sys
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conformance.tree_cases import TREE_ACTIONS, TREE_HOLDS
from conformance.tree_driver import NO_TASK_TOOL
from tests.conformance.test_kit_against_our_pod import OUR_POD, conformance_app

pytest_plugins = ["pytester"]

HERE = Path(__file__).parent


def run_kit(
    tmp_path: Path, rows: list[str], command: list[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    """``pod conformance --rows ...`` against ``command``: exit code and JSON report."""
    report = tmp_path / "report.json"
    selected = [arg for row in rows for arg in ("--rows", row)]
    result = CliRunner().invoke(
        conformance_app(),
        ["conformance", *extra, "--report-json", str(report), *selected, "--", *command],
    )
    assert report.exists(), result.output
    data: dict[str, Any] = json.loads(report.read_text())
    return result.exit_code, data


@pytest.fixture
def checkout_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytester runs in a temporary directory: make the plugin and the pod this checkout's."""
    root = str(HERE.parents[1])
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    )


def broken_tree_pod(fault: str) -> list[str]:
    """Our pod with one sub-pod promise broken (``broken_tree_pod.py``)."""
    return [sys.executable, str(HERE / "broken_tree_pod.py"), "--fault", fault, "--", *OUR_POD[3:]]


@pytest.mark.parametrize("hold", TREE_HOLDS)
def test_every_tree_case_passes_against_our_pod(tmp_path: Path, hold: str) -> None:
    # A generous wait (the tree's own is three times it): a tree case starts two child pods,
    # which on a busy machine took past the default 30 s to reach run_end.
    code, data = run_kit(tmp_path, [f"tree-{hold}-*"], OUR_POD, "--timeout", "40")
    failed = {r["id"]: r["reasons"] for r in data["rows"] if r["outcome"] != "passed"}
    assert code == 0 and data["ok"] and not failed, failed
    assert [r["id"] for r in data["rows"]] == [f"tree-{hold}-{a}" for a in TREE_ACTIONS]
    for row in data["rows"]:
        assert row["group"] == "tree"
        bars = row["tree"]
        # Two children per case, each in one session; the bars at zero; processes were
        # seen, so "no orphan" was checked against something.
        assert bars["task_calls"] == 2 and bars["child_sessions"] == 2, row
        assert bars["children_run_twice"] == bars["orphans"] == bars["invalid_requests"] == 0
        assert bars["processes"] >= 4, row  # two children, each a pod and its supervisor
        assert row["invalid_requests"] == 0 and row["requests"] >= 3
    assert data["tree"]["cases"] == len(TREE_ACTIONS)


@pytest.mark.slow
def test_the_tree_thinks_under_the_thinking_profile(tmp_path: Path) -> None:
    rows = ["tree-child_running-crash", "tree-child_awaiting_approval-resume"]
    code, data = run_kit(tmp_path, rows, OUR_POD, "--thinking")
    failed = {r["id"]: r["reasons"] for r in data["rows"] if r["outcome"] != "passed"}
    assert code == 0 and not failed, failed
    assert data["wire"]["thinking_sent_back"] > 0
    # Without thinking on for the pod, its children's requests do not think either.
    code, data = run_kit(tmp_path, rows[:1], OUR_POD, "--thinking", "--thinking-args", "")
    (row,) = data["rows"]
    assert code == 1 and any("did not turn thinking on" in r for r in row["reasons"])


def test_a_pod_that_starts_a_second_child_on_resume_fails(tmp_path: Path) -> None:
    code, data = run_kit(tmp_path, ["tree-child_running-resume"], broken_tree_pod("second-child"))
    assert code == 1 and not data["ok"]
    (row,) = data["rows"]
    assert row["outcome"] == "failed"
    reasons = row["reasons"]
    assert any(fnmatch(r, "task call * ran in 2 child sessions") for r in reasons), reasons
    assert any(fnmatch(r, "task call * has 2 child records*") for r in reasons), reasons
    assert any("started its task over" in r for r in reasons), reasons
    assert row["tree"]["children_run_twice"] >= 4


@pytest.mark.slow
def test_a_pod_whose_children_outlive_its_kill_9_fails(tmp_path: Path) -> None:
    code, data = run_kit(tmp_path, ["tree-child_running-crash"], broken_tree_pod("orphans"))
    assert code == 1
    (row,) = data["rows"]
    assert any("after the parent's kill -9" in r for r in row["reasons"]), row["reasons"]
    assert row["tree"]["orphans"] >= 2


def test_a_pod_without_task_skips_the_tree_cases_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "xdg" / "pod" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[subpods]\nenabled = false\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    code, data = run_kit(tmp_path, ["tree-*"], OUR_POD)
    assert code == 0 and data["ok"]
    assert {r["outcome"] for r in data["rows"]} == {"skipped"}
    assert len(data["rows"]) == len(TREE_HOLDS) * len(TREE_ACTIONS)
    assert all(r["reasons"][0].startswith(NO_TASK_TOOL) for r in data["rows"])
    assert "read_file" in data["rows"][0]["reasons"][0]  # the tools it does offer
    assert data["tree"] is None


def test_the_plugin_collects_the_tree_cases_unless_told_not_to(
    pytester: pytest.Pytester, checkout_on_path: None
) -> None:
    args = ["--pod-command", " ".join(OUR_POD), "--pyargs", "conformance", "--collect-only"]
    result = pytester.runpytest_subprocess(*args, "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*tree_cases.py::tree-child_running-pause*"])
    without = pytester.runpytest_subprocess(*args, "--pod-no-tree", "-q", "-p", "no:cacheprovider")
    assert "tree_cases.py" not in without.stdout.str()


@pytest.mark.slow
def test_the_plugin_runs_a_tree_case_and_reports_its_bars(
    pytester: pytest.Pytester, checkout_on_path: None
) -> None:
    result = pytester.runpytest_subprocess(
        "--pod-command",
        " ".join(OUR_POD),
        "--pyargs",
        "conformance",
        "-k",
        "tree-child_awaiting_approval-pause",
        "-p",
        "no:cacheprovider",
        timeout=180,
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "PASSED  tree-child_awaiting_approval-pause*",
            "tree: 1 cases, 2 task calls, 2 child sessions, 0 children run twice, "
            "0 orphan processes (of * seen), 0 invalid requests",
        ]
    )
