"""The API's own tools in the fake: web search and web fetch, run "on the server".

A request declares them in ``tools`` (``{"type": "web_search_20250305", "name": "web_search",
"max_uses": 8, ...}``); :func:`check_server_tools` refuses a declaration the API would (both
domain lists, an empty list, a version the model does not take). A reply's
:class:`~conformance.script.ServerCall` s become ``server_tool_use`` blocks (ids ``srvtoolu_``
and random) each followed by its result, made up from the call's input: search results with
an ``encrypted_content`` the fake issued (:func:`~conformance.script.fake_encrypted`), a
fetched page as a document, or an error result (``max_uses_exceeded`` past the tool's
``max_uses`` in one response). The reply's text cites the first search result
(``web_search_result_location`` with an ``encrypted_index``). A pending call comes without its
result (the mixed case); whatever server call the latest assistant content left without a
result is answered at the start of the next response (:func:`unresolved_calls`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.script import Reply, ServerCall, fake_encrypted
from conformance.validation import SERVER_TOOL_TYPES, Rejected, server_tool_name

__all__ = [
    "SERVER_RESULT_TYPES",
    "SERVER_TOOL_TYPES",
    "WebPlan",
    "check_server_tools",
    "declared_server_tools",
    "new_server_id",
    "plan_server_blocks",
    "result_block",
    "server_tool_name",
    "unresolved_calls",
]

SERVER_RESULT_TYPES = {"web_search": "web_search_tool_result", "web_fetch": "web_fetch_tool_result"}
RETRIEVED_AT = "2026-11-01T12:00:00Z"


def declared_server_tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The server tools a request declares, by name."""
    tools = body.get("tools")
    out: dict[str, dict[str, Any]] = {}
    for tool in tools if isinstance(tools, list) else []:
        name = server_tool_name(tool)
        if name is not None:
            out[name] = tool
    return out


def check_server_tools(tools: object, supported: frozenset[str] | None) -> None:
    """Refuse a server tool declaration the API would refuse, in its words where known.

    ``supported`` is the tool types the model takes (None: every known version).
    """
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        name = server_tool_name(tool)
        if name is None or not isinstance(tool, dict):
            continue
        kind = tool["type"]
        where = f"tools.{index}.{kind}"
        if supported is not None and kind not in supported:
            raise Rejected(
                400,
                "invalid_request_error",
                f"tools.{index}: '{kind}' is not supported for this model. Supported server "
                f"tools: {', '.join(sorted(supported)) or 'none'}",
            )
        if tool.get("name") != name:
            raise Rejected(400, "invalid_request_error", f"{where}.name: Input should be '{name}'")
        for key in ("allowed_domains", "blocked_domains"):
            value = tool.get(key)
            if value is not None and (not isinstance(value, list) or not value):
                raise Rejected(
                    400,
                    "invalid_request_error",
                    f"{where}.{key}: Empty list of domains is ambiguous. Provide at least one "
                    "domain or null.",
                )
        if tool.get("allowed_domains") and tool.get("blocked_domains"):
            raise Rejected(
                400,
                "invalid_request_error",
                f"{where}: Cannot specify both allowed_domains and blocked_domains in the same "
                "request",
            )
        uses = tool.get("max_uses")
        if uses is not None and (isinstance(uses, bool) or not isinstance(uses, int) or uses < 1):
            raise Rejected(
                400,
                "invalid_request_error",
                f"{where}.max_uses: Input should be greater than or equal to 1",
            )


def new_server_id() -> str:
    """A server tool call id as the API makes them: ``srvtoolu_`` and random characters."""
    return "srvtoolu_01" + secrets.token_hex(12)


def _search_results(query: str, count: int) -> list[dict[str, Any]]:
    slug = hashlib.sha256(query.encode()).hexdigest()[:8]
    out = []
    for k in range(count):
        url = f"https://example.com/{slug}/{k + 1}"
        title = f"Result {k + 1} for {query[:60]}"
        out.append(
            {
                "type": "web_search_result",
                "url": url,
                "title": title,
                "encrypted_content": fake_encrypted("web_search_result", url, title),
                "page_age": "November 1, 2026",
            }
        )
    return out


