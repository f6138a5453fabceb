"""The fake API's context-economy rules, driven through the real anthropic SDK over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from conformance.cache import ManualClock
from conformance.fake_api import FakeAnthropic, Fault, ModelSpec, Reply
from conformance.tokens import count_input_tokens

MODEL = "claude-test"
MARK: dict[str, Any] = {"type": "ephemeral"}
SYSTEM = "You are a careful coding agent working in a small repository. " * 90  # ~1,400 tokens


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    """A running fake API."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def client(api: FakeAnthropic) -> Iterator[anthropic.Anthropic]:
    """The official SDK pointed at the fake, its retries off."""
    with anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as sdk:
        yield sdk


def text(value: str, **extra: Any) -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": value, **extra}


def chat(turns: int, *, system: str = SYSTEM) -> dict[str, Any]:
    """A request body: the system prompt and ``turns`` user turns with answers between them.

    The system prompt and the newest block carry a breakpoint, as a client that caches a
    whole conversation would send them.
    """
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        if n:
            messages.append({"role": "assistant", "content": [text(f"Answer {n}. " * 20)]})
        messages.append({"role": "user", "content": [text(f"Question {n}? " * 20)]})
    messages[-1]["content"][-1]["cache_control"] = MARK
    return {
        "model": MODEL,
        "max_tokens": 10,
        "system": [text(system, cache_control=MARK)],
        "messages": messages,
    }


def usage_of(message: Any) -> tuple[int, int, int]:
    """(cache read, cache write, plain input) of a response."""
    usage = message.usage
    return usage.cache_read_input_tokens, usage.cache_creation_input_tokens, usage.input_tokens


# -- count_tokens -------------------------------------------------------------------------------


