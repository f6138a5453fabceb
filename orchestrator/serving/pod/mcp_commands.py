"""MCP servers' prompts offered as custom commands (``/mcp__<server>__<prompt>``): each
server's list put in the pod's command catalog when it starts and whenever it changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.config.mcp import wire_name
from orchestrator.runtime.controller import Controller
from orchestrator.runtime.custom_commands import CommandSpec, McpPromptSpec

if TYPE_CHECKING:
    from mcp import types

    from orchestrator.adapters.mcp.servers import McpServer

__all__ = ["offer_prompts", "prompt_spec"]


def prompt_spec(server: str, prompt: types.Prompt) -> CommandSpec:
    """One prompt as a command: its arguments in the server's order, the required ones in
    ``<>`` in the hint and the others in ``[]``."""
    arguments = list(prompt.arguments or [])
    hint = " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in arguments)
    return CommandSpec(
        name=wire_name(server, prompt.name),
        source="mcp",
        description=(prompt.description or prompt.title or prompt.name) + f" (MCP server {server})",
        argument_hint=hint,
        prompt=McpPromptSpec(
            server=server,
            prompt=prompt.name,
            arguments=tuple(a.name for a in arguments),
            required=tuple(a.name for a in arguments if a.required),
        ),
    )


def offer_prompts(controller: Controller, server: McpServer) -> None:
    """The server's prompts as they are now, in the catalog (its earlier list replaced)."""
    controller.commands.set_prompts(
        server.name, [prompt_spec(server.name, prompt) for prompt in server.prompts]
    )
