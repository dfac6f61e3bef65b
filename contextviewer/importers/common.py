"""Helpers every importer shares (pure, no Django): tolerant readers of JSON values, timestamps,
the Anthropic content-block shape (Claude Code and Anthropic Messages arrays both write it), and
what sniffers read in a file's head (its text, its first JSON lines, its first array items)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from contextviewer.core import images as image_headers
from contextviewer.core.records import BadLine, Block, MessageRecord

BOM = b"\xef\xbb\xbf"
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

def str_or_none(value: Any) -> str | None:
    return value if value.__class__ is str and value else None


def pos_int(value: Any) -> int:
    if value.__class__ is int:
        return value if value > 0 else 0
    if value.__class__ is float and value == value and 0 < value < 1e18:
        return int(value)
    return 0


def int_or_none(value: Any) -> int | None:
    if value.__class__ is int:
        return value
    if value.__class__ is float and value == value and abs(value) < 1e18 and value == int(value):
        return int(value)
    return None


def strip_suffixes(name: str, suffixes: tuple[str, ...] = (".gz", ".jsonl", ".json")) -> str:
    """A file name without the suffixes it ends with, in that order ("a.jsonl.gz" -> "a")."""
    for suffix in suffixes:
        name = name.removesuffix(suffix)
    return name


def file_stem(path: Path) -> str:
    """A session's fallback id from its file name: the name without its suffixes (the whole name
    when nothing is left)."""
    return strip_suffixes(path.name) or path.name


def parse_timestamp(value: Any) -> datetime | None:
    """ISO-8601 (with ``Z`` or an offset) to an aware UTC datetime; anything else to None."""
    if value.__class__ is not str or not 10 <= len(value) <= 64:
        return None
    try:
        dt = datetime.fromisoformat(value)
        if dt.tzinfo is None:
            return dt.replace(tzinfo=UTC)
        return dt.astimezone(UTC)
    except (ValueError, OverflowError, TypeError):
        return None


def timestamp(value: Any) -> datetime | None:
    """An ISO-8601 string, or epoch seconds (or milliseconds) as a number, to an aware datetime."""
    if value.__class__ is str:
        return parse_timestamp(value)
    if value.__class__ in (int, float) and value == value and value > 0:
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


class TimeSpan:
    """The first and last timestamps a session's records carry (its ``SessionInfo`` span)."""

    started_at: datetime | None = None
    ended_at: datetime | None = None

    def saw(self, ts: datetime | None) -> datetime | None:
        """Widen the span to ``ts`` (None: nothing); returns ``ts``."""
        if ts is not None:
            if self.started_at is None or ts < self.started_at:
                self.started_at = ts
            if self.ended_at is None or ts > self.ended_at:
                self.ended_at = ts
        return ts


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """JSON text with each lone surrogate written as its ``\\uXXXX`` escape, as a JSON log writes
    it: the same JSON value, and text a database column (UTF-8) can hold. A surrogate only stands
    inside a JSON string (a key or a value), where its escape means the same."""
    if text.isascii() or not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def compact_json(value: Any) -> str:
    """``value`` as compact JSON (a document's element, kept as its raw record): NUL and the other
    control characters escaped, lone surrogates too (``escape_surrogates``); "" when it is none."""
    try:
        return escape_surrogates(_dumps(value))
    except (ValueError, TypeError, RecursionError):
        return ""


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _value_fault(value: Any) -> str | None:
    if value.__class__ is float and (value != value or value in (float("inf"), float("-inf"))):
        return f"is {'NaN' if value != value else 'an infinity'}"
    if value.__class__ is str and (not value.isascii() or "\x00" in value):
        found = _UNSTORABLE.search(value)
        if found:
            char = found.group()
            return "holds a NUL character" if char == "\x00" else f"holds a lone surrogate (U+{ord(char):04X})"
    return None


def bad_value(obj: Any, keys: tuple[str, ...] | None = None) -> str | None:
    """Words for the first value of a record (a JSON object) that no agent writes as it means it:
    a string holding NUL or a lone surrogate, NaN or an infinity, in one of its fields (``keys``:
    those; default all) or a field of an object it holds: 'its "role" holds a NUL character'.
    None when there is none. Sniffers leave such a record out of their count (it is a bad record,
    not a sign of another format); parsers name it as the reason a record was not read."""
    if obj.__class__ is not dict:
        return None
    for key, value in obj.items():
        fault = _value_fault(key)
        if fault:  # a key is a field's name: a field so named is not the one the record means
            return f"its key {compact_json(key)[:60]} {fault}"
        if keys is not None and key not in keys:
            continue
        fault = _value_fault(value)
        if fault:
            return f"its {compact_json(key)[:60]} {fault}"
        if value.__class__ is dict:
            for inner, nested in value.items():
                fault = _value_fault(nested)
                if fault and inner.__class__ is str:
                    return f"its {compact_json(key)[:40]}.{compact_json(inner)[:40]} {fault}"
    return None


