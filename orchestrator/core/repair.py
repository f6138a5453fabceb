"""History surgery as pure functions over item lists.

The lifecycle machine's actions call these; each returns the items to append (history is
append-only), is deterministic, and is idempotent: applying its output and calling it again
yields nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from orchestrator.core.history import (
    INTERRUPT_NOTE,
    INTERRUPTED_SUMMARY,
    SERVER_BLOCKS,
    THINKING_BLOCKS,
    AssistantMessage,
    Compaction,
    Item,
    ServerToolResultBlock,
    ServerToolUseBlock,
    SystemMessage,
    TextBlock,
    ToolResult,
    ToolUseBlock,
)
from orchestrator.core.server_loop import close_server_calls, closed_loaded_server_calls
from orchestrator.core.tool_output import ToolOutput, cap_content
from orchestrator.core.validator import well_formed_tool_use


def pending_tool_calls(items: list[Item]) -> list[ToolUseBlock]:
    """Tool calls of the last assistant message that have no result yet, in call order."""
    answered: set[str] = set()
    for item in reversed(items):
        if isinstance(item, ToolResult):
            answered.add(item.call_id)
        elif isinstance(item, AssistantMessage):
            return [call for call in item.tool_uses if call.id not in answered]
    return []


def close_orphans(items: list[Item]) -> list[ToolResult | AssistantMessage]:
    """One synthetic ``[Interrupted by user]`` result (no content) per unanswered tool call,
    then one synthetic assistant item closing the server calls left open (a paused
    ``pause_turn`` loop, or a mixed message whose server call the API never ran): see
    :mod:`orchestrator.core.server_loop`. Client results come first: a mixed message's server
    results may only open the assistant content after them."""
    results: list[ToolResult | AssistantMessage] = [
        ToolResult(call_id=call.id, summary=INTERRUPTED_SUMMARY, content=None, synthetic=True)
        for call in pending_tool_calls(items)
    ]
    closing = close_server_calls([*items, *results])
    if closing is not None:
        results.append(closing)
    return results


def close_denied_calls(items: list[Item], denials: dict[str, str]) -> list[ToolResult]:
    """Results for unanswered calls a ``PreToolUse`` hook had denied before the pod stopped
    (its record was on disk, the result was not): the call stays denied, never run."""
    return [
        ToolResult(
            call_id=call.id,
            summary=f"denied: a PreToolUse hook blocked this call: {denials[call.id] or 'no reason'}",
            is_error=True,
        )
        for call in pending_tool_calls(items)
        if call.id in denials
    ]


def interrupt_note() -> SystemMessage:
    """The note that tells the model the previous turn was cut short by the user."""
    return SystemMessage(text=INTERRUPT_NOTE, origin="interrupt")


def prune_before_turn(current_turn: int, keep_turns: int | None) -> int:
    """Tool results of turns below this number send their summary only (0: prune nothing).

    ``keep_turns`` is how many of the most recent turns keep their tool content; None or a
    value below 1 turns pruning off.
    """
    if keep_turns is None or keep_turns < 1:
        return 0
    return max(0, current_turn - keep_turns + 1)


def prunable_tokens(items: list[Item], before_turn: int) -> int:
    """Estimated tokens that pruning at ``before_turn`` removes (``len(content) / 4``)."""
    return sum(
        len(item.content) // 4
        for item in items
        if isinstance(item, ToolResult) and item.content is not None and item.turn < before_turn
    )


MAX_REQUEST_IMAGES = 100
"""Images the API takes in one request (documented for the 200k-token models)."""
MAX_REQUEST_PDF_PAGES = 100
"""PDF pages the API takes in one request."""


def unpruned_media(items: list[Item], before_turn: int) -> tuple[int, int]:
    """The images and PDF pages tool results still send with the prune bound at
    ``before_turn`` (a pruned result sends its summary only)."""
    images = pages = 0
    for item in items:
        if isinstance(item, ToolResult) and item.turn >= before_turn:
            images += len(item.images)
            pages += sum(document.pages for document in item.documents)
    return images, pages


def media_bound(items: list[Item], before_turn: int, current_turn: int) -> int | None:
    """The lowest prune bound above ``before_turn`` under which the tool results send no
    more images and PDF pages than one request may carry, when the present bound sends too
    many (the API would refuse every request); None when within limits, or when only the
    current turn's own results are over (nothing earlier can be pruned to make room)."""
    bound = before_turn
    while bound <= current_turn:
        images, pages = unpruned_media(items, bound)
        if images <= MAX_REQUEST_IMAGES and pages <= MAX_REQUEST_PDF_PAGES:
            return bound if bound > before_turn else None
        bound += 1
    return None


