"""Whether a process listens on a Unix socket, asked without the protocol or the server.

``pod run`` asks it of its pod's socket and of the pod host's before anything else (is a pod
or a host running?), so it is kept apart from :mod:`orchestrator.serving.server`, which
imports the protocol's models: a cold ``pod run`` starts the host before it loads those
(docs/performance.md). The server and :mod:`orchestrator.serving.peer` use it from here.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

from orchestrator.adapters.procs.supervisor import exited

__all__ = ["peer_credentials", "socket_is_live"]


def peer_credentials(sock: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a Unix socket; None where unsupported."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return int(pid), int(uid)


def socket_is_live(path: Path) -> bool:
    """True when a live process listens on the socket path.

    A connection alone does not tell: a process killed while it forked a command leaves that
    child holding its listening socket until the child execs, which under load takes tens of
    milliseconds, and the child never accepts. The listening socket's credentials name the
    process that listened, so a socket whose listener is gone counts as stale (a pod restarted
    at that moment replaces it, and a client waiting for the new pod keeps waiting)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(str(path))
        creds = peer_credentials(probe)
    except OSError:
        return False
    finally:
        probe.close()
    return creds is None or not exited(creds[0])
