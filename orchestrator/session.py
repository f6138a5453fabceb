"""The session file: an append-only JSONL record of everything committed.

Line 1 is a :class:`SessionHeader`; every later line is one record: ``item`` (a committed
history item), ``turn_end`` (a turn closed for good), ``prune`` (the prune bound moved, so
what the model saw can be reconstructed), ``tool_start`` (a tool with side effects is about
to run: the write-ahead record that keeps Resume from running it twice after a crash) or
``title`` (a name a person gave the session; without one, its first user message names it).

Readers skip a record type they do not know, with a warning, so adding a record type keeps
older files readable and does not change :data:`SESSION_VERSION`; the version changes only
when an existing record's meaning does.

Each line is written whole and fdatasync'd before the pod reports the commit. A write that
fails part-way (a full disk) is cut back off the file, so no torn line is left behind and the
caller learns of it as :class:`SessionWriteError`. A torn last line from a crash mid-write is
ignored on load and reported.

One pod at a time writes a session: the writer holds an exclusive ``flock`` on a ``.lock``
file beside it, which names the holder, so a second pod gets :class:`SessionLocked` naming the
first instead of splicing two conversations into one file.

Files are created 0600 in 0700 directories: sessions hold source code and conversations.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from orchestrator.errors import PodRuntimeError, SetupError
from orchestrator.history import Item, UserMessage, item_from_json, item_to_json
from orchestrator.paths import state_dir
from orchestrator.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    PasteSegment,
    TextSegment,
    WorkflowInvokeSegment,
)

SESSION_VERSION = 1


class SessionError(SetupError):
    """A session file cannot be created or read; the message names the file."""


class SessionLocked(SessionError):
    """Another live pod writes this session; the message names it."""


class SessionWriteError(PodRuntimeError):
    """A record could not be written (disk full, I/O error); nothing of it is left on disk."""

    def __init__(self, path: Path, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        super().__init__(f"cannot write the session file {path}: {reason}")
        self.path = path
        self.errno = exc.errno


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


class ToolStartRecord(BaseModel):
    """A tool call with side effects is about to start (written and synced before it does).

    On load, a start without a result means the pod died while the call ran: the call is
    closed with a result that says so, and Resume never runs it again.
    """

    type: Literal["tool_start"] = "tool_start"
    call_id: str
    name: str
    started_ms: int
    spool: str | None = None
    """File (beside the session) that the call's output is copied to while it runs."""


class TitleRecord(BaseModel):
    """A title a person gave the session (the latest one counts)."""

    type: Literal["title"] = "title"
    title: str


Record = Annotated[
    ItemRecord | TurnEndRecord | PruneRecord | ToolStartRecord | TitleRecord,
    Field(discriminator="type"),
]
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


def session_files(workspace: Path) -> list[Path]:
    """A workspace's session files, oldest first (by last write, then name)."""
    base = sessions_dir(workspace)
    if not base.is_dir():
        return []
    return sorted(base.glob("*.jsonl"), key=lambda p: (_mtime_ns(p), p.name))


def latest_session(workspace: Path, *, with_content: bool = False) -> Path | None:
    """The most recently written session file of a workspace, if any.

    ``with_content`` skips sessions without a single item (a pod that started and stopped
    without a conversation), so continuing never lands in an empty one.
    """
    for path in reversed(session_files(workspace)):
        if not with_content or has_content(path):
            return path
    return None


def has_content(path: Path) -> bool:
    """True when the session file holds at least one readable item."""
    try:
        return bool(load_session(path).items)
    except SessionError:
        return False


def resolve_session(workspace: Path, ref: str) -> Path:
    """The session file ``ref`` names: a path (it contains ``/``) or a name from ``pod sessions ls``.

    A path may name a file that does not exist yet (the pod creates it); a name must be one of
    the workspace's sessions, so a typo is an error rather than a new, empty session.
    """
    if not ref.strip():
        raise SessionError("the session name is empty (see `pod sessions ls`)")
    if "/" in ref:
        path = Path(ref).expanduser().absolute()
        if path.is_dir():
            raise SessionError(f"session {ref} is a directory, not a session file")
        return path
    name = ref.removesuffix(".jsonl")
    candidate = sessions_dir(workspace) / f"{name}.jsonl"
    if candidate.is_file():
        return candidate
    hint = "see `pod sessions ls`; a path (with a /) names a new session file"
    raise SessionError(f"no session {ref!r} for {workspace.resolve()} ({hint})")


