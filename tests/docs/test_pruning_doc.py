"""docs/pruning.md: its worked example and its config snippet hold for the code."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.config.loading import load_config
from orchestrator.config.model import PodConfig
from orchestrator.core.history import (
    AssistantMessage,
    History,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.repair import prune_before_turn
from orchestrator.core.segments import TextSegment
from orchestrator.core.wire import tool_result_block
from orchestrator.runtime.context import Context

DOC = Path(__file__).resolve().parents[2] / "docs" / "pruning.md"


def test_the_worked_example() -> None:
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    default = PodConfig.model_fields["prune_keep_turns"].default
    assert f"`prune_keep_turns` (default {default})" in text
    assert "in turn 5 the target is 3" in text and prune_before_turn(5, default) == 3
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
    config = load_config(tmp_path)
    assert config.prune_keep_turns == 5 and config.prune_step_tokens == 0


def reads(turns: int, chars: int) -> History:
    """``turns`` turns, each reading a file of ``chars`` characters."""
    history = History()
    for turn in range(turns):
        history.new_turn()
        history.append(UserMessage(segments=[TextSegment(text=f"t{turn}")], text=f"t{turn}"))
        call = ToolUseBlock(id=f"toolu_{turn}", name="read_file", input={"path": "a.py"})
        history.append(AssistantMessage(blocks=[call]))
        history.append(ToolResult(call_id=call.id, summary="read_file: a.py", content="x" * chars))
        history.append(AssistantMessage(blocks=[TextBlock(text=f"done {turn}")]))
    return history


def test_the_bound_moves_in_steps_of_the_documented_default(tmp_path: Path) -> None:
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    step = PodConfig.model_fields["prune_step_tokens"].default
    assert f"`prune_step_tokens` (default {step:,})" in text
    config = PodConfig(workspace=tmp_path)
    # Turn 5 of reads worth a quarter of a step each: the target is 3, the two prunable reads
    # drop half a step, so the bound stays and the old results are sent whole.
    small = Context(config=config, history=reads(5, step))
    assert small.prune_move() is None
    # The same turns with reads worth a step each: the bound moves to the target at once.
    large = Context(config=config, history=reads(5, 4 * step))
    assert large.prune_move() == (3, 2 * step)


def test_a_step_of_zero_prunes_every_turn(tmp_path: Path) -> None:
    config = PodConfig(workspace=tmp_path, prune_step_tokens=0)
    for turn in range(3, 7):
        context = Context(config=config, history=reads(turn, 40))
        assert context.prune_move() == (turn - 2, (turn - 3) * 10)
