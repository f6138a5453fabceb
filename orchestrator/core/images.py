"""Images the model can see: which files are images, their size in pixels, their token cost.

The Messages API takes PNG, JPEG, GIF and WebP images as base64 ``image`` blocks of at most
5 MB each. It scales an image whose long edge passes 1568 px down to that edge, and an image
costs about ``width * height / 750`` tokens after scaling (so at most about 1,600 at the
usual aspect ratios). The kind of an image is read from its first bytes, never from its
name: a ``.png`` that is not a PNG is not sent as one.

All functions here are pure, over bytes.
"""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass

IMAGE_MAX_BYTES = 5 * 1024 * 1024
"""The API's limit on one image (the raw file, before base64)."""

IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The kinds of image the API takes."""

IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "webp"})
"""Extensions worth sniffing as images (the content decides)."""

MAX_LONG_EDGE = 1568
"""The API scales images down to this long edge before counting them."""

PIXELS_PER_TOKEN = 750
FALLBACK_TOKENS = 1600
"""The cost assumed when an image's size cannot be read: about the most one image costs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageData:
    """An image as the wire carries it: its media type and base64 data."""

    media_type: str
    data: str
    """Base64 of the file's bytes."""

    def block(self) -> dict[str, object]:
        """The wire ``image`` block."""
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": self.media_type, "data": self.data},
        }


def sniff_media_type(data: bytes) -> str | None:
    """``image/png`` (or jpeg, gif, webp) from a file's first bytes; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_from_bytes(data: bytes) -> ImageData | None:
    """The wire image of a file's bytes, or None when they are not an image the API takes."""
    media_type = sniff_media_type(data)
    if media_type is None:
        return None
    return ImageData(media_type=media_type, data=base64.b64encode(data).decode("ascii"))


def pixel_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from an image's header, or None when it cannot be read."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            width, height = struct.unpack(">II", data[16:24])
            return width, height
        if data.startswith((b"GIF87a", b"GIF89a")):
            width, height = struct.unpack("<HH", data[6:10])
            return width, height
        if data.startswith(b"\xff\xd8"):
            return _jpeg_size(data)
        if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
            return _webp_size(data)
    except struct.error:
        return None
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    # Walk the segments to the first start-of-frame marker (C0-CF but not C4, C8, CC).
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def image_tokens(size: tuple[int, int] | None) -> int:
    """What an image of this pixel size costs, after the API's scaling."""
    if size is None or min(size) <= 0:
        return FALLBACK_TOKENS
    width, height = size
    scale = min(1.0, MAX_LONG_EDGE / max(width, height))
    return max(1, math.ceil(width * scale * (height * scale) / PIXELS_PER_TOKEN))


def base64_image_tokens(data: str) -> int:
    """:func:`image_tokens` of a base64 image, decoding only the header's worth of it."""
    head = data[:87_384]  # 64 KiB of bytes: a JPEG's frame header can sit after its EXIF data
    head = head[: len(head) - len(head) % 4]
    try:
        raw = base64.b64decode(head, validate=False)
    except ValueError:
        return FALLBACK_TOKENS
    return image_tokens(pixel_size(raw))
