"""The Messages API's request rules as a pure function.

The rules this encodes (each has a test in ``tests/orchestrator/test_validator.py``):

``first_user``        the first message is from the user
``last_user``         the last message is from the user (we never prefill), or an assistant
                      message holding a ``server_tool_use``: the continuation of a
                      ``pause_turn`` (the API goes on from that content)
``empty_content``     no message has empty content, no text block is empty or blank
``unknown_block``     block types are text / thinking / tool_use / tool_result and the server
                      tools' blocks, role-appropriate
``content_after_tool_use``  in an assistant message nothing but tool_use (or a server tool
                      call, the mixed case) follows a tool_use
``unanswered_tool_use``     each tool_use has a tool_result in the very next (user) message
``results_first``     tool_result blocks come before any other block of their message
``stray_tool_result`` a tool_result answers a tool_use of the immediately previous message
``duplicate_result``  a tool_use is answered once
``duplicate_tool_use_id``   tool_use ids are unique in the conversation
``bad_tool_use``      a tool_use has an id and a name of the API's characters and an object input
``bad_image``         an image block is base64 data of a media type the API takes, or a URL
``bad_document``      a document block is a base64 PDF (``application/pdf``), plain text, a
                      URL, content blocks or a file id (images and documents are checked
                      inside tool results too)
``unsigned_thinking`` a thinking block carries its signature, a redacted_thinking block its data
``thinking_first``    with thinking on, a request that continues a tool loop (its last message
                      holds tool results) has that loop's assistant message start with its
                      thinking, when it has any (a reply may not think: adaptive thinking)

The server tools' rules (``server_tool_use`` and its result paired in one assistant
message, or across a mixed message; never a ``tool_result`` for a ``srvtoolu_`` id) are
listed in :mod:`orchestrator.core.server_pairing`.

Consecutive messages with the same role are merged first, as the API does; the pairing rules
are checked on the merged messages, which is how the API applies them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

from orchestrator.core.history import SERVER_TOOL_ID_PREFIX
from orchestrator.core.media_rules import media_problems
from orchestrator.core.server_pairing import (
    SERVER_BLOCK_TYPES,
    ServerCall,
    ServerPairing,
    unanswered_problem,
)
from orchestrator.errors import PodRuntimeError

TOOL_USE_ID = re.compile(r"[A-Za-z0-9_-]+\Z")
"""The characters the API accepts in a ``tool_use`` id (and so in a result's ``tool_use_id``)."""

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}\Z")
"""The characters and length the API accepts in a tool name."""


def well_formed_tool_use(call_id: object, name: object, tool_input: object) -> bool:
    """Whether the API would accept a ``tool_use`` block with these fields."""
    return (
        isinstance(call_id, str)
        and TOOL_USE_ID.match(call_id) is not None
        and isinstance(name, str)
        and TOOL_NAME.match(name) is not None
        and isinstance(tool_input, dict)
    )


@dataclass(frozen=True, slots=True)
class WireViolation:
    """One broken rule: which, where (message index after merging) and a readable message."""

    rule: str
    index: int
    message: str

    def __str__(self) -> str:
        return f"messages[{self.index}]: {self.message} ({self.rule})"


class WireInvalidError(PodRuntimeError, ValueError):
    """A request that the API would reject; lists every violation."""

    def __init__(self, violations: list[WireViolation]) -> None:
        self.violations = violations
        super().__init__("; ".join(str(v) for v in violations))


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b if isinstance(b, dict) else {"type": "?"} for b in content]
    return []


