"""Finding a workspace's sessions: where they live, their names, titles and summaries."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from orchestrator.adapters.session.errors import SessionError
from orchestrator.adapters.session.loading import load_session, mtime_ms, mtime_ns
from orchestrator.adapters.session.lock import session_holder
from orchestrator.config.paths import state_dir
from orchestrator.core.history import Item, UserMessage
from orchestrator.core.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    PasteSegment,
    TextSegment,
    WorkflowInvokeSegment,
)


def sessions_dir(workspace: Path) -> Path:
    """The per-workspace folder of session files."""
    resolved = workspace.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:10]
    return state_dir() / "sessions" / f"{resolved.name or 'root'}-{digest}"


def new_session_path(workspace: Path) -> Path:
    """A fresh session file path for a workspace, named by creation time.

    The name is unique among every workspace's sessions, not only this one's: an editor
    knows a session by its name alone (ACP's session id), and a fork into another folder
    started in the same second as its origin would otherwise share the origin's name.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = sessions_dir(workspace)
    path = base / f"{stamp}.jsonl"
    n = 1
    while path.exists() or _named_elsewhere(path.name):
        n += 1
        path = base / f"{stamp}-{n}.jsonl"
    return path


def _named_elsewhere(name: str) -> bool:
    """Whether another workspace has a session file of this name."""
    return any((state_dir() / "sessions").glob(f"*/{name}"))


def session_files(workspace: Path) -> list[Path]:
    """A workspace's session files, oldest first (by last write, then name)."""
    base = sessions_dir(workspace)
    if not base.is_dir():
        return []
    return sorted(base.glob("*.jsonl"), key=lambda p: (mtime_ns(p), p.name))


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
    """True when the session file holds at least one readable item, or a paused turn an
    unload kept (its prompt still held for its hooks, so not an item yet)."""
    try:
        loaded = load_session(path)
    except SessionError:
        return False
    return bool(loaded.items) or (loaded.unloaded is not None and loaded.unloaded.paused)


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
    forked_from: str | None = None
    """The name of the session this one was forked from."""
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
            modified_ms=mtime_ms(path),
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
        forked_from=_forked_from(loaded.header.model_extra),
    )


def _forked_from(extra: dict[str, Any] | None) -> str | None:
    source = (extra or {}).get("forked_from")
    return Path(source).stem if isinstance(source, str) and source else None


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