def said_bad(records: Iterator, place: str, keys: tuple[str, ...]) -> Iterator:
    """``records``, with a ``BadLine`` after each record a field of which that tells its kind
    (``keys``) holds a bad value (``bad_value``): the record is kept, and the reason is said with its
    place ("element 3: its "role" holds a NUL character, so it was kept as a record of unknown kind")."""
    for record in records:
        yield record
        if record.__class__ is MessageRecord and record.raw and ("\\u" in record.raw or "NaN" in record.raw
                                                                  or "Infinity" in record.raw):
            fault = bad_value(raw_json(record.raw), keys)
            if fault:
                article = "an" if record.role[:1] in "aeiou" else "a"
                kept = "a record of unknown kind" if record.role == "other" else f"{article} {record.role} record, as read"
                yield BadLine(record.line_no, record.offset, f"{place} {record.line_no}: {fault}, so it was kept as {kept}")


def json_kind(value: Any) -> str:
    if value is None:
        return "JSON null"
    if value.__class__ is bool:
        return "a JSON boolean"
    if value.__class__ in (int, float):
        return "a JSON number"
    if value.__class__ is str:
        return "a JSON string"
    if value.__class__ is list:
        return "a JSON array"
    return "a JSON value"


def as_list(value: Any) -> list:
    return value if value.__class__ is list else []


def json_arguments(value: Any) -> Any:
    """Tool-call arguments as written (OpenAI shapes write a JSON string): parsed where it is JSON."""
    if value.__class__ is str:
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def tool_call(tool_id: str | None, name: str | None, tool_input: Any, raw_type: str | None = None) -> Block:
    """A ``tool_call`` block: its input, and the input as compact JSON for its text."""
    return Block(
        "tool_call",
        text=compact_json(tool_input) if tool_input is not None else "",
        tool_id=tool_id,
        tool_name=name,
        tool_input=tool_input,
        raw_type=raw_type,
    )


class OpenCalls:
    """Tool calls the log writes without an id (a checkpoint's ``functionCall``, a legacy
    ``function_call``), by tool name: each is given one, and a result without an id answers the
    oldest open call of its tool."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[str]] = {}

    def count(self, name: str | None) -> int:
        return len(self.by_name.get(name or "", ()))

    def open(self, block: Block, tool_id: str) -> None:
        block.tool_id = tool_id
        self.by_name.setdefault(block.tool_name or "", []).append(tool_id)

    def answer(self, block: Block) -> None:
        waiting = self.by_name.get(block.tool_name or "")
        if waiting:
            block.tool_id = waiting.pop(0)


def result_content(content: Any) -> tuple[str, int]:
    """(joined text parts, number of image parts) of a tool_result's content."""
    if content.__class__ is str:
        return content, 0
    if content.__class__ is dict:
        content = [content]
    elif content.__class__ is not list:
        return "", 0
    texts: list[str] = []
    images = 0
    for part in content:
        if part.__class__ is str:
            texts.append(part)
        elif part.__class__ is dict:
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                if text.__class__ is str:
                    texts.append(text)
            elif kind == "image":
                images += 1
                cut = left_out_data(part)
                if cut:  # the image was left out of an over-cap line (longline.py): say so
                    texts.append(cut)
    return "\n".join(texts), images


def image_size(image: Any) -> tuple[int | None, int | None]:
    """(width, height) of an API image block ({"type": "image", "source": {"data": base64}}) read
    from its header, or (None, None)."""
    source = image.get("source") if image.__class__ is dict else None
    data = source.get("data") if source.__class__ is dict else None
    size = image_headers.dimensions_b64(data) if data.__class__ is str and not data.startswith("[contextviewer: ") else None
    return size if size is not None else (None, None)


def result_image_sizes(content: Any) -> list[list[int]]:
    """[width, height] of each image inside a tool result's content whose header could be read."""
    if content.__class__ is not list:
        return []
    out = []
    for part in content:
        if part.__class__ is dict and part.get("type") == "image":
            width, height = image_size(part)
            if width and height:
                out.append([width, height])
    return out


