"""What to tell the model when a sandboxed command failed the way the sandbox makes commands
fail, or the pod's proxy refused one of its connections (pure): so it asks to leave the
sandbox, or the user to allow a host, instead of retrying blindly."""

from __future__ import annotations

import re
from collections.abc import Sequence

_WRITE = re.compile(r"Read-only file system")
_NETWORK = re.compile(
    r"Network is unreachable|Could not resolve host|Temporary failure in name resolution"
    r"|Name or service not known|getaddrinfo|No address associated with hostname"
)
_PROXY_REFUSAL = re.compile(
    r"not in \[sandbox\] network|CONNECT tunnel failed, response 403"
    r"|Tunnel connection failed: 403|Received HTTP code 403 from proxy"
)


def sandbox_hint(
    output: str, code: int, *, refused: Sequence[str] = (), proxied: bool = False
) -> str | None:
    """A line for the result of a sandboxed command, or None when nothing says the sandbox
    got in its way. ``refused``: the ``host:port`` the pod's proxy refused to this command
    (said even when the command exited 0); ``proxied``: the network is the hosts of
    ``[sandbox] network``, through the proxy."""
    found: list[str] = []
    if refused:
        found.append(f"{', '.join(refused)} not in [sandbox] network (the pod's proxy refused)")
    if code != 0:
        if _WRITE.search(output):
            found.append("a write outside the workspace")
        if _NETWORK.search(output):
            found.append(
                "a connection that did not go through the pod's proxy (only programs that "
                "honour HTTPS_PROXY reach the hosts of [sandbox] network)"
                if proxied
                else "the network (off in the sandbox)"
            )
        elif proxied and not refused and _PROXY_REFUSAL.search(output):
            found.append("a host not in [sandbox] network (the pod's proxy refused)")
    if not found:
        return None
    network = "network only to the hosts of [sandbox] network" if proxied else "no network"
    return (
        f"[blocked by the sandbox: {' and '.join(found)}. Commands run sandboxed: the "
        f"workspace is writable, the rest read-only, secrets hidden, {network}. If the command "
        "must leave the sandbox, call bash again with sandbox: false (the user is asked).]"
    )