CRASH_SUMMARY = "[Interrupted by a pod crash]"


@dataclass(frozen=True, slots=True)
class CrashedCall:
    """What is known of a call that was running when the pod died."""

    call_id: str
    name: str
    ran_for_s: float
    """From its start to the pod's last sign of life (the session or its output file): how
    long it ran at least."""
    output: str | None = None
    """Output captured before the crash (a prefix of it), if any was."""
    output_bytes: int = 0
    """How much output there was in all."""


def close_crashed_calls(
    items: list[Item], crashed: dict[str, CrashedCall], *, max_bytes: int
) -> list[ToolResult]:
    """A truthful result for each unanswered call that had started when the pod died.

    Only calls with a write-ahead record are in ``crashed``; the others never started and stay
    pending, so Resume runs them. A crashed call is never run again: it may have done its work.
    """
    results: list[ToolResult] = []
    for call in pending_tool_calls(items):
        info = crashed.get(call.id)
        if info is None:
            continue
        # The pod's last sign of life is its last write, not its death: the call may have
        # run much longer than that, so the figure is a lower bound, said as one.
        ran = (
            f"it had run for at least {info.ran_for_s:.1f} s"
            if info.ran_for_s >= 0.1
            else "how long it ran is not known"
        )
        summary = (
            f"{CRASH_SUMMARY} {call.name} was still running when the pod stopped ({ran}); "
            "it may have run partly or completely. It was not run again: check its effects "
            "before repeating it."
        )
        if info.output:
            dropped = info.output_bytes - len(info.output.encode("utf-8"))
            content = f"Output captured before the crash:\n{info.output}"
            if dropped > 0:
                content += f"\n[{dropped} more bytes of output were captured but are not shown]"
        else:
            content = "No output was captured before the crash."
        output = cap_content(ToolOutput(summary=summary, content=content, is_error=True), max_bytes)
        results.append(
            ToolResult(
                call_id=call.id,
                summary=output.summary,
                content=output.content,
                is_error=True,
                synthetic=True,
            )
        )
    return results


LOST_RESULT_SUMMARY = "[Result lost: the session file was damaged]"
LOST_START_NOTE = "[Earlier messages of this conversation were lost: the session file was damaged]"


@dataclass(frozen=True, slots=True)
class LoadRepair:
    """A loaded history made wire-valid, and what was changed to get there."""

    items: list[Item]
    notes: list[str]
    """One line per change, for an alert."""


def repair_loaded(items: list[Item], *, turn_closed: bool) -> LoadRepair:
    """Make a history read from a damaged session file wire-valid again.

    Lines can be missing, repeated, swapped or garbled. Items are put back in ``seq`` order;
    a malformed tool call is dropped from its message; a result that answers no open call is
    dropped; a call left without a result gets a synthetic one saying it was lost; and a
    history that no longer starts with the user gets a note saying what is missing. Items the
    repair adds are not in the file: they carry ``seq`` 0 and are derived again at each load.
    Calls still open at the end stay open when the last turn never closed (Resume runs them).
    Deterministic and idempotent.
    """
    notes: list[str] = []
    keys = _seq_keys(items)
    ordered = sorted(items, key=lambda item: keys[id(item)])
    if ordered != items:
        notes.append("items were out of order and have been put back in sequence")
    out: list[Item] = []
    seen_ids: set[str] = set()
    open_calls: list[ToolUseBlock] = []
    answered: set[str] = set()

    def close_open() -> None:
        for call in open_calls:
            if call.id not in answered:
                out.append(_lost_result(call, out))
                notes.append(f"tool call {call.id} ({call.name}) had no result: marked as lost")
        open_calls.clear()
        answered.clear()

    last_turn = 0
    for original in ordered:
        item = original
        if item.turn < last_turn:
            # Turns only grow along a history (pruning relies on it); a garbled one is raised.
            item = replace(item, turn=last_turn)
            notes.append(f"item {item.seq}: its turn number was out of order and was raised")
        last_turn = item.turn
        if isinstance(item, AssistantMessage):
            close_open()
            fixed = _well_formed(item, seen_ids, notes)
            if fixed is None:
                continue
            if not out:
                out.append(SystemMessage(text=LOST_START_NOTE, origin="repair", turn=fixed.turn))
                notes.append("the conversation no longer started with the user: a note says so")
            out.append(fixed)
            open_calls.extend(fixed.tool_uses)
        elif isinstance(item, ToolResult):
            if any(c.id == item.call_id for c in open_calls) and item.call_id not in answered:
                answered.add(item.call_id)
                out.append(item)
            else:
                notes.append(
                    f"item {item.seq}: a result for {item.call_id} that answers no open call was dropped"
                )
        elif not item.text.strip():
            notes.append(f"item {item.seq}: an empty {item.kind} was dropped")
        else:
            out.append(item)
    if turn_closed:
        close_open()
    out = closed_loaded_server_calls(out, turn_closed=turn_closed, notes=notes)
    out = _compactions_cut_at_messages(out, notes)
    return LoadRepair(items=out if notes else items, notes=notes)


