"""``/budget`` in the TUI, against a real pod: a turn paused at its budget, raised from the
editor and resumed with Enter on an empty line."""

from __future__ import annotations

from pathlib import Path

from cli.tui.budget_command import USAGE, budget_change
from tests.cli.tui.conftest import attach, eventually_status
from tests.e2e.harness import ScriptedReply, running_pod


def test_the_argument_names_one_cap_and_an_amount() -> None:
    assert budget_change("turn 5") == {"turn_budget_usd": 5.0}
    assert budget_change("session $2.50") == {"budget_usd": 2.5}
    assert budget_change("session none") == {"budget_usd": None}
    for bad in ("turn", "turn five", "week 5", "turn -1", "turn inf", "turn nan", "turn 1 2"):
        assert budget_change(bad) is None, bad


async def test_budget_raises_a_paused_turns_cap_and_enter_resumes_it(
    workspace: Path, short_dir: Path
) -> None:
    replies = [ScriptedReply(text="the answer")]
    async with (
        running_pod(workspace, short_dir, replies=replies, turn_budget_usd=0.0) as pod,
        attach(pod) as ui,
    ):
        await ui.pilot.press(*"hello", "enter")
        await eventually_status(ui.probe, "paused")
        assert pod.provider.requests == []  # a $0 turn budget: nothing was sent
        await ui.pilot.press(*"/budget", "enter")
        await ui.until(lambda: "paused at the budget" in ui.notice, "the budget shown")
        assert "turn $0.0000 of $0.0000" in ui.notice
        await ui.pilot.press(*"/budget turn twelve", "enter")
        await ui.until(lambda: ui.notice == USAGE, "the usage said")
        await ui.pilot.press(*"/budget turn none", "enter")
        await ui.until(lambda: "of no cap" in ui.notice, "the cap removed")
        await ui.pilot.press("enter")  # an empty line resumes the paused turn
        await eventually_status(ui.probe, "idle")
        assert len(pod.provider.requests) == 1
        items = (await ui.probe.history()).items
        assert [i["kind"] for i in items][-1] == "assistant"
