"""The API's rules for its own tools (web search, web fetch) in a request, as pure checks.

The validator (:mod:`orchestrator.core.validator`) runs these on each message; they are kept
apart because they pair blocks across messages in a way client tools do not:

``server_result_orphan``        a server result answers a ``server_tool_use`` earlier in the
                                same assistant message, or one left open by the mixed case
                                (below), and then only at the opening of the next assistant
                                content. The API words it "unexpected `tool_use_id` found in
                                `web_search_tool_result` blocks: … Each `web_search_tool_result`
                                block must have a corresponding `server_tool_use` block before it."
``duplicate_server_result``     a server call is answered once
``server_result_mismatch``      a ``web_search`` call is answered by a ``web_search_tool_result``,
                                a ``web_fetch`` call by a ``web_fetch_tool_result``
``unanswered_server_tool_use``  a ``server_tool_use`` has its result after it, in the same
                                assistant message, except (1) in the last message of the request
                                (a ``pause_turn`` continuation: the API goes on from there) and
                                (2) in the mixed case: the message also calls client tools, the
                                API runs the server call once their results arrive, and its
                                result must then open the next assistant content. The API words
                                it "`web_search` tool use was found without a corresponding
                                `web_search_tool_result` block".
``bad_server_tool_use``         a ``server_tool_use`` has an id of the API's characters, a name
                                and an object input
``tool_result_for_server_tool`` a client ``tool_result`` never answers a ``srvtoolu_`` call

What the results hold (``encrypted_content``, citations' ``encrypted_index``) is the API's to
judge: the pod sends them back byte for byte and never looks inside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RESULT_TYPE_OF",
    "SERVER_BLOCK_TYPES",
    "SERVER_RESULT_TYPES",
    "ServerCall",
    "ServerPairing",
    "result_type_for",
    "unanswered_problem",
]

SERVER_RESULT_TYPES = frozenset({"web_search_tool_result", "web_fetch_tool_result"})
"""The result blocks of the server tools the pod declares."""

SERVER_BLOCK_TYPES = SERVER_RESULT_TYPES | {"server_tool_use"}
"""Every block of the API's own tool loop (assistant messages only)."""

RESULT_TYPE_OF = {"web_search": "web_search_tool_result", "web_fetch": "web_fetch_tool_result"}
"""Which result block answers a server tool, by the tool's name."""

_ID = re.compile(r"[A-Za-z0-9_-]+\Z")


def result_type_for(name: str) -> str:
    """The result block type answering a server call named ``name`` (a search's by default:
    the pod declares only search and fetch)."""
    return RESULT_TYPE_OF.get(
        name, "web_fetch_tool_result" if "fetch" in name else "web_search_tool_result"
    )


@dataclass(frozen=True, slots=True)
class ServerCall:
    """A ``server_tool_use`` still waiting for its result: its id and tool name."""

    id: str
    name: str


@dataclass(slots=True)
class ServerPairing:
    """The server blocks of one assistant message, checked in order.

    ``carried`` are the calls a mixed message left open two messages back; their results may
    only open this message (thinking may come first). What is left in :attr:`open` at the end
    is this message's unanswered calls.
    """

    index: int
    seen_ids: set[str]
    carried: list[ServerCall] = field(default_factory=list)
    open: list[ServerCall] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    """Every server call id of the message (the conversation's ids must be unique)."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    _answered: set[str] = field(default_factory=set)
    _opening: bool = True

    def block(self, block: dict[str, Any]) -> None:
        """Check one block of the message (every block, in order)."""
        kind = block.get("type")
        if kind == "server_tool_use":
            self._call(block)
        elif kind in SERVER_RESULT_TYPES:
            self._result(str(kind), block)
            return
        if kind not in ("thinking", "redacted_thinking"):
            self._opening = False
            self._close_carried()

    def finish(self) -> None:
        """The message is over: carried calls it did not answer at its opening are unanswered."""
        self._close_carried()

    def _close_carried(self) -> None:
        for call in self.carried:
            if call.id not in self._answered:
                self.problems.append(
                    (
                        "unanswered_server_tool_use",
                        f"`{call.name}` tool use {call.id} was found without a corresponding "
                        f"`{result_type_for(call.name)}` block: in a message that also called "
                        "client tools, its result must open the next assistant content",
                    )
                )
        self.carried = []

    def _call(self, block: dict[str, Any]) -> None:
        call_id, name = block.get("id"), block.get("name")
        if not (
            isinstance(call_id, str)
            and _ID.match(call_id)
            and isinstance(name, str)
            and name
            and isinstance(block.get("input"), dict)
        ):
            self.problems.append(
                (
                    "bad_server_tool_use",
                    f"server_tool_use {call_id!r} ({name!r}) needs an id of letters, digits, "
                    "'_' and '-', a name and an object input",
                )
            )
            return
        if call_id in self.seen_ids:
            self.problems.append(("duplicate_tool_use_id", f"tool_use id {call_id} repeats"))
        self.seen_ids.add(call_id)
        self.ids.append(call_id)
        self.open.append(ServerCall(call_id, name))

    def _result(self, kind: str, block: dict[str, Any]) -> None:
        call_id = str(block.get("tool_use_id"))
        if call_id in self._answered:
            self.problems.append(
                ("duplicate_server_result", f"server tool use {call_id} is answered twice")
            )
            return
        pool = self.open + (self.carried if self._opening else [])
        call = next((c for c in pool if c.id == call_id), None)
        if call is None:
            self.problems.append(
                (
                    "server_result_orphan",
                    f"unexpected `tool_use_id` found in `{kind}` blocks: {call_id}. Each "
                    f"`{kind}` block must have a corresponding `server_tool_use` block before it",
                )
            )
            return
        self._answered.add(call_id)
        if call in self.open:
            self.open.remove(call)
        expected = RESULT_TYPE_OF.get(call.name)
        if expected is not None and expected != kind:
            self.problems.append(
                (
                    "server_result_mismatch",
                    f"`{call.name}` tool use {call_id} is answered by a `{kind}` block "
                    f"(it takes a `{expected}` block)",
                )
            )


def unanswered_problem(calls: list[ServerCall]) -> tuple[str, str]:
    """The violation of an assistant message whose server calls are left without results
    while the conversation goes on (neither the last message nor the mixed case)."""
    first = calls[0]
    more = f" (and {len(calls) - 1} more)" if len(calls) > 1 else ""
    return (
        "unanswered_server_tool_use",
        f"`{first.name}` tool use {first.id}{more} was found without a corresponding "
        f"`{result_type_for(first.name)}` block",
    )
