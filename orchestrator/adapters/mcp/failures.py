"""What went wrong with a server, in words people can act on.

The SDK reports most failures as a closed connection or "an error response"; these say
instead that the command is missing, that the sandbox it needs is not there, that it wants a
sign-in (and how to get one), and what the server last wrote on stderr.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import IO, TYPE_CHECKING

from mcp.client.auth import OAuthFlowError

from orchestrator.adapters.mcp.transport import describe
from orchestrator.config.mcp import McpServerConfig, expand, referenced_variables

if TYPE_CHECKING:
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing

__all__ = [
    "STDERR_TAIL_LINES",
    "failure_text",
    "missing_command",
    "missing_sandbox",
    "missing_secret",
    "oauth_failure",
    "stderr_tail",
    "why_failed",
]

STDERR_TAIL_LINES = 5
"""How many of the last lines a server wrote to stderr a failure message quotes."""


def missing_command(config: McpServerConfig, workspace: Path) -> str | None:
    """Why a stdio server's program cannot be run, said before it is tried (the SDK would
    only report a closed connection); None when it can be."""
    command = config.command
    if command is None:
        return None
    env_path = (config.resolved_env() or {}).get("PATH") or os.environ.get("PATH")
    cwd = Path(config.cwd) if config.cwd else workspace
    if os.sep in command:
        program = Path(command) if Path(command).is_absolute() else cwd / command
        if program.is_file() and os.access(program, os.X_OK):
            return None
        return f"its command {command!r} is not an executable file"
    if shutil.which(command, path=env_path) is not None:
        return None
    return f"its command {command!r} was not found on PATH; install it or give its full path"


def missing_sandbox(config: McpServerConfig, sandboxing: Sandboxing | None) -> str | None:
    """Why a server to be sandboxed cannot be (it never runs unsandboxed instead)."""
    if not config.sandbox:
        return None
    if sandboxing is None:
        return "it is to run sandboxed (sandbox = true), and no sandbox was set up for it"
    if sandboxing.bwrap is None:
        return f"it is to run sandboxed (sandbox = true), and {sandboxing.unavailable}"
    return None


def missing_secret(config: McpServerConfig) -> str | None:
    """Why a server of the client-credentials grant cannot sign in: the variable its secret
    names is not set (said before it is tried, not as a 401)."""
    if config.oauth_grant != "client_credentials" or not config.oauth_client_secret:
        return None
    if expand(config.oauth_client_secret):
        return None
    names = ", ".join(referenced_variables(config.oauth_client_secret))
    return (
        f"its oauth_client_secret names the environment variable {names}, which is not set "
        "where the pod started; set it there"
    )


def why_failed(
    name: str,
    config: McpServerConfig,
    exc: BaseException,
    *,
    refusal: int | None,
    signed_in: bool,
    wanted_scope: str | None = None,
) -> str:
    """What went wrong, in words; an HTTP server that refused the pod (``refusal``, its last
    HTTP status of 401 or 403) says that, and how to get in, instead of the SDK's "an error
    response". ``signed_in``: the pod holds a token for the server; ``wanted_scope``: the scope
    it asked for beyond that token's (a 403 ``insufficient_scope``)."""
    if refusal == 401 or oauth_failure(exc):
        if signed_in:
            return (
                "it answered 401 Unauthorized: its sign-in is no longer accepted; sign in "
                f"again with `pod mcp login {name}`"
            )
        return (
            "it answered 401 Unauthorized: it needs authorization; sign in with `pod mcp "
            f"login {name}` (once, in a browser), or, if the server takes a token, set "
            f'headers = {{ Authorization = "Bearer ${{TOKEN}}" }} in [mcp.servers.{name}]'
        )
    if refusal == 403 and wanted_scope:
        return (
            f"it answered 403 insufficient_scope: it wants the scope {wanted_scope!r}, more "
            f"than the pod was granted; sign in again with `pod mcp login {name}`, which asks "
            "for it"
        )
    if refusal == 403:
        return "it answered 403 Forbidden: the credentials in its headers are not enough"
    return describe(exc)


def oauth_failure(exc: BaseException) -> bool:
    """Whether the SDK's OAuth gave up (it cannot sign in again by itself in a pod)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BaseExceptionGroup):
            return any(oauth_failure(inner) for inner in seen.exceptions)
        if isinstance(seen, OAuthFlowError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def stderr_tail(stderr: IO[str] | None) -> str:
    """The last lines a server wrote to its stderr file (empty when there is none)."""
    if stderr is None:
        return ""
    with contextlib.suppress(OSError, ValueError):
        stderr.flush()
        # Only the end: a chatty server may have written megabytes.
        size = stderr.seek(0, os.SEEK_END)
        stderr.seek(max(0, size - 4000))
        lines = stderr.read().strip().splitlines()
        return "\n".join(lines[-STDERR_TAIL_LINES:])
    return ""


def failure_text(name: str, why: str, tail: str) -> str:
    """The message for a server that failed, with what it printed last."""
    return f"MCP server {name} failed: {why}" + (f"; its stderr ends:\n{tail}" if tail else "")
