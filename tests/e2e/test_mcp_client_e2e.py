"""The pod as an MCP client that servers can ask things of, end to end: a pod's config reaches
its servers (roots, ``[mcp] elicitation``), a call's progress streams to its clients as the
call's live output, and what a server logs reaches people as alerts."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from conformance.tokens import count_block_tokens
from orchestrator.core.documents import PDF_PAGE_TOKENS
from orchestrator.core.prices import DEFAULT_PRICES
from orchestrator.core.usage import TokenUsage
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    fake_provider,
    running_pod,
)
from tests.mcp.asking_server import config
from tests.mcp.hostile_server import config as hostile_config
from tests.pdf_files import minimal_pdf


def call(tool: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=f"mcp__a__{tool}", input=arguments)])


async def test_progress_streams_as_output_and_the_config_reaches_the_server(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "reference"
    extra.mkdir()
    replies = [
        call("steps", count=2),
        call("roots"),
        call("ask"),
        call("chatty", levels=["error"]),
        ScriptedReply(text="done"),
    ]
    async with running_pod(
        workspace,
        short_dir,
        replies=replies,
        read_roots=[str(extra)],
        mcp={"servers": {"a": config()}, "elicitation": "defaults"},
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end", timeout=60)
        await c.close()
    assert events[-1].data == {"result": "finished"}
    steps_id = next(e.data["id"] for e in events if e.event == "tool_call_done")
    live = [
        (e.event, e.data.get("text"))
        for e in events
        if e.event in ("tool_output_delta", "tool_result") and e.data["id"] == steps_id
    ]
    assert live == [
        ("tool_output_delta", "[progress 1/2] step 1 of 2\n"),
        ("tool_output_delta", "[progress 2/2] step 2 of 2\n"),
        ("tool_result", None),
    ]
    contents = [e.data["content"] for e in events if e.event == "tool_result"]
    assert contents[1].splitlines() == [
        f"{workspace.resolve().as_uri()} workspace",
        f"{extra.resolve().as_uri()} reference",
    ]
    assert contents[2] == "accept {'name': 'John Doe', 'age': 30}"
    alerts = [(e.data["level"], e.data["message"]) for e in events if e.event == "alert"]
    assert ("error", "MCP server a logged (error): chatty: a error message") in alerts


async def test_the_model_follows_a_resource_link_with_read_mcp_resource(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        call("check_in"),
        ScriptedReply(
            tool_calls=[
                ScriptedToolCall(
                    name="read_mcp_resource", input={"server": "a", "uri": "notes://today"}
                )
            ]
        ),
        ScriptedReply(text="done"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"a": config()}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "what is on today?"})
        events = await collect_until(c, "run_end", timeout=60)
        await c.close()
    assert events[-1].data == {"result": "finished"}
    link, read = [e.data for e in events if e.event == "tool_result"]
    assert link["content"] == "See today's notes.\n[link: notes://today]"
    assert not read["is_error"]
    assert read["content"] == "[resource notes://today]\n# Today\nWater the plants.\n"


def in_call_order(calls: dict[str, Any], results: dict[str, Any]) -> list[dict[str, Any]]:
    """The results of a message's calls in the order of the calls: refs are read at once, so
    their results are committed as each read ends (the API pairs them by id, not by place)."""
    by_id = {block["tool_use_id"]: block for block in results["content"]}
    assert len(by_id) == len(calls["content"])
    return [by_id[call["id"]] for call in calls["content"]]


async def test_an_mcp_ref_in_a_prompt_attaches_the_resource_before_the_model_answers(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(Reply(text="Water the plants, and the logo is grey."))
    provider = fake_provider(fake)
    prompt = "what is on @mcp:a:notes://today, and @mcp:a:notes://logo.png? (@mcp:zz:x://y)"
    async with running_pod(
        workspace, short_dir, provider=provider, mcp={"servers": {"a": config()}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": prompt})
        events = await collect_until(c, "run_end", timeout=60)
        await c.close()
    await provider.aclose()
    assert events[-1].data == {"result": "finished"}
    alerts = [e.data["message"] for e in events if e.event == "alert"]
    assert alerts == [
        "could not attach @mcp:zz:x://y: no MCP server named zz with resources is running"
    ]
    [request] = fake.requests
    assert request.valid, request.error
    user, reads, results = request.body["messages"]
    assert user["content"][0]["text"] == prompt
    assert [(b["name"], b["input"]) for b in reads["content"]] == [
        ("read_mcp_resource", {"server": "a", "uri": "notes://today"}),
        ("read_mcp_resource", {"server": "a", "uri": "notes://logo.png"}),
    ]
    text, picture = in_call_order(reads, results)
    assert text["content"] == (
        "mcp a resource notes://today: 3 lines\n[resource notes://today]\n# Today\n"
        "Water the plants.\n"
    )
    assert [block["type"] for block in picture["content"]] == ["text", "image"]


async def test_a_pdf_resource_reaches_the_model_as_a_document_block(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    """Attached by an ``@mcp:`` ref and embedded in a tool's result, the PDF is sent as a
    document; one that is not a PDF is named, and the fake API (which counts PDF pages as the
    real one does) takes every request."""
    fake.push(Reply(tool_calls=[ToolCall(name="mcp__a__report")]))
    fake.push(Reply(text="Two pages of weekly report."))
    provider = fake_provider(fake)
    prompt = "summarise @mcp:a:notes://report.pdf (and @mcp:a:notes://fake.pdf)"
    async with running_pod(
        workspace, short_dir, provider=provider, mcp={"servers": {"a": config()}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": prompt})
        events = await collect_until(c, "run_end", timeout=60)
        await c.close()
    await provider.aclose()
    assert events[-1].data == {"result": "finished"}
    first, second = fake.requests
    assert first.valid and second.valid, (first.error, second.error)
    pdf = base64.b64encode(minimal_pdf(2, "Weekly report")).decode("ascii")
    document = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": pdf},
    }
    _, reads, results = first.body["messages"]
    report, fake_pdf = in_call_order(reads, results)
    assert report["content"] == [
        {
            "type": "text",
            "text": "mcp a resource notes://report.pdf: 1 lines, 1 document\n"
            "[resource notes://report.pdf: document 1, application/pdf, 2 pages, attached]",
        },
        document,
    ]
    assert fake_pdf["content"] == (
        "mcp a resource notes://fake.pdf: 1 lines\n[resource notes://fake.pdf: "
        "application/pdf, 35 bytes, not shown: not a PDF: it does not start with %PDF-]"
    )
    called = second.body["messages"][-1]["content"][0]
    assert called["content"][1:] == [document]
    # The fake counts it by its pages, as the API does: 2 pages, not its base64's length.
    with_pdf = count_block_tokens(called)
    called_text_only = {**called, "content": called["content"][:1]}
    assert with_pdf - count_block_tokens(called_text_only) == 2 * PDF_PAGE_TOKENS + 3


async def test_sampling_is_put_to_a_person_then_to_the_pods_model(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        call("sample"),
        ScriptedReply(text="An old silent pond"),  # the sampling request's answer
        call("sample"),
        ScriptedReply(text="done"),
    ]
    entry = config(sampling="ask")
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"a": entry}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "a haiku, twice"})
        events = await collect_until(c, "approval_request", timeout=60)
        asked = events[-1]
        await c.send("approve", {"id": asked.data["id"]})
        events += await collect_until(c, "approval_request", timeout=60)
        await c.send("deny", {"id": events[-1].data["id"], "message": "one is enough"})
        events += await collect_until(c, "run_end", timeout=60)
        status = await c.request("get_status")
        history = await c.request("get_history")
        await c.close()
    assert (asked.data["tool"], asked.data["kind"]) == ("mcp__a__sampling", "other")
    assert asked.data["arguments"]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "A haiku?"}]}
    ]
    assert events[-1].data == {"result": "finished"}
    sampled, denied = [e.data for e in events if e.event == "tool_result"][-2:]
    assert "sampled: type='text' text='An old silent pond'" in sampled["content"]
    assert denied["is_error"]
    assert denied["summary"].endswith(
        "pod-orchestrator declined the sampling request of MCP server a: the user denied it: "
        "one is enough"
    )
    # What the sampling request cost is counted beside the turn's own requests.
    turns = [
        item["usage"]["output_tokens"]
        for item in history.data["items"]
        if item["kind"] == "assistant" and item.get("usage")
    ]
    assert len(turns) == 3
    assert status.data["turn_usage"]["output_tokens"] > sum(turns)
    # ... and kept in the session: a reload counts it too (no item carries it).
    async with running_pod(
        workspace, short_dir, continue_=True, mcp={"servers": {"a": entry}}
    ) as again:
        c = await again.client()
        reloaded = await c.request("get_status")
        await c.close()
    assert reloaded.data["usage"] == status.data["usage"]
    # It counts toward the budgets in dollars too (docs/budgets.md), across the reload.
    items = [i for i in history.data["items"] if i["kind"] == "assistant" and i.get("usage")]
    prices = DEFAULT_PRICES["claude-sonnet-4"]  # the scripted provider stands in for the model
    own = sum(prices.cost(TokenUsage(**item["usage"])) for item in items)
    assert status.data["budget"]["spent_usd"] > round(own, 6)
    assert reloaded.data["budget"]["spent_usd"] == status.data["budget"]["spent_usd"]


async def test_a_request_for_input_waits_for_a_person_who_fills_in_the_form(
    workspace: Path, short_dir: Path
) -> None:
    replies = [call("ask_token"), call("ask_token"), ScriptedReply(text="done")]
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"a": config()}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "log in twice"})
        events = await collect_until(c, "elicitation_request", timeout=60)
        asked = events[-1].data
        waiting = await c.request("get_status")
        # A form the schema refuses is this client's error; the request keeps waiting.
        refused = await c.request(
            "answer_elicitation", {"id": asked["id"], "action": "accept", "content": {}}
        )
        wrong = await c.request("answer_elicitation", {"id": "input_nope", "action": "decline"})
        await c.send(
            "answer_elicitation",
            {"id": asked["id"], "action": "accept", "content": {"token": "s3cret"}},
        )
        events += await collect_until(c, "elicitation_request", timeout=60)
        await c.send("answer_elicitation", {"id": events[-1].data["id"], "action": "decline"})
        events += await collect_until(c, "run_end", timeout=60)
        after = await c.request("get_status")
        await c.close()
    assert (asked["server"], asked["mode"], asked["tool"]) == ("a", "form", "mcp__a__ask_token")
    assert asked["message"] == "Your token, please"
    assert asked["schema"]["required"] == ["token"]
    assert waiting.data["state"] == "awaiting_input"
    assert [e["id"] for e in waiting.data["elicitations"]] == [asked["id"]]
    assert (refused.event, refused.data["code"]) == ("error", "invalid_request")
    assert refused.data["message"] == "the answer does not fit the form: field 'token' is required"
    assert (wrong.event, wrong.data["code"]) == ("error", "invalid_request")
    assert events[-1].data == {"result": "finished"}
    resolved = [e.data["action"] for e in events if e.event == "elicitation_resolved"]
    assert resolved == ["accept", "decline"]
    results = [e.data["content"] for e in events if e.event == "tool_result"]
    # Fields the person left out stay out; the server fills in its own defaults.
    assert results == ["accept {'token': 's3cret', 'remember': False}", "decline"]
    assert (after.data["state"], after.data["elicitations"]) == ("idle", [])


async def test_a_request_for_input_names_the_call_it_came_during_beside_another_tool(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    # Two calls of one server in flight, the asking one first: the request names its own tool,
    # not the one called last (it did, found by the lifecycle fuzz).
    log = tmp_path / "calls.log"
    asking = {"call_id": "c-ask", "path": str(log)}
    slow = {"call_id": "c-slow", "path": str(log), "seconds": 2}
    replies = [
        ScriptedReply(
            tool_calls=[
                ScriptedToolCall(name="mcp__h__ask_record", input=asking),
                ScriptedToolCall(name="mcp__h__record", input=slow),
            ]
        ),
        ScriptedReply(text="done"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"h": hostile_config()}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "elicitation_request", timeout=60)
        asked = events[-1].data
        await c.send(
            "answer_elicitation",
            {"id": asked["id"], "action": "accept", "content": {"answer": "x"}},
        )
        events += await collect_until(c, "run_end", timeout=60)
        await c.close()
    assert asked["message"].startswith("ask c-ask: ")
    assert asked["tool"] == "mcp__h__ask_record"
    assert events[-1].data == {"result": "finished"}
    results = sorted(
        e.data["content"] or e.data["summary"] for e in events if e.event == "tool_result"
    )
    assert results == ["asked c-ask: accept x", "recorded c-slow"]


async def test_a_pause_withdraws_a_request_for_input_and_the_turn_stays_wire_valid(
    workspace: Path, short_dir: Path
) -> None:
    replies = [call("ask_token"), ScriptedReply(text="done")]
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"a": config()}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "log in"})
        events = await collect_until(c, "elicitation_request", timeout=60)
        asked = events[-1].data
        await c.send("pause")
        events += await collect_until(c, "run_end", timeout=60)
        late = await c.request("answer_elicitation", {"id": asked["id"], "action": "decline"})
        paused = await c.request("get_status")
        await c.send("run", {"input": "never mind"})
        events += await collect_until(c, "run_end", timeout=60)
        await c.close()
    assert [e.data for e in events if e.event == "elicitation_resolved"] == [
        {"id": asked["id"], "action": "withdrawn"}
    ]
    assert events[[e.event for e in events].index("run_end")].data == {"result": "paused"}
    assert (late.event, late.data["code"]) == ("error", "not_awaiting_input")
    assert (paused.data["status"], paused.data["elicitations"]) == ("paused", [])
    assert events[-1].data == {"result": "finished"}
    interrupted = [e.data for e in events if e.event == "tool_result"]
    assert interrupted and interrupted[0]["is_error"]
