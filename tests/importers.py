"""Helpers the importer tests share: a file or folder parsed by a format's ``parse``, the records
of one kind, and one format's real fixtures (a skipped case when ../shared/fixtures is absent)."""

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
