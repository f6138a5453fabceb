"""docs/protocol.md carries the transition table exactly as the machine renders it today."""

from __future__ import annotations

from pathlib import Path

from orchestrator.protocol import EVENT_DATA, MAX_LINE_BYTES, PARAMS_BY_METHOD
from states.table import extract_doc_block, generated_doc_block

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
REFRESH = "docs/protocol.md is stale; run: python -m states.table --write-docs docs/protocol.md"


def test_transition_table_is_fresh() -> None:
    assert extract_doc_block(DOC.read_text(encoding="utf-8")) == generated_doc_block(), REFRESH


def test_every_method_and_event_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for method in PARAMS_BY_METHOD:
        assert f"| `{method}` |" in text, f"method {method} is not in the methods table"
        assert f'{{"method": "{method}"' in text, f"method {method} has no example line"
    for event in EVENT_DATA:
        assert f"| `{event}` |" in text, f"event {event} is not in the events table"
    assert MAX_LINE_BYTES == 8 * 1024 * 1024 and "**8 MiB**" in text


def test_interrupt_strings_are_quoted_exactly() -> None:
    from orchestrator.core.history import INTERRUPT_NOTE, INTERRUPTED_SUMMARY

    text = DOC.read_text(encoding="utf-8")
    assert f"\n  {INTERRUPT_NOTE}\n" in text
    assert f"`{INTERRUPTED_SUMMARY}`" in text
