"""The session a pod opens: which file, what it holds, and its history made ready to wire.

Reading, parsing and repairing a long session is the slow part of loading a pod: it can run
on a worker thread (:func:`open_session_async`) while a host's other pods go on.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from orchestrator.adapters.session import (
    LoadedSession,
    PreparedHistory,
    ToolSpools,
    encoded_items,
    latest_session,
    load_session,
    new_session_path,
)
from orchestrator.config.model import PodConfig
from orchestrator.core.history import History, Item, ToolResult
from orchestrator.core.repair import CrashedCall, close_crashed_calls, repair_loaded

__all__ = ["crash_results", "open_session", "open_session_async", "prepare_history"]


def open_session(config: PodConfig, *, continue_: bool) -> tuple[Path, LoadedSession | None]:
    """The session file to use and, when continuing, what it holds.

    Continuing picks the latest session that holds a conversation: a pod that was started
    and stopped without one leaves an empty file, which must not hide the real one.
    """
    path = config.session
    if path is None and continue_:
        path = latest_session(config.workspace, with_content=True)
    if path is not None and path.exists() and (continue_ or config.session is not None):
        return path, load_session(path)
    return path or new_session_path(config.workspace), None


async def open_session_async(
    config: PodConfig, *, continue_: bool
) -> tuple[Path, LoadedSession | None]:
    """:func:`open_session` on a worker thread, so the event loop serves other pods while a
    long session file is read, parsed and its history made ready (:func:`prepare_history`);
    pass the result to :func:`build_pod` (``opened``), which then only wires the pod."""
    return await asyncio.to_thread(_open_prepared, config, continue_)


def _open_prepared(config: PodConfig, continue_: bool) -> tuple[Path, LoadedSession | None]:
    path, loaded = open_session(config, continue_=continue_)
    # A cut-short rewind changes the items first, and only the pod's build can finish it.
    if loaded is not None and loaded.pending_rewind is None:
        loaded.prepared = prepare_history(loaded)
    return path, loaded


def prepare_history(loaded: LoadedSession) -> PreparedHistory:
    """The loaded items repaired (``repair_loaded``), in a history numbered on from the file,
    each with its JSON text. Pure and touching nothing shared: it may run on a worker thread.
    """
    repair = repair_loaded(loaded.items, turn_closed=not loaded.cut_off)
    return PreparedHistory(
        source=loaded.items,
        history=History(repair.items, next_seq=loaded.next_seq, turn=loaded.last_turn),
        texts=encoded_items(repair.items, loaded),
        notes=repair.notes,
    )


def crash_results(
    loaded: LoadedSession, items: list[Item], spools: ToolSpools, config: PodConfig
) -> list[ToolResult]:
    """Results for calls the pod was running when it died, with what they printed.

    Once these are committed, no call of the session is running, so every spool is spent.
    """
    crashed: dict[str, CrashedCall] = {}
    answered = {item.call_id for item in items if isinstance(item, ToolResult)}
    for call_id, record in loaded.started_calls.items():
        if call_id in answered:
            continue
        output = (
            spools.read(record.spool, config.content_cap(record.name)) if record.spool else None
        )
        last_alive = loaded.last_write_ms
        if record.spool:
            last_alive = max(last_alive, spools.mtime_ms(record.spool))
        crashed[call_id] = CrashedCall(
            call_id=call_id,
            name=record.name,
            ran_for_s=max(0, last_alive - record.started_ms) / 1000,
            output=output[0] if output else None,
            output_bytes=output[1] if output else 0,
        )
    return close_crashed_calls(items, crashed, max_bytes=config.tool_output_max_bytes)
