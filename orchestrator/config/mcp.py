"""``[mcp.servers.<name>]``: the MCP servers a pod starts and how their tools are offered."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 128
"""The Messages API's limit on a tool name."""
READ_RESOURCE_TOOL = "read_mcp_resource"
"""The built-in tool that reads a resource of an MCP server (``orchestrator.adapters.mcp.resources``)."""


def wire_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, with characters the API refuses replaced by ``_``."""
    return f"mcp__{_NAME_CHARS.sub('_', server)}__{_NAME_CHARS.sub('_', tool)}"


class McpServerConfig(BaseModel):
    """One MCP server: a command to run (stdio) or a URL (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    command: str | None = None
    """The program of a stdio server (``uvx``, ``npx``, a path)."""
    args: list[str] = Field(default_factory=list)
    """The arguments of that program."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for it; ``${NAME}`` is replaced by the pod's ``NAME``."""
    cwd: str | None = None
    """Its working directory (default: the workspace)."""
    sandbox: bool = False
    """Run this stdio server in the sandbox, as ``bash`` runs (docs/sandbox.md): it writes
    only the workspace and ``[sandbox] writable``, sees no secrets, and reaches only what
    ``[sandbox] network`` allows; where no sandbox can be made it does not start. A
    workspace's config may turn it on for a server you configured, never off."""
    url: str | None = None
    """The endpoint of a streamable-HTTP server."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers for it; ``${NAME}`` is replaced from the environment, so a token stays
    out of the file (and out of the session and the logs, which never see the values)."""
    oauth_client_id: str | None = None
    """For ``pod mcp login``: a client ID registered beforehand with the server's
    authorization server (one that does not let clients register themselves); ``${NAME}``
    is replaced from the environment."""
    oauth_client_secret: str | None = None
    """That client's secret, sent with HTTP Basic authentication; write ``${NAME}`` so it
    stays out of the file (with ``oauth_grant = "client_credentials"`` it must be)."""
    oauth_grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    """How the pod gets its tokens: ``authorization_code`` (a person signs in once with
    ``pod mcp login``), or ``client_credentials`` (for machine use: the pod asks the token
    endpoint itself with ``oauth_client_id`` and the secret ``oauth_client_secret`` names in
    the environment; no browser)."""
    oauth_issuer: str | None = None
    """With ``oauth_grant = "client_credentials"``: the issuer of the authorization server that
    issued the client ID. Given, the secret is sent only to that server's token endpoint,
    whatever authorization server the MCP server names; unset, to the one it names."""
    oauth_client_metadata_url: str | None = None
    """A URL-based client ID (a client ID metadata document you host, HTTPS with a path):
    where the authorization server says it takes them, ``pod mcp login`` names the pod by
    this URL instead of registering a new client."""
    enabled: bool = True
    """Set false to keep the entry without starting the server."""
    allow: list[str] = Field(default_factory=list)
    """Offer only these tools (names as the server gives them); all when empty."""
    deny: list[str] = Field(default_factory=list)
    """Never offer these tools."""
    sampling: Literal["decline", "ask"] = "decline"
    """What the server's requests for the pod's model (sampling) get: declined (default), or
    put to a person as an approval during a call of its tools, then sent to the pod's own
    provider, counted in the usage and cost (docs/mcp.md)."""
    permission: Literal["ask", "allow", "deny"] = "ask"
    """What a call of this server's tools does without another rule: ask first (default),
    run, or never run. ``[permissions]`` rules on ``mcp__<name>__*`` still apply first."""
    timeout_s: float = Field(default=30.0, gt=0)
    """Seconds the server may take to start and list its tools."""
    call_timeout_s: float = Field(default=600.0, gt=0)
    """Seconds a tool call may take. A call past it ends with an error result (the server is
    told to cancel it, and restarted if it then does not answer, as after a pause)."""
    cancel_grace_s: float = Field(default=5.0, gt=0)
    """After a call is interrupted, seconds the server has to answer again before it is
    restarted (a server stuck in the call it was told to cancel is no use to the next one)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (an HTTP server)")
        if (self.oauth_client_id or self.oauth_client_secret) and self.url is None:
            raise ValueError("oauth_client_id and oauth_client_secret are for an HTTP server")
        if self.oauth_grant != "authorization_code" and self.url is None:
            raise ValueError("oauth_grant is for an HTTP server")
        if self.oauth_client_secret and not self.oauth_client_id:
            raise ValueError("oauth_client_secret needs the oauth_client_id it belongs to")
        if self.oauth_grant == "client_credentials":
            if not self.oauth_client_id or not self.oauth_client_secret:
                raise ValueError(
                    'oauth_grant = "client_credentials" needs oauth_client_id and '
                    "oauth_client_secret"
                )
            if not referenced_variables(self.oauth_client_secret):
                raise ValueError(
                    'with oauth_grant = "client_credentials", oauth_client_secret must name an '
                    'environment variable ("${NAME}"), so the secret stays out of the file'
                )
        if self.oauth_issuer is not None and self.oauth_grant != "client_credentials":
            raise ValueError('oauth_issuer is for oauth_grant = "client_credentials"')
        if self.oauth_client_metadata_url is not None:
            if self.url is None:
                raise ValueError("oauth_client_metadata_url is for an HTTP server")
            where = urlsplit(self.oauth_client_metadata_url)
            if where.scheme != "https" or not where.netloc or where.path in ("", "/"):
                raise ValueError(
                    "oauth_client_metadata_url must be an https URL with a path (where your "
                    "client ID metadata document is served)"
                )
        if self.sandbox and self.command is None:
            raise ValueError("sandbox = true runs a stdio server's command; this one has a url")
        return self

    def resolved_env(self) -> dict[str, str]:
        """``env`` with ``${NAME}`` references filled in from the pod's environment."""
        return {key: expand(value) for key, value in self.env.items()}

    def resolved_headers(self) -> dict[str, str]:
        """``headers`` with ``${NAME}`` references filled in from the pod's environment."""
        return {key: expand(value) for key, value in self.headers.items()}


class McpConfig(BaseModel):
    """The ``[mcp]`` table."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers by name; their tools are offered as ``mcp__<name>__<tool>`` (docs/mcp.md)."""
    elicitation: Literal["ask", "defaults", "decline"] = "ask"
    """How a server's request for input (``elicitation/create``) is answered: ``ask`` puts
    one that comes during a call of its tools to a person at the pod's clients (a form, or a
    URL to open); ``decline`` declines each, saying why; ``defaults`` (for headless runs)
    accepts a form whose required fields all have defaults in its schema, with those
    defaults, and declines the rest."""

    def sandboxed(self) -> list[str]:
        """The names of the enabled servers that run in the sandbox."""
        return [name for name, server in self.servers.items() if server.enabled and server.sandbox]


def expand(value: str, environ: Mapping[str, str] | None = None) -> str:
    """``${NAME}`` replaced by the environment's ``NAME`` (empty when unset); ``environ``
    defaults to the pod's own."""
    env = os.environ if environ is None else environ
    return _VARIABLE.sub(lambda match: env.get(match.group(1), ""), value)


def referenced_variables(value: str) -> list[str]:
    """The names a value refers to with ``${NAME}``."""
    return _VARIABLE.findall(value)
