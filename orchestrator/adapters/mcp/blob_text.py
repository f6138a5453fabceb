"""Text a server sends as a blob: a resource whose MIME type says text (``text/*``, JSON, XML,
YAML…) but whose content came base64-encoded. The model reads it as text (pure).

The MIME type's ``charset`` is honoured (UTF-8 when it names none, as JSON and most servers
mean); content that does not decode in it, a charset the pod does not know, or "text" that
decodes to control characters (a charset that lies about binary content) is named with why,
never sent as mojibake. Past :data:`TEXT_BLOB_MAX_BYTES` it is named, not decoded.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re

__all__ = ["TEXT_BLOB_MAX_BYTES", "blob_text", "is_text_type"]

TEXT_BLOB_MAX_BYTES = 1_000_000
"""The most bytes of a text blob decoded; the tool result's own cap then applies to the text."""
_TEXT_APPLICATION = {
    "application/json",
    "application/xml",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/javascript",
    "application/ecmascript",
    "application/x-sh",
    "application/sql",
    "application/graphql",
    "application/x-ndjson",
    "application/csv",
}
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_CHARSET = re.compile(r"""charset\s*=\s*"?([A-Za-z0-9_.:+-]{1,40})"?""", re.IGNORECASE)


def _essence(mime_type: str) -> str:
    return mime_type.split(";", 1)[0].strip().lower()


def is_text_type(mime_type: str | None) -> bool:
    """Whether a MIME type says its content is text."""
    if not mime_type:
        return False
    essence = _essence(mime_type)
    return (
        essence.startswith("text/")
        or essence in _TEXT_APPLICATION
        or essence.endswith(("+json", "+xml", "+yaml"))
    )


def blob_text(uri: str, mime_type: str | None, blob: str) -> str | None:
    """What stands for a text blob in a result: its text under its URI, or a line naming it
    and why it is not shown; None when the MIME type does not say text."""
    if mime_type is None or not is_text_type(mime_type):
        return None
    size = len(blob) * 3 // 4
    if size > TEXT_BLOB_MAX_BYTES:
        return (
            f"[resource {uri}: {mime_type}, about {size} bytes, not shown: more text than the "
            f"{TEXT_BLOB_MAX_BYTES // 1000} kB a text resource may bring]"
        )
    try:
        data = base64.b64decode(blob, validate=True)
    except (ValueError, binascii.Error):
        return f"[resource {uri}: {mime_type}, not shown: its content is not valid base64]"
    found = _CHARSET.search(mime_type)
    charset = found.group(1) if found else "utf-8"
    try:
        codec = codecs.lookup(charset)
    except LookupError:
        return f"[resource {uri}: {mime_type}, {len(data)} bytes, not shown: unknown charset]"
    try:
        text = data.decode(codec.name)
    except UnicodeDecodeError as exc:
        return (
            f"[resource {uri}: {mime_type}, {len(data)} bytes, not shown: it is not valid "
            f"{codec.name} (at byte {exc.start})]"
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    if _CONTROLS.search(text):
        return (
            f"[resource {uri}: {mime_type}, {len(data)} bytes, not shown: decoded as "
            f"{codec.name} it holds control characters, so it is not the text it says it is]"
        )
    return f"[resource {uri}]\n{text}"
