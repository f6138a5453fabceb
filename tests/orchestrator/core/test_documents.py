"""PDFs checked as the API would take them: the magic, encryption, pages, size, and cost."""

from __future__ import annotations

import base64

import pytest

from orchestrator.core.documents import (
    PDF_MAX_BYTES,
    PDF_MAX_PAGES,
    PDF_PAGE_TOKENS,
    DocumentRefused,
    base64_size,
    pdf_document,
    pdf_from_base64,
    pdf_pages,
)
from tests.pdf_files import minimal_pdf, object_stream_pdf


@pytest.mark.parametrize("pages", [1, 3, PDF_MAX_PAGES])
def test_a_real_pdf_is_a_document_block_that_knows_its_pages(pages: int) -> None:
    data = minimal_pdf(pages)
    document = pdf_document(data)
    assert document.pages == pages
    assert document.tokens == pages * PDF_PAGE_TOKENS
    assert document.block() == {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(data).decode("ascii"),
        },
    }
    assert pdf_from_base64(document.data) == document


def test_pages_are_counted_inside_compressed_object_streams() -> None:
    assert pdf_pages(object_stream_pdf(7)) == 7
    with pytest.raises(DocumentRefused, match="a PDF of 101 pages; the API reads at most 100"):
        pdf_document(object_stream_pdf(PDF_MAX_PAGES + 1))


def test_a_pdf_updated_in_place_counts_its_largest_page_tree() -> None:
    # An incremental update appends a new page tree; the old one stays in the file.
    updated = minimal_pdf(2) + b"7 0 obj\n<< /Type /Pages /Kids [] /Count 5 >>\nendobj\n"
    assert pdf_pages(updated) == 5


def test_page_objects_are_counted_when_no_tree_says_how_many() -> None:
    pages = b"".join(b"%d 0 obj << /Type /Page >> endobj\n" % i for i in range(3))
    assert pdf_pages(b"%PDF-1.4\n" + pages) == 3


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"<html>not a pdf</html>", "not a PDF: it does not start with %PDF-"),
        (
            minimal_pdf(PDF_MAX_PAGES + 1),
            "a PDF of 101 pages; the API reads at most 100 in a request",
        ),
        (
            minimal_pdf(1).replace(b"/Root 1 0 R", b"/Root 1 0 R /Encrypt 9 0 R"),
            "an encrypted PDF, which the API does not read",
        ),
        (b"%PDF-1.7\nnothing here\n%%EOF\n", "a PDF whose pages could not be counted"),
    ],
    ids=["html", "101 pages", "encrypted", "no pages"],
)
def test_what_the_api_would_refuse_is_refused_with_why(data: bytes, why: str) -> None:
    with pytest.raises(DocumentRefused) as refused:
        pdf_document(data)
    assert str(refused.value) == why


def test_a_pdf_too_large_for_a_request_is_refused_before_it_is_decoded() -> None:
    big = minimal_pdf(1) + b"%" * PDF_MAX_BYTES
    with pytest.raises(DocumentRefused, match=r"a PDF too large to send \(20\.0 MB; at most 20 MB"):
        pdf_document(big)
    encoded = base64.b64encode(big).decode("ascii")
    assert base64_size(encoded) == len(big)
    with pytest.raises(DocumentRefused, match="too large"):
        pdf_from_base64(encoded)
    with pytest.raises(DocumentRefused, match="not a PDF: its data is not valid base64"):
        pdf_from_base64("JVBERi0x*!!")