def merge_same_role(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge neighbours with the same role into one message, as the API does."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        blocks = _blocks(message)
        if merged and merged[-1]["role"] == message.get("role"):
            merged[-1] = {"role": merged[-1]["role"], "content": merged[-1]["content"] + blocks}
        else:
            merged.append({"role": message.get("role"), "content": blocks})
    return merged


_MEDIA_HOLDERS = frozenset({"image", "document", "tool_result"})
"""Blocks that are, or may hold, images and documents (the media rules)."""
_USER_TYPES = frozenset({"text", "tool_result", "image", "document"})
_ASSISTANT_TYPES = (
    frozenset({"text", "thinking", "redacted_thinking", "tool_use"}) | SERVER_BLOCK_TYPES
)


def validate_wire(
    messages: list[dict[str, Any]], *, allow_prefill: bool = False, thinking: bool = False
) -> list[WireViolation]:
    """Every rule the request breaks (``thinking``: the request turns thinking on); an empty
    list means the API would accept it."""
    return IncrementalValidator(allow_prefill=allow_prefill, thinking=thinking).validate(messages)


class IncrementalValidator:
    """:func:`validate_wire` for a conversation that grows at its end.

    Messages already found valid are remembered (the :class:`WireBuilder` reuses the same
    dicts for an unchanged prefix, which makes the comparison a pointer check), so a request
    costs work for the messages that changed, not for the whole history. Any violation clears
    the memory.
    """

    def __init__(self, *, allow_prefill: bool = False, thinking: bool = False) -> None:
        self.allow_prefill = allow_prefill
        self.thinking = thinking
        """Requests turn thinking on: a continued tool loop must start with its thinking."""
        self._checked: list[dict[str, Any]] = []
        self._ids: list[list[str]] = []  # tool_use ids of each checked message
        self._server_ids: list[list[str]] = []  # server_tool_use ids of each checked message
        # Server calls each checked message leaves open for a later one (see _Checked).
        self._open: list[list[ServerCall]] = []
        self._seen: set[str] = set()

    def _forget_from(self, k: int) -> None:
        for ids in self._ids[k:]:
            self._seen.difference_update(ids)
        for ids in self._server_ids[k:]:
            self._seen.difference_update(ids)
        del self._checked[k:]
        del self._ids[k:]
        del self._server_ids[k:]
        del self._open[k:]

    def _unchanged_prefix(self, messages: list[dict[str, Any]]) -> int:
        """How many leading messages equal the remembered ones.

        List equality runs in C and skips identical items first, so checking a prefix costs
        pointer comparisons; a binary search over prefix lengths keeps it O(n) in C, O(log n)
        in Python. Equal-but-new dicts count as unchanged (they get the same verdict).
        """
        checked = self._checked
        lo, hi = 0, min(len(messages), len(checked))
        if messages[:hi] == checked[:hi]:
            return hi
        if hi and messages[: hi - 1] == checked[: hi - 1]:
            return hi - 1  # the usual case: only the last message grew
        while lo < hi:  # invariant: prefix lo matches, prefix hi does not
            mid = (lo + hi + 1) // 2
            if messages[:mid] == checked[:mid]:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def validate(self, messages: list[dict[str, Any]]) -> list[WireViolation]:
        """Every rule the request breaks (see :func:`validate_wire`)."""
        k = self._unchanged_prefix(messages)
        self._forget_from(k)
        # Keep the caller's objects: equal-but-new dicts would cost a deep compare every time.
        self._checked[:k] = messages[:k]
        start = max(k - 1, 0)
        if any(
            messages[i].get("role") == messages[i + 1].get("role")
            for i in range(start, len(messages) - 1)
        ):
            # Neighbours the API would merge: check the merged form, without memory.
            self._forget_from(0)
            return self._check_all(merge_same_role(messages), remember=False)
        return self._check_all(messages, remember=True, first=k)

    def _check_all(
        self, messages: list[dict[str, Any]], *, remember: bool, first: int = 0
    ) -> list[WireViolation]:
        out: list[WireViolation] = []
        if not messages:
            return [WireViolation("empty_content", 0, "a request needs at least one message")]
        if messages[0].get("role") != "user":
            out.append(WireViolation("first_user", 0, "the first message must be from the user"))
        if (
            messages[-1].get("role") != "user"
            and not self.allow_prefill
            and not _continues_server_loop(messages[-1])
        ):
            out.append(
                WireViolation(
                    "last_user", len(messages) - 1, "the last message must be from the user"
                )
            )
        previous = (
            self._ids[first - 1] if first and messages[first - 1].get("role") == "assistant" else []
        )
        left_open = self._open[first - 1] if first else []
        for index in range(first, len(messages)):
            message = messages[index]
            problems, tool_ids, server_ids, left_open = _check_message(
                index, message, previous, left_open, self._seen
            )
            if problems:
                out.extend(problems)
            self._checked.append(message)
            self._ids.append(tool_ids)
            self._server_ids.append(server_ids)
            self._open.append(left_open)
            previous = tool_ids
        if previous:
            out.append(
                WireViolation(
                    "unanswered_tool_use",
                    len(messages) - 1,
                    f"tool_use {', '.join(previous)} has no tool_result after it",
                )
            )
        if self.thinking:
            out.extend(_thinking_first(messages))
        if out or not remember:
            self._forget_from(0)
        return out


def _continues_server_loop(message: dict[str, Any]) -> bool:
    """Whether a last assistant message is a ``pause_turn`` continuation (it holds a server
    call: the API's own loop paused there and goes on from it)."""
    return message.get("role") == "assistant" and any(
        b.get("type") == "server_tool_use" for b in _blocks(message)
    )


_Checked: TypeAlias = tuple[list[WireViolation], list[str], list[str], list[ServerCall]]
"""One message's verdict and what the next message is checked against (a tuple: this runs
for every message of a full check): its problems; its client ``tool_use`` ids and its
``server_tool_use`` ids (an assistant message's); and the server calls a later message must
answer: an assistant message's unanswered calls (the next message decides whether that is
allowed), or, from a user message, those of a mixed message before it, for the next
assistant message to open with."""
_NONE: list[Any] = []
"""Shared empty list for the common case (never mutated)."""


def _check_message(
    index: int,
    message: dict[str, Any],
    previous_tool_uses: list[str],
    left_open: list[ServerCall],
    seen: set[str],
) -> _Checked:
    """Check one message given the previous message's tool calls and open server calls."""
    out: list[WireViolation] = []
    role = message.get("role")
    blocks = _blocks(message)
    if role not in ("user", "assistant"):
        bad = WireViolation("bad_role", index, f"role must be user or assistant: {role!r}")
        return [bad], _NONE, _NONE, _NONE
    if not blocks:
        out.append(WireViolation("empty_content", index, "message content is empty"))
    allowed = _USER_TYPES if role == "user" else _ASSISTANT_TYPES
    server = False
    for block in blocks:
        kind = block.get("type")
        if kind not in allowed:
            out.append(WireViolation("unknown_block", index, f"{kind!r} block in a {role} message"))
        elif kind == "text":
            if not str(block.get("text", "")).strip():
                out.append(WireViolation("empty_content", index, "text block is empty"))
        elif kind in _MEDIA_HOLDERS:
            for rule, text in media_problems(block):
                out.append(WireViolation(rule, index, text))
        elif kind in SERVER_BLOCK_TYPES:
            server = True
    if role == "assistant":
        tool_ids = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
        if not left_open and not server:
            # The common case, kept as cheap as before the server tools.
            out.extend(_check_assistant(index, blocks, seen, None))
            return out, tool_ids, _NONE, _NONE
        pairing = ServerPairing(index=index, seen_ids=seen, carried=list(left_open))
        out.extend(_check_assistant(index, blocks, seen, pairing))
        out.extend(WireViolation(rule, index, text) for rule, text in pairing.problems)
        return out, tool_ids, pairing.ids, pairing.open
    carried: list[ServerCall] = _NONE
    if left_open and previous_tool_uses:
        carried = left_open  # the mixed case: the API runs them once the results arrive
    elif left_open and index:
        rule, text = unanswered_problem(left_open)
        out.append(WireViolation(rule, index - 1, text))
    out.extend(_check_user(index, blocks, previous_tool_uses))
    return out, _NONE, _NONE, carried


def _check_assistant(
    index: int, blocks: list[dict[str, Any]], seen_ids: set[str], pairing: ServerPairing | None
) -> list[WireViolation]:
    out: list[WireViolation] = []
    saw_tool_use = False
    for block in blocks:
        kind = block.get("type")
        if pairing is not None:
            pairing.block(block)
        if kind == "server_tool_use":
            pass  # a call too: it may sit among client calls (the mixed case)
        elif kind == "tool_use":
            saw_tool_use = True
            call_id, name = block.get("id"), block.get("name")
            if not well_formed_tool_use(call_id, name, block.get("input")):
                out.append(
                    WireViolation(
                        "bad_tool_use",
                        index,
                        f"tool_use {call_id!r} ({name!r}) needs an id and a name of letters, "
                        "digits, '_' and '-', and an object input",
                    )
                )
            if call_id in seen_ids:
                out.append(
                    WireViolation("duplicate_tool_use_id", index, f"tool_use id {call_id} repeats")
                )
            seen_ids.add(str(call_id))
        elif saw_tool_use:
            out.append(
                WireViolation(
                    "content_after_tool_use", index, f"{kind!r} block after a tool_use block"
                )
            )
        if (kind == "thinking" and not block.get("signature")) or (
            kind == "redacted_thinking" and not block.get("data")
        ):
            out.append(
                WireViolation(
                    "unsigned_thinking",
                    index,
                    f"a {kind} block without its {'signature' if kind == 'thinking' else 'data'}",
                )
            )
    if pairing is not None:
        pairing.finish()
    return out


def _thinking_first(messages: list[dict[str, Any]]) -> list[WireViolation]:
    """With thinking on: the assistant message of a continued tool loop starts with thinking."""
    if len(messages) < 2 or messages[-1].get("role") != "user":
        return []
    last = messages[-1].get("content")
    if not isinstance(last, list) or not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in last
    ):
        return []
    index = len(messages) - 2
    blocks = messages[index].get("content")
    if not isinstance(blocks, list) or not any(
        isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in blocks
    ):
        return []  # nothing to start with: the model chose not to think (we cannot add any)
    first = blocks[0].get("type")
    if first in ("thinking", "redacted_thinking"):
        return []
    return [
        WireViolation(
            "thinking_first",
            index,
            f"with thinking on, the assistant message of a continued tool loop must start with "
            f"its thinking, but it starts with {first!r}",
        )
    ]


