"""The threads that write and sync session files for every pod of a process.

A pod's commits are written by one of these threads so that ``os.write`` and ``fdatasync``
never hold up the event loop, which in a host serves every other pod too. Order within a
session is the transcript's business (one batch in flight per session); the pool only
supplies the threads, and is shared because a host's hundreds of pods need a few writers,
not one each.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

WRITER_THREADS = 4
"""Sessions synced at the same time: enough that one slow disk does not queue everyone
behind it, few enough that a host does not spawn a thread per pod."""

_pool: ThreadPoolExecutor | None = None
_guard = threading.Lock()


def session_write_pool() -> ThreadPoolExecutor:
    """The process's session writer threads, started on first use."""
    global _pool
    with _guard:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=WRITER_THREADS, thread_name_prefix="pod-session-writer"
            )
        return _pool