def session_title(items: list[Item], title: str | None = None, *, width: int = 60) -> str:
    """A one-line title: the given one, else the first user message (refs as ``@path``)."""
    text = title
    if text is None:
        first = next((item for item in items if isinstance(item, UserMessage)), None)
        if first is None:
            return ""
        text = _segments_line(first)
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def _segments_line(message: UserMessage) -> str:
    parts: list[str] = []
    for segment in message.segments:
        if isinstance(segment, TextSegment):
            parts.append(segment.text)
        elif isinstance(segment, PasteSegment):
            parts.append("[pasted text]")  # a paste can be a whole file: never the title
        elif isinstance(segment, FileRefSegment):
            parts.append(f"@{segment.path}")
        elif isinstance(segment, KnowledgeRefSegment):
            parts.append(f"@knowledge:{segment.slug}")
        elif isinstance(segment, WorkflowInvokeSegment):
            parts.append(f"/{segment.slug}")
    return "".join(parts) or message.text


SessionState = Literal["live", "turn open", "turn closed", "empty", "unreadable"]


@dataclass(frozen=True)
class SessionSummary:
    """One row of ``pod sessions ls``."""

    name: str
    path: Path
    title: str
    state: SessionState
    """``live``: a pod holds it now; ``turn open``: its last turn never ended (a pause or a
    crash; it comes back paused); ``turn closed``: every turn ended; ``empty``: no items."""
    items: int
    turns: int
    modified_ms: int
    holder: dict[str, Any] | None = None
    error: str | None = None


def summarize_session(path: Path) -> SessionSummary:
    """What ``pod sessions ls`` shows of one session file."""
    holder = session_holder(path)
    try:
        loaded = load_session(path)
    except SessionError as exc:
        state: SessionState = "live" if holder is not None else "unreadable"
        return SessionSummary(
            name=path.stem,
            path=path,
            title="",
            state=state,
            items=0,
            turns=0,
            modified_ms=_mtime_ms(path),
            holder=holder,
            error=str(exc),
        )
    if holder is not None:
        state = "live"
    elif not loaded.items:
        state = "empty"
    else:
        state = "turn open" if loaded.cut_off else "turn closed"
    return SessionSummary(
        name=path.stem,
        path=path,
        title=session_title(loaded.items, loaded.title),
        state=state,
        items=len(loaded.items),
        turns=max((item.turn for item in loaded.items), default=0),
        modified_ms=loaded.last_write_ms,
        holder=holder,
    )


def list_sessions(workspace: Path) -> list[SessionSummary]:
    """Every session of a workspace, oldest first."""
    return [summarize_session(path) for path in session_files(workspace)]


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
    started_calls: dict[str, ToolStartRecord] = field(default_factory=dict)
    """Write-ahead records of tool calls with side effects, by call id."""
    last_write_ms: int = 0
    """When the file was last written (its mtime): the pod's last sign of life."""
    title: str | None = None
    """The latest ``title`` record; None when nobody named the session."""
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
    session = LoadedSession(header=header, items=[], last_write_ms=_mtime_ms(path))
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
        elif isinstance(record, ToolStartRecord):
            session.started_calls[record.call_id] = record
        elif isinstance(record, TitleRecord):
            session.title = record.title
        else:
            session.prune_before_turn = record.before_turn
    return session


def _mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _mtime_ms(path: Path) -> int:
    return _mtime_ns(path) // 1_000_000


