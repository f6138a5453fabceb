"""The real API's rules for a Messages request, and the words it refuses them with.

:func:`validate_request` raises :class:`Rejected` (status, error type, message) for anything
the real endpoint would refuse: a missing API key, missing or malformed fields, sampling
parameters the SDK's API version no longer accepts, malformed tools, the conversation rules
of :func:`orchestrator.core.validator.validate_wire` (worded as the API words them, the index
counted after same-role messages are merged), the PDFs of ``document`` blocks (each a real PDF,
at most 100 pages in the whole request, as the API counts them) and thinking signatures this
fake did not issue.

Server tools (web search and fetch, :mod:`conformance.web`): a ``tool_result`` never answers a
``srvtoolu_`` call, a server tool's result needs its ``server_tool_use`` before it, and the
``encrypted_content`` of search results and the ``encrypted_index`` of citations must be the
ones the fake issued, unchanged (with the signature check). A request whose last message is
assistant content holding a server call continues a paused server loop
(:func:`is_continuation`): the one prefill the fake takes.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from conformance.script import fake_signature, issued_encrypted, issued_redacted
from orchestrator.core.documents import PDF_MAX_PAGES, PDF_MEDIA_TYPE, pdf_pages
from orchestrator.core.validator import WireViolation, merge_same_role, validate_wire

__all__ = [
    "SERVER_TOOL_TYPES",
    "Rejected",
    "check_api_key",
    "check_context_window",
    "is_continuation",
    "server_tool_name",
    "validate_request",
]

_SAMPLING_PARAMS = ("temperature", "top_p", "top_k")

SERVER_TOOL_TYPES: dict[str, tuple[str, ...]] = {
    "web_search": ("web_search_20250305", "web_search_20260209", "web_search_20260318"),
    "web_fetch": (
        "web_fetch_20250910",
        "web_fetch_20260209",
        "web_fetch_20260309",
        "web_fetch_20260318",
    ),
}
"""Every version of each server tool the SDK (2.14) has a param type for."""


def server_tool_name(tool: object) -> str | None:
    """``web_search`` / ``web_fetch`` for a declaration of one of them (a version the SDK
    knows), else None (an unknown ``type`` is no server tool: a client tool, checked as one)."""
    kind = tool.get("type") if isinstance(tool, dict) else None
    return next((name for name, kinds in SERVER_TOOL_TYPES.items() if kind in kinds), None)


class Rejected(Exception):
    """A request the real API would refuse.

    A signal, not a failure: the fake API answers it with the HTTP error the real one would send
    (outside the error tree: it is the kit's answer, not a fault of the runtime)."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


def check_api_key(headers: dict[str, str]) -> None:
    """Every endpoint wants ``x-api-key`` (or ``Authorization: Bearer``, as SDK 2.x sends)."""
    authorization = headers.get("authorization", "")
    if not headers.get("x-api-key") and not authorization.lower().startswith("bearer "):
        raise Rejected(401, "authentication_error", "x-api-key header is required")


def check_context_window(input_tokens: int, window: int) -> None:
    """A prompt over the model's window is refused, in the real API's words."""
    if input_tokens > window:
        raise Rejected(
            400,
            "invalid_request_error",
            f"prompt is too long: {input_tokens} tokens > {window} maximum",
        )


def validate_request(
    headers: dict[str, str], body: Any, *, check_signatures: bool, counting: bool = False
) -> None:
    """Raise :class:`Rejected` for anything the real API would refuse.

    ``counting`` is for ``/v1/messages/count_tokens``, which takes no ``max_tokens``.
    """
    check_api_key(headers)
    if not isinstance(body, dict):
        raise Rejected(400, "invalid_request_error", "The request body is not valid JSON.")
    required = ("model", "messages") if counting else ("model", "max_tokens", "messages")
    for name in required:
        if name not in body:
            raise Rejected(400, "invalid_request_error", f"{name}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise Rejected(400, "invalid_request_error", "model: Input should be a valid string")
    max_tokens = body.get("max_tokens", 1)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise Rejected(
            400, "invalid_request_error", "max_tokens: Input should be a positive integer"
        )
    for name in _SAMPLING_PARAMS:
        if name in body:
            raise Rejected(400, "invalid_request_error", f"{name}: Extra inputs are not permitted")
    messages = body["messages"]
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise Rejected(400, "invalid_request_error", "messages: Input should be a valid list")
    _validate_tools(body.get("tools"))
    merged = merge_same_role(messages)
    _validate_server_pairs(merged)
    violations = validate_wire(messages, allow_prefill=is_continuation(merged))
    if violations:
        raise Rejected(400, "invalid_request_error", _violation_message(messages, violations))
    _validate_pdfs(messages)
    if check_signatures:
        _validate_signatures(messages)
        _validate_encrypted(merged)


def _validate_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Rejected(400, "invalid_request_error", "tools: Input should be a valid list")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise Rejected(400, "invalid_request_error", f"tools.{i}.name: Field required")
        if server_tool_name(tool) is not None:
            continue  # one of the API's own tools: its params, no schema (checked for the model)
        if not isinstance(tool.get("input_schema"), dict):
            raise Rejected(
                400, "invalid_request_error", f"tools.{i}.custom.input_schema: Field required"
            )


def _pdfs(messages: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """``(where, base64 data)`` of every base64 PDF document, in a message or in a tool
    result's content, ``where`` as the API names it."""
    for index, message in enumerate(messages):
        content = message.get("content")
        for position, block in enumerate(content if isinstance(content, list) else []):
            where = f"messages.{index}.content.{position}"
            inner = block.get("content") if block.get("type") == "tool_result" else None
            candidates = [(where, block)]
            if isinstance(inner, list):
                candidates += [(f"{where}.content.{k}", b) for k, b in enumerate(inner)]
            for at, candidate in candidates:
                source = candidate.get("source") if isinstance(candidate, dict) else None
                if (
                    candidate.get("type") == "document"
                    and isinstance(source, dict)
                    and source.get("type") == "base64"
                    and source.get("media_type") == PDF_MEDIA_TYPE
                ):
                    yield f"{at}.pdf.source.base64.data", str(source.get("data", ""))


def _validate_pdfs(messages: list[dict[str, Any]]) -> None:
    """Each PDF must be one, and a request carries at most 100 pages of them, counted from
    the first message on (the real API's words)."""
    pages = 0
    for where, data in _pdfs(messages):
        try:
            raw = base64.b64decode(data, validate=True)
        except (ValueError, binascii.Error):
            raw = b""
        count = pdf_pages(raw) if raw.startswith(b"%PDF-") else None
        if count is None:
            raise Rejected(
                400, "invalid_request_error", f"{where}: The PDF specified was not valid."
            )
        pages += count
        if pages > PDF_MAX_PAGES:
            raise Rejected(
                400,
                "invalid_request_error",
                f"{where}: A maximum of {PDF_MAX_PAGES} PDF pages may be provided.",
            )


def _tool_use_ids(message: dict[str, Any]) -> list[str]:
    return [str(b.get("id")) for b in message["content"] if b.get("type") == "tool_use"]


def _result_ids(message: dict[str, Any]) -> set[str]:
    return {str(b.get("tool_use_id")) for b in message["content"] if b.get("type") == "tool_result"}


def _violation_message(messages: list[dict[str, Any]], violations: list[WireViolation]) -> str:
    """The real API reports one problem; pick the earliest and word it as the API does."""
    merged = merge_same_role(messages)
    worded: list[tuple[int, str]] = []
    for v in violations:
        if v.rule == "unanswered_tool_use":
            # The API names the assistant message whose calls went unanswered.
            if merged[v.index]["role"] == "assistant":
                index, missing = v.index, _tool_use_ids(merged[v.index])
            else:
                index = v.index - 1
                answered = _result_ids(merged[v.index])
                missing = [i for i in _tool_use_ids(merged[index]) if i not in answered]
            worded.append(
                (
                    index,
                    f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have "
                    "a corresponding `tool_result` block in the next message.",
                )
            )
        elif v.rule == "stray_tool_result":
            previous = _tool_use_ids(merged[v.index - 1]) if v.index > 0 else []
            stray = sorted(_result_ids(merged[v.index]) - set(previous))
            worded.append(
                (
                    v.index,
                    f"messages.{v.index}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {', '.join(stray)}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message.",
                )
            )
        else:
            worded.append((v.index, f"messages.{v.index}: {v.message}"))
    return min(worded, key=lambda pair: pair[0])[1]


def _validate_signatures(messages: list[dict[str, Any]]) -> None:
    for index, message in enumerate(merge_same_role(messages)):
        for position, block in enumerate(message["content"]):
            if block.get("type") == "redacted_thinking" and not issued_redacted(block.get("data")):
                raise Rejected(
                    400,
                    "invalid_request_error",
                    f"messages.{index}.content.{position}: Invalid `data` in `redacted_thinking` "
                    "block",
                )
            if block.get("type") != "thinking":
                continue
            if block.get("signature") != fake_signature(str(block.get("thinking", ""))):
                raise Rejected(
                    400,
                    "invalid_request_error",
                    f"messages.{index}.content.{position}: Invalid `signature` in `thinking` block",
                )


SERVER_BLOCKS = ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result")
SERVER_ID_PREFIX = "srvtoolu_"


def is_continuation(merged: list[dict[str, Any]]) -> bool:
    """Whether a request (same-role messages merged) continues a paused server loop: its last
    message is assistant content holding a ``server_tool_use`` (as the pod's validator reads
    a continuation: :func:`orchestrator.core.validator.validate_wire`)."""
    if not merged or merged[-1].get("role") != "assistant":
        return False
    content = merged[-1].get("content")
    blocks = content if isinstance(content, list) else []
    return any(isinstance(b, dict) and b.get("type") == "server_tool_use" for b in blocks)


def _validate_server_pairs(merged: list[dict[str, Any]]) -> None:
    """A server call is answered by its result block, never by a ``tool_result``; a result
    block needs its call before it (the API's words, as client trackers show them)."""
    calls: set[str] = set()
    for index, message in enumerate(merged):
        for position, block in enumerate(message["content"]):
            kind = block.get("type")
            if kind == "server_tool_use":
                calls.add(str(block.get("id")))
            elif kind in SERVER_BLOCKS and str(block.get("tool_use_id")) not in calls:
                raise Rejected(
                    400,
                    "invalid_request_error",
                    f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                    f"`{kind}` blocks: {block.get('tool_use_id')}. Each `{kind}` block must "
                    "have a corresponding `server_tool_use` block before it.",
                )
            elif kind == "tool_result" and str(block.get("tool_use_id")).startswith(
                SERVER_ID_PREFIX
            ):
                raise Rejected(
                    400,
                    "invalid_request_error",
                    f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` "
                    "block must have a corresponding `tool_use` block in the previous message.",
                )


def _validate_encrypted(merged: list[dict[str, Any]]) -> None:
    """Search results and citations come back with the encrypted fields the fake issued for
    exactly their URL and title (or cited text)."""
    for index, message in enumerate(merged):
        if message["role"] != "assistant":
            continue
        for position, block in enumerate(message["content"]):
            where = f"messages.{index}.content.{position}"
            content = block.get("content")
            if block.get("type") == "web_search_tool_result" and isinstance(content, list):
                for k, result in enumerate(content):
                    fields = [str(result.get(n)) for n in ("url", "title")]
                    value = result.get("encrypted_content")
                    if not issued_encrypted(value, "web_search_result", *fields):
                        raise Rejected(
                            400,
                            "invalid_request_error",
                            f"{where}.content.{k}: Invalid `encrypted_content` in "
                            "`web_search_result` block",
                        )
            citations = block.get("citations") if block.get("type") == "text" else None
            for k, citation in enumerate(citations if isinstance(citations, list) else []):
                if citation.get("type") != "web_search_result_location":
                    continue
                fields = [str(citation.get(n)) for n in ("url", "cited_text")]
                value = citation.get("encrypted_index")
                if not issued_encrypted(value, "web_search_result_location", *fields):
                    raise Rejected(
                        400,
                        "invalid_request_error",
                        f"{where}.citations.{k}: Invalid `encrypted_index` in "
                        "`web_search_result_location` citation",
                    )
