"""Images read as the API reads them: kind from the first bytes, size from the header, cost."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from orchestrator.core.images import (
    FALLBACK_TOKENS,
    base64_image_tokens,
    image_from_bytes,
    image_tokens,
    pixel_size,
    sniff_media_type,
)


def encoded(fmt: str, size: tuple[int, int], **options: object) -> bytes:
    """A real image file, written by Pillow."""
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buffer, format=fmt, **options)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("fmt", "media_type", "options"),
    [
        ("PNG", "image/png", {}),
        ("JPEG", "image/jpeg", {}),
        ("JPEG", "image/jpeg", {"progressive": True, "exif": b"Exif\x00\x00" + b"\x00" * 4000}),
        ("GIF", "image/gif", {}),
        ("WEBP", "image/webp", {}),
        ("WEBP", "image/webp", {"lossless": True}),
    ],
)
def test_kind_and_size_come_from_the_bytes(
    fmt: str, media_type: str, options: dict[str, object]
) -> None:
    data = encoded(fmt, (321, 123), **options)
    assert sniff_media_type(data) == media_type
    assert pixel_size(data) == (321, 123)
    image = image_from_bytes(data)
    assert image is not None and base64.b64decode(image.data) == data
    assert image.block() == {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": image.data},
    }


def test_a_file_that_only_claims_to_be_an_image_is_not_one() -> None:
    assert sniff_media_type(b"not really a png") is None
    assert image_from_bytes(b"GIF8") is None
    assert pixel_size(b"\x89PNG\r\n\x1a\n") is None  # a header cut short


def test_tokens_follow_the_documented_rule() -> None:
    assert image_tokens((750, 1)) == 1
    assert image_tokens((1000, 1000)) == 1334  # 1,000,000 / 750, rounded up
    # Scaled so the long edge is 1568 px: 1568 x 784.
    assert image_tokens((3136, 1568)) == image_tokens((1568, 784)) == 1640
    assert image_tokens(None) == FALLBACK_TOKENS


def test_base64_cost_reads_only_the_header() -> None:
    data = encoded("PNG", (200, 150))
    assert base64_image_tokens(base64.b64encode(data).decode()) == 40
    assert base64_image_tokens("!!!not base64") == FALLBACK_TOKENS
