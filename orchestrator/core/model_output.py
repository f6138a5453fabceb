"""A model's reply made safe to commit: what the API would refuse later is fixed now.

A reply is stored, then sent back with every later request. A model or a proxy that misbehaves
once (two calls with one ``tool_use`` id, a lone UTF-16 surrogate that cannot be encoded, a
tool name of 200 characters) would otherwise make every later request invalid, and the session
with it. :func:`normalize_reply` runs before the reply is committed, so the history never
holds such a thing (load-time repair stays for damaged files):

* **ids**: a call whose id repeats one earlier in the reply or in the history, or that the API
  would refuse (empty, other characters), gets a fresh id. The call still runs: ids are a
  proxy's bookkeeping, not the model's intent (some number calls ``call_0``, ``call_1`` in
  every reply), and each call is answered once under its new id.
* **names**: a tool name the API would refuse (over 128 characters, other characters) is
  stored as :data:`INVALID_TOOL_NAME`, a name no tool has, and the call is answered at once
  with an error result naming what the model wrote; it never runs. An input that is not a
  JSON object is answered the same way.
* **text**: unpaired surrogates in any string (text, thinking, tool input keys and values)
  become U+FFFD; a well-formed pair is joined into its character.

Each case is reported in :attr:`NormalizedReply.alerts`. Pure and idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.core.history import (
    SERVER_TOOL_ID_PREFIX,
    Block,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
)
from orchestrator.core.validator import TOOL_NAME, TOOL_USE_ID

INVALID_TOOL_NAME = "invalid_tool_name"
"""What a call with a name the API refuses is stored under (never a tool's name)."""

_SHOWN_NAME_CHARS = 60
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class NormalizedReply:
    """A reply ready to commit, results for calls that must not run, and what was changed."""

    blocks: list[Block]
    answers: list[ToolResult]
    """Error results for calls that are answered without running, in call order."""
    alerts: list[str]
    """One line per kind of change, for a person."""


def scrub_surrogates(text: str) -> tuple[str, int]:
    """``text`` with unpaired surrogates replaced by U+FFFD, and how many were replaced."""
    if text.isascii():
        return text, 0
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return text, 0
    replaced = 0
    out: list[str] = []
    i = 0
    for match in _SURROGATE.finditer(text):
        start = match.start()
        if start < i:
            continue  # the low half of a pair already joined
        out.append(text[i:start])
        high, low = text[start], text[start + 1 : start + 2]
        if "\ud800" <= high <= "\udbff" and "\udc00" <= low <= "\udfff":
            out.append(chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00)))
            i = start + 2
        else:
            out.append("\ufffd")
            replaced += 1
            i = start + 1
    out.append(text[i:])
    return "".join(out), replaced


def _scrub_value(value: Any) -> tuple[Any, int]:
    """A JSON value with every string (keys too) scrubbed, and the count of replacements."""
    if isinstance(value, str):
        return scrub_surrogates(value)
    if isinstance(value, list):
        items = [_scrub_value(v) for v in value]
        count = sum(n for _, n in items)
        return ([v for v, _ in items] if count else value), count
    if isinstance(value, dict):
        count = 0
        out: dict[str, Any] = {}
        for key, item in value.items():
            clean_key, n_key = scrub_surrogates(key) if isinstance(key, str) else (key, 0)
            clean_item, n_item = _scrub_value(item)
            count += n_key + n_item
            out[clean_key] = clean_item
        return (out if count else value), count
    return value, 0


def _shown(name: str) -> str:
    """A model-given name for a message: shortened and quoted."""
    short = name if len(name) <= _SHOWN_NAME_CHARS else name[:_SHOWN_NAME_CHARS] + "…"
    return repr(short)


def _server_id(call_id: str) -> bool:
    return call_id.startswith(SERVER_TOOL_ID_PREFIX)


def _fresh_id(base: str, used: set[str]) -> str:
    """The first of ``<base>_2``, ``<base>_3``, … not in ``used`` (a deterministic choice)."""
    stem = base if TOOL_USE_ID.match(base) and not _server_id(base) else "toolu_pod"
    n = 2
    while f"{stem}_{n}" in used:
        n += 1
    return f"{stem}_{n}"


