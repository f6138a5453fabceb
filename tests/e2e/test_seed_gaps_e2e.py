"""What the seeds ask for that was short (issue 11 §6), checked on the wire."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.core.history import Item
from orchestrator.core.interceptors import BaseInterceptor, Finish, Pause, TurnEndAction
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.e2e.test_context_e2e import _knowledge

SLOW = ScriptedReply(text="s" * 200, chunk_size=4, chunk_delay_s=0.01)


def _line(method: str, **params: object) -> bytes:
    return json.dumps({"method": method, "params": params}).encode() + b"\n"


async def test_a_pause_before_the_preread_keeps_it_for_resume(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="ok")], file_ref_style="synthetic_read"
    ) as pod:
        c = await pod.client()
        run = _line(
            "run",
            segments=[{"kind": "text", "text": "see "}, {"kind": "file_ref", "path": "README.md"}],
        )
        await c.send_raw(run + _line("pause"))  # the turn is paused before it reads anything
        await c.wait_for("run_end", result="paused")
        await c.send("resume")
        await c.wait_for("run_end", result="finished")
        [request] = pod.provider.requests
        assert [m["role"] for m in request.messages] == ["user", "assistant", "user"]
        assert request.messages[1]["content"][0]["input"] == {"path": "README.md"}
        result = request.messages[2]["content"][0]["content"]
        assert result.startswith("read_file: README.md")
        pod.assert_all_requests_valid()
        await c.close()


async def test_knowledge_refs_are_attached_in_the_synthetic_read_style(
    workspace: Path, short_dir: Path
) -> None:
    _knowledge(workspace)
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="ok")], file_ref_style="synthetic_read"
    ) as pod:
        c = await pod.client()
        segments = [
            {"kind": "text", "text": "use "},
            {"kind": "knowledge_ref", "slug": "alpha"},
            {"kind": "file_ref", "path": "missing.md"},
        ]
        await c.send("run", {"segments": segments})
        events = await collect_until(c, "run_end")
        alerts = [e.data["message"] for e in events if e.event == "alert"]
        # The failure alert of the synthetic-read style, as the seed asks.
        assert alerts == ["could not attach @missing.md: not found"]
        texts = [b["text"] for b in pod.provider.requests[0].messages[0]["content"]]
        assert texts[0] == "use @knowledge:alpha@missing.md"
        assert texts[1].startswith("[Knowledge: alpha]\n")
        await c.close()


async def test_file_bodies_survive_pruning(workspace: Path, short_dir: Path) -> None:
    def turn(n: int) -> list[ScriptedReply]:
        call = ScriptedToolCall(name="read_file", input={"path": "README.md"}, id=f"toolu_p{n}")
        return [ScriptedReply(tool_calls=[call]), ScriptedReply(text=f"turn {n}")]

    replies = turn(1) + turn(2) + turn(3)
    async with running_pod(
        workspace, short_dir, replies=replies, prune_keep_turns=1, prune_step_tokens=0
    ) as pod:
        c = await pod.client()
        await c.send("run", {"segments": [{"kind": "file_ref", "path": "src/app.py"}]})
        await collect_until(c, "run_end")
        for n in (2, 3):
            await c.send("run", {"input": f"turn {n}"})
            await collect_until(c, "run_end")
        last = pod.provider.requests[-1].messages
        texts = [b.get("text", "") for m in last for b in m["content"] if m["role"] == "user"]
        assert "[File: src/app.py]\ndef main():\n    return 42\n" in texts
        results = [b for m in last for b in m["content"] if b.get("type") == "tool_result"]
        assert results[0]["content"].startswith("read_file: README.md")
        assert "\n" not in results[0]["content"]  # turn 1's tool content is pruned
        await c.close()


async def test_pausing_a_turn_started_by_notify_or_pod_event(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[SLOW, SLOW, SLOW, SLOW]) as pod:
        c = await pod.client()
        for method, params in (
            ("notify", {"message": "CI finished"}),
            ("pod_event", {"kind": "turn_ended", "pod": "child"}),
        ):
            await c.send(method, params)
            await c.wait_for("text_delta")
            await c.send("pause")
            await c.wait_for("run_end", result="paused")
            await c.send("resume")
            await c.wait_for("run_end", result="finished")
        pod.assert_all_requests_valid()
        await c.close()


class PauseAtTurnEnd(BaseInterceptor):
    """Pauses the first time the model ends its turn."""

    def __init__(self) -> None:
        self.armed = True

    def on_turn_end(self, items: Sequence[Item]) -> TurnEndAction:
        if self.armed:
            self.armed = False
            return Pause("review")
        return Finish()


async def test_an_interceptor_pause_at_turn_end_then_resume(
    workspace: Path, short_dir: Path
) -> None:
    chain = InterceptorChain(interceptors=[PauseAtTurnEnd()])
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="first")], interceptors=chain
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end")
        assert events[-1].data["result"] == "paused"
        assert "turn_end" not in [e.event for e in events]
        await c.send("resume")
        events = await collect_until(c, "run_end")
        # The model had answered: resuming ends the turn without asking again (no prefill).
        assert events[-1].data["result"] == "finished"
        assert len(pod.provider.requests) == 1
        await c.close()
