"""The kit's MCP case against our pod: the running-tool rows with an MCP tool as the slow one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.driver import run_cases
from conformance.mcp_case import SLOW_TOOL, mcp_cases, mcp_options, write_mcp_config
from conformance.process import KitOptions
from tests.conformance.test_kit_against_our_pod import OUR_POD


def test_the_case_selects_the_running_tool_rows() -> None:
    cases = mcp_cases()
    assert cases
    assert {c.setup.hold for c in cases if c.setup is not None} == {"slow_tool"}
    assert {c.row.state for c in cases} >= {"executing_tools"}


@pytest.mark.slow
def test_running_tool_rows_pass_with_an_mcp_slow_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_mcp_config(tmp_path / "xdg" / "pod" / "config.toml", sys.executable)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    options = mcp_options(KitOptions(command=tuple(OUR_POD)))
    assert options.slow_tool == SLOW_TOOL
    results = run_cases(mcp_cases(), options)
    failed = [(r.id, r.reasons) for r in results if r.outcome != "passed"]
    assert results and failed == []
