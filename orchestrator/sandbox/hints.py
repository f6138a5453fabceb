"""What to tell the model when a sandboxed command failed the way the sandbox makes commands
fail (pure): so it asks to leave the sandbox instead of retrying blindly."""

from __future__ import annotations

import re

_SIGNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Read-only file system"), "a write outside the workspace"),
    (
        re.compile(
            r"Network is unreachable|Could not resolve host|Temporary failure in name resolution"
            r"|Name or service not known|getaddrinfo|No address associated with hostname"
        ),
        "the network (off in the sandbox)",
    ),
)


def sandbox_hint(output: str, code: int) -> str | None:
    """A line for the result of a failed sandboxed command, or None when nothing says the
    sandbox did it."""
    if code == 0:
        return None
    found = [what for pattern, what in _SIGNS if pattern.search(output)]
    if not found:
        return None
    return (
        f"[blocked by the sandbox: {' and '.join(found)}. Commands run sandboxed: the "
        "workspace is writable, the rest read-only, secrets hidden, no network. If the command "
        "must leave the sandbox, call bash again with sandbox: false (the user is asked).]"
    )
