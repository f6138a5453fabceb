"""The pod's MCP servers: started with the pod, their tools offered, stopped with it.

:class:`McpServers` is the set of a pod's servers (started together, a failure an alert while
the others go on; each server's state reported; stopped together), and :class:`McpTool` one
server tool as the pod's other tools are. One server is :mod:`.server`; what servers ask of
the pod during a call, :mod:`.asking`.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.adapters.mcp.client_side import Alert, ClientSettings
from orchestrator.adapters.mcp.results import TASK_ONLY, Offer, offers, tool_output
from orchestrator.adapters.mcp.server import MAX_RESTARTS, McpServer, McpServerError
from orchestrator.capabilities.tools.base import ToolContext, ToolOutput
from orchestrator.config.mcp import McpServerConfig, wire_name
from orchestrator.core.history import SystemMessage
from orchestrator.protocol import McpServerData

if TYPE_CHECKING:
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing

# McpServer and McpServerError are re-exported: callers that hold the set name its members
# from here.
__all__ = ["MAX_RESTARTS", "Alert", "McpServer", "McpServerError", "McpServers", "McpTool"]


@dataclass
class McpTool:
    """An MCP server's tool, as the pod's other tools are."""

    server: McpServer
    offer: Offer
    name: str = ""
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    side_effects: bool = True
    """Unknown effects: a write-ahead record keeps Resume from sending the call twice."""
    kind: str = "other"

    def __post_init__(self) -> None:
        tool = self.offer.tool
        self.name = self.offer.name
        self.description = (tool.description or tool.title or tool.name)[:1024] + (
            f" (MCP server {self.server.name})"
        )
        self.input_schema = dict(tool.input_schema)
        annotations = tool.annotations
        if annotations is not None and annotations.read_only_hint:
            self.side_effects = False
            self.kind = "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Call the tool on its server and map the result."""
        # Progress streams as the call's live output, as a command's output does.
        result = await self.server.call(self.offer.tool.name, args, ctx.partial.append)
        await self.server.settle()
        return tool_output(self.server.name, self.offer.tool.name, result)


@dataclass
class McpServers:
    """All of a pod's servers."""

    servers: list[McpServer]
    alert: Alert
    disabled: list[str] = field(default_factory=list)
    """Configured servers with ``enabled = false``."""
    records: Path | None = None
    """A private directory for the supervisors' records, removed at close."""

    @classmethod
    def from_config(
        cls,
        configs: dict[str, McpServerConfig],
        workspace: Path,
        alert: Alert,
        sandboxing: Sandboxing | None = None,
        settings: ClientSettings | None = None,
    ) -> McpServers:
        """The enabled servers of a config (not started yet); those with ``sandbox = true``
        run in ``sandboxing``; ``settings`` say what each is told and how it is answered
        (default: the workspace as the only root, requests for input declined)."""
        settings = settings or ClientSettings(roots=(workspace,))
        records = Path(tempfile.mkdtemp(prefix="pod-mcp-"))
        servers = [
            McpServer(
                name=name,
                config=config,
                workspace=workspace,
                alert=alert,
                sandboxing=sandboxing,
                settings=settings,
            )
            for name, config in configs.items()
            if config.enabled
        ]
        for number, server in enumerate(servers):
            server.records = records / str(number)
            server.records.mkdir()
        disabled = [name for name, config in configs.items() if not config.enabled]
        return cls(servers=servers, alert=alert, disabled=disabled, records=records)

    async def start(self) -> None:
        """Start every server at once; a failure is an alert, the others go on."""
        results = await asyncio.gather(
            *(server.start() for server in self.servers), return_exceptions=True
        )
        for result in results:
            if isinstance(result, McpServerError):
                self.alert("error", str(result))
            elif isinstance(result, BaseException):
                raise result

    def tools(self, taken: set[str], only: McpServer | None = None) -> list[McpTool]:
        """The tools to offer (of every server, or ``only`` one); a bad schema or a name
        already taken is an alert, not a tool."""
        out: list[McpTool] = []
        for server in self.servers:
            if server.status != "running" or (only is not None and server is not only):
                continue
            server.not_offered = {}
            for offer in offers(
                server.name, server.tools, allow=server.config.allow, deny=server.config.deny
            ):
                if offer.problem is None and offer.name in taken:
                    offer = Offer(
                        offer.server, offer.tool, offer.name, "another tool has that name"
                    )
                if offer.problem is not None:
                    server.not_offered[offer.name] = offer.problem
                    # A task-only tool is a known gap of the pod, not the server's fault.
                    self.alert(
                        "info" if offer.problem == TASK_ONLY else "warn",
                        f"MCP server {server.name}: tool {offer.tool.name} is not offered: "
                        f"{offer.problem}",
                    )
                    continue
                taken.add(offer.name)
                out.append(McpTool(server=server, offer=offer))
        return out

    def report(self, offered: set[str]) -> list[McpServerData]:
        """Each server as it is now; ``offered`` is the names the model is offered."""
        rows = []
        for server in self.servers:
            tools = sorted(wire_name(server.name, tool.name) for tool in server.tools)
            rows.append(
                McpServerData(
                    name=server.name,
                    status=server.status,
                    tools=tools,
                    offered=[name for name in tools if name in offered],
                    not_offered=dict(server.not_offered),
                    restarts=server.restarts,
                    survivors=[f"{s.pid} {s.command}".strip() for s in server.survivors()],
                )
            )
        rows += [McpServerData(name=name, status="disabled") for name in self.disabled]
        return rows

    def take_notes(self) -> list[SystemMessage]:
        """What the model is to hear at the next round boundary: the resources it read that
        changed since (one note per server, coalesced)."""
        notes = [server.subscriptions.take_note() for server in self.servers]
        return [note for note in notes if note is not None]

    async def close(self) -> None:
        """Stop every server (unsubscribing from what the pod followed)."""
        await asyncio.gather(*(server.close() for server in self.servers))
        if self.records is not None:
            shutil.rmtree(self.records, ignore_errors=True)
