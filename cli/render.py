"""Rendering history items (session file format) for people, with rich.

Items are parsed with the history's own models; an item of a kind this version does not
know is named rather than dropped. Text from the conversation is printed as
:class:`~rich.text.Text`, never as markup, so brackets and backslashes show as written, and
its control characters are shown escaped (:mod:`cli.terminal_text`), never obeyed.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from cli.cited_stream import citation_pairs
from cli.terminal_text import visible
from cli.tui.input import segment_text
from cli.web_text import CitationNumbers, call_text, plain_markdown, result_text
from orchestrator.core.history import (
    OMITTED_THINKING,
    REDACTED_THINKING,
    AssistantMessage,
    Block,
    Item,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
    item_from_json,
)
from orchestrator.core.server_tools import summarize_result


def _items(raw_items: list[dict[str, Any]]) -> list[Item | str]:
    """Typed items; an unreadable one becomes the line that says so."""
    out: list[Item | str] = []
    for raw in raw_items:
        try:
            out.append(item_from_json(raw))
        except ValidationError:
            out.append(f"(an item of kind {raw.get('kind')!r} this version cannot show)")
    return out


def _user_text(item: UserMessage) -> str:
    return "".join(segment_text(s) for s in item.segments) or item.text


def _arguments(arguments: dict[str, Any]) -> str:
    """A tool call's arguments as the JSON the model wrote, not a Python dict."""
    return json.dumps(arguments, ensure_ascii=False)


def server_block_line(block: ServerToolUseBlock | ServerToolResultBlock) -> str:
    """A web search or fetch the API ran, or its result, on one cleaned line."""
    if isinstance(block, ServerToolUseBlock):
        return f"⌕ {call_text(block.name, block.input)}"
    summary = summarize_result(block)
    sources = [(s.url, s.title) for s in summary.sources]
    return f"  → {result_text(summary.name, sources, summary.error_code)}"


def _ends_text(blocks: list[Block], block: TextBlock) -> bool:
    """The block is the last of a run of text blocks (a cited answer comes as many)."""
    at = next(i for i, b in enumerate(blocks) if b is block)
    return at + 1 == len(blocks) or not isinstance(blocks[at + 1], TextBlock)


def _joined_text(blocks: list[Block], last: TextBlock, numbers: CitationNumbers) -> str:
    """The run of text blocks ending at ``last`` as one text, each cited block followed by
    its ``[n]`` (escaped: Markdown shows them as written)."""
    end = next(i for i, b in enumerate(blocks) if b is last)
    start = end
    while start > 0 and isinstance(blocks[start - 1], TextBlock):
        start -= 1
    out = []
    for block in blocks[start : end + 1]:
        assert isinstance(block, TextBlock)
        markers = numbers.markers(citation_pairs(block.citations))
        out.append(block.text + markers.replace("[", "\\[").replace("]", "\\]"))
    return "".join(out)


def render_items(console: Console, items: list[dict[str, Any]]) -> None:
    """Print a conversation: user, assistant, tool calls and results, system notes."""
    for item in _items(items):
        match item:
            case str():
                console.print(Text(visible(item), style="dim"))
            case UserMessage():
                console.print(
                    Panel(
                        Text(visible(_user_text(item))),
                        title=f"you · turn {item.turn}",
                        border_style="cyan",
                    )
                )
            case AssistantMessage(blocks=blocks, synthetic=synthetic):
                numbers = CitationNumbers()
                for block in blocks:
                    match block:
                        case TextBlock():
                            pass  # printed with the text blocks next to it, as one text
                        case ServerToolUseBlock() | ServerToolResultBlock():
                            console.print(Text(server_block_line(block), style="yellow"))
                        case ThinkingBlock(thinking=thinking):
                            shown = thinking.strip() or OMITTED_THINKING
                            console.print(Text(visible(f"thinking: {shown}"), style="dim italic"))
                        case RedactedThinkingBlock():
                            console.print(Text(REDACTED_THINKING, style="dim italic"))
                        case ToolUseBlock(name=name, input=arguments):
                            mark = " (synthetic)" if synthetic else ""
                            shown = _arguments(arguments)
                            console.print(Text(visible(f"⚙ {name} {shown}{mark}"), style="yellow"))
                    if isinstance(block, TextBlock) and _ends_text(blocks, block):
                        text = _joined_text(blocks, block, numbers)
                        console.print(Markdown(visible(text)))
                for line in numbers.lines():
                    console.print(Text(line, style="dim"))
            case ToolResult():
                style = "red" if item.is_error else "green"
                mark = " (synthetic)" if item.synthetic else ""
                console.print(Text(visible(f"  ↳ {item.summary}{mark}"), style=style))
            case SystemMessage(text=text, origin=origin):
                first = text.splitlines()[0] if text else ""
                console.print(Text(visible(f"· system ({origin}): {first}"), style="magenta"))


def items_to_markdown(items: list[dict[str, Any]]) -> str:
    """A Markdown transcript of a conversation (for ``pod sessions export``)."""
    out: list[str] = []
    for item in _items(items):
        match item:
            case str():
                out.append(f"_{item}_\n")
            case UserMessage():
                out.append(f"## You (turn {item.turn})\n\n{_user_text(item)}\n")
            case AssistantMessage(blocks=blocks):
                parts = []
                numbers = CitationNumbers()
                for block in blocks:
                    if isinstance(block, TextBlock) and _ends_text(blocks, block):
                        parts.append(_joined_text(blocks, block, numbers))
                    elif isinstance(block, ToolUseBlock):
                        parts.append(f"`{block.name}` `{_arguments(block.input)}`")
                    elif isinstance(block, ServerToolUseBlock | ServerToolResultBlock):
                        parts.append(plain_markdown(server_block_line(block)))
                parts += [plain_markdown(line) for line in numbers.lines()]
                out.append("## Assistant\n\n" + "\n\n".join(parts) + "\n")
            case ToolResult():
                body = item.content or ""
                out.append(f"> **{item.summary}**\n" + (f"\n```\n{body}\n```\n" if body else ""))
            case SystemMessage(text=text, origin=origin):
                out.append(f"> _system ({origin})_: {text[:500]}\n")
    return "\n".join(out)
