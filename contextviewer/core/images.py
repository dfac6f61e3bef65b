"""Image dimensions from the first bytes of an image (PNG IHDR, GIF header, WebP VP8/VP8L/VP8X,
JPEG SOF), for the image token estimate (tokens.estimate_image_tokens). Pure: reads no file.

The importers hold an image's base64 data only while they parse its line; they decode a prefix of
it (HEADER_B64_CHARS: a JPEG's SOF marker may sit after its EXIF block) and keep width and height
on the block. The data itself stays in the raw record.
"""

from __future__ import annotations

import base64
import binascii
import struct

# A prefix of the base64 data to decode: 96 KB of base64 = 72 KB of image, past any usual EXIF block.
HEADER_B64_CHARS = 96 * 1024

_SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) read from an image's header, or None for an unknown or truncated one."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return _valid(width, height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return _valid(width, height)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data)
    if data[:2] == b"\xff\xd8":
        return _jpeg(data)
    return None


def dimensions_b64(data: str) -> tuple[int, int] | None:
    """dimensions() of base64 data (a data: URL's payload or an API block's source.data)."""
    if not isinstance(data, str) or not data:
        return None
    if data.startswith("data:"):
        data = data.partition(",")[2]
    prefix = data[:HEADER_B64_CHARS]
    prefix = prefix[: len(prefix) - len(prefix) % 4]
    try:
        raw = base64.b64decode(prefix, validate=False)
    except (binascii.Error, ValueError):
        return None
    return dimensions(raw)


def _valid(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _webp(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
        return _valid(width, height)
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return _valid((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return _valid(width & 0x3FFF, height & 0x3FFF)
    return None


def _jpeg(data: bytes) -> tuple[int, int] | None:
    i = 2
    n = len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            i += 1  # tolerate fill bytes
            continue
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in _SOF_MARKERS:
            if i + 9 > n:
                return None
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return _valid(width, height)
        if marker == 0xDA or length < 2:  # start of scan before any frame header: give up
            return None
        i += 2 + length
    return None