def image_block(media_type: str | None, data: str | None) -> Block:
    """An ``image`` block for base64 ``data`` (None: none readable): its size, and its width and
    height read from its header. The data itself stays in the raw record, never in blocks."""
    width, height = image_headers.dimensions_b64(data) or (None, None)
    return Block("image", media_type=media_type, data_size=len(data) if data else 0, width=width, height=height)


def left_out_data(image: Any) -> str:
    """The marker that stands for an image's base64 data left out of an over-cap line, or ""."""
    source = image.get("source") if image.__class__ is dict else None
    data = source.get("data") if source.__class__ is dict else None
    return data if data.__class__ is str and data.startswith("[contextviewer: ") else ""


def anthropic_block(item: dict) -> Block:
    kind = item.get("type")
    if kind == "text":
        text = item.get("text")
        return Block("text", text=text if text.__class__ is str else "")
    if kind == "thinking":
        text = item.get("thinking")
        return Block("thinking", text=text if text.__class__ is str else "")
    if kind == "redacted_thinking":
        return Block("thinking", raw_type="redacted_thinking")
    if kind == "tool_use" or kind == "server_tool_use":
        return tool_call(
            str_or_none(item.get("id")),
            str_or_none(item.get("name")),
            item.get("input"),
            raw_type=None if kind == "tool_use" else kind,
        )
    if kind == "tool_result":
        text, images = result_content(item.get("content"))
        return Block(
            "tool_result",
            text=text,
            tool_id=str_or_none(item.get("tool_use_id")),
            is_error=item.get("is_error") is True,
            images=images,
            image_sizes=(result_image_sizes(item.get("content")) or None) if images else None,
        )
    if kind == "image":
        source = item.get("source")
        media_type = data = None
        if source.__class__ is dict:
            media_type = str_or_none(source.get("media_type"))
            data = source.get("data")
        cut = left_out_data(item)
        if cut:  # its data was left out of an over-cap line: the block says so
            return Block("image", text=cut, media_type=media_type)
        return image_block(media_type, data if data.__class__ is str else None)
    text = item.get("text")
    return Block(
        "other",
        text=text if text.__class__ is str else "",
        raw_type=kind if kind.__class__ is str and kind else "(none)",
    )


def content_item(item: Any) -> Block:
    """One item of an Anthropic-shaped content list (a block, a string, or something odd)."""
    if item.__class__ is dict:
        return anthropic_block(item)
    if item.__class__ is str:
        return Block("text", text=item)
    return Block("other", text=compact_json(item), raw_type=json_kind(item))


def content_blocks(content: Any, item: Callable[[Any], Block] = content_item) -> list[Block]:
    """Blocks of a message's ``content``: a string, a list of parts (each ``item(part)``; None
    left out), or one part or something odd (``item(content)``). ``item`` reads a format's parts
    (default: Anthropic blocks)."""
    if content is None:
        return []
    if content.__class__ is str:
        return [Block("text", text=content)]
    if content.__class__ is not list:
        return [item(content)]
    return [item(part) for part in content if part is not None]


def part_blocks(content: Any, part: Callable[[dict], Block]) -> list[Block]:
    """Blocks of a content made of parts (Gemini ``parts``, OpenAI and LangChain content lists): a
    string (no block when it is empty), one part or a list of them. ``part`` reads an object part;
    a string part is text, None is left out, any other value is an ``other`` block."""
    if content is None:
        return []
    if content.__class__ is str:
        return [Block("text", text=content)] if content else []
    blocks: list[Block] = []
    for item in content if content.__class__ is list else [content]:
        if item is None:
            continue
        if item.__class__ is str:
            blocks.append(Block("text", text=item))
        elif item.__class__ is not dict:
            blocks.append(Block("other", text=compact_json(item), raw_type=json_kind(item)))
        else:
            blocks.append(part(item))
    return blocks


def langchain_usage(meta: dict) -> tuple[int, int, int, int, int | None, int | None]:
    """(input_uncached, cache_write, cache_read, output, 5m, 1h) of a LangChain ``usage_metadata``:
    its ``input_tokens`` include the cached and cache-written ones (``input_token_details``)."""
    details = meta.get("input_token_details")
    details = details if details.__class__ is dict else {}
    read = pos_int(details.get("cache_read"))
    write = pos_int(details.get("cache_creation"))
    five = details.get("ephemeral_5m_input_tokens")
    one = details.get("ephemeral_1h_input_tokens")
    return (max(pos_int(meta.get("input_tokens")) - read - write, 0), write, read, pos_int(meta.get("output_tokens")),
            pos_int(five) if five is not None else None, pos_int(one) if one is not None else None)


