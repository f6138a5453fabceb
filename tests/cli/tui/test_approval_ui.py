"""The approval card: y approves once, a for the session, n asks for a reason and denies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.tui.conftest import attach
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod


def _edit(call_id: str, new: str) -> ScriptedToolCall:
    return ScriptedToolCall(
        name="edit_file",
        input={"path": "src/app.py", "old_string": "return 42", "new_string": new},
        id=call_id,
    )


async def test_the_card_shows_the_diff_and_keys_answer(workspace: Path, short_dir: Path) -> None:
    replies = [
        ScriptedReply(tool_calls=[_edit("toolu_1", "return 43")]),
        ScriptedReply(tool_calls=[_edit("toolu_2", "return [44]")]),
        ScriptedReply(text="Done."),
    ]
    async with (
        running_pod(workspace, short_dir, replies=replies, permissions={"mode": "default"}) as pod,
        attach(pod) as s,
    ):
        await s.probe.send("run", {"input": "bump it"})
        await s.until(lambda: "allow edit_file src/app.py?" in s.screen, "approval card")
        assert "+    return 43" in s.screen and "-    return 42" in s.screen
        assert "Awaiting approval" in s.status_line
        await s.pilot.press("y")
        await s.until(lambda: "return 43" in (workspace / "src" / "app.py").read_text())
        # The second edit: n, then a reason with brackets kept as typed.
        await s.until(lambda: len(s.app.model.waiting_approvals()) == 1, "second request")
        await s.pilot.press("n")
        assert s.notice.startswith("Why deny?")
        await s.pilot.press(*"not [44] please")
        await s.pilot.press("enter")
        await s.ui_status("idle")
        history = (await s.probe.history()).items
        denied = [i for i in history if i.get("call_id") == "toolu_2"]
        assert denied[0]["summary"] == "denied by user: not [44] please"
        assert "return 43" in (workspace / "src" / "app.py").read_text()
        assert "src/app.py: approved" in s.screen and "src/app.py: denied" in s.screen


async def test_a_ui_that_attaches_late_shows_the_waiting_request(
    workspace: Path, short_dir: Path
) -> None:
    replies = [ScriptedReply(tool_calls=[_edit("toolu_1", "return 7")]), ScriptedReply(text="ok")]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "default"}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "bump"})
        await c.wait_for("approval_request")
        async with attach(pod) as s:
            assert "allow edit_file src/app.py?" in s.screen
            await s.pilot.press("a")
            await s.ui_status("idle")
        await c.close()
    assert "return 7" in (workspace / "src" / "app.py").read_text()


@pytest.mark.parametrize("width", [80, 200])
async def test_card_titles_use_the_width_there_is(
    workspace: Path, short_dir: Path, width: int
) -> None:
    folder = workspace / "src" / "a_folder_with_a_rather_long_name" / "and_another_one_below_it"
    folder.mkdir(parents=True)
    (folder / "module.py").write_text("def main():\n    return 42\n")
    path = str((folder / "module.py").relative_to(workspace))
    edit = ScriptedToolCall(
        name="edit_file",
        input={"path": path, "old_string": "return 42", "new_string": "return 43"},
        id="toolu_1",
    )
    replies = [ScriptedReply(tool_calls=[edit]), ScriptedReply(text="Done.")]
    async with (
        running_pod(workspace, short_dir, replies=replies, permissions={"mode": "default"}) as pod,
        attach(pod, size=(width, 40)) as s,
    ):
        await s.probe.send("run", {"input": "bump it"})
        await s.until(lambda: "⚠ allow edit_file" in s.screen, "approval card")
        (asking,) = [row for row in s.screen.splitlines() if "⚠ allow edit_file" in row]
        await s.pilot.press("y")
        await s.ui_status("idle")
        (answered,) = [row for row in s.screen.splitlines() if "✓ edit_file" in row]
    if width == 200:  # longer than 72 characters, and whole
        assert f"allow edit_file {path}?  y once · a always · n deny" in asking
        assert answered.rstrip().endswith(f"✓ edit_file {path}: approved")
    else:  # the path is cut, marked, so the keys and the answer stay in view
        assert asking.rstrip().endswith("…?  y once · a always · n deny") and len(asking) <= width
        assert answered.rstrip().endswith("…: approved") and len(answered) <= width
