"""The shared library's pure parts: names, frontmatter, and resolving one name across folders.

Skills, custom commands and agent files are markdown files users keep in folders many agents
read (docs/skills.md). Any of them may come from a cloned repository, so everything read from
them is checked here before it is used: a name is a plain word (no path, no control or
invisible characters), frontmatter is YAML read with ``safe_load`` and must be a mapping, and
a field has the type it should. Every refusal is a :class:`LibraryRefused` naming the file and
what is wrong with it, for one alert.

Folders are searched in a fixed order (:data:`ORIGINS`); the first file of a name wins and the
later ones are kept as shadowed by it (:func:`resolve`), so ``pod skills ls`` can show them.
The reading itself is :mod:`orchestrator.adapters.library`'s.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from orchestrator.errors import PodRuntimeError

__all__ = [
    "FRONTMATTER_MAX_CHARS",
    "KINDS",
    "NAME_MAX",
    "ORIGINS",
    "Kind",
    "LibraryRefused",
    "Origin",
    "Resolved",
    "check_name",
    "escaped",
    "list_field",
    "name_problem",
    "resolve",
    "shown",
    "split_frontmatter",
    "text_field",
]

Kind = Literal["skills", "commands", "agents"]
KINDS: tuple[Kind, ...] = ("skills", "commands", "agents")

Origin = Literal["user", "workspace", "claude-user", "claude-workspace"]
ORIGINS: tuple[Origin, ...] = ("user", "workspace", "claude-user", "claude-workspace")
"""Where library files come from, in the order a name is looked up (first wins)."""

NAME_MAX = 128
"""The longest name a skill, command or agent may have."""

FRONTMATTER_MAX_CHARS = 64 * 1024
"""Frontmatter longer than this is refused before YAML reads it."""

T = TypeVar("T")


class LibraryRefused(PodRuntimeError):
    """A skill, command or agent file that is not used: its name, its place, its size, its
    encoding or its frontmatter is refused. The message names the file and what to fix."""

    def __init__(self, where: str, reason: str) -> None:
        # The path may hold the very characters refused: the message escapes them.
        super().__init__(f"{escaped(where)}: {reason}")
        self.where = where
        self.reason = reason


def _is_hidden_char(ch: str) -> bool:
    # Cc: control characters (ESC would reach a terminal); Cf: format characters such as
    # bidirectional overrides and zero-width joiners (a name that reads as another one);
    # Zl/Zp: line and paragraph separators.
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")


def name_problem(name: str) -> str | None:
    """What makes ``name`` unfit to name a skill, command or agent (or one of a skill's
    files), or None: it must be a plain word of at most :data:`NAME_MAX` characters, never
    a path (no ``/``, ``\\``, ``..``, no leading ``.``), with no control, invisible or
    space characters."""
    if not name:
        return "the name is empty"
    if len(name) > NAME_MAX:
        return f"the name is {len(name)} characters long, more than {NAME_MAX}"
    if any(_is_hidden_char(ch) for ch in name):
        return "the name holds control or invisible characters"
    if any(ch.isspace() for ch in name):
        return "the name holds spaces"
    if "/" in name or "\\" in name:
        return "the name is a path (it holds a slash)"
    if name.startswith("."):
        return "the name starts with a dot (a hidden file, or `..`)"
    return None


def check_name(name: str, where: str) -> str:
    """``name``, or :class:`LibraryRefused` naming ``where`` when :func:`name_problem` has one."""
    problem = name_problem(name)
    if problem is not None:
        raise LibraryRefused(where, f"{problem}: {shown(name)}")
    return name


def escaped(text: str) -> str:
    """``text`` with control and invisible characters written as escapes (``\\x1b``)."""
    if not any(_is_hidden_char(ch) for ch in text):
        return text
    return "".join(repr(ch)[1:-1] if _is_hidden_char(ch) else ch for ch in text)


def shown(text: str, limit: int = 80) -> str:
    """``text`` safe to print in a message: escapes for hidden characters, at most ``limit``."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    return repr(cut)


def split_frontmatter(text: str, where: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body) of a markdown file. No frontmatter (the text does not open with a
    ``---`` line) is an empty mapping and the whole text. Frontmatter that is not closed, is
    not YAML, is too long or is not a mapping of text keys is :class:`LibraryRefused`."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[0].rstrip("\r ") != "---":
        return {}, text
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r ") in ("---", "..."):
            break
    else:
        raise LibraryRefused(
            where, "the frontmatter opened by its first `---` line is never closed"
        )
    yaml_text = "\n".join(lines[1:index])
    if len(yaml_text) > FRONTMATTER_MAX_CHARS:
        raise LibraryRefused(
            where,
            f"the frontmatter is {len(yaml_text):,} characters, more than "
            f"{FRONTMATTER_MAX_CHARS:,}",
        )
    # Imported here: most pods read no library file, and YAML is slow to import.
    import yaml

    try:
        data = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 2})" if mark is not None else ""
        raise LibraryRefused(where, f"the frontmatter is not valid YAML{at}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise LibraryRefused(
            where, f"the frontmatter must be a mapping of keys, not a {type(data).__name__}"
        )
    bad = [key for key in data if not isinstance(key, str)]
    if bad:
        raise LibraryRefused(where, f"the frontmatter key {shown(str(bad[0]))} is not text")
    return data, "\n".join(lines[index + 1 :])


def text_field(data: Mapping[str, Any], key: str, where: str) -> str | None:
    """The text of frontmatter field ``key`` (None when absent or empty); another type is
    :class:`LibraryRefused`."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise LibraryRefused(where, f"`{key}` must be text, not a {type(value).__name__}")
    return value.strip() or None


def list_field(data: Mapping[str, Any], key: str, where: str) -> list[str] | None:
    """Frontmatter field ``key`` as a list of words: a comma- or space-separated string
    (``Read, Grep``, ``Bash(git status:*) Read``: separators inside parentheses belong to
    the word) or a YAML list of strings (None when absent); anything else is
    :class:`LibraryRefused`."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return _words(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item.strip() for item in value if item.strip()]
    raise LibraryRefused(where, f"`{key}` must be a comma list or a YAML list of names")


def _words(text: str) -> list[str]:
    words: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (ch == "," or ch.isspace()):
            if current:
                words.append("".join(current))
                current = []
            continue
        current.append(ch)
    if current:
        words.append("".join(current))
    return words


@dataclass(frozen=True)
class Resolved(Generic[T]):
    """One name's winner and the items of the same name it shadows (later in the order)."""

    name: str
    item: T
    shadowed: list[T] = field(default_factory=list)


def resolve(items: Iterable[tuple[str, T]]) -> dict[str, Resolved[T]]:
    """(name, item) pairs in lookup order, by name: the first of each name wins and the
    later ones are recorded as shadowed by it. Insertion order is the winners' order."""
    out: dict[str, Resolved[T]] = {}
    for name, item in items:
        if name in out:
            out[name].shadowed.append(item)
        else:
            out[name] = Resolved(name, item)
    return out
