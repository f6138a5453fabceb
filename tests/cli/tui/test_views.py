"""The UI's own views as text, without an app: /help, /status, /model, /sessions."""

from __future__ import annotations

from pathlib import Path

from cli.tui.pod_view import PodView
from cli.tui.views import KEYS_HELP, help_text, model_text, sessions_text, status_text
from orchestrator.protocol import StatusData


def test_help_lists_the_commands_then_the_keys() -> None:
    text = help_text()
    assert text.startswith("Commands (never sent to the model):\n  /help")
    assert text.endswith(KEYS_HELP)


def test_status_names_the_machines_state_only_when_it_says_more() -> None:
    pod = PodView()
    pod.update(StatusData(status="idle", state="idle", name="p", model="m", provider="x"))
    assert status_text(pod).startswith("pod p · Idle · turn 0\nx/m · tokens in 0 out 0\n")
    pod.update(StatusData(status="running", state="requesting", name="p"))
    assert status_text(pod).startswith("pod p · Running (requesting) · turn 0")


def test_model_without_a_status_says_it_does_not_know() -> None:
    assert model_text(PodView()).startswith("model ? · provider ?\n")


def test_sessions_without_a_workspace_or_a_session(tmp_path: Path) -> None:
    assert sessions_text("") == "The pod did not say which workspace it serves."
    assert sessions_text(str(tmp_path)) == f"No sessions for {tmp_path}."
