"""Plan mode in the TUI: Shift-Tab in the editor cycles the modes, the status line shows the
mode, and a plan waits on a card that renders it (escaped), answered with y, a or n."""

from __future__ import annotations

from pathlib import Path

from tests.cli.tui.conftest import attach
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod

WAIT = 20.0

PLAN = "# Rename the helper\n\n1. Rename `main` in src/app.py\n2. \x1b[2JRun **the tests**"


def _plan(call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall(name="exit_plan_mode", input={"plan": PLAN}, id=call_id)


def _write(call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall(
        name="write_file", input={"path": "done.txt", "content": "ok"}, id=call_id
    )


async def test_shift_tab_in_the_editor_cycles_the_modes_the_pod_takes(
    workspace: Path, short_dir: Path
) -> None:
    async with (
        running_pod(workspace, short_dir, permissions={"mode": "accept-edits"}) as pod,
        attach(pod) as s,
    ):
        assert "accept-edits mode" in s.status_line
        await s.pilot.press("shift+tab")
        await s.until(lambda: s.app.model.pod.permission_mode == "plan", "plan", timeout=WAIT)
        assert "⏸ plan mode" in s.status_line
        assert (await s.probe.status()).permission_mode == "plan"
        # yolo is wider than the pod was started with: skipped, on to default.
        await s.pilot.press("shift+tab")
        await s.until(lambda: s.app.model.pod.permission_mode == "default", "default", timeout=WAIT)
        assert "mode" not in s.status_line.split("·")[-1]
        await s.pilot.press("shift+tab")
        await s.until(
            lambda: s.app.model.pod.permission_mode == "accept-edits", "back", timeout=WAIT
        )
        # Typed text stays where it is: Shift-Tab is no focus move in the editor.
        await s.pilot.press(*"hello", "shift+tab")
        await s.until(lambda: s.app.model.pod.permission_mode == "plan", "plan again", timeout=WAIT)
        assert s.app.editor.text == "hello" and s.app.editor.has_focus


async def test_a_plan_is_a_card_rendered_whole_and_a_approves_it_for_accept_edits(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(tool_calls=[_plan("toolu_plan")]),
        ScriptedReply(tool_calls=[_write("toolu_w")]),
        ScriptedReply(text="Done."),
    ]
    async with (
        running_pod(
            workspace, short_dir, replies=replies, permissions={"mode": "accept-edits"}
        ) as pod,
        attach(pod) as s,
    ):
        await s.pilot.press("shift+tab")
        await s.until(lambda: s.app.model.pod.permission_mode == "plan", "plan", timeout=WAIT)
        await s.probe.send("run", {"input": "plan the rename"})
        await s.until(lambda: "plan ready" in s.screen, "plan card", timeout=WAIT)
        # Rendered markdown: the heading's text without its '#', bold without its stars; the
        # escape sequence shown as text, never sent to the terminal.
        rows = s.screen.splitlines()
        top = next(n for n, row in enumerate(rows) if "plan ready" in row)
        card = "\n".join(rows[top + 1 : top + 10])
        assert "Rename the helper" in card and "# Rename" not in card
        assert "the tests" in card and "**the tests**" not in card
        assert "\\x1b[2J" in card
        await s.pilot.press("a")
        await s.ui_status("idle")
        assert (workspace / "done.txt").read_text() == "ok"  # accept-edits: ran unasked
        assert s.app.model.pod.permission_mode == "accept-edits"
        assert "plan: approved" in s.screen


async def test_n_keeps_planning_with_what_to_change(workspace: Path, short_dir: Path) -> None:
    replies = [ScriptedReply(tool_calls=[_plan("toolu_plan")]), ScriptedReply(text="Revising.")]
    async with (
        running_pod(workspace, short_dir, replies=replies, permissions={"mode": "plan"}) as pod,
        attach(pod) as s,
    ):
        assert "⏸ plan mode" in s.status_line
        await s.probe.send("run", {"input": "plan it"})
        await s.until(lambda: "plan ready" in s.screen, "plan card", timeout=WAIT)
        await s.pilot.press("n")
        assert s.notice.startswith("What should change in the plan?")
        await s.pilot.press(*"keep the old name as an alias", "enter")
        await s.ui_status("idle")
        history = (await s.probe.history()).items
        result = next(i for i in history if i.get("call_id") == "toolu_plan")
        assert "keep the old name as an alias" in result["summary"]
        assert s.app.model.pod.permission_mode == "plan"