def test_count_tokens_uses_the_same_counter_as_messages(
    api: FakeAnthropic, client: anthropic.Anthropic
) -> None:
    request: dict[str, Any] = {
        "model": MODEL,
        "system": "You are terse.",
        "tools": [{"name": "read", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": [text("hello")]}],
    }
    counted = client.messages.count_tokens(**request)
    # {"input_schema":{"type":"object"},"name":"read"}: 48 bytes -> 12 + 3;
    # {"text":"You are terse.","type":"text"}: 39 bytes -> 10 + 3; "hello": 30 bytes -> 8 + 3.
    assert counted.input_tokens == 15 + 13 + 11 == count_input_tokens(request)
    sent = client.messages.create(max_tokens=10, **request)
    assert sent.usage.input_tokens == counted.input_tokens
    assert [r.path for r in api.lookups] == ["/v1/messages/count_tokens"]
    assert [r.path for r in api.requests] == ["/v1/messages"]
    assert api.pending == 0  # counting never takes a step of the script


def test_count_tokens_validates_like_messages(client: anthropic.Anthropic) -> None:
    unanswered = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
        },
        {"role": "user", "content": "and?"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="`tool_use` ids were found without"):
        client.messages.count_tokens(model=MODEL, messages=unanswered)  # type: ignore[arg-type]


# -- the Models API -----------------------------------------------------------------------------


def test_models_retrieve_returns_the_configured_limits() -> None:
    small = ModelSpec(
        id="small-model", display_name="Small", context_window=8_000, max_tokens=1_000
    )
    with (
        FakeAnthropic(models=[small]) as api,
        anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as client,
    ):
        info = client.models.retrieve("small-model")
        assert (info.id, info.type, info.display_name) == ("small-model", "model", "Small")
        assert (info.max_input_tokens, info.max_tokens) == (8_000, 1_000)
        assert info.lifecycle == "active"
        with pytest.raises(anthropic.NotFoundError) as caught:
            client.models.retrieve("claude-sonnet-4-5")  # not configured on this fake
        assert isinstance(caught.value.body, dict)
        assert caught.value.body["error"] == {
            "type": "not_found_error",
            "message": "model: claude-sonnet-4-5",
        }
        assert [r.status for r in api.lookups] == [200, 404]
        assert api.requests == []


def test_the_default_models_are_listed_newest_first_and_page(client: anthropic.Anthropic) -> None:
    sonnet = client.models.retrieve("claude-sonnet-4-5")
    assert (sonnet.max_input_tokens, sonnet.max_tokens) == (200_000, 64_000)
    everything = [model.id for model in client.models.list()]
    assert everything == [
        "claude-opus-5",
        "claude-sonnet-4-6",
        "claude-opus-4-5",
        "claude-haiku-4-5",
        "claude-sonnet-4-5",
        "fake-model",
        "claude-3-5-haiku",
    ]
    first = client.models.list(limit=1)
    assert ([m.id for m in first.data], first.has_more) == (["claude-opus-5"], True)
    assert [m.id for page in first.iter_pages() for m in page.data] == everything


def test_a_failing_models_endpoint_answers_its_fault(
    api: FakeAnthropic, client: anthropic.Anthropic
) -> None:
    api.models_fault = Fault(status=500)
    with pytest.raises(anthropic.InternalServerError):
        client.models.retrieve("claude-sonnet-4-5")
    with pytest.raises(anthropic.InternalServerError):
        client.models.list()
    api.models_fault = None
    assert client.models.retrieve("claude-sonnet-4-5").max_input_tokens == 200_000
    assert [r.outcome for r in api.lookups] == ["fault", "fault", "complete"]


# -- the context window -------------------------------------------------------------------------


def test_a_prompt_over_the_window_is_refused_in_the_real_wording() -> None:
    messages: list[Any] = [{"role": "user", "content": [text("x" * 400)]}]
    size = count_input_tokens({"messages": messages})
    tight = ModelSpec(id="tight", context_window=size)
    with (
        FakeAnthropic([Reply(text="fits")], models=[tight]) as api,
        anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as client,
    ):
        fits = client.messages.create(model="tight", max_tokens=5, messages=messages)
        assert fits.usage.input_tokens == size
        messages.append({"role": "assistant", "content": "ok"})
        messages.append({"role": "user", "content": "more"})
        longer = count_input_tokens({"messages": messages})
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(model="tight", max_tokens=5, messages=messages)
        expected = f"prompt is too long: {longer} tokens > {size} maximum"
        assert isinstance(caught.value.body, dict)
        assert caught.value.body["error"] == {"type": "invalid_request_error", "message": expected}
        assert (api.requests[-1].valid, api.requests[-1].error) == (False, expected)
        # Counting is not refused: it is how a client finds out how far over it is.
        assert client.messages.count_tokens(model="tight", messages=messages).input_tokens == longer
        # A model nobody configured has a 200,000-token window.
        client.messages.create(model="anything", max_tokens=5, messages=messages)
        huge = [{"role": "user", "content": "y" * 800_100}]
        with pytest.raises(
            anthropic.BadRequestError, match=r"prompt is too long: 200\d{3} tokens > 200000 maximum"
        ):
            client.messages.create(model="anything", max_tokens=5, messages=huge)  # type: ignore[arg-type]


# -- the prompt cache ---------------------------------------------------------------------------


def test_a_moving_breakpoint_reads_the_previous_request_from_the_cache(
    api: FakeAnthropic, client: anthropic.Anthropic
) -> None:
    first, second, third = chat(1), chat(2), chat(3)
    assert usage_of(client.messages.create(**first)) == (0, count_input_tokens(first), 0)
    previous = count_input_tokens(first)
    assert usage_of(client.messages.create(**second)) == (
        previous,
        count_input_tokens(second) - previous,
        0,
    )
    # Streamed, the usage comes in message_start and message_delta; the SDK assembles it.
    with client.messages.stream(**third) as stream:
        final = stream.get_final_message()
    previous = count_input_tokens(second)
    assert usage_of(final) == (previous, count_input_tokens(third) - previous, 0)
    assert final.usage.cache_creation is not None
    assert (
        final.usage.cache_creation.ephemeral_5m_input_tokens
        == final.usage.cache_creation_input_tokens
    )
    # Two entries per request: the system prompt's and the conversation's.
    assert len(api.cache) == 4


def test_the_part_after_the_last_breakpoint_is_plain_input(client: anthropic.Anthropic) -> None:
    body = chat(2)
    tail = {"role": "user", "content": [text("And one more thing, uncached.")]}
    body["messages"][-1]["content"].append(tail["content"][0])
    marked = count_input_tokens(body) - count_input_tokens({"messages": [tail]})
    read, written, plain = usage_of(client.messages.create(**body))
    assert (read, written, plain) == (0, marked, count_input_tokens(body) - marked)


def test_a_changed_system_prompt_invalidates_everything_after_it(
    client: anthropic.Anthropic,
) -> None:
    client.messages.create(**chat(2))
    changed = chat(3, system=SYSTEM.replace("careful", "cautious"))
    assert usage_of(client.messages.create(**changed)) == (0, count_input_tokens(changed), 0)
    # The old entries are still there for a client that did not change its prompt.
    same = chat(3)
    assert usage_of(client.messages.create(**same))[0] == count_input_tokens(chat(2))


@pytest.mark.parametrize(("added", "hit"), [(20, True), (21, False)])
def test_a_breakpoint_finds_an_entry_at_most_twenty_blocks_back(
    client: anthropic.Anthropic, added: int, hit: bool
) -> None:
    system = [text(SYSTEM)]  # no breakpoint of its own: only the lookback can find a hit
    first = {
        "model": MODEL,
        "max_tokens": 10,
        "system": system,
        "messages": [{"role": "user", "content": [text("Look at these.", cache_control=MARK)]}],
    }
    client.messages.create(**first)
    blocks = [text("Look at these.")] + [text(f"File {n}.") for n in range(added)]
    blocks[-1]["cache_control"] = MARK
    later = first | {"messages": [{"role": "user", "content": blocks}]}
    read, written, _ = usage_of(client.messages.create(**later))
    expected_read = count_input_tokens(first) if hit else 0
    assert (read, written) == (expected_read, count_input_tokens(later) - expected_read)


def test_nothing_is_cached_below_the_model_minimum(
    api: FakeAnthropic, client: anthropic.Anthropic
) -> None:
    short = chat(1, system="Be brief.")
    assert count_input_tokens(short) < 1_024
    for _ in range(2):
        assert usage_of(client.messages.create(**short)) == (0, 0, count_input_tokens(short))
    assert len(api.cache) == 0


def test_the_minimum_is_a_setting_of_each_model() -> None:
    body = chat(1)
    size = count_input_tokens(body)
    assert 1_024 <= size < 4_096
    models = [
        ModelSpec(id="sonnet-class", min_cacheable_tokens=1_024),
        ModelSpec(id="haiku-class", min_cacheable_tokens=4_096),
    ]
    with (
        FakeAnthropic(models=models) as api,
        anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as client,
    ):
        assert usage_of(client.messages.create(**body | {"model": "haiku-class"})) == (0, 0, size)
        assert usage_of(client.messages.create(**body | {"model": "sonnet-class"})) == (0, size, 0)


def test_entries_expire_after_their_ttl_unless_read_again() -> None:
    clock = ManualClock()
    body = chat(1)
    hour = chat(1)
    hour["messages"][-1]["content"][-1]["cache_control"] = MARK | {"ttl": "1h"}
    hour["system"][0]["cache_control"] = MARK | {"ttl": "1h"}
    size = count_input_tokens(body)
    with (
        FakeAnthropic(clock=clock) as api,
        anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0) as client,
    ):
        assert usage_of(client.messages.create(**body))[0] == 0
        clock.advance(290)
        assert usage_of(client.messages.create(**body))[0] == size  # renewed for 5 min more
        clock.advance(290)
        assert usage_of(client.messages.create(**body))[0] == size
        clock.advance(301)
        assert usage_of(client.messages.create(**body)) == (0, size, 0)
        # An hour-long entry outlives five minutes, and reports its writes as 1h.
        written = client.messages.create(**hour | {"model": "other"})
        assert written.usage.cache_creation is not None
        assert written.usage.cache_creation.ephemeral_1h_input_tokens == size
        clock.advance(1_800)
        assert usage_of(client.messages.create(**hour | {"model": "other"}))[0] == size
        clock.advance(3_601)
        assert usage_of(client.messages.create(**hour | {"model": "other"}))[0] == 0