def _compactions_cut_at_messages(items: list[Item], notes: list[str]) -> list[Item]:
    """Compactions whose kept part starts at a message, never at a tool result.

    A compaction's view keeps the items after ``last_seq`` verbatim; a damaged ``last_seq``
    that falls between a call and its result would send the result without its call. The
    range is moved back to before the assistant message that made the call (the summary then
    overlaps a little with what is kept, which costs tokens, not validity); a compaction left
    with nothing to summarise is dropped, and the full history is sent until the next one.
    """
    out: list[Item] = []
    for index, item in enumerate(items):
        if not isinstance(item, Compaction):
            out.append(item)
            continue
        earlier = items[:index]
        kept = next((i for i, e in enumerate(earlier) if e.seq > item.last_seq), None)
        first = earlier[kept] if kept is not None else None
        split = set(server_results_answering_before(earlier, kept)) if kept is not None else set()
        if kept is None or not (isinstance(first, ToolResult) or split):
            out.append(item)
            continue
        call_ids = {first.call_id} if isinstance(first, ToolResult) else split
        maker = next(
            (
                e
                for e in reversed(earlier[:kept])
                if isinstance(e, AssistantMessage)
                and (
                    any(c.id in call_ids for c in e.tool_uses)
                    or any(c.id in call_ids for c in e.server_calls)
                )
            ),
            None,
        )
        last_seq = maker.seq - 1 if maker is not None else item.first_seq - 1
        if last_seq < item.first_seq:
            notes.append(
                f"item {item.seq}: a compaction whose range split a tool call from its result "
                "was dropped; the next request compacts again"
            )
            continue
        notes.append(
            f"item {item.seq}: a compaction's range split a tool call from its result; it now "
            f"ends at item {last_seq}"
        )
        out.append(replace(item, last_seq=last_seq))
    return out


def server_results_answering_before(items: list[Item], start: int) -> list[str]:
    """Server results in the assistant content at ``start`` (the items that merge into one
    wire message) that answer a call made before ``start``: a view starting there would send
    a result without its call."""
    calls: set[str] = set()
    out: list[str] = []
    for item in items[start:]:
        if isinstance(item, Compaction):
            continue
        if not isinstance(item, AssistantMessage):
            break
        for block in item.blocks:
            if isinstance(block, ServerToolUseBlock):
                calls.add(block.id)
            elif isinstance(block, ServerToolResultBlock) and block.tool_use_id not in calls:
                out.append(block.tool_use_id)
    return out


def _seq_keys(items: list[Item]) -> dict[int, int]:
    """Sort keys by identity: an item's seq; a repair's own (seq 0) stays after its neighbour."""
    keys: dict[int, int] = {}
    last = 0
    for item in items:
        last = item.seq or last
        keys[id(item)] = last
    return keys


def _well_formed(
    item: AssistantMessage, seen_ids: set[str], notes: list[str]
) -> AssistantMessage | None:
    """The message without tool calls the API would refuse (bad or repeated ids)."""
    blocks = []
    for block in item.blocks:
        if isinstance(block, ToolUseBlock):
            if not well_formed_tool_use(block.id, block.name, block.input) or block.id in seen_ids:
                notes.append(f"item {item.seq}: a malformed or repeated tool call was dropped")
                continue
            seen_ids.add(block.id)
        blocks.append(block)
    if not any(
        isinstance(b, ToolUseBlock)
        or (isinstance(b, TextBlock) and (b.text.strip() or b.citations is not None))
        or isinstance(b, THINKING_BLOCKS + SERVER_BLOCKS)
        for b in blocks
    ):
        if item.blocks:
            notes.append(f"item {item.seq}: an assistant message left empty was dropped")
        return None
    return item if len(blocks) == len(item.blocks) else replace(item, blocks=blocks)


def _lost_result(call: ToolUseBlock, out: list[Item]) -> ToolResult:
    turn = out[-1].turn if out else 0
    return ToolResult(
        call_id=call.id, summary=LOST_RESULT_SUMMARY, is_error=True, synthetic=True, turn=turn
    )
