"""Custom commands in the terminal UI: completed after ``/``, sent to the pod, which expands
them; the UI's own commands win over a file of the same name; unknown ones stay refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.tui.app import PodApp
from cli.tui.entries import InfoEntry
from cli.tui.input import slash_candidates, slash_query
from tests.cli.tui.conftest import QUICK, attach, eventually_status
from tests.e2e.harness import running_pod


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def infos(app: PodApp) -> list[str]:
    return [e.text for e in app.model.entries if isinstance(e, InfoEntry)]


def test_a_slash_query_is_a_name_at_the_start_of_the_line() -> None:
    assert slash_query("/rev") == "/rev"
    assert slash_query("  /") == "/"
    assert slash_query("/review src") is None
    assert slash_query("see /rev") is None
    assert slash_candidates("he", ["help", "hello"]) == ["help", "hello"]
    assert slash_candidates("", ["zzz"])[-1] == "zzz"


async def test_a_command_completes_and_the_pod_expands_it(workspace: Path, short_dir: Path) -> None:
    folder = workspace / ".pod" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text("---\ndescription: Review\n---\nPlease review $1.")
    (folder / "help.md").write_text("A file that the UI's /help shadows.")
    replies = [QUICK, QUICK]
    async with running_pod(workspace, short_dir, replies=replies) as pod, attach(pod) as ui:
        app = ui.app
        await ui.pilot.press(*"/rev")
        await ui.until(lambda: app.completions.option_count == 1, "candidates")
        assert str(app.completions.get_option_at_index(0).prompt) == "review"
        await ui.pilot.press("tab")
        assert app.editor.text == "/review "
        await ui.pilot.press(*"src/app.py", "enter")
        await eventually_status(ui.probe, "idle")
        first = (await ui.probe.history()).items[0]
        assert first["segments"] == [
            {"kind": "workflow_invoke", "slug": "review", "arguments": "src/app.py"}
        ]
        assert first["text"] == "Please review src/app.py."
        # The UI's /help wins over .pod/commands/help.md: it is answered, never sent, and it
        # lists the pod's commands, the shadowed file too.
        before = len(app.model.entries)
        await ui.pilot.press(*"/help", "enter")
        await ui.until(lambda: len(app.model.entries) > before, "/help answered")
        shown = infos(app)[-1]
        assert "/review  Review [workspace]" in shown
        assert "/help (workspace: shadowed by builtin)" in shown
        assert len((await ui.probe.history()).items) == 2  # the prompt and its reply only
        # /rewind lists the prompt as typed, not its expansion.
        before = len(app.model.entries)
        await ui.pilot.press(*"/rewind", "enter")
        await ui.until(lambda: len(app.model.entries) > before, "/rewind answered")
        listed = infos(app)[-1]
        assert "/review src/app.py" in listed and "Please review" not in listed
        # //review is the escape for text: sent as typed, though the pod has /review.
        await ui.pilot.press(*"//review as a word", "enter")
        await ui.until(lambda: len(pod.provider.requests) == 2, "the second request")
        await eventually_status(ui.probe, "idle")
        texts = [i["text"] for i in (await ui.probe.history()).items if i["kind"] == "user_message"]
        assert texts[-1] == "/review as a word"
