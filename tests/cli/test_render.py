"""``pod history`` and ``pod sessions export --format md``: what a person reads of a session."""

from __future__ import annotations

from rich.console import Console

from cli.render import items_to_markdown, render_items
from orchestrator.history import AssistantMessage, ToolResult, ToolUseBlock, item_to_json

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
