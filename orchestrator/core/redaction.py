"""Secrets the pod knows, kept out of tool output: ``[redacted]`` in their place.

A tool's output is committed to the session, sent to the model and shown to every client. The
environment of tool processes already leaves the pod's secrets out
(:mod:`orchestrator.capabilities.tools.environment`), but a command can still find a value elsewhere: a
``.env`` file, a shell profile, a process of the user's that is not protected. So every tool
result is redacted before it is committed: each known secret value, wherever it appears, is
replaced by :data:`REDACTED`.

What the pod knows is secret (:func:`secret_values`): the values of its environment variables
whose names look like credentials (``ANTHROPIC_API_KEY``, ``*_TOKEN``, …), and for each MCP
server every value a ``${NAME}`` reference in its headers or env brings in, the values of
headers and env entries whose names look like credentials, and the token of an
``Authorization: Bearer …`` header. Values shorter than :data:`MIN_SECRET_CHARS` are left
out: a three-letter "secret" would redact ordinary words. This is a known-value filter, not a
detector: an encoded or partial value passes. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Protocol

from orchestrator.core.history import ToolResult
from orchestrator.core.model_output import scrub_surrogates
from orchestrator.core.tool_output import ToolOutput
from orchestrator.core.variables import referenced_variables, substitute

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "SECRET_NAMES",
    "Redactor",
    "ServerSecrets",
    "looks_secret",
    "secret_values",
]

SECRET_NAMES: tuple[str, ...] = (
    "ANTHROPIC_*",
    "AWS_*",
    "*_KEY",
    "*_KEYS",
    "*_KEY_ID",
    "*_TOKEN",
    "*_TOKENS",
    "*_SECRET",
    "*_SECRETS",
    "*_SECRET_*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_CREDENTIALS",
    "*_AUTH",
    "*_PAT",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
)
"""Name globs (matched case-insensitively) of variables that hold credentials: their values
are redacted, and a ``PREFIX*`` entry of ``tool_env_allow`` never lets them through
(:mod:`orchestrator.capabilities.tools.environment`)."""

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8
"""Shorter values are not treated as secrets (they would redact ordinary text)."""

_SECRET_HEADER = re.compile(r"auth|token|key|secret|cookie|session|passw", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a credential."""
    upper = name.upper()
    return any(fnmatchcase(upper, pattern) for pattern in SECRET_NAMES)


class ServerSecrets(Protocol):
    """What redaction reads of one MCP server's config (``[mcp.servers.<name>]``)."""

    @property
    def headers(self) -> Mapping[str, str]:
        """HTTP headers, values with ``${NAME}`` references."""
        ...

    @property
    def env(self) -> Mapping[str, str]:
        """Extra environment, values with ``${NAME}`` references."""
        ...

    @property
    def oauth_client_secret(self) -> str | None:
        """An OAuth client secret, usually a ``${NAME}`` reference."""
        ...


def secret_values(environ: Mapping[str, str], servers: Mapping[str, ServerSecrets]) -> list[str]:
    """Every value the pod knows to be secret (see the module), longest first, no repeats."""
    found: set[str] = {value for name, value in environ.items() if looks_secret(name)}
    for server in servers.values():
        for table, secret_name in ((server.headers, _secret_header), (server.env, looks_secret)):
            for name, raw in table.items():
                found.update(environ.get(v, "") for v in referenced_variables(raw))
                if secret_name(name):
                    value = substitute(raw, environ)
                    found.add(value)
                    found.update(value.split())  # "Bearer <token>": the token on its own
        if server.oauth_client_secret:
            found.add(substitute(server.oauth_client_secret, environ))
    return sorted((v for v in found if len(v) >= MIN_SECRET_CHARS), key=lambda v: (-len(v), v))


def _secret_header(name: str) -> bool:
    return _SECRET_HEADER.search(name) is not None


class Redactor:
    """Replaces a fixed set of secret values; one compiled pass over a text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({s for s in secrets if s}, key=lambda v: (-len(v), v))
        # Longest first, so a secret that contains another is replaced whole.
        self._pattern = re.compile("|".join(map(re.escape, values))) if values else None

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every secret replaced, and how many replacements were made."""
        if self._pattern is None:
            return text, 0
        return self._pattern.subn(REDACTED, text)

    def result(self, result: ToolResult) -> ToolResult:
        """A tool result safe to commit: no known secret, nothing that is not valid Unicode."""
        cleaned = self._pair(result.summary, result.content)
        return (
            result if cleaned is None else replace(result, summary=cleaned[0], content=cleaned[1])
        )

    def output(self, output: ToolOutput) -> ToolOutput:
        """A tool's output before it is capped, with every known secret replaced."""
        cleaned = self._pair(output.summary, output.content)
        return (
            output if cleaned is None else replace(output, summary=cleaned[0], content=cleaned[1])
        )

    def _pair(self, summary: str, content: str | None) -> tuple[str, str | None] | None:
        """Summary and content cleaned; None when neither changed."""
        new_summary, n_summary = self._clean(summary)
        new_content, n_content = (None, 0) if content is None else self._clean(content)
        return (new_summary, new_content) if n_summary or n_content else None

    def _clean(self, text: str) -> tuple[str, int]:
        # A tool's text can carry a lone surrogate (an MCP server's JSON can): it is replaced
        # here, for the same reason as in a model's reply (orchestrator/core/model_output.py).
        text, scrubbed = scrub_surrogates(text)
        text, redacted = self.redact(text)
        return text, scrubbed + redacted
