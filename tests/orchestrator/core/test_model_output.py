"""Normalising a model's reply before it is committed: ids, names, invalid Unicode."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.core.history import TextBlock, ThinkingBlock, ToolUseBlock
from orchestrator.core.model_output import INVALID_TOOL_NAME, normalize_reply, scrub_surrogates
from orchestrator.core.validator import TOOL_NAME, well_formed_tool_use

READ = {"path": "README.md"}


def _call(call_id: str, name: str = "read_file", tool_input: object = None) -> ToolUseBlock:
    return ToolUseBlock(id=call_id, name=name, input=READ if tool_input is None else tool_input)  # type: ignore[arg-type]


def test_a_clean_reply_is_returned_unchanged() -> None:
    blocks = [TextBlock(text="héllo 🙂"), _call("toolu_a"), _call("toolu_b", "bash")]
    reply = normalize_reply(blocks, earlier_ids=set())
    assert reply.blocks == blocks
    assert reply.answers == [] and reply.alerts == []


def test_duplicate_ids_in_one_reply_get_fresh_ones_and_every_call_runs() -> None:
    blocks = [_call("toolu_x"), _call("toolu_x", "glob", {"pattern": "*"}), _call("toolu_x")]
    reply = normalize_reply(blocks, earlier_ids=set())
    ids = [b.id for b in reply.blocks if isinstance(b, ToolUseBlock)]
    assert ids[0] == "toolu_x"
    assert len(set(ids)) == 3 and all(well_formed_tool_use(i, "n", {}) for i in ids)
    # Names and inputs are kept: each call is answered by running it.
    assert [b.name for b in reply.blocks if isinstance(b, ToolUseBlock)] == [
        "read_file", "glob", "read_file",
    ]  # fmt: skip
    assert reply.answers == []
    assert len(reply.alerts) == 1 and "toolu_x" in reply.alerts[0]


def test_an_id_already_in_the_history_gets_a_fresh_one() -> None:
    reply = normalize_reply([_call("toolu_old")], earlier_ids={"toolu_old", "toolu_old_2"})
    (call,) = reply.blocks
    assert isinstance(call, ToolUseBlock)
    assert call.id not in {"toolu_old", "toolu_old_2"}
    assert reply.alerts and "toolu_old" in reply.alerts[0]


def test_an_id_the_api_would_refuse_is_replaced() -> None:
    reply = normalize_reply([_call(""), _call("bad id/é")], earlier_ids=set())
    ids = [b.id for b in reply.blocks if isinstance(b, ToolUseBlock)]
    assert all(well_formed_tool_use(i, "n", {}) for i in ids) and len(set(ids)) == 2
    assert reply.alerts


def test_an_over_long_tool_name_is_answered_under_a_name_the_api_accepts() -> None:
    long_name = "x" * 200
    reply = normalize_reply([TextBlock(text="hm"), _call("toolu_l", long_name)], earlier_ids=set())
    call = reply.blocks[1]
    assert isinstance(call, ToolUseBlock)
    assert call.name == INVALID_TOOL_NAME and TOOL_NAME.match(call.name)
    assert call.input == READ
    (answer,) = reply.answers
    assert answer.call_id == "toolu_l" and answer.is_error
    assert "not run" in answer.summary and "x" * 20 in answer.summary
    assert len(answer.summary) < 400  # the name is shown shortened
    assert reply.alerts and "200 characters" in reply.alerts[0]


def test_a_name_with_characters_the_api_refuses_is_answered_too() -> None:
    reply = normalize_reply([_call("toolu_s", "read file")], earlier_ids=set())
    assert reply.blocks[0].name == INVALID_TOOL_NAME  # type: ignore[union-attr]
    assert [a.call_id for a in reply.answers] == ["toolu_s"]


def test_an_input_that_is_not_an_object_is_answered_without_running() -> None:
    reply = normalize_reply([_call("toolu_i", "bash", ["rm", "-rf"])], earlier_ids=set())
    call = reply.blocks[0]
    assert isinstance(call, ToolUseBlock) and call.input == {}
    assert [a.call_id for a in reply.answers] == ["toolu_i"]
    assert reply.alerts


def test_lone_surrogates_become_replacement_characters_everywhere() -> None:
    blocks = [
        ThinkingBlock(thinking="think \ud800", signature="sig"),
        TextBlock(text="bad \udcff here, good \U0001f642"),
        _call("toolu_u", "write_file", {"path": "a\ud83d.txt", "lines": ["ok", "\udfff"], "n": 3}),
    ]
    reply = normalize_reply(blocks, earlier_ids=set())
    text = json.dumps([repr(b) for b in reply.blocks])
    # Every string now encodes as UTF-8: it can be stored and sent.
    for block in reply.blocks:
        json.dumps(repr(block)).encode("utf-8")
    assert isinstance(reply.blocks[1], TextBlock)
    assert reply.blocks[1].text == "bad \ufffd here, good \U0001f642"
    call = reply.blocks[2]
    assert isinstance(call, ToolUseBlock)
    assert call.input == {"path": "a\ufffd.txt", "lines": ["ok", "\ufffd"], "n": 3}
    assert reply.answers == []  # the call still runs, with what the model meant as near as can be
    assert len(reply.alerts) == 1 and "U+FFFD" in reply.alerts[0]
    assert "\\ud800" not in text


def test_a_surrogate_pair_is_joined_not_replaced() -> None:
    assert scrub_surrogates("a\ud83d\ude42b") == ("a\U0001f642b", 0)
    assert scrub_surrogates("\ude42\ud83d") == ("\ufffd\ufffd", 2)
    assert scrub_surrogates("plain") == ("plain", 0)


@given(st.lists(st.text(), max_size=4), st.lists(st.sampled_from(["a", "a", "b", ""]), max_size=4))
def test_normalised_replies_are_always_storable_and_wire_valid(
    texts: list[str], ids: list[str]
) -> None:
    blocks = [TextBlock(text=t) for t in texts] + [_call(i, "n" * (1 + len(i) * 200)) for i in ids]
    reply = normalize_reply(blocks, earlier_ids={"a"})
    seen: set[str] = set()
    for block in reply.blocks:
        if isinstance(block, ToolUseBlock):
            assert well_formed_tool_use(block.id, block.name, block.input)
            assert block.id not in seen and block.id != "a"
            seen.add(block.id)
        else:
            assert isinstance(block, TextBlock)
            block.text.encode("utf-8")
    assert {a.call_id for a in reply.answers} <= seen
    # Idempotent: a normalised reply needs nothing more.
    again = normalize_reply(reply.blocks, earlier_ids={"a"})
    assert again.blocks == reply.blocks and again.alerts == []
