"""Fork: a new session holding this one's conversation up to before a user message.

The new file is written whole from what this session holds on disk (its items, how its turns
ended, its title), so the two sessions share nothing from then on. The original is untouched.
It is a session of the folder it belongs to: this pod's workspace, or the copy of it that
``pod fork --worktree`` made (stored with that folder's sessions, so ``pod sessions ls`` and
``pod run`` there find it).
Workspace checkpoints stay with the session that took them: the fork rewinds its
conversation, and restores files only to checkpoints it takes itself. The todo list comes
along as it was at the fork's point (every version up to there, so a rewind in the fork finds
them too).
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.adapters.session import (
    SessionError,
    SessionWriter,
    load_session,
    new_session_path,
    rewound,
)
from orchestrator.core.history import Item, UserMessage
from orchestrator.core.rewind import RewindError
from orchestrator.core.todos import todos_before
from orchestrator.protocol import ForkedData
from orchestrator.runtime.transcript import Transcript


def fork_items(transcript: Transcript, at: int | None) -> list[Item]:
    """What the fork holds, taken on the event loop (the history is not to be read from a
    thread while turns commit): RewindError when ``at`` is not a user message, and
    SessionWriteError while a write waits for the disk."""
    transcript.require_durable()
    items = list(transcript.history.items)
    if at is None:
        return items
    if not any(isinstance(i, UserMessage) and i.seq == at for i in items):
        raise RewindError(f"cannot fork at {at}: it is not a user message of the conversation")
    return rewound(items, at)


def fork_workspace(requested: str | None, own: Path) -> Path:
    """The folder a fork belongs to: ``requested`` (an absolute path to a folder, such as the
    copy ``pod fork --worktree`` made), else the forking pod's ``own`` workspace. Its session
    is stored where that folder's sessions are looked up (``pod sessions ls``, ``pod run``
    there), so the path is resolved as they resolve it. SessionError when it is no folder."""
    if requested is None:
        return own
    path = Path(requested)
    if not path.is_absolute() or not path.is_dir():
        raise SessionError(f"the fork's workspace {requested} is not an absolute path to a folder")
    return path.resolve()


def write_fork(
    items: list[Item], source: Path, workspace: Path, *, at: int | None, title: str | None
) -> ForkedData:
    """Write the fork of session ``source`` and say where it is (blocking: it reads the source
    for how its turns ended and syncs every line; run it on a worker thread). SessionError
    when the file cannot be written."""
    loaded = load_session(source)
    path = new_session_path(workspace)
    writer = SessionWriter(
        path,
        pod=loaded.header.pod,
        workspace=workspace,
        header={"forked_from": str(source), "forked_at": at},
    )
    try:
        turns = sorted({item.turn for item in items if item.turn})
        for item in items:
            writer.append_item(item)
        for turn in turns:
            # A turn the fork cuts short (or one still open here) is closed there.
            writer.turn_end(turn, loaded.turn_results.get(turn, "cancelled"))
        if loaded.prune_before_turn:
            writer.prune(loaded.prune_before_turn, 0)
        for version in loaded.todos if at is None else todos_before(loaded.todos, at):
            writer.record(version)
        name = title or (f"{loaded.title} (fork)" if loaded.title else None)
        if name:
            writer.title(name)
    finally:
        writer.close()
    return ForkedData(
        session=path.stem, path=str(path), workspace=str(workspace), at=at, items=len(items)
    )
