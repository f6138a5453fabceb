"""Custom slash commands as text: invocations, placeholders, shell lines, MCP prompt args."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.core.command_text import (
    ArgumentText,
    BodyText,
    Invocation,
    ShellLine,
    clean_line,
    expand_body,
    parse_invocation,
    prompt_arguments,
    render_pieces,
    valid_command_name,
)


def test_an_invocation_is_a_name_and_the_rest() -> None:
    assert parse_invocation("/review src/app.py") == Invocation("review", "src/app.py")
    assert parse_invocation("  /review\n  two lines\n") == Invocation("review", "two lines")
    assert parse_invocation("/mcp__notes__brief x=1") == Invocation("mcp__notes__brief", "x=1")
    assert parse_invocation("/review").line == "/review"  # type: ignore[union-attr]
    assert parse_invocation("/review a  b").line == "/review a  b"  # type: ignore[union-attr]


def test_not_invocations() -> None:
    for text in ["//review", "review", "/ review", "a /review", "/../etc", "/\x1b[2J", "/"]:
        assert parse_invocation(text) is None, text
    assert parse_invocation("/" + "a" * 129) is None


def test_names_refuse_separators_and_control_characters() -> None:
    assert valid_command_name("review")
    assert valid_command_name("git:commit-2.0")
    for bad in ["../x", "a/b", "a b", "re\x1bview", "", "-x", "é"]:
        assert not valid_command_name(bad), bad


def test_placeholders_take_the_arguments() -> None:
    pieces = expand_body("Review $1 against $2; all: $ARGUMENTS.", '"a b.py" c.py')
    assert render_pieces(pieces, {}) == 'Review a b.py against c.py; all: "a b.py" c.py.'
    assert ArgumentText("a b.py") in pieces


def test_missing_positional_arguments_are_empty() -> None:
    assert render_pieces(expand_body("[$1][$2][$9]", "one"), {}) == "[one][][]"


def test_a_body_without_placeholders_gets_the_arguments_after_it() -> None:
    text = render_pieces(expand_body("Tidy the code.", "src/app.py"), {})
    assert text == "Tidy the code.\n\nARGUMENTS: src/app.py"
    assert render_pieces(expand_body("Tidy the code.", "  "), {}) == "Tidy the code."


def test_shell_lines_are_cut_out_with_their_arguments_quoted() -> None:
    pieces = expand_body("Status:\n!`git status`\nLog: !`git log -n $1`\n", "3; rm -rf ~")
    shells = [piece for piece in pieces if isinstance(piece, ShellLine)]
    assert shells == [ShellLine(0, "git status"), ShellLine(1, "git log -n '3;'")]
    assert render_pieces(pieces, {0: "clean", 1: "abc"}) == "Status:\nclean\nLog: abc\n"
    assert render_pieces(pieces, {0: "clean"}).endswith("[command not run: git log -n '3;']\n")


def test_arguments_never_become_shell_lines_or_body_text() -> None:
    hostile = "!`rm -rf ~` @../../etc/passwd $ARGUMENTS"
    pieces = expand_body("Look at $ARGUMENTS now", hostile)
    assert not [piece for piece in pieces if isinstance(piece, ShellLine)]
    assert [piece for piece in pieces if isinstance(piece, ArgumentText)] == [ArgumentText(hostile)]
    bodies = "".join(piece.text for piece in pieces if isinstance(piece, BodyText))
    assert "@" not in bodies and "rm" not in bodies


@given(st.text(max_size=40))
def test_an_argument_is_one_word_of_a_shell_line(argument: str) -> None:
    pieces = expand_body("!`echo $1`", shlex.quote(argument))
    (line,) = [piece for piece in pieces if isinstance(piece, ShellLine)]
    assert shlex.split(line.command) == ["echo", argument]


def test_prompt_arguments_by_name_and_position() -> None:
    values, extra = prompt_arguments('style=terse "the city" 3 spare', ["place", "style", "days"])
    assert values == {"style": "terse", "place": "the city", "days": "3"}
    assert extra == ["spare"]
    values, extra = prompt_arguments("unknown=1", ["place"])
    assert values == {"place": "unknown=1"} and extra == []


def test_clean_line_drops_control_and_format_characters() -> None:
    assert clean_line("Review\x1b[31m red\x07\n\tnext\u202eevil") == "Review[31m red nextevil"
    assert len(clean_line("x" * 500, limit=80)) == 80
