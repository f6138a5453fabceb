"""The real API's extended-thinking rules, as the fake applies them (see ``FACTS.md``).

Written apart from the pod's own validator on purpose: a runtime must not be judged by its
own reading of the rules.

* Request parameters: ``thinking`` is ``adaptive`` (optional ``display``), ``enabled`` with
  ``budget_tokens`` (at least 1,024 and below ``max_tokens`` unless the interleaved-thinking
  beta is on) or ``disabled``, each only where the model accepts it; ``output_config.effort``
  only at a level the model lists; no forced ``tool_choice`` with thinking on; no
  ``cache_control`` on a thinking block.
* Replies think only when the request turns thinking on.
* The latest assistant message's ``thinking`` / ``redacted_thinking`` blocks must be exactly
  those the fake issued with that response, in place; and with thinking on, a request that
  continues a tool loop must have that loop's assistant message start with its thinking.
  Each refusal carries the real API's wording.

A block's authenticity is checked without state: a thinking block's signature is derived from
its text (:func:`~conformance.script.fake_signature`), a redacted block's data from its payload
(:func:`fake_redacted`). Which blocks a response issued together is remembered by
:class:`IssuedThinking`, keyed by the response's tool call ids *and* by its thinking blocks, so
the latest assistant message is matched to its response whatever it holds (text only too),
and bounded (:data:`ISSUED_LIMIT` keys, least recently used first out).

What the fake does not refuse, because the API does not: the latest assistant message of a
text-only reply sent back with **all** its thinking left out (the API lets thinking of a turn
that is not a continued tool loop be omitted; one block left out, added or moved is a change,
and refused); thinking of older assistant messages, left out or not.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from conformance.validation import Rejected

INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
THINKING_TYPES = ("thinking", "redacted_thinking")

MODIFIED = (
    "messages.{index}.content.{position}: `thinking` or `redacted_thinking` blocks in the latest "
    "assistant message cannot be modified. These blocks must remain as they were in the "
    "original response."
)
NOT_FIRST = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`{found}`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    "disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
"""The API's words, documentation link included (as it appears in client trackers)."""

ISSUED_LIMIT = 4096
"""How many keys (tool call ids, thinking blocks) :class:`IssuedThinking` keeps by default."""
_CANDIDATES = 8
"""Responses remembered per thinking block: the same thinking text signs the same way, so
several responses may share a block (the thinking profile's blocks are all alike)."""


def thinking_on(body: dict[str, Any]) -> bool:
    """Whether the request turns thinking on (responses may think; the loop rule applies)."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("adaptive", "enabled")


def thinking_sent_back(body: object) -> int:
    """How many ``thinking`` / ``redacted_thinking`` blocks a request body carries back in its
    assistant messages (0 for a body that is not a Messages request)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    count = 0
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") in THINKING_TYPES:
                count += 1
    return count


def check_parameters(
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    accepts: frozenset[str] | None,
    efforts: frozenset[str] | None,
) -> None:
    """Refuse thinking, effort and tool_choice parameters the API would refuse for a model
    accepting ``accepts`` thinking types and ``efforts`` levels (None: not described)."""
    thinking = body.get("thinking")
    if thinking is not None:
        if not isinstance(thinking, dict) or thinking.get("type") not in (
            "adaptive",
            "enabled",
            "disabled",
        ):
            raise Rejected(
                400,
                "invalid_request_error",
                "thinking: Input tag does not match any of the expected tags: 'adaptive', "
                "'enabled', 'disabled'",
            )
        kind = thinking["type"]
        if accepts is not None and kind not in accepts:
            raise Rejected(
                400,
                "invalid_request_error",
                f"thinking.type: '{kind}' is not supported for this model. Supported: "
                f"{', '.join(sorted(accepts)) or 'none'}",
            )
        if kind == "enabled":
            _check_budget(thinking, body, headers)
        if kind == "adaptive" and thinking.get("display") not in (None, "summarized", "omitted"):
            raise Rejected(
                400,
                "invalid_request_error",
                "thinking.adaptive.display: Input should be 'summarized' or 'omitted'",
            )
    effort = (body.get("output_config") or {}).get("effort")
    if effort is not None and efforts is not None and effort not in efforts:
        raise Rejected(
            400,
            "invalid_request_error",
            f"output_config.effort: '{effort}' is not supported for this model",
        )
    choice = body.get("tool_choice")
    if thinking_on(body) and isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        raise Rejected(
            400,
            "invalid_request_error",
            "Thinking may not be enabled when tool_choice forces tool use.",
        )


def _check_budget(thinking: dict[str, Any], body: dict[str, Any], headers: dict[str, str]) -> None:
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise Rejected(
            400, "invalid_request_error", "thinking.enabled.budget_tokens: Field required"
        )
    if budget < 1024:
        raise Rejected(
            400,
            "invalid_request_error",
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        )
    interleaved = INTERLEAVED_BETA in headers.get("anthropic-beta", "")
    if not interleaved and budget >= body["max_tokens"]:
        raise Rejected(
            400,
            "invalid_request_error",
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
            "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
        )


