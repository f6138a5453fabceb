"""Unloading a pod (its session closed without a shutdown) and loading it again, in process.

Each test builds a real pod with ``build_pod``, drives it as the server would, unloads it with
:func:`orchestrator.runtime.unload.unload_session` (what a host's eviction does: no machine
``shutdown``, which from ``paused`` would close the turn), then builds a new pod on the same
session file with ``continue_=True`` and checks that nothing held in memory was lost.
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
from orchestrator.adapters.session import (
    GrantRecord,
    SessionWriter,
    UnloadRecord,
    has_content,
    load_session,
)
from orchestrator.config.model import PodConfig
from orchestrator.core.history import History, SystemMessage, ToolResult, UserMessage
from orchestrator.protocol import parse_request
from orchestrator.runtime.unload import UnloadBlocked, unload_blockers, unload_session
from orchestrator.serving.pod import Pod, build_pod
from tests.faults.small_disk import small_disk

SLOW = ScriptedReply(text="x" * 200, chunk_size=2, chunk_delay_s=0.005)
"""A reply long enough to pause in the middle of."""


class Events:
    """The broadcast side of a pod: every event line, and a way to wait for one."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self._arrived = asyncio.Event()

    def __call__(self, line: bytes) -> None:
        raw = json.loads(line)
        self.seen.append((raw["event"], raw["data"]))
        self._arrived.set()

    def of(self, name: str) -> list[dict[str, Any]]:
        return [data for event, data in self.seen if event == name]

    async def wait_for(self, name: str, count: int = 1, timeout: float = 10.0) -> dict[str, Any]:
        """The ``count``-th event called ``name``, once it has been broadcast."""

        async def arrived() -> dict[str, Any]:
            while len(self.of(name)) < count:
                self._arrived.clear()
                await self._arrived.wait()
            return self.of(name)[count - 1]

        return await asyncio.wait_for(arrived(), timeout)


class Harness:
    """Pods built one after another on the same session file."""

    def __init__(self, workspace: Path, **config: Any) -> None:
        config.setdefault("session", workspace.parent / "session.jsonl")
        self.session: Path = config["session"]
        self.config = PodConfig(workspace=workspace, name="t", provider="scripted", **config)

    def build(
        self, replies: list[ScriptedReply], provider: ScriptedProvider | None = None
    ) -> tuple[Pod, Events]:
        events = Events()
        pod = build_pod(
            self.config,
            broadcast=events,
            provider=provider or ScriptedProvider(replies=list(replies)),
            continue_=True,
        )
        return pod, events


def send(pod: Pod, method: str, **params: Any) -> list[dict[str, Any]]:
    """Send a method as a client would; returns the direct replies (refusals)."""
    line: dict[str, Any] = {"method": method}
    if params:
        line["params"] = params
    request, parsed = parse_request(json.dumps(line))
    replies: list[dict[str, Any]] = []
    pod.methods.handle(request.method, parsed, request.id, lambda b: replies.append(json.loads(b)))
    return replies


async def pause_mid_reply(pod: Pod, events: Events, text: str = "go") -> None:
    send(pod, "run", input=text)
    await events.wait_for("text_delta")
    send(pod, "pause")
    await settled(pod)


async def settled(pod: Pod) -> None:
    """Wait for the pod's task and the turn's workspace snapshot (started with the turn, it
    goes on after a pause and keeps the pod loaded until it is taken)."""
    await pod.controller.wait_idle()
    await pod.controller.turn_snapshot_taken()
    assert unload_blockers(pod.controller) == []


async def test_an_idle_pod_comes_back_the_same_and_its_lock_is_released(workspace: Path) -> None:
    pods = Harness(workspace)
    pod, _ = pods.build([ScriptedReply(text="hello")])
    send(pod, "run", input="hi")
    await pod.controller.wait_idle()
    assert unload_blockers(pod.controller) == []
    held = unload_session(pod.controller)
    assert held.notes == [] and held.prompt is None

    again, _ = pods.build([])  # would raise SessionLocked had the lock been kept
    assert again.controller.state_id == "idle"
    assert again.controller.history.items == pod.controller.history.items
    assert again.methods.history_line() == pod.methods.history_line()
    again.controller.transcript.session.close()


