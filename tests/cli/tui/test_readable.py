"""What a person reads at 80 columns: the thinking labelled, the useful end of a card's title
and one status line. The app is the real one, fed by a fake connection with fixed events."""

from __future__ import annotations

from typing import Any

import pytest
from rich.cells import cell_len

from cli.tui.entry_views import THINKING_LABEL
from cli.tui.pod_view import PodView
from orchestrator.protocol import StatusData
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


def _busy_status(status: str, state: str) -> dict[str, Any]:
    child = {
        "call_id": "c1",
        "name": "demo.files-1",
        "state": "requesting",
        "session": "/s/c1.jsonl",
        "socket": "/run/c1.sock",
    }
    return {
        **STATUS,
        "name": "my-project-with-a-long-name",
        "model": "claude-sonnet-4-5-20250929",
        "status": status,
        "state": state,
        "usage": {"input_tokens": 123_456, "output_tokens": 7_890},
        "context": {"used": 45_000, "window": 100_000, "percent": 45, "compact_at": 80},
        "cost_usd": 1.23,
        "children": [child],
    }


@pytest.mark.parametrize(
    ("status", "state", "kept"),
    [
        ("paused", "paused", " · Paused — Enter resumes · "),
        ("running", "awaiting_approval", " · Approve? y · a · n · "),
        ("idle", "idle", " · Idle · "),
    ],
)
async def test_the_status_line_is_one_row_at_80_columns(status: str, state: str, kept: str) -> None:
    """It wrapped onto a second row; now its parts shorten by priority, the state's keys last,
    and a wider terminal gets all of it back."""
    link = FakeLink(status_data=_busy_status(status, state), items=[])
    app = build_app(link)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.attached and link.drained, what="replay")
        await pilot.pause(0.05)
        bar = app.status_bar
        assert bar.size.height == 1, bar.plain
        assert "\n" not in bar.plain and cell_len(bar.plain) <= SIZE[0] - 2
        assert kept in bar.plain and bar.plain.startswith("my-project-with-a-long-name · ")
        assert bar.plain in screen_text(app).splitlines()[-1]
        await pilot.resize_terminal(240, 24)
        await wait_until(pilot, lambda: "claude-sonnet-4-5" in bar.plain, what="the wide line")
        assert bar.plain == app.model.pod.text()  # nothing shortened
        assert "1 child pod (/children)" in bar.plain and "$1.23" in bar.plain


def test_the_status_line_gives_way_in_order() -> None:
    pod = PodView()
    pod.update(StatusData.model_validate(_busy_status("paused", "paused")))
    whole = pod.text()
    assert whole == (
        "my-project-with-a-long-name · claude-sonnet-4-5-20250929 · offline (scripted provider)"
        " · Paused — Enter to resume, type to start new turn · 123.5k↑ 7890↓ tokens"
        " · context 45% · $1.23 · 1 child pod (/children)"
    )
    assert pod.text(width=len(whole)) == whole
    assert pod.text(width=78) == (
        "my-project-with-a-long-name · offline · Paused — Enter resumes · ctx 45%"
    )
    assert pod.text(width=40) == "my-project-with… · Paused"
    assert pod.text(width=20) == "Paused"
    for width in range(20, 200, 7):
        line = pod.text(width=width)
        assert cell_len(line) <= width and "Paused" in line, (width, line)


def test_the_rows_below_are_cut_to_the_width_keeping_the_pointer() -> None:
    pod = PodView()
    jobs = [
        {"id": f"j{n}", "command": f"make target{n} " + "x" * 40, "state": "running"}
        for n in (1, 2, 3)
    ]
    pod.update(
        StatusData.model_validate(
            {
                "status": "idle",
                "state": "idle",
                "name": "p",
                "jobs": [{**job, "started_ms": 0} for job in jobs],
            }
        )
    )
    pod.alert("a very long alert " * 10, now=0.0, level="error")
    line, jobs_row, alert_row = pod.text(now=1.0, width=78).split("\n")
    assert line == "p · Idle · 0↑ 0↓ tokens"
    assert jobs_row.startswith("⚙ 3 background jobs: j1 make") and jobs_row.endswith("… (/jobs)")
    assert alert_row.startswith("✖ a very long alert") and alert_row.endswith("…")
    assert all(cell_len(row) <= 78 for row in (jobs_row, alert_row))
