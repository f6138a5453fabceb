"""Custom slash commands as text: the invocation a person typed, and a command file's body
expanded with its arguments (pure; the runtime reads the files, runs the shell lines and
resolves the refs).

A body is cut into pieces before any argument goes in: the body's own words
(:class:`BodyText`, where ``@path`` refs are looked for), the arguments substituted for
``$ARGUMENTS`` and ``$1`` … ``$9`` (:class:`ArgumentText`: data, never scanned for refs or
commands), and ``!`command` `` spans (:class:`ShellLine`, run as bash commands under the
pod's rules, with arguments in them shell-quoted). So arguments a person (or an editor, or a
pasted text) passes can fill a command's blanks but never add a command or a file ref of
their own.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "MAX_NAME_CHARS",
    "ArgumentText",
    "BodyText",
    "Invocation",
    "Piece",
    "ShellLine",
    "clean_line",
    "expand_body",
    "parse_invocation",
    "prompt_arguments",
    "render_pieces",
    "split_arguments",
    "valid_command_name",
]

MAX_NAME_CHARS = 128
"""The longest command name (a file stem or ``mcp__<server>__<prompt>``) offered."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
_INVOCATION = re.compile(r"/([A-Za-z0-9][A-Za-z0-9_.:-]*)(?:[ \t]+|\n|$)")
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")
# One line, between single backticks, right after "!": Claude Code's spelling.
_SHELL = re.compile(r"!`([^`\n]+)`")
_ARGUMENT_PAIR = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)=(.*)", re.S)


@dataclass(frozen=True, slots=True)
class Invocation:
    """``/name arguments`` as typed."""

    name: str
    arguments: str

    @property
    def line(self) -> str:
        """The command line as the person typed it (what a rewind offers back)."""
        return f"/{self.name} {self.arguments}" if self.arguments else f"/{self.name}"


@dataclass(frozen=True, slots=True)
class BodyText:
    """Words of the command file itself (``@path`` refs in them are the file's refs)."""

    text: str


@dataclass(frozen=True, slots=True)
class ArgumentText:
    """Arguments put in for a placeholder: data, sent as written."""

    text: str


@dataclass(frozen=True, slots=True)
class ShellLine:
    """A ``!`command` `` span: run as a bash command when the turn starts, its output put in
    its place. ``index`` numbers the command's shell lines from 0."""

    index: int
    command: str


Piece = BodyText | ArgumentText | ShellLine


def valid_command_name(name: str) -> bool:
    """Whether ``name`` can be a command's name: letters, digits and ``_ . : -``, starting
    with a letter or digit, at most :data:`MAX_NAME_CHARS` (no ``/``, spaces or control
    characters, which a hostile file name could carry into a menu)."""
    return len(name) <= MAX_NAME_CHARS and _NAME.fullmatch(name) is not None


def parse_invocation(text: str) -> Invocation | None:
    """``/review src/app.py`` → ``Invocation("review", "src/app.py")``; None when the text
    does not start with ``/<name>`` (leading blanks allowed; ``//x`` is not one)."""
    stripped = text.lstrip()
    match = _INVOCATION.match(stripped)
    if match is None or not valid_command_name(match.group(1)):
        return None
    return Invocation(match.group(1), stripped[match.end() :].strip())


