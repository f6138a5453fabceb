"""The pod on the real anthropic SDK, over HTTP to the fake Messages API, with telemetry:
the ``chat`` spans say what the API said (its model, its usage), a 529 retried is one request,
a request the API refuses is a failed span under a failed turn, and no trace context is sent
to the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.fake_api import FakeAnthropic, Fault, Reply
from orchestrator.adapters.telemetry import shutdown_telemetry
from tests.e2e.harness import collect_until, fake_provider, running_pod
from tests.telemetry.receiver import Receiver


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()


async def test_chat_spans_carry_the_apis_answer(
    workspace: Path, short_dir: Path, fake: FakeAnthropic, receiver: Receiver
) -> None:
    fake.push(
        Fault(status=529),  # retried inside the one request
        Reply(text="fine", input_tokens=40, output_tokens=5),
        Fault(status=400, message="nope", error_type="invalid_request_error"),
    )
    provider = fake_provider(fake, model="claude-telemetry-test")
    telemetry = {"otlp_endpoint": receiver.url}
    async with running_pod(workspace, short_dir, provider=provider, telemetry=telemetry) as pod:
        client = await pod.client()
        await client.send("run", {"input": "hi"})
        events = await collect_until(client, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        await client.send("run", {"input": "again"})
        events = await collect_until(client, "run_end", timeout=30)
        assert events[-1].data == {"result": "errored"}
        await client.close()
    await provider.aclose()
    # The pod's trace ids stay with the pod's collector: none travels to the API.
    assert fake.requests and all("traceparent" not in r.headers for r in fake.requests)
    assert shutdown_telemetry()
    receiver.wait_for("both turns", lambda r: len(r.named("invoke_agent t")) == 2)
    chats = sorted(receiver.named("chat claude-telemetry-test"), key=lambda s: s.start_ns)
    assert len(chats) == 2, receiver.summary()  # the 529 and its retry are one request
    answered, refused = chats
    assert answered.kind == 3  # CLIENT
    assert answered.attributes["gen_ai.provider.name"] == "anthropic"
    assert answered.attributes["gen_ai.response.model"] == "claude-telemetry-test"
    assert answered.attributes["gen_ai.usage.output_tokens"] == 5
    assert answered.attributes["gen_ai.usage.input_tokens"] >= 40
    assert refused.status_code == 2 and refused.attributes["error.type"].endswith("Error")
    failed = next(
        s for s in receiver.named("invoke_agent t") if s.attributes["pod.run.result"] == "errored"
    )
    assert refused.parent_id == failed.span_id
    assert failed.status_code == 2 and failed.attributes["error.type"] == "turn_failed"
