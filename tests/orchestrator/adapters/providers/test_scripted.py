"""The scripted provider: scripts, errors, the wire check, and the honest offline demo."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.providers.base import (
    ProviderConfigError,
    ProviderError,
    ProviderRejectedError,
    ProviderRequest,
    ProviderStreamError,
    ResponseComplete,
    TextDelta,
    ToolCallStart,
)
from orchestrator.adapters.providers.scripted import (
    LONG_COMMAND,
    PAUSE_HINT,
    SHORT_COMMAND,
    ScriptedProvider,
    ScriptedReply,
    demo_reply,
)
from orchestrator.core.history import AssistantMessage, TextBlock, ToolUseBlock
from orchestrator.core.wire import assistant_blocks


def _request(*content: dict[str, Any], tools: list[str] = ()) -> ProviderRequest:  # type: ignore[assignment]
    return ProviderRequest(
        model="m",
        system="",
        messages=[{"role": "user", "content": list(content)}],
        tools=[{"name": n, "description": "", "input_schema": {}} for n in tools],
    )


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


async def _drain(provider: ScriptedProvider, request: ProviderRequest) -> list[Any]:
    return [event async for event in provider.stream(request)]


async def test_reply_streams_in_chunks_then_completes() -> None:
    provider = ScriptedProvider(replies=[ScriptedReply(text="abcdef", chunk_size=4)])
    events = await _drain(provider, _request(_text("hi")))
    assert events[:2] == [TextDelta("abcd"), TextDelta("ef")]
    done = events[-1]
    assert isinstance(done, ResponseComplete)
    assert done.blocks == [TextBlock(text="abcdef")]
    assert done.stop_reason == "end_turn"


async def test_tool_calls_get_unique_ids_across_providers() -> None:
    reply = ScriptedReply(tool_calls=[{"name": "glob", "input": {"pattern": "*"}}])  # type: ignore[list-item]
    first = await _drain(ScriptedProvider(replies=[reply]), _request(_text("a")))
    second = await _drain(ScriptedProvider(replies=[reply]), _request(_text("a")))
    ids = [e.id for e in first + second if isinstance(e, ToolCallStart)]
    assert len(ids) == 2 and ids[0] != ids[1]
    assert isinstance(first[-1], ResponseComplete) and first[-1].stop_reason == "tool_use"
    assert isinstance(first[-1].blocks[0], ToolUseBlock)


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("stream", ProviderStreamError),
        ("rejected", ProviderRejectedError),
        ("overloaded", ProviderError),
    ],
)
async def test_scripted_errors(kind: str, error: type[Exception]) -> None:
    reply = ScriptedReply(
        text="partial text", chunk_size=4, error="boom", error_kind=kind, error_after_chunks=1
    )
    provider = ScriptedProvider(replies=[reply])
    seen: list[Any] = []
    with pytest.raises(error, match="boom"):
        async for event in provider.stream(_request(_text("go"))):
            seen.append(event)
    assert seen == [TextDelta("part")]


async def test_wire_invalid_requests_are_rejected_like_the_api() -> None:
    bad = ProviderRequest(model="m", system="", messages=[{"role": "assistant", "content": "x"}])
    with pytest.raises(ProviderRejectedError, match="first_user"):
        await _drain(ScriptedProvider(), bad)


def test_script_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps({"replies": [{"text": "one"}, {"text": "two", "chunk_delay_s": 0.1}]})
    )
    provider = ScriptedProvider.from_file(path)
    assert [r.text for r in provider.replies] == ["one", "two"]


def test_a_bad_script_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"replies": [{"text": "a"}, {"txt": "typo"}]}))
    with pytest.raises(ProviderConfigError, match=r"s.json is not valid: replies.1.txt: Extra"):
        ScriptedProvider.from_file(path)
    path.write_text(json.dumps({"replies": [{"error": "x", "error_kind": "overload"}]}))
    with pytest.raises(ProviderConfigError, match=r"replies\.0\.error_kind"):
        ScriptedProvider.from_file(path)
    with pytest.raises(ProviderConfigError, match=r"cannot read the script .*No such file"):
        ScriptedProvider.from_file(tmp_path / "missing.json")


async def test_the_request_log_counts_what_each_request_carried_back(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    thought = {"thinking": "plan", "redacted_thinking": ["opaque"], "text": "ok"}
    path.write_text(json.dumps({"replies": [thought, thought], "request_log": "requests.jsonl"}))
    provider = ScriptedProvider.from_file(path)
    assert provider.request_log == tmp_path / "requests.jsonl"
    on: Any = {"type": "adaptive"}
    first = await _drain(provider, ProviderRequest(model="m", system="", messages=[
        {"role": "user", "content": "hi"}], thinking=on))  # fmt: skip
    done = first[-1]
    assert isinstance(done, ResponseComplete)
    reply = assistant_blocks(AssistantMessage(blocks=done.blocks))
    assert [b["type"] for b in reply] == ["thinking", "redacted_thinking", "text"]
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": reply},
        {"role": "user", "content": "again"},
    ]
    await _drain(provider, ProviderRequest(model="m", system="", messages=history, thinking=on))
    changed = [{**reply[0], "thinking": "edited"}, *reply[1:]]
    with pytest.raises(ProviderRejectedError, match="cannot be modified"):
        await _drain(provider, ProviderRequest(model="m", system="", messages=[
            history[0], {"role": "assistant", "content": changed}, history[2]]))  # fmt: skip
    lines = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert [(r["thinking"], r["thinking_sent_back"], r["refused"] is None) for r in lines] == [
        (True, 0, True),
        (True, 2, True),
        (False, 2, False),
    ]
    assert "cannot be modified" in lines[2]["refused"]


def _stream_seconds(reply: ScriptedReply) -> float:
    """How long a reply's text takes to stream: one delay per chunk."""
    chunks = -(-len(reply.text) // reply.chunk_size)
    return chunks * reply.chunk_delay_s


def test_demo_is_honest_and_echoes() -> None:
    reply = demo_reply(_request(_text("hello there")))
    assert "not a language model" in reply.text
    assert "You said: hello there" in reply.text


def test_demo_streams_slowly_enough_to_interrupt() -> None:
    reply = demo_reply(_request(_text("hello there")))
    # Seconds a person has to press Ctrl-C while the greeting streams (it once took 0.5 s).
    assert 2.0 <= _stream_seconds(reply) <= 6.0
    slow = demo_reply(_request(_text("answer slowly")))
    assert _stream_seconds(slow) >= 3 * _stream_seconds(reply)
    menu = reply.text[reply.text.index("Things to try") :]
    for phrase in ("@README.md", "list the files", "run a command", "run a long command"):
        assert phrase in menu, phrase
    assert "--allow-bash" in menu and "answer slowly" in menu and "Ctrl-C" in menu
    # The default permission mode offers bash and asks: the menu must not say it needs a flag.
    assert "need bash" not in menu and "each asks before it runs" in menu


@pytest.mark.parametrize(
    ("pace", "factor"),
    [("0", 0.0), ("0.5", 0.5), ("nan", 1.0), ("-1", 1.0), ("1e9", 1.0), ("x", 1.0)],
)
def test_pod_demo_pace_scales_the_demos_waits_and_ignores_what_is_not_a_pace(
    monkeypatch: pytest.MonkeyPatch, pace: str, factor: float
) -> None:
    usual = demo_reply(_request(_text("hello there")))
    usual_slow = demo_reply(_request(_text("answer slowly")))
    monkeypatch.setenv("POD_DEMO_PACE", pace)
    reply = demo_reply(_request(_text("hello there")))
    slow = demo_reply(_request(_text("answer slowly")))
    assert reply.text == usual.text and reply.chunk_size == usual.chunk_size
    assert reply.chunk_delay_s == pytest.approx(usual.chunk_delay_s * factor)
    assert slow.chunk_delay_s == pytest.approx(usual_slow.chunk_delay_s * factor)


def _blocks_after_lists(text: str) -> list[str]:
    """The text of each list's last item, as Markdown (markdown-it, which Textual renders
    with) reads it."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    last_items: list[str] = []
    item: list[str] = []
    for token in tokens:
        if token.type == "list_item_open":
            item = []
        elif token.type == "inline":
            item.append(token.content)
        elif token.type == "bullet_list_close":
            last_items.append(" ".join(item))
    return last_items


def test_demo_lists_end_before_the_next_paragraph() -> None:
    """The menu's last item swallowed the pause hint below it (no blank line between), and
    the tool-results list its closing sentence."""
    menu = demo_reply(_request(_text("hello there"))).text
    [last] = _blocks_after_lists(menu)
    assert last.startswith('"delegate" starts two child pods') and "Pause" not in last
    results = demo_reply(
        _request({"type": "tool_result", "tool_use_id": "t", "content": "a\nb"}, tools=["glob"])
    ).text
    [last] = _blocks_after_lists(results)
    assert last == "a" and "tool loop" in results


@pytest.mark.parametrize(
    "prompt", ["hello there", "run a long command", "delegate some work", "answer slowly"]
)
def test_demo_says_pause_and_names_the_key_per_client(prompt: str) -> None:
    """Toad's stop key is Esc Esc: a bare "press Ctrl-C" was wrong there. The demo cannot
    know its client, so it says what to do (pause) and which key does it where."""
    reply = demo_reply(_request(_text(prompt), tools=["bash", "glob", "task"]))
    text = reply.text
    assert "Press Ctrl-C" not in text and "press Ctrl-C" not in text
    assert "Ctrl-C pauses" not in text
    for at in (m.start() for m in re.finditer("Ctrl-C", text)):
        assert text[at : at + len("Ctrl-C in pod chat")] == "Ctrl-C in pod chat", text
    assert "pause" in text.lower()
    if prompt == "hello there":
        assert PAUSE_HINT in text and "Esc Esc in Toad" in text


@pytest.mark.parametrize(
    ("prompt", "command"),
    [
        ("run a command", SHORT_COMMAND),
        ("please Run the command now", SHORT_COMMAND),
        ("run a long command", LONG_COMMAND),
        ("now a LONG COMMAND please", LONG_COMMAND),
    ],
)
def test_demo_runs_a_short_or_long_command_when_bash_is_allowed(prompt: str, command: str) -> None:
    reply = demo_reply(_request(_text(prompt), tools=["bash", "glob"]))
    assert [(c.name, c.input) for c in reply.tool_calls] == [("bash", {"command": command})]


def test_demo_says_how_to_allow_bash_when_it_is_off() -> None:
    reply = demo_reply(_request(_text("run a long command"), tools=["glob"]))
    assert reply.tool_calls == []
    assert "`pod chat --allow-bash`" in reply.text and "pod shutdown" in reply.text


def test_demo_describes_attached_files() -> None:
    reply = demo_reply(_request(_text("see @a.py"), _text("[File: a.py]\nimport os\nprint(1)\n")))
    assert "- File: a.py: 2 lines, starting `import os`" in reply.text


def test_demo_uses_glob_when_asked_to_list_files_and_reports_results() -> None:
    ask = demo_reply(_request(_text("please list the files"), tools=["glob"]))
    assert [c.name for c in ask.tool_calls] == ["glob"]
    after = demo_reply(
        _request(
            {"type": "tool_result", "tool_use_id": "t", "content": "glob: * — 2 matches\na\nb"}
        )
    )
    assert after.text.splitlines()[:2] == [
        "The tool returned 1 result(s):",
        "- glob: * — 2 matches",
    ]


def test_demo_answers_the_new_prompt_after_an_interrupted_turn() -> None:
    interrupted = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "[Interrupted by user]",
        "is_error": True,
    }
    # Paused, then a new message: the old turn's result and the new text share one message.
    reply = demo_reply(_request(interrupted, _text("list the files"), tools=["glob"]))
    assert [c.name for c in reply.tool_calls] == ["glob"]
    alone = demo_reply(_request(interrupted, tools=["glob"]))
    assert alone.text.startswith("The tool returned 1 result(s):") and not alone.tool_calls


def test_demo_delegates_to_two_child_pods_when_task_is_offered() -> None:
    ask = demo_reply(_request(_text("delegate some work"), tools=["glob", "task"]))
    assert [c.name for c in ask.tool_calls] == ["task", "task"]
    assert {c.input["name"] for c in ask.tool_calls} == {"files", "hello"}
    # A child pod (no task offered at its depth) answers the same words with the menu.
    plain = demo_reply(_request(_text("delegate some work"), tools=["glob"]))
    assert plain.tool_calls == []