class ToolSpools:
    """Files beside the session that running tools copy their output to.

    Output is written as it arrives, unsynced: the page cache outlives a killed pod, so after a
    crash the result of an interrupted call can still say what the call printed.
    """

    def __init__(self, session_path: Path) -> None:
        self.dir = session_path.with_name(session_path.stem + ".out")

    def create(self, call_id: str) -> tuple[str, int]:
        """A new spool for one call: its file name and a write-only descriptor."""
        ensure_private_dir(self.dir)
        name = f"{_safe_name(call_id)}.log"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        return name, os.open(self.dir / name, flags, 0o600)

    def read(self, name: str, max_bytes: int) -> tuple[str, int] | None:
        """The first ``max_bytes`` of a spool as text and its full size; None when it is gone."""
        try:
            fd = os.open(self.dir / _safe_name(name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            size = os.fstat(fd).st_size
            data = os.pread(fd, max_bytes, 0)
        except OSError:
            return None
        finally:
            os.close(fd)
        return data.decode("utf-8", "replace"), size

    def mtime_ms(self, name: str) -> int:
        """When the call last wrote output (0 when unknown)."""
        return _mtime_ms(self.dir / _safe_name(name))

    def remove(self, name: str) -> None:
        """Delete a spool whose call has its result in the session."""
        with contextlib.suppress(OSError):
            (self.dir / _safe_name(name)).unlink()

    def clear(self) -> None:
        """Delete every spool (at start-up, once crashed calls have their results)."""
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.dir):
                self.remove(entry.name)


def _safe_name(name: str) -> str:
    # Call ids come from the model: never let one name a path outside the spool folder.
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".") or "_"


def lock_path(session_path: Path) -> Path:
    """The lock file a live pod holds for its session."""
    return session_path.with_name(session_path.name + ".lock")


def session_holder(session_path: Path) -> dict[str, Any] | None:
    """Who holds the session's lock (``pid``, ``pod``, ``socket``), or None if nobody."""
    try:
        fd = os.open(lock_path(session_path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class SessionLock:
    """An exclusive, advisory lock on one session, released when the holder exits (any way)."""

    def __init__(self, session_path: Path, *, holder: dict[str, Any]) -> None:
        path = lock_path(session_path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise SessionError(f"cannot lock session {session_path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = _read_holder(fd)
            os.close(fd)
            who = ", ".join(f"{k} {other[k]}" for k in ("pod", "pid", "socket") if k in other)
            raise SessionLocked(
                f"session {session_path.name} is in use by another pod ({who or 'unknown'}); "
                "attach to it, or start with --new"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        """Give the lock up (closing the file releases it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SessionWriter:
    """Appends records to a session file, one whole, fsync'd line each, under the session lock."""

    def __init__(
        self,
        path: Path,
        *,
        pod: str,
        workspace: Path,
        holder: dict[str, Any] | None = None,
    ) -> None:
        self.path = path
        ensure_private_dir(path.parent)
        self._lock = SessionLock(path, holder={"pod": pod, "pid": os.getpid(), **(holder or {})})
        try:
            exists = path.exists() and path.stat().st_size > 0
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            self._lock.release()
            raise SessionError(f"cannot open session {path}: {exc.strerror}") from None
        os.fchmod(fd, 0o600)
        self._fd = fd
        self._size = os.fstat(fd).st_size
        self._torn = False
        try:
            if exists:
                self._repair_torn_tail()
            else:
                header = SessionHeader(
                    pod=pod, workspace=str(workspace), created_ms=int(time.time() * 1000)
                )
                self._write(header.model_dump_json().encode())
        except SessionWriteError as exc:
            self.close()
            raise SessionError(str(exc)) from None

    def _repair_torn_tail(self) -> None:
        # A torn last line would glue itself to the next record; end it first.
        if os.pread(self._fd, 1, self._size - 1) != b"\n":
            self._torn = True

    def _write(self, line: bytes) -> None:
        """Write one whole line and sync it, or leave the file as it was and raise."""
        data = (b"\n" if self._torn else b"") + line + b"\n"
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

    def tool_start(self, record: ToolStartRecord) -> None:
        """Persist that a tool call with side effects is about to start."""
        self._write(record.model_dump_json().encode())

    def title(self, title: str) -> None:
        """Persist a title for the session."""
        self._write(TitleRecord(title=title).model_dump_json().encode())

    def close(self) -> None:
        """Close the file and release the lock."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        self._lock.release()


def is_disk_full(exc: SessionWriteError) -> bool:
    """True when the write failed for lack of space or quota (it may succeed later)."""
    return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
