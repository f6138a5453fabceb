"""The session file: an append-only JSONL record of everything committed.

Line 1 is a :class:`SessionHeader`; every later line is one record: ``item`` (a committed
history item), ``turn_end`` (a turn closed for good) or ``prune`` (the prune bound moved, so
what the model saw can be reconstructed). Each line is flushed and fdatasync'd before the pod
reports the commit, so a crash loses at most a line that was never reported. A torn last line
(a crash mid-write) is ignored on load and reported.

Files are created 0600 in 0700 directories: sessions hold source code and conversations.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from orchestrator.errors import SetupError
from orchestrator.history import Item, item_from_json, item_to_json
from orchestrator.paths import state_dir

SESSION_VERSION = 1


class SessionError(SetupError):
    """A session file cannot be created or read; the message names the file."""


class SessionHeader(BaseModel):
    """First line of a session file."""

    model_config = ConfigDict(extra="allow")

    type: Literal["session"] = "session"
    version: int = SESSION_VERSION
    pod: str
    workspace: str
    created_ms: int


class ItemRecord(BaseModel):
    """A committed history item."""

    type: Literal["item"] = "item"
    item: dict[str, Any]


class TurnEndRecord(BaseModel):
    """A turn closed for good."""

    type: Literal["turn_end"] = "turn_end"
    turn: int
    result: str


class PruneRecord(BaseModel):
    """Requests from now on send only summaries for tool results of turns before ``before_turn``."""

    type: Literal["prune"] = "prune"
    before_turn: int
    prunable_tokens: int = 0


Record = Annotated[ItemRecord | TurnEndRecord | PruneRecord, Field(discriminator="type")]
_RECORD: TypeAdapter[Record] = TypeAdapter(Record)


def sessions_dir(workspace: Path) -> Path:
    """The per-workspace folder of session files."""
    resolved = workspace.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:10]
    return state_dir() / "sessions" / f"{resolved.name or 'root'}-{digest}"


def new_session_path(workspace: Path) -> Path:
    """A fresh session file path for a workspace, named by creation time."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = sessions_dir(workspace)
    path = base / f"{stamp}.jsonl"
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stamp}-{n}.jsonl"
    return path


def latest_session(workspace: Path) -> Path | None:
    """The most recently modified session file of a workspace, if any."""
    base = sessions_dir(workspace)
    if not base.is_dir():
        return None
    files = sorted(base.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    return files[-1] if files else None


def ensure_private_dir(path: Path) -> None:
    """Create a directory and its missing parents, each 0700; never chmod an existing one."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask


@dataclass
class LoadedSession:
    """What a session file holds."""

    header: SessionHeader
    items: list[Item]
    turn_results: dict[int, str] = field(default_factory=dict)
    prune_before_turn: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def cut_off(self) -> bool:
        """True when the last turn never ended (crash, kill -9, or a pause)."""
        last_turn = max((item.turn for item in self.items), default=0)
        return last_turn > 0 and last_turn not in self.turn_results


def load_session(path: Path) -> LoadedSession:
    """Read a session file; a torn or corrupt line is skipped and reported in ``warnings``."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"cannot read session {path}: {exc.strerror}") from None
    lines = raw.split(b"\n")
    torn_tail = bool(lines) and lines[-1] != b""
    if not torn_tail:
        lines = lines[:-1]
    if not lines:
        raise SessionError(f"session {path} is empty")
    try:
        header = SessionHeader.model_validate_json(lines[0])
    except ValidationError:
        raise SessionError(f"{path}: line 1 is not a session header") from None
    session = LoadedSession(header=header, items=[])
    seen: set[int] = set()
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            record = _RECORD.validate_json(line)
        except ValidationError:
            last = number == len(lines)
            what = (
                "torn last line (the pod stopped mid-write)" if last and torn_tail else "bad line"
            )
            session.warnings.append(f"{path.name}:{number}: {what} ignored")
            continue
        if isinstance(record, ItemRecord):
            try:
                item = item_from_json(record.item)
            except ValidationError:
                session.warnings.append(f"{path.name}:{number}: unreadable item ignored")
                continue
            if item.seq in seen:
                session.warnings.append(f"{path.name}:{number}: duplicate item {item.seq} ignored")
                continue
            seen.add(item.seq)
            session.items.append(item)
        elif isinstance(record, TurnEndRecord):
            session.turn_results[record.turn] = record.result
        else:
            session.prune_before_turn = record.before_turn
    return session


class SessionWriter:
    """Appends records to a session file, one fsync'd line each."""

    def __init__(self, path: Path, *, pod: str, workspace: Path) -> None:
        self.path = path
        ensure_private_dir(path.parent)
        exists = path.exists() and path.stat().st_size > 0
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.fchmod(fd, 0o600)
        self._file = os.fdopen(fd, "ab", buffering=0)
        if exists:
            self._repair_torn_tail()
        else:
            header = SessionHeader(
                pod=pod, workspace=str(workspace), created_ms=int(time.time() * 1000)
            )
            self._write(header.model_dump_json().encode())

    def _repair_torn_tail(self) -> None:
        # A torn last line would glue itself to the next record; end it first.
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                self._write(b"")

    def _write(self, line: bytes) -> None:
        self._file.write(line + b"\n")
        # fdatasync flushes the data and the new size (all a reload needs), not timestamps.
        os.fdatasync(self._file.fileno())

    def append_item(self, item: Item, *, encoded: str | None = None) -> None:
        """Persist one committed item (``encoded``: its JSON, when the caller already has it)."""
        body = encoded if encoded is not None else json.dumps(item_to_json(item))
        self._write(b'{"type": "item", "item": ' + body.encode("utf-8", "backslashreplace") + b"}")

    def turn_end(self, turn: int, result: str) -> None:
        """Persist that a turn closed."""
        self._write(TurnEndRecord(turn=turn, result=result).model_dump_json().encode())

    def prune(self, before_turn: int, prunable_tokens: int) -> None:
        """Persist a move of the prune bound."""
        record = PruneRecord(before_turn=before_turn, prunable_tokens=prunable_tokens)
        self._write(record.model_dump_json().encode())

    def close(self) -> None:
        """Close the file."""
        self._file.close()
