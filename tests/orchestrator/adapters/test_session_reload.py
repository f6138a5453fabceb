"""Reloading a session fast: each item line is parsed once and its text reused, unchanged.

The ``history`` event carries the session file's item format, so a reload hands clients the
lines' own text instead of encoding every item again. These tests hold that text to what
encoding the loaded item would give, byte for byte, for every line this pod writes; and they
check that lines the fast path cannot take are read (or refused) exactly as before.
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.adapters.providers.scripted import (
    ScriptedProvider,
    ScriptedReply,
    ScriptedToolCall,
)
from orchestrator.adapters.session import SessionWriter, encoded_items, load_session
from orchestrator.config.model import PodConfig
from orchestrator.core.history import (
    AssistantMessage,
    AttachedFile,
    Compaction,
    History,
    Item,
    RedactedThinkingBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
    encode_item,
    item_from_json,
    item_to_json,
)
from orchestrator.core.images import ImageData
from orchestrator.core.segments import FileRefSegment, TextSegment
from orchestrator.core.usage import TokenUsage
from orchestrator.serving.pod import build_pod, open_session, open_session_async, prepare_history

ODD_TEXT = 'héllo ✓ 日本語 "quoted" back\\slash\ttab\x1b[31mred\x1b[0m \u2028 😀'
"""Non-ASCII, an emoji outside the BMP, escapes and control characters: what JSON encoders
disagree on."""


def _zoo() -> list[Item]:
    """One item of every kind and shape a session holds."""
    image = ImageData(media_type="image/png", data="iVBORw0KGgo=")
    return [
        UserMessage(
            segments=[TextSegment(text=ODD_TEXT), FileRefSegment(path="src/a.py", start_line=3)],
            text=ODD_TEXT,
        ),
        AssistantMessage(
            blocks=[
                ThinkingBlock(thinking="let me think ✓", signature="sig=="),
                RedactedThinkingBlock(data="opaque"),
                TextBlock(text=ODD_TEXT),
                ToolUseBlock(
                    id="toolu_1",
                    name="bash",
                    input={"command": "grep -n 'é' *.py", "nested": {"list": [1, 2.5, None]}},
                ),
            ],
            stop_reason="tool_use",
            usage=TokenUsage(input_tokens=10, cache_read_input_tokens=3, output_tokens=7),
        ),
        ToolResult(call_id="toolu_1", summary="bash: 2 lines", content=ODD_TEXT, images=[image]),
        SystemMessage(text="[Image: a.png]", origin="file_ref", image=image),
        SystemMessage(text=f"[Notification] {ODD_TEXT}"),
        AssistantMessage(blocks=[TextBlock(text="done")], stop_reason="end_turn", synthetic=True),
        Compaction(
            summary=ODD_TEXT,
            first_seq=1,
            last_seq=6,
            tokens_before=1000,
            tokens_after=100,
            files=[AttachedFile(path="src/a.py", text="[File: src/a.py]\nx = 'ü'\n")],
            trigger="manual",
            focus="the bug",
        ),
    ]


def _write(path: Path, items: list[Item], *, end: bool = True) -> list[Item]:
    writer = SessionWriter(path, pod="p", workspace=path.parent)
    history = History()
    history.new_turn()
    stored = [history.append(item) for item in items]
    for item in stored:
        writer.append_item(item)
    if end:
        writer.turn_end(history.turn, "finished")
    writer.close()
    return stored


def test_each_line_is_reused_exactly_as_encoding_the_loaded_item_gives_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    stored = _write(path, _zoo())
    loaded = load_session(path)
    assert loaded.items == stored
    assert loaded.warnings == []
    # Byte for byte what encoding the loaded item gives: the history event cannot tell a
    # reloaded pod from the one that committed the items.
    assert loaded.item_json == {item.seq: encode_item(item) for item in loaded.items}
    assert encoded_items(loaded.items, loaded) == [encode_item(item) for item in stored]


def test_lines_other_writers_made_read_back_as_the_same_items(tmp_path: Path) -> None:
    """Escaped non-ASCII (``ensure_ascii``), fields left at their defaults, tight separators:
    the text sent is the line's own or a fresh encoding, and either reads as the item."""
    path = tmp_path / "s.jsonl"
    _write(path, [])
    note = SystemMessage(seq=1, turn=1, text=ODD_TEXT)
    answer = AssistantMessage(seq=2, turn=1, blocks=[TextBlock(text="ok")], stop_reason="end_turn")
    bare = {k: v for k, v in item_to_json(note).items() if k != "origin"}
    with path.open("a") as f:
        f.write(json.dumps({"type": "item", "item": bare}) + "\n")  # \\u escapes, no origin
        tight = json.dumps({"type": "item", "item": item_to_json(answer)}, separators=(",", ":"))
        f.write(tight + "\n")
    loaded = load_session(path)
    assert loaded.items == [note, answer]
    texts = encoded_items(loaded.items, loaded)
    assert [item_from_json(text) for text in texts] == [note, answer]
    # The line's own bytes: parsed once, never encoded again.
    assert texts[0] == json.dumps(bare).encode()
    assert texts[1] == encode_item(answer)  # not the fast path's shape: encoded afresh


