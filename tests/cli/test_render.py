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
    from cli.compaction_text import compaction_text
    from orchestrator.protocol import CompactionData

    done = CompactionData(
        seq=7, first_seq=1, last_seq=6, summary="S", tokens_before=3440, tokens_after=3710
    )
    assert compaction_text(done) == (
        "compacted items 1-6: 3,440 → 3,710 tokens (no smaller: the summary outweighs the "
        "short history it replaced)"
    )
    smaller = done.model_copy(update={"tokens_after": 900})
    assert compaction_text(smaller) == "compacted items 1-6: 3,440 → 900 tokens"


def test_every_front_end_says_what_a_compaction_kept_verbatim() -> None:
    from cli.compaction_text import compaction_text
    from orchestrator.protocol import CompactionData

    done = CompactionData(
        seq=7,
        first_seq=1,
        last_seq=6,
        summary="S",
        tokens_before=3440,
        tokens_after=900,
        files=["a.py"],
        kept_rounds=1,
        kept_request=True,
        todos=3,
    )
    assert compaction_text(done) == (
        "compacted items 1-6: 3,440 → 900 tokens; re-attached a.py. Kept verbatim: the last "
        "tool round, your latest request, 3 open todos."
    )
