"""``todo_write``: the model keeps its plan of the work as a list the pod remembers.

Claude Code's ``TodoWrite`` shape, so models trained on it use it well: ``todos`` is the whole
new list, each item ``{content, status, activeForm?}``. ``activeForm`` is Claude Code's
spelling and the one the schema advertises (hooks written for Claude Code read the call
unchanged); ``active_form``, the pod's own spelling (its protocol and session file), is
accepted too. At most one item is ``in_progress``.

The tool changes nothing but the pod's own state, so for permissions it is a read: it never
asks and runs in every mode. The list itself is kept by a :class:`TodoKeeper` (the runtime's
board), which writes the synced ``todos`` record before the call's result is committed.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)
from pydantic_core import ErrorDetails

from orchestrator.adapters.session import SessionWriteError
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.core.todos import MAX_TODO_CHARS, MAX_TODOS, Todo, render_todos

__all__ = ["TODO_WRITE_SCHEMA", "TodoItemArgs", "TodoKeeper", "TodoWriteArgs", "TodoWriteTool"]

Text = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TODO_CHARS)
]

_STATUSES = ("pending", "in_progress", "completed")


class TodoItemArgs(BaseModel):
    """One item of ``todo_write``'s list."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    content: Text
    status: Literal["pending", "in_progress", "completed"]
    active_form: Text | None = Field(
        None, validation_alias=AliasChoices("activeForm", "active_form")
    )


class TodoWriteArgs(ToolArgs):
    """``todo_write``'s arguments: the whole new list."""

    todos: list[TodoItemArgs] = Field(max_length=MAX_TODOS)

    @field_validator("todos")
    @classmethod
    def _one_in_progress(cls, todos: list[TodoItemArgs]) -> list[TodoItemArgs]:
        working = [i for i, t in enumerate(todos) if t.status == "in_progress"]
        if len(working) > 1:
            where = ", ".join(f"todos[{i}]" for i in working)
            raise ValueError(
                f"at most one item may be in_progress, got {len(working)} ({where}); "
                "mark the others pending or completed"
            )
        return todos


_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {
            "type": "string",
            "minLength": 1,
            "description": "What to do, in the imperative (e.g. `Run the tests`).",
        },
        "status": {
            "type": "string",
            "enum": list(_STATUSES),
            "description": "pending, in_progress (at most one item) or completed.",
        },
        "activeForm": {
            "type": "string",
            "minLength": 1,
            "description": "The same, as it is being done (e.g. `Running the tests`).",
        },
    },
    "required": ["content", "status"],
    "additionalProperties": False,
}

TODO_WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": (
                f"The whole updated list (it replaces the previous one; at most {MAX_TODOS} items)."
            ),
            "items": _ITEM_SCHEMA,
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}
"""Written out rather than derived: a list of objects is not the flat arguments
:func:`~orchestrator.capabilities.tools.arguments.schema_of` makes, and the bytes must stay
the same in every request (prompt caching)."""


class TodoKeeper(Protocol):
    """Where the list is kept (the runtime's board implements it)."""

    async def write(self, call_id: str, todos: tuple[Todo, ...]) -> None:
        """Make ``todos`` the list: its record synced, clients told. Raises
        :class:`SessionWriteError` when the disk refuses it (the list is then unchanged)."""
        ...


class TodoWriteTool(TypedTool[TodoWriteArgs]):
    """Replace the pod's todo list and read it back."""

    name = "todo_write"
    claude_code_name = "TodoWrite"
    acp_kind = "think"
    side_effects = False
    """It writes only the pod's own state, and writing the same list twice is harmless."""
    kind = "read"
    """Never asks, runs in read-only and plan modes: nothing of the workspace changes."""
    args_model = TodoWriteArgs
    description = (
        "Keep a todo list of the current work: call it with the whole updated list (it "
        "replaces the previous one). Use it for work of three steps or more: write the steps "
        "first, mark one item in_progress before you start it (at most one at a time) and "
        "completed as soon as it is done, add items you discover, drop ones that no longer "
        "apply. The person sees the list as you keep it. Skip it for a single quick step."
    )

    def __init__(self, keeper: TodoKeeper) -> None:
        # Not TypedTool's derived schema: see TODO_WRITE_SCHEMA.
        self.input_schema = TODO_WRITE_SCHEMA
        self.keeper = keeper

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Check the list (a clear error result when it is bad), then keep it."""
        try:
            parsed = TodoWriteArgs.model_validate(args)
        except ValidationError as exc:
            raise ToolError("; ".join(_explain(e) for e in exc.errors()[:5])) from None
        return await self.execute(parsed, ctx)

    async def execute(self, args: TodoWriteArgs, ctx: ToolContext) -> ToolOutput:
        """Keep the list; the result is the list the model now has."""
        todos = tuple(
            Todo(content=t.content, status=t.status, active_form=t.active_form) for t in args.todos
        )
        text = render_todos(todos)
        try:
            await self.keeper.write(ctx.call_id, todos)
        except asyncio.CancelledError:
            # A pause while the record was being synced lands it all the same: the
            # interrupted result says which list the model has.
            ctx.partial.append(f"The list was kept all the same. {text}")
            raise
        except SessionWriteError as exc:
            raise ToolError(f"the list was not saved, it is unchanged: {exc}") from None
        done = sum(1 for t in todos if t.status == "completed")
        return ToolOutput(summary=f"todo_write: {len(todos)} items, {done} completed", content=text)


def _explain(error: ErrorDetails) -> str:
    """One validation error in words, naming the item and field (``todos[2].status``)."""
    loc = error["loc"]
    value = error.get("input")
    if not loc:
        return "the arguments must be a JSON object with a `todos` list"
    where = str(loc[0])
    for part in loc[1:]:
        where += f"[{part}]" if isinstance(part, int) else f".{part}"
    kind = error["type"]
    if kind == "missing":
        return f"missing {where}"
    if kind == "extra_forbidden":
        allowed = "todos" if len(loc) == 1 else "content, status, activeForm"
        return f"unknown field {where}; the fields are: {allowed}"
    if kind == "literal_error":
        return f"{where} must be one of {', '.join(_STATUSES)}, got {_shown(value)}"
    if kind == "string_too_short":
        return f"{where} must not be empty"
    if kind == "string_too_long":
        return f"{where} is longer than {MAX_TODO_CHARS} characters"
    if kind == "too_long":
        return f"{where} has more than {MAX_TODOS} items; keep the list to the plan"
    if kind == "string_type":
        return f"{where} must be a string, got {_type(value)}"
    if kind == "list_type":
        return f"{where} must be a list of items, got {_type(value)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{where} must be an object {{content, status, activeForm?}}, got {_type(value)}"
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"]))
    return f"{where}: {error['msg']}"


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:60]}…"
