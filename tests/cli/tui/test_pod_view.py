"""The status line's view of the pod, without an app."""

from __future__ import annotations

from typing import Any

import pytest

from cli.tui.keys import Key, decide
from cli.tui.pod_view import PodView
from orchestrator.protocol import StatusData

AT_REST = ["idle", "paused"]


def test_status_line_states() -> None:
    pod = PodView()
    assert pod.text().startswith("Connecting")
    pod.update(
        StatusData(
            status="paused",
            state="paused",
            name="demo",
            model="scripted-demo",
            provider="scripted",
            usage={"input_tokens": 12345, "output_tokens": 6},
        )
    )
    assert pod.text() == (
        "demo · scripted-demo · offline (scripted provider) · "
        "Paused — Enter to resume, type to start new turn · 12.3k↑ 6↓ tokens"
    )
    pod.update(
        StatusData(status="running", state="requesting", provider="anthropic", model="claude")
    )
    pod.last_alert = "rate limited"
    assert pod.text() == "demo · claude · Running · 12.3k↑ 6↓ tokens\n⚠ rate limited"


def test_the_status_line_shows_how_full_the_context_is() -> None:
    pod = PodView()
    context = {"used": 45_000, "window": 100_000, "percent": 45, "compact_at": 80}
    pod.update(
        StatusData.model_validate(
            {
                "status": "idle",
                "state": "idle",
                "name": "p",
                "usage": {
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 1000,
                    "output_tokens": 7,
                },
                "context": context,
            }
        )
    )
    assert pod.text() == "p · Idle · 1110↑ 7↓ tokens · context 45%"


@pytest.mark.parametrize(
    ("cost", "shown"), [(0.01234, " · $0.0123"), (3.456, " · $3.46"), (None, "")]
)
def test_the_status_line_shows_what_the_session_cost(cost: float | None, shown: str) -> None:
    pod = PodView()
    pod.update(StatusData(status="idle", state="idle", name="p", cost_usd=cost))
    assert pod.text() == f"p · Idle · 0↑ 0↓ tokens{shown}"


def test_the_status_line_lists_running_background_jobs() -> None:
    pod = PodView()

    def job(n: int, state: str = "running") -> dict[str, Any]:
        return {"id": f"j{n}", "command": f"make  target{n}", "state": state, "started_ms": 0}

    pod.update(StatusData.model_validate({"status": "idle", "state": "idle", "name": "p"}))
    assert pod.text() == "p · Idle · 0↑ 0↓ tokens"
    jobs = [job(1), job(2, "exited")]
    pod.update(StatusData.model_validate({"status": "idle", "state": "idle", "jobs": jobs}))
    assert pod.text() == "p · Idle · 0↑ 0↓ tokens\n⚙ 1 background job: j1 make target1 (/jobs)"
    jobs = [job(n) for n in range(1, 6)]
    pod.update(StatusData.model_validate({"status": "idle", "state": "idle", "jobs": jobs}))
    assert pod.text().endswith(
        "\n⚙ 5 background jobs: j1 make target1 · j2 make target2 · j3 make target3 · +2 more"
        " (/jobs)"
    )


@pytest.mark.parametrize("status", AT_REST)
def test_ctrl_c_right_after_enter_pauses_the_turn_just_sent(status: str) -> None:
    """Between sending ``run`` and the pod's ``running`` status the keys act as while
    running: the Ctrl-C meant for the new turn pauses it instead of arming quit."""
    pod = PodView()
    pod.update(StatusData(status=status, state=status))
    pod.run_sent = True
    assert decide(Key.INTERRUPT, pod.key_status).send == "pause"
    pod.update(StatusData(status="running", state="requesting"))
    assert not pod.run_sent and pod.key_status == "running"
    pod.update(StatusData(status="idle", state="idle"))
    assert decide(Key.INTERRUPT, pod.key_status).arm  # the turn ended: at rest again
    # A run the pod refused (its status did not change) is forgotten at the next status.
    pod.run_sent = True
    pod.update(StatusData(status="paused", state="paused"))
    assert pod.key_status == "paused"