def test_damaged_item_lines_are_reported_as_the_general_reader_reports_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    (first,) = _write(path, [UserMessage(text="hi")], end=False)
    good = item_to_json(AssistantMessage(seq=2, turn=1, blocks=[TextBlock(text="a")]))
    lines = [
        '{"type": "item", "item": {"kind": "nope", "seq": 9}}',  # a record, not an item
        '{"type": "item", "item": [1, 2]}',  # not even a record
        '{"type": "item", "item": ' + json.dumps(good) + ', "extra": 1}',  # a record after all
        '{"type": "item", "item": ' + json.dumps(item_to_json(first)) + "}",  # a repeat
        '{"type": "item", "item": {"kind": "system_message", "seq": 3, "te',  # torn
    ]
    with path.open("a") as f:
        f.write("\n".join(lines))
    loaded = load_session(path)
    assert [w.split(": ", 1)[1] for w in loaded.warnings] == [
        "unreadable item ignored",
        "bad line ignored",
        "duplicate item 1 ignored",
        "torn last line (the pod stopped mid-write) ignored",
    ]
    assert [item.seq for item in loaded.items] == [1, 2]
    assert encoded_items(loaded.items, loaded) == [encode_item(item) for item in loaded.items]


def test_items_a_repair_changed_or_added_are_encoded_afresh(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    call = ToolUseBlock(id="toolu_lost", name="read_file", input={"path": "a"})
    _write(
        path,
        [
            UserMessage(text="go"),
            AssistantMessage(blocks=[call], stop_reason="tool_use"),  # its result never came
            UserMessage(text="next"),
        ],
    )
    with path.open("a") as f:  # a garbled turn number, lower than the items before it
        late = SystemMessage(seq=4, turn=0, text="late note")
        f.write(json.dumps({"type": "item", "item": item_to_json(late)}) + "\n")
    loaded = load_session(path)
    prepared = prepare_history(loaded)
    assert prepared.notes  # the repair did something
    items = prepared.history.items
    assert len(items) == 5  # a lost result was added after the call
    assert prepared.texts == [encode_item(item) for item in items]
    assert prepared.source is loaded.items


def _config(workspace: Path, session: Path) -> PodConfig:
    return PodConfig(workspace=workspace, name="t", provider="scripted", session=session)


async def test_a_reloaded_pod_answers_history_with_the_same_line(workspace: Path) -> None:
    (workspace / "notes.txt").write_text(ODD_TEXT)
    session = workspace.parent / "reload.jsonl"
    config = _config(workspace, session)
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="read_file", input={"path": "notes.txt"})]),
        ScriptedReply(text=ODD_TEXT),
    ]
    pod = build_pod(config, broadcast=lambda _: None, provider=ScriptedProvider(replies=replies))
    pod.methods.handle("run", _run(ODD_TEXT), None, lambda _: None)
    await pod.controller.wait_idle()
    before = _items_part(pod.methods.history_line())
    pod.controller.transcript.session.close()

    opened = await open_session_async(config, continue_=True)
    path, loaded = opened
    assert path == session and loaded is not None and loaded.prepared is not None
    again = build_pod(
        config, broadcast=lambda _: None, provider=ScriptedProvider(), continue_=True, opened=opened
    )
    assert loaded.prepared is None  # taken by the pod
    assert _items_part(again.methods.history_line()) == before
    synchronous = open_session(config, continue_=False)[1]  # config.session: loads it anyway
    assert synchronous is not None and synchronous.prepared is None
    again.controller.transcript.session.close()


def _items_part(line: bytes) -> bytes:
    """The ``items`` array of a ``history`` line, as bytes (the rest holds start-up alerts)."""
    start = line.index(b'"items": [')
    end = line.index(b'], "greeting"')
    assert json.loads(line)["data"]["items"]
    return line[start:end]


def _run(text: str) -> object:
    from orchestrator.protocol import parse_request

    _, params = parse_request(json.dumps({"method": "run", "params": {"input": text}}))
    return params
