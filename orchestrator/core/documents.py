"""PDFs the model can read: whether bytes are a PDF the API takes, its pages, its token cost.

The Messages API reads a PDF sent as a ``document`` block with a base64 source of
``application/pdf``. Its documented limits hold for a whole request: at most 32 MB and at most
100 PDF pages, and no encrypted (password-protected) PDF. A PDF that breaks them would make
the API refuse every request while it stays in the conversation, so one is attached only when
it is well inside them, and named with the reason otherwise:

* its bytes start with ``%PDF-`` (the type a server claims is not proof);
* it is not encrypted;
* its pages can be counted and number at most :data:`PDF_MAX_PAGES`;
* it is at most :data:`PDF_MAX_BYTES`, which leaves room in the request for everything else.

Each page costs its text plus an image of the page (:data:`PDF_PAGE_TOKENS`).

All functions here are pure, over bytes.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from orchestrator.errors import PodRuntimeError

if TYPE_CHECKING:  # the SDK is imported only by the provider that talks to the API
    from anthropic.types import DocumentBlockParam

PDF_MEDIA_TYPE: Literal["application/pdf"] = "application/pdf"

PDF_MAX_PAGES = 100
"""The API's limit on PDF pages in one request."""

REQUEST_MAX_BYTES = 32_000_000
"""The API's limit on one request's body (documented as 32 MB)."""

PDF_MAX_BYTES = 20_000_000
"""The largest PDF attached (the file, before base64): its base64 is 4/3 of it, about 26.7 MB,
which leaves some 5 MB of the request's :data:`REQUEST_MAX_BYTES` for the conversation."""

PDF_PAGE_TOKENS = 2_500
"""What one page is assumed to cost. The API extracts each page's text (documented as 1,500 to
3,000 tokens for a page of text) and adds the page as an image; a page of text is reported to
cost about 2,300 to 2,500 in all. The context module calibrates estimates with real counts."""

_MAGIC = b"%PDF-"
_SCAN_LIMIT = 64 * 1024
"""How far to look around a page tree node for the bounds of its dictionary."""
_INFLATE_LIMIT = 64 * 1024 * 1024
"""How much of a PDF's compressed object streams is inflated, at most, to find its pages."""

_PAGES_NODE = re.compile(rb"/Type\s*/Pages(?![A-Za-z0-9])")
_PAGE_LEAF = re.compile(rb"/Type\s*/Page(?![A-Za-z0-9])")
_COUNT = re.compile(rb"/Count\s+(\d+)")
_ENCRYPT = re.compile(rb"/Encrypt(?![A-Za-z0-9])")
_OBJECT_STREAM = re.compile(rb"/Type\s*/ObjStm(?![A-Za-z0-9])")
_STREAM_START = re.compile(rb"stream\r?\n")


class DocumentRefused(PodRuntimeError, ValueError):
    """Bytes that are not sent as a document; the message says why, for the model to read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentData:
    """A PDF as the wire carries it: base64 data and the pages it was counted to have."""

    media_type: Literal["application/pdf"] = PDF_MEDIA_TYPE
    data: str
    """Base64 of the file's bytes."""
    pages: int

    def block(self) -> DocumentBlockParam:
        """The wire ``document`` block."""
        return {
            "type": "document",
            "source": {"type": "base64", "media_type": self.media_type, "data": self.data},
        }

    @property
    def tokens(self) -> int:
        """What the document costs in a request (without its block's framing)."""
        return document_tokens(self.pages)


def document_tokens(pages: int) -> int:
    """What a PDF of this many pages is assumed to cost."""
    return max(1, pages) * PDF_PAGE_TOKENS


_PAGES_OF: dict[int, tuple[str, int]] = {}
"""Pages of base64 PDFs already counted, by the identity of their data: a document stays in
the requests of many rounds, and decoding megabytes for each estimate would cost more than
the round."""


def base64_document_tokens(data: str) -> int:
    """:func:`document_tokens` of a base64 PDF as a wire block carries it (one page when its
    pages cannot be counted)."""
    cached = _PAGES_OF.get(id(data))
    if cached is not None and cached[0] is data:
        return document_tokens(cached[1])
    try:
        pages = pdf_pages(base64.b64decode(data, validate=False)) or 1
    except (ValueError, binascii.Error):
        pages = 1
    if len(_PAGES_OF) > 64:
        _PAGES_OF.clear()
    _PAGES_OF[id(data)] = (data, pages)
    return document_tokens(pages)


def base64_size(data: str) -> int:
    """The number of bytes a base64 string decodes to (without decoding it)."""
    return len(data) * 3 // 4 - data[-2:].count("=")


