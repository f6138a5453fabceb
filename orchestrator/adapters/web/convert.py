"""What a fetched body becomes for the model: markdown, text, a PDF document, an image, or a note.

The body's own bytes decide before the server's claim: a body that starts like a PDF is a PDF
(and passes the same checks as any PDF the pod sends, :func:`orchestrator.core.documents.pdf_document`),
one that starts like a PNG, JPEG, GIF or WebP is an image (at most the API's 5 MB). Then:

* **HTML** (``text/html``, ``application/xhtml+xml``, or an untyped body that opens like HTML)
  becomes markdown through trafilatura: it extracts the page's main content (navigation,
  footers, scripts, styles and hidden elements left out) and writes headings, lists, links,
  code and tables as markdown, with the title in a short header. When it finds no main
  content (a page that is all navigation, a tiny page) the page's whole text is used.
* **text** (``text/*``, JSON, XML, JavaScript, YAML, or untyped bytes that decode as UTF-8
  without NUL bytes) is decoded with the charset the server gave, else UTF-8.
* anything else is named, with its type and size, and not shown.

trafilatura was picked over markdownify because the model reads the article, not the page:
markdownify converts every element, menus and cookie banners included, while trafilatura
(maintained, widely used for exactly this) drops the boilerplate and so saves most of a
page's tokens; it also handles broken markup and encodings itself, and leaves out text that
the page hides with ``display:none``.
"""

from __future__ import annotations

from configparser import ConfigParser
from dataclasses import dataclass
from functools import cache

from orchestrator.core.documents import DocumentData, DocumentRefused, pdf_document
from orchestrator.core.images import IMAGE_MAX_BYTES, ImageData, image_from_bytes

__all__ = ["Converted", "convert"]

_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "image/svg+xml",
    }
)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_SNIFF = 1024
"""How much of an untyped body is looked at to tell HTML from other text."""


@dataclass(frozen=True, slots=True)
class Converted:
    """A body as the model gets it: exactly one of text, image, document, or only a note."""

    what: str
    """What the body was, in a few words (``HTML as markdown``, ``a PDF of 3 pages``)."""
    text: str | None = None
    image: ImageData | None = None
    document: DocumentData | None = None
    note: str | None = None
    """Why nothing of it is shown (a binary file, an image too large), for the model."""


def convert(body: bytes, content_type: str, charset: str | None, url: str) -> Converted:
    """The body of a response from ``url`` as the model gets it (CPU-bound: call it in a thread)."""
    size = f"{len(body):,} bytes"
    if body.startswith(b"%PDF-") or content_type == "application/pdf":
        try:
            document = pdf_document(body)
        except DocumentRefused as exc:
            return Converted(what=f"a PDF ({size})", note=f"not shown: {exc}")
        return Converted(what=f"a PDF of {document.pages} pages ({size})", document=document)
    image = image_from_bytes(body)
    if image is not None:
        kind = image.media_type.removeprefix("image/").upper()
        if len(body) > IMAGE_MAX_BYTES:
            limit = IMAGE_MAX_BYTES // (1024 * 1024)
            return Converted(
                what=f"a {kind} image ({size})",
                note=f"not shown: the API takes images of at most {limit} MB",
            )
        return Converted(what=f"a {kind} image ({size})", image=image)
    if content_type in _HTML_TYPES or (not content_type and _looks_html(body)):
        return Converted(what="HTML as markdown", text=html_markdown(body, charset, url))
    if _is_text_type(content_type) or (not content_type and _decodes_as_text(body)):
        return Converted(what=f"{content_type or 'text'} ({size})", text=_decode(body, charset))
    return Converted(
        what=f"{content_type or 'a file of unknown type'} ({size})",
        note=(
            "not shown: web_fetch shows HTML, text, PDFs and images (PNG, JPEG, GIF, WebP); "
            "this is none of them"
        ),
    )


def html_markdown(body: bytes, charset: str | None, url: str) -> str:
    """The page's main content as markdown (its whole text when no main content is found)."""
    import trafilatura  # ~0.15 s to import: only a pod that fetches a page pays it

    html: str | bytes = _decode(body, charset) if charset else body
    text = trafilatura.extract(
        html,
        url=url,
        config=_config(),
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_images=False,
        include_comments=False,
        with_metadata=True,
        favor_recall=True,
    )
    if not text or not text.strip():
        text = trafilatura.html2txt(html) or ""
    text = _without_fingerprint(text.strip())
    return text + "\n" if text else ""


@cache
def _config() -> ConfigParser:
    """trafilatura's settings, but a short page's main content counts too: by default less
    than 250 characters of it makes trafilatura fall back to the flat text of the whole page,
    hidden elements included."""
    from trafilatura.settings import use_config

    config = use_config()
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")
    config.set("DEFAULT", "MIN_OUTPUT_SIZE", "1")
    return config


def _without_fingerprint(text: str) -> str:
    """trafilatura's metadata header without its ``fingerprint`` (a hash, of no use to read)."""
    if not text.startswith("---\n"):
        return text
    header, sep, rest = text[4:].partition("\n---\n")
    if not sep:
        return text
    kept = [line for line in header.split("\n") if not line.startswith("fingerprint:")]
    return "---\n" + "\n".join(kept) + "\n---\n" + rest


def _is_text_type(content_type: str) -> bool:
    return (
        content_type.startswith("text/")
        or content_type in _TEXT_TYPES
        or content_type.endswith(("+json", "+xml"))
    )


def _looks_html(body: bytes) -> bool:
    head = body[:_SNIFF].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html", b"<head", b"<body"))


def _decodes_as_text(body: bytes) -> bool:
    head = body[: 64 * 1024]
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # only a character cut at the end of the sample
    return True


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")
