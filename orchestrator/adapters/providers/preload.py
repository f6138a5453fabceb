"""Importing the Anthropic provider (and with it the SDK) ahead of need, on a thread.

``import anthropic`` is the longest single step of a cold ``pod run``: about a second and a
half on a 2-core machine, more than everything else the pod host does before its first
request. A process that will build an Anthropic pod (the pod host, ``pod serve``) calls
:func:`preload_provider` once its own start is done, just before it serves, so the import
runs while the client sends its first request and connects and while the session loads; the
pod that needs the provider then finds it imported, or waits only for the rest of the import
(Python's per-module import lock makes the second importer wait for the first to finish).
Not earlier: imports hold the interpreter lock, so a thread started at the process's entry
would slow the process's own imports down rather than use another core.

Nothing else changes: the command line (``pod run``, ``pod --help``) never calls this, a
scripted pod never needs it, and a failure here is left to the real import to report.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading

__all__ = ["PROVIDER_MODULE", "preload_provider", "wants_provider"]

PROVIDER_MODULE = "orchestrator.adapters.providers.anthropic"
"""The module the pod imports where it chooses the Anthropic provider (``make_provider``)."""

log = logging.getLogger(__name__)
_lock = threading.Lock()
_thread: threading.Thread | None = None


def wants_provider(provider: str | None = None) -> bool:
    """Whether a pod of this process will likely use the Anthropic provider: one was named,
    or none was and ``ANTHROPIC_API_KEY`` is set (a pod's default, ``PodConfig.
    resolved_provider``)."""
    if provider is not None:
        return provider in ("anthropic", "bedrock", "vertex")
    return bool(os.environ.get("ANTHROPIC_API_KEY"))


def preload_provider() -> threading.Thread | None:
    """Start importing :data:`PROVIDER_MODULE` on a daemon thread; the thread, or None when
    the module is imported already. Calling it again returns the first thread."""
    global _thread
    with _lock:
        if _thread is not None:
            return _thread
        if PROVIDER_MODULE in sys.modules:
            return None
        _thread = threading.Thread(target=_import, name="pod-sdk-import", daemon=True)
        _thread.start()
        return _thread


def _import() -> None:
    try:
        importlib.import_module(PROVIDER_MODULE)
    except Exception:  # the pod's own import raises it again, where it can be reported
        log.debug("preloading %s failed", PROVIDER_MODULE, exc_info=True)