def split_arguments(arguments: str) -> list[str]:
    """The positional arguments, split as a shell would (``"a b" c`` is two); text a shell
    could not split (an open quote) is split at blanks instead."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def expand_body(body: str, arguments: str) -> list[Piece]:
    """The body cut into pieces with the arguments put in.

    ``$ARGUMENTS`` is the whole argument text; ``$1`` … ``$9`` the positional ones (empty
    when missing). Inside a ``!`…` `` command they go in shell-quoted, so an argument is one
    word of the command whatever it holds. A body without any placeholder gets the arguments
    after it, on a line of their own (``ARGUMENTS: …``), so they are never silently lost.
    """
    positional = split_arguments(arguments)
    pieces: list[Piece] = []
    placeholders = False
    at = 0
    for shell_index, match in enumerate(_SHELL.finditer(body)):
        placeholders |= _fill_text(body[at : match.start()], arguments, positional, pieces)
        command, found = _fill_shell(match.group(1), arguments, positional)
        placeholders |= found
        pieces.append(ShellLine(shell_index, command))
        at = match.end()
    placeholders |= _fill_text(body[at:], arguments, positional, pieces)
    if not placeholders and arguments.strip():
        pieces.append(BodyText("\n\nARGUMENTS: "))
        pieces.append(ArgumentText(arguments))
    return _merged(pieces)


def _value(key: str, arguments: str, positional: list[str]) -> str:
    if key == "ARGUMENTS":
        return arguments
    number = int(key)
    return positional[number - 1] if number <= len(positional) else ""


def _fill_text(text: str, arguments: str, positional: list[str], pieces: list[Piece]) -> bool:
    at, found = 0, False
    for match in _PLACEHOLDER.finditer(text):
        found = True
        if match.start() > at:
            pieces.append(BodyText(text[at : match.start()]))
        value = _value(match.group(1), arguments, positional)
        if value:
            pieces.append(ArgumentText(value))
        at = match.end()
    if at < len(text):
        pieces.append(BodyText(text[at:]))
    return found


def _fill_shell(command: str, arguments: str, positional: list[str]) -> tuple[str, bool]:
    found = False

    def quoted(match: re.Match[str]) -> str:
        nonlocal found
        found = True
        return shlex.quote(_value(match.group(1), arguments, positional))

    return _PLACEHOLDER.sub(quoted, command), found


def _merged(pieces: list[Piece]) -> list[Piece]:
    """Neighbouring pieces of one kind of text joined (fewer, longer segments)."""
    merged: list[Piece] = []
    for piece in pieces:
        last = merged[-1] if merged else None
        if isinstance(piece, BodyText) and isinstance(last, BodyText):
            merged[-1] = BodyText(last.text + piece.text)
        elif isinstance(piece, ArgumentText) and isinstance(last, ArgumentText):
            merged[-1] = ArgumentText(last.text + piece.text)
        else:
            merged.append(piece)
    return merged


def render_pieces(pieces: list[Piece], outputs: Mapping[int, str]) -> str:
    """The expanded prompt: text as it is, each shell line replaced by its output (by
    ``index``; a line missing from ``outputs`` reads as not run)."""
    parts: list[str] = []
    for piece in pieces:
        if isinstance(piece, ShellLine):
            parts.append(outputs.get(piece.index, f"[command not run: {piece.command}]"))
        else:
            parts.append(piece.text)
    return "".join(parts)


def prompt_arguments(arguments: str, names: list[str]) -> tuple[dict[str, str], list[str]]:
    """An MCP prompt's arguments from what was typed: ``name=value`` words by name, the rest
    by position in ``names`` order (skipping names given by name). Returns the mapping and
    the words that found no argument (the caller says so rather than guess)."""
    values: dict[str, str] = {}
    loose: list[str] = []
    for word in split_arguments(arguments):
        pair = _ARGUMENT_PAIR.fullmatch(word)
        if pair is not None and pair.group(1) in names:
            values[pair.group(1)] = pair.group(2)
        else:
            loose.append(word)
    free = [name for name in names if name not in values]
    extra: list[str] = []
    for index, word in enumerate(loose):
        if index < len(free):
            values[free[index]] = word
        else:
            extra.append(word)
    return values, extra


def clean_line(text: str, limit: int = 200) -> str:
    """Text from a file or a server made safe for one line of a menu or a terminal: control
    and format characters (escape sequences, bidirectional overrides) dropped, blanks joined,
    capped at ``limit`` characters."""
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in text
        if ch.isspace() or unicodedata.category(ch)[0] != "C"
    )
    line = " ".join(kept.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
