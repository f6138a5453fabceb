"""Where a compaction cuts, and which user requests it carries (pure).

:func:`plan_compaction` keeps a recent tail verbatim: the last ``keep_rounds`` tool rounds
whole, then as much more as fits a token budget, cut only at the start of a user or assistant
message, never between a call and its result (client or server), never after a paused turn's
unanswered calls. :func:`carried_requests` names the user requests the kept tail lacks, which
the compaction item then carries verbatim (docs/context.md states the contract).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.core.history import AssistantMessage, Item, UserMessage
from orchestrator.core.repair import pending_tool_calls
from orchestrator.core.tokens import estimate_message, estimate_text
from orchestrator.core.wire import to_wire

__all__ = [
    "FIRST_REQUEST_CHARS",
    "LATEST_REQUEST_CHARS",
    "CompactionPlan",
    "carried_requests",
    "item_tokens",
    "plan_compaction",
]


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What a compaction summarises and what it keeps verbatim."""

    summarised: list[Item]
    kept: list[Item]
    kept_rounds: int = 0
    """Whole tool rounds (an assistant message that called tools, with its results) kept."""

    @property
    def first_seq(self) -> int:
        return self.summarised[0].seq

    @property
    def last_seq(self) -> int:
        return self.summarised[-1].seq


def item_tokens(item: Item) -> int:
    """Estimated tokens of one item as the model reads it."""
    messages = to_wire([item])
    return sum(estimate_message(m) for m in messages) or estimate_text(getattr(item, "text", ""))


def plan_compaction(
    body: list[Item],
    *,
    keep_tokens: int,
    keep_rounds: int = 0,
    rounds_ceiling: int | None = None,
    tokens: Callable[[Item], int] = item_tokens,
) -> CompactionPlan | None:
    """Where to cut the view's body (the view without an earlier summary); None: nothing to do.

    The kept part starts at a user or assistant message and holds at least the last
    ``keep_rounds`` tool rounds whole (an assistant message with its thinking and calls, and
    their results), even over ``keep_tokens`` (but not over ``rounds_ceiling``: rounds that
    would fill the window are no use to keep); then it grows while it fits ``keep_tokens``.
    At least the last such message is kept. A paused turn's unanswered calls are always
    kept, with the message that made them, and a server call never without its result. Only
    the kept tail is sized, so planning costs the same on a history of ten items or ten
    thousand.
    """
    pairs = _ServerPairs()
    latest = _last_cut(body, pairs)
    if latest is None:
        return None
    must = _rounds_start(body, keep_rounds)
    cut = latest
    size = sum(tokens(item) for item in body[latest:])
    for i in range(latest - 1, 0, -1):
        size += tokens(body[i])
        over_ceiling = rounds_ceiling is not None and size > rounds_ceiling
        if size > keep_tokens and (cut <= must or over_ceiling):
            break
        pairs.add(body[i])
        if isinstance(body[i], UserMessage | AssistantMessage) and pairs.whole:
            cut = i
    kept = body[cut:]
    return CompactionPlan(
        summarised=body[:cut], kept=kept, kept_rounds=sum(1 for i in kept if _is_round(i))
    )


def _is_round(item: Item) -> bool:
    return isinstance(item, AssistantMessage) and bool(item.tool_uses or item.server_calls)


def _rounds_start(body: list[Item], rounds: int) -> int:
    """The index of the assistant message opening the last ``rounds`` tool rounds (the
    body's end when none are asked for; its earliest round when it has fewer)."""
    start = len(body)
    for i in range(len(body) - 1, -1, -1):
        if rounds <= 0:
            break
        if _is_round(body[i]):
            start, rounds = i, rounds - 1
    return start


class _ServerPairs:
    """The server calls and results of a kept tail grown backwards: a tail may only start
    where none of its results answers a call left in the summarised part (a ``pause_turn``
    continuation, or a mixed message's result opening the next content)."""

    def __init__(self) -> None:
        self.calls: set[str] = set()
        self.results: set[str] = set()

    def add(self, item: Item) -> None:
        if isinstance(item, AssistantMessage):
            self.calls.update(c.id for c in item.server_calls)
            self.results.update(r.tool_use_id for r in item.server_results)

    @property
    def whole(self) -> bool:
        return self.results <= self.calls


def _last_cut(body: list[Item], pairs: _ServerPairs) -> int | None:
    """The latest index the kept part may start at (a user or assistant message, not the
    first item; never after a paused turn's message with unanswered calls, never between a
    server call and its result); ``pairs`` is left holding the tail from there."""
    pending = bool(pending_tool_calls(body))
    for i in range(len(body) - 1, 0, -1):
        item = body[i]
        pairs.add(item)
        if not pairs.whole:
            continue
        if isinstance(item, AssistantMessage):
            return i  # the last assistant message: with its calls, answered or not
        if isinstance(item, UserMessage) and not pending:
            return i
    return None


FIRST_REQUEST_CHARS = 2_000
"""Cap on the session's first request carried past a compaction: it orients (what the
session is for) but is sent again with every later request, so a long paste costs every
turn; 2,000 characters (about 500 tokens) hold a task statement and stay small beside the
kept tail."""
LATEST_REQUEST_CHARS = 20_000
"""Cap on the latest request carried past a compaction: it is the task at hand, so far more
of it is kept, but a pasted log must not refill the window the compaction just emptied."""


def carried_requests(
    first: UserMessage | None, latest: UserMessage | None, plan: CompactionPlan
) -> list[str]:
    """The user requests a compaction carries verbatim (capped) because its kept part lacks
    them: the session's ``latest`` request, and its ``first`` if that is another one."""
    kept_from = plan.kept[0].seq if plan.kept else plan.last_seq + 1
    out: list[str] = []
    if first is not None and first.seq < kept_from and (latest is None or first.seq != latest.seq):
        out.append(_request_note("The session's first request", first.text, FIRST_REQUEST_CHARS))
    if latest is not None and latest.seq < kept_from:
        out.append(_request_note("The latest user request", latest.text, LATEST_REQUEST_CHARS))
    return out


def _request_note(label: str, text: str, cap: int) -> str:
    if len(text) > cap:
        text = f"{text[:cap]}\n[… {len(text) - cap:,} more characters cut]"
    return f"[{label}, verbatim]\n{text}"
