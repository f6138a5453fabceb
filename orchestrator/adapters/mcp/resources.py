"""MCP resources as the model reads them: the ``read_mcp_resource`` tool.

A tool result may link to a resource (``resource_link``) instead of carrying it; the model
follows the link with ``read_mcp_resource``, naming the server and the URI. What comes back
maps as a tool result's content does (:mod:`.results`): text as it is, under its URI; an
image the API takes (PNG, JPEG, GIF, WebP up to 5 MB) attached as an image the model sees; a
PDF the API takes (:mod:`orchestrator.core.documents`: at most 100 pages and 20 MB) attached as a
document the model reads; any other binary content named with its type and size (and, for a
PDF, why it is not attached).

The tool is offered when a running server says it has resources; a server whose
``permission`` is ``deny`` is not read. A resource read is followed where the server offers
subscriptions (:mod:`.subscriptions`); a blob whose MIME type says text is read as text
(:mod:`.blob_text`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp import types
from pydantic import Field

from orchestrator.adapters.mcp.results import Attachments
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.config.mcp import READ_RESOURCE_TOOL

if TYPE_CHECKING:
    from orchestrator.adapters.mcp.servers import McpServers


def resource_output(server: str, uri: str, result: types.ReadResourceResult) -> ToolOutput:
    """Our tool result for the contents of one resource (pure)."""
    parts: list[str] = []
    attachments = Attachments()
    for content in result.contents:
        if isinstance(content, types.TextResourceContents):
            parts.append(f"[resource {content.uri}]\n{content.text}")
        else:
            parts.append(attachments.blob(str(content.uri), content.mime_type, content.blob))
    text = "\n".join(parts)
    lines = len(text.splitlines())
    return ToolOutput(
        summary=f"mcp {server} resource {uri}: {lines} lines{attachments.shown()}",
        content=text or "(the resource is empty)",
        images=tuple(attachments.images),
        documents=tuple(attachments.documents),
    )


class ReadMcpResourceArgs(ToolArgs):
    """The arguments of ``read_mcp_resource``."""

    server: str = Field(
        min_length=1, description="The MCP server's name (the <server> of mcp__<server>__*)."
    )
    uri: str = Field(
        min_length=1,
        description="The resource's URI, as a resource link in a tool's result gives it.",
    )


class ReadMcpResource(TypedTool[ReadMcpResourceArgs]):
    """Read a resource of one of the pod's MCP servers."""

    name = READ_RESOURCE_TOOL
    side_effects = False
    kind = "read"
    description = (
        "Read a resource of an MCP server by its URI: follow a resource link that an MCP tool "
        "returned ([link: <uri>]). Text comes back as it is, images are shown, PDFs are "
        "attached as documents, other binary content is named. Where the server supports it, "
        "you are told at your next request when a resource you read changes."
    )
    args_model = ReadMcpResourceArgs

    def __init__(self, servers: McpServers) -> None:
        super().__init__()
        self.servers = servers

    async def execute(self, args: ReadMcpResourceArgs, ctx: ToolContext) -> ToolOutput:
        """Read the resource from its server and map its contents."""
        server = next((s for s in self.servers.servers if s.name == args.server), None)
        if server is None:
            names = ", ".join(s.name for s in self.servers.servers) or "none"
            raise ToolError(f"no MCP server is named {args.server!r}; the servers: {names}")
        if server.config.permission == "deny":
            raise ToolError(f'MCP server {server.name} is denied (permission = "deny")')
        result = await server.read_resource(args.uri)
        return resource_output(server.name, args.uri, result)
