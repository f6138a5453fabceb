"""``pod history`` and ``pod sessions export --format md``: what a person reads of a session."""

from __future__ import annotations

from rich.console import Console

from cli.render import items_to_markdown, render_items
from orchestrator.core.history import AssistantMessage, ToolResult, ToolUseBlock, item_to_json

ITEMS = [
    item_to_json(
        AssistantMessage(
            turn=1,
            blocks=[
                ToolUseBlock(
                    id="toolu_1", name="glob", input={"pattern": "*.md", "hidden": True, "n": None}
                )
            ],
        )
    ),
    item_to_json(ToolResult(turn=1, call_id="toolu_1", summary="glob: *.md — 1 match")),
]


def test_history_shows_tool_arguments_as_json() -> None:
    console = Console(width=200, record=True)
    render_items(console, ITEMS)
    assert '⚙ glob {"pattern": "*.md", "hidden": true, "n": null}' in console.export_text()


def test_the_markdown_export_shows_tool_arguments_as_json() -> None:
    assert items_to_markdown(ITEMS).startswith(
        '## Assistant\n\n`glob` `{"pattern": "*.md", "hidden": true, "n": null}`\n'
    )


def test_pod_compact_says_when_the_compaction_came_out_no_smaller() -> None:
    from cli.commands.control import compaction_text

    done = {"first_seq": 1, "last_seq": 6, "tokens_before": 3440, "tokens_after": 3710}
    assert compaction_text(done) == (
        "compacted items 1-6: 3,440 → 3,710 tokens (no smaller: the summary outweighs the "
        "short history it replaced)"
    )
    assert (
        compaction_text({**done, "tokens_after": 900}) == "compacted items 1-6: 3,440 → 900 tokens"
    )
