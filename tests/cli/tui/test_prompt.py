"""Input state without an app: chips, completion queries, a run's input, slash command lines
and recalling earlier prompts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.tui.input import (
    SLASH_COMMANDS,
    InputChips,
    PromptHistory,
    completion_query,
    parse_slash,
    paste_label,
    run_params,
    should_chip_paste,
    unescape_slash,
)
from orchestrator.core.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    PasteSegment,
    Segment,
    TextSegment,
)


@pytest.mark.parametrize("name", [c.name for c in SLASH_COMMANDS])
def test_every_command_parses(name: str) -> None:
    line = parse_slash(f"  /{name}  ")
    assert line is not None and line.command is not None and line.command.name == name


def test_every_command_is_in_the_docs_table() -> None:
    """/children and /attach were missing from docs/tui-keybindings.md; /jobs did not exist."""
    doc = (Path(__file__).parents[3] / "docs" / "tui-keybindings.md").read_text()
    table = doc.split("## Slash commands", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `/([a-z-]+)", table, re.M))
    assert documented == {c.name for c in SLASH_COMMANDS}
    assert "jobs" in documented


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


# -- chips, completion and the run's input ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "chip"),
    [
        ("one line", False),
        ("x" * 200, False),
        ("x" * 201, True),
        ("two\nlines", True),
        ("one line with newline\n", False),
    ],
)
def test_should_chip_paste(text: str, chip: bool) -> None:
    assert should_chip_paste(text) is chip


def test_paste_label_counts_chars_and_lines() -> None:
    assert paste_label(3, "a\nbc\n") == "Clipboard #3 | 5 chars, 2 lines"
    assert paste_label(1, "") == "Clipboard #1 | 0 chars, 1 lines"


def test_chips_map_back_to_segments() -> None:
    chips = InputChips()
    paste = chips.paste("a\nb")
    ref = chips.file_ref("src/app.py")
    know = chips.knowledge_ref("style")
    text = f"look {ref} and {paste}{know} ⟦not a chip⟧"
    assert chips.segments(text) == [
        TextSegment(text="look "),
        FileRefSegment(path="src/app.py"),
        TextSegment(text=" and "),
        PasteSegment(id=1, text="a\nb"),
        KnowledgeRefSegment(slug="style"),
        TextSegment(text=" ⟦not a chip⟧"),
    ]


def test_paste_numbers_keep_counting_after_clear() -> None:
    chips = InputChips()
    chips.paste("a\nb")
    chips.clear()
    assert chips.paste("c\nd") == "⟦Clipboard #2 | 3 chars, 2 lines⟧"
    assert len(chips.chips) == 1


def test_tokens_at_the_cursor() -> None:
    chips = InputChips()
    ref = chips.file_ref("a.py")
    assert chips.token_before(f"x {ref}") == ref
    assert chips.token_before(f"x {ref} ") is None
    assert chips.token_before("x ⟦@unregistered⟧") is None
    assert chips.token_after(f"{ref} tail") == ref
    assert chips.token_after(f" {ref}") is None


@pytest.mark.parametrize(
    ("line", "query"),
    [
        ("@", ""),
        ("@src/a", "src/a"),
        ("read @src/", "src/"),
        ("mail me@example.com", None),
        ("@src/a.py more", None),
        ("plain", None),
        ("x ⟦@a.py⟧", None),
    ],
)
def test_completion_query(line: str, query: str | None) -> None:
    assert completion_query(line) == query


def test_blank_input_is_the_protocols_rule() -> None:
    # The UI used to call a whitespace-only paste "not blank" and send it; the pod refuses it.
    assert run_params([TextSegment(text="  \n")]) is None
    assert run_params([]) is None
    assert run_params([PasteSegment(id=1, text=" \n\t")]) is None
    assert run_params([TextSegment(text=" a ")]) is not None
    assert run_params([FileRefSegment(path="a")]) is not None
