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

from cli.terminal_text import visible
from cli.tui.input import segment_text
from orchestrator.core.history import (
    OMITTED_THINKING,
    REDACTED_THINKING,
    AssistantMessage,
    Item,
    RedactedThinkingBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
    item_from_json,
)


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
                for block in blocks:
                    match block:
                        case TextBlock(text=text):
                            console.print(Markdown(visible(text)))
                        case ThinkingBlock(thinking=thinking):
                            shown = thinking.strip() or OMITTED_THINKING
                            console.print(Text(visible(f"thinking: {shown}"), style="dim italic"))
                        case RedactedThinkingBlock():
                            console.print(Text(REDACTED_THINKING, style="dim italic"))
                        case ToolUseBlock(name=name, input=arguments):
                            mark = " (synthetic)" if synthetic else ""
                            shown = _arguments(arguments)
                            console.print(Text(visible(f"⚙ {name} {shown}{mark}"), style="yellow"))
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
                for block in blocks:
                    if isinstance(block, TextBlock):
                        parts.append(block.text)
                    elif isinstance(block, ToolUseBlock):
                        parts.append(f"`{block.name}` `{_arguments(block.input)}`")
                out.append("## Assistant\n\n" + "\n\n".join(parts) + "\n")
            case ToolResult():
                body = item.content or ""
                out.append(f"> **{item.summary}**\n" + (f"\n```\n{body}\n```\n" if body else ""))
            case SystemMessage(text=text, origin=origin):
                out.append(f"> _system ({origin})_: {text[:500]}\n")
    return "\n".join(out)
