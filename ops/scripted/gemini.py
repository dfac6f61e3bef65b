"""Placeholder: the Gemini adapter of the scripted server (filled in by the driver work for its agent)."""

from __future__ import annotations

from typing import Any


class Gemini:
    name = "gemini"

    def handles(self, method: str, path: str, headers: dict[str, str]) -> bool:
        return False

    def view(self, path: str, body: Any):
        return None

    def answer(self, handler, ex) -> None:  # pragma: no cover
        raise NotImplementedError

    answer_other = answer
