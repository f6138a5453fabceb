"""Small real PDFs, built byte by byte, for the tests of documents (no PDF library needed)."""

from __future__ import annotations

import zlib


def _assemble(header: bytes, objects: list[bytes], trailer: bytes) -> bytes:
    """A PDF file of numbered objects (1, 2, …) with a cross-reference table that points at
    each, so a reader can find them by offset as the format wants."""
    out = bytearray(header)
    offsets: list[int] = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R " % (len(objects) + 1) + trailer + b">>\n"
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def minimal_pdf(pages: int = 1, text: str = "Hello from a PDF") -> bytes:
    """A valid PDF of ``pages`` letter-sized pages, each saying ``text`` (and its number) in
    Helvetica: catalog, page tree, pages, their content streams, one font."""
    font = 3 + 2 * pages
    kids = b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
    ]
    for i in range(pages):
        stream = b"BT /F1 18 Tf 72 700 Td (%s, page %d) Tj ET" % (text.encode("latin-1"), i + 1)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (4 + 2 * i, font)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return _assemble(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", objects, b"")


def object_stream_pdf(pages: int) -> bytes:
    """A PDF 1.5 file whose catalog, page tree and pages all sit in one compressed object
    stream: nothing about its pages can be read without inflating it."""
    first = 3
    inner = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = b" ".join(b"%d 0 R" % (first + i) for i in range(pages))
    inner.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages)
    inner += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    body = b""
    index = b""
    for number, obj in enumerate(inner, start=1):
        index += b"%d %d " % (number, len(body))
        body += obj + b" "
    raw = index + body
    packed = zlib.compress(raw)
    stream = (
        b"<< /Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d >>\nstream\n"
        % (len(inner), len(index), len(packed))
        + packed
        + b"\nendstream"
    )
    return b"%PDF-1.5\n" + b"%d 0 obj\n" % (len(inner) + 1) + stream + b"\nendobj\n%%EOF\n"
