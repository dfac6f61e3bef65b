"""Every protocol the scripted server speaks, in the order it tries them."""

from __future__ import annotations


def all_adapters() -> list:
    from ops.scripted.anthropic import Anthropic  # noqa: PLC0415
    from ops.scripted.chat import Chat  # noqa: PLC0415
    from ops.scripted.gemini import Gemini  # noqa: PLC0415
    from ops.scripted.responses import Responses  # noqa: PLC0415

    return [Anthropic(), Responses(), Chat(), Gemini()]
