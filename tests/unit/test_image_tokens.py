"""Image tokens from the dimensions in the image's header (PNG, GIF, WebP, JPEG), Anthropic's rule."""

import base64
import struct

import pytest

from contextviewer.core import images, tokens
from contextviewer.importers.common import anthropic_block


def png(width, height):
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0) + b"\0" * 16


def gif(width, height):
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\0" * 8


def webp_vp8x(width, height):
    body = b"VP8X" + struct.pack("<I", 10) + b"\0\0\0\0" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


def jpeg(width, height, exif=2000):
    app1 = b"\xff\xe1" + struct.pack(">H", exif + 2) + b"E" * exif  # an EXIF block before the frame header
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\0" * 9
    return b"\xff\xd8" + app1 + sof + b"\xff\xda" + b"\0" * 20


@pytest.mark.parametrize("make", [png, gif, webp_vp8x, jpeg])
def test_dimensions_from_each_header(make):
    assert images.dimensions(make(640, 480)) == (640, 480)
    assert images.dimensions_b64(base64.b64encode(make(300, 200)).decode()) == (300, 200)


def test_unknown_or_truncated_headers_give_none():
    assert images.dimensions(b"not an image") is None
    assert images.dimensions(png(10, 10)[:20]) is None
    assert images.dimensions_b64("!!!") is None
    assert images.dimensions(jpeg(10, 10)[:30]) is None


def test_a_512_pixel_square_png_counts_about_350_tokens():
    data = base64.b64encode(png(512, 512)).decode()
    block = anthropic_block({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}})
    assert (block.width, block.height) == (512, 512)
    counts = tokens.count_message("user", [block.as_dict()])
    assert counts["media"] == 350  # 512 * 512 / 750, not the 65 the data size suggested


def test_large_images_are_resized_before_counting():
    # long edge to 1568 px, then under ~1.2 MP: never more than 1,600 tokens
    assert tokens.estimate_image_tokens(width=4000, height=1000) == round(1568 * 392 / 750)
    assert tokens.estimate_image_tokens(width=3000, height=3000) == 1600


def test_images_inside_a_tool_result_count_by_their_size():
    data = base64.b64encode(png(512, 512)).decode()
    block = anthropic_block({"type": "tool_result", "tool_use_id": "t1", "content": [
        {"type": "text", "text": "screenshot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
    ]})
    assert block.images == 1 and block.image_sizes == [[512, 512]]
    assert tokens.count_message("user", [block.as_dict()])["media"] == 350
