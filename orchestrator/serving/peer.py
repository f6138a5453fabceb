"""Who is at the other end of a Unix socket, and whether a server of this process serves it.

Every socket the runtime serves (a pod's, a host's control and pod sockets, a fleet gateway's
control and pod sockets) admits a connection only from a process of the same user **in the
same PID namespace** as the server. The sandbox always gives its commands a PID namespace of
their own (``bwrap --unshare-pid``), so a command the pod runs can never reach the pod's
approvals, nor a host or gateway that would load a pod configured by it: hiding the socket
files (:func:`orchestrator.adapters.sandbox.sandboxing.sandbox_spec`'s ``extra_hidden``) cannot cover a
socket bound after the sandbox started, this check does.

The peer is identified at accept with ``SO_PEERCRED`` (its pid as this process sees it, and
its uid); its namespace is read from ``/proc/<pid>/ns/pid`` right then. A process that made
itself non-dumpable (``pod run`` does, to keep its API key from ``/proc``) hides that link
from processes without ``CAP_SYS_PTRACE``; for it the depth of its namespace is read from
``/proc/<pid>/status`` instead (``NSpid``, readable by all): a sandbox's namespace is always
nested below the server's, so a peer as deep as the server is not in one. A peer that cannot be
checked (pid 0: a namespace this process cannot see; ``/proc/<pid>`` gone or unreadable) is
refused. Where the kernel gives a pidfd of the peer (``SO_PEERPIDFD``, Linux 6.5), the peer is
confirmed alive after its namespace was read, so a pid reused meanwhile cannot pass for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.errors import PodRuntimeError
from orchestrator.protocol import ErrorData, encode_event
from orchestrator.serving.liveness import peer_credentials

__all__ = [
    "Peer",
    "PeerRefused",
    "admit_peer",
    "check_peer",
    "forbidden_event",
    "namespace_depth",
    "peer_credentials",
    "pid_namespace",
]

log = logging.getLogger(__name__)

_SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77 if sys.platform == "linux" else None)
"""The option giving a pidfd of the peer (not named by Python before 3.13)."""

REFUSAL_WRITE_S = 2.0
"""How long a refused peer has to take its one error line before the connection is cut."""


@dataclass(frozen=True, slots=True)
class Peer:
    """A process admitted at the other end of a connection."""

    pid: int | None
    """Its pid as this process sees it; None where the system does not tell (not Linux)."""
    uid: int | None


class PeerRefused(PodRuntimeError):
    """The connecting process may not be served; the message says why and what to do."""


def pid_namespace(pid: int | str) -> tuple[int, int]:
    """The (device, inode) naming the PID namespace of ``pid`` (``"self"``: this process)."""
    st = os.stat(f"/proc/{pid}/ns/pid")
    return st.st_dev, st.st_ino


_OUTSIDE = (
    "connect from a terminal or program outside the sandbox (a command the pod runs may "
    "never drive a pod, a host or a gateway)"
)


def check_peer(sock: socket.socket) -> Peer:
    """The peer of a connected Unix socket, if this process may serve it; :class:`PeerRefused`
    saying why otherwise: another user, another PID namespace (a sandbox's), or a process
    that cannot be checked."""
    try:
        creds = peer_credentials(sock)
    except OSError as exc:
        raise PeerRefused(
            f"the connecting process's credentials cannot be read ({exc.strerror or exc})"
        ) from None
    if creds is None:
        # No SO_PEERCRED, no bubblewrap either (both are Linux's): nothing to tell apart.
        return Peer(pid=None, uid=None)
    pid, uid = creds
    me = os.getuid()
    if uid != me:
        raise PeerRefused(f"this server serves uid {me} only; the connection comes from uid {uid}")
    if pid <= 0:
        raise PeerRefused(
            "the connecting process cannot be checked: it runs in a PID namespace this server "
            f"cannot see (a sandbox or a container); {_OUTSIDE}"
        )
    pidfd = _peer_pidfd(sock)
    try:
        try:
            theirs = pid_namespace(pid)
        except PermissionError:
            # Non-dumpable: its namespace link is closed to us, its depth is not.
            theirs = _same_depth_namespace(pid)
        except OSError as exc:
            raise PeerRefused(
                f"the connecting process (pid {pid}) cannot be checked: /proc/{pid} is "
                f"{'gone' if isinstance(exc, FileNotFoundError) else 'unreadable'} "
                f"({exc.strerror or exc}); connect again from a process that stays connected"
            ) from None
        try:
            ours = pid_namespace("self")
        except OSError as exc:
            raise PeerRefused(
                f"this server cannot read its own PID namespace ({exc.strerror or exc}), so it "
                "cannot tell a sandboxed peer from another: mount /proc for it"
            ) from None
        if theirs != ours:
            raise PeerRefused(
                f"the connecting process (pid {pid}) runs in another PID namespace than this "
                f"server, as a sandboxed command does; {_OUTSIDE}"
            )
        if pidfd is not None and not _alive(pidfd):
            raise PeerRefused(
                f"the connecting process (pid {pid}) exited before it could be checked; "
                "connect again from a process that stays connected"
            )
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return Peer(pid=pid, uid=uid)


def namespace_depth(pid: int | str) -> int:
    """How many PID namespaces ``pid`` is in, counted from the one ``/proc`` belongs to (the
    length of the ``NSpid`` line of its ``status``, which every user may read)."""
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("NSpid:"):
                return len(line.split()) - 1
    raise OSError(f"/proc/{pid}/status has no NSpid line (a kernel older than 4.1)")


def _same_depth_namespace(pid: int) -> tuple[int, int]:
    """For a peer whose namespace link is closed to us: our own namespace when the peer is
    as deep as we are (not in a sandbox, whose namespace is nested below ours);
    :class:`PeerRefused` otherwise, or when its depth cannot be read either."""
    try:
        theirs, ours = namespace_depth(pid), namespace_depth("self")
    except OSError as exc:
        raise PeerRefused(
            f"the connecting process (pid {pid}) cannot be checked: neither its PID namespace "
            f"nor its depth can be read ({exc}); connect again from a process that stays "
            "connected"
        ) from None
    if theirs != ours:
        raise PeerRefused(
            f"the connecting process (pid {pid}) runs in a PID namespace nested below this "
            f"server's, as a sandboxed command does; {_OUTSIDE}"
        )
    return pid_namespace("self")


def _peer_pidfd(sock: socket.socket) -> int | None:
    """A pidfd of the peer where the kernel gives one (it names that process, never a later
    one given the same pid)."""
    if _SO_PEERPIDFD is None:
        return None
    try:
        fd = sock.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD)
    except OSError:
        return None  # an older kernel: the namespace read at accept is what there is
    return fd if fd >= 0 else None


def _alive(pidfd: int) -> bool:
    try:
        signal.pidfd_send_signal(pidfd, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, and only the signal was refused
    return True


def forbidden_event(message: str) -> bytes:
    """The pod protocol's refusal: one ``error`` line with code ``forbidden``."""
    return encode_event("error", ErrorData(code="forbidden", message=message))


async def admit_peer(
    writer: asyncio.StreamWriter,
    *,
    server: str,
    refusal: Callable[[str], bytes] = forbidden_event,
) -> Peer | None:
    """The peer of an accepted connection if ``server`` (what to call it in messages, e.g.
    ``"this pod"``) may serve it; None once it was refused: one line (``refusal`` of the
    message, the pod protocol's ``forbidden`` error by default) written and the connection
    closed."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return Peer(pid=None, uid=None)  # not a socket (a pipe in a test): nobody to check
    try:
        return check_peer(sock)
    except PeerRefused as exc:
        why = str(exc)
    log.warning("%s refused a client: %s", server, why)
    with contextlib.suppress(Exception):
        writer.write(refusal(f"{server} refuses this connection: {why}"))
        await asyncio.wait_for(writer.drain(), timeout=REFUSAL_WRITE_S)
    writer.close()
    return None
