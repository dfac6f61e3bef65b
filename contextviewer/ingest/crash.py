"""How a parsing process ended, for the message of a file whose parser crashed: the tally of how
far it got (shared memory the forked process writes into), its wait status in words, and the
errors (prepare.py and child.py both raise them; this module imports neither)."""

from __future__ import annotations

import mmap
import os
import signal
import struct
from collections.abc import Iterable, Iterator

from contextviewer.core.records import ImportProgress


class PrepareProcessError(RuntimeError):
    """The preparing process stopped without saying why (killed, out of memory)."""


_TALLY = struct.Struct("<qq")  # records yielded, line of the last one


class Tally:
    """How far a parse got, written by the parsing process, read by the writer's after a crash."""

    def __init__(self) -> None:
        self.map = mmap.mmap(-1, _TALLY.size)  # anonymous and shared: the forked child writes into it

    def reset(self) -> None:
        _TALLY.pack_into(self.map, 0, 0, 0)

    def counting(self, records: Iterable) -> Iterator:
        count, shared, pack = 0, self.map, _TALLY.pack_into
        pack(shared, 0, 0, 0)  # a file asked for ahead (child.py) starts its own count
        for record in records:
            if not isinstance(record, ImportProgress):
                count += 1
                pack(shared, 0, count, getattr(record, "line_no", 0) or 0)
            yield record

    def read(self) -> tuple[int, int]:
        return _TALLY.unpack_from(self.map, 0)


def ending(status: int) -> str:
    """How a process ended, from its wait status, in words."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return f"signal {name}: killed, or out of memory" if number == signal.SIGKILL else f"signal {name}"
    return f"exit status {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"wait status {status}"


class ImporterCrashed(PrepareProcessError):
    """The parsing process died while it read a file (a signal, an abort, the out-of-memory killer)."""

    def __init__(self, status: int, records: int, line: int, name: str = ""):
        self.status, self.records, self.line, self.name = status, records, line, name
        super().__init__(self.message())

    def message(self, name: str = "") -> str:
        name = name or self.name
        where = f"after record {self.records}" if self.records else "before its first record"
        of = f" of {name}" if name else ""
        at = f" (line {self.line})" if self.records and self.line else ""
        kept = f"the {self.records} record{'s' if self.records != 1 else ''} read before the crash were not kept either"
        return (
            f"the importer crashed ({ending(self.status)}) {where}{of}{at}: its parsing process stopped "
            f"unexpectedly; nothing of this file was stored ({kept if self.records else 'no record was read'})"
        )