def test_five_breakpoints_are_refused_like_the_real_api(
    api: FakeAnthropic, client: anthropic.Anthropic
) -> None:
    body = chat(3)
    for message in body["messages"][:3]:
        message["content"][-1]["cache_control"] = MARK
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(**body)
    expected = "A maximum of 4 blocks with cache_control may be provided. Found 5."
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"] == {"type": "invalid_request_error", "message": expected}
    # Four in all is fine; a request-level cache_control on an unmarked last block is a fifth.
    body["messages"][0]["content"][-1].pop("cache_control")
    client.messages.create(**body)
    body["messages"][-1]["content"][-1].pop("cache_control")
    body["messages"][0]["content"][-1]["cache_control"] = MARK
    with pytest.raises(anthropic.BadRequestError, match="Found 5"):
        client.messages.create(**body, cache_control=MARK | {"ttl": "5m"})
    assert [r.valid for r in api.requests] == [False, True, False]


# -- the standalone server ----------------------------------------------------------------------


def test_the_standalone_server_takes_a_models_file(tmp_path: Path) -> None:
    models = tmp_path / "models.json"
    models.write_text(json.dumps([{"id": "tiny", "context_window": 50, "max_tokens": 10}]))
    command = [sys.executable, "-m", "conformance.fake_api", "--models", str(models)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().strip()
            with anthropic.Anthropic(api_key="k", base_url=base_url, max_retries=0) as client:
                assert client.models.retrieve("tiny").max_input_tokens == 50
                with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
                    client.messages.create(
                        model="tiny",
                        max_tokens=5,
                        messages=[{"role": "user", "content": "x" * 400}],
                    )
        finally:
            process.terminate()


def test_a_bad_models_file_is_a_one_line_error(tmp_path: Path) -> None:
    models = tmp_path / "models.json"
    models.write_text(json.dumps([{"id": "tiny", "window": 50}]))
    done = subprocess.run(
        [sys.executable, "-m", "conformance.fake_api", "--models", str(models)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("fake_api: cannot load models: ")
    assert "entry 0" in done.stderr and "window" in done.stderr
