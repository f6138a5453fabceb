"""A ``run``'s client request id: kept on the user message it commits, so a replay (a retry
after a lost connection, a fleet gateway's replay after a host restart) is answered
``duplicate`` and never commits a second user message or starts a second turn."""

from __future__ import annotations

from pathlib import Path

from orchestrator.adapters.providers.scripted import ScriptedReply
from orchestrator.adapters.session import load_session
from orchestrator.core.history import UserMessage
from orchestrator.runtime.unload import unload_session
from tests.orchestrator.runtime.test_unload import SLOW, Harness, held_for_hooks, send


def _user_messages(path: Path) -> list[tuple[str, str | None]]:
    return [
        (item.text, item.request_id)
        for item in load_session(path).items
        if isinstance(item, UserMessage)
    ]


async def test_a_replayed_run_is_answered_duplicate_and_changes_nothing(workspace: Path) -> None:
    pods = Harness(workspace)
    pod, events = pods.build([ScriptedReply(text="one"), ScriptedReply(text="two")])
    assert send(pod, "run", input="hi", request_id="r-1") == []
    await pod.controller.wait_idle()
    before = pods.session.read_bytes()

    replies = send(pod, "run", input="hi", request_id="r-1")
    assert [(r["event"], r["data"]["code"]) for r in replies] == [("error", "duplicate")]
    assert "turn 1" in replies[0]["data"]["message"]
    assert pods.session.read_bytes() == before
    assert len(events.of("turn_start")) == 1

    # Another id is another run; so is a run with none.
    assert send(pod, "run", input="hi", request_id="r-2") == []
    await pod.controller.wait_idle()
    assert _user_messages(pods.session) == [("hi", "r-1"), ("hi", "r-2")]
    pod.controller.transcript.session.close()


async def test_a_replay_is_recognised_after_an_unload(workspace: Path) -> None:
    """What a host restart is: the pod comes back from its session file, which holds the id."""
    pods = Harness(workspace)
    pod, _ = pods.build([ScriptedReply(text="one")])
    send(pod, "run", input="hi", request_id="r-1")
    await pod.controller.wait_idle()
    unload_session(pod.controller)

    again, events = pods.build([ScriptedReply(text="never")])
    replies = send(again, "run", input="hi", request_id="r-1")
    assert [r["data"]["code"] for r in replies] == ["duplicate"]
    assert events.of("turn_start") == []
    assert _user_messages(pods.session) == [("hi", "r-1")]
    again.controller.transcript.session.close()


async def test_a_replay_of_a_paused_turn_does_not_close_it(workspace: Path) -> None:
    """From ``paused`` a new ``run`` would close the turn and start another; a replay of the
    run that opened it must not."""
    pods = Harness(workspace)
    pod, events = pods.build([SLOW, ScriptedReply(text="resumed")])
    send(pod, "run", input="go", request_id="r-1")
    await events.wait_for("text_delta")
    send(pod, "pause")
    await pod.controller.wait_idle()
    assert pod.controller.state_id == "paused"
    assert [r["data"]["code"] for r in send(pod, "run", input="go", request_id="r-1")] == [
        "duplicate"
    ]
    assert pod.controller.state_id == "paused"
    send(pod, "resume")
    await pod.controller.wait_idle()
    assert events.of("run_end")[-1] == {"result": "finished"}
    assert _user_messages(pods.session) == [("go", "r-1")]
    pod.controller.transcript.session.close()


async def test_a_run_without_an_id_is_never_deduplicated(workspace: Path) -> None:
    pods = Harness(workspace)
    pod, _ = pods.build([ScriptedReply(text="one"), ScriptedReply(text="two")])
    for _ in range(2):
        assert send(pod, "run", input="hi") == []
        await pod.controller.wait_idle()
    assert _user_messages(pods.session) == [("hi", None), ("hi", None)]
    # No id, no key in the file: sessions of pods outside a fleet are as they were.
    assert b"request_id" not in pods.session.read_bytes()
    pod.controller.transcript.session.close()


async def test_a_prompt_held_for_its_hooks_keeps_its_id_across_an_unload(
    workspace: Path, tmp_path: Path
) -> None:
    """Not committed yet (its ``UserPromptSubmit`` hooks decide) but already accepted: a
    replay must not hold a second one, before the unload or after it."""
    pods, pod, gate = await held_for_hooks(workspace, tmp_path, input="go", request_id="r-1")
    assert pod.controller.request_turn("r-1") == 1
    held = unload_session(pod.controller)
    assert held.prompt is not None and held.prompt.request_id == "r-1"
    await pod.controller.close_hooks()

    gate.touch()
    again, events = pods.build([ScriptedReply(text="done")])
    assert [r["data"]["code"] for r in send(again, "run", input="go", request_id="r-1")] == [
        "duplicate"
    ]
    send(again, "resume")
    await again.controller.wait_idle()
    await again.controller.close_hooks()
    assert events.of("run_end") == [{"result": "finished"}]
    assert _user_messages(pods.session) == [("go", "r-1")]
    again.controller.transcript.session.close()
