"""The controller in process: machine actions and the turn task, without a socket.

The pod is built by ``build_pod`` with a broadcast that records event lines, and driven
through :class:`~orchestrator.runtime.methods.Methods` as the server would drive it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.providers.scripted import (
    ScriptedProvider,
    ScriptedReply,
    ScriptedToolCall,
)
from orchestrator.config.model import PodConfig
from orchestrator.protocol import parse_request
from orchestrator.runtime.methods import Methods
from orchestrator.serving.pod import Pod, build_pod

SLOW = ScriptedReply(text="x" * 100, chunk_size=2, chunk_delay_s=0.005)


class Recorder:
    """The broadcast side of a pod, and the replies of methods sent to it."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    def __call__(self, line: bytes) -> None:
        raw = json.loads(line)
        self.events.append((raw["event"], raw["data"]))

    def names(self) -> list[str]:
        out: list[str] = []
        for name, _ in self.events:
            if name in ("text_delta", "tool_output_delta") and out and out[-1] == name:
                continue
            out.append(name)
        return out

    def of(self, name: str) -> list[dict[str, Any]]:
        return [data for event, data in self.events if event == name]


def _pod(workspace: Path, replies: list[ScriptedReply], **config: Any) -> tuple[Pod, Recorder]:
    recorder = Recorder()
    pod = build_pod(
        PodConfig(workspace=workspace, name="t", provider="scripted", **config),
        broadcast=recorder,
        provider=ScriptedProvider(replies=list(replies)),
        on_stopped=recorder.stop,
    )
    return pod, recorder


def send(methods: Methods, line: dict[str, Any], replies: Recorder) -> None:
    request, params = parse_request(json.dumps(line))
    methods.handle(request.method, params, request.id, replies)


async def test_a_run_commits_announces_and_ends_as_the_machine_says(workspace: Path) -> None:
    pod, events = _pod(workspace, [ScriptedReply(text="hello")])
    replies = Recorder()
    send(pod.methods, {"method": "run", "params": {"input": "hi"}}, replies)
    await pod.controller.wait_idle()
    assert events.names() == [
        "status", "turn_start", "user_message", "text_delta", "usage", "text_done",
        "turn_end", "status", "run_end",
    ]  # fmt: skip
    assert events.of("turn_end") == [{"turn": 1, "result": "finished"}]
    assert events.of("run_end") == [{"result": "finished"}]
    assert replies.events == []  # an accepted method gets no direct reply
    assert [i.kind for i in pod.controller.history.items] == ["user_message", "assistant"]


async def test_refused_methods_get_the_machines_code(workspace: Path) -> None:
    pod, _ = _pod(workspace, [])
    replies = Recorder()
    send(pod.methods, {"method": "resume", "id": 7}, replies)
    send(pod.methods, {"method": "cancel", "id": 8}, replies)
    assert replies.of("error") == [
        {"code": "not_paused", "message": "cannot resume while idle", "id": 7},
        {"code": "not_running", "message": "cannot cancel while idle", "id": 8},
    ]


async def test_pause_then_resume_reruns_the_interrupted_request(workspace: Path) -> None:
    pod, events = _pod(workspace, [SLOW, ScriptedReply(text="done")])
    replies = Recorder()
    send(pod.methods, {"method": "run", "params": {"input": "go"}}, replies)
    while not events.of("text_delta"):
        await asyncio.sleep(0.005)
    send(pod.methods, {"method": "pause"}, replies)
    await pod.controller.wait_idle()
    assert events.of("run_end") == [{"result": "paused"}]
    assert pod.controller.state_id == "paused"
    assert "turn_end" not in events.names()
    send(pod.methods, {"method": "resume"}, replies)
    await pod.controller.wait_idle()
    assert events.of("run_end")[-1] == {"result": "finished"}
    first, second = pod.controller.provider.requests  # type: ignore[attr-defined]
    assert first.messages == second.messages


async def test_cancel_closes_orphans_and_the_run_ends_cancelled(workspace: Path) -> None:
    calls = [ScriptedToolCall(name="read_file", input={"path": "README.md"}) for _ in range(2)]
    pod, events = _pod(workspace, [ScriptedReply(tool_calls=calls), SLOW])
    replies = Recorder()
    send(pod.methods, {"method": "run", "params": {"input": "go"}}, replies)
    while len(events.of("text_delta")) < 1:
        await asyncio.sleep(0.005)
    send(pod.methods, {"method": "cancel"}, replies)
    await pod.controller.wait_idle()
    assert events.of("turn_end")[-1] == {"turn": 1, "result": "cancelled"}
    assert events.of("run_end")[-1] == {"result": "cancelled"}
    assert pod.controller.state_id == "idle"


async def test_notes_that_arrive_while_a_turn_ends_start_the_next_one(workspace: Path) -> None:
    pod, events = _pod(workspace, [SLOW, ScriptedReply(text="noted")])
    replies = Recorder()
    send(pod.methods, {"method": "run", "params": {"input": "go"}}, replies)
    while not events.of("text_delta"):
        await asyncio.sleep(0.005)
    send(pod.methods, {"method": "cancel"}, replies)
    send(pod.methods, {"method": "notify", "params": {"message": "CI is green"}}, replies)
    await pod.controller.wait_idle()
    # The cancelled run ends, then the eventless idle → running edge starts a turn for the note.
    assert events.of("run_end") == [{"result": "cancelled"}, {"result": "finished"}]
    notes = [i for i in pod.controller.history.items if i.kind == "system_message"]
    assert [n.text for n in notes] == ["[Notification] CI is green"]  # type: ignore[union-attr]


async def test_shutdown_keeps_waiting_notes_and_calls_on_stopped(workspace: Path) -> None:
    pod, events = _pod(workspace, [SLOW])
    replies = Recorder()
    send(pod.methods, {"method": "run", "params": {"input": "go"}}, replies)
    while not events.of("text_delta"):
        await asyncio.sleep(0.005)
    send(pod.methods, {"method": "pause"}, replies)
    await pod.controller.wait_idle()
    send(pod.methods, {"method": "notify", "params": {"message": "late"}}, replies)
    send(pod.methods, {"method": "shutdown"}, replies)
    assert pod.controller.machine.is_terminated
    assert events.stopped
    assert events.names()[-4:] == ["turn_end", "status", "system_note", "shutdown"]
    assert events.of("turn_end")[-1] == {"turn": 1, "result": "cancelled"}


@pytest.mark.parametrize("style", ["system_message", "synthetic_read"])
async def test_interceptor_cancel_commits_nothing(workspace: Path, style: str) -> None:
    from orchestrator.capabilities.hooks.chain import InterceptorChain
    from orchestrator.core.interceptors import BaseInterceptor, Cancel, PromptAction

    class Veto(BaseInterceptor):
        def on_prompt_submit(self, message: Any) -> PromptAction:
            return Cancel("not now")

    recorder = Recorder()
    pod = build_pod(
        PodConfig(workspace=workspace, name="t", provider="scripted", file_ref_style=style),
        broadcast=recorder,
        provider=ScriptedProvider(),
        interceptors=InterceptorChain(interceptors=[Veto()]),
    )
    send(pod.methods, {"method": "run", "params": {"input": "see @README.md"}}, Recorder())
    await pod.controller.wait_idle()
    assert pod.controller.history.items == []
    assert recorder.of("run_end") == [{"result": "cancelled"}]
    assert [a["message"] for a in recorder.of("alert")] == ["submit cancelled: not now"]
