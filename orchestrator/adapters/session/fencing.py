"""Fencing a session's writers by ownership epoch, for pods that move between hosts.

In a fleet (``orchestrator.serving.fleet``) a pod can be taken over by another host while the host
that had it is cut off but still alive. The ``flock`` of :mod:`.lock` cannot stop that host
on another machine, so every writer of a fleet pod holds an **epoch**: a number a consistent
store (Ray's KV) raises by one at each takeover.

- Before each write the writer asks the store whether its epoch is still the pod's
  (:meth:`Fence.stamp`); a host that was superseded gets :class:`SessionFenced` and writes
  nothing. That check narrows the window; it cannot close it (the store can move between the
  check and the write).
- So every record carries its epoch too: a line written under a fence starts with
  ``{"epoch": N, `` (:func:`stamp_line`), and the loader skips a record whose epoch is lower
  than one already seen earlier in the file (:func:`split_epoch`, ``load_session``).
- A new owner appends a ``fence`` record stamped with its epoch (:func:`claim_session`)
  **before** it reads the file. What a superseded host appended before the claim is in what
  the new owner reads; what it appends after the claim is skipped by every later load.

Lines written without a fence (a pod outside a fleet, ``pod session rename``) carry no epoch
and are always read: outside a fleet the ``flock`` is the guard, as before.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from orchestrator.adapters.session.errors import SessionError, SessionWriteError
from orchestrator.adapters.session.records import FenceRecord
from orchestrator.config.regular_file import open_regular
from orchestrator.errors import PodRuntimeError

EPOCH_PREFIX = b'{"epoch": '
"""How a line written under a fence starts; the epoch and ``, `` follow, then the record's
own fields (so the item fast path of the loader still applies after :func:`split_epoch`)."""


class EpochStore(Protocol):
    """Where the current ownership epoch of each pod is kept (consistent across hosts)."""

    def current(self, pod: str) -> int:
        """The pod's epoch now (0: never owned)."""
        ...


class SessionFenced(SessionWriteError):
    """The writer's epoch is no longer the pod's: another host owns it now. Nothing was
    written; the pod must be dropped from this host, not retried here."""

    def __init__(self, path: Path, pod: str, held: int, current: int) -> None:
        PodRuntimeError.__init__(
            self,
            f"cannot write the session file {path}: pod {pod} belongs to epoch {current} now "
            f"and this host holds epoch {held} (another host took the pod over); drop the pod "
            "here and reach it through the fleet's gateway",
        )
        self.path = path
        self.errno = errno.ESTALE
        self.held = held
        self.current = current


@dataclass(frozen=True)
class Fence:
    """One host's ownership of one pod: the epoch it holds, and the store that says whether
    it still does."""

    pod: str
    epoch: int
    store: EpochStore

    def check(self, path: Path) -> None:
        """Raise :class:`SessionFenced` unless the store still names this epoch."""
        current = self.store.current(self.pod)
        if current != self.epoch:
            raise SessionFenced(path, self.pod, self.epoch, current)

    def stamp(self, line: bytes, path: Path) -> bytes:
        """The record ``line`` stamped with this epoch, once the store confirmed it."""
        self.check(path)
        return stamp_line(line, self.epoch)


def stamp_line(line: bytes, epoch: int) -> bytes:
    """``line`` (one JSON object) with ``"epoch": N`` as its first field."""
    if not line.startswith(b"{") or line.startswith(b"{}"):
        raise ValueError("only a non-empty JSON object can carry an epoch")
    return EPOCH_PREFIX + str(epoch).encode() + b", " + line[1:]


def split_epoch(line: bytes) -> tuple[int | None, bytes]:
    """The epoch a line carries (None: written without a fence) and the record without it."""
    if not line.startswith(EPOCH_PREFIX):
        return None, line
    start = len(EPOCH_PREFIX)
    end = line.find(b", ", start)
    digits = line[start:end] if end > 0 else b""
    if not digits.isdigit():
        return None, line  # not ours after all: the general reader reports it
    return int(digits), b"{" + line[end + 2 :]


def claim_session(path: Path, fence: Fence, *, host: str) -> bool:
    """Append a ``fence`` record for ``fence``'s epoch to an existing session, before the new
    owner reads it (see the module's docstring). False when there is no file yet (its first
    writer stamps the header, which claims it as well).

    :class:`SessionError` when a process of this machine holds the session's ``flock``: a
    cut-off host that is still alive here, which must be stopped before the pod moves.
    """
    try:
        fd = open_regular(path, os.O_RDWR | os.O_APPEND)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise SessionError(f"cannot claim session {path}: {exc.strerror}") from None
    try:
        if os.fstat(fd).st_size == 0:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SessionError(
                f"cannot claim session {path} for epoch {fence.epoch}: a process of this "
                "machine still writes it (a host that lost the pod but is alive); stop it, "
                "or wait for Ray to end it"
            ) from None
        record = FenceRecord(epoch=fence.epoch, host=host, at_ms=int(time.time() * 1000))
        # Not stamped: the record names its epoch itself (the loader raises the session's
        # epoch there), and a stamp would say it twice. Still only while the store agrees.
        fence.check(path)
        line = record.model_dump_json().encode()
        # The file may end in a torn line of a host that died mid-write: end it first.
        whole = os.pread(fd, 1, os.fstat(fd).st_size - 1) == b"\n"
        data = (b"" if whole else b"\n") + line + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fdatasync(fd)
        return True
    finally:
        os.close(fd)