def text_of(blocks: list[Block]) -> str:
    return "\n".join(b.text for b in blocks if b.kind == "text" and b.text)


# Python's JSON reader stops (RecursionError) on a value nested about as deep as the recursion
# limit (1,000); one it cannot read is nested deeper than this, which is what the messages say.
JSON_DEPTH = 500


def looks_binary(head: bytes) -> bool:
    sample = head[:8192]
    if b"\x00" in sample:
        return True
    if not sample:
        return False
    # Control bytes other than tab/newline/carriage return/form feed/escape are rare in text.
    controls = sum(sample.count(bytes([c])) for c in range(32) if c not in (9, 10, 12, 13, 27))
    return controls > len(sample) // 10


# -- a tool result's extra (Block.extra): what the log records beside the text ----------------------

STREAM_CAP = 20_000  # characters of a command's stdout / stderr kept on its result block


def stream_text(text: str) -> str:
    """A command's stdout or stderr as kept on its result's ``extra``: capped (the page shows the
    first few thousand characters; the whole output stays in the raw record)."""
    return text[:STREAM_CAP] + "\n[…]" if len(text) > STREAM_CAP else text


def add_extras(blocks: list[Block], extra_of: Callable[[str], dict | None]) -> None:
    """Each tool result of ``blocks`` gets what ``extra_of(its text)`` says merged into its ``extra``."""
    for b in blocks:
        if b.kind == "tool_result":
            extra = extra_of(b.text)
            if extra:
                b.extra = {**b.extra, **extra} if b.extra else extra


def stored_extras(blocks: Any, extra_of: Callable[[str], dict | None]) -> list | None:
    """Stored blocks (dicts) of a message imported before its format put ``extra`` on its tool
    results, with each tool result's ``extra`` as ``extra_of(its text)`` says (what a format's
    ``fill_extras`` returns); None when nothing changes."""
    if blocks.__class__ is not list:
        return None
    out, changed = [], False
    for b in blocks:
        if b.__class__ is dict and b.get("kind") == "tool_result":
            text = b.get("text")
            extra = extra_of(text if text.__class__ is str else "")
            old = b.get("extra") if b.get("extra").__class__ is dict else {}
            if extra and {**old, **extra} != old:
                b = {**b, "extra": {**old, **extra}}
                changed = True
        out.append(b)
    return out if changed else None


# -- images of a stored raw record (a format's ``images``/``enrich``) -----------------------------


def raw_json(raw: Any) -> Any:
    """A stored raw record parsed, or None when it is not JSON."""
    try:
        return json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return None


def collect_images(node: Any, found: list, pick: Callable[[dict], list | None]) -> None:
    """Depth first, in order: each object ``pick`` returns a list for (its images, maybe none)
    adds them and is not searched further; the others are searched."""
    if node.__class__ is dict:
        images = pick(node)
        if images is not None:
            found.extend(images)
            return
        for value in node.values():
            collect_images(value, found, pick)
    elif node.__class__ is list:
        for value in node:
            collect_images(value, found, pick)


def data_url(url: Any) -> tuple[str | None, str, bool] | None:
    """(media type, data, whether it is base64) of a ``data:`` URL; None for anything else."""
    if url.__class__ is not str or not url.startswith("data:"):
        return None
    head, _, data = url.partition(",")
    return head[5:].split(";", 1)[0] or None, data, ";base64" in head


def image_data(block: dict, source: dict | None) -> dict:
    """An exporter block of kind image with its base64 data put back from ``source``
    (``{"media_type", "data"}``, from a format's ``images``); the block as it is without one."""
    if source is None:
        return block
    return {**block, "data": source["data"], "media_type": source.get("media_type") or block.get("media_type")}


def put_back_images(d: dict, images: Callable[[str], list[dict]],
                    takes: Callable[[dict], bool] = lambda b: b.get("kind") == "image") -> dict:
    """An exporter message dict whose image blocks (those ``takes``) get their base64 data back,
    in order, from ``images(raw)`` (a format's ``images``); the dict as it is without images."""
    blocks = d.get("blocks") or []
    if not d.get("raw") or not any(b.get("kind") == "image" for b in blocks):
        return d
    sources = iter(images(d["raw"]))
    return {**d, "blocks": [image_data(b, next(sources, None)) if takes(b) else b for b in blocks]}


