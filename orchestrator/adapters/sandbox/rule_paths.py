"""The paths of a workspace that deny rules cover, for the sandbox: hidden where a ``read``
rule denies them, read-only where a ``write``/``edit`` rule does.

The file tools ask the rules about each path they touch; a sandboxed command touches paths
the pod never sees, so the rules are expanded against the files that exist, before each
command: a bounded walk (symlinks not followed, and the dependency and cache folders the
protected-path walk skips, :data:`~orchestrator.adapters.sandbox.protected_scan.SKIPPED_DIRS`, not
entered) that stops at the first path a rule covers (a folder is covered as a whole, and so
are the files made in it later). A pattern is
matched as :meth:`~orchestrator.capabilities.permissions.rules.Rule.matches_path` matches it (a name
without ``/`` at any depth, a folder covering its tree), and ``secrets/**`` also covers the
folder ``secrets`` itself. Rules without a path pattern deny a tool outright and are not
about paths; a path a rule names that does not exist yet is not covered until it does.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.adapters.sandbox.protected_scan import (
    MAX_ENTRIES,
    SKIPPED_DIRS,
    bounded_walk,
    is_dir,
)
from orchestrator.capabilities.permissions.rules import Rule, path_pattern

__all__ = ["DenyPaths", "PathRules", "deny_paths", "path_rules"]

READ_TOOLS = ("read_file", "glob", "grep")
WRITE_TOOLS = ("write_file", "edit_file")


@dataclass(frozen=True, slots=True)
class PathRules:
    """The path patterns of the deny rules, compiled once per pod."""

    read: tuple[str, ...] = ()
    """Patterns whose paths are hidden."""
    write: tuple[str, ...] = ()
    """Patterns whose paths are read-only."""

    def __bool__(self) -> bool:
        return bool(self.read or self.write)


@dataclass(frozen=True, slots=True)
class DenyPaths:
    """What one expansion found."""

    hidden: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    complete: bool = True
    """False when the walk stopped at its bound (the rest was not looked at)."""


def path_rules(deny: Iterable[Rule]) -> PathRules:
    """The path patterns of ``deny`` rules about reading or writing files."""
    read: list[str] = []
    write: list[str] = []
    for rule in deny:
        if rule.subject is None or rule.exact:
            continue
        pattern = path_pattern(rule.subject)
        if not pattern or pattern == "/":
            continue  # the whole file system: not a path the sandbox can hide
        if any(rule.covers_tool(tool, "read") for tool in READ_TOOLS):
            read.append(pattern)
        if any(rule.covers_tool(tool, "edit") for tool in WRITE_TOOLS):
            write.append(pattern)
    return PathRules(read=tuple(dict.fromkeys(read)), write=tuple(dict.fromkeys(write)))


def deny_paths(rules: PathRules, workspace: Path, *, max_entries: int = MAX_ENTRIES) -> DenyPaths:
    """The existing paths ``rules`` cover: inside ``workspace`` by a walk, and outside it
    where a pattern is absolute."""
    if not rules:
        return DenyPaths()
    read = [_Matcher(p) for p in rules.read]
    write = [_Matcher(p) for p in rules.write]
    hidden: list[Path] = []
    read_only: list[Path] = []
    complete = True
    relative_read = [m for m in read if not m.absolute]
    relative_write = [m for m in write if not m.absolute]
    if relative_read or relative_write:
        complete = _walk(workspace, relative_read, relative_write, hidden, read_only, max_entries)
    for matcher, into in [*((m, hidden) for m in read), *((m, read_only) for m in write)]:
        if matcher.absolute:
            complete &= _walk_absolute(matcher, into, max_entries)
    return DenyPaths(tuple(hidden), tuple(read_only), complete)


class _Matcher:
    """One pattern, as ``Rule.matches_path`` reads it, tested on one path at a time (the walk
    has tested its parents already)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.absolute = pattern.startswith("/")
        self.anywhere = "/" not in pattern
        self.regex = re.compile(fnmatch.translate(pattern))
        # ``dir/**`` covers ``dir`` itself: files made in it later are covered too.
        stem = pattern[:-3] if pattern.endswith("/**") else None
        self.folder = re.compile(fnmatch.translate(stem)) if stem else None

    def covers(self, rule_path: str, name: str, is_dir: bool) -> bool:
        if self.regex.match(rule_path) or (self.anywhere and self.regex.match(name)):
            return True
        return is_dir and self.folder is not None and self.folder.match(rule_path) is not None

    def root(self) -> Path:
        """The longest literal folder an absolute pattern starts with (where to walk)."""
        literal: list[str] = []
        for part in self.pattern.split("/")[1:]:
            if any(c in part for c in "*?["):
                break
            literal.append(part)
        return Path("/", *literal)


def _walk(
    workspace: Path,
    read: Sequence[_Matcher],
    write: Sequence[_Matcher],
    hidden: list[Path],
    read_only: list[Path],
    max_entries: int,
) -> bool:
    """Breadth first under ``workspace``: rule paths are relative to it. False when cut."""

    def visit(entry: os.DirEntry[str], seen_as: str) -> bool:
        folder = is_dir(entry)
        if any(m.covers(seen_as, entry.name, folder) for m in read):
            _add(entry.path, hidden)
            return False
        if any(m.covers(seen_as, entry.name, folder) for m in write):
            _add(entry.path, read_only)
            if not read:
                return False  # read-only as a whole; only a read rule needs to look in
        return entry.name not in SKIPPED_DIRS

    return bounded_walk(os.fspath(workspace), visit, max_entries)


def _walk_absolute(matcher: _Matcher, into: list[Path], max_entries: int) -> bool:
    """An absolute pattern, walked from its literal folder. False when cut."""
    root = matcher.root()
    if matcher.covers(str(root), root.name, root.is_dir()):
        _add(str(root), into)
        return True

    def visit(entry: os.DirEntry[str], _relative: str) -> bool:
        if matcher.covers(entry.path, entry.name, is_dir(entry)):
            _add(entry.path, into)
            return False
        return True

    return bounded_walk(str(root), visit, max_entries)


def _add(path: str, into: list[Path]) -> None:
    """A covered path; a symlink stands for its target (a mount on it would land there)."""
    if os.path.islink(path):
        with contextlib.suppress(OSError, RuntimeError):  # dangling or a loop: shows nothing
            into.append(Path(path).resolve(strict=True))
        return
    if os.path.lexists(path):
        into.append(Path(path))
