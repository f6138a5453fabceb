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

from orchestrator.adapters.mcp.config import McpServerConfig, expand, referenced_variables
from orchestrator.capabilities.tools.base import ToolOutput
from orchestrator.capabilities.tools.environment import looks_secret
from orchestrator.core.history import ToolResult
from orchestrator.core.model_output import scrub_surrogates

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8
"""Shorter values are not treated as secrets (they would redact ordinary text)."""

_SECRET_HEADER = re.compile(r"auth|token|key|secret|cookie|session|passw", re.IGNORECASE)


def secret_values(environ: Mapping[str, str], servers: Mapping[str, McpServerConfig]) -> list[str]:
    """Every value the pod knows to be secret (see the module), longest first, no repeats."""
    found: set[str] = {value for name, value in environ.items() if looks_secret(name)}
    for server in servers.values():
        for table, secret_name in ((server.headers, _secret_header), (server.env, looks_secret)):
            for name, raw in table.items():
                found.update(environ.get(v, "") for v in referenced_variables(raw))
                if secret_name(name):
                    value = expand(raw, environ)
                    found.add(value)
                    found.update(value.split())  # "Bearer <token>": the token on its own
        if server.oauth_client_secret:
            found.add(expand(server.oauth_client_secret, environ))
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
