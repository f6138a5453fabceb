"""Event ids and the replay buffer: what lets a client that lost its connection catch up.

Every event a pod broadcasts gets an id, ``"<epoch>-<n>"``, written at the top of its line
(``{"eid": "k3Xq9Tz1Ab-42", "event": …, "data": …}``): ``n`` counts from 1 and ``epoch`` is
drawn at random each time the pod starts (a host loading a pod it unloaded is a new start), so
an id never names two events, even across restarts. The last events are kept, bounded by count
and by bytes, so that a client coming back with the last id it saw (``subscribe``; the HTTP
API's SSE ``Last-Event-ID`` will map onto it) is sent exactly what it missed; one asking for
what is no longer kept, or for an id of an earlier start, is told to ``resync`` (fetch
``get_status`` and ``get_history``) instead.

Stamping is on the hot path of every streamed delta: one counter, one bytes join and a deque
append; nothing is parsed or re-encoded.
"""

from __future__ import annotations

import itertools
import secrets
import string
from collections import deque
from dataclasses import dataclass
from typing import Final

from orchestrator.protocol import EVENT_ID_RE

__all__ = [
    "EID_PREFIX",
    "REPLAY_MAX_BYTES",
    "REPLAY_MAX_EVENTS",
    "ReplayBuffer",
    "Resync",
    "new_epoch",
    "split_eid",
]

REPLAY_MAX_EVENTS: Final = 10_000
"""The most broadcast events a pod keeps for clients that come back."""

REPLAY_MAX_BYTES: Final = 16 * 1024 * 1024
"""The most bytes of event lines a pod keeps for them (a few long tool outputs would otherwise
keep tens of MB alive per pod; a host holds many pods)."""

EID_PREFIX: Final = b'{"eid": "'
"""How a broadcast line begins; a reply to one client never does (it starts with ``{"event"``)."""


_EPOCH_ALPHABET = string.ascii_letters + string.digits
_EPOCH_LENGTH = 10
"""62**10: about 59 random bits, enough that two starts of one pod never share an epoch."""


def new_epoch() -> str:
    """A fresh random epoch: short, URL-safe, and without ``-`` (the id's separator)."""
    return "".join(secrets.choice(_EPOCH_ALPHABET) for _ in range(_EPOCH_LENGTH))


def split_eid(eid: str) -> tuple[str, int]:
    """``(epoch, n)`` of an event id; ValueError for anything the pod would never write."""
    match = EVENT_ID_RE.fullmatch(eid)
    if match is None:
        raise ValueError(
            f"{eid[:80]!r} is not an event id: expected '<epoch>-<n>' as the pod sent it in "
            "an event's 'eid' (letters and digits, a dash, a number), or null"
        )
    return match["epoch"], int(match["n"])


@dataclass(frozen=True, slots=True)
class Resync:
    """What a ``subscribe`` cannot replay: the client must fetch status and history."""

    reason: str
    """``restarted`` (an id of another start of the pod) or ``too_old`` (no longer kept)."""


class ReplayBuffer:
    """Stamps broadcast lines with their ids and keeps the last of them for replay."""

    def __init__(
        self,
        *,
        max_events: int = REPLAY_MAX_EVENTS,
        max_bytes: int = REPLAY_MAX_BYTES,
        epoch: str | None = None,
    ) -> None:
        if max_events < 1 or max_bytes < 1:
            raise ValueError("a replay buffer keeps at least one event and one byte")
        self.epoch = epoch if epoch is not None else new_epoch()
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.last = 0
        """``n`` of the last event stamped (0: none yet)."""
        self.held_bytes = 0
        self._lines: deque[bytes] = deque()
        self._head = EID_PREFIX + self.epoch.encode() + b"-"

    @property
    def first(self) -> int:
        """``n`` of the oldest event kept (``last + 1`` when none is)."""
        return self.last - len(self._lines) + 1

    def __len__(self) -> int:
        return len(self._lines)

    def stamp(self, line: bytes) -> bytes:
        """``line`` (an encoded event, ``{"event": …}\\n``) with the next id, kept for replay."""
        self.last += 1
        stamped = self._head + str(self.last).encode() + b'", ' + line[1:]
        lines = self._lines
        lines.append(stamped)
        self.held_bytes += len(stamped)
        # A single line longer than the byte bound is kept alone until the next event: a
        # client one event behind still gets it.
        while len(lines) > self.max_events or (self.held_bytes > self.max_bytes and len(lines) > 1):
            self.held_bytes -= len(lines.popleft())
        return stamped

    def after(self, eid: str) -> list[bytes] | Resync:
        """The kept lines after ``eid``, oldest first, or why they cannot be given.

        ValueError for an id the pod never wrote: not an id, or one of this start that is
        not reached yet.
        """
        epoch, n = split_eid(eid)
        if epoch != self.epoch:
            return Resync("restarted")
        if n > self.last:
            raise ValueError(
                f"event {eid} was never sent: the last event of this pod is "
                f"{self.epoch}-{self.last}"
            )
        if n + 1 < self.first:
            return Resync("too_old")
        return self.lines_from(n + 1)

    def catch_up(
        self, queue: deque[bytes], fed_from: int, eid: str
    ) -> tuple[deque[bytes], int] | Resync:
        """A connection's queue rebuilt to go on with the events after ``eid``, exactly once.

        ``queue``: the lines waiting for the connection, not yet written (its broadcast lines
        are the last ones stamped, in order, with replies to it between them); ``fed_from``:
        ``n`` of the first event of its stream (the one after it joined). Returns the new queue
        and ``fed_from``, or a :class:`Resync` when the events are not kept. Raises ValueError
        for an id the pod never wrote. Sent as a connection's first line, the events follow in
        order; on a connection that had events written to it already, those it lacks from
        before them come after them.
        """
        kept = self.after(eid)
        if isinstance(kept, Resync):
            return kept
        n = split_eid(eid)[1]
        # n of the first broadcast line still queued (last + 1: none is).
        start = self.last - sum(1 for line in queue if line.startswith(EID_PREFIX)) + 1
        if start > fed_from and n < start - 1:
            # Some events were written to this connection already, and it lacks some from
            # before them: those it joined too late for follow what was written (each once,
            # out of order: PodClient puts them back in order), ahead of the rest.
            missing = kept[: max(0, fed_from - 1 - n)]
            if not missing:
                return queue, fed_from  # what it lacks went out on this connection
            fed_from = n + 1
        else:
            missing = kept[: max(0, start - 1 - n)]
            if start <= fed_from:  # nothing written yet: the stream starts after ``eid``
                fed_from = n + 1
        drop = max(0, n - start + 1)
        rebuilt: deque[bytes] = deque()
        for line in queue:
            if line.startswith(EID_PREFIX):
                if missing:
                    rebuilt.extend(missing)
                    missing = []
                if drop:
                    drop -= 1
                    continue
            rebuilt.append(line)
        rebuilt.extend(missing)
        return rebuilt, fed_from

    def lines_from(self, n: int) -> list[bytes]:
        """The kept lines numbered ``n`` and after (``n`` at least :attr:`first`)."""
        return list(itertools.islice(self._lines, max(0, n - self.first), None))
