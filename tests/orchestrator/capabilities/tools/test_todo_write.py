"""``todo_write``: Claude Code's shape, a clear error for a bad list (nothing kept then), and
the list the model now has as its result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.adapters.session import SessionWriteError
from orchestrator.capabilities.permissions import pod_policy, subject_of
from orchestrator.capabilities.tools.base import ToolContext, ToolError, tool_kind
from orchestrator.capabilities.tools.todos import TodoWriteTool
from orchestrator.config.model import PodConfig
from orchestrator.config.permissions import PermissionsConfig
from orchestrator.core.todos import MAX_TODOS, Todo


class Keeper:
    """Keeps what it is given, or refuses like a full disk."""

    def __init__(self, refuse: bool = False) -> None:
        self.kept: list[tuple[str, tuple[Todo, ...]]] = []
        self.refuse = refuse

    async def write(self, call_id: str, todos: tuple[Todo, ...]) -> None:
        if self.refuse:
            raise SessionWriteError(Path("/s.jsonl"), OSError(28, "No space left on device"))
        self.kept.append((call_id, todos))


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        fs=ScopedFS(tmp_path), workspace=tmp_path, scratch_dir=tmp_path, call_id="toolu_1"
    )


async def test_claude_codes_spelling_and_ours_are_both_taken(tmp_path: Path) -> None:
    keeper = Keeper()
    tool = TodoWriteTool(keeper)
    todos = [
        {"content": " Run the tests ", "status": "in_progress", "activeForm": "Running them"},
        {"content": "Fix the bug", "status": "pending", "active_form": "Fixing it"},
        {"content": "Read the code", "status": "completed"},
    ]
    out = await tool.run({"todos": todos}, _ctx(tmp_path))
    assert not out.is_error
    assert out.summary == "todo_write: 3 items, 1 completed"
    assert out.content is not None and "[>] Run the tests (Running them)" in out.content
    [(call_id, kept)] = keeper.kept
    assert call_id == "toolu_1"
    assert kept == (
        Todo("Run the tests", "in_progress", "Running them"),
        Todo("Fix the bug", "pending", "Fixing it"),
        Todo("Read the code", "completed"),
    )
    # The schema advertises Claude Code's field, and nothing nested the API would refuse.
    item = tool.input_schema["properties"]["todos"]["items"]
    assert set(item["properties"]) == {"content", "status", "activeForm"}
    assert item["required"] == ["content", "status"]


@pytest.mark.parametrize(
    ("todos", "says"),
    [
        ([{"content": "a", "status": "done"}], "todos[0].status must be one of pending"),
        (
            [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}],
            "at most one item may be in_progress, got 2 (todos[0], todos[1])",
        ),
        ([{"content": "  ", "status": "pending"}], "todos[0].content must not be empty"),
        ([{"content": "a"}], "missing todos[0].status"),
        ([{"content": "a", "status": "pending", "id": "1"}], "unknown field todos[0].id"),
        ("a, b", "todos must be a list of items, got str"),
        ([["a", "pending"]], "todos[0] must be an object"),
        ([{"content": "x" * 1001, "status": "pending"}], "longer than 1000 characters"),
        ([{"content": "a", "status": "pending"}] * (MAX_TODOS + 1), f"more than {MAX_TODOS}"),
    ],
)
async def test_a_bad_list_is_an_error_that_says_what_to_fix(
    tmp_path: Path, todos: Any, says: str
) -> None:
    keeper = Keeper()
    with pytest.raises(ToolError) as refused:
        await TodoWriteTool(keeper).run({"todos": todos}, _ctx(tmp_path))
    assert says in str(refused.value)
    assert keeper.kept == []  # nothing kept: the list is as it was


async def test_a_list_the_disk_refuses_is_an_error_result(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as refused:
        await TodoWriteTool(Keeper(refuse=True)).run(
            {"todos": [{"content": "a", "status": "pending"}]}, _ctx(tmp_path)
        )
    assert "not saved, it is unchanged" in str(refused.value)


async def test_the_models_text_is_kept_as_written(tmp_path: Path) -> None:
    """Escaping is for terminals (cli.todo_text); the list itself is the model's words."""
    keeper = Keeper()
    hostile = "x\x1b]52;c;aGk=\x07\n[x] all done"
    await TodoWriteTool(keeper).run(
        {"todos": [{"content": hostile, "status": "pending"}]}, _ctx(tmp_path)
    )
    assert keeper.kept[0][1][0].content == hostile


@pytest.mark.parametrize("mode", ["read-only", "default", "accept-edits"])
def test_it_never_asks_in_any_mode(tmp_path: Path, mode: str) -> None:
    tool = TodoWriteTool(Keeper())
    config = PodConfig(workspace=tmp_path, permissions=PermissionsConfig(mode=mode))  # type: ignore[arg-type]
    policy = pod_policy(config)
    kind = tool_kind(tool)
    assert kind == "read"
    args = {"todos": [{"content": "a", "status": "pending"}]}
    fs = ScopedFS(tmp_path)
    decision = policy.decide(tool.name, kind, args, subject_of(args, kind, fs.rule_path))
    assert decision.verdict == "allow", decision.reason
    assert policy.offered(tool.name, kind)
