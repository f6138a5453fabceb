"""What a person reads at 80 columns: the thinking labelled, the useful end of a card's title
and one status line. The app is the real one, fed by a fake connection with fixed events."""

from __future__ import annotations

from typing import Any

from cli.tui.entry_views import THINKING_LABEL
from tests.cli.tui.conftest import SIZE, screen_text, wait_until
from tests.cli.tui.fake_pod import STATUS, FakeLink, build_app


def _link(items: list[dict[str, Any]], events: list[tuple[str, dict[str, Any]]]) -> FakeLink:
    return FakeLink(
        status_data={**STATUS, "status": "idle", "state": "idle"},
        items=items,
        events_to_send=events,
    )


def _rows(screen: str) -> list[str]:
    return [row.strip(" ▎▍▌") for row in screen.splitlines()]


async def test_thinking_is_labelled_as_thinking() -> None:
    """It was grey italics alone, easily read as the answer; now a label heads it, replayed
    and streamed alike."""
    replayed = {
        "kind": "assistant",
        "seq": 2,
        "turn": 1,
        "blocks": [
            {"type": "thinking", "thinking": "The user wants a list.", "signature": "s"},
            {"type": "text", "text": "Here it is."},
        ],
        "stop_reason": "end_turn",
        "synthetic": False,
    }
    user = {"kind": "user_message", "seq": 1, "turn": 1, "segments": [], "text": "list"}
    live = [("thinking_delta", {"text": "Now the second part."})]
    link = _link([user, replayed], live)
    app = build_app(link)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.attached and link.drained, what="replay")
        await wait_until(
            pilot, lambda: "Now the second part." in screen_text(app), what="live thinking"
        )
        rows = _rows(screen_text(app))
    for text in ("The user wants a list.", "Now the second part."):
        at = next(i for i, row in enumerate(rows) if row.startswith(text))
        assert rows[at - 1] == THINKING_LABEL, rows
    assert THINKING_LABEL == "✻ thinking"