def check_no_cache_control(messages: list[dict[str, Any]]) -> None:
    """Thinking blocks cannot be cache breakpoints."""
    for index, message in enumerate(messages):
        content = message.get("content")
        for position, block in enumerate(content if isinstance(content, list) else []):
            if block.get("type") in THINKING_TYPES and "cache_control" in block:
                raise Rejected(
                    400,
                    "invalid_request_error",
                    f"messages.{index}.content.{position}.{block['type']}.cache_control: "
                    "Extra inputs are not permitted",
                )


def _identity(block: dict[str, Any]) -> tuple[str, str]:
    """What tells an issued thinking block apart: its signature, or a redacted block's data."""
    if block.get("type") == "thinking":
        return ("thinking", str(block.get("signature")))
    return ("redacted_thinking", str(block.get("data")))


class IssuedThinking:
    """The thinking blocks each response issued, found again from what a request sends back.

    A response is remembered under each of its tool call ids (unique, so the match is exact)
    and under each thinking block it issued (its signature or data), so that a text-only
    reply's thinking, reordered or cut in a later request, is recognised too. At most
    ``limit`` keys are kept, the least recently used dropped first, so a long-running fake
    does not grow without bound; a response whose keys were all dropped is no longer matched:
    its thinking is then judged by signature only, and a tool loop it started is treated as
    one the fake never issued (it must start with thinking). Not thread-safe: the server
    holds its lock around every call.
    """

    def __init__(self, limit: int = ISSUED_LIMIT) -> None:
        if limit < 1:
            raise ValueError("the limit must be at least 1")
        self.limit = limit
        self._keys: OrderedDict[tuple[str, str], list[list[dict[str, Any]]]] = OrderedDict()

    def __len__(self) -> int:
        """How many keys are remembered (never more than ``limit``)."""
        return len(self._keys)

    def record(self, content: list[dict[str, Any]]) -> None:
        """Remember the thinking blocks of a response's ``content`` (issued, not yet sent)."""
        thinking = [dict(b) for b in content if b.get("type") in THINKING_TYPES]
        for block in content:
            if block.get("type") == "tool_use":
                # One response per id: the latest issue wins (a script may reuse an id).
                self._put(("tool_use", str(block.get("id"))), [thinking])
        for block in thinking:
            key = _identity(block)
            known = self._keys.pop(key, [])
            self._put(key, [thinking, *(c for c in known if c != thinking)][:_CANDIDATES])

    def _put(self, key: tuple[str, str], value: list[list[dict[str, Any]]]) -> None:
        self._keys.pop(key, None)
        self._keys[key] = value
        while len(self._keys) > self.limit:
            self._keys.popitem(last=False)

    def _get(self, key: tuple[str, str]) -> list[list[dict[str, Any]]] | None:
        value = self._keys.get(key)
        if value is not None:
            self._keys.move_to_end(key)
        return value

    def originals(self, blocks: list[dict[str, Any]]) -> list[list[dict[str, Any]]] | None:
        """The thinking an assistant message's response was issued with (candidates, most
        recent first; one when a tool call id matched), or None when nothing matches."""
        for block in blocks:
            if block.get("type") == "tool_use":
                found = self._get(("tool_use", str(block.get("id"))))
                if found is not None:
                    return found
        candidates: list[list[dict[str, Any]]] = []
        for block in blocks:
            if block.get("type") in THINKING_TYPES:
                for candidate in self._get(_identity(block)) or []:
                    if candidate not in candidates:
                        candidates.append(candidate)
        return candidates or None


def check_latest_assistant(
    merged: list[dict[str, Any]], issued: IssuedThinking, *, on: bool
) -> None:
    """The two rules on the latest assistant message (``merged``: same-role messages merged,
    as the API counts them; ``issued``: the thinking each response was issued with)."""
    latest = next(
        (i for i in range(len(merged) - 1, -1, -1) if merged[i]["role"] == "assistant"), None
    )
    if latest is None:
        return
    content = merged[latest]["content"]
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    last = merged[-1]
    continues = isinstance(last.get("content"), list) and any(
        b.get("type") == "tool_result" for b in last["content"]
    )
    originals = issued.originals(blocks) or []
    # A reply that did not think (adaptive thinking may not) has nothing to start with; a
    # tool loop the fake never issued must start with thinking, as the API cannot tell either.
    if on and continues and latest == len(merged) - 2 and originals != [[]]:
        first = blocks[0].get("type") if blocks else "text"
        if first not in THINKING_TYPES:
            raise Rejected(
                400, "invalid_request_error", NOT_FIRST.format(index=latest, found=first)
            )
    if not originals:
        return  # nothing issued matches: a text-only reply's thinking may be left out whole
    sent = [b for b in blocks if b.get("type") in THINKING_TYPES]
    positions = [p for p, b in enumerate(blocks) if b.get("type") in THINKING_TYPES]
    original = originals[0]
    if any(sent == o and positions == list(range(len(o))) for o in originals):
        return
    where = next(
        (p for p, (a, b) in enumerate(zip(sent, original, strict=False)) if a != b),
        min(len(sent), len(original)),
    )
    raise Rejected(400, "invalid_request_error", MODIFIED.format(index=latest, position=where))
