"""The session file: an append-only JSONL record of everything committed.

Line 1 is a :class:`SessionHeader`; every later line is one record: ``item`` (a committed
history item), ``turn_end`` (a turn closed for good), ``prune`` (the prune bound moved, so
what the model saw can be reconstructed), ``tool_start`` (a tool with side effects is about
to run: the write-ahead record that keeps Resume from running it twice after a crash),
``tool_not_started`` (a call interrupted while its ``tool_start`` was being synced never ran),
``title`` (a name a person gave the session; without one, its first user message names it),
``job`` (a background job started or ended, :mod:`orchestrator.capabilities.jobs`), ``grant`` (a person
answered "always"), ``todos`` (the model's todo list, written whole by ``todo_write``), ``fence`` (a fleet host took the pod over: :mod:`.fencing`) or ``unload`` (the pod was closed without a shutdown, with what it held in
memory: :mod:`orchestrator.runtime.unload`).

Readers skip a record type they do not know, with a warning, so adding a record type keeps
older files readable and does not change :data:`SESSION_VERSION`; the version changes only
when an existing record's meaning does.

Each line is written whole and fdatasync'd before the pod reports the commit. A write that
fails part-way (a full disk) is cut back off the file, so no torn line is left behind and the
caller learns of it as :class:`SessionWriteError`. A torn last line from a crash mid-write is
ignored on load and reported.

One pod at a time writes a session: the writer holds an exclusive ``flock`` on the session
file itself (its inode, so a symlink or hard link to it is the same session) and names itself
in a ``.lock`` file beside it, so a second pod gets :class:`SessionLocked` naming the first
instead of splicing two conversations into one file.

Files are created 0600 in 0700 directories: sessions hold source code and conversations.

A fleet pod's lines start with its owner's epoch, and the loader skips what a superseded
owner wrote after the takeover (:mod:`.fencing`).

Modules: :mod:`.records` (the line types), :mod:`.writer` (appending), :mod:`.fencing`
(ownership epochs), :mod:`.loading`
(reading back), :mod:`.lock` (one pod per session), :mod:`.spools` (tool output kept beside
it), :mod:`.catalog` (a workspace's sessions and their names), :mod:`.errors`.
"""

from __future__ import annotations

from orchestrator.adapters.session.catalog import (
    SessionSummary,
    ensure_private_dir,
    has_content,
    latest_session,
    list_sessions,
    new_session_path,
    resolve_session,
    session_files,
    session_title,
    sessions_dir,
    summarize_session,
)
from orchestrator.adapters.session.errors import SessionError, SessionLocked, SessionWriteError
from orchestrator.adapters.session.fencing import (
    EpochStore,
    Fence,
    SessionFenced,
    claim_session,
    split_epoch,
    stamp_line,
)
from orchestrator.adapters.session.loading import (
    LoadedSession,
    PreparedHistory,
    encoded_items,
    load_session,
    rewind_loaded,
    rewound,
)
from orchestrator.adapters.session.lock import SessionLock, lock_path, session_holder
from orchestrator.adapters.session.records import (
    SESSION_VERSION,
    BudgetRecord,
    CheckpointRecord,
    ChildRecord,
    FallbackRecord,
    FenceRecord,
    GrantRecord,
    HeldCommand,
    HeldNote,
    HeldPrompt,
    HeldPromptRecord,
    HookRecord,
    HookRunRecord,
    ItemRecord,
    JobEnd,
    JobRecord,
    ModeRecord,
    PruneRecord,
    RewindRecord,
    RewindRestore,
    SessionHeader,
    SpendRecord,
    TitleRecord,
    TodoEntry,
    TodosRecord,
    ToolNotStartedRecord,
    ToolStartRecord,
    TurnEndRecord,
    UnloadRecord,
)
from orchestrator.adapters.session.spools import ToolSpools
from orchestrator.adapters.session.write_pool import session_write_pool
from orchestrator.adapters.session.writer import SessionWriter, is_disk_full, item_line

__all__ = [
    "SESSION_VERSION",
    "BudgetRecord",
    "CheckpointRecord",
    "ChildRecord",
    "EpochStore",
    "FallbackRecord",
    "Fence",
    "FenceRecord",
    "GrantRecord",
    "HeldCommand",
    "HeldNote",
    "HeldPrompt",
    "HeldPromptRecord",
    "HookRecord",
    "HookRunRecord",
    "ItemRecord",
    "JobEnd",
    "JobRecord",
    "LoadedSession",
    "ModeRecord",
    "PreparedHistory",
    "PruneRecord",
    "RewindRecord",
    "RewindRestore",
    "SessionError",
    "SessionFenced",
    "SessionHeader",
    "SessionLock",
    "SessionLocked",
    "SessionSummary",
    "SessionWriteError",
    "SessionWriter",
    "SpendRecord",
    "TitleRecord",
    "TodoEntry",
    "TodosRecord",
    "ToolNotStartedRecord",
    "ToolSpools",
    "ToolStartRecord",
    "TurnEndRecord",
    "UnloadRecord",
    "claim_session",
    "encoded_items",
    "ensure_private_dir",
    "has_content",
    "is_disk_full",
    "item_line",
    "latest_session",
    "list_sessions",
    "load_session",
    "lock_path",
    "new_session_path",
    "resolve_session",
    "rewind_loaded",
    "rewound",
    "session_files",
    "session_holder",
    "session_title",
    "session_write_pool",
    "sessions_dir",
    "split_epoch",
    "stamp_line",
    "summarize_session",
]
