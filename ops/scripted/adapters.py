"""Every protocol the scripted server speaks, in the order it tries them."""

from __future__ import annotations

from ops.scripted.anthropic import Anthropic
from ops.scripted.chat import Chat
from ops.scripted.gemini import Gemini
from ops.scripted.responses import Responses


def all_adapters() -> list:
    return [Anthropic(), Responses(), Chat(), Gemini()]
