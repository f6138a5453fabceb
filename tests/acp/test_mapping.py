"""The ACP mapping as pure data: prompts to segments, events and history to updates."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import schema

from cli.acp import mapping
from orchestrator.core.history import (
    AssistantMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.segments import FileRefSegment, PasteSegment, TextSegment

WS = Path("/work/ws")


def text(value: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=value)


def test_files_become_file_refs_and_text_stays_text() -> None:
    blocks = [
        text("compare "),
        schema.ResourceContentBlock(type="resource_link", name="a", uri="file:///work/ws/src/a.py"),
        schema.EmbeddedResourceContentBlock(
            type="resource",
            resource=schema.TextResourceContents(uri="file:///etc/hosts", text="127.0.0.1"),
        ),
        schema.EmbeddedResourceContentBlock(
            type="resource",
            resource=schema.TextResourceContents(uri="zed://selection/1", text="picked text"),
        ),
    ]
    assert mapping.prompt_segments(blocks, WS) == [
        TextSegment(text="compare "),
        FileRefSegment(path="src/a.py"),
        # Outside the workspace: the scoped file system decides, with its usual error.
        FileRefSegment(path="/etc/hosts"),
        PasteSegment(id="resource-4", text="picked text"),
    ]


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            schema.ImageContentBlock(type="image", data="iVBO", mime_type="image/png"),
            "prompt block 1: image blocks are not supported",
        ),
        (
            schema.ResourceContentBlock(type="resource_link", name="x", uri="https://x.test/a"),
            "prompt block 1: only file:// links can be attached, not https://x.test/a",
        ),
        (
            schema.EmbeddedResourceContentBlock(
                type="resource",
                resource=schema.BlobResourceContents(uri="zed://blob", blob="AAAA"),
            ),
            "prompt block 1: binary resources are not supported (zed://blob)",
        ),
        (text("   "), "the prompt is empty"),
    ],
)
def test_blocks_the_pod_cannot_take_are_refused_by_number(block: object, message: str) -> None:
    with pytest.raises(mapping.PromptRejected) as refused:
        mapping.prompt_segments([block], WS)
    assert str(refused.value).startswith(message)


def test_slash_commands_and_stop_reasons() -> None:
    assert mapping.slash_command([text("/compact the failing test ")]) == (
        "compact",
        "the failing test",
    )
    assert mapping.slash_command([text("/cancel")]) == ("cancel", "")
    assert mapping.slash_command([text("/etc/hosts is odd")]) is None
    assert mapping.slash_command([text("/cancel"), text("more")]) is None
    assert [mapping.stop_reason(r) for r in ("finished", "paused", "cancelled", "errored")] == [
        "end_turn",
        "cancelled",
        "cancelled",
        None,
    ]
    assert mapping.stop_reason("limit_reached") == "max_turn_requests"


@pytest.mark.parametrize(
    ("outcome", "answer"),
    [
        (
            schema.AllowedOutcome(outcome="selected", option_id="once"),
            ("approve", {"scope": "once"}),
        ),
        (
            schema.AllowedOutcome(outcome="selected", option_id="session"),
            ("approve", {"scope": "session"}),
        ),
        (
            schema.AllowedOutcome(outcome="selected", option_id="deny"),
            ("deny", {"message": "denied in the editor"}),
        ),
        (
            schema.DeniedOutcome(outcome="cancelled"),
            (
                "deny",
                {
                    "message": "the editor withdrew the question (the prompt was cancelled)",
                    "asked": False,
                },
            ),
        ),
    ],
)
def test_an_editors_answer_is_an_approve_or_a_deny(outcome: object, answer: object) -> None:
    response = schema.RequestPermissionResponse(outcome=outcome)  # type: ignore[arg-type]
    assert mapping.permission_answer(response) == answer
    ids = {o.option_id for o in mapping.permission_options()}
    assert ids == {"once", "session", "deny"}


def test_edits_carry_a_diff_of_the_whole_file() -> None:
    write = mapping.edit_diff("write_file", {"path": "a.txt", "content": "new"}, WS, "old")
    assert write is not None and (write.path, write.old_text, write.new_text) == (
        "/work/ws/a.txt",
        "old",
        "new",
    )
    args = {"path": "a.txt", "old_string": "b", "new_string": "B"}
    edit = mapping.edit_diff("edit_file", args, WS, "abc")
    assert edit is not None and (edit.old_text, edit.new_text) == ("abc", "aBc")
    assert mapping.edit_diff("edit_file", {**args, "old_string": "zz"}, WS, "abc") is None


def test_history_replays_as_the_updates_seen_live() -> None:
    items = [
        UserMessage(text="look", seq=1),
        AssistantMessage(
            blocks=[
                TextBlock(text="Reading."),
                ToolUseBlock(id="t1", name="read_file", input={"path": "a.py", "offset": 3}),
            ],
            seq=2,
        ),
        ToolResult(call_id="t1", summary="read_file: a.py — 3 lines", content="1\tx", seq=3),
    ]
    updates = mapping.history_updates(items, WS)
    assert [u.session_update for u in updates] == [
        "user_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
    ]
    call, result = updates[2], updates[3]
    assert (call.kind, call.title, call.locations[0].path, call.locations[0].line) == (
        "read",
        "read_file: a.py",
        "/work/ws/a.py",
        3,
    )
    assert result.status == "completed"
    assert result.content[0].content.text == "read_file: a.py — 3 lines\n1\tx"


def test_deltas_that_arrived_together_are_one_chunk() -> None:
    from orchestrator.serving.client import PodEvent

    events = [
        PodEvent("text_delta", {"text": "Hel"}),
        PodEvent("text_delta", {"text": "lo"}),
        PodEvent("thinking_delta", {"text": "hm"}),
        PodEvent("text_delta", {"text": "!"}),
        PodEvent("tool_call_done", {"id": "t", "name": "bash", "arguments": {}}),
        PodEvent("text_delta", {"text": "a"}),
        PodEvent("text_delta", {"text": "b"}),
    ]
    joined = mapping.coalesce_deltas(events)
    assert [(e.event, e.data.get("text")) for e in joined] == [
        ("text_delta", "Hello"),
        ("thinking_delta", "hm"),
        ("text_delta", "!"),
        ("tool_call_done", None),
        ("text_delta", "ab"),
    ]


def test_an_editors_mcp_servers_become_config_entries() -> None:
    servers = [
        schema.McpServerStdio(
            name="git",
            command="uvx",
            args=["mcp-server-git"],
            env=[schema.EnvVariable(name="GIT_DIR", value="/r")],
        ),
        schema.HttpMcpServer(
            type="http",
            name="docs",
            url="https://mcp.example/docs",
            headers=[schema.HttpHeader(name="Authorization", value="Bearer t")],
        ),
    ]
    assert mapping.mcp_servers_config(servers) == {
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_DIR": "/r"}},
        "docs": {"url": "https://mcp.example/docs", "headers": {"Authorization": "Bearer t"}},
    }


FORM_REQUEST = {
    "id": "input_1",
    "server": "a",
    "message": "Your token, please",
    "mode": "form",
    "schema": {
        "type": "object",
        "properties": {
            "token": {"type": "string", "description": "A secret"},
            "remember": {"type": "boolean", "default": False},
            "plan": {"type": "string", "enum": ["free", "pro"]},
        },
        "required": ["token"],
    },
    "url": None,
    "tool": "mcp__a__ask_token",
    "pod": None,
}


def test_a_form_request_is_a_session_scoped_form_with_its_schema() -> None:
    mode = mapping.elicitation_mode(FORM_REQUEST, "s1", "call_1")
    assert isinstance(mode, schema.ElicitationFormSessionMode)
    assert (mode.session_id, mode.tool_call_id) == ("s1", "call_1")
    wire = mode.requested_schema.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert wire["required"] == ["token"]
    assert wire["properties"]["remember"] == {"type": "boolean", "default": False}
    assert wire["properties"]["plan"]["enum"] == ["free", "pro"]
    assert mapping.elicitation_message(FORM_REQUEST) == "Your token, please (MCP server a)"
    child = {**FORM_REQUEST, "pod": "helper"}
    assert mapping.elicitation_message(child).endswith("(MCP server a, in child pod helper)")


def test_a_url_request_names_the_pods_id_and_a_bad_one_is_refused() -> None:
    url = {**FORM_REQUEST, "mode": "url", "schema": None, "url": "https://example.com/login"}
    mode = mapping.elicitation_mode(url, "s1", None)
    assert isinstance(mode, schema.ElicitationUrlSessionMode)
    assert (mode.elicitation_id, str(mode.url)) == ("input_1", "https://example.com/login")
    with pytest.raises(ValueError):
        mapping.elicitation_mode({**url, "url": "not a url"}, "s1", None)


def test_the_editors_answers_are_our_actions() -> None:
    accept = schema.AcceptElicitationResponse(action="accept", content={"token": "x"})
    assert mapping.elicitation_answer(accept) == ("accept", {"token": "x"})
    decline = schema.DeclineElicitationResponse(action="decline")
    assert mapping.elicitation_answer(decline) == ("decline", None)
    cancel = schema.CancelElicitationResponse(action="cancel")
    assert mapping.elicitation_answer(cancel) == ("cancel", None)
    # An action newer than this SDK is not an answer the pod could take: no.
    other = schema.OtherElicitationResponse(action="_snooze")
    assert mapping.elicitation_answer(other) == ("decline", None)


def test_a_request_to_keep_held_paths_shows_them_and_their_diff() -> None:
    data = {
        "id": "c1",
        "tool": "bash",
        "held": [".git", "sub/.git"],
        "diff": "+\tfsmonitor = touch /x\n",
    }
    content = mapping.held_content(data)
    assert content is not None
    text = content.content.text
    assert ".git, sub/.git" in text
    assert "fsmonitor = touch /x" in text
    assert mapping.held_content({"id": "c2", "tool": "bash", "diff": "x"}) is None
