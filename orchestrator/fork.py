"""Fork: a new session holding this one's conversation up to before a user message.

The new file is written whole from what this session holds on disk (its items, how its turns
ended, its title), so the two sessions share nothing from then on. The original is untouched.
Workspace checkpoints stay with the session that took them: the fork rewinds its
conversation, and restores files only to checkpoints it takes itself.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.history import UserMessage
from orchestrator.protocol import ForkedData
from orchestrator.rewind import RewindError
from orchestrator.session import SessionWriter, load_session, new_session_path, rewound
from orchestrator.transcript import Transcript


def fork_session(
    transcript: Transcript, workspace: Path, *, at: int | None, title: str | None
) -> ForkedData:
    """Write the fork and say where it is; RewindError when ``at`` is not a user message,
    SessionError when the file cannot be written."""
    transcript.require_durable()
    items = list(transcript.history.items)
    if at is not None:
        if not any(isinstance(i, UserMessage) and i.seq == at for i in items):
            raise RewindError(f"cannot fork at {at}: it is not a user message of the conversation")
        items = rewound(items, at)
    source = transcript.session.path
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
        name = title or (f"{loaded.title} (fork)" if loaded.title else None)
        if name:
            writer.title(name)
    finally:
        writer.close()
    return ForkedData(
        session=path.stem, path=str(path), workspace=str(workspace), at=at, items=len(items)
    )