async def test_notes_queued_while_paused_reach_the_next_turn_after_a_reload(
    workspace: Path,
) -> None:
    pods = Harness(workspace)
    pod, events = pods.build([SLOW])
    await pause_mid_reply(pod, events)
    for message in ("CI is green", "CI is green", "deploy done"):
        assert send(pod, "notify", message=message) == []
    unload_session(pod.controller)

    again, events = pods.build([ScriptedReply(text="noted")])
    assert again.controller.state_id == "paused"  # the turn was not closed
    assert [(n.text, k) for n, k in again.controller.notes.waiting()] == [
        ("[Notification] CI is green", 2),
        ("[Notification] deploy done", 1),
    ]
    send(again, "resume")
    await again.controller.wait_idle()
    assert events.of("run_end") == [{"result": "finished"}]
    notes = [i.text for i in again.controller.history.items if isinstance(i, SystemMessage)]
    assert notes == [
        "[Notification] CI is green (repeated 2 times)",
        "[Notification] deploy done",
    ]
    (request,) = again.controller.provider.requests  # type: ignore[attr-defined]
    assert "deploy done" in json.dumps(request.messages)
    # Delivered: the unload record is spent, a later load finds nothing to put back.
    again.controller.transcript.session.close()
    assert load_session(pods.session).unloaded is None


async def test_an_always_answer_still_applies_after_a_reload(workspace: Path) -> None:
    pods = Harness(workspace)
    write = ScriptedToolCall(name="write_file", input={"path": "a.txt", "content": "one"})
    pod, events = pods.build([ScriptedReply(tool_calls=[write]), ScriptedReply(text="written")])
    send(pod, "run", input="write a")
    request = await events.wait_for("approval_request")
    send(pod, "approve", id=request["id"], scope="session")
    await pod.controller.wait_idle()
    assert (workspace / "a.txt").read_text() == "one"
    unload_session(pod.controller)
    (grant,) = load_session(pods.session).grants
    assert (grant.tool, grant.command, grant.call_id) == ("write_file", None, request["id"])

    again = ScriptedToolCall(name="write_file", input={"path": "b.txt", "content": "two"})
    pod, events = pods.build([ScriptedReply(tool_calls=[again]), ScriptedReply(text="done")])
    send(pod, "run", input="write b")
    await events.wait_for("run_end")  # a call that asked would wait here, and time out
    assert events.of("approval_request") == []  # granted for the session: nobody is asked
    assert (workspace / "b.txt").read_text() == "two"
    pod.controller.transcript.session.close()


async def test_a_hook_script_changed_while_the_pod_was_unloaded_is_still_refused(
    workspace: Path,
) -> None:
    # A sandbox = false hook runs the workspace files it names only as the pod's start found
    # them; a load is no new start: the fingerprints come back with the session.
    log, script = workspace.parent / "stop.log", workspace / "scripts" / "stop.sh"
    script.parent.mkdir()
    script.write_text(f"echo ran >> {log}\n")
    hooks = {"Stop": [{"hooks": [{"command": "sh scripts/stop.sh", "sandbox": False}]}]}
    pods = Harness(workspace, hooks=hooks)
    pod, _ = pods.build([ScriptedReply(text="hello")])
    send(pod, "run", input="hi")
    await pod.controller.wait_idle()
    assert log.read_text() == "ran\n"
    unload_session(pod.controller)
    script.write_text(f"echo planted >> {log}\n")  # while nothing watched

    again, events = pods.build([ScriptedReply(text="again")])
    send(again, "run", input="hi")
    await again.controller.wait_idle()
    assert log.read_text() == "ran\n"
    assert any(
        "changed since the pod started" in alert["message"] and str(script) in alert["message"]
        for alert in events.of("alert")
    ), events.of("alert")
    again.controller.transcript.session.close()


def test_a_granted_command_is_granted_again_exactly(workspace: Path) -> None:
    pods = Harness(workspace)
    pod, _ = pods.build([])
    policy = pod.controller.approvals.policy
    rules = [policy.grant("bash", {"command": "make *"}), policy.grant("edit_file", {})]
    for rule in rules:
        pod.controller.transcript.keep(GrantRecord(tool=rule.tool, command=rule.subject))
    unload_session(pod.controller)
    again, _ = pods.build([])
    restored = again.controller.approvals.policy
    assert restored.granted == rules
    # Exact, as the person approved it: the ``*`` is no wildcard.
    assert restored.decide("bash", "execute", {"command": "make *"}).verdict == "allow"
    assert restored.decide("bash", "execute", {"command": "make all"}).verdict == "ask"
    again.controller.transcript.session.close()


