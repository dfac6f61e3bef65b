"""The per-message work of an import that needs no database, done ahead of the row maker
(row_maker.py, which turns the records into rows; "the writer" below is the process that holds
the database transaction and writes them).

`prepare_ahead(records)` turns the importer's records into what the row maker stores, in order:
every MessageRecord becomes a PreparedMessage (blocks, flags and token counts already encoded as
JSON, text no column can hold replaced, secrets masked and flagged, and the few figures the writer
needs from the blocks), every other record passes through unchanged.

The work runs beside the writer, which keeps the database transaction on its own thread:
- on a second thread for a small input (tiktoken and the database drivers release the GIL);
- in a forked process for a large one, so that parsing and tokenizing, which mostly hold the GIL,
  run on the other core. The child parses and counts tokens; a thread of the writer's process
  masks, encodes and builds the PreparedMessage (`_finish`) while the writer's inserts run. The
  child only reads the stream it inherited and writes pickled batches to a pipe: it never touches
  the database, it leaves with `os._exit`, and it stops on a broken pipe when the writer goes
  away (a crash, a cancelled job).
"""

from __future__ import annotations

import functools
import json
import operator
import os
import pickle
import queue
import re
import signal
import struct
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from contextviewer.core import secrets
from contextviewer.core import tokens as token_core
from contextviewer.core.records import ImportProgress, MessageRecord, text_of_blocks
from contextviewer.core.turns import starts_turn
from contextviewer.ingest import crash
from contextviewer.ingest.crash import PrepareProcessError  # noqa: F401 - prepare.PrepareProcessError, as callers name it

PREPARE_BATCH = 1000
WRITER_WAITS_SECONDS = 0.01  # forked path: a batch taken this fast means the writer's process waits

# JSON escapes that decode to text no database column can hold: NUL and lone surrogates. The raw
# line keeps them as written; the decoded copies get U+FFFD instead.
_MAY_HOLD_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value):
    """`value` with NUL and lone surrogates replaced by U+FFFD, through lists and dicts."""
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, list):
        return [storable(v) for v in value]
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    return value


class PreparedMessage(NamedTuple):
    """A message as the writer stores it. `blocks`, `flags` and `tokens` are encoded JSON."""

    line_no: int
    uuid: str | None
    parent_uuid: str | None
    role: str
    record_type: str
    subtype: str | None
    timestamp: Any
    session_id: str | None
    is_sidechain: bool
    agent_id: str | None
    is_meta: bool
    is_compact_summary: bool
    model: str | None
    api_message_id: str | None
    agent_kind: str | None
    raw: str
    blocks: str
    flags: str
    tokens: str
    token_total: int
    starts_turn: bool
    first_text: str | None  # the first text of the message (a conversation's title falls back to it)
    tool_calls: int
    search_text: str
    secret_values: dict | None = None  # clear secrets found (value -> kind), in memory only, never stored


