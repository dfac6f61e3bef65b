"""Helpers the importer tests share: a file or folder parsed by a format's ``parse``, the records
of one kind, one format's real fixtures (a skipped case when ../shared/fixtures is absent), and
counts a person makes of a fixture with plain ``json``, independently of the importers."""

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from contextviewer.importers.formats import ParseInput
from tests.conftest import shared_fixtures_dir


def parse_path(parse: Callable[[ParseInput], Iterator], path: Path) -> list:
    """Every record ``parse`` yields for ``path``: a file read as a stream, a folder by its path."""
    if path.is_dir():
        return list(parse(ParseInput(path=path, stream=None)))
    with open(path, "rb") as fh:
        return list(parse(ParseInput(path=path, stream=fh)))


def of(records, kind) -> list:
    return [r for r in records if isinstance(r, kind)]


def fixture_files(folder: str, pattern: str = "*") -> list:
    """The fixtures of ``folder`` (under ../shared/fixtures) matching ``pattern``, sorted; one
    skipped parameter when the fixtures are absent."""
    root = shared_fixtures_dir()
    if root is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures is absent"))]
    return sorted((root / folder).glob(pattern))


def gemini_counts(path: Path) -> tuple[int, int, int]:
    """(messages, model calls, tool calls) of a Gemini CLI chat: distinct message ids plus one tool
    message per call with a result; gemini messages with tokens; toolCalls entries."""
    text = path.read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
        items = (doc.get("messages") or doc.get("history")) if isinstance(doc, dict) else doc
    except ValueError:  # JSON lines: the last line of each message id
        latest: dict = {}
        for line in text.splitlines():
            obj = json.loads(line)
            if isinstance(obj.get("id"), str):
                latest[obj["id"]] = obj
        items = list(latest.values())
    calls = [c for m in items for c in (m.get("toolCalls") or [])]
    results = sum(1 for c in calls if c.get("result") or c.get("resultDisplay"))
    usage = sum(1 for m in items if m.get("type") == "gemini" and isinstance(m.get("tokens"), dict))
    return len(items) + results, usage, len(calls)
