"""picoclaw's session files -> normalized records. See ../shared/docs/formats.md §10.2.

Pure (no Django). A session is ``<workspace>/sessions/<key>.jsonl`` (one message per line) plus
``<key>.meta.json`` beside it (``{key, summary, skip, count, created_at, updated_at}``).

Storage is ``DOCUMENT``: picoclaw appends lines, but it also rewrites the file whole (``Compact``
drops the lines its summary replaced; ``SetHistory`` after an emergency compression), so every
import reads the file again in full. Message uuids come from the line's own bytes (a rewrite
writes the kept lines byte for byte again), so a rewritten file adds only what is new.

A legacy ``<key>.json`` (``{key, messages[], summary?, created, updated}``, from before the
JSONL store) is read too, its elements numbered from 1; once picoclaw migrated it (a
``<key>.jsonl`` beside it), it is left out so one session is not imported twice.

Decisions worth knowing:

- The summary lives only in ``meta.summary``, and the messages it replaced are usually gone
  from the file, so the position it stands for is unknown: it becomes a fold whose boundary is
  a ``system`` marker (subtype ``compact_boundary``) emitted before the first kept message, with
  the summary as ``summary_text``; the fold's metadata says the messages it replaced are not in
  the file. The first ``skip`` lines are still in the file but no longer loaded by picoclaw
  (``TruncateHistory`` before ``Compact``): they are imported, flagged ``skipped``, before the
  marker, so the fold puts them away. The kept messages are the fold's ``preserved_uuids`` (a
  summary written after an earlier import, whose marker lands after them, still leaves them
  loaded).
- ``[Emergency compression dropped N oldest messages due to context limit]`` notes in the
  summary become a ``system`` message (subtype ``emergency_compression``) after the marker.
- picoclaw persists no token usage. Each assistant line is one model call: a ``UsageRecord`` with
  no usage (all zero: the pages show such a call as estimated, never as measured), so the curve
  has a point per call. Each message carries picoclaw's own estimate (characters / 2.5) as
  ``flags["estimated_tokens"]``; the fold's metadata carries the summary's.
- Assistant lines that hold only reasoning are dropped by picoclaw when it reloads a session:
  they are kept here as role ``other`` (shown, never replayed). ``[SubTurn Result] …`` and
  ``[System: <sender>] …`` user lines are injected by picoclaw, not typed by a person: they are
  flagged and do not start a turn.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextviewer.core.harness import Harness
from contextviewer.core.records import BadLine, Block, FoldRecord, MessageRecord, Record, SessionInfo, UsageRecord
from contextviewer.importers.common import TimeSpan, compact_json, json_kind, parse_timestamp, pos_int, str_or_none
from contextviewer.importers.driver import JsonParser
from contextviewer.importers.formats import ParseInput, SessionFiles
from contextviewer.importers.picoclaw.entry import (  # noqa: F401 - the light part, re-exported
    ENTRY,
    FOREIGN_KEYS,
    FORMAT_NAME,
    LEGACY_START,
    LEGACY_SUFFIX,
    MAX_META_BYTES,
    MESSAGE_KEYS,
    META_SUFFIX,
    ROLES,
    SESSION_SUFFIX,
    _is_message,
    _is_meta,
    _line_values,
    _read_meta,
    meta_path,
    session_key,
    sniff,
)

CHARS_PER_TOKEN = 2.5  # picoclaw's own estimate
ESTIMATE = "picoclaw's estimate: characters / 2.5"
EMERGENCY = re.compile(r"\[Emergency compression dropped (\d+) oldest messages due to context limit\]")
SUBTURN = "[SubTurn Result]"
SYSTEM_SENDER = re.compile(r"^\[System: ([^\]\n]{1,200})\]")


def estimate_tokens(chars: int) -> int:
    return int(chars / CHARS_PER_TOKEN + 0.5) if chars else 0


# -- sniffing and grouping ----------------------------------------------------------------------


def group(paths: list[Path]) -> list[SessionFiles]:
    """Each ``<key>.jsonl`` is a session (its meta file is read beside it); a meta file alone is
    not one. A legacy ``<key>.json`` beside a ``<key>.jsonl`` was migrated into it: left out."""
    out = []
    for p in sorted(paths):
        if p.name.endswith(META_SUFFIX):
            continue
        if p.name.endswith(LEGACY_SUFFIX) and p.with_name(session_key(p) + SESSION_SUFFIX).exists():
            continue
        out.append(SessionFiles(format=FORMAT_NAME, main=p))
    return out


# -- the parser ---------------------------------------------------------------------------------


class _Parser(JsonParser, TimeSpan):
    what = "a picoclaw session file"

    def __init__(self, source: ParseInput):
        super().__init__(
            max_line_bytes=source.max_line_bytes, max_decompressed_bytes=source.max_decompressed_bytes
        )
        self.path = source.path
        self.key = session_key(source.path)
        self.meta, self.meta_text, self.meta_problem = _read_meta(meta_path(source.path))
        meta = self.meta or {}
        self.session_id = str_or_none(meta.get("key")) or self.key
        self.summary = meta.get("summary") if meta.get("summary").__class__ is str else ""
        self.skip = pos_int(meta.get("skip"))
        self.lines_seen: set[int] = set()  # non-empty lines so far, read or not (picoclaw's skip counts them)
        self.hashes: dict[str, int] = {}
        self.kept: list[str] = []  # uuids of the messages after the skipped lines
        self.skipped = 0
        self.calls: list[UsageRecord] = []  # one per assistant line, usage not recorded
        self.models: dict[str, None] = {}
        self.marker_done = False
        self.fold: FoldRecord | None = None

    # -- the fold

    def _marker(self, line_no: int) -> list[MessageRecord]:
        """The summary's fold marker (and its emergency note), before the first kept message."""
        self.marker_done = True
        emergency = [int(n) for n in EMERGENCY.findall(self.summary)]
        if not self.summary and not self.skip:
            return []
        # Named by the summary alone: picoclaw's Compact later drops the skipped lines and resets
        # skip, and that is still the same fold.
        digest = hashlib.sha256(self.summary.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        uuid = f"{self.key}:summary:{digest}"
        metadata: dict[str, Any] = {
            "source": "meta.summary",
            "replaced_messages": "not in the file: picoclaw removes the messages a summary replaces",
            "skipped_lines_in_file": self.skip,
            "summary_estimated_tokens": estimate_tokens(len(self.summary)),
            "estimate": ESTIMATE,
        }
        count = self.meta.get("count") if self.meta else None
        if count.__class__ is int:
            metadata["meta_count"] = count
        if emergency:
            metadata["emergency_dropped"] = emergency
        ts = parse_timestamp((self.meta or {}).get("updated_at"))
        self.fold = FoldRecord(
            line_no=line_no,
            boundary_uuid=uuid,
            kind="compact",
            trigger="emergency" if emergency else None,
            tokens_before=None,
            summary_text=self.summary,
            timestamp=ts,
            metadata=metadata,
        )
        if self.summary:
            text = "picoclaw summary: it stands for the earlier messages, which are no longer in the session file"
        else:
            text = f"picoclaw dropped the first {self.skip} lines from its history without a summary"
        if self.skip:
            text += f" ({self.skip} dropped lines are still in the file, above)"

        def note(text: str, uuid: str, subtype: str, flags: dict) -> MessageRecord:
            """A system message of the meta file's summary (its raw: the meta file)."""
            return MessageRecord(
                line_no=line_no,
                offset=0,
                role="system",
                record_type="meta_summary",
                raw=self.meta_text,
                blocks=[Block("text", text=text)],
                uuid=uuid,
                subtype=subtype,
                timestamp=ts,
                session_id=self.session_id,
                flags=flags,
            )

        out = [note(text, uuid, "compact_boundary",
                    {"estimated_tokens": metadata["summary_estimated_tokens"], "estimate": ESTIMATE})]
        if emergency:
            notes = EMERGENCY.findall(self.summary)
            text = "\n".join(m.group(0) for m in EMERGENCY.finditer(self.summary))
            out.append(note(text, f"{uuid}:emergency", "emergency_compression",
                            {"emergency_compression": True, "dropped_messages": sum(int(n) for n in notes)}))
        return out

    # -- one line

    def process(self, obj: dict, line_no: int, offset: int, raw: str) -> MessageRecord | None:
        self.lines_seen.add(line_no)
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:20]
        n = self.hashes.get(digest, 0) + 1
        self.hashes[digest] = n
        uuid = f"{self.key}:{digest}" + (f":{n}" if n > 1 else "")
        role_value = obj.get("role")
        role = role_value if role_value in ROLES else "other"
        blocks: list[Block] = []
        flags: dict[str, Any] = {}
        chars = 0
        content = obj.get("content")
        text = content if content.__class__ is str else ("" if content is None else compact_json(content))
        chars += len(text)
        reasoning = obj.get("reasoning_content")
        if reasoning.__class__ is str and reasoning:
            blocks.append(Block("thinking", text=reasoning))
            chars += len(reasoning)
        if role == "tool":
            blocks.append(Block("tool_result", text=text, tool_id=str_or_none(obj.get("tool_call_id"))))
        elif text:
            blocks.append(Block("text", text=text))
        calls = obj.get("tool_calls")
        if calls.__class__ is list:
            for call in calls:
                block = _tool_call(call)
                chars += len(block.tool_name or "") + len(block.text)
                blocks.append(block)
        for name in ("media", "attachments"):
            items = obj.get(name)
            if items.__class__ is list:
                for item in items:
                    blocks.append(_media_block(name, item))
        is_meta = False
        if role == "user":
            if text.startswith(SUBTURN):
                flags["subturn_result"] = True
                is_meta = True
            else:
                sender = SYSTEM_SENDER.match(text)
                if sender:
                    flags["system_sender"] = sender.group(1)
                    is_meta = True
        record_type = role_value if role_value.__class__ is str and role_value else "(none)"
        if role == "assistant" and blocks and all(b.kind == "thinking" for b in blocks):
            role = "other"  # picoclaw drops it when it reloads the session
            record_type = "reasoning_only"
            flags["dropped_by_picoclaw"] = "an assistant line with only reasoning is not replayed"
        flags["estimated_tokens"] = estimate_tokens(chars)
        flags["estimate"] = ESTIMATE
        model = str_or_none(obj.get("model_name"))
        if model and role == "assistant":
            self.models[model] = None
        ts = self.saw(parse_timestamp(obj.get("created_at")))
        if role == "assistant":
            # One model call per assistant line, its usage not recorded (see the module's notes).
            self.calls.append(UsageRecord(api_message_id=uuid, request_id=None, message_uuid=uuid, line_no=line_no,
                                          model=model, timestamp=ts))
        if len(self.lines_seen) <= self.skip:
            flags["skipped"] = True  # in the file, but no longer in picoclaw's history
            self.skipped += 1
        else:
            self.kept.append(uuid)
        return MessageRecord(
            line_no=line_no,
            offset=offset,
            role=role,
            record_type=record_type[:60],
            raw=raw,
            blocks=blocks,
            uuid=uuid,
            timestamp=ts,
            session_id=self.session_id,
            is_meta=is_meta,
            model=model if role == "assistant" else None,
            api_message_id=uuid if role == "assistant" else None,
            flags=flags,
        )

    def run(self, stream, start_offset: int, start_line: int) -> Iterator[Record]:
        if self.meta_problem:
            yield BadLine(line_no=0, offset=0, reason=self.meta_problem)
        for record in super().run(stream, start_offset, start_line):
            if record.__class__ is BadLine and record.line_no > 0:
                self.lines_seen.add(record.line_no)
            elif record.__class__ is MessageRecord and not self.marker_done and "skipped" not in record.flags:
                yield from self._marker(record.line_no)
            yield record

    def finish(self) -> Iterator[Record]:
        if not self.marker_done:
            yield from self._marker(self.consumed_lines + 1)
        yield from self.calls
        if self.fold is not None:
            self.fold.preserved_uuids = list(self.kept)
            self.fold.metadata["kept_messages"] = len(self.kept)
            self.fold.metadata["skipped_messages"] = self.skipped
            yield self.fold
        self.finished = True
        yield self.session_info()

    def legacy(self, stream) -> Iterator[Record]:
        """A legacy ``<key>.json`` document: ``{key, messages[], summary?, created, updated}``.
        Its elements are numbered from 1 (the document has no lines to name)."""
        self.meta, self.meta_text, self.meta_problem = None, "", None
        try:
            data = stream.read(self.max_decompressed_bytes + 1)
        except (OSError, ValueError, EOFError) as exc:
            yield BadLine(0, 0, f"the file could not be read ({exc})")
            yield self.session_info()
            return
        if len(data) > self.max_decompressed_bytes:
            yield BadLine(0, 0, "the legacy session file is too large to read whole; it was not imported")
            yield self.session_info()
            return
        try:
            doc = json.loads(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            detail = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
            yield BadLine(0, 0, f"the legacy session file is not valid JSON ({detail})")
            yield self.session_info()
            return
        if doc.__class__ is not dict:
            yield BadLine(0, 0, f"the legacy session file is {json_kind(doc)}, not a session object")
            yield self.session_info()
            return
        self.session_id = str_or_none(doc.get("key")) or self.key
        self.summary = doc.get("summary") if doc.get("summary").__class__ is str else ""
        self.skip = 0
        self.meta = {"created_at": doc.get("created"), "updated_at": doc.get("updated")}
        self.meta_text = compact_json({k: v for k, v in doc.items() if k != "messages"})
        elements = doc.get("messages")
        if elements.__class__ is not list:
            elements = []
            yield BadLine(0, 0, "the legacy session file has no messages array")
        for number, element in enumerate(elements, 1):
            if element.__class__ is not dict:
                yield BadLine(number, 0, f"element {number} of messages is {json_kind(element)}, not a message object")
                continue
            if not self.marker_done:
                yield from self._marker(number)
            try:
                yield self.process(element, number, 0, compact_json(element))
            except Exception as exc:  # one odd element must not stop the import
                yield BadLine(number, 0, f"element {number} of messages could not be read ({exc.__class__.__name__}: {exc})")
        self.consumed_lines = len(elements)
        yield from self.finish()

    def session_info(self) -> SessionInfo:
        meta = self.meta or {}
        return SessionInfo(
            external_id=self.session_id,
            models=list(self.models),
            started_at=self.started_at or parse_timestamp(meta.get("created_at")),
            ended_at=self.ended_at or parse_timestamp(meta.get("updated_at")),
            lines=self.consumed_lines,
            bytes_consumed=self.consumed_offset,
        )


def _tool_call(call: Any) -> Block:
    if call.__class__ is not dict:
        return Block("other", text=compact_json(call), raw_type="tool_call")
    function = call.get("function") if call.get("function").__class__ is dict else {}
    arguments = function.get("arguments")
    tool_input: Any = arguments
    if arguments.__class__ is str:
        try:
            tool_input = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            tool_input = arguments  # kept as written: the model's arguments were not JSON
        text = arguments
    else:
        text = compact_json(arguments) if arguments is not None else ""
    return Block(
        "tool_call",
        text=text,
        tool_id=str_or_none(call.get("id")),
        tool_name=str_or_none(function.get("name")) or str_or_none(call.get("name")),
        tool_input=tool_input,
    )


def _media_block(name: str, item: Any) -> Block:
    if item.__class__ is str:
        return Block("other", text=item, raw_type=name)
    if item.__class__ is dict:
        media_type = str_or_none(item.get("mime_type")) or str_or_none(item.get("content_type")) or str_or_none(item.get("type"))
        label = str_or_none(item.get("filename")) or str_or_none(item.get("name")) or str_or_none(item.get("path")) or str_or_none(item.get("url"))
        return Block("other", text=label or compact_json(item), raw_type=name, media_type=media_type)
    return Block("other", text=compact_json(item), raw_type=name)


def parse(source: ParseInput) -> Iterator[Record]:
    parser = _Parser(source)
    if source.path.name.endswith(META_SUFFIX):
        yield BadLine(0, 0, "a picoclaw .meta.json file is not a session: import the .jsonl beside it")
        yield SessionInfo()
        return
    if source.path.name.endswith(LEGACY_SUFFIX):
        yield from parser.legacy(source.stream)
        return
    yield from parser.parse(source.stream, source.start_offset, source.start_line)


# The harness's rules (core/harness.py; policy-lab 5.1, 5.2): window = MaxTokens x 4 = 131,072 when
# not configured; summarize above 75 % of the window; reserve MaxTokens (32,768); 2.5 chars per
# token (chars * 2 // 5).
MAX_TOKENS = 32_768
HARNESS = Harness(
    fold_label="picoclaw summarize 75 %",
    fold_fraction=0.75,
    reserve_cap=MAX_TOKENS,
    default_window=MAX_TOKENS * 4,
    chars_per_token=2.5,
    rounding="floor",
    own_policy="picoclaw",
)

FORMAT = ENTRY.format(
    parse=parse,
    group=group,
    companions=lambda path: [meta_path(path)],  # a new summary in the meta file is a change too
    harness=HARNESS,
)
