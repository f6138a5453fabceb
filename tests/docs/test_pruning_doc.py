"""docs/pruning.md: its worked example and its config snippet hold for the code."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.config.loading import load_config
from orchestrator.config.model import PodConfig
from orchestrator.core.history import History, ToolResult
from orchestrator.core.repair import prune_before_turn
from orchestrator.core.wire import tool_result_block

DOC = Path(__file__).resolve().parents[2] / "docs" / "pruning.md"


def test_the_worked_example() -> None:
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    default = PodConfig.model_fields["prune_keep_turns"].default
    assert f"`prune_keep_turns` (default {default})" in text
    assert "In turn 5 the bound is 3" in text and prune_before_turn(5, default) == 3
    assert "`prune_keep_turns = 0` (or less) turns pruning off" in text
    assert prune_before_turn(5, 0) == prune_before_turn(5, -1) == 0


def test_a_pruned_result_sends_its_summary_alone() -> None:
    history = History()
    history.new_turn()
    result = history.append(
        ToolResult(call_id="t", summary="read_file: a.py — 2 lines", content="1\n2")
    )
    assert isinstance(result, ToolResult)
    assert tool_result_block(result)["content"] == "read_file: a.py — 2 lines\n1\n2"
    assert tool_result_block(result, pruned=True)["content"] == "read_file: a.py — 2 lines"


def test_the_snippet_loads(tmp_path: Path) -> None:
    (snippet,) = re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    (tmp_path / ".pod").mkdir()
    (tmp_path / ".pod" / "config.toml").write_text(snippet)
    assert load_config(tmp_path).prune_keep_turns == 5
