"""Slash commands and prompt recall, against a real pod: nothing here reaches the model."""

from __future__ import annotations

import os
from pathlib import Path

from cli.tui.entries import InfoEntry
from orchestrator.adapters.session import sessions_dir
from orchestrator.runtime.status import job_lines
from tests.claude_dirs import claude_dirs_on
from tests.cli.tui.conftest import QUICK, Session, attach, eventually_status, history_kinds
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod


def _infos(session: Session) -> list[str]:
    return [e.text for e in session.app.model.entries if isinstance(e, InfoEntry)]


async def _command(session: Session, text: str) -> None:
    before = len(session.app.model.entries)
    await session.pilot.press(*text, "enter")
    await session.until(lambda: len(session.app.model.entries) > before, f"{text} answered")


async def test_help_is_answered_by_the_ui_never_by_the_model(session: Session) -> None:
    await _command(session, "/help")
    help_text = _infos(session)[-1]
    assert "Commands (never sent to the model):" in help_text
    for name in ("/help", "/status", "/cancel", "/sessions", "/model", "/jobs", "/children"):
        assert name in help_text
    assert "Ctrl-C" in help_text and "earlier prompts" in help_text
    assert session.app.editor.text == ""
    assert await history_kinds(session.probe) == []
    assert session.pod.provider.requests == []


async def test_status_model_and_sessions(session: Session) -> None:
    await _command(session, "/status")
    status = _infos(session)[-1]
    assert status.startswith("pod t · Idle · turn 0")
    assert "scripted/scripted-demo" in status and str(session.pod.config.workspace) in status
    await _command(session, "/model")
    assert _infos(session)[-1].startswith("model scripted-demo · provider scripted")
    await _command(session, "/sessions")
    listing = _infos(session)[-1]
    names = [p.stem for p in sessions_dir(session.pod.config.workspace).glob("*.jsonl")]
    assert names and all(name in listing for name in names)
    assert await history_kinds(session.probe) == []


async def test_cancel_acts_as_ctrl_x(session: Session) -> None:
    await session.pilot.press(*"/cancel", "enter")
    assert session.notice == "Nothing to cancel: the pod is idle"
    await session.to_state("running")
    await session.pilot.press(*"/cancel", "enter")
    await eventually_status(session.probe, "idle")
    assert await history_kinds(session.probe) == ["user_message"]


async def test_an_unknown_command_is_refused_and_kept(session: Session) -> None:
    await session.pilot.press(*"/frobnicate now", "enter")
    assert session.notice.startswith("Unknown command /frobnicate: /help lists the commands")
    assert session.app.editor.text == "/frobnicate now"
    assert await history_kinds(session.probe) == []


async def test_a_double_slash_sends_a_message_starting_with_a_slash(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[QUICK]) as pod, attach(pod) as ui:
        await ui.pilot.press(*"//help is a word", "enter")
        await eventually_status(ui.probe, "idle")
        first = (await ui.probe.history()).items[0]
        assert first["text"] == "/help is a word"


async def test_up_and_down_recall_earlier_prompts(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[QUICK, QUICK]) as pod, attach(pod) as ui:
        editor = ui.app.editor
        for prompt in ("first question", "see @README.md"):
            # Esc closes the completion list: the ref is left as typed text.
            await ui.pilot.press(*prompt, "escape", "enter")
            await eventually_status(ui.probe, "idle")
            await ui.ui_status("idle")
        # Typed text is scanned by the pod like `pod run`'s: the file was attached.
        assert await history_kinds(ui.probe) == [
            "user_message",
            "assistant",
            "user_message",
            "system_message",
            "assistant",
        ]
        await ui.pilot.press(*"draft")
        await ui.pilot.press("up")
        # The pod turned the typed ref into a file ref: it comes back as a chip.
        assert editor.text == "see ⟦@README.md⟧"
        await ui.pilot.press("up")
        assert editor.text == "first question"
        await ui.pilot.press("up")
        assert editor.text == "first question"
        await ui.pilot.press("down", "down")
        assert editor.text == "draft"
        # A recalled prompt is sent like a typed one, chips included.
        await ui.pilot.press("up", "enter")
        await ui.until(lambda: editor.text == "", "sent")
        await ui.until(lambda: ui.app.model.transcript().count("user: see @README.md") == 2)


async def test_compact_sends_the_method_with_its_focus() -> None:
    from tests.cli.tui.conftest import SIZE, wait_until
    from tests.cli.tui.fake_pod import build_app, idle_link

    link = idle_link()
    app = build_app(link)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.attached and link.drained, what="replay")
        await pilot.press(*"/compact", "enter")
        await pilot.press(*"/compact the failing test", "enter")
        await wait_until(pilot, lambda: len(link.sent) == 2, what="two sends")
    assert link.sent == [("compact", {}), ("compact", {"focus": "the failing test"})]


