"""The chat UI drawing a search and a cited answer as they stream: the card shows the query
while the search runs and its results once they arrive; the answer gets its ``[n]`` and the
numbered sources under it when committed. The app is the real one, fed by a fake connection
with fixed events (the terminal test, test_web_pty, replays a session on a real pod)."""

from __future__ import annotations

from tests.cli.tui.conftest import SIZE, screen_text, wait_until
from tests.cli.tui.fake_pod import STATUS, FakeLink, build_app
from tests.cli.tui.test_web_model import DOCS, USER, live_events


async def test_a_search_and_a_cited_answer_stream_onto_the_screen() -> None:
    events = live_events()
    link = FakeLink(
        status_data={**STATUS, "status": "running", "state": "requesting"},
        items=[USER],
        events_to_send=[e for e in events if e[0] != "user_message"],
    )
    app = build_app(link)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.attached and link.drained, what="the events")
        await wait_until(pilot, lambda: "[2][1]" in screen_text(app), what="the cited answer")
        screen = " ".join(screen_text(app).split())  # wrapped lines read as one
        status = app.model.pod.text()  # without a width: an 80-column line leaves it out
    assert '⌕ search: "python asyncio" → 2 results: asyncio (docs.python.org)' in screen
    assert "asyncio writes concurrent code [1], and it came with PEP 3156. [2][1]" in screen
    assert f"[1] asyncio — {DOCS}" in screen
    assert "Sources:" in screen
    assert "· 1 search" in status  # the status line counts the searches
