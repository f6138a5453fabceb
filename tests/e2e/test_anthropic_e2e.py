"""The pod on the real anthropic SDK, talking HTTP to the fake Messages API server."""

from __future__ import annotations

from pathlib import Path

from conformance.fake_api import Drop, FakeAnthropic, Fault, Reply, ToolCall
from orchestrator.core.prompt_cache import without_breakpoints
from tests.e2e.harness import collect_until, fake_provider, running_pod


async def test_tool_round_pause_and_resume_over_http(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        Reply(text="Let me look.", tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
        Reply(text="z" * 300, chunk_size=3, delay_s=0.01),
        Reply(text="Done after resume."),
    )
    provider = fake_provider(fake)
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the readme"})
        await c.wait_for("tool_result")
        await c.wait_for("text_delta")
        await c.send("pause")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "paused"}
        await c.send("resume")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    requests = fake.requests
    assert len(requests) == 3
    assert all(r.valid for r in requests)
    # The resumed request repeats the interrupted one: nothing partial was committed.
    assert without_breakpoints(requests[1].body["messages"]) == without_breakpoints(
        requests[2].body["messages"]
    )
    last = requests[2].body["messages"]
    assert last[-1]["content"][0]["type"] == "tool_result"


async def test_overload_is_retried_and_reported(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(Fault(status=529), Reply(text="ok after retry"))
    provider = fake_provider(fake)
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        alerts = [e.data for e in events if e.event == "alert"]
        assert alerts and alerts[0]["level"] == "warn" and "529" in alerts[0]["message"]
        await c.close()
    await provider.aclose()


async def test_dropped_stream_ends_errored_and_next_request_is_valid(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(Drop(after_events=4, reply=Reply(text="this will be cut " * 10, chunk_size=4)))
    fake.push(Reply(text="fine now"))
    provider = fake_provider(fake)
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        await c.send("run", {"input": "first"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "errored"}
        await c.send("run", {"input": "second"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message", "user_message", "assistant"]
        await c.close()
    await provider.aclose()
    assert all(r.valid for r in fake.requests)


def _sse_event_count(fake: FakeAnthropic, reply: Reply) -> int:
    """How many SSE events the fake sends for a reply (probe request, then forget it)."""
    import httpx2

    fake.push(reply)
    body = {
        "model": "m",
        "max_tokens": 10,
        "stream": True,
        "messages": [{"role": "user", "content": "probe"}],
    }
    response = httpx2.post(
        f"{fake.base_url}/v1/messages",
        json=body,
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
    )
    fake.reset()
    return response.text.count("\nevent: ") + response.text.startswith("event: ")


async def test_a_stream_dropped_at_every_sse_event_index_leaves_a_resumable_session(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    reply = Reply(
        text="reading the readme",
        chunk_size=6,
        tool_calls=[ToolCall("read_file", {"path": "README.md"})],
    )
    total = _sse_event_count(fake, reply)
    assert total >= 10
    provider = fake_provider(fake)
    outcomes: dict[int, str] = {}
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        for index in range(total + 1):
            fake.push(Drop(after_events=index, reply=reply), Reply(text="recovered"))
            await c.send("run", {"input": f"attempt {index}"})
            events = await collect_until(c, "run_end")
            outcomes[index] = events[-1].data["result"]
            if outcomes[index] == "errored":
                assert any(e.event == "alert" and e.data["level"] == "error" for e in events)
                # Nothing of the cut response was committed.
                history = (await c.request("get_history")).data["items"]
                assert history[-1]["kind"] == "user_message"
            # Whatever happened, the pod can go on with a valid request.
            fake.push(Reply(text="next"))
            await c.send("run", {"input": f"after {index}"})
            events = await collect_until(c, "run_end")
            assert events[-1].data == {"result": "finished"}, index
            assert all(r.valid for r in fake.requests), index
            fake.reset()
        await c.close()
    await provider.aclose()
    assert set(outcomes.values()) <= {"finished", "errored"}
    assert "errored" in outcomes.values()


async def test_an_attached_image_reaches_the_api_as_an_image_block(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (600, 400), (10, 120, 200)).save(buffer, format="PNG")
    (workspace / "shot.png").write_bytes(buffer.getvalue())
    fake.push(Reply(text="A blue rectangle."))
    provider = fake_provider(fake)
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        await c.send("run", {"input": "what is in @shot.png?"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert [e for e in events if e.event == "alert"] == []
        await c.close()
    await provider.aclose()
    [request] = fake.requests
    assert request.valid, request.error
    [user] = without_breakpoints(request.body["messages"])
    text, name, image = user["content"]
    assert text == {"type": "text", "text": "what is in @shot.png?"}
    assert name == {"type": "text", "text": "[Image: shot.png]"}
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]) == buffer.getvalue()
    # The fake counts the image by its pixels (600 x 400 / 750 = 320), not by its base64.
    assert request.usage is not None and request.usage["input_tokens"] < 1000