_encode_json = json.JSONEncoder(ensure_ascii=False, check_circular=False, allow_nan=False).encode
_NOT_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def finite(value):
    """`value` with NaN and the infinities as the strings JSON logs write them ("NaN", "Infinity"):
    no JSON column holds them (PostgreSQL refuses the whole row). Through lists and dicts."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else _NOT_FINITE[repr(value)]
    if isinstance(value, list):
        return [finite(v) for v in value]
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    return value


def _encode(value) -> str:
    if not value:
        return "{}" if isinstance(value, dict) else "[]"
    try:
        return _encode_json(value)
    except ValueError:  # a NaN or an infinity (the raw line keeps it as written)
        return _encode_json(finite(value))


def prepare_batch(batch: list) -> list:
    """Prepare a batch of records (one tiktoken call for all its messages)."""
    return _finish(_count(batch))


# The MessageRecord fields a PreparedMessage keeps, in its order, and their index in it.
_record_fields = operator.attrgetter(*PreparedMessage._fields[: PreparedMessage._fields.index("raw")])
_FIELD = {name: i for i, name in enumerate(PreparedMessage._fields)}


def _count(batch: list, *, count: bool = True) -> list:
    """Stage one: token counts of the text as the model saw it (one tiktoken call per batch;
    tiktoken releases the GIL). A message becomes a flat tuple (record fields..., raw, blocks,
    flags, token categories), the cheapest thing to pickle. With count=False the categories are
    None, and _finish counts them."""
    out: list = []
    for record in batch:
        if isinstance(record, MessageRecord):
            blocks = [b.as_dict() for b in record.blocks]
            out.append((*_record_fields(record), record.raw, blocks, record.flags, None))
        else:
            out.append(record)
    return _counted(out) if count else out


def _counted(flat: list) -> list:
    """The flat message tuples of `flat` with their token categories, counted in one call."""
    role, record_type, is_summary = (_FIELD[name] for name in ("role", "record_type", "is_compact_summary"))
    counting = [(m[role], m[-3], m[is_summary], m[record_type]) for m in flat if type(m) is tuple]
    counted = iter(token_core.count_messages(counting, num_threads=1))
    return [(*m[:-1], next(counted)[0]) if type(m) is tuple else m for m in flat]


def _finish(counted: list) -> list:
    """Stage two: the PreparedMessage of every flat message tuple (counted first if need be)."""
    if any(type(m) is tuple and m[-1] is None for m in counted):
        counted = _counted(counted)
    return [_message(item) if type(item) is tuple else item for item in counted]


def _message(flat: tuple) -> PreparedMessage:
    """Blocks as stored (text no column can hold replaced, secrets masked in the line and the
    blocks alike, and flagged), JSON encoded once, and what the writer needs from them."""
    *fields, raw, blocks, flags, categories = flat
    _line_no, _uuid, _parent, role, _type, _subtype, _ts, _session, _side, _agent, is_meta, is_summary, _model, _api_id, _kind = fields
    if _MAY_HOLD_UNSTORABLE.search(raw):
        blocks, flags = storable(blocks), storable(flags)
    found: dict[str, str] = {}  # clear secret values (value -> kind): masked by value after the file (remask.py)
    masked = secrets.may_hold_secret(raw) or "\\u00" in raw  # `\u00..`: a secret may be JSON-escaped
    if masked:
        raw, kinds = secrets.mask_raw(raw, found)
        # The blocks too (keys included), even when the line's escapes hid a secret from the raw line's mask.
        blocks = secrets.mask_value(blocks, found)
        flags = secrets.mask_value(flags, found)  # what an importer noted from the line (a tool's name, a path)
        if kinds:
            flags = {**flags, "secrets": kinds}
    encoded_blocks, encoded_flags = _encode(blocks), _encode(flags)
    if not masked:  # what a format took from elsewhere than this line (another event, a row of its store)
        if secrets.may_hold_secret(encoded_blocks):
            blocks = secrets.mask_value(blocks, found)
            encoded_blocks = _encode(blocks)
        if secrets.may_hold_secret(encoded_flags):
            encoded_flags = _encode(secrets.mask_value(flags, found))
    return PreparedMessage(
        *fields,
        raw=raw,
        blocks=encoded_blocks,
        flags=encoded_flags,
        tokens=_encode(categories),
        token_total=sum(categories.values()),
        starts_turn=starts_turn(role, blocks, is_meta, is_summary),
        first_text=next((b["text"] for b in blocks if b.get("text")), None),
        tool_calls=sum(1 for b in blocks if b["kind"] == "tool_call"),
        search_text=text_of_blocks(blocks),
        secret_values=found,
    )


def _batches(records: Iterable, stage=prepare_batch) -> Iterator[list]:
    batch: list = []
    for record in records:
        batch.append(record)
        if len(batch) >= PREPARE_BATCH or isinstance(record, ImportProgress):
            yield stage(batch)
            batch = []
    yield stage(batch)


def prepare_ahead(records: Iterable, *, in_process: bool = False) -> Iterator:
    """Prepared records in order, prepared beside the caller (see the module docstring).

    `in_process` asks for the forked process (where the platform can fork); the records must
    then come from a stream the caller does not read meanwhile."""
    if in_process and hasattr(os, "fork"):
        return _in_process(records)
    return (item for batch in _ahead(_batches(records)) for item in batch)


def _ahead(items: Iterable, depth: int = 4) -> Iterator:
    """The items of `items` in order, produced on a second thread up to `depth` ahead."""
    done = object()
    results: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                results.put(item)
            results.put(done)
        except BaseException as exc:  # handed to the consuming thread, raised there
            results.put(exc)

    worker = threading.Thread(target=produce, name="ingest-prepare", daemon=True)
    worker.start()
    try:
        while True:
            item = results.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # let a blocked producer finish its put and see the stop
            try:
                results.get(timeout=0.05)
            except queue.Empty:
                pass


# -- the forked process ---------------------------------------------------------------------------
# Frames on the pipe: 8-byte length, then a pickled (kind, payload). Messages travel as flat
# tuples from _count (the cheapest thing to pickle); other records as themselves.

_FRAME = struct.Struct("<Q")
_BATCH, _DONE, _ERROR = 0, 1, 2


def _in_process(records: Iterable) -> Iterator:

    token_core.get_encoding()  # loaded before the fork, so the child never loads it
    tally = crash.Tally()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(tally.counting(records), write_fd)
    os.close(write_fd)
    pipe = open(read_fd, "rb", buffering=1 << 20)
    # Read, unpickled and finished (JSON encoding) on a thread of this process, a few batches
    # ahead: the child never waits for the writer's inserts, and the two processes share the work.
    frames = _ahead(_frames(pipe), depth=8)
    status = None
    try:
        for prepared in frames:
            yield from prepared
    except PrepareProcessError:  # the child died: say how, and after which record
        _, status = os.waitpid(pid, 0)
        raise crash.ImporterCrashed(status, *tally.read()) from None
    finally:
        if status is None:
            try:
                os.kill(pid, signal.SIGKILL)  # done by now, or no longer wanted
            except ProcessLookupError:
                pass
        frames.close()
        pipe.close()
        if status is None:
            os.waitpid(pid, 0)


def _frames(pipe) -> Iterator[list]:
    while True:
        header = pipe.read(_FRAME.size)
        (size,) = _FRAME.unpack(header) if len(header) == _FRAME.size else (-1,)
        data = pipe.read(size) if size >= 0 else b""
        if size < 0 or len(data) < size:
            raise PrepareProcessError(
                "the import's parsing process stopped unexpectedly (killed, or out of memory): "
                "nothing of this file was stored; run the import again"
            )
        kind, payload = pickle.loads(data)
        if kind == _DONE:
            return
        if kind == _ERROR:
            raise payload
        yield _finish(payload)


def _child(records: Iterable, write_fd: int) -> None:
    code = 0
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        with open(write_fd, "wb", buffering=1 << 20) as pipe:

            def send(kind: int, payload) -> None:
                data = pickle.dumps((kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
                pipe.write(_FRAME.pack(len(data)))
                pipe.write(data)

            try:
                # Tokenizing is most of the work. When the writer's process took the last batch
                # at once (it is waiting), it counts the next one itself; when it was busy, the
                # child counts. The two processes balance whatever the database's speed.
                writer_waits = False
                for flat in _batches(records, stage=functools.partial(_count, count=False)):
                    started = time.monotonic()
                    send(_BATCH, flat if writer_waits else _counted(flat))
                    pipe.flush()
                    writer_waits = time.monotonic() - started < WRITER_WAITS_SECONDS
                send(_DONE, None)
            except BrokenPipeError:
                raise
            except BaseException as exc:  # the writer raises it in its own process
                try:
                    send(_ERROR, exc)
                except Exception:
                    send(_ERROR, RuntimeError(f"{exc.__class__.__name__}: {exc}"))
                code = 1
    except BaseException:  # a broken pipe: the writer has gone; nothing left to tell
        code = 1
    finally:
        os._exit(code)
