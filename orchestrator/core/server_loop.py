"""The API's own tool loop in the history: what is still open, and how it is closed.

A ``server_tool_use`` (web search, web fetch) is answered by the API, never by the pod. It
may be left without its result in two cases only (the rules are in
:mod:`orchestrator.core.server_pairing`):

* the response stopped with ``pause_turn``: the pod sends the conversation again with that
  content last and the API goes on (:func:`awaits_continuation`);
* the mixed case: the same response called client tools too; the API runs the server call
  when their results arrive, and its result opens the next assistant content.

When the turn is abandoned there (cancel, a new prompt over a paused turn, a limit, a crash
whose turn was closed), the open calls are closed with a synthetic assistant item holding one
error result per call (``…_tool_result_error``, ``error_code`` ``unavailable``: a form the
API takes from a client). On the wire that item merges into the paused assistant message, or
opens the next assistant content after a mixed message's tool results, which is exactly
where the API itself would have put a result. The paused content itself is kept as it is.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace

from orchestrator.core.history import (
    AssistantMessage,
    Block,
    Compaction,
    Item,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    UserMessage,
)
from orchestrator.core.validator import well_formed_tool_use

__all__ = [
    "PAUSE_TURN",
    "OpenServerCalls",
    "awaits_continuation",
    "close_server_calls",
    "closed_loaded_server_calls",
    "closing_message",
    "open_server_calls",
    "server_rules_kept",
    "sound_server_blocks",
    "unopened_results",
]

PAUSE_TURN = "pause_turn"
"""The stop reason of a response whose server-side loop paused: continue it at once."""

_ERROR_TYPES = {
    "web_search_tool_result": "web_search_tool_result_error",
    "web_fetch_tool_result": "web_fetch_tool_result_error",
}


def awaits_continuation(items: list[Item]) -> bool:
    """Whether the history ends in a response that stopped with ``pause_turn``: the next
    request is its continuation (no new user message, nothing committed in between)."""
    for item in reversed(items):
        if isinstance(item, Compaction):
            continue
        return (
            isinstance(item, AssistantMessage)
            and item.stop_reason == PAUSE_TURN
            and not item.synthetic
        )
    return False


@dataclass(frozen=True, slots=True)
class OpenServerCalls:
    """The server calls the last assistant content left without results."""

    calls: list[ServerToolUseBlock] = field(default_factory=list)
    mixed: bool = False
    """That content called client tools too: the results may open the next assistant content."""
    followed: bool = False
    """Non-assistant items (tool results, notes) follow that content."""

    @property
    def closable(self) -> bool:
        """Whether a closing item appended now lands where the API takes a result."""
        return bool(self.calls) and (self.mixed or not self.followed)


def open_server_calls(items: list[Item]) -> OpenServerCalls:
    """The last assistant content's unanswered server calls (items that merge into one wire
    message count as one content); a user message after it means a new turn: nothing open."""
    group: list[AssistantMessage] = []
    followed = False
    for item in reversed(items):
        if isinstance(item, Compaction):
            continue
        if isinstance(item, AssistantMessage):
            if _is_empty(item):
                continue
            group.append(item)
        elif group:
            break
        elif isinstance(item, UserMessage):
            return OpenServerCalls()
        else:
            followed = True
    answered = {r.tool_use_id for m in group for r in m.server_results}
    calls = [c for m in reversed(group) for c in m.server_calls if c.id not in answered]
    mixed = any(m.tool_uses for m in group)
    return OpenServerCalls(calls=calls, mixed=mixed, followed=followed)


def _is_empty(item: AssistantMessage) -> bool:
    """An assistant item with nothing on the wire (blank text only): no message at all."""
    return all(
        isinstance(b, TextBlock) and b.citations is None and not b.text.strip() for b in item.blocks
    )


def closing_message(calls: list[ServerToolUseBlock]) -> AssistantMessage:
    """A synthetic assistant item answering each call with an ``unavailable`` error result."""
    blocks: list[ServerToolResultBlock] = []
    for call in calls:
        kind = "web_fetch_tool_result" if "fetch" in call.name else "web_search_tool_result"
        content = {"type": _ERROR_TYPES[kind], "error_code": "unavailable"}
        blocks.append(ServerToolResultBlock(type=kind, tool_use_id=call.id, content=content))  # type: ignore[arg-type]
    return AssistantMessage(blocks=list(blocks), synthetic=True)


def unopened_results(items: list[Item], blocks: list[Block]) -> list[ServerToolUseBlock]:
    """Calls a mixed message left open that a new response (``blocks``, about to be
    committed after the tool results) does not answer at its opening, as the API must."""
    state = open_server_calls(items)
    if not (state.mixed and state.followed):
        return []
    opening = _opening_results(AssistantMessage(blocks=blocks))
    return [c for c in state.calls if c.id not in opening]


def sound_server_blocks(
    items: list[Item], blocks: list[Block], *, earlier_ids: Collection[str]
) -> tuple[list[Block], list[str]]:
    """A reply's blocks without server blocks the API would refuse in every later request,
    and one alert line per block dropped.

    Server blocks are the API's and kept byte for byte; but a misbehaving API or proxy that
    sends a call with an id already taken or malformed, or a result answering no call, would
    otherwise make the session unusable. Such a block is dropped before it is committed (a
    dropped call takes its results with it): what is left is what the API would take back.
    """
    state = open_server_calls(items)
    # A continuation's results may come anywhere in the merged message; after a mixed
    # message's tool results only at the opening of this content.
    anywhere = {c.id for c in state.calls} if not state.followed else set()
    opening = {c.id for c in state.calls} if state.followed and state.mixed else set()
    out: list[Block] = []
    calls: set[str] = set()
    answered: set[str] = set()
    dropped: list[str] = []
    at_opening = True
    for block in blocks:
        if isinstance(block, ServerToolUseBlock):
            if (
                not well_formed_tool_use(block.id, block.name, block.input)
                or block.id in earlier_ids
                or block.id in calls
            ):
                dropped.append(f"a server tool call {block.id!r} whose id is malformed or taken")
                continue
            calls.add(block.id)
        elif isinstance(block, ServerToolResultBlock):
            call_id = block.tool_use_id
            known = call_id in calls or call_id in anywhere or (at_opening and call_id in opening)
            if not known or call_id in answered:
                dropped.append(f"a {block.type} for {call_id!r}, which answers no open call")
                continue
            answered.add(call_id)
            out.append(block)
            continue
        if not isinstance(block, (ThinkingBlock, RedactedThinkingBlock)):
            at_opening = False
        out.append(block)
    alerts = [f"the reply held {d}: it was dropped (the API would refuse it)" for d in dropped]
    return out, alerts


def server_rules_kept(
    items: list[Item], blocks: list[Block], earlier_ids: Collection[str]
) -> tuple[list[Block], list[str]]:
    """A reply's blocks as they may be committed after ``items``, and alert lines: server
    blocks the API would refuse dropped (:func:`sound_server_blocks`), and a mixed message's
    call the reply does not answer at its opening closed there, as unavailable (a reply that
    does not would make every later request invalid)."""
    kept, notes = sound_server_blocks(items, blocks, earlier_ids=earlier_ids)
    unopened = unopened_results(items, kept)
    if unopened and kept:
        notes.append("a server tool call got no result: closed as unavailable")
        kept = [*closing_message(unopened).blocks, *kept]
    return kept, notes


def close_server_calls(items: list[Item]) -> AssistantMessage | None:
    """The item that closes the last content's open server calls, when there are any and an
    item appended now can close them (see the module)."""
    state = open_server_calls(items)
    return closing_message(state.calls) if state.closable else None


def closed_loaded_server_calls(
    items: list[Item], *, turn_closed: bool, notes: list[str]
) -> list[Item]:
    """A loaded (repaired) history with every open server call closed where the API wants it.

    Each run of assistant items (one wire message) is checked: its unanswered calls are closed
    at its end unless it also called client tools (then at the start of the next assistant
    content, unless that opens with their results); at the very end they stay open while the
    turn is open (Resume continues them) and are closed when it was closed. Server blocks
    the API would refuse (a result whose call was lost, an id twice) are dropped first, as
    :func:`sound_server_blocks` drops them from a reply. Adds ``seq`` 0 items, as the rest of
    the load repair does.
    """
    out: list[Item] = []
    carried: list[ServerToolUseBlock] = []  # a mixed message's calls, for the next content
    group: list[AssistantMessage] = []

    def end_group(at_end: bool) -> None:
        nonlocal carried
        if not group:
            return
        answered = {r.tool_use_id for m in group for r in m.server_results}
        opened = [c for m in group for c in m.server_calls if c.id not in answered]
        mixed = any(m.tool_uses for m in group)
        if opened and not mixed and not (at_end and not turn_closed):
            _close(opened, group[-1].turn)
            opened = []
        carried = opened if mixed else []
        group.clear()

    def _close(calls: list[ServerToolUseBlock], turn: int) -> None:
        out.append(replace(closing_message(calls), turn=turn))
        ids = ", ".join(c.id for c in calls)
        notes.append(f"server tool call(s) {ids} had no result: closed as unavailable")

    seen: set[str] = set()  # every call id so far, client and server (one id space)
    for item in items:
        if isinstance(item, AssistantMessage) and not _is_empty(item):
            # A lost or garbled line can leave a result whose call is gone, or an id twice.
            blocks, dropped = sound_server_blocks(out, item.blocks, earlier_ids=seen)
            if dropped:
                notes.extend(f"item {item.seq}: {line}" for line in dropped)
                item = replace(item, blocks=blocks)
                if _is_empty(item):
                    continue
            seen.update(c.id for c in item.tool_uses)
            seen.update(c.id for c in item.server_calls)
        if isinstance(item, Compaction) or (isinstance(item, AssistantMessage) and _is_empty(item)):
            pass  # no wire content of its own
        elif isinstance(item, AssistantMessage):
            if not group and carried:
                opening = _opening_results(item)
                missing = [c for c in carried if c.id not in opening]
                if missing:
                    # Into the item itself, at its opening (as a reply is fixed at commit):
                    # a separate item there would read, on the next load, as a group of its
                    # own that the item's own opening results no longer belong to.
                    closing = closing_message(missing).blocks
                    item = replace(item, blocks=[*closing, *item.blocks])
                    ids = ", ".join(c.id for c in missing)
                    notes.append(f"server tool call(s) {ids} had no result: closed as unavailable")
                carried = []
            group.append(item)
        else:
            end_group(at_end=False)
        out.append(item)
    end_group(at_end=True)
    if carried and turn_closed:
        _close(carried, out[-1].turn if out else 0)
    return out


def _opening_results(item: AssistantMessage) -> set[str]:
    """The ids the server results at the opening of a message answer (thinking may precede)."""
    ids: set[str] = set()
    for block in item.blocks:
        if isinstance(block, ServerToolResultBlock):
            ids.add(block.tool_use_id)
        elif block.type not in ("thinking", "redacted_thinking"):
            break
    return ids
