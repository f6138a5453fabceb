"""Run an MCP server so that it dies with the pod: ``python …/reaper.py PPID COMMAND ARGS…``.

Closing a stdio server's stdin ends a well-behaved server, and the SDK kills the process
group of one that lingers when the pod closes it. A ``kill -9`` of the pod leaves neither
chance, and a server busy in a call that ignores cancellation (a worker thread blocked)
would outlive it. So the server is started through this module: it asks the kernel to send
it SIGKILL when its parent (the pod) dies (``PR_SET_PDEATHSIG``, kept across ``exec``),
checks the pod is still there (it may have died before the request), then becomes the
server with ``exec``. It is run by its path and imports nothing beyond the standard
library, so it costs one interpreter start (about 20 ms).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
    """Arm the death signal, then exec the server."""
    if len(argv) < 2:
        sys.stderr.write("usage: python reaper.py PPID COMMAND [ARGS...]\n")
        raise SystemExit(2)
    parent, command = int(argv[0]), argv[1:]
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            raise SystemExit(0)  # the pod died before the signal was armed
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"cannot run {command[0]}: {exc.strerror or exc}\n")
        raise SystemExit(127) from None


if __name__ == "__main__":
    main(sys.argv[1:])
