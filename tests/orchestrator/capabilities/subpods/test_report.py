"""What a parent's ``task`` result says about its child (pure)."""

from __future__ import annotations

from orchestrator.capabilities.subpods.report import (
    ChildReport,
    interrupted_text,
    task_output,
    work_since_prompt,
)
from orchestrator.core.history import (
    AssistantMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)


def _items() -> list[object]:
    return [
        UserMessage(seq=1, text="fix the bug"),
        AssistantMessage(
            seq=2,
            blocks=[
                TextBlock(text="Looking."),
                ToolUseBlock(id="a", name="read_file", input={"path": "x.py"}),
                ToolUseBlock(id="b", name="edit_file", input={"path": "x.py"}),
                ToolUseBlock(id="c", name="write_file", input={"path": "y.py"}),
            ],
        ),
        ToolResult(seq=3, call_id="a", summary="ok"),
        ToolResult(seq=4, call_id="b", summary="bad", is_error=True),
        ToolResult(seq=5, call_id="c", summary="ok"),
        AssistantMessage(
            seq=6, blocks=[ToolUseBlock(id="d", name="edit_file", input={"path": "x.py"})]
        ),
        ToolResult(seq=7, call_id="d", summary="ok"),
        AssistantMessage(seq=8, blocks=[TextBlock(text="Fixed x.py; added y.py.")]),
    ]


def test_the_work_is_read_from_the_childs_history() -> None:
    work = work_since_prompt(_items())  # type: ignore[arg-type]
    assert work.prompted
    assert work.answer == "Fixed x.py; added y.py."
    assert dict(work.tools) == {"read_file": 1, "edit_file": 2, "write_file": 1}
    assert work.files == ["x.py", "y.py"]
    assert work.errors == 1
    assert not work_since_prompt([]).prompted


def test_a_finished_child_reads_as_its_answer_then_what_it_did() -> None:
    report = ChildReport(
        name="app.fix-1",
        session="/s/c.jsonl",
        result="finished",
        work=work_since_prompt(_items()),  # type: ignore[arg-type]
        tokens=12_345,
        cost_usd=0.0123,
    )
    output = task_output(report)
    assert output.summary == "task app.fix-1: finished" and not output.is_error
    content = output.content or ""
    assert content.startswith("Fixed x.py; added y.py.")
    assert "4 tool calls (edit_file ×2, read_file, write_file)" in content
    assert "files changed: x.py, y.py" in content
    assert "12,345 tokens, $0.0123" in content and "session: /s/c.jsonl" in content


def test_a_child_that_did_not_finish_is_an_error_that_says_why() -> None:
    report = ChildReport(
        name="c",
        session="/s/c.jsonl",
        result="died",
        work=work_since_prompt(_items()[:3]),  # type: ignore[arg-type]
        detail="its process was killed by SIGKILL",
    )
    output = task_output(report)
    assert output.is_error and "killed by SIGKILL" in output.summary
    text = interrupted_text(report)
    assert "stopped before it finished" in text and "Looking." in text
