"""The conversation history: an append-only list of items.

Items are frozen dataclasses; the session file and the ``history`` event carry them through
one pydantic adapter (:data:`ITEM_ADAPTER`), so there is a single serialised form.

``seq`` numbers every committed item from 1 and never repeats; ``turn`` is the turn number the
item belongs to (pruning counts turns).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import ConfigDict, Field, TypeAdapter

from orchestrator.core.documents import DocumentData
from orchestrator.core.images import ImageData
from orchestrator.core.segments import Segment, flatten_segments
from orchestrator.core.usage import TokenUsage

INTERRUPTED_SUMMARY = "[Interrupted by user]"
INTERRUPT_NOTE = "[The previous turn was interrupted by the user. The user's next request follows.]"


# -- assistant content blocks ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """Assistant text, with the citations the API attached (a server tool's sources)."""

    type: Literal["text"] = "text"
    text: str
    citations: Annotated[list[dict[str, Any]] | None, Field(exclude_if=lambda v: v is None)] = None
    """The citations exactly as the API sent them (``encrypted_index`` included): they go
    back byte for byte; None when the text cites nothing."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingBlock:
    """Extended thinking; the signature must be sent back unchanged."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactedThinkingBlock:
    """Thinking the API sent encrypted (``data``, opaque); it must be sent back unchanged."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseBlock:
    """A tool call the model made (or a synthetic one the pod injected)."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)


SERVER_TOOL_ID_PREFIX = "srvtoolu_"
"""How the API's ids of server tool calls begin (client calls begin ``toolu_``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolUseBlock:
    """A call the API ran itself (web search, web fetch): the pod never answers it.

    Its result is a :class:`ServerToolResultBlock` in the same assistant content (or, when the
    model also called a client tool, at the start of the next assistant content).
    """

    type: Literal["server_tool_use"] = "server_tool_use"
    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    extra: Annotated[dict[str, Any], Field(exclude_if=lambda v: not v)] = field(
        default_factory=dict
    )
    """Fields the API sent that the pod does not read (``caller``): sent back as they came."""


SERVER_RESULT_TYPES = ("web_search_tool_result", "web_fetch_tool_result")
"""The result blocks of the server tools the pod declares."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolResultBlock:
    """What a server tool returned: its ``content`` is kept exactly as the API sent it.

    The content holds ``encrypted_content`` the API reads back; it is opaque to the pod and
    must come back byte for byte, so it stays the API's JSON rather than a model of it.
    """

    type: Literal["web_search_tool_result", "web_fetch_tool_result"]
    tool_use_id: str
    content: Any
    extra: Annotated[dict[str, Any], Field(exclude_if=lambda v: not v)] = field(
        default_factory=dict
    )
    """Fields the API sent that the pod does not read (``caller``): sent back as they came."""


Block: TypeAlias = Annotated[
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ServerToolUseBlock
    | ServerToolResultBlock,
    Field(discriminator="type"),
]

SERVER_BLOCKS = (ServerToolUseBlock, ServerToolResultBlock)
"""Blocks of the API's own tool loop: kept, sent back and moved only together."""

REDACTED_THINKING = "[redacted thinking: the API sent it encrypted]"
OMITTED_THINKING = '[thinking omitted: the request asked for display "omitted"]'
"""How people are shown thinking they cannot read (the model still gets it back)."""

THINKING_BLOCKS = (ThinkingBlock, RedactedThinkingBlock)
"""Blocks the API signs: sent back exactly as received, never changed, dropped or moved."""


# -- items ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """What the user submitted, with its segments; ``text`` is what the model reads."""

    kind: Literal["user_message"] = "user_message"
    seq: int = 0
    turn: int = 0
    segments: list[Segment] = field(default_factory=list)
    text: str = ""
    request_id: Annotated[str | None, Field(exclude_if=lambda v: v is None)] = None
    """The client request id of the ``run`` that submitted it: a replay of that run is
    answered ``duplicate`` instead of committing it again (``Controller.request_turn``)."""
    model: Annotated[str | None, Field(exclude_if=lambda v: v is None)] = None
    """The model its turn runs on when a custom command chose another (None: the pod's)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """One complete assistant response (partial streams are never committed)."""

    kind: Literal["assistant"] = "assistant"
    seq: int = 0
    turn: int = 0
    blocks: list[Block] = field(default_factory=list)
    stop_reason: str | None = None
    synthetic: bool = False
    usage: Annotated[TokenUsage | None, Field(exclude_if=lambda v: v is None)] = None
    """What the request that produced it cost, as the API reported it (None: synthetic)."""
    model: Annotated[str | None, Field(exclude_if=lambda v: v is None)] = None
    """The model that answered when it was not the pod's own (the fallback model): its usage
    is priced at that model's prices. None: the pod's model."""

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        """The tool calls of this message, in order."""
        return [b for b in self.blocks if isinstance(b, ToolUseBlock)]

    @property
    def server_calls(self) -> list[ServerToolUseBlock]:
        """The server tool calls of this message (the API runs them), in order."""
        return [b for b in self.blocks if isinstance(b, ServerToolUseBlock)]

    @property
    def server_results(self) -> list[ServerToolResultBlock]:
        """The server tool results of this message, in order."""
        return [b for b in self.blocks if isinstance(b, ServerToolResultBlock)]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The answer to one tool call: a summary that always stays and prunable content."""

    kind: Literal["tool_result"] = "tool_result"
    seq: int = 0
    turn: int = 0
    call_id: str
    summary: str
    content: str | None = None
    is_error: bool = False
    synthetic: bool = False
    images: Annotated[list[ImageData], Field(exclude_if=lambda v: not v)] = field(
        default_factory=list
    )
    """Images in the result (an MCP tool's); sent after the text, dropped when pruned."""
    documents: Annotated[list[DocumentData], Field(exclude_if=lambda v: not v)] = field(
        default_factory=list
    )
    """PDFs in the result (an MCP resource's); sent after the images, dropped when pruned."""

    @property
    def wire_text(self) -> str:
        """Summary and content joined as the model sees them."""
        if self.content is None:
            return self.summary
        return f"{self.summary}\n{self.content}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemMessage:
    """A message from the pod to the model: file bodies, notes, the interrupt marker.

    An attached image travels here too: ``text`` names it (``[Image: <path>]``) and ``image``
    is sent as an ``image`` block right after that text.
    """

    kind: Literal["system_message"] = "system_message"
    seq: int = 0
    turn: int = 0
    text: str
    origin: str = "note"
    image: Annotated[ImageData | None, Field(exclude_if=lambda v: v is None)] = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttachedFile:
    """A file read again at compaction time, so the model sees its current text."""

    path: str
    text: str
    """The body as the model reads it (``[File: <path>]`` header included)."""


COMPACTION_HEADER = (
    "[Conversation summary: the earlier part of this conversation was compacted to save "
    "context. The summary follows; the messages after it are kept verbatim.]"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """The history up to ``last_seq`` summarised: the model's view starts here.

    Committed as one item (written whole or not at all); everything it covers stays in the
    history and the session file, only the wire view changes.
    """

    kind: Literal["compaction"] = "compaction"
    seq: int = 0
    turn: int = 0
    summary: str
    first_seq: int
    """The first item the summary covers."""
    last_seq: int
    """The last item the summary covers; items after it are kept verbatim."""
    tokens_before: int
    """Estimated input tokens of the view the summary replaced."""
    tokens_after: int
    """Estimated input tokens of the view that starts here."""
    files: list[AttachedFile] = field(default_factory=list)
    trigger: Literal["auto", "manual", "recovery"] = "auto"
    focus: str | None = None
    usage: Annotated[TokenUsage | None, Field(exclude_if=lambda v: v is None)] = None
    """What the summary request cost."""
    todos: Annotated[str | None, Field(exclude_if=lambda v: v is None)] = None
    """The open todo items when it was made, verbatim (:func:`orchestrator.core.todos.todos_note`)."""
    requests: Annotated[list[str], Field(exclude_if=lambda v: not v)] = field(default_factory=list)
    """User requests the summarised part held, verbatim (capped): the session's first and the
    latest, when they are not in the kept part (each note starts with which one it is)."""
    kept_rounds: Annotated[int, Field(exclude_if=lambda v: v == 0)] = 0
    """Whole tool rounds kept verbatim after it."""
    kept_request: Annotated[bool, Field(exclude_if=lambda v: not v)] = False
    """The latest user request is still read verbatim (kept, or carried in ``requests``)."""
    open_todos: Annotated[int, Field(exclude_if=lambda v: v == 0)] = 0
    """How many todo items ``todos`` lists."""

    @property
    def text(self) -> str:
        """What the model reads in place of the summarised history."""
        parts = [COMPACTION_HEADER, self.summary.strip(), *self.requests]
        if self.todos:
            parts.append(self.todos)
        parts += [f.text for f in self.files]
        return "\n\n".join(parts)


Item: TypeAlias = Annotated[
    UserMessage | AssistantMessage | ToolResult | SystemMessage | Compaction,
    Field(discriminator="kind"),
]
ITEM_ADAPTER: TypeAdapter[Item] = TypeAdapter(Item, config=ConfigDict(defer_build=True))
"""Built on the first item written or read (a pod that only answers status never needs it)."""


def item_to_json(item: Item) -> dict[str, Any]:
    """The serialised form of an item (session file, ``history`` event)."""
    data: dict[str, Any] = ITEM_ADAPTER.dump_python(item, mode="json")
    return data


def encode_item(item: Item) -> bytes:
    """An item's JSON as a session line and the ``history`` event carry it: UTF-8, not
    escaped, except an unpaired surrogate (UTF-8 cannot hold one), written as its ``\\u``
    escape."""
    return json.dumps(item_to_json(item), ensure_ascii=False).encode("utf-8", "backslashreplace")


def item_from_json(data: dict[str, Any] | str | bytes) -> Item:
    """Parse one serialised item; raises ``pydantic.ValidationError`` on a bad record."""
    if isinstance(data, dict):
        return ITEM_ADAPTER.validate_python(data)
    return ITEM_ADAPTER.validate_json(data)


def user_message(segments: list[Segment], *, text: str | None = None) -> UserMessage:
    """A user message whose model-facing text is the flattened segments."""
    return UserMessage(
        segments=list(segments), text=flatten_segments(segments) if text is None else text
    )


# -- the history --------------------------------------------------------------------------------


class History:
    """The committed items of one conversation; append-only, numbered, observable."""

    def __init__(
        self, items: list[Item] | None = None, *, next_seq: int = 1, turn: int = 0
    ) -> None:
        self._items: list[Item] = []
        # Past rewound items too (``next_seq``, ``turn``): numbers are never given twice.
        self._next_seq = next_seq
        self.turn = turn
        self.tool_use_ids: set[str] = set()
        """Every tool_use and server_tool_use id in the history (the API requires them
        unique, the two kinds together)."""
        for item in items or []:
            self._items.append(item)
            self._note_ids(item)
            self._next_seq = max(self._next_seq, item.seq + 1)
            self.turn = max(self.turn, item.turn)

    def _note_ids(self, item: Item) -> None:
        if isinstance(item, AssistantMessage):
            self.tool_use_ids.update(call.id for call in item.tool_uses)
            self.tool_use_ids.update(call.id for call in item.server_calls)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self._items)

    @property
    def items(self) -> list[Item]:
        """The committed items (the list itself; do not mutate it)."""
        return self._items

    def stamp(self, item: Item) -> Item:
        """Give an item its sequence number and the current turn, without committing it."""
        stamped = replace(item, seq=self._next_seq, turn=self.turn)
        self._next_seq += 1
        return stamped

    @property
    def next_seq(self) -> int:
        """The seq the next committed item will get."""
        return self._next_seq

    def append(self, item: Item) -> Item:
        """Commit one item; returns it as stored (with ``seq`` and ``turn``)."""
        return self.add(self.stamp(item))

    def add(self, stored: Item) -> Item:
        """Append an item :meth:`stamp` already numbered (once it is safely on disk)."""
        self._items.append(stored)
        self._note_ids(stored)
        return stored

    def rewind(self, to_seq: int) -> list[Item]:
        """Drop the items from ``to_seq`` on (a rewind); returns them. Numbers go on from
        where they were, and the dropped calls' ids stay taken."""
        keep = next((i for i, item in enumerate(self._items) if item.seq >= to_seq), None)
        if keep is None:
            return []
        dropped, self._items = self._items[keep:], self._items[:keep]
        return dropped

    def extend(self, items: list[Item]) -> list[Item]:
        """Commit several items in order."""
        return [self.append(item) for item in items]

    def new_turn(self) -> int:
        """Start the next turn and return its number."""
        self.turn += 1
        return self.turn
