"""A committed compaction in words, as ``pod compact``, the TUI and ACP say it.

Every front-end says the same two things: what the summary replaced and saved, and what it
kept verbatim beside it (tool rounds, the latest request, open todos), so the user reads that
the request and the plan survived, not only a summary of them (docs/context.md)."""

from __future__ import annotations

from orchestrator.protocol import CompactionData

__all__ = ["compaction_text", "kept_text"]


def kept_text(kept_rounds: int, kept_request: bool, todos: int) -> str:
    """What a compaction kept verbatim beside its summary ("" when nothing)."""
    kept = []
    if kept_rounds:
        kept.append(
            "the last tool round" if kept_rounds == 1 else f"the last {kept_rounds} tool rounds"
        )
    if kept_request:
        kept.append("your latest request")
    if todos:
        kept.append(f"{todos} open todo{'s' if todos != 1 else ''}")
    return f"Kept verbatim: {', '.join(kept)}." if kept else ""


def compaction_text(done: CompactionData) -> str:
    """One line on a committed compaction: what it covered, saved and kept."""
    before, after = done.tokens_before, done.tokens_after
    reread = f"; re-attached {', '.join(done.files)}" if done.files else ""
    no_smaller = (
        " (no smaller: the summary outweighs the short history it replaced)"
        if after >= before
        else ""
    )
    kept = kept_text(done.kept_rounds, done.kept_request, done.todos)
    return (
        f"compacted items {done.first_seq}-{done.last_seq}: {before:,} → {after:,} tokens"
        f"{reread}{no_smaller}" + (f". {kept}" if kept else "")
    )
