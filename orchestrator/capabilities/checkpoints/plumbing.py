"""The small pieces between git's output and the checkpoint store: NUL-separated lists,
``git status`` records, a blob read off a ``cat-file --batch`` stream, and workspace paths.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from orchestrator.capabilities.checkpoints.errors import CheckpointError, RestoreError

__all__ = [
    "changes",
    "folders_above",
    "guarded",
    "join_nul",
    "read_exact",
    "relative_to",
    "self_and_parents",
    "split_nul",
]


def guarded(path: str, action: Callable[[], None]) -> None:
    """Run one file operation; an OS error becomes a :class:`RestoreError` naming the path."""
    try:
        action()
    except OSError as exc:
        reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
        raise RestoreError(path, reason) from None


def read_exact(stream: Any, size: int) -> bytes:
    """Exactly ``size`` bytes of ``stream`` (a pipe may return fewer per read)."""
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            raise CheckpointError("git cat-file stopped in the middle of an object")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def changes(status: bytes) -> Iterator[tuple[bool, str]]:
    """(tracked, path) for each path ``git status --porcelain=v2 -z`` says differs from the
    index: tracked files changed in the work tree, and untracked ones."""
    for record in split_nul(status):
        if record.startswith(b"? "):
            yield False, os.fsdecode(record[2:])
        elif record.startswith(b"1 "):
            fields = record.split(b" ", 8)
            if fields[1][1:2] != b".":  # Y: the work tree against the index
                yield True, os.fsdecode(fields[8])


def split_nul(out: bytes) -> list[bytes]:
    """The records of a ``-z`` output, empty ones dropped."""
    return [part for part in out.split(b"\0") if part]


def join_nul(paths: list[str]) -> bytes:
    """Paths as a ``-z --stdin`` input: each one ended by a NUL."""
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def relative_to(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` in posix form, or None when outside (or the root)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    text = rel.as_posix()
    return None if text == "." else text


def folders_above(entries: Iterable[str]) -> set[str]:
    """Every folder above the given paths (``a`` and ``a/b`` for ``a/b/c``)."""
    found: set[str] = set()
    for path in entries:
        parts = path.split("/")
        found.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    return found


def self_and_parents(path: str) -> Iterator[str]:
    """``path``, then each folder above it, deepest first (``a/b/c``, ``a/b``, ``a``)."""
    parts = path.split("/")
    for depth in range(len(parts), 0, -1):
        yield "/".join(parts[:depth])
