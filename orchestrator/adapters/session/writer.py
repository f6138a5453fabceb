"""Appending records to a session file: whole, fsync'd lines, cut back when a write fails."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from orchestrator.adapters.session.catalog import ensure_private_dir
from orchestrator.adapters.session.errors import SessionError, SessionWriteError
from orchestrator.adapters.session.fencing import Fence, stamp_line
from orchestrator.adapters.session.lock import SessionLock
from orchestrator.adapters.session.records import (
    ITEM_LINE_PREFIX,
    PruneRecord,
    SessionHeader,
    TitleRecord,
    ToolStartRecord,
    TurnEndRecord,
)
from orchestrator.config.regular_file import open_regular
from orchestrator.core.history import Item, encode_item


class SessionWriter:
    """Appends records to a session file, one whole, fsync'd line each, under the session lock."""

    def __init__(
        self,
        path: Path,
        *,
        pod: str,
        workspace: Path,
        holder: dict[str, Any] | None = None,
        header: dict[str, Any] | None = None,
        fence: Fence | None = None,
    ) -> None:
        """``header``: more fields for the header of a new file (``forked_from``). ``fence``:
        a fleet pod's ownership epoch, checked before and stamped on every record
        (:mod:`orchestrator.adapters.session.fencing`)."""
        self.path = path
        self._fence = fence
        ensure_private_dir(path.parent)
        self._lock = SessionLock(path, holder={"pod": pod, "pid": os.getpid(), **(holder or {})})
        try:
            exists = path.exists() and path.stat().st_size > 0
            fd = open_regular(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            self._lock.release()
            raise SessionError(f"cannot open session {path}: {exc.strerror}") from None
        os.fchmod(fd, 0o600)
        self._fd = fd
        self._size = os.fstat(fd).st_size
        self._torn = False
        self._header_only_at: int | None = None
        """The file's size right after this writer created it with its header alone."""
        try:
            if exists:
                self._repair_torn_tail()
            else:
                first = SessionHeader(
                    pod=pod,
                    workspace=str(workspace),
                    created_ms=int(time.time() * 1000),
                    **(header or {}),
                )
                self._write(first.model_dump_json().encode())
                self._header_only_at = self._size
        except SessionWriteError as exc:
            self.close()
            raise SessionError(str(exc)) from None

    def _repair_torn_tail(self) -> None:
        # A torn last line would glue itself to the next record; end it first.
        if os.pread(self._fd, 1, self._size - 1) != b"\n":
            self._torn = True

    def _write(self, line: bytes) -> None:
        """Write one whole line and sync it, or leave the file as it was and raise."""
        self.write_lines([line])

    def write_lines(self, lines: list[bytes]) -> None:
        """Write whole lines (already encoded records) with one sync: all of them are on disk
        afterwards, or none is and it raises :class:`SessionWriteError`.

        Safe to call from a worker thread, as long as one call at a time uses this writer
        (:class:`orchestrator.runtime.transcript.Transcript` keeps at most one batch in flight). A
        fenced writer asks its epoch store once per batch, on that thread.
        """
        if self._fence is not None:
            self._fence.check(self.path)
            lines = [stamp_line(line, self._fence.epoch) for line in lines]
        data = (b"\n" if self._torn else b"") + b"\n".join(lines) + b"\n"
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
            # fdatasync flushes the data and the new size (all a reload needs), not timestamps.
            os.fdatasync(self._fd)
        except OSError as exc:
            self._cut_back()
            raise SessionWriteError(self.path, exc) from None
        self._size += len(data)
        self._torn = False

    def _cut_back(self) -> None:
        """Remove a partly written line, so the file ends where the last whole record did."""
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            # The next write starts with a newline, so the fragment stays one bad line.
            self._torn = True

    def append_item(self, item: Item, *, encoded: bytes | None = None) -> None:
        """Persist one committed item (``encoded``: its :func:`encode_item`, when the caller
        has it already)."""
        self._write(item_line(encoded if encoded is not None else encode_item(item)))

    def turn_end(self, turn: int, result: str) -> None:
        """Persist that a turn closed."""
        self._write(TurnEndRecord(turn=turn, result=result).model_dump_json().encode())

    def prune(self, before_turn: int, prunable_tokens: int) -> None:
        """Persist a move of the prune bound."""
        record = PruneRecord(before_turn=before_turn, prunable_tokens=prunable_tokens)
        self._write(record.model_dump_json().encode())

    def tool_start(self, record: ToolStartRecord) -> None:
        """Persist that a tool call with side effects is about to start."""
        self._write(record.model_dump_json().encode())

    def record(self, record: BaseModel) -> None:
        """Persist one record of any other kind (a checkpoint, a rewind)."""
        self._write(record.model_dump_json().encode())

    def title(self, title: str) -> None:
        """Persist a title for the session."""
        self._write(TitleRecord(title=title).model_dump_json().encode())

    def close(self, *, discard_if_empty: bool = False) -> None:
        """Close the file and release the lock. ``discard_if_empty`` (a pod's clean stop): a
        file this writer created that still holds only its header is removed first, while
        the lock is held (``pod chat --new`` left without a word leaves no session behind)."""
        # Never a fleet pod's file (fenced): another host may own and write it by now.
        empty = self._fd >= 0 and self._size == self._header_only_at and self._fence is None
        if discard_if_empty and empty:
            with contextlib.suppress(OSError):
                # Checked on disk too: another writer of the same file is refused by the lock,
                # but the size is what proves nothing was appended.
                if os.fstat(self._fd).st_size == self._size:
                    self.path.unlink()
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        self._lock.release()


def item_line(encoded: bytes) -> bytes:
    """The session line of an item, from its :func:`encode_item` JSON."""
    return ITEM_LINE_PREFIX + encoded + b"}"


def is_disk_full(exc: SessionWriteError) -> bool:
    """True when the write failed for lack of space or quota (it may succeed later)."""
    return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