# -- sniffing a head ---------------------------------------------------------------------------


def head_text(head: bytes) -> str:
    """The sniffed head as text, BOM and leading whitespace removed."""
    return head.removeprefix(BOM).decode("utf-8", "replace").lstrip()


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_CUT_ESCAPE = re.compile(rb"(\\+)(u[0-9a-fA-F]{0,3})?$")


def shorten_strings(data: bytes, keep: int = 256) -> bytes:
    """JSON text (bytes) with each string longer than ``keep`` bytes cut to about ``keep``: still
    JSON, with its keys and short values whole (for sniffing a line too long to read whole). An
    escape or a UTF-8 character the cut would split is left out."""

    def cut(match: re.Match) -> bytes:
        text = match.group(0)
        if len(text) <= keep + 2:
            return text
        body = text[1 : keep + 1]
        escape = _CUT_ESCAPE.search(body)
        if escape and len(escape.group(1)) % 2:  # an escape cut short: leave it out
            body = body[: escape.start(1) + len(escape.group(1)) - 1]
        return b'"' + body.decode("utf-8", "ignore").encode("utf-8") + b'"'

    return _JSON_STRING.sub(cut, data)


def written_again(raw: str, *volatile: Any) -> int:
    """A fingerprint of a record's line without the values that differ when an agent writes one
    record again (its session id and time on a resume): two lines with one id and one fingerprint
    are one record written twice; one id with two fingerprints, two records (a collision to say)."""
    for value in volatile:
        if value.__class__ is str and value:
            raw = raw.replace(value, "")
    return hash(raw)


class KeptIds:
    """The ids of the records a file kept, each with its line and ``written_again`` fingerprint.
    A later line under a kept id is not kept: said nothing when it is that record written again,
    else said with both lines (``collision``), never dropped without a word."""

    def __init__(self, word: str = "uuid"):
        self.first: dict[str, tuple[int, int]] = {}
        self.word = word

    def __contains__(self, key: str) -> bool:
        return key in self.first

    def add(self, key: str, line_no: int, raw: str, *volatile: Any) -> None:
        self.first[key] = (line_no, written_again(raw, *volatile))

    def collision(self, key: str, line_no: int, offset: int, raw: str, *volatile: Any) -> BadLine | None:
        first, kept = self.first[key]
        if kept == written_again(raw, *volatile):
            return None
        shown = key if len(key) <= 80 else key[:80] + "…"
        return BadLine(line_no=line_no, offset=offset, size=len(raw),
                       reason=f"line {line_no}: its {self.word} {shown!r} is already the {self.word} of line {first}, "
                              "a different record: not stored again")


def json_lines(text: str, limit: int = 200) -> list[tuple[int, dict]]:
    """(index, object) of the lines among the first ``limit`` of ``text`` that are a JSON object
    (for JSONL sniffing; a line the head cut short is not one). A file's head is sniffed by every
    format in turn, most of them reading its JSON lines: the last few heads' lines are kept (in a
    folder of small files, decoding them again for each format was most of the sniffing)."""
    key = (text, limit)
    kept = _JSON_LINES_KEPT.get(key)
    if kept is None:
        kept = _json_lines(text, limit)
        if len(_JSON_LINES_KEPT) >= 4:
            _JSON_LINES_KEPT.clear()
        _JSON_LINES_KEPT[key] = kept
    return list(kept)


_JSON_LINES_KEPT: dict[tuple[str, int], list[tuple[int, dict]]] = {}


def _json_lines(text: str, limit: int) -> list[tuple[int, dict]]:
    out = []
    for n, line in enumerate(text.split("\n")[:limit]):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if obj.__class__ is dict:
            out.append((n, obj))
    return out


def first_lines(head: bytes, limit: int = 200) -> list[dict]:
    """The JSON objects of the head's complete lines (for JSONL sniffing)."""
    return [obj for _n, obj in json_lines(head.removeprefix(BOM).decode("utf-8", "replace"), limit)]


def first_items(text: str, limit: int = 20) -> list:
    """The first complete elements of a JSON array text (possibly cut short, as a sniffed head is)."""
    decode = json.JSONDecoder().raw_decode
    items: list = []
    if not text.startswith("["):
        return items
    i, n = 1, len(text)
    while i < n and len(items) < limit:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "]":
            break
        try:
            value, i = decode(text, i)
        except (ValueError, RecursionError):
            break
        items.append(value)
    return items