async def test_rewind_lists_previews_confirms_and_gives_the_prompt_back(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[QUICK, QUICK]) as pod, attach(pod) as ui:
        for prompt in ("first question", "second question"):
            await ui.pilot.press(*prompt, "enter")
            await eventually_status(ui.probe, "idle")
            await ui.until(lambda: ui.app.model.pod.status == "idle", "idle in the UI")
        await _command(ui, "/rewind")
        listing = _infos(ui)[-1]
        assert listing.startswith("Prompts to rewind to")
        seqs = [int(line.split()[0]) for line in listing.splitlines()[1:]]
        assert [line.split(None, 1)[1] for line in listing.splitlines()[1:]] == [
            "first question",
            "second question",
        ]
        await _command(ui, f"/rewind {seqs[1]} conversation")
        assert _infos(ui)[-1].startswith(f"would rewind to before prompt {seqs[1]}")
        assert "Enter on an empty line rewinds" in ui.notice
        assert len(await history_kinds(ui.probe)) == 4  # nothing changed yet
        await ui.pilot.press("enter")
        await ui.until(lambda: ui.app.editor.text == "second question", "the prompt back")
        assert await history_kinds(ui.probe) == ["user_message", "assistant"]
        assert ui.notice.startswith(f"Rewound to before prompt {seqs[1]}")
        assert len(pod.provider.requests) == 2  # nothing was sent to the model


async def test_a_rewind_preview_not_confirmed_changes_nothing(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[QUICK, QUICK]) as pod, attach(pod) as ui:
        await ui.pilot.press(*"hello", "enter")
        await eventually_status(ui.probe, "idle")
        await ui.until(lambda: ui.app.model.pod.status == "idle", "idle in the UI")
        await _command(ui, "/rewind 1 conversation")
        await ui.pilot.press(*"something else", "enter")
        await eventually_status(ui.probe, "idle")
        kinds = await history_kinds(ui.probe)
        # The preview was dropped and the line went to the model as a new prompt.
        assert kinds == ["user_message", "assistant", "user_message", "assistant"]


async def test_fork_makes_a_session_and_says_how_to_continue(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[QUICK]) as pod, attach(pod) as ui:
        await ui.pilot.press(*"hello", "enter")
        await eventually_status(ui.probe, "idle")
        await _command(ui, "/fork try B")
        said = _infos(ui)[-1]
        assert said.startswith("Forked: session ")
        # This pod still runs on its own session: the fork is continued by a pod of its own
        # (the command is run for real in tests/cli/tui/test_fork_pty.py).
        command = said.split("Continue it with: ", 1)[1].split()
        assert command[:3] == ["pod", "chat", "--workspace"]
        assert command[3] == str(pod.config.workspace.resolve())
        assert command[4] == "--session" and command[6] == "--name"
        path = sessions_dir(pod.config.workspace) / f"{command[5]}.jsonl"
        assert path.is_file() and command[7] == f"{pod.config.workspace.name}-{command[5]}"


async def test_escape_twice_on_an_empty_line_lists_the_prompts(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[QUICK]) as pod, attach(pod) as ui:
        await ui.pilot.press(*"hello", "enter")
        await eventually_status(ui.probe, "idle")
        before = len(ui.app.model.entries)
        await ui.pilot.press("escape")
        await ui.pilot.pause()
        assert len(ui.app.model.entries) == before  # one Esc does nothing
        await ui.pilot.press("escape", "escape")
        await ui.until(lambda: len(ui.app.model.entries) > before, "the rewind list")
        assert _infos(ui)[-1].startswith("Prompts to rewind to")
        # Typed text is not a rewind: Esc Esc with a draft keeps the draft.
        count = len(ui.app.model.entries)
        await ui.pilot.press(*"draft", "escape", "escape")
        await ui.pilot.pause()
        assert ui.app.editor.text == "draft" and len(ui.app.model.entries) == count


async def test_jobs_lists_the_background_jobs_as_pod_jobs_does(
    workspace: Path, short_dir: Path
) -> None:
    """The status line points at /jobs; it lists what ``pod jobs`` lists, from a fresh status."""
    start = ScriptedReply(
        tool_calls=[
            ScriptedToolCall(name="bash", input={"command": "sleep 600", "background": True})
        ]
    )
    async with (
        running_pod(workspace, short_dir, replies=[start, QUICK], allow_bash=True) as pod,
        attach(pod) as s,
    ):
        await _command(s, "/jobs")
        assert _infos(s)[-1].startswith("No background jobs")
        await s.probe.send("run", {"input": "start one"})
        await s.until(lambda: "(/jobs)" in s.status_line, "the status line names the job")
        await eventually_status(s.probe, "idle")
        await s.ui_status("idle")
        # The bash card at 80 columns keeps the job's id in view (it showed "bash: started ba…").
        assert any("started background job j1" in row for row in s.screen.splitlines())
        await _command(s, "/jobs")
        listing = _infos(s)[-1].splitlines()
        assert listing[0].startswith("Background jobs")
        assert listing[1].startswith("  j1 running ") and listing[1].endswith(" · sleep 600")
        assert "pod jobs --kill ID" in listing[-1]
        # The same line `pod jobs` prints, from the same get_status.
        [job] = (await s.probe.status()).jobs
        [line] = job_lines([job.model_dump()])
        assert line.startswith("job j1 running ") and line.endswith(" · sleep 600")


async def test_skills_lists_where_each_comes_from_and_escapes_descriptions(
    session: Session,
) -> None:
    claude_dirs_on(os.environ["XDG_CONFIG_HOME"])  # the .claude folder is read again
    workspace = session.pod.config.workspace
    for where, description in ((".pod", "the pod's"), (".claude", "hidden \\u001b[2J")):
        folder = workspace / where / "skills" / "lint"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f'---\ndescription: "{description}"\n---\nbody\n')
    await _command(session, "/skills")
    listing = _infos(session)[-1]
    assert "lint  [workspace]  the pod's" in listing
    assert "[claude-workspace]" in listing and "shadowed by" in listing
    assert "\x1b" not in listing and "\\x1b[2J" in listing
    assert await history_kinds(session.probe) == []
