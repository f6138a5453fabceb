"""Text sent as a blob (orchestrator/adapters/mcp/blob_text.py), and what a hostile server's
blobs get: a charset that lies, bytes that are not text, a huge one, a storm of updates."""

from __future__ import annotations

import base64

from mcp import types

from orchestrator.adapters.mcp.blob_text import TEXT_BLOB_MAX_BYTES, blob_text, is_text_type
from orchestrator.adapters.mcp.results import tool_output
from orchestrator.adapters.mcp.subscriptions import ResourceSubscriptions


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_text_types_are_known_by_their_mime_type() -> None:
    for kind in ("text/plain", "text/csv; charset=utf-8", "application/json",
                 "application/vnd.api+json", "image/svg+xml", "application/x-yaml"):  # fmt: skip
        assert is_text_type(kind), kind
    for other in (None, "", "image/png", "application/pdf", "application/octet-stream"):
        assert not is_text_type(other), other


def test_the_charset_is_honoured_and_utf_8_is_the_default() -> None:
    assert blob_text("x://a", "text/plain", b64("héllo\n".encode())) == "[resource x://a]\nhéllo\n"
    latin = "text/plain; charset=ISO-8859-1"
    assert blob_text("x://a", latin, b64("héllo".encode("latin-1"))) == "[resource x://a]\nhéllo"
    utf16 = 'application/json; charset="utf-16"'
    assert (
        blob_text("x://j", utf16, b64('{"a": 1}'.encode("utf-16"))) == '[resource x://j]\n{"a": 1}'
    )
    assert blob_text("x://b", "image/png", b64(b"\x89PNG")) is None  # not text: not ours


def test_text_that_does_not_decode_is_named_with_why_never_sent_as_mojibake() -> None:
    # The charset lies: it says UTF-8, the bytes are Latin-1.
    lied = blob_text("x://a", "text/plain; charset=utf-8", b64("café".encode("latin-1")))
    assert (
        lied
        == "[resource x://a: text/plain; charset=utf-8, 4 bytes, not shown: it is not valid utf-8 (at byte 3)]"
    )
    # It says Latin-1 (every byte decodes) about binary content: control characters give it away.
    binary = blob_text("x://z", "text/plain; charset=latin-1", b64(b"\x00\x01\x02zip\x03"))
    assert (
        binary is not None
        and "not shown: decoded as iso8859-1 it holds control characters" in binary
    )
    unknown = blob_text("x://u", "text/plain; charset=klingon", b64(b"qapla"))
    assert (
        unknown
        == "[resource x://u: text/plain; charset=klingon, 5 bytes, not shown: unknown charset]"
    )
    assert blob_text("x://n", "text/plain", "not base64!") == (
        "[resource x://n: text/plain, not shown: its content is not valid base64]"
    )


def test_a_huge_text_blob_is_named_not_decoded() -> None:
    huge = "QUFB" * (TEXT_BLOB_MAX_BYTES // 3 + 10)  # "AAA" repeated, past the cap
    text = blob_text("x://huge", "text/plain", huge)
    assert text is not None and text.startswith("[resource x://huge: text/plain, about 1000")
    assert "not shown: more text than the 1000 kB a text resource may bring" in text


def test_an_embedded_text_blob_in_a_tool_result_is_read_as_text() -> None:
    blob = types.BlobResourceContents(
        uri="notes://today", mime_type="text/markdown", blob=b64(b"# Today\n")
    )
    result = types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=blob)])
    output = tool_output("notes", "today", result)
    assert output.content == "[resource notes://today]\n# Today\n"


async def test_a_storm_of_updates_is_one_note_naming_each_followed_uri_once() -> None:
    followed = {f"storm://{n}" for n in range(5)}
    subscriptions = ResourceSubscriptions(
        server="storm", client=lambda: None, followed=set(followed)
    )
    for n in range(20_000):
        uri = f"storm://{n % 10}"  # half of them never followed
        await subscriptions.on_message(
            types.ResourceUpdatedNotification(
                params=types.ResourceUpdatedNotificationParams(uri=uri)
            )
        )
    assert subscriptions.changed == followed  # bounded by what the pod follows
    note = subscriptions.take_note()
    assert note is not None
    assert note.text.startswith(
        "MCP server storm says 5 resources you read changed since: storm://0,"
    )
    assert all(note.text.count(uri + ",") + note.text.count(uri + ".") == 1 for uri in followed)
    assert subscriptions.take_note() is None