class GatedWindow(ScriptedProvider):
    """A scripted model that is slow to tell its window, so a turn can be paused while it
    waits to pre-read its ``@`` refs."""

    def __init__(self, gate: asyncio.Event, asked: asyncio.Event, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate, self.asked = gate, asked

    async def context_window(self) -> int | None:
        self.asked.set()
        await self.gate.wait()
        return self.window


async def test_a_paused_turn_still_reads_its_refs_after_a_reload(workspace: Path) -> None:
    pods = Harness(workspace, file_ref_style="synthetic_read")
    asked = asyncio.Event()
    provider = GatedWindow(asyncio.Event(), asked)
    pod, _ = pods.build([], provider=provider)
    send(pod, "run", input="summarise @README.md")
    await asyncio.wait_for(asked.wait(), 10)
    send(pod, "pause")
    await settled(pod)
    assert pod.controller.state_id == "paused"
    held = unload_session(pod.controller)
    assert [ref.path for ref in held.preread] == ["README.md"]

    again, events = pods.build([ScriptedReply(text="It is a tiny project.")])
    assert again.controller.state_id == "paused"
    send(again, "resume")
    await again.controller.wait_idle()
    assert events.of("run_end") == [{"result": "finished"}]
    results = [i for i in again.controller.history.items if isinstance(i, ToolResult)]
    assert len(results) == 1 and "A tiny project." in (results[0].content or "")
    again.controller.transcript.session.close()


async def held_for_hooks(workspace: Path, tmp_path: Path, **run: Any) -> tuple[Harness, Pod, Path]:
    """A pod paused while its ``UserPromptSubmit`` hook holds the prompt of a ``run`` with
    ``run`` as params; the hook lets it pass once the returned gate file exists."""
    gate, started = tmp_path / "gate", tmp_path / "started"
    wait = f"cat >/dev/null; touch {started}; while [ ! -e {gate} ]; do sleep 0.02; done"
    hooks = {"UserPromptSubmit": [{"matcher": "", "hooks": [{"command": wait}]}]}
    pods = Harness(workspace, hooks=hooks, sandbox={"mode": "off"})
    pod, _ = pods.build([])
    send(pod, "run", **run)
    for _ in range(500):
        if started.exists():
            break
        await asyncio.sleep(0.02)
    assert started.exists(), "the UserPromptSubmit hook never started"
    send(pod, "pause")
    await settled(pod)
    return pods, pod, gate


async def test_a_prompt_held_for_its_hooks_is_submitted_after_a_reload(
    workspace: Path, tmp_path: Path
) -> None:
    pods, pod, gate = await held_for_hooks(workspace, tmp_path, input="explain @README.md")
    assert pod.controller.state_id == "paused"
    assert not [i for i in pod.controller.history.items if isinstance(i, UserMessage)]
    held = unload_session(pod.controller)
    assert held.prompt is not None and held.prompt.text.startswith("explain @README.md")
    await pod.controller.close_hooks()
    assert not load_session(pods.session).items
    assert has_content(pods.session)  # `--continue` finds it: a conversation, paused

    gate.touch()
    again, events = pods.build([ScriptedReply(text="It is a demo.")])
    assert again.controller.state_id == "paused"
    send(again, "resume")
    await again.controller.wait_idle()
    await again.controller.close_hooks()
    assert events.of("run_end") == [{"result": "finished"}]
    kinds = [i.kind for i in again.controller.history.items]
    assert kinds == ["user_message", "system_message", "assistant"]  # the prompt, README, answer
    assert "A tiny project." in again.controller.history.items[1].text  # type: ignore[union-attr]
    again.controller.transcript.session.close()


async def test_a_pod_at_work_is_not_unloaded_and_is_left_as_it_was(workspace: Path) -> None:
    pods = Harness(workspace)
    write = ScriptedToolCall(name="write_file", input={"path": "a.txt", "content": "one"})
    pod, events = pods.build([SLOW, ScriptedReply(tool_calls=[write]), ScriptedReply(text="ok")])
    send(pod, "run", input="go")
    await events.wait_for("text_delta")
    running = unload_blockers(pod.controller)
    assert running[0] == "a turn is running"
    assert set(running[1:]) <= {"a workspace snapshot is being taken"}
    with pytest.raises(UnloadBlocked, match="a turn is running") as refused:
        unload_session(pod.controller)
    assert refused.value.reasons == running
    await settled(pod)
    send(pod, "run", input="write")
    await events.wait_for("approval_request")
    assert unload_blockers(pod.controller) == [
        "a turn is waiting for an approval",
        "1 approval waits for an answer",
    ]
    send(pod, "deny", id=events.of("approval_request")[0]["id"])
    await settled(pod)
    pod.controller.commit(SystemMessage(text="still writable: nothing was closed"))
    assert pod.controller.transcript.durable
    pod.controller.transcript.session.close()


async def test_records_waiting_for_the_disk_keep_the_pod_loaded(
    workspace: Path, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk", size="64k") as disk:
        pods = Harness(workspace, session=disk.root / "s.jsonl")
        pod, _ = pods.build([])
        disk.fill()
        pod.controller.commit(SystemMessage(text="n" * 8192, origin="notify"))
        pod.controller.transcript.keep(GrantRecord(tool="write_file"))
        assert unload_blockers(pod.controller) == ["2 records wait for the disk"]
        with pytest.raises(UnloadBlocked, match="2 records wait for the disk"):
            unload_session(pod.controller)
        disk.free()
        assert pod.controller.transcript.flush()
        unload_session(pod.controller)
        loaded = load_session(pods.session)
        assert [g.tool for g in loaded.grants] == ["write_file"]
        assert loaded.items[-1].text == "n" * 8192  # type: ignore[union-attr]


async def test_job_endings_the_model_has_not_heard_of_are_told_after_a_reload(
    workspace: Path, tmp_path: Path
) -> None:
    pods = Harness(
        workspace, allow_bash=True, permissions={"mode": "yolo"}, sandbox={"mode": "off"}
    )
    gate = tmp_path / "gate"
    command = f"while [ ! -e {gate} ]; do sleep 0.02; done; echo built"
    background = ScriptedToolCall(name="bash", input={"command": command, "background": True})
    pod, _ = pods.build([ScriptedReply(tool_calls=[background]), ScriptedReply(text="started")])
    send(pod, "run", input="build in the background")
    await pod.controller.wait_idle()
    jobs = pod.controller.jobs
    assert jobs is not None
    (job,) = jobs.jobs()
    assert unload_blockers(pod.controller) == ["1 background job is running"]
    gate.touch()
    await asyncio.wait_for(job.finished.wait(), 10)  # after the turn: the model never heard
    held = unload_session(pod.controller)
    assert len(held.job_notes) == 1

    again, _ = pods.build([ScriptedReply(text="noted")])
    send(again, "run", input="how did the build go?")
    await again.controller.wait_idle()
    told = [i for i in again.controller.history.items if isinstance(i, SystemMessage)]
    assert [n.origin for n in told] == ["jobs"]
    assert "j1" in told[0].text
    again.controller.transcript.session.close()


async def test_what_session_start_hooks_added_reaches_the_first_turn_after_a_reload(
    workspace: Path,
) -> None:
    hooks = {"SessionStart": [{"matcher": "", "hooks": [{"command": "echo 'Open: #12'"}]}]}
    pods = Harness(workspace, hooks=hooks, sandbox={"mode": "off"})
    pod, _ = pods.build([])
    pod.controller.start_session_hooks("startup")
    for _ in range(500):
        if not unload_blockers(pod.controller):
            break
        assert unload_blockers(pod.controller) == ["SessionStart hooks are running"]
        await asyncio.sleep(0.02)
    held = unload_session(pod.controller)
    await pod.controller.close_hooks()
    assert ["Open: #12" in n.text for n in held.session_context] == [True]

    again, _ = pods.build([ScriptedReply(text="ok")])  # no SessionStart run of its own
    send(again, "run", input="what is open?")
    await again.controller.wait_idle()
    await again.controller.close_hooks()
    texts = [i.text for i in again.controller.history.items if isinstance(i, SystemMessage)]
    assert len(texts) == 1 and "Open: #12" in texts[0]
    again.controller.transcript.session.close()


def test_an_unload_record_counts_until_the_conversation_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    history = History()
    history.new_turn()
    writer.append_item(history.append(UserMessage(text="first")))
    writer.turn_end(1, "finished")
    # Paused in turn 2 before its prompt was committed (its hooks had not passed it).
    writer.record(UnloadRecord(at_ms=1, turn=2, paused=True))
    loaded = load_session(path)
    assert loaded.unloaded is not None and loaded.cut_off and loaded.last_turn == 2
    writer.record(GrantRecord(tool="bash", command="make"))  # not the conversation
    assert load_session(path).unloaded == loaded.unloaded
    history.new_turn()
    writer.append_item(history.append(UserMessage(text="second")))  # loaded again, went on
    writer.close()
    again = load_session(path)
    assert again.unloaded is None and again.cut_off  # the turn is open, as a crash leaves it
    assert [g.command for g in again.grants] == ["make"]
