"""Text from the model, tools and MCP servers as a terminal shows it, not obeys it.

Whatever the CLI prints of such text (an answer, a command's output, an approval prompt, a
server's request for input, a history) may hold control characters: an escape sequence that
writes the clipboard (``ESC]52``), retitles the window (``ESC]0``), clears the screen
(``ESC[2J``), hides a link behind other words (OSC 8), or a carriage return and cursor moves
that overwrite what came before, so an approval prompt shows a harmless command while another
runs. Each such character is shown as its escape (``\\x1b``) instead: the person sees what was
sent, and the terminal obeys nothing. Line breaks and tabs stay (they move the cursor only
onward, hiding nothing). :func:`visible` is for text; :func:`visible_json` for JSON a command
prints, where the same characters become JSON escapes that decode to the same value.
"""

from __future__ import annotations

import re

__all__ = ["visible", "visible_json"]

_UNSAFE = re.compile(
    "\r\n"  # a Windows line end: a line break, shown as one
    "|[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but tab and line feed, DEL, C1 (8-bit CSI, OSC)
    # Bidirectional controls reorder what is shown ("Trojan source"): the text reads
    # otherwise than it runs.
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"  # lone surrogates (bytes that were not UTF-8): no terminal text at all
)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character shown as its escape: ``ESC`` as ``\\x1b``, a
    carriage return as ``\\x0d``, a bidirectional override as ``\\u202e``; line breaks and
    tabs stay."""
    return _UNSAFE.sub(_escape, text)


_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def visible_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) safe for a terminal: the characters
    :func:`visible` escapes become ``\\u`` escapes, which decode to the same value (JSON
    already escapes the C0 controls)."""
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
