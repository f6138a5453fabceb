"""Input state without an app: slash command lines and recalling earlier prompts."""

from __future__ import annotations

import pytest

from cli.tui.input import (
    SLASH_COMMANDS,
    InputChips,
    PromptHistory,
    parse_slash,
    unescape_slash,
)
from orchestrator.segments import FileRefSegment, PasteSegment, Segment, TextSegment


@pytest.mark.parametrize("name", [c.name for c in SLASH_COMMANDS])
def test_every_command_parses(name: str) -> None:
    line = parse_slash(f"  /{name}  ")
    assert line is not None and line.command is not None and line.command.name == name


def test_each_command_does_exactly_one_thing() -> None:
    for command in SLASH_COMMANDS:
        assert sum(x is not None for x in (command.key, command.method, command.view)) == 1


@pytest.mark.parametrize(
    ("text", "name", "argument", "known"),
    [
        ("/help", "help", "", True),
        ("/model claude-x", "model", "claude-x", True),
        ("/frobnicate now", "frobnicate", "now", False),
        ("/release-notes", "release-notes", "", False),
    ],
)
def test_command_lines(text: str, name: str, argument: str, known: bool) -> None:
    line = parse_slash(text)
    assert line is not None
    assert (line.name, line.argument, line.command is not None) == (name, argument, known)


@pytest.mark.parametrize(
    "text", ["/etc/hosts looks wrong", "//help", "why /help?", "/", "/ help", "/1x", ""]
)
def test_messages_are_not_commands(text: str) -> None:
    assert parse_slash(text) is None


def test_a_double_slash_sends_one() -> None:
    assert unescape_slash("//help me") == "/help me"
    assert unescape_slash("  //x") == "/x"
    assert unescape_slash("/etc/hosts") == "/etc/hosts"


def _prompt(text: str) -> list[Segment]:
    return [TextSegment(text=text)]


def test_up_and_down_walk_the_prompts_and_keep_the_draft() -> None:
    history = PromptHistory()
    for text in ("one", "two", "two", "three"):
        history.add(_prompt(text))
    assert history.prompts == [_prompt("one"), _prompt("two"), _prompt("three")]
    assert history.newer() is None  # not recalling: Down moves the cursor instead
    draft = _prompt("half typed")
    assert history.older(draft) == _prompt("three")
    assert history.older([]) == _prompt("two")
    assert history.older([]) == _prompt("one")
    assert history.older([]) is None  # the oldest stays
    assert history.newer() == _prompt("two")
    assert history.newer() == _prompt("three")
    assert history.newer() == draft
    assert not history.recalling


def test_editing_a_recalled_prompt_starts_a_new_walk() -> None:
    history = PromptHistory()
    history.add(_prompt("one"))
    history.add(_prompt("two"))
    assert history.older(_prompt("draft")) == _prompt("two")
    history.stop()
    assert history.older(_prompt("two, edited")) == _prompt("two")
    assert history.newer() == _prompt("two, edited")


def test_recalled_chips_are_chips_again() -> None:
    chips = InputChips()
    segments: list[Segment] = [
        TextSegment(text="see "),
        FileRefSegment(path="a.py"),
        PasteSegment(id=4, text="x\ny"),
    ]
    text = chips.editor_text(segments)
    assert text == "see ⟦@a.py⟧⟦Clipboard #4 | 3 chars, 2 lines⟧"
    assert chips.segments(text) == segments