def _check_user(
    index: int, blocks: list[dict[str, Any]], expected_ids: list[str]
) -> list[WireViolation]:
    out: list[WireViolation] = []
    answered: set[str] = set()
    saw_other = False
    for block in blocks:
        if block.get("type") != "tool_result":
            saw_other = True
            continue
        call_id = str(block.get("tool_use_id"))
        if call_id.startswith(SERVER_TOOL_ID_PREFIX):
            out.append(
                WireViolation(
                    "tool_result_for_server_tool",
                    index,
                    f"unexpected `tool_use_id` found in `tool_result` blocks: {call_id}. "
                    "Each `tool_result` block must have a corresponding `tool_use` block in "
                    "the previous message (a server tool call is answered by the API itself)",
                )
            )
            continue
        if saw_other:
            out.append(
                WireViolation(
                    "results_first", index, f"tool_result {call_id} follows other content"
                )
            )
        if call_id not in expected_ids:
            out.append(
                WireViolation(
                    "stray_tool_result",
                    index,
                    f"tool_result {call_id} answers no tool_use of the previous message",
                )
            )
        elif call_id in answered:
            out.append(
                WireViolation("duplicate_result", index, f"tool_use {call_id} answered twice")
            )
        answered.add(call_id)
    missing = [i for i in expected_ids if i not in answered]
    if missing:
        out.append(
            WireViolation(
                "unanswered_tool_use",
                index,
                f"tool_use {', '.join(missing)} has no tool_result in the next message",
            )
        )
    return out


def check_wire(messages: list[dict[str, Any]], *, allow_prefill: bool = False) -> None:
    """Raise :class:`WireInvalidError` if the API would reject the request."""
    violations = validate_wire(messages, allow_prefill=allow_prefill)
    if violations:
        raise WireInvalidError(violations)