def pdf_document(data: bytes, *, encoded: str | None = None) -> DocumentData:
    """The wire document of a file's bytes (``encoded``: their base64, when at hand).

    Raises :class:`DocumentRefused` saying why when they are not a PDF the API takes."""
    if len(data) > PDF_MAX_BYTES:
        raise DocumentRefused(_too_large(len(data)))
    if not data.startswith(_MAGIC):
        raise DocumentRefused("not a PDF: it does not start with %PDF-")
    if _ENCRYPT.search(data):
        raise DocumentRefused("an encrypted PDF, which the API does not read")
    pages = pdf_pages(data)
    if pages is None:
        raise DocumentRefused("a PDF whose pages could not be counted")
    if pages > PDF_MAX_PAGES:
        raise DocumentRefused(
            f"a PDF of {pages} pages; the API reads at most {PDF_MAX_PAGES} in a request"
        )
    if encoded is None:
        encoded = base64.b64encode(data).decode("ascii")
    return DocumentData(data=encoded, pages=pages)


def pdf_from_base64(encoded: str) -> DocumentData:
    """:func:`pdf_document` of base64 data (an MCP blob); raises :class:`DocumentRefused`."""
    size = base64_size(encoded)
    if size > PDF_MAX_BYTES:
        raise DocumentRefused(_too_large(size))  # before decoding megabytes for nothing
    try:
        data = base64.b64decode(encoded, validate=True)
    except (ValueError, binascii.Error):
        raise DocumentRefused("not a PDF: its data is not valid base64") from None
    return pdf_document(data, encoded=encoded)


def _too_large(size: int) -> str:
    return (
        f"a PDF too large to send ({size / 1e6:.1f} MB; at most {PDF_MAX_BYTES / 1e6:.0f} MB "
        f"of PDF fit in the API's {REQUEST_MAX_BYTES / 1e6:.0f} MB request)"
    )


def pdf_pages(data: bytes) -> int | None:
    """The number of pages of a PDF, from its page tree; None when it cannot be told.

    The root of the page tree (a ``/Type /Pages`` node) holds the count of all pages. A PDF
    updated in place keeps its older trees too, so the largest count is taken: counting too
    many pages is the safe side. Without a readable tree node, the page objects themselves
    are counted. A PDF 1.5 file may keep all of them in compressed object streams, which are
    then inflated and read the same way.
    """
    count = _count_pages(data)
    if count is not None:
        return count
    inflated = b"".join(_object_streams(data))
    return _count_pages(inflated) if inflated else None


def _count_pages(buf: bytes) -> int | None:
    counts = [
        int(match.group(1))
        for node in _PAGES_NODE.finditer(buf)
        if (match := _COUNT.search(_enclosing_dict(buf, node.start()))) is not None
    ]
    if counts:
        return max(counts)
    leaves = sum(1 for _ in _PAGE_LEAF.finditer(buf))
    return leaves or None


def _enclosing_dict(buf: bytes, at: int) -> bytes:
    """The ``<< ... >>`` dictionary around position ``at`` (its nested ones included)."""
    start = at
    depth = 0
    floor = max(0, at - _SCAN_LIMIT)
    while start > floor:
        pair = buf[start - 2 : start]
        if pair == b">>":
            depth += 1
            start -= 2
        elif pair == b"<<":
            start -= 2
            if depth == 0:
                break
            depth -= 1
        else:
            start -= 1
    end = at
    depth = 0
    ceiling = min(len(buf), at + _SCAN_LIMIT)
    while end < ceiling:
        pair = buf[end : end + 2]
        if pair == b"<<":
            depth += 1
            end += 2
        elif pair == b">>":
            end += 2
            if depth == 0:
                break
            depth -= 1
        else:
            end += 1
    return buf[start:end]


def _object_streams(data: bytes) -> list[bytes]:
    """The inflated contents of the PDF's compressed object streams (``/Type /ObjStm``)."""
    out: list[bytes] = []
    budget = _INFLATE_LIMIT
    view = memoryview(data)  # slices of it copy nothing
    for node in _OBJECT_STREAM.finditer(data):
        header = _enclosing_dict(data, node.start())
        if b"/FlateDecode" not in header:
            continue
        begin = _STREAM_START.search(data, node.start())
        if begin is None:
            continue
        inflater = zlib.decompressobj()
        try:
            # The inflater stops at the end of the compressed data, so /Length (which may
            # be an indirect reference) is not needed.
            chunk = inflater.decompress(view[begin.end() :], budget)
        except zlib.error:
            continue
        out.append(chunk)
        budget -= len(chunk)
        if budget <= 0:
            break
    return out
