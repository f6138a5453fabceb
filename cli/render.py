"""Rendering history items (session file format) for people, with rich."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.text import Text

from cli.tui.model import segment_label


def segment_text(segment: dict[str, Any]) -> str:
    """How a user-message segment reads in a transcript: its text, or its chip label."""
    label = segment_label(segment)
    return str(segment.get("text", "")) if label is None else label


def render_items(console: Console, items: list[dict[str, Any]]) -> None:
    """Print a conversation: user, assistant, tool calls and results, system notes."""
    for item in items:
        kind = item["kind"]
        if kind == "user_message":
            text = "".join(segment_text(s) for s in item.get("segments", [])) or item.get(
                "text", ""
            )
            console.print(
                Panel(Text(text), title=f"you · turn {item['turn']}", border_style="cyan")
            )
        elif kind == "assistant":
            for block in item.get("blocks", []):
                if block["type"] == "text":
                    console.print(Markdown(block["text"]))
                elif block["type"] == "thinking":
                    console.print(Text(block["thinking"], style="dim italic"))
                elif block["type"] == "tool_use":
                    mark = " (synthetic)" if item.get("synthetic") else ""
                    console.print(Text(f"⚙ {block['name']} {block['input']}{mark}", style="yellow"))
        elif kind == "tool_result":
            style = "red" if item.get("is_error") else "green"
            mark = " (synthetic)" if item.get("synthetic") else ""
            console.print(Text(f"  ↳ {item['summary']}{mark}", style=style))
        elif kind == "system_message":
            first = item["text"].splitlines()[0] if item["text"] else ""
            console.print(Text(f"· system ({item.get('origin')}): {first}", style="magenta"))


def items_to_markdown(items: list[dict[str, Any]]) -> str:
    """A Markdown transcript of a conversation (for ``pod sessions export``)."""
    out: list[str] = []
    for item in items:
        kind = item["kind"]
        if kind == "user_message":
            text = "".join(segment_text(s) for s in item.get("segments", []))
            out.append(f"## You (turn {item['turn']})\n\n{text}\n")
        elif kind == "assistant":
            parts = []
            for block in item.get("blocks", []):
                if block["type"] == "text":
                    parts.append(block["text"])
                elif block["type"] == "tool_use":
                    parts.append(f"`{block['name']}` `{block['input']}`")
            out.append("## Assistant\n\n" + "\n\n".join(parts) + "\n")
        elif kind == "tool_result":
            body = item.get("content") or ""
            out.append(f"> **{item['summary']}**\n" + (f"\n```\n{body}\n```\n" if body else ""))
        elif kind == "system_message":
            out.append(f"> _system ({item.get('origin')})_: {item['text'][:500]}\n")
    return "\n".join(out)
