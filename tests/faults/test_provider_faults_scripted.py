"""Provider failures injected by the scripted provider: after every chunk, rejected, overloaded.

Each failure ends the run ``errored`` with an ``error`` alert, the partial stream is never
committed, and the history stays wire-valid: the next ``run`` finishes (the scripted provider
rejects invalid requests like the API, so finishing proves validity).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator.serving.client import PodEvent
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod

TEXT = "abcde" * 6  # six chunks of five
CHUNKS = len(TEXT) // 5


def _failing(after: int, kind: str = "stream", **extra: Any) -> ScriptedReply:
    return ScriptedReply(
        text=TEXT,
        chunk_size=5,
        chunk_delay_s=0.001,
        error=f"injected {kind} failure",
        error_kind=kind,
        error_after_chunks=after,
        **extra,
    )


def _assert_errored(events: list[PodEvent]) -> None:
    assert events[-1].data == {"result": "errored"}, [e.event for e in events]
    errors = [e.data for e in events if e.event == "error"]
    assert [e["code"] for e in errors] == ["provider_error"], errors
    alerts = [e.data for e in events if e.event == "alert" and e.data["level"] == "error"]
    assert alerts and "injected" in alerts[0]["message"], alerts
    # A partial stream is never committed: no block completed, no turn left open.
    assert not [e for e in events if e.event in ("text_done", "tool_call_done")]
    assert [e.data["result"] for e in events if e.event == "turn_end"] == ["errored"]


async def _recovers(pod: Any, c: Any, before: list[dict[str, Any]]) -> None:
    """The next run finishes with a valid request that does not carry the partial text."""
    await c.send("run", {"input": "try again"})
    events = await collect_until(c, "run_end", timeout=10)
    assert events[-1].data == {"result": "finished"}
    pod.assert_all_requests_valid()
    last = pod.provider.requests[-1].messages
    assert TEXT[:5] not in str(last)
    after = (await c.request("get_history")).data["items"]
    assert after[: len(before)] == before


@pytest.mark.parametrize("after", range(CHUNKS + 1))
async def test_stream_error_after_every_chunk(workspace: Path, short_dir: Path, after: int) -> None:
    replies = [_failing(after), ScriptedReply(text="recovered")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end", timeout=10)
        _assert_errored(events)
        deltas = "".join(e.data["text"] for e in events if e.event == "text_delta")
        assert deltas == TEXT[: 5 * after]
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message"]
        assert (await c.request("get_status")).data["status"] == "idle"
        await _recovers(pod, c, history)
        await c.close()


@pytest.mark.parametrize("kind", ["rejected", "overloaded", "stream"])
@pytest.mark.parametrize("after", [0, 3])
async def test_rejected_and_overloaded(
    workspace: Path, short_dir: Path, kind: str, after: int
) -> None:
    replies = [_failing(after, kind), ScriptedReply(text="recovered")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end", timeout=10)
        _assert_errored(events)
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message"]
        await _recovers(pod, c, history)
        await c.close()


@pytest.mark.parametrize("kind", ["stream", "rejected", "overloaded"])
async def test_error_after_the_tool_calls_streamed(
    workspace: Path, short_dir: Path, kind: str
) -> None:
    """The calls streamed whole, then the stream broke: neither text nor calls are committed."""
    broken = _failing(
        CHUNKS + 1,
        kind,
        tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_x")],
    )
    replies = [broken, ScriptedReply(text="recovered")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end", timeout=10)
        _assert_errored(events)
        assert not [e for e in events if e.event == "tool_result"]
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message"]
        await _recovers(pod, c, history)
        assert "toolu_x" not in str(pod.provider.requests[-1].messages)
        await c.close()


@pytest.mark.parametrize("after", [0, 2, CHUNKS])
async def test_error_in_a_later_round_keeps_the_finished_rounds(
    workspace: Path, short_dir: Path, after: int
) -> None:
    calls = ScriptedReply(
        text="reading",
        tool_calls=[
            ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_1"),
            ScriptedToolCall(name="glob", input={"pattern": "*"}, id="toolu_2"),
        ],
    )
    replies = [calls, _failing(after), ScriptedReply(text="recovered")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end", timeout=10)
        assert events[-1].data == {"result": "errored"}
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == [
            "user_message",
            "assistant",
            "tool_result",
            "tool_result",
        ]
        await _recovers(pod, c, history)
        await c.close()


async def test_errors_back_to_back_then_recovery(workspace: Path, short_dir: Path) -> None:
    replies = [
        _failing(1),
        _failing(0, "rejected"),
        _failing(2, "overloaded"),
        ScriptedReply(text="recovered"),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        for n in range(3):
            await c.send("run", {"input": f"attempt {n}"})
            events = await collect_until(c, "run_end", timeout=10)
            _assert_errored(events)
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message"] * 3
        await _recovers(pod, c, history)
        await c.close()


async def test_scripted_ids_stay_unique_across_a_restart(workspace: Path, short_dir: Path) -> None:
    """The offline demo ('list the files' calls glob) across a restart of the pod."""
    session = short_dir / "s.jsonl"
    first, second = short_dir / "a", short_dir / "b"
    first.mkdir()
    second.mkdir()
    async with running_pod(workspace, first, session=session) as pod:
        pod.provider.replies.clear()  # the built-in demo answers
        c = await pod.client()
        await c.send("run", {"input": "list the files"})
        events = await collect_until(c, "run_end", timeout=10)
        assert events[-1].data == {"result": "finished"}
        await c.close()
    async with running_pod(workspace, second, session=session, continue_=True) as pod:
        c = await pod.client()
        await c.send("run", {"input": "list the files again"})
        events = await collect_until(c, "run_end", timeout=10)
        await c.send("run", {"input": "and now?"})
        more = await collect_until(c, "run_end", timeout=10)
        assert events[-1].data == {"result": "finished"}, [
            e.data for e in events if e.event == "error"
        ]
        assert more[-1].data == {"result": "finished"}, [e.data for e in more if e.event == "error"]
        await c.close()
