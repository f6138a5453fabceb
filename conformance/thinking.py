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

Issued blocks are recognised without state: a thinking block's signature is derived from its
text (:func:`~conformance.script.fake_signature`), a redacted block's data from its payload
(:func:`fake_redacted`), and the blocks a response issued are remembered by its tool calls' ids.
"""

from __future__ import annotations

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
    "disable `thinking`."
)


def thinking_on(body: dict[str, Any]) -> bool:
    """Whether the request turns thinking on (responses may think; the loop rule applies)."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("adaptive", "enabled")


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


def check_latest_assistant(
    merged: list[dict[str, Any]], issued: dict[str, list[dict[str, Any]]], *, on: bool
) -> None:
    """The two rules on the latest assistant message (``merged``: same-role messages merged,
    as the API counts them; ``issued``: tool call id → the thinking blocks issued with it)."""
    latest = next(
        (i for i in range(len(merged) - 1, -1, -1) if merged[i]["role"] == "assistant"), None
    )
    if latest is None:
        return
    content = merged[latest]["content"]
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    call_ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
    last = merged[-1]
    continues = isinstance(last.get("content"), list) and any(
        b.get("type") == "tool_result" for b in last["content"]
    )
    original = next((issued[i] for i in call_ids if i in issued), None)
    # A reply that did not think (adaptive thinking may not) has nothing to start with; a
    # tool loop the fake never issued must start with thinking, as the API cannot tell either.
    if on and continues and latest == len(merged) - 2 and original != []:
        first = blocks[0].get("type") if blocks else "text"
        if first not in THINKING_TYPES:
            raise Rejected(
                400, "invalid_request_error", NOT_FIRST.format(index=latest, found=first)
            )
    if original is not None:
        sent = [b for b in blocks if b.get("type") in THINKING_TYPES]
        positions = [p for p, b in enumerate(blocks) if b.get("type") in THINKING_TYPES]
        if sent != original or positions != list(range(len(original))):
            where = next(
                (p for p, (a, b) in enumerate(zip(sent, original, strict=False)) if a != b),
                min(len(sent), len(original)),
            )
            raise Rejected(
                400, "invalid_request_error", MODIFIED.format(index=latest, position=where)
            )
