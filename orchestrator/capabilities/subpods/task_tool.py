"""The ``task`` tool: the model delegates a self-contained task to a child pod."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Literal

from pydantic import Field

from orchestrator.adapters.library.agents import family_model
from orchestrator.capabilities.subpods.children import Children
from orchestrator.capabilities.subpods.spec import TaskRefused, child_request
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.config.model import PodConfig
from orchestrator.config.permissions import Mode


class TaskArgs(ToolArgs):
    """``task``'s arguments."""

    prompt: str = Field(
        description="The whole task, self-contained: the child sees nothing of this "
        "conversation. Say what to do, what to report back, and any constraints."
    )
    name: str = Field(description="A short name for the child (a few words, e.g. 'run-tests').")
    agent: str | None = Field(None, description="A configured agent to run the task as.")
    tools: list[str] | None = Field(
        None, description="Only these tools for the child (names; default: all of yours)."
    )
    permission_mode: Literal["read-only", "default", "accept-edits", "yolo"] | None = Field(
        None, description="The child's permission mode; never wider than yours (default: yours)."
    )
    model: str | None = Field(None, description="The child's model (default: yours).")
    isolation: Literal["shared", "worktree"] = Field(
        "shared",
        description="'shared' works in this workspace; 'worktree' in a copy of its own, "
        "whose diff is reported (your files stay untouched).",
    )


class TaskTool(TypedTool[TaskArgs]):
    """Run a task in a child pod and return its answer and what it did."""

    name = "task"
    claude_code_name = "Task"
    acp_kind = "other"
    side_effects = True
    """The child may change the workspace: the round is checkpointed first."""
    kind = "read"
    """For permissions the call itself decides nothing: each call of the child is decided by
    the child's own rules, which are never wider than this pod's."""
    resumable = True
    """A paused or crashed call is resumed (the same child), not closed: the child's
    :class:`~orchestrator.adapters.session.ChildRecord` is its write-ahead record."""
    args_model = TaskArgs

    def __init__(self, config: PodConfig, children: Children) -> None:
        self.config = config
        self.children = children
        self.live_mode: Callable[[], Mode] | None = None
        """This pod's permission mode now (a person may switch it): a child never gets more."""
        self.resolve_model: Callable[[str], Awaitable[str]] | None = None
        """A model family (``sonnet``, from an agent file) to the id it means now; the
        fallback table when unset."""
        limits = config.subpods
        self.description = (
            "Delegate a self-contained task to a child pod: a new agent with a conversation of "
            "its own, working in this workspace (or in a worktree of its own), with your "
            "tools and permissions or fewer. Use it for independent work that would fill your "
            "context (searching a codebase, running and fixing tests, a review). Several task "
            f"calls in one response run concurrently ({limits.max_children} at once). The "
            "result is the child's final answer and what it did (tools, files, tokens)."
        )
        overrides: dict[str, dict[str, object]] = {}
        if config.agents:
            listed = "; ".join(
                f"{name}: {agent.description}" if agent.description else name
                for name, agent in sorted(config.agents.items())
            )
            overrides["agent"] = {
                "enum": sorted(config.agents),
                "description": f"A configured agent to run the task as ({listed}).",
            }
        super().__init__(schema_overrides=overrides)

    async def execute(self, args: TaskArgs, ctx: ToolContext) -> ToolOutput:
        """Start (or resume) the call's child and wait for its answer."""
        try:
            request = child_request(
                self.config,
                prompt=args.prompt,
                name=args.name,
                tools=args.tools,
                mode=args.permission_mode,
                model=args.model,
                isolation=args.isolation,
                agent=args.agent,
                live_mode=self.live_mode() if self.live_mode is not None else None,
            )
        except TaskRefused as exc:
            raise ToolError(str(exc)) from None
        if request.model is not None:
            resolve = self.resolve_model
            model = await resolve(request.model) if resolve else family_model(request.model)
            request = dataclasses.replace(request, model=model)
        if not ctx.call_id:
            raise ToolError("task needs the call's id (run it through the pod's tool runner)")
        try:
            return await self.children.run(ctx.call_id, request, ctx.partial)
        except TaskRefused as exc:
            raise ToolError(str(exc)) from None

    async def aclose(self) -> None:
        """Stop every child (the pod stops)."""
        await self.children.aclose()