def result_block(
    call: dict[str, Any], *, error_code: str | None = None, count: int = 2
) -> dict[str, Any]:
    """The result block of a ``server_tool_use`` block, made up from its input."""
    name = str(call.get("name"))
    kind = SERVER_RESULT_TYPES.get(name, "web_search_tool_result")
    given = call.get("input")
    tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
    content: Any
    if error_code is not None:
        content = {"type": f"{kind}_error", "error_code": error_code}
    elif name == "web_fetch":
        url = str(tool_input.get("url") or "https://example.com/")
        content = {
            "type": "web_fetch_result",
            "url": url,
            "content": {
                "type": "document",
                "source": {
                    "type": "text",
                    "media_type": "text/plain",
                    "data": f"The text of {url}, as the fake API fetched it.",
                },
                "title": f"Page at {url}",
            },
            "retrieved_at": RETRIEVED_AT,
        }
    else:
        content = _search_results(str(tool_input.get("query") or "fake search"), count)
    return {"type": kind, "tool_use_id": str(call.get("id")), "content": content}


def _citation(result: dict[str, Any]) -> dict[str, Any] | None:
    content = result.get("content")
    if result.get("type") != "web_search_tool_result" or not isinstance(content, list):
        return None
    first = content[0] if content else None
    if not isinstance(first, dict):
        return None
    cited = f"What {first['title']} says."
    return {
        "type": "web_search_result_location",
        "url": first["url"],
        "title": first["title"],
        "cited_text": cited,
        "encrypted_index": fake_encrypted("web_search_result_location", first["url"], cited),
    }


@dataclass(slots=True)
class WebPlan:
    """A reply's server tool blocks: those before its text, those after it (calls without
    their result), the citations its text gets, and the usage they count."""

    leading: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)
    web_search_requests: int = 0
    web_fetch_requests: int = 0

    def usage(self) -> dict[str, int] | None:
        """``usage.server_tool_use``, or None when the reply ran no server tool."""
        if not (self.web_search_requests or self.web_fetch_requests):
            return None
        return {
            "web_search_requests": self.web_search_requests,
            "web_fetch_requests": self.web_fetch_requests,
        }


def unresolved_calls(merged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The server calls the latest assistant content left without a result (the mixed case,
    or a loop paused before running one): the next response opens with their results."""
    latest = next((m for m in reversed(merged) if m.get("role") == "assistant"), None)
    blocks = latest.get("content") if latest is not None else None
    if not isinstance(blocks, list):
        return []
    answered = {b.get("tool_use_id") for b in blocks if isinstance(b, dict)}
    return [
        b
        for b in blocks
        if isinstance(b, dict)
        and b.get("type") == "server_tool_use"
        and b.get("id") not in answered
    ]


def _call_input(call: ServerCall, n: int) -> dict[str, Any]:
    if call.input:
        return dict(call.input)
    if call.name == "web_fetch":
        return {"url": f"https://example.com/page/{n}"}
    return {"query": f"fake search {n}"}


def plan_server_blocks(
    reply: Reply,
    *,
    declared: dict[str, dict[str, Any]],
    unresolved: Sequence[dict[str, Any]] = (),
) -> WebPlan:
    """The server tool blocks of ``reply`` for a request declaring ``declared`` (calls of a
    tool the request does not declare are left out), opened by the results of
    ``unresolved`` calls."""
    plan = WebPlan()
    counted = {"web_search": 0, "web_fetch": 0}

    def run(call: dict[str, Any], error_code: str | None, count: int) -> dict[str, Any]:
        name = str(call.get("name"))
        tool = declared.get(name, {})
        limit = tool.get("max_uses")
        if error_code is None and isinstance(limit, int) and counted.get(name, 0) >= limit:
            error_code = "max_uses_exceeded"
        if error_code is None and name in counted:
            counted[name] += 1
        return result_block(call, error_code=error_code, count=count)

    plan.leading += [run(call, None, 2) for call in unresolved]
    for n, call in enumerate(reply.server_calls):
        if call.name not in declared:
            continue
        block = {
            "type": "server_tool_use",
            "id": new_server_id(),
            "name": call.name,
            "input": _call_input(call, n + 1),
        }
        if call.pending:
            plan.pending.append(block)
            continue
        plan.leading += [block, run(block, call.error_code, max(call.results, 1))]
    if reply.cite:
        found = (_citation(b) for b in plan.leading)
        first = next((c for c in found if c is not None), None)
        plan.citations = [first] if first is not None else []
    plan.web_search_requests = counted["web_search"]
    plan.web_fetch_requests = counted["web_fetch"]
    return plan
