"""Faults planted in the registered Claude Code format, for the tests of a parser that crashes or
raises (test_import_crash_isolation) and of a worker whose parts fail (test_import_fanout, whose
worker process plants them before it starts: its pool and parsing processes inherit them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from contextviewer.importers import formats


def registry_with_fault(fault: Callable[[object, int], None]) -> list:
    """The format registry with Claude Code's parse calling `fault(source, n)` before it yields its
    record number `n` of each file (0 first); the fault kills the process, raises, or returns."""
    registry = formats.registry()
    index = next(i for i, f in enumerate(registry) if f.name == "claude-code")
    real_parse = registry[index].parse

    def parse(source) -> Iterator:
        for n, record in enumerate(real_parse(source)):
            fault(source, n)
            yield record

    patched = list(registry)
    patched[index] = dataclasses.replace(registry[index], parse=parse)
    return patched