def normalize_reply(blocks: Sequence[Block], *, earlier_ids: Collection[str]) -> NormalizedReply:
    """The reply's blocks as they may be committed after ``earlier_ids`` (see the module)."""
    out: list[Block] = []
    answers: list[ToolResult] = []
    # Server calls' ids are taken too: every id of the conversation must be unique.
    used = set(earlier_ids) | {b.id for b in blocks if isinstance(b, ServerToolUseBlock)}
    replaced = 0
    renamed: list[str] = []
    refused: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            text, n = scrub_surrogates(block.text)
            replaced += n
            out.append(replace(block, text=text) if n else block)
        elif isinstance(block, ThinkingBlock):
            thinking, n_thinking = scrub_surrogates(block.thinking)
            signature, n_signature = scrub_surrogates(block.signature)
            replaced += n_thinking + n_signature
            changed = n_thinking + n_signature
            # Signed: any change is a 400 on the next request. Only a reply no JSON encoder
            # could store (lone surrogates, which the API does not send) is changed at all.
            out.append(replace(block, thinking=thinking, signature=signature) if changed else block)
        elif isinstance(block, (RedactedThinkingBlock, ServerToolUseBlock, ServerToolResultBlock)):
            # Opaque (signed, or the API's own tool loop with encrypted content): kept byte for
            # byte. A server call's id is the API's to keep: its result refers to it.
            out.append(block)
        else:
            call, n = _normal_call(block, used, renamed, refused, answers)
            replaced += n
            out.append(call)
    alerts: list[str] = []
    if renamed:
        alerts.append(
            "the model's reply used tool_use ids that repeat or that the API refuses: "
            f"{'; '.join(renamed)}. The calls run under the new ids."
        )
    if refused:
        alerts.append(
            f"the model's reply held calls that cannot run: {'; '.join(refused)}. Each was "
            "answered with an error result instead."
        )
    if replaced:
        alerts.append(
            f"the model's reply held {replaced} unpaired surrogate"
            f"{'' if replaced == 1 else 's'} (text that is not valid Unicode); each was "
            "replaced with U+FFFD."
        )
    return NormalizedReply(blocks=out, answers=answers, alerts=alerts)


def _normal_call(
    call: ToolUseBlock,
    used: set[str],
    renamed: list[str],
    refused: list[str],
    answers: list[ToolResult],
) -> tuple[ToolUseBlock, int]:
    """One call made committable; appends to the change lists. Returns it and surrogates fixed."""
    call_id = call.id if isinstance(call.id, str) else ""
    if not TOOL_USE_ID.match(call_id) or call_id in used or _server_id(call_id):
        # A client call under a server call's id would be answered by a tool_result, which
        # the API refuses for a srvtoolu_ id.
        fresh = _fresh_id(call_id, used)
        renamed.append(f"{_shown(call_id)} became {fresh}")
        call_id = fresh
    used.add(call_id)
    name_raw = call.name if isinstance(call.name, str) else str(call.name)
    tool_input, replaced = _scrub_value(call.input)
    name, n_name = scrub_surrogates(name_raw)
    replaced += n_name
    problem: str | None = None
    if not TOOL_NAME.match(name):
        problem = (
            f"the tool name {_shown(name)} ({len(name)} characters) is not a valid tool name "
            "(letters, digits, _ and -, at most 128)"
        )
        advice = "Call one of the tools you were given, by its exact name."
        name = INVALID_TOOL_NAME
    elif not isinstance(tool_input, dict):
        problem = f"the input of {name} is not a JSON object"
        advice = "Pass the arguments as a JSON object."
    if problem is not None:
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        refused.append(f"{call_id}: {problem}")
        answers.append(
            ToolResult(call_id=call_id, summary=f"not run: {problem}. {advice}", is_error=True)
        )
    if (call_id, name, tool_input) == (call.id, call.name, call.input):
        return call, replaced
    return replace(call, id=call_id, name=name, input=tool_input), replaced
